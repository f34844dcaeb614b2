//! Typed kernel launches: a kernel's device parameter types ([`Params`], a tuple such as
//! `(*const f32, *mut f32, u32)`) decide what the host passes ([`Params::Args`]: `&CudaSlice<f32>`,
//! `&mut CudaSlice<f32>`, `u32`), so a launch with the wrong count or type of arguments does
//! not compile. [`Gpu::kernel`] resolves a kernel once; [`Kernel::launch`] is the one path every
//! launch takes.

use crate::args::{ArgList, KernelArg, LaunchConfig};
use crate::device::Gpu;
use crate::error::{Context as _, GpuError};
use crate::tensor_map::TensorMap;
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{
    CudaFunction, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig as CudaLaunchConfig, PushKernelArg,
};
use gpu::kernel::EntryPoint;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};

/// A kernel parameter type as the device code declares it, and what the host passes for it.
pub trait Param {
    /// What the host passes.
    type Arg<'a>;
    /// The argument as it goes to the driver.
    fn kernel_arg(arg: &Self::Arg<'_>, gpu: &Gpu) -> KernelArg;
}

/// What a kernel's pointer parameter may point to, and the element of the host buffer that
/// holds it.
///
/// # Safety
/// A buffer of `Stored` elements must be laid out as the device type expects to find it.
pub unsafe trait DeviceElement {
    /// The host buffer's element.
    type Stored: DeviceRepr + 'static;
}

macro_rules! stored_as_itself {
    ($($t:ty),*) => {$(
        // SAFETY: the same type on both sides.
        unsafe impl DeviceElement for $t {
            type Stored = $t;
        }
    )*};
}

stored_as_itself!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

// SAFETY: a `Bf16` is its 16 bits (`repr(transparent)` over `u16`).
unsafe impl DeviceElement for gpu::wgmma::Bf16 {
    type Stored = u16;
}

// SAFETY: a `TileQueueState` is `TileQueueState::WORDS` consecutive `u32`s.
unsafe impl DeviceElement for gpu::schedule::TileQueueState {
    type Stored = u32;
}

impl<T: DeviceElement> Param for *const T {
    type Arg<'a> = &'a CudaSlice<T::Stored>;
    fn kernel_arg(arg: &Self::Arg<'_>, gpu: &Gpu) -> KernelArg {
        KernelArg::Ptr(arg.device_ptr(gpu.stream()).0)
    }
}

impl<T: DeviceElement> Param for *mut T {
    type Arg<'a> = &'a mut CudaSlice<T::Stored>;
    fn kernel_arg(arg: &Self::Arg<'_>, gpu: &Gpu) -> KernelArg {
        KernelArg::Ptr(arg.device_ptr(gpu.stream()).0)
    }
}

impl Param for u32 {
    type Arg<'a> = u32;
    fn kernel_arg(arg: &u32, _: &Gpu) -> KernelArg {
        KernelArg::U32(*arg)
    }
}

macro_rules! value_params {
    ($($t:ty => $variant:ident),*) => {$(
        impl Param for $t {
            type Arg<'a> = $t;
            fn kernel_arg(arg: &$t, _: &Gpu) -> KernelArg {
                KernelArg::$variant(*arg)
            }
        }
    )*};
}

value_params!(u64 => U64, f32 => F32, f64 => F64);

/// A tensor map parameter (`gpu::tensor_map::TensorMap` on the device, `__grid_constant__
/// const CUtensorMap` in CUDA C++): the host passes an encoded [`TensorMap`].
impl Param for gpu::tensor_map::TensorMap {
    type Arg<'a> = &'a TensorMap;
    fn kernel_arg(arg: &&TensorMap, _: &Gpu) -> KernelArg {
        KernelArg::TensorMap(**arg)
    }
}

/// A kernel's parameter list: a tuple of [`Param`]s, up to [`MAX_PARAMS`].
pub trait Params {
    /// What the host passes: the tuple of each parameter's [`Param::Arg`].
    type Args<'a>;
    /// The arguments as they go to the driver.
    fn kernel_args(args: &Self::Args<'_>, gpu: &Gpu) -> ArgList;
}

macro_rules! params_for_tuples {
    ($(($($p:ident $i:tt),*))*) => {$(
        impl<$($p: Param),*> Params for ($($p,)*) {
            type Args<'a> = ($($p::Arg<'a>,)*);
            #[allow(unused_mut, unused_variables)]
            fn kernel_args(args: &Self::Args<'_>, gpu: &Gpu) -> ArgList {
                let mut list = ArgList::new();
                $(list.push($p::kernel_arg(&args.$i, gpu));)*
                list
            }
        }
    )*};
}

