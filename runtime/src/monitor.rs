//! What the GPU's clocks and power did while work ran: [`GpuMonitor`] reads them through NVML
//! (`libnvidia-ml.so.1`, the driver's management library, loaded at run time by
//! `nvml-wrapper`, so a program built on this crate still builds and runs without it) from a
//! thread that samples while the work runs, and sums it up in a [`Watch`].
//!
//! Why: a long tensor-core kernel on an H200 runs at the board's power limit, where the SM
//! clock, not the code, sets its rate; two kernels timed one after the other may then differ
//! by their clocks alone. With the mean SM clock beside each time, a rate divides into work
//! per SM cycle (the code) and cycles per second (the power limit): [`Watch::work_per_sm_cycle`].
//!
//! What it reads, per sample: the SM clock (`nvmlDeviceGetClockInfo`, MHz) and the clock
//! event reasons (`nvmlDeviceGetCurrentClocksThrottleReasons`: the power cap, thermal
//! slowdown); over the whole stretch, the board's energy counter
//! (`nvmlDeviceGetTotalEnergyConsumption`, mJ), whose difference over the wall time is the
//! mean power. NVML's own power reading is a one-second average on this generation and is
//! not used.

use crate::error::GpuError;
use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::device::Device;
use nvml_wrapper::enum_wrappers::device::Clock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The shortest time between two samples: an NVML query takes tens of microseconds, and a
/// clock changes over milliseconds.
pub const MIN_INTERVAL: Duration = Duration::from_micros(500);

/// Reads one GPU's clocks, clock event reasons and energy through NVML while work runs.
///
/// ```no_run
/// use std::time::Duration;
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let mut gpu = gpu_runtime::Gpu::open(MODULES)?;
/// gpu.enable_monitor(Duration::from_millis(1))?;
/// let monitor = gpu.monitor().expect("enabled above");
/// // ... queue the work to watch, then wait for it while the monitor samples ...
/// let (done, watch) = monitor.watch(|| gpu.synchronize(|| "the watched work".into()));
/// done?;
/// println!("mean SM clock {:?} MHz, mean power {:?} W", watch.sm_mhz_mean, watch.power_w);
/// # Ok(())
/// # }
/// ```
pub struct GpuMonitor {
    nvml: Nvml,
    /// The GPU's UUID as NVML spells it (`GPU-xxxxxxxx-xxxx-...`).
    uuid: String,
    interval: Duration,
}

impl std::fmt::Debug for GpuMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMonitor")
            .field("uuid", &self.uuid)
            .field("interval", &self.interval)
            .finish()
    }
}

/// Why the monitor could not be opened, in one line.
fn refused(why: impl std::fmt::Display) -> GpuError {
    GpuError::Refused {
        what: "reading the GPU's clocks and power through NVML (libnvidia-ml.so.1)".into(),
        why: why.to_string(),
    }
}

impl GpuMonitor {
    /// Opens NVML and finds the GPU whose UUID is `uuid` ([`nvml_uuid`] of the CUDA device's),
    /// sampling every `interval` (at least [`MIN_INTERVAL`]). Refused, with NVML's reason,
    /// where the library is missing, the GPU is not found, or its SM clock cannot be read.
    pub fn open(uuid: String, interval: Duration) -> Result<GpuMonitor, GpuError> {
        GpuMonitor::open_library(None, uuid, interval)
    }

    /// [`GpuMonitor::open`] with NVML loaded from `library` (a path) rather than by its name.
    fn open_library(
        library: Option<&std::ffi::OsStr>,
        uuid: String,
        interval: Duration,
    ) -> Result<GpuMonitor, GpuError> {
        if interval < MIN_INTERVAL {
            return Err(refused(format!(
                "a sampling interval of {interval:?} is below the shortest, {MIN_INTERVAL:?}"
            )));
        }
        let nvml = match library {
            Some(path) => Nvml::builder().lib_path(path).init(),
            None => Nvml::init(),
        }
        .map_err(refused)?;
        let monitor = GpuMonitor {
            nvml,
            uuid,
            interval,
        };
        let device = monitor.device()?;
        device
            .clock_info(Clock::SM)
            .map_err(|e| refused(format!("the SM clock of {}: {e}", monitor.uuid)))?;
        Ok(monitor)
    }

