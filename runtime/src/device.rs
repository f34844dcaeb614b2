//! The GPU: finding it, checking it can run the kernels, loading the matching device code
//! (the cubin assembled for its arch, else the PTX), memory, resolving kernels, and the
//! watchdog on every wait.
//!
//! The CUDA driver (`libcuda`) is loaded at run time through `cudarc`, so a program builds and
//! runs its GPU-less commands anywhere; asking for a GPU where there is no driver is one
//! clear error ([`GpuError::NoDriver`]).

mod open;

use crate::args::{ArgList, LastLaunch, LaunchConfig};
use crate::error::{Context as _, GpuError, describe};
use crate::monitor::{GpuMonitor, nvml_uuid};
use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
pub(crate) use open::load;
use ptx_builder::Arch;
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One module of a program's device code: the PTX built for `arch`, and the same module
/// assembled by ptxas for that arch if the build had ptxas.
///
/// ```
/// use gpu_runtime::{Arch, Module};
/// // One entry per arch the build made, the PTX `include_str!` of the file it wrote.
/// const MODULES: &[Module] = &[Module {
///     arch: Arch::Sm80,
///     ptx: ".version 7.0\n.target sm_80\n.address_size 64\n",
///     cubin: None,
/// }];
/// assert_eq!(MODULES[0].arch.name(), "sm_80");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Module {
    pub arch: Arch,
    pub ptx: &'static str,
    pub cubin: Option<&'static [u8]>,
}

/// The module for `arch` among `modules`.
pub(crate) fn module_for(modules: &[Module], arch: Arch) -> Option<&Module> {
    modules.iter().find(|m| m.arch == arch)
}

/// The PTX arch for a GPU, or why it cannot run the kernels. `requested` forces an older
/// arch's PTX (sm_80 PTX runs on an sm_90 GPU, so both code paths can be tested on one).
/// Which of those a program carries is [`Gpu::open_with`]'s check.
pub fn select_arch(
    name: &str,
    major: u32,
    minor: u32,
    requested: Option<Arch>,
) -> Result<Arch, GpuError> {
    let native =
        Arch::for_compute_capability(major, minor).ok_or_else(|| GpuError::Unsupported {
            name: name.to_string(),
            major,
            minor,
        })?;
    // An arch-specific arch asks for the portable module it is loaded beside.
    let requested = requested.map(Arch::portable);
    match requested {
        Some(arch) if arch > native => Err(GpuError::ArchTooNew {
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
///
/// ```no_run
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// let info = gpu.info();
/// let (major, minor) = info.compute_capability;
/// let code = info.code_label(); // "sm_90 cubin + sm_90a cubin", say
/// println!("{} ({major}.{minor}, {} SMs): {code}", info.name, info.multiprocessors);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, serde::Serialize)]
pub struct GpuInfo {
    pub name: String,
    pub compute_capability: (u32, u32),
    /// The PTX arch loaded for it.
    #[serde(serialize_with = "arch_name")]
    pub arch: Arch,
    /// The arch-specific module loaded beside it (sm_90a on compute capability 9.0, when the
    /// program carries one and `arch` is the GPU's own), and its form.
    #[serde(serialize_with = "specific_name")]
    pub specific: Option<(Arch, DeviceCode)>,
    pub multiprocessors: u32,
    pub clock_mhz: u32,
    pub memory_gib: f64,
    /// Dynamic shared memory a block may ask for (after opting in).
    pub max_shared_bytes_per_block: u32,
    pub driver_version: String,
    /// The form of the device code loaded.
    pub code: DeviceCode,
}

impl GpuInfo {
    /// The device code loaded, as reports name it: `sm_90 cubin + sm_90a cubin`, `sm_80 PTX`.
    pub fn code_label(&self) -> String {
        match self.specific {
            Some((arch, code)) => format!("{} {} + {arch} {code}", self.arch, self.code),
            None => format!("{} {}", self.arch, self.code),
        }
    }
}

/// The form of the device code a [`Gpu`] runs.
///
/// ```
/// use gpu_runtime::DeviceCode;
/// assert_eq!(DeviceCode::Cubin.to_string(), "cubin");
/// assert_eq!(DeviceCode::Ptx.to_string(), "PTX");
/// assert_eq!(DeviceCode::None.to_string(), "no module");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceCode {
    /// The module assembled by ptxas at build time for this arch, loaded as it is.
    Cubin,
    /// The PTX module, compiled by the driver as it loads it (which caches the result on
    /// disk: the first load on a machine takes about 30 s on an H200).
    Ptx,
    /// No module of the program's own ([`Gpu::on_stream`] with none: libraries load theirs).
    None,
}

impl fmt::Display for DeviceCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceCode::Cubin => "cubin",
            DeviceCode::Ptx => "PTX",
            DeviceCode::None => "no module",
        })
    }
}

