//! Device-code tooling shared by the build tool (`cargo xtask`), host's build script and the
//! host program at run time (`host inspect`, the lowering tests):
//!
//! - [`build`]: [`CudaBuilder`] compiles a `no_std` device crate to one PTX file per [`Arch`]
//!   with rustc's own NVPTX backend and links it with the pinned toolchain's llvm-tools (the
//!   `llvm-bitcode-linker` that rustc would call cannot be downloaded for this toolchain).
//! - [`nvtools`]: finds NVIDIA's `ptxas` / `cuobjdump` and reads what they print (per-kernel
//!   registers, shared memory and spills; SASS per kernel).
//! - [`ptx_text`]: splits a PTX module into kernels and their instructions.

pub mod build;
pub mod fingerprint;
pub mod nvtools;
pub mod ptx_text;

pub use build::{CudaBuilder, PtxArtifact};

use std::path::PathBuf;

/// A GPU architecture the project emits PTX for.
///
/// `cp.async` and `mbarrier` need sm_80; `mbarrier.try_wait` needs sm_90, so the device code
/// picks its wait loop with `cfg(target_feature = "sm_90")` and each arch gets its own PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    Sm80,
    Sm90,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::Sm80, Arch::Sm90];

    /// The name used by `-C target-cpu`, `ptxas -arch` and PTX's `.target`.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Sm80 => "sm_80",
            Arch::Sm90 => "sm_90",
        }
    }

    /// The major compute capability whose GPUs run machine code assembled for this arch
    /// (SASS is compatible within a major version, from the minor it was made for up).
    pub fn major_version(self) -> u32 {
        match self {
            Arch::Sm80 => 8,
            Arch::Sm90 => 9,
        }
    }

    /// The PTX to load on a GPU of compute capability `major.minor`.
    ///
    /// 8.x gets sm_80 PTX; 9.x gets sm_90 PTX; later GPUs also get sm_90 PTX, which the driver
    /// compiles for them (PTX is forward compatible). Below 8.0 there is no `cp.async`.
    pub fn for_compute_capability(major: u32, _minor: u32) -> Option<Arch> {
        match major {
            0..=7 => None,
            8 => Some(Arch::Sm80),
            _ => Some(Arch::Sm90),
        }
    }

    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// This workspace's device code: the `gpu` crate with its workloads (feature `workloads`),
/// built into the workspace's `target/` (PTX at `target/ptx/<arch>/gpu.ptx`). What host's
/// build script and `cargo xtask build-ptx` both build.
pub fn workspace_device_code() -> CudaBuilder {
    let workspace = workspace_root();
    CudaBuilder::new(workspace.join("gpu"))
        .features(["workloads"])
        .target_dir(workspace.join("target"))
}

/// The workspace root this crate was compiled in.
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_capability_selects_arch() {
        assert_eq!(Arch::for_compute_capability(7, 5), None);
        assert_eq!(Arch::for_compute_capability(6, 0), None);
        assert_eq!(Arch::for_compute_capability(8, 0), Some(Arch::Sm80));
        assert_eq!(Arch::for_compute_capability(8, 6), Some(Arch::Sm80));
        assert_eq!(Arch::for_compute_capability(8, 9), Some(Arch::Sm80));
        assert_eq!(Arch::for_compute_capability(9, 0), Some(Arch::Sm90));
        assert_eq!(Arch::for_compute_capability(10, 0), Some(Arch::Sm90));
        assert_eq!(Arch::for_compute_capability(12, 0), Some(Arch::Sm90));
    }

    #[test]
    fn names_round_trip() {
        for arch in Arch::ALL {
            assert_eq!(Arch::from_name(arch.name()), Some(arch));
        }
        assert_eq!(Arch::from_name("sm_75"), None);
    }
}
