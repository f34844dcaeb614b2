//! Single-precision math for kernels: the special-function unit's fast forms, and accurate
//! forms where the fast one is not enough. `core`'s `f32::exp` and friends have no NVPTX
//! lowering (llc stops with "no libcall available for fexp"): use these.
//!
//! | function | lowers to | documented (CUDA's intrinsic) | the self-test's bound | largest error measured (H200) |
//! |---|---|---|---|---|
//! | [`exp2`] | `ex2.approx.ftz.f32` | 2 ulp (`exp2f`) | 3 ulp | 1.96 ulp |
//! | [`exp`] | `mul` + `ex2.approx.ftz.f32` | 2 + floor(1.173 \|x\|) ulp (`__expf`) | 3 + 1.2 \|x\| ulp | 2.1 ulp at x = -0.7 |
//! | [`exp_accurate`] | `fma` split of `x log2 e` + `ex2.approx.f32`, subnormals kept | - | 4 ulp | 2.2 ulp |
//! | [`log2`] | `lg2.approx.ftz.f32` | 2^-22 absolute on [0.5, 2], else 2 ulp (`__log2f`) | 2^-21, else 3 ulp | 2^-22, else 2.06 ulp |
//! | [`recip`] | `rcp.approx.ftz.f32` | 1 ulp | 1.5 ulp | 0.94 ulp |
//! | [`recip_accurate`] | `rcp.rn.f32` | correctly rounded | 0.5 ulp | 0.5 ulp |
//! | [`rsqrt`] | `rsqrt.approx.ftz.f32` | 2 ulp (`rsqrtf`) | 3 ulp | 1.46 ulp |
//! | [`rsqrt_accurate`] | `sqrt.rn.f32` + `rcp.rn.f32` | - | 2 ulp (two correct roundings) | 1.43 ulp |
//! | [`tanh`] | `tanh.approx.f32` | 2^-11 relative | 2^-10.987 relative | 2^-16.6 relative |
//! | [`tanh_accurate`] | odd polynomial for \|x\| < 0.5, else `1 - 2 / (e^2x + 1)` | - | 8 ulp | 2.1 ulp |
//!
//! The self-test (`host selftest`) evaluates each over a sweep of 65536 inputs of its domain
//! on the GPU and compares with the host's f64 result against the self-test's bound (the
//! measured column, two runs: `host run --workload selftest --only selftest_math`, 2026-12-02, whose
//! note prints each function's largest error over its bound); `host inspect --workload
//! selftest --only selftest_math` shows the PTX and SASS.

use crate::ptx;

/// `log2(e)` rounded to f32, and what rounding it dropped.
const LOG2_E: f32 = core::f32::consts::LOG2_E;
const LOG2_E_LO: f32 = 1.925_963_e-8;

/// `2^x`, fast (`ex2.approx.ftz.f32`): within 2 ulp; a result below 2^-126 is 0.
#[inline(always)]
#[must_use]
pub fn exp2(x: f32) -> f32 {
    ptx::ex2_approx_ftz_f32(x)
}

/// `e^x` as `2^(x log2 e)`, fast: within `3 + 1.2 |x|` ulp, the rounding of the product
/// adding about 1.2 ulp per unit of `|x|` (like CUDA's `__expf`); fine for a softmax, whose
/// arguments are at most 0 after the row maximum is subtracted. See [`exp_accurate`] for
/// large `|x|`.
#[inline(always)]
#[must_use]
pub fn exp(x: f32) -> f32 {
    exp2(x * LOG2_E)
}

/// `e^x` within 4 ulp at any `x`, subnormal results included: the part of `x log2 e` that
/// its f32 rounding loses is recovered with an `fma` and applied as `2^t (1 + r ln 2)`.
#[inline(always)]
#[must_use]
pub fn exp_accurate(x: f32) -> f32 {
    // Past these e^x is 0 or infinity anyway; clamping keeps `t` finite (NaN stays NaN).
    let x = x.clamp(-104.0, 89.0);
    let t = x * LOG2_E;
    let r = ptx::fma_f32(x, LOG2_E, -t) + x * LOG2_E_LO;
    let p = ptx::ex2_approx_f32(t);
    ptx::fma_f32(p, r * core::f32::consts::LN_2, p)
}

/// `log2(x)`, fast (`lg2.approx.ftz.f32`): absolute error within 2^-22 on [0.5, 2], 3 ulp
/// elsewhere (2.06 measured); `log2(0) = -inf`, negative `x` gives NaN.
#[inline(always)]
#[must_use]
pub fn log2(x: f32) -> f32 {
    ptx::lg2_approx_ftz_f32(x)
}

/// `1 / x`, fast (`rcp.approx.ftz.f32`): within 1 ulp.
#[inline(always)]
#[must_use]
pub fn recip(x: f32) -> f32 {
    ptx::rcp_approx_ftz_f32(x)
}

/// `1 / x`, correctly rounded (`rcp.rn.f32`).
#[inline(always)]
#[must_use]
pub fn recip_accurate(x: f32) -> f32 {
    ptx::rcp_rn_f32(x)
}

/// `1 / sqrt(x)`, fast (`rsqrt.approx.ftz.f32`): within 2 ulp.
#[inline(always)]
#[must_use]
pub fn rsqrt(x: f32) -> f32 {
    ptx::rsqrt_approx_ftz_f32(x)
}

/// `1 / sqrt(x)` within 2 ulp: a correctly rounded square root, then a correctly rounded
/// reciprocal (each rounding at most 2^-24 relative).
#[inline(always)]
#[must_use]
pub fn rsqrt_accurate(x: f32) -> f32 {
    ptx::rcp_rn_f32(ptx::sqrt_rn_f32(x))
}

/// `tanh(x)`, fast (`tanh.approx.f32`, one instruction): relative error about 2^-11 — the
/// activation functions' form (GELU's tanh approximation).
#[inline(always)]
#[must_use]
pub fn tanh(x: f32) -> f32 {
    ptx::tanh_approx_f32(x)
}

/// `tanh(x)` within 8 ulp: the Taylor series to `x^19` where `|x| < 0.5` (its first dropped
/// term is below 2^-26 of the result there), else `1 - 2 / (e^(2|x|) + 1)` with
/// [`exp_accurate`] and a correctly rounded division, the sign put back.
#[inline(always)]
#[must_use]
pub fn tanh_accurate(x: f32) -> f32 {
    let a = x.abs();
    if a < 0.5 {
        // tanh x = x (1 + x^2 (c3 + x^2 (c5 + ...))), the coefficients of x^3 .. x^19.
        const C: [f32; 9] = [
            -1.0 / 3.0,
            2.0 / 15.0,
            -17.0 / 315.0,
            62.0 / 2835.0,
            -1382.0 / 155_925.0,
            21844.0 / 6_081_075.0,
            -929_569.0 / 638_512_875.0,
            6_404_582.0 / 10_854_718_875.0,
            -443_861_162.0 / 1_856_156_927_625.0,
        ];
        let x2 = x * x;
        let mut p = C[8];
        let mut i = 8;
        while i > 0 {
            i -= 1;
            p = ptx::fma_f32(p, x2, C[i]);
        }
        ptx::fma_f32(x * x2, p, x)
    } else {
        let e = exp_accurate(2.0 * a);
        let t = 1.0 - ptx::div_rn_f32(2.0, e + 1.0);
        if x < 0.0 { -t } else { t }
    }
}
