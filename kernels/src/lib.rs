//! Ready-made kernels on the `gpu` library, and a typed host API to call them from your own
//! crate: the library's kernels as a user gets them, apart from the harness that measures them
//! (`workloads` carries the same kernels into its module and times them beside cuBLAS).
//!
//! | module | kernels | host API |
//! |---|---|---|
//! | [`gemm16`] | BF16 / FP16 GEMM on Hopper's tensor cores (TMA + `wgmma`, warp-specialized, persistent; sm_90a) | [`gemm16::Gemm16`] |
//!
//! The host build embeds the crate's own device code (`build.rs`: PTX, and the cubin where
//! ptxas was found): [`MODULES`], which [`gpu_runtime::Gpu::load_library`] loads beside the
//! program's own modules, in the same context and stream.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use gpu_kernels::gemm16::{BLayout, Gemm16, GemmShape};
//! let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
//! let gemm = Gemm16::load(&gpu)?;
//! let (m, n, k) = (1000, 1000, 512);
//! let a = gpu.zeros::<u16>(m * k, "A")?;
//! let b = gpu.zeros::<u16>(n * k, "B")?;
//! let mut c = gpu.zeros::<u16>(m * n, "C")?;
//! let shape = GemmShape { m: m as u32, n: n as u32, k: k as u32 };
//! gemm.bf16(&gpu, &a, &b, BLayout::NK, &mut c, shape)?;
//! gpu.synchronize(|| "the GEMM".into())?;
//! # Ok(())
//! # }
//! ```

#![cfg_attr(target_arch = "nvptx64", no_std)]
// Kernels (`extern "ptx-kernel"`, their tensor-map parameters read by `asm!`) exist in the
// sm_90a device build only.
#![cfg_attr(
    all(target_arch = "nvptx64", target_feature = "sm_90a"),
    feature(abi_ptx, asm_experimental_arch)
)]
// The device modules exist only in the nvptx64 build, so a host `cargo doc` cannot resolve
// links to them.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]

pub mod attention;
pub mod gemm16;

/// This crate's device code, one module per arch it is built for (sm_90a), as
/// [`gpu_runtime::Gpu::load_library`] and [`gpu_runtime::Gpu::open`] take it.
#[cfg(not(target_arch = "nvptx64"))]
pub const MODULES: &[gpu_runtime::Module] =
    include!(concat!(env!("OUT_DIR"), "/gpu_kernels_modules.rs"));

/// Why `gpu` cannot run this crate's kernels (all sm_90a: `wgmma`, `setmaxnreg`), if it cannot:
/// one line naming `what` and the GPU's compute capability.
#[cfg(not(target_arch = "nvptx64"))]
fn sm90a_missing(gpu: &gpu_runtime::Gpu, what: &str) -> Option<String> {
    let info = gpu.info();
    (info.compute_capability != (9, 0)).then(|| {
        format!(
            "compute capability 9.0 is needed for {what} (wgmma, sm_90a); {} has {}.{}",
            info.name, info.compute_capability.0, info.compute_capability.1
        )
    })
}
