//! The GPU: finding it, checking it can run the kernels, loading the matching PTX, launching.

use cust::CudaFlags;
use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::Function;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use xtask::Arch;

/// Why the GPU could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// No driver answered, or it sees no GPU.
    #[error(
        "no usable CUDA GPU ({0}): this needs an NVIDIA GPU of compute capability 8.0 or newer \
         and its driver"
    )]
    Unavailable(CudaError),
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
    /// A driver call failed.
    #[error("{what}: {source}")]
    Cuda {
        what: String,
        #[source]
        source: CudaError,
    },
}

/// Attaches what was being done to a driver error.
pub trait CudaContext<T> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, DeviceError>;
}

impl<T> CudaContext<T> for Result<T, CudaError> {
    fn during(self, what: impl FnOnce() -> String) -> Result<T, DeviceError> {
        self.map_err(|source| DeviceError::Cuda {
            what: what(),
            source,
        })
    }
}

/// The PTX arch for a GPU, or why it cannot run the kernels. `requested` forces an older
/// arch's PTX (sm_80 PTX runs on an sm_90 GPU, so both code paths can be tested on one).
pub fn select_arch(
    name: &str,
    major: u32,
    minor: u32,
    requested: Option<Arch>,
) -> Result<Arch, DeviceError> {
    let native =
        Arch::for_compute_capability(major, minor).ok_or_else(|| DeviceError::Unsupported {
            name: name.to_string(),
            major,
            minor,
        })?;
    match requested {
        Some(arch) if arch > native => Err(DeviceError::ArchTooNew {
            name: name.to_string(),
            major,
            minor,
            arch,
        }),
        Some(arch) => Ok(arch),
        None => Ok(native),
    }
}

/// What the host knows about the GPU it runs on.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GpuInfo {
    pub name: String,
    pub compute_capability: (u32, u32),
    /// The PTX arch loaded for it.
    pub arch: String,
    pub multiprocessors: u32,
    pub clock_mhz: u32,
    pub memory_gib: f64,
    pub driver_version: String,
}

/// An open GPU: a context, the module with every kernel, and one stream.
pub struct Gpu {
    info: GpuInfo,
    // Field order is drop order: the stream and module before their context.
    stream: Stream,
    module: Module,
    _context: Context,
}

impl Gpu {
    /// Opens GPU 0 and loads the PTX built for its arch.
    pub fn open() -> Result<Gpu, DeviceError> {
        Gpu::open_with(None)
    }

    /// Opens GPU 0 and loads the PTX for `arch` (its own arch when `None`).
    pub fn open_with(arch: Option<Arch>) -> Result<Gpu, DeviceError> {
        cust::init(CudaFlags::empty()).map_err(DeviceError::Unavailable)?;
        let count = Device::num_devices().map_err(DeviceError::Unavailable)?;
        if count == 0 {
            return Err(DeviceError::Unavailable(CudaError::NoDevice));
        }
        let device = Device::get_device(0).map_err(DeviceError::Unavailable)?;
        let name = device.name().during(|| "reading the GPU's name".into())?;
        let attribute = |attr: DeviceAttribute| {
            device
                .get_attribute(attr)
                .map(|v| v.max(0) as u32)
                .during(|| format!("reading {attr:?}"))
        };
        let major = attribute(DeviceAttribute::ComputeCapabilityMajor)?;
        let minor = attribute(DeviceAttribute::ComputeCapabilityMinor)?;
        let arch = select_arch(&name, major, minor, arch)?;
        let multiprocessors = attribute(DeviceAttribute::MultiprocessorCount)?;
        let clock_mhz = attribute(DeviceAttribute::ClockRate)? / 1000;
        let memory = device
            .total_memory()
            .during(|| "reading the GPU's memory size".into())?;
        let driver = cust::CudaApiVersion::get().during(|| "reading the driver version".into())?;

        let context = Context::new(device).during(|| format!("creating a context on {name}"))?;
        let module = Module::from_ptx(crate::ptx::module_text(arch), &[])
            .during(|| format!("loading the {arch} PTX on {name}"))?;
        let stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).during(|| "creating a stream".into())?;
        Ok(Gpu {
            info: GpuInfo {
                name,
                compute_capability: (major, minor),
                arch: arch.name().to_string(),
                multiprocessors,
                clock_mhz,
                memory_gib: memory as f64 / (1u64 << 30) as f64,
                driver_version: format!("{}.{}", driver.major(), driver.minor()),
            },
            stream,
            module,
            _context: context,
        })
    }

    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// A kernel of the loaded module.
    pub fn function(&self, name: &str) -> Result<Function<'_>, DeviceError> {
        self.module
            .get_function(name)
            .during(|| format!("finding kernel `{name}` in the PTX"))
    }

    /// Waits for the stream; a failed kernel surfaces here.
    pub fn synchronize(&self, what: impl FnOnce() -> String) -> Result<(), DeviceError> {
        self.stream.synchronize().during(what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_follows_compute_capability() {
        assert_eq!(select_arch("A100", 8, 0, None).unwrap(), Arch::Sm80);
        assert_eq!(select_arch("RTX 4090", 8, 9, None).unwrap(), Arch::Sm80);
        assert_eq!(select_arch("H200", 9, 0, None).unwrap(), Arch::Sm90);
    }

    #[test]
    fn older_ptx_can_be_forced_newer_cannot() {
        assert_eq!(
            select_arch("H200", 9, 0, Some(Arch::Sm80)).unwrap(),
            Arch::Sm80
        );
        let err = select_arch("A100", 8, 0, Some(Arch::Sm90))
            .unwrap_err()
            .to_string();
        assert!(err.contains("sm_90 PTX does not run on A100"), "{err}");
    }

    #[test]
    fn old_gpus_are_refused_with_a_reason() {
        let err = select_arch("Tesla T4", 7, 5, None).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("Tesla T4"), "{text}");
        assert!(text.contains("7.5"), "{text}");
        assert!(text.contains("sm_80"), "{text}");
        assert!(!text.contains('\n'));
    }

    #[test]
    fn missing_gpu_message_is_one_line() {
        let text = DeviceError::Unavailable(CudaError::NoDevice).to_string();
        assert!(text.starts_with("no usable CUDA GPU"), "{text}");
        assert!(text.contains("8.0"), "{text}");
        assert!(!text.contains('\n'));
    }

    #[test]
    fn driver_errors_say_what_failed() {
        let result: Result<(), CudaError> = Err(CudaError::LaunchFailed);
        let text = result
            .during(|| "launching `k`".into())
            .unwrap_err()
            .to_string();
        assert!(text.starts_with("launching `k`: "), "{text}");
    }
}
