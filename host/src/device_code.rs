//! The device code (the `gpu` crate), built by `build.rs` and embedded: one PTX module per
//! [`Arch`].

use ptx_builder::Arch;

/// PTX for sm_80 (compute capability 8.x), PTX ISA 8.0.
pub const SM_80: &str = include_str!(env!("GPU_PTX_SM_80"));
/// PTX for sm_90 (compute capability 9.0 and later), PTX ISA 8.0.
pub const SM_90: &str = include_str!(env!("GPU_PTX_SM_90"));

/// The embedded PTX module for `arch`.
pub fn module_text(arch: Arch) -> &'static str {
    match arch {
        Arch::Sm80 => SM_80,
        Arch::Sm90 => SM_90,
    }
}
