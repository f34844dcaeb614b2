//! The study's experiments: the registry (from `gpu::study::STUDY_KERNELS`, the same table
//! the device entry points come from), inputs, the f64 reference, launching and timing.

use crate::check::{self, CheckReport, POISON, Tolerance};
use crate::device::{CudaContext, DeviceError, Gpu};
use anyhow::{Context as _, Result, bail, ensure};
use cust::event::{Event, EventFlags};
use cust::launch;
use cust::memory::{CopyDestination, DeviceBuffer};
use rand::{Rng, SeedableRng};
use serde::Serialize;

pub use gpu::study::{M, MAX_K, N, STUDY_KERNELS, SharedLayout, StudyKernel, Style};

/// The experiment registry: every study kernel, baseline first.
pub fn experiments() -> &'static [StudyKernel] {
    STUDY_KERNELS
}

/// The synchronous baseline every speedup is measured against.
pub fn baseline() -> &'static StudyKernel {
    experiments()
        .iter()
        .find(|k| k.style == Style::SyncBaseline)
        .expect("the registry has a baseline")
}

/// The raw-PTX kernel a library kernel is compared with (same stages), if any.
pub fn raw_counterpart(kernel: &StudyKernel) -> Option<&'static StudyKernel> {
    let raw = kernel.style.raw_counterpart()?;
    experiments()
        .iter()
        .find(|k| k.style == raw && k.stages == kernel.stages)
}

/// The experiments named in `names` (all of them if empty), in registry order; an unknown
/// name is an error that lists the known ones.
pub fn select(names: &[String]) -> Result<Vec<&'static StudyKernel>> {
    for name in names {
        if gpu::study::find(name).is_none() {
            let known: Vec<&str> = experiments().iter().map(|k| k.name).collect();
            bail!("unknown experiment `{name}`; known: {}", known.join(", "));
        }
    }
    Ok(experiments()
        .iter()
        .filter(|k| names.is_empty() || names.iter().any(|n| n == k.name))
        .collect())
}

/// Checks a K from the command line: every kernel takes any K in `1..=MAX_K`.
pub fn validate_k(k: u32) -> Result<u32> {
    ensure!(k >= 1, "K must be at least 1");
    ensure!(
        k <= MAX_K,
        "K = {k} is too large: at most {MAX_K} (A and B are then 512 MiB each)"
    );
    Ok(k)
}

/// A and B of one run, row-major.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub k: u32,
    /// 32 x K.
    pub a: Vec<f32>,
    /// K x 32.
    pub b: Vec<f32>,
}

impl Inputs {
    /// Uniform random values in [-1, 1).
    pub fn random(k: u32, seed: u64) -> Inputs {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut fill =
            |len: usize| -> Vec<f32> { (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect() };
        let a = fill(M as usize * k as usize);
        let b = fill(k as usize * N as usize);
        Inputs { k, a, b }
    }

    /// Random small integers in [-8, 8]: every product and partial sum is exact in f32 up to
    /// K = 2^18, so a correct kernel matches the reference bit for bit and a single missing
    /// or repeated step shows.
    pub fn random_integers(k: u32, seed: u64) -> Inputs {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut fill = |len: usize| -> Vec<f32> {
            (0..len).map(|_| rng.gen_range(-8i32..=8) as f32).collect()
        };
        let a = fill(M as usize * k as usize);
        let b = fill(k as usize * N as usize);
        Inputs { k, a, b }
    }

    /// `C = A * B` in f64, row-major 32 x 32.
    pub fn reference(&self) -> Vec<f64> {
        let k = self.k as usize;
        let mut c = vec![0.0f64; (M * N) as usize];
        for i in 0..M as usize {
            let row = &self.a[i * k..(i + 1) * k];
            let out = &mut c[i * N as usize..(i + 1) * N as usize];
            for (step, &a) in row.iter().enumerate() {
                let b = &self.b[step * N as usize..(step + 1) * N as usize];
                for (o, &b) in out.iter_mut().zip(b) {
                    *o += a as f64 * b as f64;
                }
            }
        }
        c
    }
}

/// The matrices on the GPU.
pub struct DeviceMatrices {
    pub k: u32,
    pub a: DeviceBuffer<f32>,
    pub b: DeviceBuffer<f32>,
    pub c: DeviceBuffer<f32>,
}

impl DeviceMatrices {
    pub fn upload(inputs: &Inputs) -> Result<DeviceMatrices, DeviceError> {
        Ok(DeviceMatrices {
            k: inputs.k,
            a: DeviceBuffer::from_slice(&inputs.a).during(|| "copying A to the GPU".into())?,
            b: DeviceBuffer::from_slice(&inputs.b).during(|| "copying B to the GPU".into())?,
            c: DeviceBuffer::from_slice(&[POISON; (M * N) as usize])
                .during(|| "allocating C".into())?,
        })
    }

