//! Warpgroup tensor-core instructions (sm_90a): `wgmma.mma_async` (A from shared memory or from
//! registers) and the fences and waits around it, `setmaxnreg`, and the BF16 packing of accumulators.
//!
//! A warpgroup is four consecutive warps (128 threads, the first warp's index a multiple of
//! four). `wgmma.mma_async` multiplies a 64 x N x 16 slice of A and B read from shared memory
//! (through [`MatrixDescriptor`]s) into 64 x N FP32 accumulators spread over the warpgroup's
//! registers: N / 2 per thread.
//!
//! **Soundness.** The PTX ISA makes touching an accumulator register between a
//! `wgmma.mma_async` and the `wgmma.wait_group` that covers it undefined, and between two
//! `asm!` statements LLVM may move or copy their outputs. So the multiply is not offered as
//! separate fence / mma / commit / wait functions: [`wgmma_m64n256k64_bf16`] and its kin are *one*
//! `asm!` statement holding `wgmma.fence`, the four `wgmma.mma_async` of a 64-wide k-tile,
//! `wgmma.commit_group` and `wgmma.wait_group 0`, with every accumulator an `inout` operand.
//! Nothing outside the statement can run between a multiply and its wait; the registers are
//! the statement's operands before and after. (`host/tests/lowering/` reads the PTX and
//! checks it; ptxas prints no "wgmma serialization" warning for these kernels.)
//!
//! SASS: `WARPGROUP.ARRIVE`, `HGMMA.64xNx16.F32.BF16`, `WARPGROUP.DEPBAR.LE gsb0, 0x0`.

use core::arch::asm;

/// A shared-memory matrix descriptor (the 64-bit `desc` operand of `wgmma.mma_async`):
/// start address, leading and stride byte offsets (all in 16-byte units) and the swizzle
/// mode of one operand tile. Made from a tile layout (`crate::wgmma`), never by hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct MatrixDescriptor(u64);

impl MatrixDescriptor {
    /// The descriptor with these raw bits.
    ///
    /// # Safety
    /// `bits` describe, in the PTX ISA's encoding (start address bits 0-13, leading byte
    /// offset 16-29, stride byte offset 32-45, base offset 49-51, swizzle 62-63), shared
    /// memory laid out as every `wgmma` this descriptor goes to expects.
    #[inline(always)]
    pub const unsafe fn from_bits(bits: u64) -> MatrixDescriptor {
        MatrixDescriptor(bits)
    }

    /// The raw bits.
    #[inline(always)]
    pub const fn bits(self) -> u64 {
        self.0
    }
}

/// Defines one fused k-tile multiply per `(shape, input type)`; see the module docs.
macro_rules! wgmma_k64 {
    ($(#[$doc:meta])* $name:ident, $n:literal, $ty:literal, $regs:literal: [$first:literal $($i:literal)*]) => {
        $(#[$doc])*
        ///
        /// One `asm!` statement: `wgmma.fence`, four `wgmma.mma_async.sync.aligned` of
        /// shape m64nNk16 with FP32 accumulators (the k-th with both descriptors advanced by
        /// `k * A_STEP` and `k * B_STEP`, in the descriptors' 16-byte units), then
        /// `wgmma.commit_group` and `wgmma.wait_group 0`: the accumulators are complete when it
        /// returns. `accumulate == false` overwrites them (`scale-d = 0`) instead of adding.
        /// `TRANS_B = 1` reads B as N-major (the `imm-trans-b` operand), `0` as K-major; A is
        /// K-major.
        ///
        /// # Safety
        /// 1. All 128 threads of a warpgroup call it together, converged, with the same
        ///    descriptors and `accumulate` (`.sync.aligned`).
        /// 2. `a` and `b` describe shared memory holding the 64 x 64 A slice and the 64 x N B
        ///    slice, laid out as the descriptors say, written before the call by the copy
        ///    engine (its completion observed) or by this block's threads followed by
        ///    `fence.proxy.async.shared::cta` and a barrier; nothing writes them until the
        ///    call returns.
        #[inline(always)]
        pub unsafe fn $name<const A_STEP: u64, const B_STEP: u64, const TRANS_B: u32>(
            acc: &mut [f32; $regs],
            a: MatrixDescriptor,
            b: MatrixDescriptor,
            accumulate: bool,
        ) {
            // SAFETY: forwarded contract; every accumulator is an operand of this one
            // statement, so none is touched between the multiplies and their wait.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred p, q;",
                    ".reg .b64 a1, a2, a3, b1, b2, b3;",
                    "setp.ne.b32 p, {scale}, 0;",
                    "setp.eq.b32 q, 0, 0;",
                    "add.s64 a1, {da}, {sa};",
                    "add.s64 a2, {da}, {sa2};",
                    "add.s64 a3, {da}, {sa3};",
                    "add.s64 b1, {db}, {sb};",
                    "add.s64 b2, {db}, {sb2};",
                    "add.s64 b3, {db}, {sb3};",
                    "wgmma.fence.sync.aligned;",
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {da}, {db}, p, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, a1, b1, q, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, a2, b2, q, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, a3, b3, q, 1, 1, 0, {tb};"),
                    "wgmma.commit_group.sync.aligned;",
                    "wgmma.wait_group.sync.aligned 0;",
                    "}}",
                    inout(reg32) acc[$first],
                    $(inout(reg32) acc[$i],)*
                    da = in(reg64) a.0,
                    db = in(reg64) b.0,
                    scale = in(reg32) accumulate as u32,
                    sa = const A_STEP,
                    sa2 = const 2 * A_STEP,
                    sa3 = const 3 * A_STEP,
                    sb = const B_STEP,
                    sb2 = const 2 * B_STEP,
                    sb3 = const 3 * B_STEP,
                    tb = const TRANS_B,
                    options(nostack),
                );
            }
        }
    };
}