fn arch_name<S: serde::Serializer>(arch: &Arch, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(arch.name())
}

fn specific_name<S: serde::Serializer>(
    specific: &Option<(Arch, DeviceCode)>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match specific {
        Some((arch, _)) => serializer.serialize_some(arch.name()),
        None => serializer.serialize_none(),
    }
}

/// How long queued work may take before the watchdog reports it hung, outside a
/// [`Gpu::time_limit_for`] scope.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(60);

/// An open GPU: a context, the module with every kernel, and one stream all work goes to.
///
/// Every wait for the GPU (`synchronize`, `time`) polls against a time limit, so a kernel
/// that never finishes is reported ([`GpuError::Hung`]) instead of freezing the program.
///
/// ```no_run
/// use gpu_runtime::Gpu;
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = Gpu::open(MODULES)?;
/// let x = gpu.upload(&[1u32, 2, 3], "x")?;
/// let mut y = gpu.zeros::<u32>(3, "y")?;
/// gpu.upload_into(&[7, 8], &mut y, 1, "y")?;
/// gpu.synchronize(|| "copying x and y".into())?;
/// assert_eq!(gpu.download(&x, "x")?, [1, 2, 3]);
/// assert_eq!(gpu.download(&y, "y")?, [0, 7, 8]);
/// # Ok(())
/// # }
/// ```
pub struct Gpu {
    info: GpuInfo,
    /// The limit of every wait.
    time_limit: Mutex<Duration>,
    /// The last launch, for the watchdog's report (recorded cheaply: the launch sits between
    /// a timed launch's events; described only on a hang).
    last_launch: Mutex<LastLaunch>,
    /// Set when a wait ran out of time: the driver objects are then leaked, not destroyed,
    /// since destroying a context whose kernel still runs can block (libraries holding handles
    /// on this GPU check it too: [`Gpu::hung_flag`]).
    hung: Arc<AtomicBool>,
    /// The program's module (none for a `Gpu` opened on a caller's stream with no modules of
    /// its own: kernel libraries load theirs).
    module: ManuallyDrop<Option<Arc<CudaModule>>>,
    /// The arch-specific module (`GpuInfo::specific`) and its PTX, where kernels that the
    /// portable module lacks are found.
    specific: ManuallyDrop<Option<Arc<CudaModule>>>,
    specific_ptx: Option<&'static str>,
    stream: ManuallyDrop<Arc<CudaStream>>,
    context: ManuallyDrop<Arc<CudaContext>>,
    /// Clocks and power read beside timings, once [`Gpu::enable_monitor`] opened it.
    monitor: Option<GpuMonitor>,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if self.hung.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: each field is dropped once, here, in dependency order.
        unsafe {
            ManuallyDrop::drop(&mut self.module);
            ManuallyDrop::drop(&mut self.specific);
            ManuallyDrop::drop(&mut self.stream);
            ManuallyDrop::drop(&mut self.context);
        }
    }
}

impl Gpu {
    /// Reads this GPU's clocks and power through NVML beside every timing from now on,
    /// sampling every `interval` ([`GpuMonitor`]); refused, saying why, where NVML cannot
    /// read them.
    pub fn enable_monitor(&mut self, interval: Duration) -> Result<(), GpuError> {
        let uuid = self
            .context
            .uuid()
            .during(|| "reading the GPU's UUID".into())?;
        let bytes = uuid.bytes.map(|b| b as u8);
        self.monitor = Some(GpuMonitor::open(nvml_uuid(bytes), interval)?);
        Ok(())
    }

