//! Warpgroup tensor-core instructions (sm_90a): `wgmma.mma_async` (A from shared memory or from
//! registers; one 64-row tile, or two stacked into a 128-row one) with its `wgmma.fence` and
//! `wgmma.commit_group`, `wgmma.wait_group`, `setmaxnreg`, and the packing of accumulators into
//! 16-bit pairs.
//!
//! A warpgroup is four consecutive warps (128 threads, the first warp's index a multiple of
//! four). `wgmma.mma_async` multiplies a 64 x N x (32 bytes of K) slice of A and B read from
//! shared memory (through [`MatrixDescriptor`]s) into 64 x N FP32 accumulators spread over the
//! warpgroup's registers: N / 2 per thread.
//!
//! **Issue and wait are separate statements.** A k-tile's multiplies (four `wgmma.mma_async`
//! over the 128 bytes of K one swizzled row holds, the fence before and the commit after) are
//! one `asm!` statement with every accumulator an `inout` operand, so the four name one set of
//! registers; the wait is another statement ([`wgmma_wait_group`], or the `wgmma_wait_group_*`
//! forms that take the accumulators as `inout` operands, so that no later read of them can be
//! scheduled before it). The PTX ISA makes touching an accumulator between a multiply and the
//! wait that covers it undefined; the safe layer (`crate::wgmma::InFlight`) holds the
//! accumulators borrowed in between, and `host/tests/lowering/tensor_cores.rs` reads every
//! kernel's PTX to check that no instruction names them there (ptxas prints no serialization
//! warning either).
//!
//! SASS: `WARPGROUP.ARRIVE`, `HGMMA.64xNx16.F32.BF16` (`QGMMA.64xNx32.F32.E4M3.E4M3` for 8-bit
//! inputs), `WARPGROUP.DEPBAR.LE gsb0, N`.

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

/// `wgmma.wait_group.sync.aligned N;` — waits until at most `N` of this warpgroup's committed
/// multiply groups are pending. Says nothing to LLVM about accumulators: use it to learn that
/// the *stages* older groups read are free, and the `wgmma_wait_group_*` forms (or
/// `crate::wgmma::InFlight`) before reading an accumulator.
///
/// # Safety
/// All threads of the warpgroup execute it together, converged (`.sync.aligned`).
#[inline(always)]
pub unsafe fn wgmma_wait_group<const N: u32>() {
    // SAFETY: forwarded contract.
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) }
}

