//! The host side of the `gpu` library: what a program needs to run kernels built with
//! `ptx_builder::CudaBuilder` on a real GPU, with the CUDA driver and cuBLAS loaded at run time
//! (through `cudarc`'s dynamic loading), so the program builds and runs its GPU-less commands
//! on a machine without an NVIDIA driver.
//!
//! | module | what it holds |
//! |---|---|
//! | [`device`] | [`Gpu`]: the context, the cubin-or-PTX module choice ([`Module`]), device memory, the watchdog on every wait, event timing |
//! | [`args`] | what a launch passes, by value: [`LaunchConfig`], [`KernelArg`]; the record the watchdog reports |
//! | [`launch`] | typed launches: [`Kernel`] resolved once ([`Gpu::kernel`]), [`Params`] tuples of device parameter types deciding what the host passes; thread block clusters (`cuLaunchKernelEx`) |
//! | [`tensor_map`] | [`TensorMapBuilder`](tensor_map::TensorMapBuilder): `cuTensorMapEncodeTiled` with every documented rule checked first |
//! | [`monitor`] | [`GpuMonitor`]: the SM clock, the clock event reasons and the energy counter, read through NVML beside a timing ([`Gpu::enable_monitor`]) |
//! | [`blas`] | [`Blas`](blas::Blas): a cuBLAS handle on the GPU's stream |
//! | [`error`] | [`GpuError`]: one line on what failed and what was being done |
//!
//! ```no_run
//! use gpu_runtime::{Gpu, LaunchConfig, Module};
//! # fn main() -> Result<(), gpu_runtime::GpuError> {
//! const MODULES: &[Module] = &[Module {
//!     arch: ptx_builder::Arch::Sm80,
//!     ptx: "...", // include_str! of the PTX that CudaBuilder wrote
//!     cubin: None,
//! }];
//! let gpu = Gpu::open(MODULES)?;
//! let scale = gpu.kernel::<(*const f32, *mut f32, u32, f32)>("scale")?;
//! let x = gpu.upload(&[1.0f32; 1024], "x")?;
//! let mut y = gpu.zeros::<f32>(1024, "y")?;
//! // SAFETY: scale(x, y, n, alpha) reads n floats of x and writes n of y.
//! unsafe { scale.launch(&gpu, LaunchConfig::linear(4, 256, 0), (&x, &mut y, 1024, 2.0))? };
//! gpu.synchronize(|| "running `scale`".into())?;
//! # Ok(())
//! # }
//! ```

pub mod args;
pub mod blas;
pub mod blaslt;
pub mod buffer;
pub mod device;
pub mod error;
pub mod launch;
pub mod library;
pub mod monitor;
pub mod shared_library;
pub mod tensor_map;

pub use args::{KernelArg, LaunchConfig, NO_CLUSTER, StructArg};
pub use buffer::{Address, DeviceBuffer, DeviceBufferMut, Guards, StoredAs};
/// The `cudarc` this crate is built on (buffers are its `CudaSlice`s).
pub use cudarc;
pub use device::{
    DEFAULT_TIME_LIMIT, DeviceCode, Gpu, GpuInfo, Module, TimeLimit, Timer, Word, check_fits,
};
pub use error::{Context, GpuError, describe};
pub use gpu::kernel::EntryPoint;
pub use launch::{Kernel, MAX_CLUSTER_BLOCKS, PORTABLE_CLUSTER_BLOCKS, Param, Params};
pub use library::Library;
pub use monitor::{GpuMonitor, Limits, Watch};
pub use ptx_builder::Arch;
