//! The FP32 GEMM workload: every family of `gpu_kernels::gemm32` (re-exported here: the
//! kernels, their table and shapes) at any `M x N x K`, checked against an `f64` reference
//! kernel and timed beside cuBLAS SGEMM.
//!
//! Kernel parameters: `(a, b, c, m, n, k)`; `a` is `m x k`, `b` is `k x n`, `c` is `m x n`
//! (the tensor-copy styles, sm_90: tensor maps of A and/or B in place of `a` and `b`).
//! Grid: [`GemmKernel::grid`], blocks of [`GemmKernel::threads`], dynamic shared memory
//! [`GemmKernel::layout`].

pub use gpu_kernels::gemm32::*;

#[cfg(target_arch = "nvptx64")]
mod reference;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

/// Side of the reference kernel's square output tile per block.
pub const REFERENCE_TILE: u32 = 16;
/// Threads per block of the reference kernel (one per output of its tile).
pub const REFERENCE_THREADS: u32 = REFERENCE_TILE * REFERENCE_TILE;

gpu::kernel! {
    /// The reference: `C = A B` in `f64` (one thread per output, f64 accumulation of the f32
    /// products) to an `m x n` array of `f64`.
    ///
    /// # Safety
    /// Grid `(ceil(n / 16), ceil(m / 16))` of [`REFERENCE_THREADS`]-thread blocks; `a` holds
    /// `m * k` floats, `b` `k * n`, `c` `m * n` doubles.
    pub fn gemm_reference(a: *const f32, b: *const f32, c: *mut f64, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded launch contract.
        unsafe { reference::reference(a, b, c, m, n, k) }
    }
}