    /// The monitor [`Gpu::enable_monitor`] opened, if any.
    pub fn monitor(&self) -> Option<&GpuMonitor> {
        self.monitor.as_ref()
    }

    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// The stream all work of this GPU goes to (for libraries that launch their own kernels).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Refuses, before anything is allocated, work whose buffers need more than the GPU has
    /// free: one line with both numbers rather than a driver error half-way through uploading.
    pub fn ensure_free_memory(&self, bytes: u64, what: &str) -> anyhow::Result<()> {
        let (free, _total) = self
            .context
            .mem_get_info()
            .during(|| "reading the GPU's free memory".into())?;
        check_fits(bytes, free as u64, what, &self.info.name)
    }

    /// Copies `data` to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T], what: &str) -> Result<CudaSlice<T>, GpuError> {
        self.stream
            .clone_htod(data)
            .during(|| format!("copying {what} to the GPU"))
    }

    /// Copies `data` into `buffer` from element `offset` on (queued on the stream; `data` may
    /// be dropped when this returns). Panics if it does not fit, as slicing does.
    pub fn upload_into<T: DeviceRepr>(
        &self,
        data: &[T],
        buffer: &mut CudaSlice<T>,
        offset: usize,
        what: &str,
    ) -> Result<(), GpuError> {
        let end = offset + data.len();
        assert!(
            end <= buffer.len(),
            "{what}: elements {offset}..{end} of a buffer of {}",
            buffer.len()
        );
        self.stream
            .memcpy_htod(data, &mut buffer.slice_mut(offset..end))
            .during(|| format!("copying {what} [{offset}..{end}] to the GPU"))
    }

    /// A new device buffer of `len` zeros.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.stream
            .alloc_zeros(len)
            .during(|| format!("allocating {what} ({len} elements)"))
    }

    /// Fills `buffer` with the 32-bit pattern `word` (queued on the stream): poison or zeros
    /// for outputs of 4-byte elements that every bit pattern is valid for ([`Word`]).
    pub fn fill_words<T: Word>(
        &self,
        buffer: &mut CudaSlice<T>,
        word: u32,
        what: &str,
    ) -> Result<(), GpuError> {
        let (ptr, _sync) = buffer.device_ptr(&self.stream);
        // SAFETY: the buffer holds `len` 4-byte elements (Word), for which any bits are valid;
        // the stream orders the fill.
        unsafe { sys::cuMemsetD32Async(ptr, word, buffer.len(), self.stream.cu_stream()) }
            .result()
            .during(|| format!("filling {what}"))
    }

    /// Fills `buffer` of 16-bit elements with `bits` (queued on the stream): the poison of a
    /// BF16 output.
    pub fn fill_u16(
        &self,
        buffer: &mut CudaSlice<u16>,
        bits: u16,
        what: &str,
    ) -> Result<(), GpuError> {
        let (ptr, _sync) = buffer.device_ptr(&self.stream);
        // SAFETY: the buffer holds `len` u16s; the stream orders the fill.
        unsafe { sys::cuMemsetD16Async(ptr, bits, buffer.len(), self.stream.cu_stream()) }
            .result()
            .during(|| format!("filling {what}"))
    }

    /// Copies `range` of `buffer` back to the host (waits for the stream): one element of a
    /// large result, say, without the rest.
    pub fn download_range<T: DeviceRepr + Default + Clone>(
        &self,
        buffer: &CudaSlice<T>,
        range: std::ops::Range<usize>,
        what: &str,
    ) -> Result<Vec<T>, GpuError> {
        self.stream
            .clone_dtoh(&buffer.slice(range.clone()))
            .during(|| format!("copying {what} [{range:?}] back"))
    }

    /// Copies `buffer` back to the host (waits for the stream).
    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        buffer: &CudaSlice<T>,
        what: &str,
    ) -> Result<Vec<T>, GpuError> {
        self.stream
            .clone_dtoh(buffer)
            .during(|| format!("copying {what} back"))
    }

    /// The device address of `buffer` (what a tensor map describes), for work this GPU's
    /// stream orders by itself. cudarc's event tracking learns of it as a read, once, here:
    /// a kernel that later writes through the address is not recorded, so another stream
    /// that reads the buffer is not made to wait for it. Pass buffers to
    /// [`Kernel::launch`](crate::Kernel::launch) as typed arguments (`*const T` / `*mut T`
    /// parameters) where other streams are involved: those are recorded as read or written
    /// when the kernel is queued.
    pub fn address<T>(&self, buffer: &CudaSlice<T>) -> sys::CUdeviceptr {
        let (ptr, _sync) = buffer.device_ptr(&self.stream);
        ptr
    }

    /// The context every module and buffer of this GPU lives in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The loaded module that holds the kernel `name` (for [`Gpu::kernel`]): the
    /// arch-specific one if its PTX has that entry point, else the portable one (none when
    /// the GPU was opened without a module of the program's own). Chosen from the PTX text,
    /// so that looking a kernel up never makes a failing driver call (which compute-sanitizer
    /// would report).
    pub(crate) fn module_with(&self, name: &str) -> Option<&Arc<CudaModule>> {
        match (&*self.specific, self.specific_ptx) {
            (Some(module), Some(ptx)) if declares_entry(ptx, name) => Some(module),
            _ => self.module.as_ref(),
        }
    }

    /// Notes a launch for the watchdog's report.
    pub(crate) fn record_launch(&self, name: &'static str, config: LaunchConfig, args: ArgList) {
        lock(&self.last_launch).record(name, config, args);
    }

    /// Set once a wait for the GPU ran out of time: whoever holds a handle on this GPU (cuBLAS)
    /// must then not destroy it (destroying synchronizes with the kernel that never ends).
    pub fn hung_flag(&self) -> Arc<AtomicBool> {
        self.hung.clone()
    }

    /// Every wait for the GPU may take `limit` before the watchdog reports it, until the
    /// returned guard is dropped; then the limit before it holds again (so a caller's limit
    /// never leaks into the next caller's waits). Guards nest like scopes: hold one for a
    /// scope (`let _limit = ...`), and do not hand it to another thread or drop an outer one
    /// before an inner one, or the limit restored is the wrong one.
    #[must_use = "the limit holds only while the guard lives"]
    pub fn time_limit_for(&self, limit: Duration) -> TimeLimit<'_> {
        TimeLimit::set(&self.time_limit, limit)
    }

    /// The limit of every wait for the GPU.
    pub fn time_limit(&self) -> Duration {
        *lock(&self.time_limit)
    }

    /// Polls `done` until it says the work finished, or reports the GPU hung once the time
    /// limit has passed. A driver error surfaces as itself.
    fn wait(
        &self,
        what: impl FnOnce() -> String,
        mut done: impl FnMut() -> Result<bool, DriverError>,
    ) -> Result<(), GpuError> {
        let limit = self.time_limit();
        let start = Instant::now();
        let mut polls = 0u32;
        loop {
            match done() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(source) => {
                    return Err(GpuError::Cuda {
                        what: what(),
                        source,
                    });
                }
            }
            if start.elapsed() > limit {
                self.hung.store(true, Ordering::Relaxed);
                return Err(GpuError::Hung {
                    what: what(),
                    limit,
                    last: lock(&self.last_launch).describe(),
                });
            }
            // Spin briefly (short kernels), then sleep a little between polls.
            polls += 1;
            if polls < 1000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }

    /// Waits for the stream (under the watchdog); a failed kernel surfaces here.
    pub fn synchronize(&self, what: impl FnOnce() -> String) -> Result<(), GpuError> {
        let stream = self.stream.cu_stream();
        self.wait(what, || {
            // SAFETY: queries a live stream.
            match unsafe { sys::cuStreamQuery(stream) } {
                sys::CUresult::CUDA_SUCCESS => Ok(true),
                sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
                error => Err(DriverError(error)),
            }
        })
    }

    /// Two events for timing work queued between them on the stream.
    pub fn timer(&self) -> Result<Timer, GpuError> {
        let event = || {
            self.context
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .during(|| "creating an event".into())
        };
        Ok(Timer {
            start: event()?,
            stop: event()?,
        })
    }

    /// Records `timer`'s start on the stream, runs `queue` (which queues work), records its
    /// stop, waits for it (under the watchdog), and returns the GPU time in milliseconds.
    pub fn time<E>(&self, timer: &Timer, queue: impl FnOnce() -> Result<(), E>) -> Result<f64, E>
    where
        E: From<GpuError>,
    {
        timer
            .start
            .record(&self.stream)
            .during(|| "recording an event".into())?;
        queue()?;
        timer
            .stop
            .record(&self.stream)
            .during(|| "recording an event".into())?;
        self.wait(
            || "waiting for a timed launch".into(),
            || timer.stop.try_is_complete(),
        )?;
        let ms = timer
            .start
            .elapsed_ms(&timer.stop)
            .during(|| "reading an event timer".into())?;
        Ok(ms as f64)
    }
}

