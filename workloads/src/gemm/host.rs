//! The GEMM ([`super`]): `C = A B`, row-major `f32`, every kernel family against
//! cuBLAS SGEMM (FP32 math, TF32 off) on the same buffers, all checked against a reference
//! kernel of our own that accumulates in `f64`.
//!
//! Checks: on random inputs in [-1, 1), `||C - ref|| / ||ref||` and every element (scaled by
//! `max |ref|`) must be within [`Tolerance::f32_dot`] of K — a bound that grows like
//! `sqrt(K)` times `f32`'s unit roundoff, as the rounding error of a length-K dot product
//! does; on small-integer inputs every sum is exact, so C must equal the reference bit for
//! bit. Outputs are poisoned before every checked launch.

use super::{
    GEMM_KERNELS, GemmEntry, GemmKernel, GemmPointers, MAX_DIM, REFERENCE_THREADS, REFERENCE_TILE,
    gemm_reference,
};
use crate::verify::host::Reference;
use crate::verify::{verify_against_reference, verify_reference_scale};
use anyhow::{Result, bail, ensure};
use gpu::tensor_map::TensorMap;
use gpu_kernels::GemmShape;
use gpu_kernels::gemm32::{Gemm32, Gemm32Family};
use gpu_runtime::blas::{Blas, sys as cublas};
use gpu_runtime::cudarc::driver::{CudaSlice, DeviceRepr};
use gpu_runtime::tensor_map::{Swizzle, TensorMaps};
use gpu_runtime::{Gpu, Kernel, LaunchConfig, NO_CLUSTER};
use harness::check::{CheckReport, POISON, Tolerance};
use harness::experiment::{
    Experiment, Fault, Inputs, Problem, Role, Unavailable, Values, Work, Workload,
};
use ptx_builder::Arch;
use std::fmt;
use std::sync::LazyLock;

/// The GEMM workload.
pub struct Gemm;

/// One GEMM experiment: a kernel family of ours, or cuBLAS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmExperiment {
    /// cuBLAS SGEMM, FP32 (`CUBLAS_PEDANTIC_MATH`: no TF32), the baseline.
    Cublas,
    /// A kernel family of ours.
    Kernel(&'static GemmKernel),
    /// What a user calls: `gpu_kernels::gemm32::Gemm32::gemm`, the family it picks for the
    /// shape, through its own module.
    Library,
}

static EXPERIMENTS: LazyLock<Vec<GemmExperiment>> = LazyLock::new(|| {
    std::iter::once(GemmExperiment::Cublas)
        .chain(GEMM_KERNELS.iter().map(GemmExperiment::Kernel))
        .chain([GemmExperiment::Library])
        .collect()
});

/// The row name of cuBLAS.
pub const CUBLAS: &str = "cublas_sgemm";
/// The row name of [`GemmExperiment::Library`].
pub const LIBRARY: &str = "gemm32";

impl Experiment for GemmExperiment {
    fn name(&self) -> &'static str {
        match self {
            GemmExperiment::Cublas => CUBLAS,
            GemmExperiment::Kernel(k) => k.name,
            GemmExperiment::Library => LIBRARY,
        }
    }
    fn role(&self) -> Role {
        match self {
            GemmExperiment::Cublas => Role::Baseline,
            GemmExperiment::Kernel(_) | GemmExperiment::Library => Role::Library,
        }
    }
    fn style(&self) -> &'static str {
        match self {
            GemmExperiment::Cublas => "cublas",
            GemmExperiment::Kernel(k) => k.style.label(),
            GemmExperiment::Library => "dispatch",
        }
    }
    fn stages(&self) -> Option<u32> {
        match self {
            GemmExperiment::Cublas | GemmExperiment::Library => None,
            GemmExperiment::Kernel(k) => Some(k.style.stages()),
        }
    }
    fn threads(&self) -> Option<u32> {
        match self {
            GemmExperiment::Cublas | GemmExperiment::Library => None,
            GemmExperiment::Kernel(k) => Some(k.threads()),
        }
    }
    fn shared_bytes(&self) -> Option<u32> {
        match self {
            GemmExperiment::Cublas | GemmExperiment::Library => None,
            GemmExperiment::Kernel(k) => Some(k.shared_bytes()),
        }
    }
    fn summary(&self) -> &'static str {
        match self {
            GemmExperiment::Cublas => {
                "cuBLAS SGEMM, FP32 math (TF32 off), row-major via C^T = B^T A^T"
            }
            GemmExperiment::Kernel(k) => k.style.summary(),
            GemmExperiment::Library => {
                "gpu_kernels::gemm32::Gemm32::gemm: the family its cost model picks for the \
                 shape (the 5-stage thread pipeline, or split K over a cluster and warp groups)"
            }
        }
    }
    fn entry_points(&self) -> Vec<&'static str> {
        match self {
            GemmExperiment::Cublas => Vec::new(),
            GemmExperiment::Kernel(k) => std::iter::once(k.entry_names().0)
                .chain(k.entry_names().1)
                .collect(),
            // In its own module (gpu-kernels'), not the workloads'.
            GemmExperiment::Library => Vec::new(),
        }
    }
    fn archs(&self) -> &'static [Arch] {
        match self {
            GemmExperiment::Kernel(k) if k.style.needs_sm90() => &[Arch::Sm90],
            _ => &Arch::PORTABLE,
        }
    }
}

