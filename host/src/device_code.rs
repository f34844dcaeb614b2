//! The device code (the `workloads` crate on the `gpu` library), built by `build.rs` and embedded: one
//! PTX module per [`Arch`], and the same module assembled for that arch where ptxas was found
//! at build time.

use gpu_runtime::{Gpu, GpuError};
use ptx_builder::Arch;

// `MODULES`: one `gpu_runtime::Module` per arch of `Arch::ALL` (written by build.rs).
include!(concat!(env!("OUT_DIR"), "/modules.rs"));

/// The embedded PTX module for `arch`.
pub fn module_text(arch: Arch) -> &'static str {
    MODULES
        .iter()
        .find(|m| m.arch == arch)
        .map(|m| m.ptx)
        .expect("build.rs embeds a module for every arch")
}

/// Opens GPU 0 with the host's modules: its own arch's, or `arch`'s (an older arch's PTX runs
/// on a newer GPU, so both code paths can be tested on one).
pub fn open_gpu(arch: Option<Arch>) -> Result<Gpu, GpuError> {
    Gpu::open_with(MODULES, arch)
}
