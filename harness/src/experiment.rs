//! What a workload is made of — experiments, sizes, a problem that launches and checks them —
//! and [`measure`], the one path that runs, checks and times any experiment of any workload.
//!
//! A workload ([`Workload`]) lists its experiments (kernels, or a vendor library call such as
//! cuBLAS), parses its problem sizes, and prepares a [`Problem`] for a size: inputs on the GPU,
//! a reference, outputs to poison and check. [`measure`] then does the same for every
//! experiment: poison, launch, check (the first warm-up launch), warm up, time with CUDA
//! events, check again. The host program's registry erases the workload types so the
//! command line, the report, the GPU tests and the benchmarks walk one list.

use crate::check::CheckReport;
use anyhow::{Result, ensure};
use gpu_runtime::{Gpu, Watch};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// What an experiment is, for comparisons and for the plot's colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// What every other experiment of its workload is compared with (the study's synchronous
    /// kernel, cuBLAS).
    Baseline,
    /// Hand-written without the library's abstractions (inline PTX, plain loads): the
    /// yardstick of a library style.
    RawPtx,
    /// Built on the library's abstractions.
    Library,
}

/// One kernel (or library call) a workload runs, checks and times.
pub trait Experiment: Sync + 'static {
    /// Its name: the kernel's entry point, or what the library call is.
    fn name(&self) -> &'static str;
    fn role(&self) -> Role;
    /// The completion style, as its workload names it.
    fn style(&self) -> &'static str;
    /// Pipeline depth (buffers in the ring), where that means something.
    fn stages(&self) -> Option<u32>;
    /// Threads per block, for a kernel of ours.
    fn threads(&self) -> Option<u32>;
    /// Dynamic shared memory per block, for a kernel of ours.
    fn shared_bytes(&self) -> Option<u32>;
    /// One line on what it does.
    fn summary(&self) -> &'static str;
    /// The kernel entry points it launches (none for a library call): by default its name,
    /// if it is a kernel of ours.
    fn entry_points(&self) -> Vec<&'static str> {
        match self.threads() {
            Some(_) => vec![self.name()],
            None => Vec::new(),
        }
    }
    /// The PTX modules that hold its kernels (sm_90-only instructions: only the sm_90 one;
    /// `wgmma`: only sm_90a).
    fn archs(&self) -> &'static [ptx_builder::Arch] {
        &ptx_builder::Arch::PORTABLE
    }
    /// The raw-PTX experiment this library experiment must match in speed.
    fn counterpart(&self) -> Option<&'static dyn Experiment> {
        None
    }
}

impl fmt::Debug for dyn Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether two experiment references are the same registry entry.
pub fn same(a: &dyn Experiment, b: &dyn Experiment) -> bool {
    std::ptr::addr_eq(a as *const dyn Experiment, b as *const dyn Experiment)
}

/// The inputs a problem is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Values {
    /// Random floats (each workload says from which distribution).
    Random,
    /// Random small integers: every sum a kernel forms is exact in `f32`, so a correct kernel
    /// matches the reference bit for bit and any dropped, repeated or stale term shows.
    SmallIntegers,
}

impl Values {
    /// `len` values from `seed`: uniform in [-1, 1), or integers in [-8, 8].
    pub fn generate(self, len: usize, seed: u64) -> Vec<f32> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        match self {
            Values::Random => (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect(),
            Values::SmallIntegers => (0..len).map(|_| rng.gen_range(-8i32..=8) as f32).collect(),
        }
    }
}

/// What to make a problem's inputs from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Inputs {
    pub seed: u64,
    pub values: Values,
}

/// A seed that differs from run to run (clock and process id).
pub fn fresh_seed() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    (nanos as u64) ^ ((nanos >> 64) as u64) ^ (std::process::id() as u64).rotate_left(32)
}

/// What one launch of a problem computes or moves, for its throughput.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// Steps of a loop (the study: one k per step).
    Steps(u64),
    /// Floating-point operations (a GEMM: `2 M N K`).
    Flops(u64),
    /// Bytes read plus bytes written.
    Bytes(u64),
    /// Nothing that a rate says anything about (a functional test).
    None,
}

