//! What a device build produces: one [`PtxArtifact`] per arch.

use crate::Arch;
use std::path::PathBuf;

/// One PTX module produced by [`CudaBuilder::build`].
#[derive(Clone, Debug)]
pub struct PtxArtifact {
    pub arch: Arch,
    pub path: PathBuf,
    /// Kernel entry points, sorted.
    pub kernels: Vec<String>,
    /// Compiler warnings about the device code (first line and location of each), and one
    /// for each kernel that can panic (a check the optimizer could not prove away, which
    /// traps at run time).
    pub warnings: Vec<String>,
    /// Kernels with an explicit `trap` in their own body (`gpu::ptx::trap()`: the code's own
    /// checks, such as the library's on a pipeline's use): listed, not warned about.
    pub explicit_traps: Vec<String>,
    /// The folders of the local packages the device build compiled: the device crate and
    /// its path dependencies (what a build script must watch).
    pub local_packages: Vec<PathBuf>,
    /// Whether the module is the one an earlier build left, its inputs unchanged
    /// ([`CudaBuilder::reuse_unchanged`]).
    pub reused: bool,
}
