//! Device-code tooling shared by the build tool (`cargo xtask`), host's build script and the
//! host program at run time (`host inspect`, the lowering tests):
//!
//! - [`build`]: [`CudaBuilder`] compiles a `no_std` device crate to one PTX file per [`Arch`]
//!   with rustc's own NVPTX backend and links it with the pinned toolchain's llvm-tools (the
//!   `llvm-bitcode-linker` that rustc would call cannot be downloaded for this toolchain).
//! - [`nvtools`]: finds NVIDIA's `ptxas` / `cuobjdump` and reads what they print (per-kernel
//!   registers, shared memory and spills; SASS per kernel).
//! - [`ptx_text`]: splits a PTX module into kernels and their instructions.
//! - [`carried`]: gpu-kernels' device modules kept in the repository, so that a crate on
//!   stable builds it without a nightly; [`toolchain::PinnedToolchain`] finds the pinned
//!   nightly through rustup when they must be rebuilt from source.

mod artifact;
pub mod build;
pub mod carried;
mod command;
mod diagnose;
pub mod digest;
pub mod fingerprint;
pub mod nvtools;
mod patch;
pub mod ptx_text;
mod stamp;
pub mod toolchain;

pub use build::{CudaBuilder, PtxArtifact};
pub use toolchain::PinnedToolchain;

use std::path::PathBuf;

/// Declares the architectures, one line each: the variant, the name `-C target-cpu`,
/// `ptxas -arch` and PTX's `.target` use, the compute capability its code needs, and why the
/// project builds for it. Everything else about an arch is derived from this table.
macro_rules! archs {
    ($($variant:ident = $name:literal, compute ($major:literal, $minor:literal), $portability:ident: $why:literal;)*) => {
        /// A GPU architecture the project emits PTX for (see [`Arch::ALL`]).
        ///
        /// `cp.async` and `mbarrier` need sm_80; `mbarrier.try_wait` and the copy engine need
        /// sm_90, so the device code picks its forms with `cfg(target_feature = "sm_90")` and
        /// each arch gets its own PTX. `wgmma` and `setmaxnreg` need sm_90a, an
        /// *arch-specific* target: its code runs on compute capability 9.0 only (not on later
        /// GPUs), so it is loaded beside the sm_90 module, never instead of it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Arch {
            $(#[doc = $why] $variant,)*
        }

        /// Every arch's facts, in [`Arch`] order.
        const SPECS: &[ArchSpec] = &[
            $(ArchSpec {
                arch: Arch::$variant,
                name: $name,
                compute: ($major, $minor),
                portability: Portability::$portability,
            },)*
        ];
    };
}

archs! {
    Sm80 = "sm_80", compute (8, 0), Portable: "Ampere and later: `cp.async`, `mbarrier` with `test_wait` loops.";
    Sm90 = "sm_90", compute (9, 0), Portable: "Hopper and later: `mbarrier.try_wait`, bulk and tensor copies (TMA).";
    Sm90a = "sm_90a", compute (9, 0), Specific: "Hopper only (compute capability 9.0): `wgmma`, `setmaxnreg`; loaded beside sm_90.";
}

/// Whether an arch's code runs on later GPUs too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Portability {
    /// PTX for it is forward compatible: the driver compiles it for any later GPU.
    Portable,
    /// Arch-specific (`sm_90a`): runs on exactly its compute capability.
    Specific,
}

/// One row of the arch table.
struct ArchSpec {
    arch: Arch,
    name: &'static str,
    /// The compute capability the arch's code needs.
    compute: (u32, u32),
    portability: Portability,
}

impl Arch {
    /// Every arch, oldest first.
    pub const ALL: [Arch; SPECS.len()] = {
        let mut all = [Arch::Sm80; SPECS.len()];
        let mut i = 0;
        while i < SPECS.len() {
            all[i] = SPECS[i].arch;
            i += 1;
        }
        all
    };

