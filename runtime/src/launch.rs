//! Typed kernel launches: a kernel's device parameter types ([`Params`], a tuple such as
//! `(*const f32, *mut f32, u32)`) decide what the host passes ([`Params::Args`]: a buffer of
//! `f32` to read, one to write — `CudaSlice`, `CudaView`, `CudaViewMut` — and a `u32`), so a launch with the wrong count or type of arguments does
//! not compile. [`Gpu::kernel`] resolves a kernel once; [`Kernel::launch`] is the one path every
//! launch takes, thread block clusters included.

use crate::args::{ArgList, KernelArg, LaunchConfig, NO_CLUSTER};
use crate::buffer::{DeviceBuffer, DeviceBufferMut, Guards};
use crate::device::Gpu;
use crate::error::{Context as _, GpuError};
use crate::tensor_map::TensorMap;
use cudarc::driver::sys::{self, CUfunction_attribute};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig as CudaLaunchConfig, PushKernelArg};
use gpu::kernel::EntryPoint;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

/// A kernel parameter type as the device code declares it, and what the host passes for it.
///
/// ```
/// use gpu_runtime::cudarc::driver::CudaStream;
/// use gpu_runtime::{Guards, KernelArg, Param, StructArg};
/// // A parameter struct the kernel takes by value (declared in a crate both sides share).
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// pub struct Shape {
///     rows: u32,
///     cols: u32,
/// }
/// impl Param for Shape {
///     type Arg<'a> = Shape;
///     fn kernel_arg<'g>(arg: &'g mut Shape, _: &'g CudaStream, _: &mut Guards<'g>) -> KernelArg {
///         // SAFETY: `repr(C)`, two 4-byte numbers, the kernel's declared parameter.
///         KernelArg::Struct(unsafe { StructArg::new(arg) })
///     }
/// }
/// ```
pub trait Param {
    /// What the host passes.
    type Arg<'a>;
    /// The argument as it goes to the driver, for a launch on `stream`; a buffer's guard goes
    /// into `guards`, which the launch keeps until the kernel is queued.
    fn kernel_arg<'g>(
        arg: &'g mut Self::Arg<'_>,
        stream: &'g CudaStream,
        guards: &mut Guards<'g>,
    ) -> KernelArg;
}

/// A pointer the kernel reads through: any buffer whose elements hold `T`
/// ([`DeviceBuffer`]: a `CudaSlice`, `CudaView` or `CudaViewMut`).
impl<T: 'static> Param for *const T {
    type Arg<'a> = &'a dyn DeviceBuffer<T>;
    fn kernel_arg<'g>(
        arg: &'g mut Self::Arg<'_>,
        stream: &'g CudaStream,
        guards: &mut Guards<'g>,
    ) -> KernelArg {
        let (ptr, guard) = arg.read_ptr(stream);
        guards.hold(guard);
        KernelArg::Ptr(ptr)
    }
}

/// A pointer the kernel writes through: a `CudaSlice` or `CudaViewMut` whose elements hold
/// `T` ([`DeviceBufferMut`]), recorded as written.
impl<T: 'static> Param for *mut T {
    type Arg<'a> = &'a mut dyn DeviceBufferMut<T>;
    fn kernel_arg<'g>(
        arg: &'g mut Self::Arg<'_>,
        stream: &'g CudaStream,
        guards: &mut Guards<'g>,
    ) -> KernelArg {
        let (ptr, guard) = arg.write_ptr(stream);
        guards.hold(guard);
        KernelArg::Ptr(ptr)
    }
}

macro_rules! value_params {
    ($($t:ty => $variant:ident),*) => {$(
        impl Param for $t {
            type Arg<'a> = $t;
            fn kernel_arg<'g>(arg: &'g mut $t, _: &'g CudaStream, _: &mut Guards<'g>) -> KernelArg {
                KernelArg::$variant(*arg)
            }
        }
    )*};
}

value_params!(u32 => U32, u64 => U64, f32 => F32, f64 => F64);