/// A GEMM's size: C is `m x n`, the dot products have length `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mnk {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
}

impl fmt::Display for Mnk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)
    }
}

impl Mnk {
    /// Bytes of device memory a problem of this size takes: A, B and C in `f32`, the
    /// reference in `f64`.
    pub fn device_bytes(self) -> u64 {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        4 * (m * k + k * n + m * n) + 8 * m * n
    }

    /// Floating-point operations of one product.
    pub fn flops(self) -> u64 {
        2 * self.m as u64 * self.n as u64 * self.k as u64
    }
}

/// The largest M: the reference kernel's grid has `ceil(M / 16)` rows of blocks, at most 65535.
pub const MAX_M: u32 = 65535 * REFERENCE_TILE;

/// The largest K whose small-integer products (each at most 64 in magnitude) still sum
/// exactly in `f32` (below 2^24).
pub const MAX_EXACT_K: u32 = 1 << 18;

/// Reads `N` (a square problem), `MxNxK` or `M,N,K`.
pub fn parse_mnk(text: &str) -> Result<Mnk, String> {
    let parts: Vec<&str> = text.split(['x', 'X', ',']).map(str::trim).collect();
    let numbers: Vec<u64> = parts
        .iter()
        .map(|p| p.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("`{text}` is not N or MxNxK (whole numbers)"))?;
    let (m, n, k) = match numbers[..] {
        [s] => (s, s, s),
        [m, n, k] => (m, n, k),
        _ => return Err(format!("`{text}` is not N or MxNxK")),
    };
    for (what, value) in [("M", m), ("N", n), ("K", k)] {
        if value == 0 {
            return Err(format!("{what} must be at least 1 (in `{text}`)"));
        }
        if value > MAX_DIM as u64 {
            return Err(format!("{what} = {value} is too large: at most {MAX_DIM}"));
        }
    }
    if m > MAX_M as u64 {
        return Err(format!("M = {m} is too large: at most {MAX_M}"));
    }
    Ok(Mnk {
        m: m as u32,
        n: n as u32,
        k: k as u32,
    })
}

impl Workload for Gemm {
    type Experiment = GemmExperiment;
    type Size = Mnk;
    type Problem = GemmProblem;

