//! `cargo bench`: one criterion benchmark per experiment of every workload, from the same
//! registry `host run` uses, at each workload's default sizes (`BENCH_SIZE_<WORKLOAD>`, e.g.
//! `BENCH_SIZE_STUDY=4096`, to change them). Each iteration is one launch, timed with CUDA
//! events (the GPU's own clock), after the experiment has been checked once. On a machine
//! without a usable GPU it says so in one line and exits successfully.

use criterion::Criterion;
use gpu_runtime::Gpu;
use harness::experiment::{Inputs, Outcome, Timing, Values, fresh_seed};
use host::registry::{AnyWorkload, WORKLOADS};
use std::time::Duration;

/// The sizes to benchmark `workload` at: `BENCH_SIZE_<NAME>` if set (sizes separated by
/// spaces, e.g. `BENCH_SIZE_GEMM="4096 8192,64,8192"`), else its defaults.
fn sizes(workload: &dyn AnyWorkload) -> Vec<String> {
    let var = format!("BENCH_SIZE_{}", workload.name().to_uppercase());
    std::env::var(var)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn bench_workload(c: &mut Criterion, gpu: &Gpu, workload: &'static dyn AnyWorkload) {
    let plan = match workload.plan(&sizes(workload)) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("benches: {}: {e}", workload.name());
            return;
        }
    };
    let inputs = Inputs {
        seed: fresh_seed(),
        values: Values::Random,
    };
    for index in 0..plan.sizes().len() {
        let mut problem = plan
            .prepare(gpu, index, inputs)
            .unwrap_or_else(|e| panic!("{}: {e:#}", workload.name()));
        let mut group = c.benchmark_group(format!("{} {}", workload.name(), problem.size()));
        for experiment in problem.experiments() {
            let name = experiment.name();
            // A benchmark of a wrong kernel is meaningless: check it once first.
            let checked = problem
                .measure(gpu, experiment, Timing::CHECK_ONLY, &mut || {})
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert!(!checked.failed(), "{name}: {}", checked.check_summary());
            if let Outcome::Unavailable(reason) = &checked.outcome {
                eprintln!("benches: {name} skipped: {reason}");
                continue;
            }
            group.bench_function(name, |b| {
                // Checked above: each sample only launches and times.
                b.iter_custom(|iters| {
                    let times_ms = problem
                        .time(gpu, experiment, iters.max(1) as u32)
                        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
                    Duration::from_secs_f64(times_ms.iter().sum::<f64>() / 1e3)
                })
            });
        }
        group.finish();
    }
}

fn main() {
    let gpu = match host::device_code::open_gpu(None) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("benches: skipped: {e}");
            return;
        }
    };
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .configure_from_args();
    for &workload in WORKLOADS {
        bench_workload(&mut c, &gpu, workload);
    }
    c.final_summary();
}