impl Work {
    /// How long one launch doing this work may take before the watchdog reports it: 10 s, plus
    /// the work at a rate far below any GPU this runs on (1 TFLOP/s, 10 GB/s, 20 us a step).
    pub fn time_limit(self) -> Duration {
        let extra = match self {
            Work::Steps(n) => n as f64 * 20e-6,
            Work::Flops(n) => n as f64 / 1e12,
            Work::Bytes(n) => n as f64 / 10e9,
            Work::None => 0.0,
        };
        Duration::from_secs(10) + Duration::from_secs_f64(extra)
    }

    /// The work one launch taking `ms` does per second, and the unit of the work (`FLOP`,
    /// `B`, `steps`).
    pub fn per_second(self, ms: f64) -> Option<(f64, &'static str)> {
        let s = ms / 1e3;
        match self {
            Work::Steps(n) => Some((n as f64 / s, "steps")),
            Work::Flops(n) => Some((n as f64 / s, "FLOP")),
            Work::Bytes(n) => Some((n as f64 / s, "B")),
            Work::None => None,
        }
    }

    /// The rate at which one launch taking `ms` does this work, and its unit.
    pub fn rate(self, ms: f64) -> Option<(f64, &'static str)> {
        let us = ms * 1e3;
        match self {
            Work::Steps(n) => Some((n as f64 / us, "steps/us")),
            Work::Flops(n) => Some((n as f64 / us / 1e6, "TFLOP/s")),
            Work::Bytes(n) => Some((n as f64 / us / 1e3, "GB/s")),
            Work::None => None,
        }
    }
}

/// A fault [`Problem::plant`] puts into an experiment's output, to show its check fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// One element, chosen by the problem, is given a wrong but finite value.
    WrongElement,
    /// One tile of the output (as the experiment's kernel writes it; a row or a slice for
    /// outputs without tiles) is put back to the poison, as if no block had written it.
    UnwrittenTile,
}

/// A problem of one size, prepared on the GPU for every experiment of its workload.
pub trait Problem<E> {
    /// Why `experiment` cannot run here (a library that is not installed, a size it is not
    /// defined at), if it cannot. Its row then says so, and the run goes on.
    fn unavailable(&self, _experiment: &E) -> Option<Unavailable> {
        None
    }
    /// Fills the outputs `experiment` writes with poison.
    fn poison(&mut self, gpu: &Gpu, experiment: &E) -> Result<()>;
    /// What the launches of one experiment use that is found once, before the first: its
    /// kernels resolved from the loaded module, typically.
    type Resolved;
    /// Finds what [`launch`](Self::launch) needs to run `experiment` (called once per
    /// experiment, after [`unavailable`](Self::unavailable) said it can run here).
    fn resolve(&self, gpu: &Gpu, experiment: &E) -> Result<Self::Resolved>;
    /// Queues one run of `experiment` on the GPU's stream, with what
    /// [`resolve`](Self::resolve) found for it.
    fn launch(&mut self, gpu: &Gpu, experiment: &E, resolved: &Self::Resolved) -> Result<()>;
    /// Downloads what `experiment` wrote and compares it with the reference.
    fn check(&mut self, gpu: &Gpu, experiment: &E) -> Result<CheckReport>;
    /// Plants `fault` in what the last launch of `experiment` wrote, on the GPU, so that a
    /// test can show that [`Problem::check`] fails on it: returns the index the check must
    /// name as its first failure. Called between a launch (synchronized) and the check.
    fn plant(&mut self, gpu: &Gpu, experiment: &E, fault: Fault) -> Result<usize>;
    /// What one launch computes or moves.
    fn work(&self) -> Work;
    /// A line on what the last launch of `experiment` measured besides its time (the
    /// cycles a kernel counted, say), read after the timed launches; none by default.
    fn note(
        &mut self,
        _gpu: &Gpu,
        _experiment: &E,
        _resolved: &Self::Resolved,
    ) -> Result<Option<String>> {
        Ok(None)
    }
}