    fn name(&self) -> &'static str {
        "gemm"
    }
    fn summary(&self) -> &'static str {
        "C = A B, f32 row-major, any size: every completion style vs cuBLAS SGEMM (FP32)"
    }
    fn experiments(&self) -> &'static [GemmExperiment] {
        &EXPERIMENTS
    }
    fn helper_kernels(&self) -> &'static [&'static str] {
        const HELPERS: &[&str] = &[
            gemm_reference.name(),
            verify_reference_scale.name(),
            verify_against_reference.name(),
        ];
        HELPERS
    }
    fn device_bytes(&self, size: Mnk) -> u64 {
        size.device_bytes()
    }
    fn size_syntax(&self) -> &'static str {
        "N (square) or MxNxK, each from 1 to 2^30 (M at most 1048560)"
    }
    fn parse_size(&self, text: &str) -> Result<Mnk, String> {
        parse_mnk(text)
    }
    fn default_sizes(&self) -> Vec<Mnk> {
        [
            "1024",
            "2048",
            "4096",
            "8192",
            "4095x4097x1023",
            "1000x1000x1000",
            "8192x64x8192",
        ]
        .iter()
        .map(|s| parse_mnk(s).expect("valid default sizes"))
        .collect()
    }
    fn test_cases(&self) -> Vec<(Values, Mnk)> {
        // One element; ragged in every dimension (4-byte copies); tile multiples (16-byte
        // copies); ragged M with aligned N and K; skinny; and small integers, exact, at
        // ragged and aligned sizes; the last of each past GPU_CHECK_MIN_ELEMENTS (compared on
        // the GPU).
        let random = [
            "1",
            "129x257x33",
            "256x512x64",
            "200x260x1000",
            "300x8x36",
            "1030x1030x40",
        ];
        let exact = [
            "1",
            "3x5x7",
            "131x259x17",
            "130x260x20",
            "257x130x1200",
            "1100x1000x16",
        ];
        random
            .iter()
            .map(|s| (Values::Random, s))
            .chain(exact.iter().map(|s| (Values::SmallIntegers, s)))
            .map(|(values, s)| (values, parse_mnk(s).expect("valid test sizes")))
            .collect()
    }
    fn prepare(&self, gpu: &Gpu, size: Mnk, inputs: Inputs) -> Result<GemmProblem> {
        GemmProblem::new(gpu, size, inputs)
    }
}

/// A family's entry point for one problem size, resolved once, with its parameter types.
pub enum LoadedEntry {
    /// A and B by address.
    Pointers(Kernel<GemmPointers>),
    /// A and B by tensor map.
    TensorMaps(Kernel<(TensorMap, TensorMap, *mut f32, u32, u32, u32)>),
    /// A by address, B by tensor map.
    TensorMapB(Kernel<(*const f32, TensorMap, *mut f32, u32, u32, u32)>),
}

impl LoadedEntry {
    /// The entry point `kernel` takes at `n` and `k`, if it has one there.
    fn resolve(gpu: &Gpu, kernel: &GemmKernel, n: u32, k: u32) -> Result<Option<LoadedEntry>> {
        Ok(match kernel.entry_for(n, k) {
            None => None,
            Some(GemmEntry::Pointers(e)) => Some(LoadedEntry::Pointers(gpu.entry_point(e)?)),
            Some(GemmEntry::TensorMaps(e)) => Some(LoadedEntry::TensorMaps(gpu.entry_point(e)?)),
            Some(GemmEntry::TensorMapB(e)) => Some(LoadedEntry::TensorMapB(gpu.entry_point(e)?)),
        })
    }
}

/// A, B, C and the reference, and cuBLAS.
pub struct GemmProblem {
    size: Mnk,
    values: Values,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    c: CudaSlice<f32>,
    reference: Reference,
    cublas: Result<Blas, String>,
    /// The library's GEMM, loaded from its own module.
    gemm32: Result<Gemm32, String>,
    /// The tensor-copy kernels' maps of A and B, encoded at their first launch.
    maps: TensorMaps,
}

