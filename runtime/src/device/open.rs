//! Opening a [`Gpu`]: a device of our own ([`Gpu::open_ordinal`]), a caller's stream
//! ([`Gpu::on_stream`]) or another stream of an open one ([`Gpu::with_stream`]), and loading
//! a module's cubin or PTX in its context.

use super::*;

impl Gpu {
    /// Opens GPU 0 and loads the module of `modules` built for its arch.
    pub fn open(modules: &[Module]) -> Result<Gpu, GpuError> {
        Gpu::open_with(modules, None)
    }

    /// Opens GPU 0 and loads the module of `modules` for `arch` (its own arch when `None`),
    /// and beside it the arch-specific module for the GPU (sm_90a on compute capability 9.0)
    /// when `modules` has one and `arch` is the GPU's own (or that arch-specific one).
    pub fn open_with(modules: &[Module], arch: Option<Arch>) -> Result<Gpu, GpuError> {
        Gpu::open_ordinal(0, modules, arch)
    }

    /// Opens GPU `ordinal` (as `CUDA_VISIBLE_DEVICES` numbers them) with a stream of its own,
    /// and loads `modules` as [`Gpu::open_with`] does. The harness's way in: every buffer of
    /// this `Gpu` is used on its one stream, so cudarc's per-buffer event tracking is turned
    /// off for the context handle it opens (other handles on the same GPU, candle's say, keep
    /// theirs).
    pub fn open_ordinal(
        ordinal: usize,
        modules: &[Module],
        arch: Option<Arch>,
    ) -> Result<Gpu, GpuError> {
        if !crate::shared_library::present(crate::shared_library::DRIVER) {
            return Err(GpuError::NoDriver);
        }
        let unavailable = |e: DriverError| GpuError::Unavailable(describe(&e));
        let count = CudaContext::device_count().map_err(unavailable)?;
        if count == 0 {
            return Err(GpuError::Unavailable("the driver sees no GPU".into()));
        }
        if ordinal >= count as usize {
            return Err(GpuError::Unavailable(format!(
                "GPU {ordinal} asked for; the driver sees {count}"
            )));
        }
        let context = CudaContext::new(ordinal).map_err(unavailable)?;
        // SAFETY: every buffer of this context handle is used on the one stream made below.
        unsafe { context.disable_event_tracking() };
        let stream = context.new_stream().during(|| "creating a stream".into())?;
        Gpu::with_context(context, stream, modules, arch)
    }

    /// The GPU of a caller's `stream` (candle's `CudaDevice::cuda_stream()`, or any cudarc
    /// stream, on any device), with `modules` loaded in its context: every launch through
    /// this `Gpu` is queued on that stream, and cudarc's event tracking is left as the
    /// caller's context has it (each launch records its buffers as read or written, as
    /// cudarc's own launches do). `modules` may be a kernel library's own, such as
    /// `gpu_kernels::MODULES`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), gpu_runtime::GpuError> {
    /// use gpu_runtime::cudarc::driver::CudaContext;
    /// let context = CudaContext::new(0).expect("a GPU");
    /// let stream = context.new_stream().expect("a stream");
    /// let gpu = gpu_runtime::Gpu::on_stream(stream, &[])?;
    /// println!("{}", gpu.info().name);
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_stream(stream: Arc<CudaStream>, modules: &[Module]) -> Result<Gpu, GpuError> {
        let context = stream.context().clone();
        Gpu::with_context(context, stream, modules, None)
    }

    /// A `Gpu` on another stream of this one's context, sharing its loaded modules: what was
    /// loaded for this `Gpu` (a kernel library included) launches on `stream` through it.
    /// Refused for a stream of another context.
    pub fn with_stream(&self, stream: Arc<CudaStream>) -> Result<Gpu, GpuError> {
        if stream.context().cu_ctx() != self.context.cu_ctx() {
            return Err(GpuError::Refused {
                what: "using a stream with this GPU's modules".into(),
                why: format!(
                    "the stream belongs to another context (GPU {}; this is GPU {}, {})",
                    stream.context().ordinal(),
                    self.context.ordinal(),
                    self.info.name
                ),
            });
        }
        Ok(Gpu {
            info: self.info.clone(),
            time_limit: Mutex::new(self.time_limit()),
            last_launch: Mutex::new(LastLaunch::default()),
            hung: self.hung.clone(),
            module: self.module.clone(),
            specific: self.specific.clone(),
            specific_ptx: self.specific_ptx,
            stream: ManuallyDrop::new(stream),
            context: self.context.clone(),
            monitor: None,
        })
    }