/// Whether `ptx` declares the kernel `name` (`.entry name(`).
pub(crate) fn declares_entry(ptx: &str, name: &str) -> bool {
    ptx.match_indices(".entry ").any(|(at, _)| {
        ptx[at + 7..]
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('('))
    })
}

/// `Ok` if `bytes` fit in `free` bytes of `device`'s memory, else the error that says how much
/// `what` needs and how much is free.
pub fn check_fits(bytes: u64, free: u64, what: &str, device: &str) -> anyhow::Result<()> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    anyhow::ensure!(
        bytes <= free,
        "{what} needs {:.2} GiB of device memory; {device} has {:.2} GiB free",
        gib(bytes),
        gib(free)
    );
    Ok(())
}

/// A mutex's value, whether or not a thread panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A 4-byte element type every 32-bit pattern is a valid value of (what
/// [`Gpu::fill_words`] may fill).
///
/// ```no_run
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// let mut y = gpu.zeros::<f32>(1024, "y")?;
/// // Poison the output before a kernel writes it: a NaN left over is an element it missed.
/// gpu.fill_words(&mut y, f32::NAN.to_bits(), "y")?;
/// # Ok(())
/// # }
/// ```
pub trait Word: DeviceRepr + sealed::Sealed {}

impl Word for u32 {}
impl Word for i32 {}
impl Word for f32 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
}