/// Defines a k-tile's issue, A from shared memory and A from registers, per `(shape, type)`.
macro_rules! wgmma_k_tile {
    (
        $(#[$doc:meta])* $name:ident, $name_rs:ident, $n:literal, $ty:literal, $k:literal,
        $regs:literal, $tail:literal, $tail_rs:literal: [$first:literal $($i:literal)*]
    ) => {
        $(#[$doc])*
        ///
        /// One `asm!` statement: `wgmma.fence`, the four `wgmma.mma_async.sync.aligned` of
        /// shape `m64nNkK` over one k-tile (the k-th with both descriptors advanced by
        /// `k * A_STEP` and `k * B_STEP`, in the descriptors' 16-byte units), and
        /// `wgmma.commit_group`. No wait: the multiplies are in flight when it returns, and
        /// until a `wgmma.wait_group` covers this group nothing may touch `acc` or the tiles.
        /// `accumulate == false` overwrites the accumulators (`scale-d = 0`) instead of adding.
        /// `TRANS_B = 1` reads B as N-major (the `imm-trans-b` operand; 16-bit types only),
        /// `0` as K-major; A is K-major.
        ///
        /// # Safety
        /// 1. All 128 threads of a warpgroup call it together, converged, with the same
        ///    descriptors and `accumulate` (`.sync.aligned`).
        /// 2. `a` and `b` describe shared memory holding the 64-row A slice and the N-row B
        ///    slice of the k-tile, laid out as the descriptors say, written before the call by
        ///    the copy engine (its completion observed) or by this block's threads followed by
        ///    `fence.proxy.async.shared::cta` and a barrier; nothing writes them until a
        ///    `wgmma.wait_group` covers this group.
        /// 3. Nothing reads or writes `acc` until a `wgmma.wait_group` covers this group,
        ///    except further k-tiles of the same shape into the same `acc`.
        #[inline(always)]
        pub unsafe fn $name<const A_STEP: u64, const B_STEP: u64, const TRANS_B: u32>(
            acc: &mut [f32; $regs],
            a: MatrixDescriptor,
            b: MatrixDescriptor,
            accumulate: bool,
        ) {
            // SAFETY: forwarded contract; the four multiplies name the same registers, the
            // statement's operands.
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
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {da}, {db}, p", $tail),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, a1, b1, q", $tail),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, a2, b2, q", $tail),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, a3, b3, q", $tail),
                    "wgmma.commit_group.sync.aligned;",
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

        $(#[$doc])*
        ///
        /// A from registers: `a[4 j .. 4 j + 4]` is this thread's fragment of the k-th
        /// 64-row slice (`j = k`), in the layout `ldmatrix_x4` loads from a K-major tile of
        /// 16-bit elements (warp `w` of the warpgroup holds rows `16 w .. 16 w + 16`). One
        /// `asm!` statement as the shared-memory form, B's descriptor advanced by
        /// `k * B_STEP`; the fence at its start orders the writes of `a` before the
        /// multiplies.
        ///
        /// # Safety
        /// As the shared-memory form, and nothing writes `a`'s registers until a
        /// `wgmma.wait_group` covers this group (they are `in` operands: the safe layer keeps
        /// the fragment borrowed).
        #[inline(always)]
        pub unsafe fn $name_rs<const B_STEP: u64, const TRANS_B: u32>(
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
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a0}, {a1}, {a2}, {a3}}}, {db}, p", $tail_rs),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a4}, {a5}, {a6}, {a7}}}, b1, q", $tail_rs),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a8}, {a9}, {a10}, {a11}}}, b2, q", $tail_rs),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k", $k, ".f32.", $ty, ".", $ty,
                        " {{{", stringify!($first), "}", $(",{", stringify!($i), "}",)* "}}, {{{a12}, {a13}, {a14}, {a15}}}, b3, q", $tail_rs),
                    "wgmma.commit_group.sync.aligned;",
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

