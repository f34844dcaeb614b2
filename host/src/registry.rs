//! The registry: every workload, behind one object-safe face ([`AnyWorkload`]), so `run`,
//! `list`, `inspect`, `selftest`, the report, the GPU tests and the benchmarks walk one list.
//!
//! Adding a workload: its folder in `workloads/src/` (shapes and kernels for both sides, its
//! `host.rs` implementing [`Workload`]), then one line in [`WORKLOADS`].

use anyhow::{Context as _, Result};
use gpu_runtime::Gpu;
use harness::check::CheckReport;
use harness::experiment::{
    Experiment, Fault, Inputs, Measurement, Problem, Role, Timing, Values, Work, Workload,
    check_with_fault, measure, same, time_launches,
};

/// Every workload; `host run` without `--workload` runs the first.
pub static WORKLOADS: &[&dyn AnyWorkload] = &[
    &workloads::study::host::Study,
    &workloads::gemm::host::Gemm,
    &workloads::gemm16::host::Gemm16Workload,
    &workloads::attention::host::AttentionWorkload,
    &workloads::stream::host::Stream,
    &workloads::dsmem::host::DsmemLatency,
    &workloads::dsmem::host::DsmemBandwidth,
    &workloads::selftest::host::Selftest,
];

/// Workloads' former names, with their names now: commands in stored runs and older docs
/// keep working.
pub const RENAMED: &[(&str, &str)] = &[("bf16-gemm", "gemm16")];

/// The workload called `name` (or formerly so: [`RENAMED`]), or an error listing the known
/// ones.
pub fn find(name: &str) -> Result<&'static dyn AnyWorkload, String> {
    let name = RENAMED
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new);
    WORKLOADS
        .iter()
        .copied()
        .find(|w| w.name() == name)
        .ok_or_else(|| {
            let known: Vec<&str> = WORKLOADS.iter().map(|w| w.name()).collect();
            format!("unknown workload `{name}`; known: {}", known.join(", "))
        })
}

/// Every experiment of every workload, with its workload.
pub fn all_experiments() -> impl Iterator<Item = (&'static dyn AnyWorkload, &'static dyn Experiment)>
{
    WORKLOADS
        .iter()
        .flat_map(|&w| w.experiments().into_iter().map(move |e| (w, e)))
}