/// A tensor map parameter (`gpu::tensor_map::TensorMap` on the device, `__grid_constant__
/// const CUtensorMap` in CUDA C++): the host passes an encoded [`TensorMap`]. The buffer it
/// describes is the caller's to order (its guard held across the launch).
impl Param for gpu::tensor_map::TensorMap {
    type Arg<'a> = &'a TensorMap;
    fn kernel_arg<'g>(arg: &'g mut &TensorMap, _: &'g CudaStream, _: &mut Guards<'g>) -> KernelArg {
        KernelArg::TensorMap(**arg)
    }
}

/// A kernel's parameter list: a tuple of [`Param`]s, up to [`MAX_PARAMS`](crate::args::MAX_PARAMS).
///
/// ```
/// use gpu_runtime::Params;
/// use gpu_runtime::cudarc::driver::CudaSlice;
/// // `scale(x: *const f32, y: *mut f32, n: u32)` takes a buffer to read, one to write, a u32.
/// type Scale = (*const f32, *mut f32, u32);
/// fn args<'a>(
///     x: &'a CudaSlice<f32>,
///     y: &'a mut CudaSlice<f32>,
/// ) -> <Scale as Params>::Args<'a> {
///     (x, y, 1024)
/// }
/// ```
pub trait Params {
    /// What the host passes: the tuple of each parameter's [`Param::Arg`].
    type Args<'a>;
    /// The arguments as they go to the driver, for a launch on `stream`, their buffers'
    /// guards into `guards`.
    fn kernel_args<'g>(
        args: &'g mut Self::Args<'_>,
        stream: &'g CudaStream,
        guards: &mut Guards<'g>,
    ) -> ArgList;
}

