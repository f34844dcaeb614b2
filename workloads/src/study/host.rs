//! The study ([`super`]): `C (32x32) = A (32xK) * B (Kx32)` on one block, every
//! completion style against the synchronous baseline, at a given K.

use super::{M, MAX_K, N, STUDY_KERNELS, StudyEntry, StudyKernel, Style, TENSOR_STEPS};
use anyhow::{Result, ensure};
use gpu::tensor_map::TensorMap;
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::tensor_map::{Swizzle, TensorMaps};
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{self, CheckReport, POISON, Tolerance};
use harness::experiment::{
    Experiment, Fault, Inputs, Problem, Role, Unavailable, Values, Work, Workload,
};
use ptx_builder::Arch;
use std::fmt;

/// The study workload.
pub struct Study;

impl Experiment for StudyKernel {
    fn name(&self) -> &'static str {
        self.name
    }
    fn role(&self) -> Role {
        match self.style {
            Style::SyncBaseline => Role::Baseline,
            style if style.is_raw_ptx() => Role::RawPtx,
            _ => Role::Library,
        }
    }
    fn style(&self) -> &'static str {
        self.style.label()
    }
    fn stages(&self) -> Option<u32> {
        Some(self.stages)
    }
    fn threads(&self) -> Option<u32> {
        Some(self.threads())
    }
    fn shared_bytes(&self) -> Option<u32> {
        Some(self.shared().bytes)
    }
    fn summary(&self) -> &'static str {
        self.style.summary()
    }
    fn archs(&self) -> &'static [Arch] {
        if self.style.needs_sm90() {
            &[Arch::Sm90]
        } else {
            &Arch::PORTABLE
        }
    }
    fn counterpart(&self) -> Option<&'static dyn Experiment> {
        let raw = self.style.raw_counterpart()?;
        STUDY_KERNELS
            .iter()
            .find(|k| k.style == raw && k.stages == self.stages)
            .map(|k| k as &'static dyn Experiment)
    }
}

/// The study's problem size: K, the columns of A and rows of B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct K(pub u32);

impl fmt::Display for K {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "K = {}", self.0)
    }
}

/// Checks a K: every kernel takes any K in `1..=MAX_K`.
pub fn validate_k(k: u32) -> Result<K, String> {
    if k < 1 {
        return Err("K must be at least 1".into());
    }
    if k > MAX_K {
        return Err(format!(
            "K = {k} is too large: at most {MAX_K} (A and B are then 512 MiB each)"
        ));
    }
    Ok(K(k))
}

impl Workload for Study {
    type Experiment = StudyKernel;
    type Size = K;
    type Problem = StudyProblem;

    fn name(&self) -> &'static str {
        "study"
    }
    fn summary(&self) -> &'static str {
        "C(32x32) = A(32xK) B(Kx32) on one block: every completion style vs a synchronous baseline"
    }
    fn experiments(&self) -> &'static [StudyKernel] {
        STUDY_KERNELS
    }
    fn device_bytes(&self, size: K) -> u64 {
        4 * (M as u64 * size.0 as u64 + size.0 as u64 * N as u64 + (M * N) as u64)
    }
    fn size_syntax(&self) -> &'static str {
        "K, the columns of A and rows of B: a whole number from 1 to 4194304"
    }
    fn parse_size(&self, text: &str) -> Result<K, String> {
        let k = text
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("`{text}` is not a whole number from 1 to {MAX_K}"))?;
        validate_k(k)
    }
    fn default_sizes(&self) -> Vec<K> {
        vec![K(65536)]
    }
    fn test_cases(&self) -> Vec<(Values, K)> {
        // 777: not a power of two, not a multiple of any stage count; 4096: a power of two.
        // Exact: 1-5 steps (fewer than the stages), and past 2^16; multiples of 4 for the
        // tensor style (unavailable at the others): one stage of 4 steps, and past 2^16.
        [(Values::Random, 777), (Values::Random, 4096)]
            .into_iter()
            .chain([1, 2, 3, 4, 5, 65539, 65540].map(|k| (Values::SmallIntegers, k)))
            .map(|(values, k)| (values, K(k)))
            .collect()
    }
    fn prepare(&self, gpu: &Gpu, size: K, inputs: Inputs) -> Result<StudyProblem> {
        let host = StudyInputs::new(size, inputs);
        let reference = host.reference();
        Ok(StudyProblem {
            k: size.0,
            values: inputs.values,
            a: gpu.upload(&host.a, "A")?,
            b: gpu.upload(&host.b, "B")?,
            c: gpu.zeros((M * N) as usize, "C")?,
            reference,
            maps: TensorMaps::default(),
        })
    }
}

/// A study kernel's entry point, resolved once, with its parameter types.
pub enum LoadedEntry {
    /// A and B by address.
    Pointers(Kernel<(*const f32, *const f32, *mut f32, u32)>),
    /// A by tensor map, B by address.
    TensorMapA(Kernel<(TensorMap, *const f32, *mut f32, u32)>),
}