    /// The sampling interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The GPU's clock and power ceilings, and its SM clock now: `None` where NVML does not
    /// say.
    pub fn limits(&self) -> Limits {
        let Ok(d) = self.device() else {
            return Limits::default();
        };
        Limits {
            sm_mhz_now: d.clock_info(Clock::SM).ok(),
            sm_mhz_max: d.max_clock_info(Clock::SM).ok(),
            power_limit_w: d.enforced_power_limit().ok().map(|mw| mw as f64 / 1e3),
        }
    }

    fn device(&self) -> Result<Device<'_>, GpuError> {
        self.nvml
            .device_by_uuid(self.uuid.as_str())
            .map_err(|e| refused(format!("no GPU {} in NVML: {e}", self.uuid)))
    }

    /// Runs `work` on this thread while another samples the GPU every interval (once at
    /// least), and returns what `work` returned with what the samples and the energy counter
    /// say of that stretch. The sampler stops when `work` returns or unwinds.
    pub fn watch<T>(&self, work: impl FnOnce() -> T) -> (T, Watch) {
        let Ok(device) = self.device() else {
            // Found when opened: lost since (the GPU fell off the bus, say). The work runs
            // unwatched; the watch says nothing was read.
            let start = Instant::now();
            let out = work();
            return (out, Watch::from_samples(&[], start.elapsed(), None));
        };
        let energy = || device.total_energy_consumption().ok();
        let stop = AtomicBool::new(false);
        let start_energy = energy();
        let start = Instant::now();
        let (out, samples) = std::thread::scope(|scope| {
            let sampler = scope.spawn(|| {
                let mut samples = Vec::new();
                loop {
                    if let Some(s) = sample(&device) {
                        samples.push(s);
                    }
                    if stop.load(Ordering::Acquire) {
                        return samples;
                    }
                    std::thread::sleep(self.interval);
                }
            });
            // Stops the sampler however `work` ends: the scope joins it before returning
            // (or unwinding), so it must not loop forever.
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Release);
                }
            }
            let stopping = Stop(&stop);
            let out = work();
            drop(stopping);
            (out, sampler.join().unwrap_or_default())
        });
        let elapsed = start.elapsed();
        let energy_mj = match (start_energy, energy()) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        };
        (out, Watch::from_samples(&samples, elapsed, energy_mj))
    }
}

/// One reading; `None` if the clock could not be read.
fn sample(device: &Device<'_>) -> Option<Sample> {
    let sm_mhz = device.clock_info(Clock::SM).ok()?;
    let reasons = device.current_throttle_reasons().ok();
    let any = |r: ThrottleReasons| reasons.is_some_and(|x| x.intersects(r));
    Some(Sample {
        sm_mhz,
        power_capped: any(ThrottleReasons::SW_POWER_CAP
            | ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN
            | ThrottleReasons::HW_SLOWDOWN),
        thermal: any(ThrottleReasons::SW_THERMAL_SLOWDOWN | ThrottleReasons::HW_THERMAL_SLOWDOWN),
    })
}

/// A GPU's clock and power ceilings ([`GpuMonitor::limits`]).
///
/// ```no_run
/// use std::time::Duration;
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let mut gpu = gpu_runtime::Gpu::open(MODULES)?;
/// gpu.enable_monitor(Duration::from_millis(1))?;
/// let limits = gpu.monitor().expect("enabled above").limits();
/// if let (Some(now), Some(max)) = (limits.sm_mhz_now, limits.sm_mhz_max) {
///     println!("SM clock {now} of {max} MHz, power limit {:?} W", limits.power_limit_w);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    /// The SM clock when read, MHz.
    pub sm_mhz_now: Option<u32>,
    /// The highest SM clock, MHz.
    pub sm_mhz_max: Option<u32>,
    /// The power limit the board enforces, watts.
    pub power_limit_w: Option<f64>,
}

