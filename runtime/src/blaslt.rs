//! cuBLASLt, loaded at run time: a BF16 GEMM planned once per shape with the library's own
//! heuristic (its best algorithm, with a workspace: what PyTorch's `matmul` runs), so that a
//! kernel can be compared with the faster of cuBLAS's two interfaces.

use crate::device::Gpu;
use crate::shared_library;
use cudarc::cublaslt::sys as lt;
use cudarc::driver::CudaSlice;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The workspace an algorithm may use (PyTorch's default on Hopper is 32 MiB too).
pub const WORKSPACE_BYTES: usize = 32 << 20;

/// A cuBLASLt handle.
///
/// ```no_run
/// use gpu_runtime::blaslt::BlasLt;
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// // Refused, saying why, where cuBLASLt is not installed.
/// let lt = BlasLt::open(&gpu)?;
/// // C (128 x 256) = A (128 x 64) B^T, B 256 x 64: planned once, run many times.
/// let gemm = lt.bf16_gemm_abt(&gpu, 128, 256, 64)?;
/// # Ok(())
/// # }
/// ```
pub struct BlasLt {
    handle: lt::cublasLtHandle_t,
    gpu_hung: Arc<AtomicBool>,
}

fn check(status: lt::cublasStatus_t, what: &str) -> Result<(), String> {
    if status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {status:?}"))
    }
}

impl BlasLt {
    /// A handle, or one line on why cuBLASLt cannot be used here.
    pub fn open(gpu: &Gpu) -> Result<BlasLt, String> {
        if !shared_library::present(shared_library::CUBLAS_LT) {
            return Err(format!(
                "libcublasLt not found (looked for {})",
                shared_library::looked_for(shared_library::CUBLAS_LT)
            ));
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: creates a handle in the current context.
        check(unsafe { lt::cublasLtCreate(&mut handle) }, "cublasLtCreate")?;
        Ok(BlasLt {
            handle,
            gpu_hung: gpu.hung_flag(),
        })
    }

    /// Plans row-major `C (m x n) = A (m x k) B^T` with B `n x k` (both BF16, C BF16, FP32
    /// compute) — column-major `C^T = B A^T`, the "TN" GEMM — with the heuristic's first
    /// algorithm; one line on why not if it has none.
    pub fn bf16_gemm_abt(&self, gpu: &Gpu, m: u32, n: u32, k: u32) -> Result<LtGemm, String> {
        let mut plan = LtGemm {
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            algo: None,
            workspace: gpu
                .zeros::<u8>(WORKSPACE_BYTES, "the cuBLASLt workspace")
                .map_err(|e| e.to_string())?,
            gpu_hung: self.gpu_hung.clone(),
        };
        let bf16 = lt::cudaDataType_t::CUDA_R_16BF;
        // SAFETY (each call): creates or configures objects owned by `plan` (destroyed by its
        // drop), with attribute values of the documented types and sizes.
        unsafe {
            check(
                lt::cublasLtMatmulDescCreate(
                    &mut plan.desc,
                    lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    lt::cudaDataType_t::CUDA_R_32F,
                ),
                "cublasLtMatmulDescCreate",
            )?;
            let transpose = cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T;
            check(
                lt::cublasLtMatmulDescSetAttribute(
                    plan.desc,
                    lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                    (&transpose as *const cudarc::cublas::sys::cublasOperation_t).cast(),
                    size_of::<cudarc::cublas::sys::cublasOperation_t>(),
                ),
                "setting TRANSA",
            )?;
            // Column-major operands: B's memory as k x n (ld k, transposed), A's as k x m
            // (ld k), C's as n x m (ld n).
            let shapes = [(k, n, k), (k, m, k), (n, m, n)];
            for (layout, (rows, cols, ld)) in plan.layouts.iter_mut().zip(shapes) {
                check(
                    lt::cublasLtMatrixLayoutCreate(
                        layout,
                        bf16,
                        rows as u64,
                        cols as u64,
                        ld as i64,
                    ),
                    "cublasLtMatrixLayoutCreate",
                )?;
            }
            let mut preference = std::ptr::null_mut();
            check(
                lt::cublasLtMatmulPreferenceCreate(&mut preference),
                "cublasLtMatmulPreferenceCreate",
            )?;
            let bytes = WORKSPACE_BYTES as u64;
            let set = check(
                lt::cublasLtMatmulPreferenceSetAttribute(
                    preference,
                    lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&bytes as *const u64).cast(),
                    size_of::<u64>(),
                ),
                "setting the workspace",
            );
            let mut result: lt::cublasLtMatmulHeuristicResult_t = std::mem::zeroed();
            let mut found = 0;
            let heuristic = set.and_then(|()| {
                check(
                    lt::cublasLtMatmulAlgoGetHeuristic(
                        self.handle,
                        plan.desc,
                        plan.layouts[0],
                        plan.layouts[1],
                        plan.layouts[2],
                        plan.layouts[2],
                        preference,
                        1,
                        &mut result,
                        &mut found,
                    ),
                    "cublasLtMatmulAlgoGetHeuristic",
                )
            });
            lt::cublasLtMatmulPreferenceDestroy(preference);
            heuristic?;
            if found == 0 {
                return Err(format!("cuBLASLt has no algorithm for {m}x{n}x{k} BF16"));
            }
            plan.algo = Some(result.algo);
        }
        Ok(plan)
    }
}

