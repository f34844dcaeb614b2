//! Tests that need a CUDA GPU (sm_80+). CI has none, so they are ignored there; run them with
//! `cargo test -p host --release -- --include-ignored` on a machine with a GPU.

use gpu::study::StudyKernel;
use host::check::{self, CheckReport, Tolerance};
use host::copy_tests::{self, BARRIER_OPS_EXPECTED, COPY_TEST_KERNELS};
use host::device::Gpu;
use host::study::{self, DeviceMatrices, Inputs};
use xtask::Arch;

fn gpu() -> Gpu {
    Gpu::open().unwrap_or_else(|e| panic!("{e}"))
}

/// The GPU once per PTX module it can run: on an sm_90 GPU both the sm_80 PTX (test_wait
/// loops) and the sm_90 PTX (try_wait) are exercised.
fn gpus() -> Vec<Gpu> {
    let native = gpu();
    let mut all = vec![];
    if native.info().arch == Arch::Sm90.name() {
        all.push(Gpu::open_with(Some(Arch::Sm80)).unwrap_or_else(|e| panic!("{e}")));
    }
    all.push(native);
    all
}

fn seed() -> u64 {
    study::fresh_seed()
}

/// Runs every experiment with each PTX module the GPU takes, for each `k`, on fresh inputs
/// from `make_inputs(k, seed)`, and asserts that `check` (given the f64 reference) passes
/// what it computed.
fn check_every_experiment(
    ks: &[u32],
    make_inputs: impl Fn(u32, u64) -> Inputs,
    check: impl Fn(&Gpu, &StudyKernel, &mut DeviceMatrices, &[f64]) -> CheckReport,
) {
    for gpu in gpus() {
        let arch = gpu.info().arch.clone();
        for &k in ks {
            let seed = seed();
            let inputs = make_inputs(k, seed);
            let reference = inputs.reference();
            let mut m = study::upload(&inputs).unwrap();
            for kernel in study::experiments() {
                let report = check(&gpu, kernel, &mut m, &reference);
                assert!(
                    report.passed,
                    "{} ({arch}) at K = {k} (seed {seed}): {}",
                    kernel.name,
                    report.summary()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_experiment_verifies_at_two_k() {
    // 777: not a power of two, not a multiple of any stage count; 4096: a power of two.
    check_every_experiment(&[777, 4096], Inputs::random, |gpu, kernel, m, reference| {
        study::run_checked(gpu, kernel, m, reference, Tolerance::F32_DOT).unwrap()
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_experiment_is_exact_on_integer_inputs() {
    // Exact arithmetic: any dropped, repeated or stale step changes the result.
    check_every_experiment(
        &[1, 2, 3, 5, 65539],
        Inputs::random_integers,
        |gpu, kernel, m, reference| {
            let expected: Vec<f32> = reference.iter().map(|&x| x as f32).collect();
            check::check_exact(&study::run_once(gpu, kernel, m).unwrap(), &expected)
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_copy_kernel_moves_random_data_through_many_blocks() {
    for gpu in gpus() {
        let arch = gpu.info().arch.clone();
        let tile = gpu::copy_test::TILE_FLOATS as usize;
        let per_block = tile * gpu::copy_test::TILES_PER_BLOCK as usize;
        // 37 full blocks and a partial one; and 600 blocks, more than the GPU runs at once.
        let whole = 37 * per_block + 5 * tile;
        for kernel in COPY_TEST_KERNELS {
            let mut sizes = vec![whole, tile, 600 * per_block];
            if kernel.accepts_ragged() {
                sizes.extend([whole - 37, 1, tile - 1, tile + 1, 3 * per_block + 7]);
            }
            for n in sizes {
                let seed = seed();
                let src = copy_tests::random_input(n, seed);
                let report = copy_tests::run_and_check(&gpu, kernel, &src).unwrap();
                assert!(
                    report.passed,
                    "{} ({arch}) with n = {n} (seed {seed}): {}",
                    kernel.name,
                    report.summary()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn barrier_operations_behave_as_specified() {
    for gpu in gpus() {
        let arch = gpu.info().arch.clone();
        let observed = copy_tests::run_barrier_ops(&gpu).unwrap();
        for ((what, expected), got) in BARRIER_OPS_EXPECTED.iter().zip(&observed) {
            assert_eq!(got, expected, "{what} ({arch})");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_failed_launch_is_an_error_naming_the_kernel() {
    let gpu = gpu();
    let inputs = Inputs::random(8, seed());
    let m = study::upload(&inputs).unwrap();
    let kernel = study::baseline();
    // More threads than a block may have: the driver refuses the launch.
    let config = study::LaunchConfig {
        threads: 4096,
        ..study::LaunchConfig::of(kernel)
    };
    let err = study::launch_with(&gpu, kernel.name, config, &m)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("launching `sync_baseline`: "), "{err}");
    assert!(!err.contains('\n'), "{err}");
    // A kernel that is not in the module.
    let err = gpu.function("no_such_kernel").err().unwrap().to_string();
    assert!(err.contains("no_such_kernel"), "{err}");
    // The context is still usable afterwards.
    study::launch(&gpu, kernel, &m).unwrap();
    gpu.synchronize(|| "after a refused launch".into()).unwrap();
}