/// The watchdog's limit of a scope ([`Gpu::time_limit_for`]): restores the previous limit
/// when dropped.
///
/// ```no_run
/// use gpu_runtime::{DEFAULT_TIME_LIMIT, Gpu};
/// use std::time::Duration;
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = Gpu::open(MODULES)?;
/// {
///     let _limit = gpu.time_limit_for(Duration::from_secs(600)); // a long run
///     assert_eq!(gpu.time_limit(), Duration::from_secs(600));
///     gpu.synchronize(|| "the long run".into())?;
/// }
/// assert_eq!(gpu.time_limit(), DEFAULT_TIME_LIMIT);
/// # Ok(())
/// # }
/// ```
pub struct TimeLimit<'g> {
    slot: &'g Mutex<Duration>,
    previous: Duration,
}

impl<'g> TimeLimit<'g> {
    fn set(slot: &'g Mutex<Duration>, limit: Duration) -> TimeLimit<'g> {
        let previous = std::mem::replace(&mut *lock(slot), limit);
        TimeLimit { slot, previous }
    }
}

impl Drop for TimeLimit<'_> {
    fn drop(&mut self) {
        *lock(self.slot) = self.previous;
    }
}

/// A pair of CUDA events (see [`Gpu::time`]).
///
/// ```no_run
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// let mut y = gpu.zeros::<u32>(1 << 20, "y")?;
/// let timer = gpu.timer()?; // made once, reused by every timing
/// let ms = gpu.time(&timer, || gpu.fill_words(&mut y, 0, "y"))?;
/// println!("filled 4 MiB in {ms:.3} ms");
/// # Ok(())
/// # }
/// ```
pub struct Timer {
    start: CudaEvent,
    stop: CudaEvent,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::KernelArg;

