//! The device code (the `gpu` crate with its workloads), built by `build.rs` and embedded: one
//! PTX module per [`Arch`], and the same module assembled for that arch where ptxas was found
//! at build time.

use gpu_runtime::{Gpu, GpuError, Module};
use ptx_builder::Arch;

/// PTX for sm_80 (compute capability 8.x), PTX ISA 8.0.
pub const SM_80: &str = include_str!(env!("GPU_PTX_SM_80"));
/// PTX for sm_90 (compute capability 9.0 and later), PTX ISA 8.0.
pub const SM_90: &str = include_str!(env!("GPU_PTX_SM_90"));
/// [`SM_80`] assembled by ptxas for sm_80; empty when the build had no ptxas.
const SM_80_CUBIN: &[u8] = include_bytes!(env!("GPU_CUBIN_SM_80"));
/// [`SM_90`] assembled by ptxas for sm_90; empty when the build had no ptxas.
const SM_90_CUBIN: &[u8] = include_bytes!(env!("GPU_CUBIN_SM_90"));

/// Every module the host carries, for [`Gpu::open`].
pub const MODULES: &[Module] = &[
    Module {
        arch: Arch::Sm80,
        ptx: SM_80,
        cubin: non_empty(SM_80_CUBIN),
    },
    Module {
        arch: Arch::Sm90,
        ptx: SM_90,
        cubin: non_empty(SM_90_CUBIN),
    },
];

const fn non_empty(cubin: &'static [u8]) -> Option<&'static [u8]> {
    if cubin.is_empty() { None } else { Some(cubin) }
}

/// The embedded PTX module for `arch`.
pub fn module_text(arch: Arch) -> &'static str {
    match arch {
        Arch::Sm80 => SM_80,
        Arch::Sm90 => SM_90,
    }
}

/// Opens GPU 0 with the host's modules: its own arch's, or `arch`'s (an older arch's PTX runs
/// on a newer GPU, so both code paths can be tested on one).
pub fn open_gpu(arch: Option<Arch>) -> Result<Gpu, GpuError> {
    Gpu::open_with(MODULES, arch)
}