/// A family of experiments on one kind of problem (see the module docs).
pub trait Workload: Sync + 'static {
    type Experiment: Experiment;
    type Size: Copy + fmt::Display + 'static;
    type Problem: Problem<Self::Experiment>;

    /// Its name on the command line (`--workload NAME`).
    fn name(&self) -> &'static str;
    /// One line on what it measures.
    fn summary(&self) -> &'static str;
    /// Every experiment, in report order (the baseline first).
    fn experiments(&self) -> &'static [Self::Experiment];
    /// Kernels its problems launch besides the experiments (references, say).
    fn helper_kernels(&self) -> &'static [&'static str] {
        &[]
    }
    /// The helper kernels (of [`Workload::helper_kernels`]) that run inside an experiment's
    /// timed launches, such as a padding copy: their code is part of what is measured.
    fn timed_helper_kernels(&self) -> &'static [&'static str] {
        &[]
    }
    /// The PTX modules that hold helper kernel `name` (sm_90-only instructions: only the
    /// sm_90 one); by default both portable ones.
    fn helper_kernel_archs(&self, _name: &str) -> &'static [ptx_builder::Arch] {
        &ptx_builder::Arch::PORTABLE
    }
    /// Device memory a problem of `size` allocates (inputs, outputs, references): checked
    /// against the GPU's free memory before anything is allocated.
    fn device_bytes(&self, size: Self::Size) -> u64;
    /// What `--size` takes, in words.
    fn size_syntax(&self) -> &'static str;
    /// Reads one `--size` value, or says why it is not one.
    fn parse_size(&self, text: &str) -> Result<Self::Size, String>;
    /// The sizes `host run` uses when none is given.
    fn default_sizes(&self) -> Vec<Self::Size>;
    /// The sizes and inputs the GPU tests check every experiment at.
    fn test_cases(&self) -> Vec<(Values, Self::Size)>;
    /// Builds the problem: inputs on the GPU, reference, outputs.
    fn prepare(&self, gpu: &Gpu, size: Self::Size, inputs: Inputs) -> Result<Self::Problem>;
}

/// The name of `workload`'s baseline: its first experiment whose role is
/// [`Role::Baseline`] ("none" if it has none).
pub fn baseline_of<W: Workload>(workload: &W) -> &'static str {
    workload
        .experiments()
        .iter()
        .find(|e| e.role() == Role::Baseline)
        .map_or("none", |e| e.name())
}

/// How to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// Untimed launches first (module load, clocks, caches); the first is checked.
    pub warmup: u32,
    /// Timed launches; the median is reported. 0: check only.
    pub reps: u32,
    /// How long one launch may run before the watchdog reports the GPU hung; `None`: a limit
    /// from the work the launch does ([`Work::time_limit`]).
    #[serde(serialize_with = "seconds")]
    pub limit: Option<Duration>,
}

fn seconds<S: serde::Serializer>(limit: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match limit {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

impl Timing {
    /// One checked launch, nothing timed, the watchdog's limit from the work.
    pub const CHECK_ONLY: Timing = Timing {
        warmup: 1,
        reps: 0,
        limit: None,
    };

    /// Launches of one experiment.
    pub fn launches(self) -> u64 {
        self.warmup as u64 + self.reps as u64
    }
}

/// Why an experiment did not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// It is not defined at this problem's size (a tensor map's row-alignment rule, say): a
    /// visible row anywhere, never a fault of the machine.
    AtThisSize(String),
    /// What it needs is missing here: a library (cuBLAS), a PTX module, the GPU's arch. On
    /// the GPU the project is built for (compute capability 9.0) nothing may be missing.
    Missing(String),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::AtThisSize(reason) | Unavailable::Missing(reason) => f.write_str(reason),
        }
    }
}

/// What running one experiment gave.
#[derive(Clone, Debug)]
// A measurement is made once per experiment and size: the size of the variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Outcome {
    /// It could not run here; why.
    Unavailable(Unavailable),
    /// It ran.
    Ran(Ran),
}

