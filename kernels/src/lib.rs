//! Ready-made kernels on the `gpu` library, and a typed host API to call them from your own
//! crate: the library's kernels as a user gets them, apart from the harness that measures them
//! (`workloads` carries the same kernels into its module and times them beside cuBLAS).
//!
//! | module | kernels | host API |
//! |---|---|---|
//! | [`gemm16`] | BF16 / FP16 GEMM on Hopper's tensor cores (TMA + `wgmma`, warp-specialized, persistent; cooperative or ping-pong by shape; sm_90a) | [`gemm16::Gemm16`] |
//! | [`gemm32`] | FP32 GEMM on CUDA cores (`cp.async` pipelines; split K over clusters and warps on sm_90), any size, sm_80 and later | [`gemm32::Gemm32`] |
//! | [`attention`] | fused attention forward, BF16 / FP16, d 64 / 128 / 256, causal, GQA (TMA + `wgmma`, ping-pong consumers; sm_90a) | [`attention::Attention`] |
//!
//! The host build embeds the crate's own device code (`build.rs`: PTX for sm_80, sm_90 and
//! sm_90a, and the cubins where ptxas was found): [`MODULES`], which [`gpu_runtime::Gpu::load_library`] loads beside the
//! program's own modules, in the same context and stream.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use gpu_kernels::gemm16::{BLayout, Gemm16, GemmShape};
//! use half::bf16;
//! let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
//! let gemm = Gemm16::load(&gpu)?;
//! let (m, n, k) = (1000, 1000, 512);
//! let a = gpu.zeros::<bf16>(m * k, "A")?;
//! let b = gpu.zeros::<bf16>(n * k, "B")?;
//! let mut c = gpu.zeros::<bf16>(m * n, "C")?;
//! let shape = GemmShape { m: m as u32, n: n as u32, k: k as u32 };
//! gemm.gemm(&gpu, &a, &b, BLayout::NK, &mut c, shape)?;
//! gpu.synchronize(|| "the GEMM".into())?;
//! # Ok(())
//! # }
//! ```

#![cfg_attr(target_arch = "nvptx64", no_std)]
// Kernels are `extern "ptx-kernel"`; tensor-map parameters are read by `asm!`.
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]
// The device modules exist only in the nvptx64 build, so a host `cargo doc` cannot resolve
// links to them.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]

pub mod attention;
pub mod gemm16;
// The sm_90a module holds only what needs sm_90a (the tensor-core kernels): the GPU loads it
// beside the sm_90 module, which holds the FP32 GEMM, so that is not built twice.
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub mod gemm32;

#[cfg(not(target_arch = "nvptx64"))]
mod element;
#[cfg(not(target_arch = "nvptx64"))]
mod error;
#[cfg(not(target_arch = "nvptx64"))]
mod gemm_call;
#[cfg(not(target_arch = "nvptx64"))]
mod scratch;
#[cfg(not(target_arch = "nvptx64"))]
pub use element::Element16;
#[cfg(not(target_arch = "nvptx64"))]
pub use error::KernelError;
#[cfg(not(target_arch = "nvptx64"))]
pub use gemm_call::{GemmError, GemmShape};
pub use gemm16::ElementType;

/// Four floats moved as one 16-byte access (`ld.global.v4.f32` / `st.global.v4.f32`): how the
/// FP32 kernels (this crate's and the workloads') read and write global memory a `float4` at a
/// time.
#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90a")))]
#[derive(Clone, Copy)]
#[repr(C, align(16))]
#[doc(hidden)]
pub struct Quad(pub [f32; 4]);

/// This crate's device code, one module per arch it is built for, as
/// [`gpu_runtime::Gpu::load_library`] and [`gpu_runtime::Gpu::open`] take it.
#[cfg(not(target_arch = "nvptx64"))]
pub const MODULES: &[gpu_runtime::Module] =
    include!(concat!(env!("OUT_DIR"), "/gpu_kernels_modules.rs"));

/// Refuses a GPU that cannot run this crate's tensor-core kernels `what` (sm_90a: `wgmma`,
/// `setmaxnreg`, compute capability 9.0 exactly).
#[cfg(not(target_arch = "nvptx64"))]
fn check_sm90a(gpu: &gpu_runtime::Gpu, what: &'static str) -> Result<(), KernelError> {
    let info = gpu.info();
    if info.compute_capability == (9, 0) {
        return Ok(());
    }
    Err(KernelError::UnsupportedGpu {
        what,
        gpu: info.name.clone(),
        compute_capability: info.compute_capability,
        needs: (9, 0),
        why: "wgmma and setmaxnreg, sm_90a",
    })
}
