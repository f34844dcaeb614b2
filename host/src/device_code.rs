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

/// What the binary carries, as `host info` says it: each arch's PTX, and its cubin where the
/// build had ptxas (`sm_80 PTX + cubin, sm_90 PTX + cubin`).
pub fn carried() -> String {
    describe_modules(MODULES)
}

fn describe_modules(modules: &[gpu_runtime::Module]) -> String {
    let each: Vec<String> = modules
        .iter()
        .map(|m| match m.cubin {
            Some(_) => format!("{} PTX + cubin", m.arch),
            None => format!("{} PTX (no cubin: built without ptxas)", m.arch),
        })
        .collect();
    each.join(", ")
}

/// Opens GPU 0 with the host's modules: its own arch's, or `arch`'s (an older arch's PTX runs
/// on a newer GPU, so both code paths can be tested on one).
pub fn open_gpu(arch: Option<Arch>) -> Result<Gpu, GpuError> {
    Gpu::open_with(MODULES, arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arch_is_carried_and_a_missing_cubin_is_named() {
        assert_eq!(MODULES.len(), Arch::ALL.len());
        let carried = carried();
        for arch in Arch::ALL {
            assert!(carried.contains(&format!("{arch} PTX")), "{carried}");
        }
        let modules = [
            gpu_runtime::Module {
                arch: Arch::Sm80,
                ptx: "",
                cubin: Some(&[1]),
            },
            gpu_runtime::Module {
                arch: Arch::Sm90,
                ptx: "",
                cubin: None,
            },
        ];
        assert_eq!(
            describe_modules(&modules),
            "sm_80 PTX + cubin, sm_90 PTX (no cubin: built without ptxas)"
        );
    }
}