/// One reading of the GPU.
///
/// ```
/// use gpu_runtime::monitor::{Sample, Watch};
/// use std::time::Duration;
/// let capped = Sample { sm_mhz: 1755, power_capped: true, thermal: false };
/// let free = Sample { sm_mhz: 1980, power_capped: false, thermal: false };
/// let watch = Watch::from_samples(&[capped, free], Duration::from_millis(10), None);
/// assert_eq!(watch.power_capped, Some(0.5));
/// assert_eq!((watch.sm_mhz_min, watch.sm_mhz_max), (Some(1755), Some(1980)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The SM clock, MHz.
    pub sm_mhz: u32,
    /// The clock was held down by power: the software power cap, or the hardware's power
    /// brake or slowdown.
    pub power_capped: bool,
    /// The clock was held down by temperature.
    pub thermal: bool,
}

/// What a [`GpuMonitor`] saw over one stretch of work: `None` where nothing was read.
///
/// ```
/// use gpu_runtime::monitor::{Sample, Watch};
/// use std::time::Duration;
/// let sample = Sample { sm_mhz: 1500, power_capped: true, thermal: false };
/// // Two seconds at 1.5 GHz, the energy counter 1.4 kJ further.
/// let watch = Watch::from_samples(&[sample; 4], Duration::from_secs(2), Some(1_400_000));
/// assert_eq!((watch.sm_mhz_mean, watch.power_w), (Some(1500.0), Some(700.0)));
/// // 150 TFLOP/s on 100 SMs at 1.5 GHz: 1000 FLOP per SM cycle.
/// assert_eq!(watch.work_per_sm_cycle(150e12, 100), Some(1000.0));
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Watch {
    /// Wall time of the stretch, seconds.
    pub seconds: f64,
    /// Samples taken.
    pub samples: u32,
    /// Mean SM clock over the samples, MHz.
    pub sm_mhz_mean: Option<f64>,
    /// Lowest sampled SM clock, MHz.
    pub sm_mhz_min: Option<u32>,
    /// Highest sampled SM clock, MHz.
    pub sm_mhz_max: Option<u32>,
    /// Share of the samples in which power held the clock down (0 to 1).
    pub power_capped: Option<f64>,
    /// Share of the samples in which temperature held the clock down (0 to 1).
    pub thermal: Option<f64>,
    /// Energy the board drew over the stretch, joules (the counter's difference; `None` if
    /// it could not be read or did not move).
    pub energy_j: Option<f64>,
    /// Mean board power over the stretch, watts (`energy_j / seconds`).
    pub power_w: Option<f64>,
}

impl Watch {
    /// Sums up `samples` over a stretch of `elapsed` in which the energy counter moved by
    /// `energy_mj`.
    pub fn from_samples(samples: &[Sample], elapsed: Duration, energy_mj: Option<u64>) -> Watch {
        let count = samples.len();
        let share = |f: fn(&Sample) -> bool| {
            (count > 0).then(|| samples.iter().filter(|s| f(s)).count() as f64 / count as f64)
        };
        let seconds = elapsed.as_secs_f64();
        let energy_j = energy_mj.filter(|&mj| mj > 0).map(|mj| mj as f64 / 1e3);
        Watch {
            seconds,
            samples: count as u32,
            sm_mhz_mean: (count > 0)
                .then(|| samples.iter().map(|s| s.sm_mhz as f64).sum::<f64>() / count as f64),
            sm_mhz_min: samples.iter().map(|s| s.sm_mhz).min(),
            sm_mhz_max: samples.iter().map(|s| s.sm_mhz).max(),
            power_capped: share(|s| s.power_capped),
            thermal: share(|s| s.thermal),
            energy_j,
            power_w: energy_j.filter(|_| seconds > 0.0).map(|j| j / seconds),
        }
    }

