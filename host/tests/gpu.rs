//! Tests that need a CUDA GPU (sm_80+). CI has none, so they are ignored there; run them with
//! `cargo test -p host --release -- --include-ignored` on a machine with a GPU.

use gpu_runtime::{Gpu, LaunchConfig};
use harness::experiment::{Inputs, Timing, Values, fresh_seed};
use host::registry::{Selection, WORKLOADS};
use ptx_builder::Arch;
use workloads::study::host::{K, Study, StudyProblem};

fn gpu() -> Gpu {
    host::device_code::open_gpu(None).unwrap_or_else(|e| panic!("{e}"))
}

/// The GPU once per PTX module it can run: on an sm_90 GPU both the sm_80 PTX (test_wait
/// loops) and the sm_90 PTX (try_wait) are exercised.
fn gpus() -> Vec<Gpu> {
    let native = gpu();
    let mut all = vec![];
    if native.info().arch == Arch::Sm90 {
        all.push(host::device_code::open_gpu(Some(Arch::Sm80)).unwrap_or_else(|e| panic!("{e}")));
    }
    all.push(native);
    all
}

/// Every experiment of every workload, at each of the workload's test sizes, with each PTX
/// module the GPU takes, on fresh inputs: random values checked against the reference's
/// tolerance, small integers checked bit for bit. On compute capability 9.0 with its own
/// modules (the GPU the project is built for) every experiment must run: cuBLAS, cuBLASLt,
/// the sm_90a module and every kernel, unless the experiment is not defined at the test size
/// (a tensor map's alignment rule) — "missing" is a failure there, not a pass.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_experiment_of_every_workload_verifies() {
    use harness::experiment::{Outcome, Unavailable};
    for gpu in gpus() {
        let arch = gpu.info().arch;
        // The sm_80 module run on an H200 lacks the sm_90 kernels by design; the native one
        // lacks nothing (the sm_90a module loads beside it).
        let everything_must_run = gpu.info().compute_capability == (9, 0) && arch == Arch::Sm90;
        for workload in WORKLOADS {
            for (values, plan) in workload.test_plans() {
                let inputs = Inputs {
                    seed: fresh_seed(),
                    values,
                };
                let outcome = plan
                    .run(
                        &gpu,
                        &Selection::all(),
                        inputs,
                        Timing::CHECK_ONLY,
                        &mut |_| {},
                    )
                    .unwrap_or_else(|e| panic!("{} ({arch}): {e:#}", workload.name()));
                assert!(!outcome.interrupted);
                for problem in outcome.results {
                    for m in &problem.measurements {
                        if let Outcome::Unavailable(Unavailable::Missing(why)) = &m.outcome {
                            assert!(
                                !everything_must_run,
                                "{} ({arch}) at {}: must run on compute capability 9.0, but {why}",
                                m.experiment.name(),
                                problem.size,
                            );
                        }
                        assert!(
                            !m.failed(),
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
    use harness::experiment::{Problem, Values, Workload};
    let gpu = gpu();
    let inputs = Inputs {
        seed: fresh_seed(),
        values: Values::Random,
    };
    let mut problem = Study.prepare(&gpu, K(8), inputs).unwrap();
    let kernel = &workloads::study::STUDY_KERNELS[0];
    let entry = problem.resolve(&gpu, kernel).unwrap();
    // More threads than a block may have: the driver refuses the launch.
    let config = LaunchConfig {
        threads: 4096,
        ..StudyProblem::launch_config(kernel)
    };
    let err = format!(
        "{:#}",
        problem
            .launch_with(&gpu, kernel, &entry, config)
            .unwrap_err()
    );
    assert!(err.starts_with("launching `sync_baseline`"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    // A kernel that is not in the module is refused when it is resolved.
    let err = gpu
        .kernel::<()>("no_such_kernel")
        .err()
        .expect("no such kernel")
        .to_string();
    assert!(err.contains("no_such_kernel"), "{err}");
    // The context is still usable afterwards.
    problem.launch(&gpu, kernel, &entry).unwrap();
    gpu.synchronize(|| "after a refused launch".into()).unwrap();
    assert!(problem.check(&gpu, kernel).unwrap().passed);
}

/// The GPU's comparison (`workloads::verify`) and the CPU's (`harness::check`) agree on
/// outputs with faults planted in them — unwritten, NaN, infinite, slightly and grossly wrong
/// elements, an error near zero — and on a clean one: the same counts, first failure (index
/// and values) and verdict, norms equal to rounding; in each of the three rules (bit for bit
/// against a longer expected buffer too), with each PTX module.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_checks_agree_with_the_cpu_on_planted_faults() {
    use harness::check::{self, CheckReport, POISON, Tolerance};
    use workloads::verify::host::{Rule, Verifier};
    // More than two grid strides, so that threads walk several elements and tally more than
    // one failure each.
    let probe = gpu();
    let stride = (probe.info().multiprocessors
        * workloads::verify::VERIFY_BLOCKS_PER_SM
        * workloads::verify::VERIFY_THREADS) as usize;
    drop(probe);
    let n = 3 * stride + 17;
    let reference: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f64 / 37.0 - 13.0)
        .collect();
    let clean: Vec<f32> = reference.iter().map(|&r| r as f32).collect();
    let mut faulty = clean.clone();
    faulty[stride + 4321] = POISON;
    faulty[2 * stride + 4000] = f32::NAN;
    faulty[2 * stride + 4001] = f32::INFINITY;
    faulty[3999] += 0.5;
    faulty[stride + 3999] += 0.75; // the same thread's second failure
    faulty[1234] += 1e-6; // within the tolerance: not a failure
    let same = |gpu: &CheckReport, cpu: &CheckReport, what: &str| {
        assert_eq!(
            (gpu.unwritten, gpu.non_finite, gpu.wrong, gpu.passed),
            (cpu.unwritten, cpu.non_finite, cpu.wrong, cpu.passed),
            "{what}: GPU {} / CPU {}",
            gpu.summary(),
            cpu.summary()
        );
        let index = |r: &CheckReport| {
            r.first_failure
                .as_ref()
                .map(|m| (m.index, m.got, m.expected))
        };
        let (g, c) = (index(gpu), index(cpu));
        assert_eq!(g.map(|x| x.0), c.map(|x| x.0), "{what}: first failure");
        if let (Some(g), Some(c)) = (g, c) {
            assert!(
                g.1.to_bits() == c.1.to_bits() || (g.1.is_nan() && c.1.is_nan()),
                "{what}"
            );
            assert_eq!(g.2, c.2, "{what}");
        }
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-30);
        assert!(close(gpu.norm_rel_err, cpu.norm_rel_err), "{what}: norm");
        assert!(close(gpu.max_scaled_err, cpu.max_scaled_err), "{what}: max");
    };
    for gpu in gpus() {
        let arch = gpu.info().arch;
        let mut verifier = Verifier::new(&gpu).unwrap();
        let reference_device = gpu.upload(&reference, "reference").unwrap();
        let scale = verifier.reference_scale(&gpu, &reference_device).unwrap();
        let tolerance = Tolerance::f32_dot(64);
        for (name, out) in [("clean", &clean), ("faulty", &faulty)] {
            let out_device = gpu.upload(out, "out").unwrap();
            let cpu = check::check(out, &reference, tolerance);
            let on_gpu = verifier
                .against_reference(
                    &gpu,
                    &out_device,
                    &reference_device,
                    scale,
                    Rule::Tolerance(tolerance),
                )
                .unwrap();
            same(&on_gpu, &cpu, &format!("{arch} {name} tolerance"));
            let cpu = check::check_exact_against(out, &reference);
            let on_gpu = verifier
                .against_reference(&gpu, &out_device, &reference_device, scale, Rule::Exact)
                .unwrap();
            same(&on_gpu, &cpu, &format!("{arch} {name} exact"));
            // Against a longer expected buffer (a prefix of it is compared): the selftest's case.
            let mut longer = clean.clone();
            longer.extend([0.0f32; 77]);
            let expected_device = gpu.upload(&longer, "expected").unwrap();
            let cpu = check::check_exact(out, &clean);
            let on_gpu = verifier.bits(&gpu, &out_device, &expected_device).unwrap();
            same(&on_gpu, &cpu, &format!("{arch} {name} bits"));
        }
        // The faults were seen (the comparison is not vacuous).
        let faulty_device = gpu.upload(&faulty, "out").unwrap();
        let report = verifier
            .against_reference(
                &gpu,
                &faulty_device,
                &reference_device,
                scale,
                Rule::Tolerance(tolerance),
            )
            .unwrap();
        assert_eq!(
            (report.unwritten, report.non_finite, report.wrong),
            (1, 2, 2),
            "{}",
            report.summary()
        );
        assert_eq!(report.first_failure.unwrap().index, 3999);
    }
}

/// The `host` binary: beside this test binary's folder (`target/release/host` for
/// `target/release/deps/gpu-*`), beside the test binary itself (a copy of both in one folder
/// on a GPU machine), or where cargo built it.
fn host_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe.parent().expect("a folder");
    [dir.join("host"), dir.join("../host")]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_host").into())
}

/// Runs `host selftest FLAG --timeout 2s` and checks the watchdog's report: exit status 1, one
/// line, the limit, and `names` (the launch as the record shows it), within 20 s.
fn assert_hang_reported(flag: &str, names: &str) {
    let start = std::time::Instant::now();
    let out = std::process::Command::new(host_binary())
        .args(["selftest", flag, "--timeout", "2s"])
        .output()
        .expect("host runs");
    let elapsed = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("did not finish within 2s"), "{stderr}");
    assert!(stderr.contains(names), "{stderr}");
    assert!(
        elapsed < std::time::Duration::from_secs(20),
        "took {elapsed:?}"
    );
    eprintln!("{flag}: reported after {elapsed:?}");
}

/// The watchdog: a kernel that waits forever is reported in one line naming it, within its
/// limit, with exit status 1 — and the GPU works again for the next process.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_hung_kernel_is_reported_within_its_limit() {
    assert_hang_reported(
        "--hang",
        "`hang_missing_arrival` (1 x 1 blocks of 32 threads",
    );
    // The next process gets a working GPU.
    let out = std::process::Command::new(host_binary())
        .args([
            "run",
            "--k",
            "64",
            "--reps",
            "1",
            "--warmup",
            "1",
            "--only",
            "raw_async_group_2",
        ])
        .output()
        .expect("host runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The watchdog on clusters: a cluster whose blocks wait for each other is reported in one
/// line naming the kernel and its cluster shape, within its limit, with exit status 1.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_deadlocked_cluster_is_reported_within_its_limit() {
    assert_hang_reported(
        "--hang-cluster",
        "`dsmem_hang_cluster` (2 x 1 blocks in clusters of 2 x 1 x 1 of 32 threads",
    );
}

/// Work that does not fit the GPU's memory is refused before anything is allocated.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_problem_too_large_for_the_gpu_is_refused_in_one_line() {
    let out = std::process::Command::new(host_binary())
        .args(["run", "--workload", "gemm", "--size", "131072x131072x16"])
        .output()
        .expect("host runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let last = stderr.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ") && last.contains("needs 192.02 GiB of device memory"),
        "{stderr}"
    );
    assert!(last.contains("GiB free"), "{stderr}");
}