params_for_tuples! {
    ()
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

/// The default dynamic shared-memory limit of a kernel; more needs an opt-in per kernel.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

impl Gpu {
    /// The kernel `entry` declares, resolved once in the loaded module.
    pub fn entry_point<P: Params>(&self, entry: EntryPoint<P>) -> Result<Kernel<P>, GpuError> {
        self.kernel(entry.name())
    }

    /// The kernel `name` of the loaded modules (the arch-specific one if its PTX declares
    /// `name`, else the portable one), resolved once, with the parameter types `P`
    /// (see [`Kernel::launch`] for what `P` must match; [`Gpu::entry_point`] is the form
    /// that cannot get them wrong).
    pub fn kernel<P: Params>(&self, name: &'static str) -> Result<Kernel<P>, GpuError> {
        let modules = match self.info().specific {
            Some((specific, _)) => format!("{} and {specific} modules", self.info().arch),
            None => format!("{} module", self.info().arch),
        };
        let function = self
            .module_with(name)
            .load_function(name)
            .during(|| format!("finding kernel `{name}` in the {modules}"))?;
        Ok(Kernel::new(name, function))
    }
}

/// A kernel of the loaded module, resolved once ([`Gpu::kernel`]), with the parameter types
/// `P` its device code declares.
pub struct Kernel<P: Params> {
    name: &'static str,
    function: CudaFunction,
    /// The dynamic shared memory the kernel has been allowed so far.
    max_dynamic_shared: AtomicU32,
    params: PhantomData<fn(P)>,
}

impl<P: Params> Kernel<P> {
    fn new(name: &'static str, function: CudaFunction) -> Kernel<P> {
        Kernel {
            name,
            function,
            max_dynamic_shared: AtomicU32::new(DEFAULT_DYNAMIC_SHARED),
            params: PhantomData,
        }
    }

    /// The kernel's entry-point name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Queues one launch on `gpu`'s stream: the one path every kernel launch takes.
    ///
    /// # Safety
    /// 1. The kernel's entry point declares exactly the parameter types `P` (an
    ///    [`EntryPoint`] made by `gpu::kernel!` guarantees it; a name resolved by hand with
    ///    [`Gpu::kernel`] must be checked).
    /// 2. The arguments meet the kernel's documented launch contract: every buffer holds what
    ///    the kernel reads and writes at these values, aligned as it requires; every tensor map
    ///    describes its matrix with the boxes the kernel copies.
    /// 3. `config` is the geometry the kernel's declaration gives for these arguments (its
    ///    threads, and the dynamic shared memory its layout carves up).
    pub unsafe fn launch(
        &self,
        gpu: &Gpu,
        config: LaunchConfig,
        args: P::Args<'_>,
    ) -> Result<(), GpuError> {
        let list = P::kernel_args(&args, gpu);
        drop(args);
        self.allow_shared(gpu, config.shared_bytes)?;
        gpu.record_launch(self.name, config, list);
        let mut launch = gpu.stream().launch_builder(&self.function);
        for arg in list.as_slice() {
            match arg {
                KernelArg::Ptr(ptr) => launch.arg(ptr),
                KernelArg::U32(value) => launch.arg(value),
                KernelArg::U64(value) => launch.arg(value),
                KernelArg::F32(value) => launch.arg(value),
                KernelArg::F64(value) => launch.arg(value),
                KernelArg::TensorMap(map) => launch.arg(map),
            };
        }
        let cuda_config = CudaLaunchConfig {
            grid_dim: (config.grid.0, config.grid.1, 1),
            block_dim: (config.threads, 1, 1),
            shared_mem_bytes: config.shared_bytes,
        };
        // SAFETY: the caller's contract (1)-(3).
        unsafe { launch.launch(cuda_config) }
            .map(drop)
            .during(|| format!("launching `{}` ({config:?})", self.name))
    }

    /// Past 48 KiB of dynamic shared memory a kernel must opt in: done once per new maximum.
    fn allow_shared(&self, gpu: &Gpu, shared_bytes: u32) -> Result<(), GpuError> {
        if shared_bytes <= self.max_dynamic_shared.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes as i32,
            )
            .during(|| {
                format!(
                    "allowing `{}` {shared_bytes} bytes of dynamic shared memory (the GPU \
                     allows {})",
                    self.name,
                    gpu.info().max_shared_bytes_per_block
                )
            })?;
        self.max_dynamic_shared
            .fetch_max(shared_bytes, Ordering::Relaxed);
        Ok(())
    }
}