    /// Fills C with [`POISON`].
    pub fn poison_c(&mut self) -> Result<(), DeviceError> {
        self.c
            .copy_from(&[POISON; (M * N) as usize][..])
            .during(|| "poisoning C".into())
    }

    pub fn download_c(&self) -> Result<Vec<f32>, DeviceError> {
        let mut c = vec![0.0f32; (M * N) as usize];
        self.c
            .copy_to(&mut c[..])
            .during(|| "copying C back".into())?;
        Ok(c)
    }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub blocks: u32,
    pub threads: u32,
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// What the registry says `kernel` needs: one block, its threads, its shared memory.
    pub fn of(kernel: &StudyKernel) -> LaunchConfig {
        LaunchConfig {
            blocks: 1,
            threads: kernel.threads(),
            shared_bytes: kernel.shared().bytes,
        }
    }
}

/// Enqueues one launch of `kernel` on the GPU's stream.
pub fn launch(gpu: &Gpu, kernel: &StudyKernel, m: &DeviceMatrices) -> Result<(), DeviceError> {
    launch_with(gpu, kernel.name, LaunchConfig::of(kernel), m)
}

/// Enqueues one launch of the study kernel `name` with an explicit configuration.
pub fn launch_with(
    gpu: &Gpu,
    name: &str,
    config: LaunchConfig,
    m: &DeviceMatrices,
) -> Result<(), DeviceError> {
    let function = gpu.function(name)?;
    let stream = gpu.stream();
    let (a, b, c, k) = (
        m.a.as_device_ptr(),
        m.b.as_device_ptr(),
        m.c.as_device_ptr(),
        m.k,
    );
    let LaunchConfig {
        blocks,
        threads,
        shared_bytes,
    } = config;
    // SAFETY: study kernels take (a: *const f32, b: *const f32, c: *mut f32, k: u32) and read
    // 32*k, k*32 and write 32*32 floats, which the buffers hold.
    unsafe { launch!(function<<<blocks, threads, shared_bytes, stream>>>(a, b, c, k)) }
        .during(|| format!("launching `{name}`"))
}

/// Runs `kernel` once on poisoned C and returns C.
pub fn run_once(gpu: &Gpu, kernel: &StudyKernel, m: &mut DeviceMatrices) -> Result<Vec<f32>> {
    m.poison_c()?;
    launch(gpu, kernel, m)?;
    gpu.synchronize(|| format!("running `{}`", kernel.name))?;
    Ok(m.download_c()?)
}

/// Runs `kernel` once on poisoned C and checks the result.
pub fn run_checked(
    gpu: &Gpu,
    kernel: &StudyKernel,
    m: &mut DeviceMatrices,
    reference: &[f64],
    tol: Tolerance,
) -> Result<CheckReport> {
    Ok(check::check(&run_once(gpu, kernel, m)?, reference, tol))
}

/// How to time.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Timing {
    /// Untimed launches first (module load, clocks, caches).
    pub warmup: u32,
    /// Timed launches; the median is reported.
    pub reps: u32,
}

