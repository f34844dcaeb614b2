//! BF16 GEMM on Hopper's tensor cores: `C = A B^T`, A `m x k` and B `n x k` row-major BF16
//! (B as a `Linear` layer stores its weights), or `C = A B` with B `k x n` row-major (`a @ b`:
//! the `_b_kn` kernels, whose B tiles `wgmma` reads transposed), FP32 accumulation, C `m x n`
//! row-major BF16; any `M, N, K >= 1`.
//!
//! A block owns a [`BM`] x [`BN`] tile of C at a time and walks K in steps of [`BK`]: per
//! k-tile one elected thread loads A's `BM x 64` box and B's `BN x 64` box with two tensor
//! copies (128-byte swizzle, zero fill past the matrix) into a [`BulkPipeline`] stage, and two
//! consumer warpgroups each multiply their 64 rows of A by all of B
//! ([`gpu::collective::tensor_core`]: one `wgmma` k-tile in flight, the stage released when
//! the wait after the next one shows it read). Blocks are persistent: a grid
//! of one block per SM walks the tiles in a grouped order for L2 reuse
//! ([`gpu::schedule::grouped_tile`]). The epilogue rounds the accumulators to BF16 and stores
//! them, guarded at the edges.
//!
//! Styles ([`Gemm16Style`]):
//! - `ws_cooperative`: a producer warpgroup (one thread issuing the copies, its registers
//!   given to the consumers with `setmaxnreg`) and two consumer warpgroups sharing the tile;
//! - `ws_pingpong`: the same three warpgroups, each consumer on its own 128 x 128 tiles, the
//!   two taking the block's tiles in turn from one ring of stages (the other's stages
//!   skipped), so that one's epilogue runs while the other multiplies;
//! - `multistage`: no producer warpgroup; the first consumer thread also issues the copies,
//!   `STAGES - 1` k-tiles ahead;
//! - `cp_async`: no copy engine; all 256 threads of the two warpgroups copy each stage with
//!   16-byte `cp.async` (zero-filling at the edges) into the same swizzled tiles, through a
//!   `BlockPipeline`, `STAGES - 1` k-tiles ahead: what the tensor copies buy.
//!
//! `ws_cooperative_rs` is `ws_cooperative` with the consumers loading A into registers
//! (`ldmatrix`) and multiplying from there: `wgmma`'s register form.
//!
//! Tensor maps need rows that are 16-byte multiples: for K not a multiple of 8 the host copies
//! A and B (and, for N not a multiple of 8, the `_b_kn` kernels' `k x n` B) into zero-padded
//! buffers with `gemm16_pad_rows` ([`RowPadder`]) first, in the timed launch; for N not a multiple of 8 the
//! direct-store entry points write C.
//!
//! The kernels are generic over the 16-bit element ([`gpu::wgmma::SixteenBit`]): the
//! `f16_gemm_*` families ([`ElementType::F16`]) are the BF16 ones instantiated for IEEE
//! binary16 A, B and C (FP32 accumulation too), measured beside them: the proof that the
//! element is a parameter, not a rewrite.
//!
//! [`BulkPipeline`]: gpu::pipeline::BulkPipeline

#[cfg(target_arch = "nvptx64")]
mod helpers;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

// The kernels, their tiles, geometry and entry points are `gpu-kernels`' (the crate users
// call); this workload measures them.
use gpu::wgmma::{Bf16, F16};
pub use gpu_kernels::gemm16::*;

/// Threads of the reference and widening kernels' blocks.
pub const HELPER_THREADS: u32 = 256;

gpu::kernel! {
    /// The reference: `C = A B^T` accumulated in `f64` from the BF16 inputs, one thread per
    /// element, to an `m x n` array of `f64`.
    ///
    /// # Safety
    /// 1-D grid covering `m * n` threads in blocks of [`HELPER_THREADS`]; `a` holds `m * k`,
    /// `b` `n * k` elements, `c` `m * n` doubles.
    pub fn bf16_gemm_reference(a: *const Bf16, b: *const Bf16, c: *mut f64, m: u32, n: u32, k: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::reference(a, b, c, m, n, k) }
    }
}

gpu::kernel! {
    /// As [`bf16_gemm_reference`], from FP16 inputs.
    ///
    /// # Safety
    /// As [`bf16_gemm_reference`].
    pub fn f16_gemm_reference(a: *const F16, b: *const F16, c: *mut f64, m: u32, n: u32, k: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::reference(a, b, c, m, n, k) }
    }
}

gpu::kernel! {
    /// BF16 to f32, exactly, except that the poison [`C_POISON`] becomes `harness`'s f32
    /// poison bits `poison` (so an unwritten element is reported as such).
    ///
    /// # Safety
    /// Any 1-D grid of [`HELPER_THREADS`]-thread blocks; `src` and `dst` hold `len` elements.
    pub fn bf16_widen(src: *const Bf16, dst: *mut f32, len: u64, poison: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::widen(src, dst, len, poison) }
    }
}

gpu::kernel! {
    /// As [`bf16_widen`], from FP16 (exact too: every binary16 value, subnormals included, is
    /// an f32).
    ///
    /// # Safety
    /// As [`bf16_widen`].
    pub fn f16_widen(src: *const F16, dst: *mut f32, len: u64, poison: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::widen(src, dst, len, poison) }
    }
}

/// The bits C is poisoned with before a checked launch, of either element: `0xFFFF`, a NaN in
/// BF16 (exponent all ones, mantissa `0x7F`) and in FP16 (exponent `0x1F`, mantissa `0x3FF`)
/// alike, that no kernel writes: the inputs are finite and small (the host's module docs), so
/// every accumulator and every element of C rounded from it is finite.
pub const C_POISON: u16 = 0xFFFF;