/// The checks and times of an experiment that ran.
#[derive(Clone, Debug, Serialize)]
pub struct Ran {
    /// The first launch, on poisoned output.
    pub check: CheckReport,
    /// Each timed launch, in milliseconds (CUDA events).
    pub times_ms: Vec<f64>,
    /// The last timed launch's output, when anything was timed.
    pub check_after_timing: Option<CheckReport>,
    /// What the problem measured besides the time ([`Problem::note`]).
    pub note: Option<String>,
    /// The GPU's clocks and power over the timed launches but the last (which is checked
    /// after, on poisoned output), where [`Gpu::enable_monitor`](gpu_runtime::Gpu::enable_monitor) was called and more than
    /// one launch was timed.
    pub watch: Option<LaunchesWatched>,
}

/// What the GPU's clocks and power did over a run of timed launches ([`Watch`]).
#[derive(Clone, Debug, Serialize)]
pub struct LaunchesWatched {
    /// The launches watched.
    pub launches: u32,
    #[serde(flatten)]
    pub watch: Watch,
}

impl LaunchesWatched {
    /// The energy each launch drew, joules (the board's, over the stretch, idle gaps between
    /// launches included).
    pub fn energy_per_launch_j(&self) -> Option<f64> {
        let joules = self.watch.energy_j?;
        (self.launches > 0).then(|| joules / self.launches as f64)
    }
}

/// One experiment's result on one problem.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub experiment: &'static dyn Experiment,
    pub outcome: Outcome,
}

impl Measurement {
    /// Whether it ran and every check passed: an experiment that could not run has not
    /// passed (see [`Measurement::failed`] for "no check failed").
    pub fn passed(&self) -> bool {
        match &self.outcome {
            Outcome::Unavailable(_) => false,
            Outcome::Ran(ran) => {
                ran.check.passed && ran.check_after_timing.as_ref().is_none_or(|c| c.passed)
            }
        }
    }

    /// Whether it ran and a check failed. An unavailable experiment has not failed: a run
    /// on a GPU that lacks what it needs reports it as a row and goes on.
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Ran(_)) && !self.passed()
    }

    /// The median time of the timed launches.
    pub fn median_ms(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Ran(ran) if !ran.times_ms.is_empty() => Some(median(&ran.times_ms)),
            _ => None,
        }
    }

    /// The fastest timed launch.
    pub fn min_ms(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Ran(ran) => ran.times_ms.iter().copied().reduce(f64::min),
            Outcome::Unavailable(_) => None,
        }
    }

    /// One line on the checks: "ok (...)", "FAILED: ...", or why it did not run.
    pub fn check_summary(&self) -> String {
        match &self.outcome {
            Outcome::Unavailable(why) => format!("unavailable: {why}"),
            Outcome::Ran(ran) => match &ran.check_after_timing {
                Some(after) if ran.check.passed && !after.passed => {
                    format!("after timing: {}", after.summary())
                }
                _ => ran.check.summary(),
            },
        }
    }
}