/// A workload with its types erased.
pub trait AnyWorkload: Sync {
    fn name(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    /// What `--size` takes, in words.
    fn size_syntax(&self) -> &'static str;
    fn experiments(&self) -> Vec<&'static dyn Experiment>;
    /// Its baselines (the reference rows; the fastest on each problem is compared with).
    fn baselines(&self) -> Vec<&'static dyn Experiment> {
        self.experiments()
            .into_iter()
            .filter(|e| e.role() == Role::Baseline)
            .collect()
    }
    /// Kernels its problems launch besides the experiments (references, say).
    fn helper_kernels(&self) -> &'static [&'static str];
    /// The PTX modules that hold helper kernel `name`.
    fn helper_kernel_archs(&self, name: &str) -> &'static [ptx_builder::Arch];
    /// The helper kernels that run inside an experiment's timed launches (a padding copy,
    /// say): measured with it, so fingerprinted with it.
    fn timed_helper_kernels(&self) -> &'static [&'static str];
    /// Parses `sizes` (the defaults when empty) into a plan, or says which one is wrong.
    fn plan(&'static self, sizes: &[String]) -> Result<Box<dyn Plan>, String>;
    /// The plans the GPU tests run, with the inputs each is checked on.
    fn test_plans(&'static self) -> Vec<(Values, Box<dyn Plan>)>;
}

/// Some sizes of one workload, ready to run.
pub trait Plan {
    /// The sizes, as printed.
    fn sizes(&self) -> Vec<String>;
    /// Launches [`Plan::run`] makes with `selection` and `timing`, for a progress bar.
    fn launches(&self, selection: &Selection, timing: Timing) -> u64;
    /// Prepares the problem of size `index` (inputs on the GPU, reference, outputs).
    fn prepare(&self, gpu: &Gpu, index: usize, inputs: Inputs) -> Result<Box<dyn Prepared>>;

    /// Runs, checks and times every selected experiment at every size. After Ctrl-C it
    /// stops at the next launch boundary and returns what finished, marked interrupted.
    fn run(
        &self,
        gpu: &Gpu,
        selection: &Selection,
        inputs: Inputs,
        timing: Timing,
        progress: &mut dyn FnMut(&str),
    ) -> Result<RunOutcome> {
        let mut outcome = RunOutcome::default();
        for index in 0..self.sizes().len() {
            let mut problem = self.prepare(gpu, index, inputs)?;
            let mut measurements = Vec::new();
            for experiment in problem.experiments() {
                if !selection.includes(experiment) {
                    continue;
                }
                let name = experiment.name();
                match problem.measure(gpu, experiment, timing, &mut || progress(name)) {
                    Ok(m) => measurements.push(m),
                    Err(e) if harness::interrupt::is_interruption(&e) => {
                        outcome.interrupted = true;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            if !measurements.is_empty() {
                outcome.results.push(ProblemResult {
                    workload: problem.workload(),
                    size: problem.size(),
                    work: problem.work(),
                    measurements,
                });
            }
            if outcome.interrupted {
                break;
            }
        }
        Ok(outcome)
    }
}

/// What a run finished.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    /// Every problem with at least one experiment measured.
    pub results: Vec<ProblemResult>,
    /// Whether Ctrl-C stopped the run before the end.
    pub interrupted: bool,
}

/// A problem of one size, prepared on the GPU, that any of its workload's experiments can be
/// measured on, again and again.
pub trait Prepared {
    fn workload(&self) -> &'static str;
    fn size(&self) -> String;
    /// What one launch computes or moves.
    fn work(&self) -> Work;
    /// The workload's experiments, in report order.
    fn experiments(&self) -> Vec<&'static dyn Experiment>;
    /// Runs, checks and times `experiment` (one of [`Prepared::experiments`]).
    fn measure(
        &mut self,
        gpu: &Gpu,
        experiment: &'static dyn Experiment,
        timing: Timing,
        progress: &mut dyn FnMut(),
    ) -> Result<Measurement>;
    /// Times `reps` launches of `experiment`, unchecked: for a caller that has measured it
    /// once (benchmarks' repeated samples).
    fn time(
        &mut self,
        gpu: &Gpu,
        experiment: &'static dyn Experiment,
        reps: u32,
    ) -> Result<Vec<f64>>;
    /// Launches `experiment` once, plants `fault` in its output and checks it: the index the
    /// fault is at and the check's report, or `None` if it cannot run here
    /// ([`check_with_fault`]).
    fn check_with_fault(
        &mut self,
        gpu: &Gpu,
        experiment: &'static dyn Experiment,
        fault: Fault,
    ) -> Result<Option<(usize, CheckReport)>>;
}

/// One workload at one size: what a launch does, and every selected experiment's result.
#[derive(Clone, Debug)]
pub struct ProblemResult {
    pub workload: &'static str,
    pub size: String,
    pub work: Work,
    pub measurements: Vec<Measurement>,
}

/// The experiments a run is limited to (`--only`), resolved once against the registry.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    only: Option<Vec<&'static dyn Experiment>>,
}

impl Selection {
    /// Every experiment.
    pub fn all() -> Selection {
        Selection { only: None }
    }

    /// The experiments of `workload` named in `names` (all if empty), plus its baseline so
    /// the comparisons have their reference; an unknown name is an error listing the known.
    pub fn resolve(workload: &dyn AnyWorkload, names: &[String]) -> Result<Selection, String> {
        if names.is_empty() {
            return Ok(Selection::all());
        }
        let experiments = workload.experiments();
        let mut picked: Vec<&'static dyn Experiment> = workload.baselines();
        for name in names {
            let found = experiments
                .iter()
                .find(|e| e.name() == name)
                .ok_or_else(|| {
                    let known: Vec<&str> = experiments.iter().map(|e| e.name()).collect();
                    format!(
                        "unknown experiment `{name}` in workload `{}`; known: {}",
                        workload.name(),
                        known.join(", ")
                    )
                })?;
            picked.push(*found);
        }
        Ok(Selection { only: Some(picked) })
    }

    /// Whether `experiment` is selected.
    pub fn includes(&self, experiment: &dyn Experiment) -> bool {
        match &self.only {
            None => true,
            Some(picked) => picked.iter().any(|p| same(*p, experiment)),
        }
    }
}

impl<W: Workload> AnyWorkload for W {
    fn name(&self) -> &'static str {
        Workload::name(self)
    }

    fn summary(&self) -> &'static str {
        Workload::summary(self)
    }

    fn size_syntax(&self) -> &'static str {
        Workload::size_syntax(self)
    }

    fn helper_kernels(&self) -> &'static [&'static str] {
        Workload::helper_kernels(self)
    }

    fn helper_kernel_archs(&self, name: &str) -> &'static [ptx_builder::Arch] {
        Workload::helper_kernel_archs(self, name)
    }

    fn timed_helper_kernels(&self) -> &'static [&'static str] {
        Workload::timed_helper_kernels(self)
    }

    fn experiments(&self) -> Vec<&'static dyn Experiment> {
        Workload::experiments(self)
            .iter()
            .map(|e| e as &'static dyn Experiment)
            .collect()
    }

    fn plan(&'static self, sizes: &[String]) -> Result<Box<dyn Plan>, String> {
        let sizes = if sizes.is_empty() {
            self.default_sizes()
        } else {
            sizes
                .iter()
                .map(|s| self.parse_size(s))
                .collect::<Result<_, _>>()?
        };
        Ok(Box::new(TypedPlan {
            workload: self,
            sizes,
        }))
    }

    fn test_plans(&'static self) -> Vec<(Values, Box<dyn Plan>)> {
        self.test_cases()
            .into_iter()
            .map(|(values, size)| {
                let plan: Box<dyn Plan> = Box::new(TypedPlan {
                    workload: self,
                    sizes: vec![size],
                });
                (values, plan)
            })
            .collect()
    }
}

