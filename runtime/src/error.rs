//! What went wrong: [`GpuError`] says why the GPU could not be used or what a driver call was
//! doing when it failed, in one line.

use cudarc::driver::DriverError;
use ptx_builder::Arch;
use std::time::Duration;

/// Why the GPU could not be used, or what a driver call was doing when it failed.
///
/// ```
/// use gpu_runtime::{Arch, GpuError};
/// let missing = GpuError::NotBuilt { arch: Arch::Sm90, built: vec![Arch::Sm80] };
/// assert_eq!(missing.to_string(), "this program carries no sm_90 module (built for: sm_80)");
/// let refused = GpuError::Refused { what: "launching `k`".into(), why: "no clusters".into() };
/// assert_eq!(refused.to_string(), "launching `k`: no clusters");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The driver library is not installed.
    #[error(
        "no CUDA driver: libcuda.so could not be loaded; this needs an NVIDIA GPU of compute \
         capability 8.0 or newer and its driver"
    )]
    NoDriver,
    /// The driver answered, but gives no usable GPU.
    #[error(
        "no usable CUDA GPU ({0}): this needs an NVIDIA GPU of compute capability 8.0 or newer \
         and its driver"
    )]
    Unavailable(String),
    /// The GPU predates `cp.async`.
    #[error(
        "{name} has compute capability {major}.{minor}; cp.async and mbarrier need 8.0 (sm_80, \
         Ampere) or newer"
    )]
    Unsupported {
        name: String,
        major: u32,
        minor: u32,
    },
    /// The PTX asked for needs a newer GPU.
    #[error("{arch} PTX does not run on {name} (compute capability {major}.{minor})")]
    ArchTooNew {
        name: String,
        major: u32,
        minor: u32,
        arch: Arch,
    },
    /// The program carries no module for the arch the GPU (or the caller) asked for.
    #[error("this program carries no {arch} module (built for: {})", names(.built))]
    NotBuilt { arch: Arch, built: Vec<Arch> },
    /// A launch refused before the driver saw it: a geometry the kernel or the GPU cannot
    /// run (a grid that is not a multiple of its cluster shape, a cluster that cannot be
    /// resident).
    #[error("{what}: {why}")]
    Refused { what: String, why: String },
    /// A driver call failed.
    #[error("{what}: {}", describe(.source))]
    Cuda { what: String, source: DriverError },
    /// Work queued on the GPU did not finish within the watchdog's limit (see
    /// [`Gpu::time_limit_for`](crate::Gpu::time_limit_for)). The kernel may still be running: the context cannot be used
    /// again, and the program should end.
    #[error(
        "{what}: the GPU did not finish within {} (watchdog; --timeout sets it); the last \
         launch was {last}; a kernel that waits forever (an mbarrier phase that never \
         completes, a missing arrival) looks like this; the GPU context is unusable now",
        humantime::format_duration(*.limit)
    )]
    Hung {
        what: String,
        limit: Duration,
        last: String,
    },
}

/// `CUDA_ERROR_NAME (the driver's description)`.
pub fn describe(error: &DriverError) -> String {
    let name = error
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", error.0));
    match error.error_string() {
        Ok(text) => format!("{name} ({})", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// Attaches what was being done to a driver error.
///
/// ```
/// use gpu_runtime::cudarc::driver::{DriverError, sys::CUresult};
/// use gpu_runtime::{Context, GpuError};
/// let failed: Result<(), DriverError> = Err(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
/// let error = failed.during(|| "allocating the workspace".into()).unwrap_err();
/// assert!(matches!(error, GpuError::Cuda { what, .. } if what == "allocating the workspace"));
/// ```
pub trait Context<T> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, GpuError>;
}

impl<T> Context<T> for Result<T, DriverError> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Cuda {
            what: what(),
            source,
        })
    }
}

fn names(archs: &[Arch]) -> String {
    let names: Vec<&str> = archs.iter().map(|a| a.name()).collect();
    if names.is_empty() {
        "nothing".into()
    } else {
        names.join(", ")
    }
}