/// Defines one fused k-tile multiply with A from registers per `(shape, input type)`.
macro_rules! wgmma_k64_rs {
    ($(#[$doc:meta])* $name:ident, $n:literal, $ty:literal, $regs:literal: [$first:literal $($i:literal)*]) => {
        $(#[$doc])*
        ///
        /// A from registers: `a[4 j .. 4 j + 4]` is this thread's fragment of the k-th 64 x 16
        /// slice (`j = k`), in the layout `ldmatrix_x4` loads from a K-major tile: warp `w`
        /// of the warpgroup holds rows `16 w .. 16 w + 16` ([`ldmatrix_x4`](super::ldmatrix_x4)'s
        /// four matrices: rows 0-7 and 8-15 of k 0-7, then of k 8-15). One `asm!` statement, as
        /// the shared-memory form: `wgmma.fence` (which also orders the writes of `a` before
        /// the multiplies), four `wgmma.mma_async` m64nNk16 with `a` and B's descriptor
        /// advanced by `k * B_STEP`, `wgmma.commit_group`, `wgmma.wait_group 0`; A's registers
        /// are operands of the statement too, so nothing writes them before the multiplies
        /// have read them. `TRANS_B` as there.
        ///
        /// # Safety
        /// As the shared-memory form for B; all 128 threads of the warpgroup call it together,
        /// converged, each with its own fragment of A.
        #[inline(always)]
        pub unsafe fn $name<const B_STEP: u64, const TRANS_B: u32>(
            acc: &mut [f32; $regs],
            a: &[u32; 16],
            b: MatrixDescriptor,
            accumulate: bool,
        ) {
            // SAFETY: forwarded contract; every accumulator and A register is an operand of
            // this one statement.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred p, q;",
                    ".reg .b64 b1, b2, b3;",
                    "setp.ne.b32 p, {scale}, 0;",
                    "setp.eq.b32 q, 0, 0;",
                    "add.s64 b1, {db}, {sb};",
                    "add.s64 b2, {db}, {sb2};",
                    "add.s64 b3, {db}, {sb3};",
                    "wgmma.fence.sync.aligned;",
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a0}, {a1}, {a2}, {a3}}}, {db}, p, 1, 1, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a4}, {a5}, {a6}, {a7}}}, b1, q, 1, 1, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a8}, {a9}, {a10}, {a11}}}, b2, q, 1, 1, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a12}, {a13}, {a14}, {a15}}}, b3, q, 1, 1, {tb};"),
                    "wgmma.commit_group.sync.aligned;",
                    "wgmma.wait_group.sync.aligned 0;",
                    "}}",
                    inout(reg32) acc[$first],
                    $(inout(reg32) acc[$i],)*
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    a4 = in(reg32) a[4], a5 = in(reg32) a[5], a6 = in(reg32) a[6], a7 = in(reg32) a[7],
                    a8 = in(reg32) a[8], a9 = in(reg32) a[9], a10 = in(reg32) a[10], a11 = in(reg32) a[11],
                    a12 = in(reg32) a[12], a13 = in(reg32) a[13], a14 = in(reg32) a[14], a15 = in(reg32) a[15],
                    db = in(reg64) b.0,
                    scale = in(reg32) accumulate as u32,
                    sb = const B_STEP,
                    sb2 = const 2 * B_STEP,
                    sb3 = const 3 * B_STEP,
                    tb = const TRANS_B,
                    options(nostack),
                );
            }
        }
    };
}

