//! Tests that need a CUDA GPU (sm_80+). CI has none, so they are ignored there; run them with
//! `cargo test -p host --release -- --include-ignored` on a machine with a GPU.

use host::experiment::{Inputs, Timing, fresh_seed};
use host::gpu::{Gpu, LaunchConfig};
use host::registry::{Selection, WORKLOADS};
use host::workloads::study::{K, Study, StudyProblem};
use ptx_builder::Arch;

fn gpu() -> Gpu {
    Gpu::open().unwrap_or_else(|e| panic!("{e}"))
}

/// The GPU once per PTX module it can run: on an sm_90 GPU both the sm_80 PTX (test_wait
/// loops) and the sm_90 PTX (try_wait) are exercised.
fn gpus() -> Vec<Gpu> {
    let native = gpu();
    let mut all = vec![];
    if native.info().arch == Arch::Sm90 {
        all.push(Gpu::open_with(Some(Arch::Sm80)).unwrap_or_else(|e| panic!("{e}")));
    }
    all.push(native);
    all
}

/// Every experiment of every workload, at each of the workload's test sizes, with each PTX
/// module the GPU takes, on fresh inputs: random values checked against the reference's
/// tolerance, small integers checked bit for bit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_experiment_of_every_workload_verifies() {
    for gpu in gpus() {
        let arch = gpu.info().arch;
        for workload in WORKLOADS {
            for (values, plan) in workload.test_plans() {
                let inputs = Inputs {
                    seed: fresh_seed(),
                    values,
                };
                let results = plan
                    .run(
                        &gpu,
                        &Selection::all(),
                        inputs,
                        Timing::CHECK_ONLY,
                        &mut |_| {},
                    )
                    .unwrap_or_else(|e| panic!("{} ({arch}): {e:#}", workload.name()));
                for problem in results {
                    for m in &problem.measurements {
                        assert!(
                            m.passed(),
                            "{} ({arch}) at {} with {values:?} (seed {}): {}",
                            m.experiment.name(),
                            problem.size,
                            inputs.seed,
                            m.check_summary()
                        );
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_failed_launch_is_an_error_naming_the_kernel() {
    use host::experiment::{Problem, Values, Workload};
    let gpu = gpu();
    let inputs = Inputs {
        seed: fresh_seed(),
        values: Values::Random,
    };
    let mut problem = Study.prepare(&gpu, K(8), inputs).unwrap();
    let kernel = &gpu::workloads::study::STUDY_KERNELS[0];
    // More threads than a block may have: the driver refuses the launch.
    let config = LaunchConfig {
        threads: 4096,
        ..StudyProblem::launch_config(kernel)
    };
    let err = format!(
        "{:#}",
        problem.launch_with(&gpu, kernel, config).unwrap_err()
    );
    assert!(err.starts_with("launching `sync_baseline`"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    // A kernel that is not in the module.
    // SAFETY: the launch is refused before anything runs: there is no such kernel.
    let err = unsafe { gpu.launch("no_such_kernel", config, &[]) }
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such_kernel"), "{err}");
    // The context is still usable afterwards.
    problem.launch(&gpu, kernel).unwrap();
    gpu.synchronize(|| "after a refused launch".into()).unwrap();
    assert!(problem.check(&gpu, kernel).unwrap().passed);
}