macro_rules! params_for_tuples {
    ($(($($p:ident $i:tt),*))*) => {$(
        impl<$($p: Param),*> Params for ($($p,)*) {
            type Args<'a> = ($($p::Arg<'a>,)*);
            #[allow(unused_mut, unused_variables)]
            fn kernel_args<'g>(
                args: &'g mut Self::Args<'_>,
                stream: &'g CudaStream,
                guards: &mut Guards<'g>,
            ) -> ArgList {
                let mut list = ArgList::new();
                $(list.push($p::kernel_arg(&mut args.$i, stream, guards));)*
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

/// The most blocks a thread block cluster has on every GPU that runs clusters (CUDA's
/// portable cluster size).
pub const PORTABLE_CLUSTER_BLOCKS: u32 = 8;

/// The most blocks a thread block cluster may have at all: 16 on H100 / H200, for a kernel
/// allowed non-portable sizes (which [`Kernel::launch`] does by itself).
pub const MAX_CLUSTER_BLOCKS: u32 = 16;

impl Gpu {
    /// The kernel `entry` declares, resolved once in the loaded module, with the cluster
    /// shape it declares ([`EntryPoint::cluster`]).
    pub fn entry_point<P: Params>(&self, entry: EntryPoint<P>) -> Result<Kernel<P>, GpuError> {
        let mut kernel = self.kernel(entry.name())?;
        kernel.declared_cluster = entry.cluster();
        Ok(kernel)
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
        let module = self.module_with(name).ok_or_else(|| GpuError::Refused {
            what: format!("finding kernel `{name}`"),
            why: "this GPU was opened with no module of the program's own".into(),
        })?;
        let function = module
            .load_function(name)
            .during(|| format!("finding kernel `{name}` in the {modules}"))?;
        Ok(Kernel::new(name, function))
    }
}

/// A kernel of the loaded module, resolved once ([`Gpu::kernel`]), with the parameter types
/// `P` its device code declares.
///
/// ```no_run
/// use gpu_runtime::{Gpu, LaunchConfig};
/// gpu::kernel! {
///     /// `y = alpha * x` over `n` floats.
///     pub fn scale(x: *const f32, y: *mut f32, n: u32, alpha: f32) [max_threads = 256] {}
/// }
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = Gpu::open(MODULES)?;
/// let kernel = gpu.entry_point(scale)?; // resolved once, launched many times
/// let x = gpu.upload(&[1.0f32; 1024], "x")?;
/// let mut y = gpu.zeros::<f32>(1024, "y")?;
/// // SAFETY: scale(x, y, n, alpha) reads n floats of x and writes n of y.
/// unsafe { kernel.launch(&gpu, LaunchConfig::linear(4, 256, 0), (&x, &mut y, 1024, 2.0))? };
/// # Ok(())
/// # }
/// ```
pub struct Kernel<P: Params> {
    name: &'static str,
    function: CudaFunction,
    /// The dynamic shared memory the kernel has been allowed so far.
    max_dynamic_shared: AtomicU32,
    /// The cluster shape its declaration fixes (known when resolved from its [`EntryPoint`]).
    pub(crate) declared_cluster: Option<[u32; 3]>,
    /// Whether the kernel has been allowed clusters past [`PORTABLE_CLUSTER_BLOCKS`].
    non_portable: AtomicBool,
    /// `cuOccupancyMaxActiveClusters`'s answers, per (cluster, threads, shared bytes).
    resident: Mutex<Vec<(ClusterKey, u32)>>,
    params: PhantomData<fn(P)>,
}

/// What the number of resident clusters of a kernel depends on: the cluster shape, the
/// threads of a block and its dynamic shared memory (not the grid).
type ClusterKey = ([u32; 3], u32, u32);

impl<P: Params> Kernel<P> {
    pub(crate) fn new(name: &'static str, function: CudaFunction) -> Kernel<P> {
        Kernel {
            name,
            function,
            max_dynamic_shared: AtomicU32::new(DEFAULT_DYNAMIC_SHARED),
            declared_cluster: None,
            non_portable: AtomicBool::new(false),
            resident: Mutex::new(Vec::new()),
            params: PhantomData,
        }
    }

    /// The kernel's entry-point name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The cluster shape the kernel's declaration fixes (`[cluster = ..]` in `gpu::kernel!`),
    /// when it was resolved from its [`EntryPoint`] ([`Gpu::entry_point`]).
    pub fn declared_cluster(&self) -> Option<[u32; 3]> {
        self.declared_cluster
    }

    /// Queues one launch on `gpu`'s stream: the one path every kernel launch takes.
    ///
    /// # Dynamic shared memory
    /// `config.shared_bytes` may exceed the 48 KiB a kernel gets by default, up to the GPU's
    /// opt-in limit (227 KiB on sm_90, 163 KiB on sm_80: `GpuInfo::max_shared_bytes_per_block`):
    /// the launch raises the kernel's `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` to it
    /// first (once per new maximum), so no setup call is needed. Past the opt-in limit the
    /// driver refuses the attribute and the launch returns that error in one line, naming the
    /// kernel, the bytes asked for and the GPU's limit.
    ///
    /// # Clusters
    /// A `config.cluster` other than [`NO_CLUSTER`] launches thread block clusters of that
    /// shape: it lowers to `cuLaunchKernelEx` with the attribute
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`. A kernel whose declaration fixes its shape
    /// (`[cluster = ..]`, `.reqnctapercluster` in its PTX) runs in those clusters through the
    /// ordinary `cuLaunchKernel` when `config.cluster` is [`NO_CLUSTER`], since the driver takes
    /// the shape from the kernel; a different shape is refused. Before the driver sees a
    /// cluster launch, the launch is refused (one line, [`GpuError::Refused`]) when the GPU
    /// predates compute capability 9.0, a grid dimension is not a multiple of the cluster's, the
    /// cluster has more than [`MAX_CLUSTER_BLOCKS`] blocks, or the driver says no such cluster
    /// can be resident ([`Kernel::max_active_clusters`] is 0). Past
    /// [`PORTABLE_CLUSTER_BLOCKS`] the kernel is allowed non-portable sizes
    /// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`) once.
    ///
    /// # Safety
    /// 1. The kernel's entry point declares exactly the parameter types `P` (an
    ///    [`EntryPoint`] made by `gpu::kernel!` guarantees it; a name resolved by hand with
    ///    [`Gpu::kernel`] must be checked).
    /// 2. The arguments meet the kernel's documented launch contract: every buffer holds what
    ///    the kernel reads and writes at these values, aligned as it requires; every tensor map
    ///    describes its matrix with the boxes the kernel copies.
    /// 3. `config` is the geometry the kernel's declaration gives for these arguments (its
    ///    threads, the dynamic shared memory its layout carves up, and the cluster shape a
    ///    kernel that reaches into its cluster's shared memory expects).
    pub unsafe fn launch(
        &self,
        gpu: &Gpu,
        config: LaunchConfig,
        args: P::Args<'_>,
    ) -> Result<(), GpuError> {
        let mut args = args;
        let mut guards = Guards::new();
        let list = P::kernel_args(&mut args, gpu.stream(), &mut guards);
        self.allow_shared(gpu, config.shared_bytes)?;
        let what = || format!("launching `{}` ({config:?})", self.name);
        let cluster = self.cluster_shape(gpu, config, what)?;
        if let Some(cluster) = cluster
            && self.resident_clusters(gpu, config, cluster, what)? == 0
        {
            return Err(GpuError::Refused {
                what: what(),
                why: not_resident(self.name, cluster, config, &gpu.info().name),
            });
        }
        // The record shows the clusters the launch runs in, a declared shape included.
        let ran = config.with_cluster(cluster.unwrap_or(NO_CLUSTER));
        gpu.record_launch(self.name, ran, list);
        if config.cluster != NO_CLUSTER {
            // SAFETY: the caller's contract (1)-(3).
            return unsafe { self.launch_clusters(gpu, config, &list) }.during(what);
        }
        let mut launch = gpu.stream().launch_builder(&self.function);
        for arg in list.as_slice() {
            match arg {
                KernelArg::Ptr(ptr) => launch.arg(ptr),
                KernelArg::U32(value) => launch.arg(value),
                KernelArg::U64(value) => launch.arg(value),
                KernelArg::F32(value) => launch.arg(value),
                KernelArg::F64(value) => launch.arg(value),
                KernelArg::TensorMap(map) => launch.arg(map),
                KernelArg::Struct(s) => launch.arg(s.words_array()),
            };
        }
        let cuda_config = CudaLaunchConfig {
            grid_dim: (config.grid.0, config.grid.1, 1),
            block_dim: (config.threads, 1, 1),
            shared_mem_bytes: config.shared_bytes,
        };
        // SAFETY: the caller's contract (1)-(3).
        unsafe { launch.launch(cuda_config) }.map(drop).during(what)
    }

    /// How many clusters of `config`'s shape (the kernel's declared one where `config` asks
    /// for none; single blocks where neither has one) can be resident on the GPU at once, as
    /// `cuOccupancyMaxActiveClusters` answers for its threads and dynamic shared memory: 0
    /// means such a launch cannot run. Makes the checks and opt-ins of [`Kernel::launch`]
    /// first (refusing what it would refuse); the answer is cached per cluster shape, threads
    /// and shared bytes.
    pub fn max_active_clusters(&self, gpu: &Gpu, config: LaunchConfig) -> Result<u32, GpuError> {
        let what = || {
            format!(
                "asking how many clusters of `{}` fit ({config:?})",
                self.name
            )
        };
        self.allow_shared(gpu, config.shared_bytes)?;
        let cluster = match self.cluster_shape(gpu, config, what)? {
            Some(cluster) => cluster,
            None => {
                self.check_clusters_run(gpu, NO_CLUSTER, config, what)?;
                NO_CLUSTER
            }
        };
        self.resident_clusters(gpu, config, cluster, what)
    }

    /// The cluster shape a launch of `config` runs in (None: plain blocks), checked against
    /// the grid and the GPU, with the kernel allowed a non-portable size where it needs one.
    fn cluster_shape(
        &self,
        gpu: &Gpu,
        config: LaunchConfig,
        what: impl Fn() -> String,
    ) -> Result<Option<[u32; 3]>, GpuError> {
        let refused = |why| GpuError::Refused { what: what(), why };
        let Some(cluster) =
            resolve_cluster(self.declared_cluster, config.cluster).map_err(refused)?
        else {
            return Ok(None);
        };
        self.check_clusters_run(gpu, cluster, config, &what)?;
        // Sizes past the portable one are allowed by the launch itself, per kernel.
        check_cluster_shape(config.grid, cluster, true).map_err(refused)?;
        if cluster_blocks(cluster) > u64::from(PORTABLE_CLUSTER_BLOCKS) {
            self.allow_non_portable()?;
        }
        Ok(Some(cluster))
    }

    /// Refuses clusters on a GPU that predates them.
    fn check_clusters_run(
        &self,
        gpu: &Gpu,
        cluster: [u32; 3],
        config: LaunchConfig,
        what: impl Fn() -> String,
    ) -> Result<(), GpuError> {
        let info = gpu.info();
        let (major, minor) = info.compute_capability;
        if major >= 9 {
            return Ok(());
        }
        let [x, y, z] = cluster;
        Err(GpuError::Refused {
            what: what(),
            why: format!(
                "clusters of {x} x {y} x {z} blocks (for {} threads, {} B dynamic shared \
                 memory) need compute capability 9.0 (sm_90); {} has {major}.{minor}",
                config.threads, config.shared_bytes, info.name
            ),
        })
    }

    /// `cuOccupancyMaxActiveClusters` for clusters of `cluster` blocks of `config`'s threads
    /// and dynamic shared memory, asked once per such triple.
    fn resident_clusters(
        &self,
        gpu: &Gpu,
        config: LaunchConfig,
        cluster: [u32; 3],
        what: impl Fn() -> String,
    ) -> Result<u32, GpuError> {
        let key = (cluster, config.threads, config.shared_bytes);
        let mut cache = self.resident.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&(_, count)) = cache.iter().find(|(k, _)| *k == key) {
            return Ok(count);
        }
        // A kernel that fixes its shape is asked without the attribute: the driver takes the
        // kernel's (and a launch config may only leave it out or repeat it).
        let mut attribute = cluster_attribute(cluster);
        let attributes = if self.declared_cluster.is_some() {
            0
        } else {
            1
        };
        let launch = launch_config(gpu, config, &mut attribute, attributes);
        let mut count: std::ffi::c_int = 0;
        gpu.stream().context().bind_to_thread().during(&what)?;
        // SAFETY: `launch` and its one attribute outlive the call, which writes `count` only.
        unsafe {
            sys::cuOccupancyMaxActiveClusters(&mut count, self.function.cu_function(), &launch)
        }
        .result()
        .during(|| format!("{} (cuOccupancyMaxActiveClusters)", what()))?;
        let count = u32::try_from(count).unwrap_or(0);
        cache.push((key, count));
        Ok(count)
    }

    /// `cuLaunchKernelEx` of `config` in clusters of `config.cluster` on `gpu`'s stream.
    ///
    /// # Safety
    /// 1. As [`Kernel::launch`]'s (1)-(3), for the arguments `list` holds.
    /// 2. `config` passed [`Kernel::cluster_shape`] and its shared-memory opt-in.
    unsafe fn launch_clusters(
        &self,
        gpu: &Gpu,
        config: LaunchConfig,
        list: &ArgList,
    ) -> Result<(), cudarc::driver::DriverError> {
        let mut attribute = cluster_attribute(config.cluster);
        let launch = launch_config(gpu, config, &mut attribute, 1);
        let mut params = list.param_pointers();
        // cudarc's launch binds the context first; so does this one. The context tracks no
        // per-buffer events (`Gpu::open` turns tracking off), so there are none to record.
        gpu.stream().context().bind_to_thread()?;
        // SAFETY: `launch`, its attribute and `params` (addresses of the values in `list`)
        // outlive the call, which copies the arguments; the rest is the caller's contract.
        unsafe {
            sys::cuLaunchKernelEx(
                &launch,
                self.function.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
    }

    /// Past [`PORTABLE_CLUSTER_BLOCKS`] a kernel must opt in to non-portable cluster sizes:
    /// done once.
    fn allow_non_portable(&self) -> Result<(), GpuError> {
        if self.non_portable.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
            .during(|| {
                format!(
                    "allowing `{}` clusters of more than {PORTABLE_CLUSTER_BLOCKS} blocks",
                    self.name
                )
            })?;
        self.non_portable.store(true, Ordering::Relaxed);
        Ok(())
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

/// The blocks of a cluster, without overflow.
fn cluster_blocks([x, y, z]: [u32; 3]) -> u64 {
    u64::from(x) * u64::from(y) * u64::from(z)
}

/// The cluster shape a launch asking for `asked` runs in, for a kernel whose declaration
/// fixes `declared`: None for plain blocks; the declared shape wins over [`NO_CLUSTER`], and
/// any other differing shape is refused (the driver would fail the launch).
fn resolve_cluster(
    declared: Option<[u32; 3]>,
    asked: [u32; 3],
) -> Result<Option<[u32; 3]>, String> {
    match (declared, asked) {
        (None, NO_CLUSTER) => Ok(None),
        (None, asked) => Ok(Some(asked)),
        (Some(declared), NO_CLUSTER) => Ok(Some(declared)),
        (Some(declared), asked) if declared == asked => Ok(Some(declared)),
        (Some([x, y, z]), [a, b, c]) => Err(format!(
            "the kernel is declared to run in clusters of {x} x {y} x {z} blocks; the launch \
             asks for {a} x {b} x {c}"
        )),
    }
}

/// Why `grid` blocks cannot be launched in clusters of `cluster` blocks, if they cannot: a
/// zero dimension, more than [`MAX_CLUSTER_BLOCKS`] blocks (or more than
/// [`PORTABLE_CLUSTER_BLOCKS`] unless `non_portable_ok`: the kernel is allowed non-portable
/// sizes), or a grid dimension that is not a multiple of the cluster's (the grid has no z,
/// so a cluster's z must be 1).
fn check_cluster_shape(
    grid: (u32, u32),
    cluster: [u32; 3],
    non_portable_ok: bool,
) -> Result<(), String> {
    let [x, y, z] = cluster;
    let shape = format!("a cluster of {x} x {y} x {z} blocks");
    if cluster.contains(&0) {
        return Err(format!("{shape}: every dimension must be at least 1"));
    }
    let blocks = cluster_blocks(cluster);
    if blocks > u64::from(MAX_CLUSTER_BLOCKS) {
        return Err(format!(
            "{shape} has {blocks}; at most {MAX_CLUSTER_BLOCKS} fit one cluster (H100 / H200)"
        ));
    }
    if blocks > u64::from(PORTABLE_CLUSTER_BLOCKS) && !non_portable_ok {
        return Err(format!(
            "{shape} has {blocks}, past the portable {PORTABLE_CLUSTER_BLOCKS}, and the kernel \
             is not allowed non-portable cluster sizes"
        ));
    }
    for (axis, blocks, per_cluster) in [("x", grid.0, x), ("y", grid.1, y), ("z", 1, z)] {
        if blocks % per_cluster != 0 {
            return Err(format!(
                "the grid's {blocks} blocks in {axis} are not a multiple of {shape} \
                 ({per_cluster} in {axis})"
            ));
        }
    }
    Ok(())
}

/// Why a launch for which `cuOccupancyMaxActiveClusters` said 0 is refused.
fn not_resident(name: &str, [x, y, z]: [u32; 3], config: LaunchConfig, gpu: &str) -> String {
    format!(
        "cannot be resident: not one cluster of `{name}` ({x} x {y} x {z} blocks of {} threads, \
         {} B dynamic shared memory each) fits on {gpu} (cuOccupancyMaxActiveClusters is 0)",
        config.threads, config.shared_bytes
    )
}

/// The cluster-dimension launch attribute.
fn cluster_attribute([x, y, z]: [u32; 3]) -> sys::CUlaunchAttribute {
    let mut value = sys::CUlaunchAttributeValue { pad: [0; 64] };
    value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y, z };
    sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value,
    }
}

/// The driver's `CUlaunchConfig` of `config` on `gpu`'s stream, with the first `attributes`
/// (0 or 1) of `attribute`.
fn launch_config(
    gpu: &Gpu,
    config: LaunchConfig,
    attribute: &mut sys::CUlaunchAttribute,
    attributes: u32,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: config.grid.0,
        gridDimY: config.grid.1,
        gridDimZ: 1,
        blockDimX: config.threads,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: config.shared_bytes,
        hStream: gpu.stream().cu_stream(),
        attrs: attribute,
        numAttrs: attributes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_shapes_must_tile_the_grid() {
        assert_eq!(check_cluster_shape((8, 4), [2, 2, 1], false), Ok(()));
        assert_eq!(
            check_cluster_shape((16, 1), [NO_CLUSTER[0], 1, 1], false),
            Ok(())
        );
        let err = check_cluster_shape((6, 1), [4, 1, 1], false).unwrap_err();
        assert!(err.contains("6 blocks in x are not a multiple"), "{err}");
        let err = check_cluster_shape((8, 3), [2, 2, 1], false).unwrap_err();
        assert!(err.contains("3 blocks in y"), "{err}");
        // The grid has one block in z: so must a cluster.
        let err = check_cluster_shape((8, 1), [2, 1, 2], false).unwrap_err();
        assert!(err.contains("in z"), "{err}");
        let err = check_cluster_shape((8, 1), [0, 1, 1], false).unwrap_err();
        assert!(err.contains("at least 1"), "{err}");
    }

    #[test]
    fn cluster_sizes_past_eight_need_the_non_portable_opt_in_and_stop_at_sixteen() {
        assert_eq!(check_cluster_shape((16, 1), [8, 1, 1], false), Ok(()));
        let err = check_cluster_shape((16, 1), [16, 1, 1], false).unwrap_err();
        assert!(err.contains("past the portable 8"), "{err}");
        assert_eq!(check_cluster_shape((16, 1), [16, 1, 1], true), Ok(()));
        assert_eq!(check_cluster_shape((12, 1), [3, 1, 1], true), Ok(()));
        let err = check_cluster_shape((32, 1), [32, 1, 1], true).unwrap_err();
        assert!(err.contains("at most 16"), "{err}");
        // No overflow on absurd shapes.
        let err = check_cluster_shape((1, 1), [u32::MAX, u32::MAX, u32::MAX], true).unwrap_err();
        assert!(err.contains("at most 16"), "{err}");
    }

    #[test]
    fn a_declared_cluster_shape_wins_over_none_and_refuses_another() {
        assert_eq!(resolve_cluster(None, NO_CLUSTER), Ok(None));
        assert_eq!(resolve_cluster(None, [2, 1, 1]), Ok(Some([2, 1, 1])));
        assert_eq!(
            resolve_cluster(Some([4, 1, 1]), NO_CLUSTER),
            Ok(Some([4, 1, 1]))
        );
        assert_eq!(
            resolve_cluster(Some([4, 1, 1]), [4, 1, 1]),
            Ok(Some([4, 1, 1]))
        );
        let err = resolve_cluster(Some([4, 1, 1]), [2, 1, 1]).unwrap_err();
        assert!(
            err.contains("declared to run in clusters of 4 x 1 x 1"),
            "{err}"
        );
    }

    #[test]
    fn a_cluster_that_cannot_be_resident_is_named_with_its_geometry() {
        let config = LaunchConfig::linear(16, 256, 200_000).with_cluster([8, 1, 1]);
        assert_eq!(
            not_resident("k", [8, 1, 1], config, "NVIDIA H200"),
            "cannot be resident: not one cluster of `k` (8 x 1 x 1 blocks of 256 threads, \
             200000 B dynamic shared memory each) fits on NVIDIA H200 \
             (cuOccupancyMaxActiveClusters is 0)"
        );
    }

    #[test]
    fn the_cluster_attribute_carries_the_shape() {
        let attribute = cluster_attribute([2, 4, 1]);
        assert_eq!(
            attribute.id,
            sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        );
        // SAFETY: `clusterDim` is the member written.
        let dim = unsafe { attribute.value.clusterDim };
        assert_eq!((dim.x, dim.y, dim.z), (2, 4, 1));
    }
}