impl GemmProblem {
    fn new(gpu: &Gpu, size: Mnk, inputs: Inputs) -> Result<GemmProblem> {
        let Mnk { m, n, k } = size;
        if inputs.values == Values::SmallIntegers {
            ensure!(
                k <= MAX_EXACT_K,
                "small-integer inputs are exact only up to K = {MAX_EXACT_K} (K = {k})"
            );
        }
        let (mk, kn, mn) = (
            m as usize * k as usize,
            k as usize * n as usize,
            m as usize * n as usize,
        );
        let values = inputs.values.generate(mk + kn, inputs.seed);
        let a = gpu.upload(&values[..mk], "A")?;
        let b = gpu.upload(&values[mk..], "B")?;
        drop(values);
        let c = gpu.zeros::<f32>(mn, "C")?;
        let reference = {
            let mut c64 = gpu.zeros::<f64>(mn, "the reference C")?;
            let config = LaunchConfig {
                grid: (n.div_ceil(REFERENCE_TILE), m.div_ceil(REFERENCE_TILE)),
                threads: REFERENCE_THREADS,
                shared_bytes: 0,
                cluster: NO_CLUSTER,
            };
            let kernel = gpu.entry_point(gemm_reference)?;
            // SAFETY: gemm_reference(a, b, c: *mut f64, m, n, k) reads m*k and k*n floats
            // and writes m*n doubles, which the buffers hold; the grid covers C in 16x16
            // tiles of 256-thread blocks (M <= MAX_M keeps the grid's y within 65535).
            unsafe { kernel.launch(gpu, config, (&a, &b, &mut c64, m, n, k))? };
            gpu.synchronize(|| format!("computing the reference of a {size} GEMM"))?;
            Reference::new(gpu, c64, "the reference C")?
        };
        Ok(GemmProblem {
            size,
            values: inputs.values,
            a,
            b,
            c,
            reference,
            // Pedantic: FP32 FFMA math, never TF32 tensor cores.
            cublas: Blas::open(gpu, cublas::cublasMath_t::CUBLAS_PEDANTIC_MATH),
            gemm32: Gemm32::load(gpu).map_err(|e| e.to_string()),
            maps: TensorMaps::default(),
        })
    }
}

impl Problem<GemmExperiment> for GemmProblem {
    fn unavailable(&self, experiment: &GemmExperiment) -> Option<Unavailable> {
        let Mnk { n, k, .. } = self.size;
        match (experiment, &self.cublas) {
            (GemmExperiment::Cublas, Err(why)) => Some(Unavailable::Missing(why.clone())),
            (GemmExperiment::Library, _) => self
                .gemm32
                .as_ref()
                .err()
                .map(|why| Unavailable::Missing(why.clone())),
            (GemmExperiment::Kernel(kernel), _) if kernel.entry_for(n, k).is_none() => {
                Some(Unavailable::AtThisSize(
                    "tensor maps need 16-byte aligned rows: K and N multiples of 4".to_string(),
                ))
            }
            _ => None,
        }
    }

    fn poison(&mut self, gpu: &Gpu, _: &GemmExperiment) -> Result<()> {
        Ok(gpu.fill_words(&mut self.c, POISON.to_bits(), "C")?)
    }

    /// The family's entry point at this size (none for cuBLAS).
    type Resolved = Option<LoadedEntry>;

