//! The special-function unit and the correctly rounded forms beside it: one function per
//! instruction. [`crate::math`] builds `exp`, `tanh` and the accurate forms on them.
//!
//! Error bounds quoted are those of the CUDA C++ Programming Guide for the intrinsic each
//! instruction implements (`exp2f` / `ex2.approx`, `__log2f` / `lg2.approx`, ...); the
//! library's self-test measures every one on the GPU against an f64 host reference.

use core::arch::asm;

/// Declares `fn $name(x: f32) -> f32` for the one-operand instruction `$op`.
macro_rules! unary_f32 {
    ($(#[$doc:meta])* $name:ident => $op:literal) => {
        $(#[$doc])*
        #[doc = concat!("\n\nLowers to `", $op, " d, a;`.")]
        #[inline(always)]
        #[must_use]
        pub fn $name(x: f32) -> f32 {
            let y: f32;
            // SAFETY: arithmetic on registers only.
            unsafe {
                asm!(
                    concat!($op, " {y}, {x};"),
                    y = out(reg32) y,
                    x = in(reg32) x,
                    options(pure, nomem, nostack, preserves_flags)
                )
            };
            y
        }
    };
}

unary_f32!(
    /// `2^x`, fast (`MUFU.EX2`): within 2 ulp, subnormal inputs and results flushed to zero.
    ex2_approx_ftz_f32 => "ex2.approx.ftz.f32"
);
unary_f32!(
    /// `2^x`, fast, with subnormal results kept (a scaling step around `MUFU.EX2`): within
    /// 2 ulp.
    ex2_approx_f32 => "ex2.approx.f32"
);
unary_f32!(
    /// `log2(x)`, fast (`MUFU.LG2`): absolute error within 2^-22 for x in [0.5, 2], about 2
    /// ulp elsewhere; subnormal inputs flushed to zero (so `-inf`).
    lg2_approx_ftz_f32 => "lg2.approx.ftz.f32"
);
unary_f32!(
    /// `1 / x`, fast (`MUFU.RCP`): within 1 ulp; subnormals flushed to zero.
    rcp_approx_ftz_f32 => "rcp.approx.ftz.f32"
);
unary_f32!(
    /// `1 / x`, correctly rounded (IEEE 754 round to nearest; a short Newton sequence in SASS).
    rcp_rn_f32 => "rcp.rn.f32"
);
unary_f32!(
    /// `1 / sqrt(x)`, fast (`MUFU.RSQ`): within 2 ulp; subnormals flushed to zero.
    rsqrt_approx_ftz_f32 => "rsqrt.approx.ftz.f32"
);
unary_f32!(
    /// `sqrt(x)`, correctly rounded.
    sqrt_rn_f32 => "sqrt.rn.f32"
);
unary_f32!(
    /// `tanh(x)`, fast (`MUFU.TANH`, sm_75+): relative error about 2^-11.
    tanh_approx_f32 => "tanh.approx.f32"
);

/// `div.rn.f32 d, a, b;` — `a / b`, correctly rounded.
#[inline(always)]
#[must_use]
pub fn div_rn_f32(a: f32, b: f32) -> f32 {
    let d: f32;
    // SAFETY: arithmetic on registers only.
    unsafe {
        asm!(
            "div.rn.f32 {d}, {a}, {b};",
            d = out(reg32) d,
            a = in(reg32) a,
            b = in(reg32) b,
            options(pure, nomem, nostack, preserves_flags)
        )
    };
    d
}