/// One experiment's result.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub name: &'static str,
    pub style: String,
    pub stages: u32,
    pub threads: u32,
    pub shared_bytes: u32,
    /// Each timed launch, in milliseconds (CUDA events).
    pub times_ms: Vec<f64>,
    pub median_ms: f64,
    pub min_ms: f64,
    /// The first launch, on poisoned C.
    pub check: CheckReport,
    /// The last timed launch's output.
    pub check_after_timing: CheckReport,
}

impl Measurement {
    pub fn passed(&self) -> bool {
        self.check.passed && self.check_after_timing.passed
    }

    /// Steps per microsecond (one step = one k: 2 x 32 floats moved, 32x32 FMAs).
    pub fn steps_per_us(&self, k: u32) -> f64 {
        k as f64 / (self.median_ms * 1e3)
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

/// Checks `kernel` on poisoned C (its first warm-up launch), finishes the warm-up, times
/// `timing.reps` launches with CUDA events, and checks the last output again. `progress` is
/// called after each launch.
pub fn measure(
    gpu: &Gpu,
    kernel: &'static StudyKernel,
    m: &mut DeviceMatrices,
    reference: &[f64],
    timing: Timing,
    mut progress: impl FnMut(),
) -> Result<Measurement> {
    ensure!(timing.reps >= 1, "reps must be at least 1");
    let check = run_checked(gpu, kernel, m, reference, Tolerance::F32_DOT)?;
    progress();
    for _ in 1..timing.warmup {
        launch(gpu, kernel, m)?;
        gpu.synchronize(|| format!("warming up `{}`", kernel.name))?;
        progress();
    }
    let start = Event::new(EventFlags::DEFAULT).during(|| "creating an event".into())?;
    let stop = Event::new(EventFlags::DEFAULT).during(|| "creating an event".into())?;
    let mut times_ms = Vec::with_capacity(timing.reps as usize);
    for _ in 0..timing.reps {
        start
            .record(gpu.stream())
            .during(|| "recording an event".into())?;
        launch(gpu, kernel, m)?;
        stop.record(gpu.stream())
            .during(|| "recording an event".into())?;
        stop.synchronize()
            .during(|| format!("running `{}`", kernel.name))?;
        let ms = stop
            .elapsed_time_f32(&start)
            .during(|| "reading an event timer".into())?;
        times_ms.push(ms as f64);
        progress();
    }
    let check_after_timing = check::check(&m.download_c()?, reference, Tolerance::F32_DOT);
    let median_ms = median(&times_ms);
    let min_ms = times_ms.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(Measurement {
        name: kernel.name,
        style: format!("{:?}", kernel.style),
        stages: kernel.stages,
        threads: kernel.threads(),
        shared_bytes: kernel.shared().bytes,
        times_ms,
        median_ms,
        min_ms,
        check,
        check_after_timing,
    })
}

/// Speedup of `m` over the baseline's median time, if the baseline was measured.
pub fn speedup(m: &Measurement, all: &[Measurement]) -> Option<f64> {
    let base = all.iter().find(|x| x.name == baseline().name)?;
    Some(base.median_ms / m.median_ms)
}

/// Time of `m`'s raw-PTX counterpart over `m`'s (above 1: the library style is faster), if
/// both were measured.
pub fn versus_raw(m: &Measurement, all: &[Measurement]) -> Option<f64> {
    let kernel = gpu::study::find(m.name)?;
    let raw = raw_counterpart(kernel)?;
    let raw = all.iter().find(|x| x.name == raw.name)?;
    Some(raw.median_ms / m.median_ms)
}

/// A seed for [`Inputs`] that differs from run to run (clock and process id).
pub fn fresh_seed() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    (nanos as u64) ^ ((nanos >> 64) as u64) ^ (std::process::id() as u64).rotate_left(32)
}

/// Checks that `inputs` has a valid K and matrices of the matching sizes.
pub fn check_inputs(inputs: &Inputs) -> Result<()> {
    validate_k(inputs.k)?;
    ensure!(
        inputs.a.len() == (M * inputs.k) as usize && inputs.b.len() == (inputs.k * N) as usize,
        "A must be 32 x K and B K x 32"
    );
    Ok(())
}

/// Checks `inputs` and copies them to the GPU (C poisoned).
pub fn upload(inputs: &Inputs) -> Result<DeviceMatrices> {
    check_inputs(inputs)?;
    DeviceMatrices::upload(inputs).context("preparing the study's matrices")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_has_every_style() {
        for style in [
            Style::SyncBaseline,
            Style::RawAsyncGroup,
            Style::RawMbarrier,
            Style::Barrier,
            Style::ThreadPipeline,
            Style::BlockPipeline,
            Style::WarpSpecialized,
        ] {
            assert!(experiments().iter().any(|k| k.style == style), "{style:?}");
        }
        assert_eq!(experiments()[0].name, "sync_baseline");
    }

    #[test]
    fn pipelined_styles_come_in_two_three_and_four_stages() {
        for k in experiments()
            .iter()
            .filter(|k| k.style != Style::SyncBaseline)
        {
            for stages in 2..=4 {
                assert!(
                    experiments()
                        .iter()
                        .any(|o| o.style == k.style && o.stages == stages),
                    "{:?} {stages}",
                    k.style
                );
            }
        }
    }

    #[test]
    fn raw_counterparts_resolve() {
        let tp = gpu::study::find("thread_pipeline_3").unwrap();
        assert_eq!(raw_counterpart(tp).unwrap().name, "raw_async_group_3");
        let bp = gpu::study::find("block_pipeline_2").unwrap();
        assert_eq!(raw_counterpart(bp).unwrap().name, "raw_mbarrier_2");
        assert!(raw_counterpart(baseline()).is_none());
    }

    #[test]
    fn selecting_names() {
        assert_eq!(select(&[]).unwrap().len(), experiments().len());
        let picked = select(&["block_pipeline_2".into(), "sync_baseline".into()]).unwrap();
        let names: Vec<_> = picked.iter().map(|k| k.name).collect();
        assert_eq!(names, ["sync_baseline", "block_pipeline_2"]);
        let err = select(&["pingpong".into()]).unwrap_err().to_string();
        assert!(err.contains("unknown experiment `pingpong`"), "{err}");
        assert!(err.contains("block_pipeline_2"), "{err}");
    }

    #[test]
    fn k_bounds() {
        assert!(
            validate_k(0)
                .unwrap_err()
                .to_string()
                .contains("at least 1")
        );
        assert_eq!(validate_k(1).unwrap(), 1);
        assert_eq!(validate_k(65536).unwrap(), 65536);
        assert_eq!(validate_k(MAX_K).unwrap(), MAX_K);
        assert!(validate_k(MAX_K + 1).is_err());
    }

    #[test]
    fn reference_multiplies() {
        // A = [i + 1 in row i, k-th column scaled by k+1], B = 1 / (j + 1): checks layout.
        let k = 3u32;
        let a: Vec<f32> = (0..M * k)
            .map(|x| (x / k + 1) as f32 * (x % k + 1) as f32)
            .collect();
        let b: Vec<f32> = (0..k * N).map(|x| (x % N + 1) as f32).collect();
        let c = Inputs { k, a, b }.reference();
        // C[i][j] = sum_k (i+1)(k+1)(j+1) = (i+1)(j+1) * 6
        for i in 0..M as usize {
            for j in 0..N as usize {
                assert_eq!(c[i * 32 + j], ((i + 1) * (j + 1) * 6) as f64);
            }
        }
    }

    #[test]
    fn inputs_are_random_and_sized() {
        let x = Inputs::random(100, 1);
        let y = Inputs::random(100, 2);
        assert_eq!(x.a.len(), 3200);
        assert_eq!(x.b.len(), 3200);
        assert_ne!(x.a, y.a);
        assert!(x.a.iter().all(|v| (-1.0..1.0).contains(v)));
        let ints = Inputs::random_integers(100, 3);
        assert!(ints.b.iter().all(|v| v.fract() == 0.0 && v.abs() <= 8.0));
        check_inputs(&x).unwrap();
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