    /// Reads the GPU of `context` and loads `modules` in it, `stream` the one all work goes to.
    fn with_context(
        context: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        modules: &[Module],
        arch: Option<Arch>,
    ) -> Result<Gpu, GpuError> {
        let name = context.name().during(|| "reading the GPU's name".into())?;
        let attribute = |attr: CUdevice_attribute| {
            context
                .attribute(attr)
                .map(|v| v.max(0) as u32)
                .during(|| format!("reading {attr:?}"))
        };
        use CUdevice_attribute as A;
        let major = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let requested = arch;
        let arch = select_arch(&name, major, minor, requested)?;
        let native = Arch::for_compute_capability(major, minor) == Some(arch);
        let specific_module = Arch::specific_for(major, minor)
            .filter(|_| native)
            .and_then(|specific| module_for(modules, specific).copied());
        let module = match modules {
            [] => None,
            _ => Some(
                *module_for(modules, arch).ok_or_else(|| GpuError::NotBuilt {
                    arch,
                    built: modules.iter().map(|m| m.arch).collect(),
                })?,
            ),
        };
        let multiprocessors = attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let clock_mhz = attribute(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000;
        let max_shared_bytes_per_block =
            attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let memory = context
            .total_mem()
            .during(|| "reading the GPU's memory size".into())?;
        let mut version = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut version) }
            .result()
            .during(|| "reading the driver version".into())?;
        let (module, code) = match module {
            Some(m) => {
                let (loaded, code) = load(&context, &m, major, &name)?;
                (Some(loaded), code)
            }
            None => (None, DeviceCode::None),
        };
        let (specific, specific_info) = match specific_module {
            Some(m) => {
                let (loaded, code) = load(&context, &m, major, &name)?;
                (Some(loaded), Some((m.arch, code)))
            }
            // With no modules of its own the program runs libraries' only: they load the
            // GPU's arch-specific module beside the portable one where they carry it.
            None if modules.is_empty() => (
                None,
                Arch::specific_for(major, minor).map(|arch| (arch, DeviceCode::None)),
            ),
            None => (None, None),
        };
        Ok(Gpu {
            info: GpuInfo {
                name,
                compute_capability: (major, minor),
                arch,
                specific: specific_info,
                multiprocessors,
                clock_mhz,
                memory_gib: memory as f64 / (1u64 << 30) as f64,
                max_shared_bytes_per_block,
                driver_version: format!("{}.{}", version / 1000, version % 1000 / 10),
                code,
            },
            time_limit: Mutex::new(DEFAULT_TIME_LIMIT),
            last_launch: Mutex::new(LastLaunch::default()),
            hung: Arc::new(AtomicBool::new(false)),
            module: ManuallyDrop::new(module),
            specific: ManuallyDrop::new(specific),
            specific_ptx: specific_module.map(|m| m.ptx),
            stream: ManuallyDrop::new(stream),
            context: ManuallyDrop::new(context),
            monitor: None,
        })
    }
}

/// Loads `module` on `context`: its cubin where it runs (the major version it was assembled
/// for, and a driver that accepts it — not older than the ptxas that made it), else its PTX.
pub(crate) fn load(
    context: &Arc<CudaContext>,
    module: &Module,
    major: u32,
    gpu_name: &str,
) -> Result<(Arc<CudaModule>, DeviceCode), GpuError> {
    let arch = module.arch;
    let cubin = module
        .cubin
        .filter(|cubin| !cubin.is_empty() && major == arch.major_version())
        .and_then(|cubin| context.load_module(Ptx::from_binary(cubin.to_vec())).ok());
    match cubin {
        Some(loaded) => Ok((loaded, DeviceCode::Cubin)),
        None => context
            .load_module(module.ptx.into())
            .map(|loaded| (loaded, DeviceCode::Ptx))
            .during(|| format!("loading the {arch} PTX on {gpu_name}")),
    }
}