/// Defines a 128-row k-tile's issue (two 64-row tiles stacked in M, A from shared memory) per
/// `(shape, 16-bit type)`.
macro_rules! wgmma_k_tile_stacked {
    (
        $(#[$doc:meta])* $name:ident, $n:literal, $ty:literal, $regs:literal:
        [$lo:literal $($l:literal)*], [$hi:literal $($h:literal)*]
    ) => {
        $(#[$doc])*
        ///
        /// One `asm!` statement: `wgmma.fence`, eight `wgmma.mma_async.sync.aligned` of shape
        /// `m64nNk16` — per k-step (the k-th with the descriptors advanced by `k * A_STEP` and
        /// `k * B_STEP`) rows 0-63 into `lo`, then rows 64-127 (A's descriptor advanced by
        /// `A_ROWS` more) into `hi`, both by the same B — and one `wgmma.commit_group`. The
        /// rest as the 64-row form of the shape (`wgmma_k_tile_m64nN_*`): in flight on return,
        /// `accumulate == false` overwrites, `TRANS_B` reads B N-major.
        ///
        /// # Safety
        /// As the 64-row form, with `a` describing the 128-row A slice (its rows 64-127
        /// `A_ROWS` 16-byte units on) and `lo`, `hi` both untouched until a wait covers the
        /// group.
        #[inline(always)]
        pub unsafe fn $name<const A_STEP: u64, const A_ROWS: u64, const B_STEP: u64, const TRANS_B: u32>(
            lo: &mut [f32; $regs],
            hi: &mut [f32; $regs],
            a: MatrixDescriptor,
            b: MatrixDescriptor,
            accumulate: bool,
        ) {
            // SAFETY: forwarded contract; the eight multiplies name the statement's operands,
            // `lo`'s registers for rows 0-63 and `hi`'s for rows 64-127.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred p, q;",
                    ".reg .b64 a1, a2, a3, c0, c1, c2, c3, b1, b2, b3;",
                    "setp.ne.b32 p, {scale}, 0;",
                    "setp.eq.b32 q, 0, 0;",
                    "add.s64 a1, {da}, {sa};",
                    "add.s64 a2, {da}, {sa2};",
                    "add.s64 a3, {da}, {sa3};",
                    "add.s64 c0, {da}, {rows};",
                    "add.s64 c1, a1, {rows};",
                    "add.s64 c2, a2, {rows};",
                    "add.s64 c3, a3, {rows};",
                    "add.s64 b1, {db}, {sb};",
                    "add.s64 b2, {db}, {sb2};",
                    "add.s64 b3, {db}, {sb3};",
                    "wgmma.fence.sync.aligned;",
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($lo), "}", $(",{", stringify!($l), "}",)* "}}, {da}, {db}, p, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($hi), "}", $(",{", stringify!($h), "}",)* "}}, c0, {db}, p, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($lo), "}", $(",{", stringify!($l), "}",)* "}}, a1, b1, q, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($hi), "}", $(",{", stringify!($h), "}",)* "}}, c1, b1, q, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($lo), "}", $(",{", stringify!($l), "}",)* "}}, a2, b2, q, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($hi), "}", $(",{", stringify!($h), "}",)* "}}, c2, b2, q, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($lo), "}", $(",{", stringify!($l), "}",)* "}}, a3, b3, q, 1, 1, 0, {tb};"),
                    concat!("wgmma.mma_async.sync.aligned.m64n", $n, "k16.f32.", $ty, ".", $ty,
                        " {{{", stringify!($hi), "}", $(",{", stringify!($h), "}",)* "}}, c3, b3, q, 1, 1, 0, {tb};"),
                    "wgmma.commit_group.sync.aligned;",
                    "}}",
                    inout(reg32) lo[$lo],
                    $(inout(reg32) lo[$l],)*
                    inout(reg32) hi[$hi - $regs],
                    $(inout(reg32) hi[$h - $regs],)*
                    da = in(reg64) a.0,
                    db = in(reg64) b.0,
                    scale = in(reg32) accumulate as u32,
                    sa = const A_STEP,
                    sa2 = const 2 * A_STEP,
                    sa3 = const 3 * A_STEP,
                    rows = const A_ROWS,
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

/// Defines `wgmma.wait_group N` with a tile's accumulators tied to it.
macro_rules! wgmma_wait_tied {
    ($name:ident, $regs:literal: [$first:literal $($i:literal)*]) => {
        /// `wgmma.wait_group.sync.aligned N;` with this thread's `REGS` accumulators as
        /// `inout` operands: every later read of them is ordered after the wait (LLVM cannot
        /// hoist one above it, as it could above a wait that does not name them). The
        /// comment after the instruction names the registers, so the statement uses its
        /// operands.
        ///
        /// # Safety
        /// All threads of the warpgroup execute it together, converged; `N` is such that the
        /// groups that write `acc` are complete when it returns (the caller counts them).
        #[inline(always)]
        pub unsafe fn $name<const N: u32>(acc: &mut [f32; $regs]) {
            // SAFETY: forwarded contract.
            unsafe {
                asm!(
                    concat!("wgmma.wait_group.sync.aligned {n}; // {", stringify!($first), "}",
                        $(" {", stringify!($i), "}",)*),
                    inout(reg32) acc[$first],
                    $(inout(reg32) acc[$i],)*
                    n = const N,
                    options(nostack),
                );
            }
        }
    };
}