// The register lists: N / 2 FP32 accumulators per thread for m64nN.
macro_rules! wgmma_k64_types {
    ($n:literal, $regs:literal, $bf16:ident, $f16:ident, $bf16_rs:ident, $f16_rs:ident: $list:tt) => {
        wgmma_k64!(
            /// A 64 x N x 64 k-tile of BF16 inputs into FP32 accumulators, N = the fn's name.
            $bf16, $n, "bf16", $regs: $list
        );
        wgmma_k64!(
            /// A 64 x N x 64 k-tile of FP16 inputs into FP32 accumulators, N = the fn's name.
            $f16, $n, "f16", $regs: $list
        );
        wgmma_k64_rs!(
            /// A 64 x N x 64 k-tile of BF16 inputs, A from registers, into FP32 accumulators.
            $bf16_rs, $n, "bf16", $regs: $list
        );
        wgmma_k64_rs!(
            /// A 64 x N x 64 k-tile of FP16 inputs, A from registers, into FP32 accumulators.
            $f16_rs, $n, "f16", $regs: $list
        );
    };
}

wgmma_k64_types!(64, 32, wgmma_m64n64k64_bf16, wgmma_m64n64k64_f16, wgmma_m64n64k64_bf16_rs, wgmma_m64n64k64_f16_rs: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
]);
wgmma_k64_types!(128, 64, wgmma_m64n128k64_bf16, wgmma_m64n128k64_f16, wgmma_m64n128k64_bf16_rs, wgmma_m64n128k64_f16_rs: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
]);
wgmma_k64_types!(256, 128, wgmma_m64n256k64_bf16, wgmma_m64n256k64_f16, wgmma_m64n256k64_bf16_rs, wgmma_m64n256k64_f16_rs: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127
]);

/// `setmaxnreg.inc.sync.aligned.u32 REGS;` — raises this warpgroup's per-thread register
/// limit to `REGS` (24..=256, a multiple of 8), waiting until the registers released by other
/// warpgroups' [`setmaxnreg_dec`] are free. How a warp-specialized kernel gives its consumer
/// warpgroups the producer's registers.
///
/// # Safety
/// All threads of a warpgroup execute it together, converged; the kernel was assembled with a
/// register count per thread at most `REGS` (its launch bounds), and the registers the block
/// takes in all never exceed what it was launched with.
#[inline(always)]
pub unsafe fn setmaxnreg_inc<const REGS: u32>() {
    const { assert!(REGS >= 24 && REGS <= 256 && REGS.is_multiple_of(8)) };
    // SAFETY: forwarded contract.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {r};", r = const REGS, options(nostack)) }
}

/// `setmaxnreg.dec.sync.aligned.u32 REGS;` — lowers this warpgroup's per-thread register
/// limit to `REGS` (24..=256, a multiple of 8), releasing the rest to the block's pool.
///
/// # Safety
/// All threads of a warpgroup execute it together, converged; no live value of the
/// warpgroup's threads needs more than `REGS` registers afterwards (ptxas spills otherwise:
/// the no-local-memory test guards it).
#[inline(always)]
pub unsafe fn setmaxnreg_dec<const REGS: u32>() {
    const { assert!(REGS >= 24 && REGS <= 256 && REGS.is_multiple_of(8)) };
    // SAFETY: forwarded contract.
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {r};", r = const REGS, options(nostack)) }
}

/// `cvt.rn.bf16x2.f32 d, hi, lo;` — two floats rounded to nearest-even BF16, `lo` in the low
/// half of the result: the packing of an accumulator pair for a 4-byte store.
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    let packed: u32;
    // SAFETY: register arithmetic only.
    unsafe {
        asm!(
            "cvt.rn.bf16x2.f32 {d}, {hi}, {lo};",
            d = out(reg32) packed,
            hi = in(reg32) hi,
            lo = in(reg32) lo,
            options(pure, nomem, nostack, preserves_flags)
        )
    };
    packed
}