impl Drop for BlasLt {
    fn drop(&mut self) {
        if self.gpu_hung.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: the handle is live and dropped once.
        unsafe { lt::cublasLtDestroy(self.handle) };
    }
}

/// A planned cuBLASLt GEMM ([`BlasLt::bf16_gemm_abt`]): its descriptors, algorithm and
/// workspace.
///
/// ```no_run
/// use gpu_runtime::blaslt::BlasLt;
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// let lt = BlasLt::open(&gpu)?;
/// let (m, n, k) = (128, 256, 64);
/// let gemm = lt.bf16_gemm_abt(&gpu, m as u32, n as u32, k as u32)?;
/// let a = gpu.upload(&vec![half::bf16::ONE; m * k], "A")?;
/// let b = gpu.upload(&vec![half::bf16::ONE; n * k], "B")?;
/// let c = gpu.zeros::<half::bf16>(m * n, "C")?;
/// let (pa, pb, pc) = (gpu.address(&a), gpu.address(&b), gpu.address(&c));
/// // SAFETY: row-major BF16 A, B and C of the planned shape; `lt` planned `gemm`.
/// unsafe { gemm.run(&lt, &gpu, pa, pb, pc)? };
/// gpu.synchronize(|| "running the cuBLASLt GEMM".into())?;
/// # Ok(())
/// # }
/// ```
pub struct LtGemm {
    desc: lt::cublasLtMatmulDesc_t,
    /// B, A, C.
    layouts: [lt::cublasLtMatrixLayout_t; 3],
    algo: Option<lt::cublasLtMatmulAlgo_t>,
    workspace: CudaSlice<u8>,
    gpu_hung: Arc<AtomicBool>,
}

impl LtGemm {
    /// Queues `C = A B^T` on `gpu`'s stream.
    ///
    /// # Safety
    /// `a`, `b` and `c` are device addresses of the planned shape's A (`m x k`), B (`n x k`)
    /// and C (`m x n`) BF16, row-major; `lt` is the handle that planned it.
    pub unsafe fn run(
        &self,
        lt_handle: &BlasLt,
        gpu: &Gpu,
        a: u64,
        b: u64,
        c: u64,
    ) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let algo = self.algo.as_ref().expect("a planned GEMM has an algorithm");
        let workspace = gpu.address(&self.workspace);
        // SAFETY: forwarded contract; the descriptors and workspace are this plan's.
        let status = unsafe {
            lt::cublasLtMatmul(
                lt_handle.handle,
                self.desc,
                (&alpha as *const f32).cast(),
                b as *const _,
                self.layouts[0],
                a as *const _,
                self.layouts[1],
                (&beta as *const f32).cast(),
                c as *const _,
                self.layouts[2],
                c as *mut _,
                self.layouts[2],
                algo,
                workspace as *mut _,
                WORKSPACE_BYTES,
                gpu.stream().cu_stream() as lt::cudaStream_t,
            )
        };
        check(status, "cublasLtMatmul")
    }
}

impl Drop for LtGemm {
    fn drop(&mut self) {
        if self.gpu_hung.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: each object was created by the plan (or is null) and is destroyed once.
        unsafe {
            for layout in self.layouts {
                if !layout.is_null() {
                    lt::cublasLtMatrixLayoutDestroy(layout);
                }
            }
            if !self.desc.is_null() {
                lt::cublasLtMatmulDescDestroy(self.desc);
            }
        }
    }
}