/// The median of `values` (mean of the two middle ones for an even count).
pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "median of nothing");
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// Runs `experiment` on `problem`: checks it on poisoned output (its first warm-up launch),
/// finishes the warm-up, times `timing.reps` launches with CUDA events, and checks the last
/// output again. `progress` is called after each launch.
pub fn measure<E: Experiment, P: Problem<E>>(
    gpu: &Gpu,
    problem: &mut P,
    experiment: &'static E,
    timing: Timing,
    progress: &mut dyn FnMut(),
) -> Result<Measurement> {
    ensure!(
        timing.warmup >= 1,
        "the first launch is the one checked: warm-up must be >= 1"
    );
    let _limit = gpu.time_limit_for(timing.limit.unwrap_or_else(|| problem.work().time_limit()));
    let info = gpu.info();
    let loaded = std::iter::once(info.arch).chain(info.specific.map(|(arch, _)| arch));
    let unavailable = if loaded
        .into_iter()
        .any(|arch| experiment.archs().contains(&arch))
    {
        problem.unavailable(experiment)
    } else {
        let needs: Vec<_> = experiment.archs().iter().map(|a| a.name()).collect();
        Some(Unavailable::Missing(format!(
            "needs {}; this is the {} code",
            needs.join(" or "),
            info.code_label()
        )))
    };
    if let Some(reason) = unavailable {
        for _ in 0..timing.launches() {
            progress();
        }
        return Ok(Measurement {
            experiment,
            outcome: Outcome::Unavailable(reason),
        });
    }
    let resolved = problem.resolve(gpu, experiment)?;
    // Ctrl-C stops at a launch boundary: before each launch, never inside one.
    let launch = |problem: &mut P| -> Result<()> {
        crate::interrupt::check()?;
        problem.launch(gpu, experiment, &resolved)
    };
    let name = experiment.name();
    problem.poison(gpu, experiment)?;
    launch(problem)?;
    gpu.synchronize(|| format!("running `{name}`"))?;
    let check = problem.check(gpu, experiment)?;
    progress();
    for _ in 1..timing.warmup {
        launch(problem)?;
        gpu.synchronize(|| format!("warming up `{name}`"))?;
        progress();
    }
    // The check after timing reads the last timed launch's output: poisoned again before it
    // (outside the timed region), so it proves the timed launches wrote the result rather
    // than finding the warm-up's.
    let reps_before_check = timing.reps.saturating_sub(1);
    let mut time_them = || {
        timed(
            gpu,
            problem,
            experiment,
            &resolved,
            reps_before_check,
            progress,
        )
    };
    let (times, watch) = match gpu.monitor().filter(|_| reps_before_check > 0) {
        Some(monitor) => {
            let (times, watch) = monitor.watch(time_them);
            let watched = LaunchesWatched {
                launches: reps_before_check,
                watch,
            };
            (times, Some(watched))
        }
        None => (time_them(), None),
    };
    let mut times_ms = times?;
    let check_after_timing = if timing.reps > 0 {
        problem.poison(gpu, experiment)?;
        times_ms.extend(timed(gpu, problem, experiment, &resolved, 1, progress)?);
        Some(problem.check(gpu, experiment)?)
    } else {
        None
    };
    let note = problem.note(gpu, experiment, &resolved)?;
    Ok(Measurement {
        experiment,
        outcome: Outcome::Ran(Ran {
            check,
            times_ms,
            check_after_timing,
            note,
            watch,
        }),
    })
}

/// Shows that `problem`'s check can fail: poisons, launches `experiment` once, plants `fault`
/// in its output ([`Problem::plant`]) and checks it. Returns the index the fault was planted
/// at and the check's report (which a sound check marks failed, naming that index first), or
/// `None` if the experiment cannot run here.
pub fn check_with_fault<E: Experiment, P: Problem<E>>(
    gpu: &Gpu,
    problem: &mut P,
    experiment: &'static E,
    fault: Fault,
) -> Result<Option<(usize, CheckReport)>> {
    let info = gpu.info();
    let loaded = std::iter::once(info.arch).chain(info.specific.map(|(arch, _)| arch));
    if !loaded
        .into_iter()
        .any(|arch| experiment.archs().contains(&arch))
        || problem.unavailable(experiment).is_some()
    {
        return Ok(None);
    }
    let _limit = gpu.time_limit_for(problem.work().time_limit());
    let resolved = problem.resolve(gpu, experiment)?;
    let name = experiment.name();
    problem.poison(gpu, experiment)?;
    problem.launch(gpu, experiment, &resolved)?;
    gpu.synchronize(|| format!("running `{name}`"))?;
    let index = problem.plant(gpu, experiment, fault)?;
    gpu.synchronize(|| format!("planting {fault:?} in `{name}`'s output"))?;
    Ok(Some((index, problem.check(gpu, experiment)?)))
}