    #[test]
    fn arch_follows_compute_capability() {
        assert_eq!(select_arch("A100", 8, 0, None).unwrap(), Arch::Sm80);
        assert_eq!(select_arch("RTX 4090", 8, 9, None).unwrap(), Arch::Sm80);
        assert_eq!(select_arch("H200", 9, 0, None).unwrap(), Arch::Sm90);
        // sm_90a is loaded beside sm_90: asking for it asks for sm_90.
        assert_eq!(
            select_arch("H200", 9, 0, Some(Arch::Sm90a)).unwrap(),
            Arch::Sm90
        );
        assert!(select_arch("A100", 8, 0, Some(Arch::Sm90a)).is_err());
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
    fn work_that_does_not_fit_is_refused_with_both_numbers() {
        check_fits(1 << 30, 2 << 30, "x", "H200").unwrap();
        let text = check_fits(
            200 << 30,
            139 << 30,
            "gemm at 131072x131072x1",
            "NVIDIA H200",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            text,
            "gemm at 131072x131072x1 needs 200.00 GiB of device memory; NVIDIA H200 has \
             139.00 GiB free"
        );
    }

    #[test]
    fn a_scoped_time_limit_gives_the_previous_one_back() {
        let slot = Mutex::new(DEFAULT_TIME_LIMIT);
        {
            let _outer = TimeLimit::set(&slot, Duration::from_secs(5));
            assert_eq!(*lock(&slot), Duration::from_secs(5));
            {
                let _inner = TimeLimit::set(&slot, Duration::from_secs(2));
                assert_eq!(*lock(&slot), Duration::from_secs(2));
            }
            assert_eq!(*lock(&slot), Duration::from_secs(5));
        }
        assert_eq!(*lock(&slot), DEFAULT_TIME_LIMIT);
    }

    #[test]
    fn a_hang_report_names_the_launch_and_the_limit() {
        let mut last = LastLaunch::default();
        let mut args = ArgList::new();
        args.push(KernelArg::Ptr(0x7f00));
        args.push(KernelArg::U32(5));
        last.record("k", LaunchConfig::linear(1, 32, 0), args);
        let text = GpuError::Hung {
            what: "running `k`".into(),
            limit: Duration::from_secs(2),
            last: last.describe(),
        }
        .to_string();
        assert!(
            text.starts_with("running `k`: the GPU did not finish within 2s"),
            "{text}"
        );
        assert!(
            text.contains("the last launch was `k` (1 x 1 blocks of 32 threads"),
            "{text}"
        );
        assert!(text.contains("parameters (0x7f00, 5)"), "{text}");
        assert!(text.contains("unusable"), "{text}");
        assert!(!text.contains('\n'));
    }

    #[test]
    fn a_program_without_the_module_for_the_gpu_says_what_it_carries() {
        let text = GpuError::NotBuilt {
            arch: Arch::Sm90,
            built: vec![Arch::Sm80],
        }
        .to_string();
        assert_eq!(
            text,
            "this program carries no sm_90 module (built for: sm_80)"
        );
        let modules = [Module {
            arch: Arch::Sm80,
            ptx: "",
            cubin: None,
        }];
        assert!(module_for(&modules, Arch::Sm80).is_some());
        assert!(module_for(&modules, Arch::Sm90).is_none());
    }

    #[test]
    fn entry_points_are_found_by_their_whole_name() {
        let ptx = ".visible .entry gemm_a16(\n.param .u64 p)\n.visible .entry gemm(\n";
        assert!(declares_entry(ptx, "gemm"));
        assert!(declares_entry(ptx, "gemm_a16"));
        assert!(!declares_entry(ptx, "gemm_a"));
        assert!(!declares_entry(ptx, "mm"));
    }

    #[test]
    fn missing_driver_and_gpu_messages_are_one_line() {
        for text in [
            GpuError::NoDriver.to_string(),
            GpuError::Unavailable("the driver sees no GPU".into()).to_string(),
        ] {
            assert!(text.starts_with("no "), "{text}");
            assert!(text.contains("8.0"), "{text}");
            assert!(!text.contains('\n'));
        }
    }
}