    fn resolve(&self, gpu: &Gpu, experiment: &GemmExperiment) -> Result<Option<LoadedEntry>> {
        let Mnk { n, k, .. } = self.size;
        match experiment {
            GemmExperiment::Kernel(kernel) => match LoadedEntry::resolve(gpu, kernel, n, k)? {
                Some(entry) => Ok(Some(entry)),
                None => bail!("{} has no entry point for {}", kernel.name, self.size),
            },
            GemmExperiment::Cublas | GemmExperiment::Library => Ok(None),
        }
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        experiment: &GemmExperiment,
        entry: &Option<LoadedEntry>,
    ) -> Result<()> {
        let Mnk { m, n, k } = self.size;
        match experiment {
            GemmExperiment::Kernel(kernel) => {
                let config = LaunchConfig {
                    grid: kernel.grid(m, n),
                    threads: kernel.threads(),
                    shared_bytes: kernel.shared_bytes(),
                    cluster: kernel.cluster(),
                };
                let Some(entry) = entry else {
                    bail!("{} launched without its entry point", kernel.name);
                };
                let maps = &self.maps;
                // A is k wide and m tall, B n wide and k tall.
                let a_map =
                    || maps.f32_matrix(gpu.address(&self.a), (k, m), kernel.a_box(), Swizzle::None);
                let b_map =
                    || maps.f32_matrix(gpu.address(&self.b), (n, k), kernel.b_box(), Swizzle::None);
                let (a, b, c) = (&self.a, &self.b, &mut self.c);
                // SAFETY (each launch): GEMM kernels take (a, b, c, m, n, k) with A m x k,
                // B k x n and C m x n f32, which the buffers hold, 256-byte aligned (driver
                // allocations) — A and B as pointers, or as maps of the whole matrices with
                // the family's boxes; the entry point is the one `entry_for` gives at this n
                // and k (the aligned one only when both are multiples of 4); the geometry is
                // the table's; 1 <= m, n, k <= MAX_DIM (parse_mnk); sm_90 kernels only on
                // the sm_90 module (`measure` resolves a family only on a module of its archs).
                match entry {
                    LoadedEntry::Pointers(kernel) => unsafe {
                        kernel.launch(gpu, config, (a, b, c, m, n, k))?
                    },
                    LoadedEntry::TensorMaps(kernel) => unsafe {
                        kernel.launch(gpu, config, (&a_map()?, &b_map()?, c, m, n, k))?
                    },
                    LoadedEntry::TensorMapB(kernel) => unsafe {
                        kernel.launch(gpu, config, (a, &b_map()?, c, m, n, k))?
                    },
                }
            }
            GemmExperiment::Library => {
                let gemm = match &self.gemm32 {
                    Ok(gemm) => gemm,
                    Err(why) => bail!("gpu-kernels' GEMM is unavailable: {why}"),
                };
                let shape = GemmShape { m, n, k };
                gemm.gemm(gpu, &self.a, &self.b, &mut self.c, shape)?;
            }
            GemmExperiment::Cublas => {
                let handle = match &self.cublas {
                    Ok(cublas) => cublas.handle(),
                    Err(why) => bail!("cuBLAS is unavailable: {why}"),
                };
                let (alpha, beta) = (1.0f32, 0.0f32);
                let (a, b) = (gpu.address(&self.a), gpu.address(&self.b));
                let c = gpu.address(&self.c);
                let (m, n, k) = (m as i32, n as i32, k as i32);
                // Row-major C = A B is column-major C^T = B^T A^T: B (n x k, ld n) times
                // A (k x m, ld k) into C^T (n x m, ld n).
                // SAFETY: a live handle on the GPU's stream; the buffers hold the sizes the
                // leading dimensions describe.
                let status = unsafe {
                    cublas::cublasSgemm_v2(
                        handle,
                        cublas::cublasOperation_t::CUBLAS_OP_N,
                        cublas::cublasOperation_t::CUBLAS_OP_N,
                        n,
                        m,
                        k,
                        &alpha,
                        b as *const f32,
                        n,
                        a as *const f32,
                        k,
                        &beta,
                        c as *mut f32,
                        n,
                    )
                };
                ensure!(
                    status == cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
                    "cublasSgemm ({}) failed: {status:?}",
                    self.size
                );
            }
        }
        Ok(())
    }

    fn check(&mut self, gpu: &Gpu, _: &GemmExperiment) -> Result<CheckReport> {
        self.reference
            .check(gpu, &self.c, self.values, Tolerance::f32_dot(self.size.k))
    }

    fn plant(&mut self, gpu: &Gpu, experiment: &GemmExperiment, fault: Fault) -> Result<usize> {
        let tile = match experiment {
            GemmExperiment::Kernel(kernel) => (kernel.tile.bm(), kernel.tile.bn()),
            GemmExperiment::Library => {
                let info = gpu.info();
                let Mnk { m, n, k } = self.size;
                let family = Gemm32Family::for_shape(
                    GemmShape { m, n, k },
                    info.multiprocessors,
                    info.compute_capability.0 >= 9,
                );
                (family.kernel().tile.bm(), family.kernel().tile.bn())
            }
            GemmExperiment::Cublas => LIBRARY_TILE,
        };
        let Mnk { m, n, .. } = self.size;
        plant_in_matrix(gpu, &mut self.c, (m, n), tile, fault, POISON, far_off)
    }

    fn work(&self) -> Work {
        Work::Flops(self.size.flops())
    }
}

/// The tile [`Problem::plant`] poisons in a library's output: its own tiles are not known, and
/// any tile of poison must fail the check.
pub(crate) const LIBRARY_TILE: (u32, u32) = (64, 64);

/// `x` moved far outside any tolerance the checks allow (which are relative to `max |ref|`),
/// and finite.
pub(crate) fn far_off(x: f32) -> f32 {
    x + 1000.0 * x.abs().max(1.0)
}

