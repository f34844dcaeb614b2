//! The device code (the `gpu` crate), built by `build.rs` and embedded: one PTX module per
//! [`Arch`], and the same module assembled for that arch where ptxas was found at build time.

use ptx_builder::Arch;

/// PTX for sm_80 (compute capability 8.x), PTX ISA 8.0.
pub const SM_80: &str = include_str!(env!("GPU_PTX_SM_80"));
/// PTX for sm_90 (compute capability 9.0 and later), PTX ISA 8.0.
pub const SM_90: &str = include_str!(env!("GPU_PTX_SM_90"));
/// [`SM_80`] assembled by ptxas for sm_80; empty when the build had no ptxas.
const SM_80_CUBIN: &[u8] = include_bytes!(env!("GPU_CUBIN_SM_80"));
/// [`SM_90`] assembled by ptxas for sm_90; empty when the build had no ptxas.
const SM_90_CUBIN: &[u8] = include_bytes!(env!("GPU_CUBIN_SM_90"));

/// The embedded PTX module for `arch`.
pub fn module_text(arch: Arch) -> &'static str {
    match arch {
        Arch::Sm80 => SM_80,
        Arch::Sm90 => SM_90,
    }
}

/// The embedded machine code of [`module_text`]`(arch)` for exactly that arch (a GPU of a
/// later arch cannot load it), if the build assembled it.
pub fn module_cubin(arch: Arch) -> Option<&'static [u8]> {
    let cubin = match arch {
        Arch::Sm80 => SM_80_CUBIN,
        Arch::Sm90 => SM_90_CUBIN,
    };
    (!cubin.is_empty()).then_some(cubin)
}