/// Ctrl-C: the run stops at a launch boundary, prints what finished, exits with 130.
#[test]
#[ignore = "needs a CUDA GPU"]
fn ctrl_c_stops_at_a_launch_boundary_and_reports_what_finished() {
    let dir = std::env::temp_dir().join(format!("ctrl-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let child = std::process::Command::new(host_binary())
        .args([
            "run",
            "--workload",
            "gemm",
            "--size",
            "4096",
            "--reps",
            "800",
            "--json",
        ])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("host runs");
    // Long enough for cuBLAS's row to finish on a GPU machine that was just started (and
    // busy with the other GPU tests running in parallel): a 6 s wait failed once there;
    // the whole run takes about a minute, so the signal still lands mid-run.
    std::thread::sleep(std::time::Duration::from_secs(15));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(stderr.contains("interrupted:"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("cublas_sgemm"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["interrupted"], true);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Each workload's own check fails on a fault planted in what an experiment wrote, naming
/// it: one element given a wrong value, and separately one tile (as the kernel writes them)
/// put back to the poison, planted on the GPU between the launch and the check — for every
/// experiment, library calls included (the check is the workload's, whoever wrote the
/// output), at every test size. The first failure must be the planted element (the tile's
/// first), so a check that reads the wrong buffer, or only part of the output, fails here;
/// the sizes past one tile put the planted element away from element 0.
#[test]
#[ignore = "needs a CUDA GPU"]
fn each_workload_check_fails_on_a_planted_fault_and_names_it() {
    use harness::experiment::Fault;
    let gpu = gpu();
    let info = gpu.info();
    let loaded: Vec<Arch> = std::iter::once(info.arch)
        .chain(info.specific.map(|(arch, _)| arch))
        .collect();
    for workload in WORKLOADS {
        let (mut ran, mut unavailable) = (0, 0);
        for (values, plan) in workload.test_plans() {
            let inputs = Inputs {
                seed: fresh_seed(),
                values,
            };
            let mut problem = plan
                .prepare(&gpu, 0, inputs)
                .unwrap_or_else(|e| panic!("{}: {e:#}", workload.name()));
            let size = problem.size();
            for experiment in problem.experiments() {
                for fault in [Fault::WrongElement, Fault::UnwrittenTile] {
                    let what = format!(
                        "{} at {size} with {values:?} (seed {}): {} with {fault:?}",
                        workload.name(),
                        inputs.seed,
                        experiment.name()
                    );
                    let Some((index, report)) = problem
                        .check_with_fault(&gpu, experiment, fault)
                        .unwrap_or_else(|e| panic!("{what}: {e:#}"))
                    else {
                        unavailable += 1;
                        continue;
                    };
                    ran += 1;
                    assert!(!report.passed, "{what}: passed: {}", report.summary());
                    assert_eq!(
                        report.first_failure.as_ref().map(|m| m.index),
                        Some(index),
                        "{what}: the fault is at [{index}]: {}",
                        report.summary()
                    );
                }
            }
        }
        eprintln!(
            "{}: {ran} planted faults failed the check, {unavailable} not run here",
            workload.name()
        );
        // Only a workload none of whose experiments the loaded modules hold (the sm_90-only
        // DSMEM workloads on an sm_80 GPU) may run nothing.
        let runs_here = workload
            .experiments()
            .iter()
            .any(|e| e.archs().iter().any(|arch| loaded.contains(arch)));
        assert!(
            ran > 0 || !runs_here,
            "{}: no experiment ran on {}",
            workload.name(),
            info.code_label()
        );
    }
}

/// The attention check against kernels that go wrong as the issue lists: a dropped block of
/// keys, a wrong mask, a wrong log-sum-exp (one row off, or all in the wrong base) — each must
/// fail it, for every kernel of the table that the size runs, random and exact inputs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_check_fails_on_a_dropped_block_a_wrong_mask_and_a_wrong_lse() {
    use harness::experiment::{Problem, Workload};
    use workloads::attention::host::{AttentionWorkload, KernelFault};
    let gpu = gpu();
    assert_eq!(
        gpu.info().compute_capability,
        (9, 0),
        "the attention kernels need sm_90a"
    );
    let faults = [
        KernelFault::DroppedKeyBlock,
        KernelFault::WrongMask,
        KernelFault::WrongLse,
        KernelFault::Base2Lse,
    ];
    let mut caught = [0usize; 4];
    for (size, values) in [
        ("1x1000x2x128", Values::Random),
        ("1x1000x2x128", Values::SmallIntegers),
        ("2x300x4x64:causal", Values::Random),
        ("1x600x2x256:kv=700:hkv=1", Values::Random),
        ("1x300x2x64:kv=4096:causal", Values::SmallIntegers),
    ] {
        let inputs = Inputs {
            seed: fresh_seed(),
            values,
        };
        let size = size.parse().expect("a valid size");
        let mut problem = AttentionWorkload
            .prepare(&gpu, size, inputs)
            .unwrap_or_else(|e| panic!("{size}: {e:#}"));
        for experiment in AttentionWorkload.experiments() {
            if problem.unavailable(experiment).is_some() {
                continue;
            }
            for (f, fault) in faults.iter().enumerate() {
                let what = format!(
                    "{} at {size} with {values:?} (seed {}), {fault:?}",
                    experiment.0.name, inputs.seed
                );
                let Some(report) = problem
                    .check_with_kernel_fault(&gpu, experiment, *fault)
                    .unwrap_or_else(|e| panic!("{what}: {e:#}"))
                else {
                    continue;
                };
                assert!(!report.passed, "{what}: passed: {}", report.summary());
                caught[f] += 1;
            }
        }
    }
    eprintln!("attention: faults caught {caught:?} ({faults:?})");
    assert!(caught.iter().all(|&c| c > 0), "{caught:?}");
}
