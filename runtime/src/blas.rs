//! cuBLAS, loaded at run time: a handle on a [`Gpu`]'s stream that a program without the
//! library still builds and runs without (it is told why the handle is missing).

use crate::device::Gpu;
use crate::shared_library;
use cudarc::cublas::sys as cublas;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use cudarc::cublas::sys;

/// A cuBLAS handle bound to a [`Gpu`]'s stream.
///
/// ```no_run
/// use gpu_runtime::blas::{Blas, sys};
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// let blas = Blas::open(&gpu, sys::cublasMath_t::CUBLAS_DEFAULT_MATH)?;
/// let a = gpu.upload(&[1.0f32, 2.0, 3.0, 4.0], "A")?;
/// let c = gpu.zeros::<f32>(4, "C")?;
/// let (pa, pc) = (gpu.address(&a) as *const f32, gpu.address(&c) as *mut f32);
/// let op = sys::cublasOperation_t::CUBLAS_OP_N;
/// // SAFETY: column-major 2 x 2 matrices of f32 (C = A A), alive until the sync below.
/// let status = unsafe {
///     sys::cublasSgemm_v2(blas.handle(), op, op, 2, 2, 2, &1.0, pa, 2, pa, 2, &0.0, pc, 2)
/// };
/// assert_eq!(status, sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS);
/// gpu.synchronize(|| "running cublasSgemm".into())?;
/// # Ok(())
/// # }
/// ```
pub struct Blas {
    handle: cublas::cublasHandle_t,
    /// The GPU's hang flag: a hung GPU's handle is leaked (`cublasDestroy` synchronizes with
    /// the kernel that never ends).
    gpu_hung: Arc<AtomicBool>,
}

impl Blas {
    /// A handle on `gpu`'s stream with `math` mode, or one line on why cuBLAS cannot be used
    /// here (the library is not installed, or refused).
    pub fn open(gpu: &Gpu, math: cublas::cublasMath_t) -> Result<Blas, String> {
        if !shared_library::present(shared_library::CUBLAS) {
            return Err(format!(
                "libcublas not found (looked for {})",
                shared_library::looked_for(shared_library::CUBLAS)
            ));
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: creates a handle in the current context (the GPU's, bound to this thread).
        let status = unsafe { cublas::cublasCreate_v2(&mut handle) };
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(format!("cublasCreate failed: {status:?}"));
        }
        let this = Blas {
            handle,
            gpu_hung: gpu.hung_flag(),
        };
        let stream = gpu.stream().cu_stream() as cublas::cudaStream_t;
        // SAFETY: a live handle and the GPU's live stream.
        let status = unsafe { cublas::cublasSetStream_v2(handle, stream) };
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(format!("cublasSetStream failed: {status:?}"));
        }
        // SAFETY: a live handle.
        let status = unsafe { cublas::cublasSetMathMode(handle, math) };
        if status != cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(format!("cublasSetMathMode failed: {status:?}"));
        }
        Ok(this)
    }

    /// The raw handle, for calls through [`sys`]; it lives as long as `self`.
    pub fn handle(&self) -> cublas::cublasHandle_t {
        self.handle
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        if self.gpu_hung.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: the handle is live and dropped once.
        unsafe { cublas::cublasDestroy_v2(self.handle) };
    }
}