/// Times `reps` launches of `experiment` with CUDA events, nothing else: no poisoning, no
/// checks (the caller has checked it, as [`measure`] does), each wait under the watchdog's
/// limit for the problem's work. Stops at a launch boundary on Ctrl-C. `progress` is called
/// after each launch.
pub fn time_launches<E: Experiment, P: Problem<E>>(
    gpu: &Gpu,
    problem: &mut P,
    experiment: &'static E,
    reps: u32,
    progress: &mut dyn FnMut(),
) -> Result<Vec<f64>> {
    let _limit = gpu.time_limit_for(problem.work().time_limit());
    let resolved = problem.resolve(gpu, experiment)?;
    timed(gpu, problem, experiment, &resolved, reps, progress)
}

/// [`time_launches`] under the caller's watchdog limit.
fn timed<E: Experiment, P: Problem<E>>(
    gpu: &Gpu,
    problem: &mut P,
    experiment: &'static E,
    resolved: &P::Resolved,
    reps: u32,
    progress: &mut dyn FnMut(),
) -> Result<Vec<f64>> {
    let mut times_ms = Vec::with_capacity(reps as usize);
    if reps > 0 {
        let timer = gpu.timer()?;
        for _ in 0..reps {
            times_ms.push(gpu.time(&timer, || {
                crate::interrupt::check()?;
                problem.launch(gpu, experiment, resolved)
            })?);
            progress();
        }
    }
    Ok(times_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn values_are_seeded_and_in_range() {
        let x = Values::Random.generate(1000, 1);
        assert_eq!(x, Values::Random.generate(1000, 1));
        assert_ne!(x, Values::Random.generate(1000, 2));
        assert!(x.iter().all(|v| (-1.0..1.0).contains(v)));
        let ints = Values::SmallIntegers.generate(1000, 3);
        assert!(ints.iter().all(|v| v.fract() == 0.0 && v.abs() <= 8.0));
        assert!(ints.iter().any(|&v| v != ints[0]));
    }

    #[test]
    fn watchdog_limits_grow_with_the_work() {
        assert_eq!(Work::None.time_limit(), Duration::from_secs(10));
        assert_eq!(Work::Flops(2 * 8192u64.pow(3)).time_limit().as_secs(), 11);
        assert_eq!(Work::Steps(1 << 22).time_limit().as_secs(), 93);
        assert_eq!(Work::Bytes(100 << 30).time_limit().as_secs(), 20);
    }

    #[test]
    fn rates_carry_their_unit() {
        assert_eq!(Work::Steps(65536).rate(1.0), Some((65.536, "steps/us")));
        let (tflops, unit) = Work::Flops(2 * 4096u64.pow(3)).rate(2.75).unwrap();
        assert_eq!(unit, "TFLOP/s");
        assert!((tflops - 49.98).abs() < 0.01, "{tflops}");
        let (gbps, unit) = Work::Bytes(4 << 30).rate(1.0).unwrap();
        assert_eq!(unit, "GB/s");
        assert!((gbps - 4294.97).abs() < 0.01, "{gbps}");
        assert_eq!(Work::None.rate(1.0), None);
    }

    #[test]
    fn work_per_second_carries_its_unit() {
        assert_eq!(Work::Flops(2_000_000).per_second(2.0), Some((1e9, "FLOP")));
        assert_eq!(Work::Bytes(4096).per_second(1.0), Some((4096e3, "B")));
        assert_eq!(Work::Steps(10).per_second(1000.0), Some((10.0, "steps")));
        assert_eq!(Work::None.per_second(1.0), None);
    }

    #[test]
    fn energy_per_launch_needs_launches_and_a_counter() {
        let watch = |energy_mj| {
            gpu_runtime::Watch::from_samples(&[], Duration::from_millis(100), energy_mj)
        };
        let watched = |launches, energy_mj| LaunchesWatched {
            launches,
            watch: watch(energy_mj),
        };
        assert_eq!(watched(20, Some(14_000)).energy_per_launch_j(), Some(0.7));
        assert_eq!(watched(0, Some(14_000)).energy_per_launch_j(), None);
        assert_eq!(watched(20, None).energy_per_launch_j(), None);
    }
}