    fn spec(self) -> &'static ArchSpec {
        &SPECS[self as usize]
    }

    /// The name used by `-C target-cpu`, `ptxas -arch` and PTX's `.target`.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The major compute capability whose GPUs run machine code assembled for this arch
    /// (SASS is compatible within a major version, from the minor it was made for up).
    pub fn major_version(self) -> u32 {
        self.spec().compute.0
    }

    /// The compute capability this arch's code needs, as `(major, minor)`.
    pub fn compute_capability(self) -> (u32, u32) {
        self.spec().compute
    }

    /// Whether the arch's code runs on exactly its compute capability only (`sm_90a`), so
    /// that it is loaded beside a portable module ([`Arch::specific_for`]).
    pub fn is_arch_specific(self) -> bool {
        self.spec().portability == Portability::Specific
    }

    /// The portable arch whose module an arch-specific one is loaded beside (itself for a
    /// portable arch): sm_90 for sm_90a.
    pub fn portable(self) -> Arch {
        Arch::for_compute_capability(self.spec().compute.0, self.spec().compute.1)
            .expect("every arch's compute capability has a portable arch")
    }

    /// The PTX to load on a GPU of compute capability `major.minor`: the newest portable arch
    /// it meets. 8.x gets sm_80 PTX; 9.x gets sm_90 PTX; later GPUs also get sm_90 PTX, which
    /// the driver compiles for them (PTX is forward compatible). Below 8.0 there is no
    /// `cp.async`.
    pub fn for_compute_capability(major: u32, minor: u32) -> Option<Arch> {
        Arch::ALL
            .into_iter()
            .rev()
            .filter(|a| !a.is_arch_specific())
            .find(|a| a.compute_capability() <= (major, minor))
    }

    /// The arch-specific module to load beside the portable one on a GPU of compute
    /// capability `major.minor`: sm_90a on 9.0, none elsewhere.
    pub fn specific_for(major: u32, minor: u32) -> Option<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.is_arch_specific() && a.compute_capability() == (major, minor))
    }

    /// The portable archs, oldest first: those whose modules hold every kernel that is not
    /// arch-specific. Written out (a test checks it against the table's rows).
    pub const PORTABLE: [Arch; 2] = [Arch::Sm80, Arch::Sm90];

    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// This workspace's device code: the `workloads` crate (every workload's kernels, on the `gpu`
/// library), built into the workspace's `target/` (PTX at `target/ptx/<arch>/workloads.ptx`).
/// What host's build script and `cargo xtask build-ptx` both build.
pub fn workspace_device_code() -> CudaBuilder {
    let workspace = workspace_root();
    CudaBuilder::new(workspace.join("workloads"))
        .kernels_from("gpu-kernels")
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
        assert_eq!(Arch::specific_for(9, 0), Some(Arch::Sm90a));
        assert_eq!(Arch::specific_for(8, 0), None);
        assert_eq!(Arch::specific_for(10, 0), None);
        assert_eq!(Arch::Sm90a.portable(), Arch::Sm90);
        assert_eq!(Arch::Sm80.portable(), Arch::Sm80);
    }

    #[test]
    fn portable_lists_the_portable_rows() {
        let portable: Vec<Arch> = Arch::ALL
            .into_iter()
            .filter(|a| !a.is_arch_specific())
            .collect();
        assert_eq!(portable, Arch::PORTABLE);
    }

    #[test]
    fn the_table_is_in_variant_order_and_oldest_first() {
        for (i, arch) in Arch::ALL.into_iter().enumerate() {
            assert_eq!(arch as usize, i);
            assert!(arch.name().starts_with("sm_"));
        }
        assert!(
            Arch::ALL
                .windows(2)
                .all(|w| w[0].compute_capability() <= w[1].compute_capability())
        );
        assert_eq!(Arch::Sm90.compute_capability(), (9, 0));
        assert_eq!(Arch::Sm80.major_version(), 8);
    }

    #[test]
    fn names_round_trip() {
        for arch in Arch::ALL {
            assert_eq!(Arch::from_name(arch.name()), Some(arch));
        }
        assert_eq!(Arch::from_name("sm_75"), None);
    }
}