/// A [`Plan`] with its workload's types.
struct TypedPlan<W: Workload> {
    workload: &'static W,
    sizes: Vec<W::Size>,
}

impl<W: Workload> Plan for TypedPlan<W> {
    fn sizes(&self) -> Vec<String> {
        self.sizes.iter().map(ToString::to_string).collect()
    }

    fn launches(&self, selection: &Selection, timing: Timing) -> u64 {
        let selected = Workload::experiments(self.workload)
            .iter()
            .filter(|e| selection.includes(*e))
            .count();
        self.sizes.len() as u64 * selected as u64 * timing.launches()
    }

    fn prepare(&self, gpu: &Gpu, index: usize, inputs: Inputs) -> Result<Box<dyn Prepared>> {
        let size = self.sizes[index];
        let workload = self.workload;
        gpu.ensure_free_memory(
            workload.device_bytes(size),
            &format!("{} at {size}", Workload::name(workload)),
        )?;
        let problem = workload
            .prepare(gpu, size, inputs)
            .with_context(|| format!("preparing {} at {size}", Workload::name(workload)))?;
        Ok(Box::new(TypedPrepared {
            workload,
            size,
            problem,
        }))
    }
}

/// A [`Prepared`] with its workload's types.
struct TypedPrepared<W: Workload> {
    workload: &'static W,
    size: W::Size,
    problem: W::Problem,
}

impl<W: Workload> Prepared for TypedPrepared<W> {
    fn workload(&self) -> &'static str {
        Workload::name(self.workload)
    }

    fn size(&self) -> String {
        self.size.to_string()
    }

    fn work(&self) -> Work {
        self.problem.work()
    }

    fn experiments(&self) -> Vec<&'static dyn Experiment> {
        AnyWorkload::experiments(self.workload)
    }

    fn measure(
        &mut self,
        gpu: &Gpu,
        experiment: &'static dyn Experiment,
        timing: Timing,
        progress: &mut dyn FnMut(),
    ) -> Result<Measurement> {
        let typed = self.typed(experiment)?;
        measure(gpu, &mut self.problem, typed, timing, progress)
            .with_context(|| format!("{} at {}", self.workload(), self.size))
    }

    fn time(
        &mut self,
        gpu: &Gpu,
        experiment: &'static dyn Experiment,
        reps: u32,
    ) -> Result<Vec<f64>> {
        let typed = self.typed(experiment)?;
        time_launches(gpu, &mut self.problem, typed, reps, &mut || {})
            .with_context(|| format!("{} at {}", self.workload(), self.size))
    }

    fn check_with_fault(
        &mut self,
        gpu: &Gpu,
        experiment: &'static dyn Experiment,
        fault: Fault,
    ) -> Result<Option<(usize, CheckReport)>> {
        let typed = self.typed(experiment)?;
        check_with_fault(gpu, &mut self.problem, typed, fault)
            .with_context(|| format!("{} at {}", self.workload(), self.size))
    }
}

impl<W: Workload> TypedPrepared<W> {
    /// The typed entry `experiment` points to (identity, not name).
    fn typed(&self, experiment: &'static dyn Experiment) -> Result<&'static W::Experiment> {
        Workload::experiments(self.workload)
            .iter()
            .find(|e| same(*e, experiment))
            .with_context(|| {
                format!(
                    "`{}` is not an experiment of {}",
                    experiment.name(),
                    self.workload()
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloads::study::STUDY_KERNELS;
    use workloads::study::host::Study;

    #[test]
    fn selecting_names_resolves_once_and_keeps_the_baseline() {
        let picked = Selection::resolve(&Study, &["block_pipeline_2".into()]).unwrap();
        let included: Vec<&str> = STUDY_KERNELS
            .iter()
            .filter(|k| picked.includes(*k))
            .map(|k| k.name)
            .collect();
        assert_eq!(included, ["sync_baseline", "block_pipeline_2"]);
        let err = Selection::resolve(&Study, &["pingpong".into()]).unwrap_err();
        assert!(err.contains("unknown experiment `pingpong`"), "{err}");
        assert!(err.contains("block_pipeline_2"), "{err}");
        assert!(Selection::all().includes(&STUDY_KERNELS[3]));
    }
}
