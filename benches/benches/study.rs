//! `cargo bench -p benches`: one criterion benchmark per study experiment, from the same
//! registry `host run` uses. Each iteration is one kernel launch, timed with CUDA events (the
//! GPU's own clock, not the host's), at K = 65536 by default (`STUDY_BENCH_K` to change it).
//! On a machine without a usable GPU it says so and exits successfully.

use criterion::Criterion;
use host::device::Gpu;
use host::study::{self, Inputs};
use std::time::Duration;

fn bench_k() -> u32 {
    std::env::var("STUDY_BENCH_K")
        .ok()
        .and_then(|k| k.parse().ok())
        .and_then(|k| study::validate_k(k).ok())
        .unwrap_or(65536)
}

fn experiments(c: &mut Criterion, gpu: &Gpu) {
    let k = bench_k();
    let inputs = Inputs::random(k, study::fresh_seed());
    let reference = inputs.reference();
    let mut m = match study::upload(&inputs) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("benches: skipped: {e:#}");
            return;
        }
    };
    let mut group = c.benchmark_group(format!("study_k{k}"));
    for kernel in study::experiments() {
        // A benchmark of a wrong kernel is meaningless: check it once first.
        match study::run_checked(
            gpu,
            kernel,
            &mut m,
            &reference,
            host::check::Tolerance::F32_DOT,
        ) {
            Ok(report) if report.passed => {}
            Ok(report) => panic!("{} failed verification: {}", kernel.name, report.summary()),
            Err(e) => panic!("{}: {e:#}", kernel.name),
        }
        group.bench_function(kernel.name, |b| {
            b.iter_custom(|iters| {
                let timing = study::Timing {
                    warmup: 1,
                    reps: iters.max(1) as u32,
                };
                let measured = study::measure(gpu, kernel, &mut m, &reference, timing, || {})
                    .unwrap_or_else(|e| panic!("{}: {e:#}", kernel.name));
                Duration::from_secs_f64(measured.times_ms.iter().sum::<f64>() / 1e3)
            })
        });
    }
    group.finish();
}

fn main() {
    let gpu = match Gpu::open() {
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
    experiments(&mut c, &gpu);
    c.final_summary();
}