// Per shape: the k-tile issue for each input type (16-bit types take k16 and a transpose
// operand, 8-bit ones k32 and none), and the tied wait.
macro_rules! wgmma_shape {
    ($n:literal, $regs:literal, $wait:ident, [$bf16:ident, $bf16_rs:ident, $f16:ident, $f16_rs:ident,
      $e4m3:ident, $e4m3_rs:ident, $e5m2:ident, $e5m2_rs:ident]: $list:tt) => {
        wgmma_k_tile!(
            /// A 64 x N k-tile (64 elements of K) of BF16 inputs into FP32 accumulators.
            $bf16, $bf16_rs, $n, "bf16", "16", $regs, ", 1, 1, 0, {tb};", ", 1, 1, {tb};": $list
        );
        wgmma_k_tile!(
            /// A 64 x N k-tile (64 elements of K) of FP16 inputs into FP32 accumulators.
            $f16, $f16_rs, $n, "f16", "16", $regs, ", 1, 1, 0, {tb};", ", 1, 1, {tb};": $list
        );
        wgmma_k_tile!(
            /// A 64 x N k-tile (128 elements of K) of E4M3 inputs into FP32 accumulators.
            $e4m3, $e4m3_rs, $n, "e4m3", "32", $regs,
            ", 1, 1; // no transpose for 8-bit types: {tb}", ", 1, 1; // {tb}": $list
        );
        wgmma_k_tile!(
            /// A 64 x N k-tile (128 elements of K) of E5M2 inputs into FP32 accumulators.
            $e5m2, $e5m2_rs, $n, "e5m2", "32", $regs,
            ", 1, 1; // no transpose for 8-bit types: {tb}", ", 1, 1; // {tb}": $list
        );
        wgmma_wait_tied!($wait, $regs: $list);
    };
}

wgmma_shape!(64, 32, wgmma_wait_group_32, [
    wgmma_k_tile_m64n64_bf16, wgmma_k_tile_m64n64_bf16_rs, wgmma_k_tile_m64n64_f16, wgmma_k_tile_m64n64_f16_rs,
    wgmma_k_tile_m64n64_e4m3, wgmma_k_tile_m64n64_e4m3_rs, wgmma_k_tile_m64n64_e5m2, wgmma_k_tile_m64n64_e5m2_rs
]: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
]);
wgmma_shape!(128, 64, wgmma_wait_group_64, [
    wgmma_k_tile_m64n128_bf16, wgmma_k_tile_m64n128_bf16_rs, wgmma_k_tile_m64n128_f16, wgmma_k_tile_m64n128_f16_rs,
    wgmma_k_tile_m64n128_e4m3, wgmma_k_tile_m64n128_e4m3_rs, wgmma_k_tile_m64n128_e5m2, wgmma_k_tile_m64n128_e5m2_rs
]: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
]);
wgmma_shape!(256, 128, wgmma_wait_group_128, [
    wgmma_k_tile_m64n256_bf16, wgmma_k_tile_m64n256_bf16_rs, wgmma_k_tile_m64n256_f16, wgmma_k_tile_m64n256_f16_rs,
    wgmma_k_tile_m64n256_e4m3, wgmma_k_tile_m64n256_e4m3_rs, wgmma_k_tile_m64n256_e5m2, wgmma_k_tile_m64n256_e5m2_rs
]: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127
]);

// Per shape: the stacked k-tile for each 16-bit input type (8-bit ones are not stacked: no
// kernel multiplies them 128 rows at a time).
macro_rules! wgmma_shape_stacked {
    ($n:literal, $regs:literal, [$bf16:ident, $f16:ident]: $lo:tt, $hi:tt) => {
        wgmma_k_tile_stacked!(
            /// A 128 x N k-tile (64 elements of K) of BF16 inputs into FP32 accumulators.
            $bf16, $n, "bf16", $regs: $lo, $hi
        );
        wgmma_k_tile_stacked!(
            /// A 128 x N k-tile (64 elements of K) of FP16 inputs into FP32 accumulators.
            $f16, $n, "f16", $regs: $lo, $hi
        );
    };
}

wgmma_shape_stacked!(64, 32, [wgmma_k_tile_m128n64_bf16, wgmma_k_tile_m128n64_f16]: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
], [
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
]);
wgmma_shape_stacked!(128, 64, [wgmma_k_tile_m128n128_bf16, wgmma_k_tile_m128n128_f16]: [
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
], [
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

/// `cvt.rn.f16x2.f32 d, hi, lo;` — two floats rounded to nearest-even FP16, `lo` in the low
/// half of the result.
#[inline(always)]
pub fn pack_f16x2(lo: f32, hi: f32) -> u32 {
    let packed: u32;
    // SAFETY: register arithmetic only.
    unsafe {
        asm!(
            "cvt.rn.f16x2.f32 {d}, {hi}, {lo};",
            d = out(reg32) packed,
            hi = in(reg32) hi,
            lo = in(reg32) lo,
            options(pure, nomem, nostack, preserves_flags)
        )
    };
    packed
}