impl LoadedEntry {
    fn resolve(gpu: &Gpu, kernel: &StudyKernel) -> Result<LoadedEntry> {
        Ok(match kernel.entry {
            StudyEntry::Pointers(entry) => LoadedEntry::Pointers(gpu.entry_point(entry)?),
            StudyEntry::TensorMapA(entry) => LoadedEntry::TensorMapA(gpu.entry_point(entry)?),
        })
    }
}

/// A and B of one problem, row-major, on the host.
#[derive(Clone, Debug)]
pub struct StudyInputs {
    /// K.
    pub k: u32,
    /// 32 x K.
    pub a: Vec<f32>,
    /// K x 32.
    pub b: Vec<f32>,
}

impl StudyInputs {
    /// A and B drawn from `inputs` (integers in [-8, 8] keep every sum exact up to K = 2^18).
    pub fn new(size: K, inputs: Inputs) -> StudyInputs {
        let k = size.0 as usize;
        let ab = inputs
            .values
            .generate(M as usize * k + k * N as usize, inputs.seed);
        let (a, b) = ab.split_at(M as usize * k);
        StudyInputs {
            k: size.0,
            a: a.to_vec(),
            b: b.to_vec(),
        }
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

/// The study's matrices on the GPU, and the reference.
pub struct StudyProblem {
    k: u32,
    values: Values,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    c: CudaSlice<f32>,
    reference: Vec<f64>,
    /// A's tensor map (the tensor style), encoded at its first launch.
    maps: TensorMaps,
}

impl StudyProblem {
    /// The launch of `kernel`: one block, the geometry its table entry gives.
    pub fn launch_config(kernel: &StudyKernel) -> LaunchConfig {
        LaunchConfig::linear(1, kernel.threads(), kernel.shared().bytes)
    }

    /// Queues `kernel` (its `entry` resolved) with an explicit geometry (the GPU tests use it
    /// to provoke a refused launch).
    pub fn launch_with(
        &mut self,
        gpu: &Gpu,
        kernel: &StudyKernel,
        entry: &LoadedEntry,
        config: LaunchConfig,
    ) -> Result<()> {
        let (b, c, k) = (&self.b, &mut self.c, self.k);
        // SAFETY (each launch): study kernels take (a, b, c, k) and read 32*k, k*32 and write
        // 32*32 floats, which the buffers hold (16-byte aligned, as every driver allocation
        // is); 1 <= k <= MAX_K (parse_size); the tensor style takes a map of A (its box as
        // the kernel expects) and k % 4 == 0 (checked below), and is resolved only on the
        // sm_90 module (`measure` resolves a kernel only on a module of its archs). A geometry other than `launch_config`'s is for refused launches only.
        match entry {
            LoadedEntry::Pointers(kernel) => unsafe {
                kernel.launch(gpu, config, (&self.a, b, c, k))?
            },
            LoadedEntry::TensorMapA(tensor) => {
                ensure!(
                    k.is_multiple_of(TENSOR_STEPS),
                    "{} needs K to be a multiple of {TENSOR_STEPS} (K = {k})",
                    kernel.name,
                );
                // A is K floats wide, 32 rows tall; a box is 4 steps of all 32 rows.
                let map = self.maps.f32_matrix(
                    gpu.address(&self.a),
                    (k, M),
                    (TENSOR_STEPS, M),
                    Swizzle::None,
                )?;
                unsafe { tensor.launch(gpu, config, (&map, b, c, k))? }
            }
        }
        Ok(())
    }
}

impl Problem<StudyKernel> for StudyProblem {
    fn unavailable(&self, kernel: &StudyKernel) -> Option<Unavailable> {
        (kernel.style == Style::Tensor && !self.k.is_multiple_of(TENSOR_STEPS)).then(|| {
            Unavailable::AtThisSize(format!(
                "tensor-map rows must be 16-byte aligned: K a multiple of {TENSOR_STEPS}"
            ))
        })
    }

    fn poison(&mut self, gpu: &Gpu, _: &StudyKernel) -> Result<()> {
        Ok(gpu.fill_words(&mut self.c, POISON.to_bits(), "C")?)
    }

    type Resolved = LoadedEntry;

    fn resolve(&self, gpu: &Gpu, kernel: &StudyKernel) -> Result<LoadedEntry> {
        LoadedEntry::resolve(gpu, kernel)
    }

    fn launch(&mut self, gpu: &Gpu, kernel: &StudyKernel, entry: &LoadedEntry) -> Result<()> {
        self.launch_with(gpu, kernel, entry, Self::launch_config(kernel))
    }

    fn check(&mut self, gpu: &Gpu, _: &StudyKernel) -> Result<CheckReport> {
        let c = gpu.download(&self.c, "C")?;
        Ok(match self.values {
            Values::Random => check::check(&c, &self.reference, Tolerance::F32_DOT),
            Values::SmallIntegers => check::check_exact_against(&c, &self.reference),
        })
    }

    /// A wrong element in the middle of C, or C's last row (each thread stores a row)
    /// poisoned again.
    fn plant(&mut self, gpu: &Gpu, _: &StudyKernel, fault: Fault) -> Result<usize> {
        let (index, values) = match fault {
            Fault::WrongElement => {
                let index = (M * N / 2 + N / 2 + 1) as usize;
                // Far outside either check: the tolerance is relative to max |ref|.
                let r = self.reference[index];
                (index, vec![(r + 1000.0 * r.abs().max(1.0)) as f32])
            }
            Fault::UnwrittenTile => (((M - 1) * N) as usize, vec![POISON; N as usize]),
        };
        gpu.upload_into(&values, &mut self.c, index, "a fault in C")?;
        Ok(index)
    }

    fn work(&self) -> Work {
        Work::Steps(self.k as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_has_every_style_baseline_first() {
        const EVERY_STYLE: [Style; 8] = [
            Style::SyncBaseline,
            Style::RawAsyncGroup,
            Style::RawMbarrier,
            Style::SplitBarrier,
            Style::ThreadPipeline,
            Style::BlockPipeline,
            Style::WarpSpecialized,
            Style::Tensor,
        ];
        // A style added to `Style` fails to compile here until it is listed above.
        let _listed = |style: Style| match style {
            Style::SyncBaseline
            | Style::RawAsyncGroup
            | Style::RawMbarrier
            | Style::SplitBarrier
            | Style::ThreadPipeline
            | Style::BlockPipeline
            | Style::WarpSpecialized
            | Style::Tensor => EVERY_STYLE.contains(&style),
        };
        for style in EVERY_STYLE {
            assert!(STUDY_KERNELS.iter().any(|k| k.style == style), "{style:?}");
        }
        // The baseline is the first experiment, and the only one.
        let experiments = Workload::experiments(&Study);
        assert_eq!(experiments[0].name(), "sync_baseline");
        assert_eq!(experiments[0].role(), Role::Baseline);
        assert!(experiments[1..].iter().all(|e| e.role() != Role::Baseline));
    }

    #[test]
    fn pipelined_styles_come_in_two_three_and_four_stages() {
        for k in STUDY_KERNELS
            .iter()
            .filter(|k| k.style != Style::SyncBaseline)
        {
            for stages in 2..=4 {
                assert!(
                    STUDY_KERNELS
                        .iter()
                        .any(|o| o.style == k.style && o.stages == stages),
                    "{:?} {stages}",
                    k.style
                );
            }
        }
    }

    #[test]
    fn counterparts_resolve() {
        let find = |name| crate::study::find(name).unwrap();
        let tp = find("thread_pipeline_3");
        assert_eq!(tp.counterpart().unwrap().name(), "raw_async_group_3");
        assert_eq!(tp.role(), Role::Library);
        assert_eq!(
            find("block_pipeline_2").counterpart().unwrap().name(),
            "raw_mbarrier_2"
        );
        assert_eq!(find("raw_mbarrier_2").role(), Role::RawPtx);
        assert!(find("sync_baseline").counterpart().is_none());
    }

    #[test]
    fn k_bounds() {
        assert!(Study.parse_size("0").unwrap_err().contains("at least 1"));
        assert!(
            Study
                .parse_size("-3")
                .unwrap_err()
                .contains("not a whole number")
        );
        assert_eq!(Study.parse_size("1").unwrap(), K(1));
        assert_eq!(Study.parse_size("65536").unwrap(), K(65536));
        assert_eq!(Study.parse_size(&MAX_K.to_string()).unwrap(), K(MAX_K));
        assert!(
            Study
                .parse_size(&(MAX_K + 1).to_string())
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn reference_multiplies() {
        // A = [i + 1 in row i, k-th column scaled by k+1], B = 1 / (j + 1): checks layout.
        let k = 3u32;
        let a: Vec<f32> = (0..M * k)
            .map(|x| (x / k + 1) as f32 * (x % k + 1) as f32)
            .collect();
        let b: Vec<f32> = (0..k * N).map(|x| (x % N + 1) as f32).collect();
        let c = StudyInputs { k, a, b }.reference();
        // C[i][j] = sum_k (i+1)(k+1)(j+1) = (i+1)(j+1) * 6
        for i in 0..M as usize {
            for j in 0..N as usize {
                assert_eq!(c[i * 32 + j], ((i + 1) * (j + 1) * 6) as f64);
            }
        }
    }

    #[test]
    fn inputs_are_random_and_sized() {
        let inputs = |seed, values| Inputs { seed, values };
        let x = StudyInputs::new(K(100), inputs(1, Values::Random));
        let y = StudyInputs::new(K(100), inputs(2, Values::Random));
        assert_eq!((x.a.len(), x.b.len()), (3200, 3200));
        assert_ne!(x.a, y.a);
        let ints = StudyInputs::new(K(100), inputs(3, Values::SmallIntegers));
        assert!(ints.b.iter().all(|v| v.fract() == 0.0 && v.abs() <= 8.0));
    }
}