/// Plants `fault` in a row-major `m x n` matrix `c` on the GPU whose blocks write tiles of
/// `tile` (rows, columns), and returns the index a row-major check fails at first: the
/// element in the middle changed by `wrong`, or the last tile (bottom right, clipped to C)
/// put back to `poison` — everything before its first element is still written.
pub(crate) fn plant_in_matrix<T: DeviceRepr + Copy + Default>(
    gpu: &Gpu,
    c: &mut CudaSlice<T>,
    (m, n): (u32, u32),
    (tile_m, tile_n): (u32, u32),
    fault: Fault,
    poison: T,
    wrong: impl FnOnce(T) -> T,
) -> Result<usize> {
    let (m, n) = (m as usize, n as usize);
    match fault {
        Fault::WrongElement => {
            let index = (m / 2) * n + n / 2;
            let got = gpu.download_range(c, index..index + 1, "an element of C")?[0];
            gpu.upload_into(&[wrong(got)], c, index, "a wrong element of C")?;
            Ok(index)
        }
        Fault::UnwrittenTile => {
            let (tile_m, tile_n) = (tile_m as usize, tile_n as usize);
            let (row, col) = ((m - 1) / tile_m * tile_m, (n - 1) / tile_n * tile_n);
            let poisoned = vec![poison; n - col];
            for r in row..m {
                gpu.upload_into(&poisoned, c, r * n + col, "a poisoned tile of C")?;
            }
            Ok(row * n + col)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_or_say_why_not() {
        assert_eq!(
            parse_mnk("4096").unwrap(),
            Mnk {
                m: 4096,
                n: 4096,
                k: 4096
            }
        );
        assert_eq!(
            parse_mnk("4095x4097x1023").unwrap(),
            Mnk {
                m: 4095,
                n: 4097,
                k: 1023
            }
        );
        assert_eq!(
            parse_mnk("8192,64,8192").unwrap(),
            Mnk {
                m: 8192,
                n: 64,
                k: 8192
            }
        );
        assert!(parse_mnk("0").unwrap_err().contains("M must be at least 1"));
        assert!(
            parse_mnk("4x0x4")
                .unwrap_err()
                .contains("N must be at least 1")
        );
        assert!(parse_mnk("-5").unwrap_err().contains("whole numbers"));
        assert!(parse_mnk("4x4").unwrap_err().contains("MxNxK"));
        assert!(parse_mnk("5000000000").unwrap_err().contains("too large"));
        assert!(
            parse_mnk("2000000x1x1")
                .unwrap_err()
                .contains("M = 2000000")
        );
        assert_eq!(
            Mnk { m: 2, n: 3, k: 4 }.device_bytes(),
            4 * (8 + 12 + 6) + 8 * 6
        );
        assert_eq!(Mnk { m: 2, n: 3, k: 4 }.flops(), 48);
    }

    #[test]
    fn cublas_is_the_baseline_and_copy_families_have_two_entry_points() {
        assert_eq!(harness::experiment::baseline_of(&Gemm), CUBLAS);
        assert!(GemmExperiment::Cublas.entry_points().is_empty());
        let experiments = Workload::experiments(&Gemm);
        assert_eq!(experiments.last().unwrap().name(), LIBRARY);
        for e in &experiments[1..experiments.len() - 1] {
            let entries = e.entry_points();
            if e.style() == "tma" || e.style() == "tma_b" {
                // One entry point, sm_90 only; unavailable where rows are not 16-byte aligned.
                assert_eq!(entries, [e.name()]);
                assert_eq!(e.archs(), [Arch::Sm90]);
                continue;
            }
            assert_eq!(entries.len(), 2, "{}", e.name());
            assert!(entries[0].ends_with("_a16") && entries[1].ends_with("_a4"));
            // Split K runs in clusters: sm_90 only.
            let archs: &[Arch] = if e.style() == "split_k" {
                &[Arch::Sm90]
            } else {
                &Arch::PORTABLE
            };
            assert_eq!(e.archs(), archs, "{}", e.name());
        }
        assert_eq!(Gemm.default_sizes().len(), 7);
        assert!(
            Gemm.test_cases()
                .iter()
                .all(|(v, s)| *v == Values::Random || s.k <= MAX_EXACT_K)
        );
    }
}