    /// Work per SM cycle: `work_per_second` (FLOP/s, say) over the cycles `multiprocessors`
    /// SMs run per second at the mean clock — what the code does per cycle, whatever clock
    /// the power limit allowed. `None` without a clock.
    pub fn work_per_sm_cycle(&self, work_per_second: f64, multiprocessors: u32) -> Option<f64> {
        let hz = self.sm_mhz_mean.filter(|&mhz| mhz > 0.0)? * 1e6;
        (multiprocessors > 0).then(|| work_per_second / (hz * multiprocessors as f64))
    }
}

/// The UUID NVML names a GPU by (`GPU-` and the 16 bytes in hex, grouped 4-2-2-2-6), from the
/// bytes the CUDA driver gives (`cuDeviceGetUuid`).
pub fn nvml_uuid(bytes: [u8; 16]) -> String {
    let hex = |range: std::ops::Range<usize>| {
        bytes[range]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_is_spelled_as_nvml_does() {
        let bytes = [
            0x8e, 0x4a, 0x1b, 0x02, 0x3c, 0x5d, 0x6e, 0x7f, 0x80, 0x91, 0xa2, 0xb3, 0xc4, 0xd5,
            0xe6, 0xf7,
        ];
        assert_eq!(nvml_uuid(bytes), "GPU-8e4a1b02-3c5d-6e7f-8091-a2b3c4d5e6f7");
    }

    #[test]
    fn a_watch_sums_its_samples() {
        let s = |sm_mhz, power_capped, thermal| Sample {
            sm_mhz,
            power_capped,
            thermal,
        };
        let samples = [
            s(1980, false, false),
            s(1755, true, false),
            s(1620, true, true),
            s(1645, true, false),
        ];
        let w = Watch::from_samples(&samples, Duration::from_millis(500), Some(350_000));
        assert_eq!(w.samples, 4);
        assert_eq!(w.sm_mhz_mean, Some(1750.0));
        assert_eq!((w.sm_mhz_min, w.sm_mhz_max), (Some(1620), Some(1980)));
        assert_eq!((w.power_capped, w.thermal), (Some(0.75), Some(0.25)));
        assert_eq!(w.energy_j, Some(350.0));
        assert_eq!(w.power_w, Some(700.0));
        // 700 TFLOP/s on 132 SMs at 1.75 GHz: 3030 FLOP per SM cycle (of 4096 at peak).
        let per_cycle = w.work_per_sm_cycle(700e12, 132).unwrap();
        assert!((per_cycle - 3030.3).abs() < 0.1, "{per_cycle}");
    }

    #[test]
    fn a_watch_with_nothing_read_says_so() {
        let w = Watch::from_samples(&[], Duration::from_millis(3), Some(0));
        assert_eq!(w.samples, 0);
        assert_eq!(w.sm_mhz_mean, None);
        assert_eq!((w.sm_mhz_min, w.sm_mhz_max), (None, None));
        assert_eq!((w.power_capped, w.thermal), (None, None));
        // A counter that did not move says nothing about the power.
        assert_eq!((w.energy_j, w.power_w), (None, None));
        assert_eq!(w.work_per_sm_cycle(1e12, 132), None);
    }

    /// A stand-in for `libnvidia-ml.so.1`: one GPU, its SM clock at 1755 MHz (of 1980) and
    /// held by the power cap (700 W), its energy counter 250 mJ further at each reading.
    const FAKE_NVML: &str = r#"
        static int device;
        static unsigned long long energy = 1000000;
        int nvmlInit_v2(void) { return 0; }
        int nvmlShutdown(void) { return 0; }
        const char *nvmlErrorString(int r) { (void)r; return "fake NVML error"; }
        int nvmlDeviceGetHandleByUUID(const char *uuid, void **d) {
            const char *known = "GPU-00112233-4455-6677-8899-aabbccddeeff";
            for (int i = 0; known[i] || uuid[i]; i++) if (known[i] != uuid[i]) return 6;
            *d = &device; return 0;
        }
        int nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz) {
            (void)d; if (type != 1) return 2; *mhz = 1755; return 0;
        }
        int nvmlDeviceGetCurrentClocksThrottleReasons(void *d, unsigned long long *r) {
            (void)d; *r = 4; return 0;
        }
        int nvmlDeviceGetMaxClockInfo(void *d, int type, unsigned *mhz) {
            (void)d; if (type != 1) return 2; *mhz = 1980; return 0;
        }
        int nvmlDeviceGetEnforcedPowerLimit(void *d, unsigned *mw) {
            (void)d; *mw = 700000; return 0;
        }
        int nvmlDeviceGetTotalEnergyConsumption(void *d, unsigned long long *mj) {
            (void)d; energy += 250; *mj = energy; return 0;
        }
    "#;

    /// [`FAKE_NVML`] built with the C compiler (`cc`; CI's machine has one) into a temporary
    /// folder.
    fn fake_nvml() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("fake-nvml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (source, library) = (dir.join("nvml.c"), dir.join("libnvidia-ml.so.1"));
        std::fs::write(&source, FAKE_NVML).unwrap();
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&library)
            .arg(&source)
            .status()
            .expect("this test builds a stand-in NVML with `cc`: install a C compiler");
        assert!(status.success(), "cc failed on the stand-in NVML");
        library
    }

    #[test]
    fn a_watch_reads_the_clock_the_reasons_and_the_energy() {
        let library = fake_nvml();
        let uuid = nvml_uuid([
            0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff,
        ]);
        let open = |uuid: &str| {
            GpuMonitor::open_library(Some(library.as_os_str()), uuid.into(), MIN_INTERVAL)
        };
        let unknown = open("GPU-ffffffff-0000-0000-0000-000000000000").unwrap_err();
        assert!(
            unknown.to_string().contains("no GPU GPU-ffffffff"),
            "{unknown}"
        );
        let monitor = open(&uuid).unwrap();
        let limits = Limits {
            sm_mhz_now: Some(1755),
            sm_mhz_max: Some(1980),
            power_limit_w: Some(700.0),
        };
        assert_eq!(monitor.limits(), limits);
        // Each watch runs on a thread of its own, so that a sampler that never stops fails
        // this test instead of hanging it.
        let (tx, rx) = std::sync::mpsc::channel();
        let (unwound_tx, unwound_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let watched = monitor.watch(|| {
                std::thread::sleep(Duration::from_millis(20));
                7
            });
            tx.send(watched).unwrap();
            // Work that unwinds stops the sampler too: the watch unwinds rather than waiting
            // for a thread that never stops.
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                monitor.watch(|| panic!("the work failed"))
            }));
            unwound_tx.send(unwound.is_err()).unwrap();
        });
        let limit = Duration::from_secs(20);
        let (out, w) = rx.recv_timeout(limit).expect("the watch returned");
        assert_eq!(out, 7);
        assert!(w.samples >= 2 && w.seconds >= 0.02, "{w:?}");
        assert_eq!(w.sm_mhz_mean, Some(1755.0));
        assert_eq!((w.power_capped, w.thermal), (Some(1.0), Some(0.0)));
        // Read before and after: one step of the counter.
        assert_eq!(w.energy_j, Some(0.25));
        let unwound = unwound_rx
            .recv_timeout(limit)
            .expect("the unwinding watch returned");
        assert!(unwound, "the work's panic was not passed on");
        std::fs::remove_dir_all(library.parent().unwrap()).unwrap();
    }

    #[test]
    fn too_short_an_interval_is_refused() {
        let e = GpuMonitor::open("GPU-0".into(), Duration::from_micros(10)).unwrap_err();
        assert!(e.to_string().contains("below the shortest"), "{e}");
    }

    #[test]
    fn no_library_is_a_clear_refusal() {
        // On a machine without the driver (CI) the library is missing; with one, the made-up
        // UUID is not found. Either way a one-line refusal naming NVML, never a panic.
        let e = GpuMonitor::open(
            "GPU-00000000-0000-0000-0000-000000000000".into(),
            MIN_INTERVAL,
        )
        .unwrap_err();
        assert!(e.to_string().contains("NVML"), "{e}");
    }
}
