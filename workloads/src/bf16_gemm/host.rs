//! The BF16 GEMM ([`super`]): `C = A B^T` (or `C = A B`), every kernel against three cuBLAS
//! baselines on the same buffers — `cublasGemmEx` TN (B `n x k`) and NN (B `k x n`), and
//! cuBLASLt — the fastest of them on each problem being the reference; all checked against a
//! reference kernel of our own that accumulates the BF16 inputs in `f64`.
//!
//! Checks (the output widened to f32 on the GPU, the poison kept apart):
//! - random inputs in [-1, 1) rounded to BF16: every element within `2^-8` of the reference
//!   relative to `max(|ref|, max_i |ref_i|)`, and `||C - ref|| / ||ref||` within `2^-8`
//!   ([`bf16_output_tolerance`]): rounding C to BF16 moves an element by at most `2^-9` of its
//!   size, FP32 accumulation by about `sqrt(K) 2^-24` — a factor two of margin on the first, far
//!   more on the second; a missing or repeated k-tile moves C by `sqrt(64 / K)` of its scale
//!   (9% at K = 8192), twenty times the bound;
//! - small integers, exact: A keeps at most 4 non-zeros per row (integers in [-8, 8]), B any
//!   integers in [-8, 8], so every product and partial sum is an integer below 2^24 (exact in
//!   FP32) and every result at most 256 in magnitude (exact in BF16): C must equal the reference
//!   bit for bit.
//!
//! Rows that no tensor map can describe (K, or for B `k x n` N, not a multiple of 8): each
//! launch first copies those operands into buffers whose rows are padded with zeros to a
//! multiple of 8 (`bf16_pad_rows`), and multiplies those; the time includes the copies.

use super::{
    BF16_KERNELS, BF16_POISON, BK, BLayout, BM, BN, Bf16CpAsyncParams, Bf16CpAsyncStoreParams,
    Bf16Entries, Bf16GemmParams, Bf16GemmStoreParams, Bf16Kernel, CBox, Epilogue, HELPER_THREADS,
    TileCluster, bf16_gemm_reference, bf16_pad_rows, bf16_widen,
};
use crate::gemm::host::{Mnk, far_off, parse_mnk, plant_in_matrix};
use crate::verify::host::Reference;
use crate::verify::{verify_against_reference, verify_reference_scale};
use anyhow::{Result, bail, ensure};
use gpu::wgmma::Bf16;
use gpu_runtime::blas::{Blas, sys as cublas};
use gpu_runtime::blaslt::{BlasLt, LtGemm};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::tensor_map::{ElementType, Swizzle, TensorMaps};
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{CheckReport, POISON, Tolerance};
use harness::experiment::{
    Experiment, Fault, Inputs, Problem, Role, Unavailable, Values, Work, Workload,
};
use ptx_builder::Arch;
use rand::{Rng, SeedableRng};
use std::sync::LazyLock;

/// The BF16 GEMM workload.
pub struct Bf16Gemm;

/// One experiment: cuBLAS, or a kernel of ours.
#[derive(Clone, Copy, Debug)]
pub enum Bf16Experiment {
    /// `cublasGemmEx`, BF16 in and out, FP32 compute: a baseline.
    Cublas,
    /// cuBLASLt's `cublasLtMatmul` with its heuristic's best algorithm and a 32 MiB workspace
    /// (what PyTorch's `matmul` runs): the other baseline; the faster of the two is the
    /// reference of each problem.
    CublasLt,
    /// `cublasGemmEx` on B stored `k x n` row-major (`C = A B`: the NN GEMM), the reference
    /// layout of the `b_kn` kernels (a baseline too).
    CublasBKn,
    /// A kernel of ours.
    Kernel(&'static Bf16Kernel),
}

static EXPERIMENTS: LazyLock<Vec<Bf16Experiment>> = LazyLock::new(|| {
    [
        Bf16Experiment::Cublas,
        Bf16Experiment::CublasLt,
        Bf16Experiment::CublasBKn,
    ]
    .into_iter()
    .chain(BF16_KERNELS.iter().map(Bf16Experiment::Kernel))
    .collect()
});

/// The row name of cuBLAS's `cublasGemmEx`.
pub const CUBLAS: &str = "cublas_gemm_ex_bf16";
/// The row name of cuBLASLt.
pub const CUBLAS_LT: &str = "cublaslt_matmul_bf16";
/// The row name of cuBLAS's `cublasGemmEx` with B `k x n`.
pub const CUBLAS_B_KN: &str = "cublas_gemm_ex_bf16_b_kn";

impl Experiment for Bf16Experiment {
    fn name(&self) -> &'static str {
        match self {
            Bf16Experiment::Cublas => CUBLAS,
            Bf16Experiment::CublasLt => CUBLAS_LT,
            Bf16Experiment::CublasBKn => CUBLAS_B_KN,
            Bf16Experiment::Kernel(k) => k.name,
        }
    }
    fn role(&self) -> Role {
        match self {
            Bf16Experiment::Cublas | Bf16Experiment::CublasLt | Bf16Experiment::CublasBKn => {
                Role::Baseline
            }
            Bf16Experiment::Kernel(_) => Role::Library,
        }
    }
    fn style(&self) -> &'static str {
        match self {
            Bf16Experiment::Cublas => "cublas",
            Bf16Experiment::CublasLt => "cublaslt",
            Bf16Experiment::CublasBKn => "cublas_b_kn",
            Bf16Experiment::Kernel(k) => k.style.label(),
        }
    }
    fn stages(&self) -> Option<u32> {
        match self {
            Bf16Experiment::Cublas | Bf16Experiment::CublasLt | Bf16Experiment::CublasBKn => None,
            Bf16Experiment::Kernel(k) => Some(k.style.geometry().stages),
        }
    }
    fn threads(&self) -> Option<u32> {
        match self {
            Bf16Experiment::Cublas | Bf16Experiment::CublasLt | Bf16Experiment::CublasBKn => None,
            Bf16Experiment::Kernel(k) => Some(k.style.threads()),
        }
    }
    fn shared_bytes(&self) -> Option<u32> {
        match self {
            Bf16Experiment::Cublas | Bf16Experiment::CublasLt | Bf16Experiment::CublasBKn => None,
            Bf16Experiment::Kernel(k) => Some(k.style.geometry().layout().bytes),
        }
    }
    fn summary(&self) -> &'static str {
        match self {
            Bf16Experiment::Cublas => {
                "cublasGemmEx: BF16 A, B and C, FP32 compute, row-major C = A B^T as the TN GEMM"
            }
            Bf16Experiment::CublasLt => {
                "cublasLtMatmul: the same GEMM, the heuristic's best algorithm, 32 MiB workspace"
            }
            Bf16Experiment::CublasBKn => {
                "cublasGemmEx with B k x n row-major: C = A B as the NN GEMM"
            }
            Bf16Experiment::Kernel(k) => k.summary(),
        }
    }
    fn entry_points(&self) -> Vec<&'static str> {
        match self {
            Bf16Experiment::Cublas | Bf16Experiment::CublasLt | Bf16Experiment::CublasBKn => {
                Vec::new()
            }
            Bf16Experiment::Kernel(k) => k.entries.names().to_vec(),
        }
    }
    fn archs(&self) -> &'static [Arch] {
        match self {
            Bf16Experiment::Kernel(_) => &[Arch::Sm90a],
            Bf16Experiment::Cublas | Bf16Experiment::CublasLt | Bf16Experiment::CublasBKn => {
                &Arch::PORTABLE
            }
        }
    }
}

/// The tensor maps' swizzle: the tile layouts' (all four are 128-byte swizzled).
const SWIZZLE: Swizzle = {
    assert!(
        super::ATile::SWIZZLE_BYTES == 128
            && super::BTile::SWIZZLE_BYTES == 128
            && super::BKnTile::SWIZZLE_BYTES == 128
            && CBox::SWIZZLE_BYTES == 128
    );
    Swizzle::Bytes128
};

/// The tolerance of a BF16 output (module docs).
pub fn bf16_output_tolerance() -> Tolerance {
    Tolerance {
        norm: 1.0 / 256.0,
        element: 1.0 / 256.0,
    }
}

/// Bytes of device memory a problem takes: A, B and B `k x n` in BF16 (with padded copies where
/// rows are not multiples of 8), C in BF16, its f32 widening, the f64 reference, cuBLASLt's
/// workspace.
fn device_bytes(size: Mnk) -> u64 {
    let (m, n, k) = (size.m as u64, size.n as u64, size.k as u64);
    let (kp, np) = (k.next_multiple_of(8), n.next_multiple_of(8));
    let padded_a_b = if kp != k { 2 * (m + n) * kp } else { 0 };
    let padded_b_kn = if np != n { 2 * k * np } else { 0 };
    2 * (m + 2 * n) * k
        + padded_a_b
        + padded_b_kn
        + (2 + 4 + 8) * m * n
        + gpu_runtime::blaslt::WORKSPACE_BYTES as u64
}

impl Workload for Bf16Gemm {
    type Experiment = Bf16Experiment;
    type Size = Mnk;
    type Problem = Bf16Problem;

    fn name(&self) -> &'static str {
        "bf16-gemm"
    }
    fn summary(&self) -> &'static str {
        "C = A B^T, BF16 in and out, FP32 accumulate, any size, on wgmma + TMA (sm_90a) vs cuBLAS"
    }
    fn experiments(&self) -> &'static [Bf16Experiment] {
        &EXPERIMENTS
    }
    fn helper_kernels(&self) -> &'static [&'static str] {
        const HELPERS: &[&str] = &[
            bf16_gemm_reference.name(),
            bf16_widen.name(),
            bf16_pad_rows.name(),
            verify_reference_scale.name(),
            verify_against_reference.name(),
        ];
        HELPERS
    }
    fn timed_helper_kernels(&self) -> &'static [&'static str] {
        const TIMED: &[&str] = &[bf16_pad_rows.name()];
        TIMED
    }
    fn device_bytes(&self, size: Mnk) -> u64 {
        device_bytes(size)
    }
    fn size_syntax(&self) -> &'static str {
        "N (square) or MxNxK, each from 1 to 2^30 (M x N below 2^31)"
    }
    fn parse_size(&self, text: &str) -> Result<Mnk, String> {
        let size = parse_mnk(text)?;
        if size.m as u64 * size.n as u64 >= 1 << 31 {
            return Err(format!(
                "M x N = {} is too large: below 2^31 (the reference's grid)",
                size.m as u64 * size.n as u64
            ));
        }
        Ok(size)
    }
    fn default_sizes(&self) -> Vec<Mnk> {
        [
            "1024",
            "2048",
            "4096",
            "8192",
            "4096x4096x1024",
            "4096x4096x1023",
            "4096x4104x1024",
            "4096x4097x1024",
            "4095x4097x1023",
            "8192x1024x8192",
            "512x8192x8192",
        ]
        .iter()
        .map(|s| parse_mnk(s).expect("valid default sizes"))
        .collect()
    }
    fn test_cases(&self) -> Vec<(Values, Mnk)> {
        // One element; ragged in every dimension (K too: padded copies); tile multiples; more
        // tiles than SMs (the persistent walk); odd N (single-element stores); and exact
        // small integers at ragged and aligned sizes, the last past GPU_CHECK_MIN_ELEMENTS.
        let random = [
            "1",
            "129x257x33",
            "256x512x128",
            "300x8x72",
            "2000x2100x200",
            "77x1001x1000",
        ];
        let exact = ["1", "3x5x7", "131x259x64", "1100x1000x16", "1030x1030x520"];
        random
            .iter()
            .map(|s| (Values::Random, s))
            .chain(exact.iter().map(|s| (Values::SmallIntegers, s)))
            .map(|(values, s)| (values, parse_mnk(s).expect("valid test sizes")))
            .collect()
    }
    fn prepare(&self, gpu: &Gpu, size: Mnk, inputs: Inputs) -> Result<Bf16Problem> {
        Bf16Problem::new(gpu, size, inputs)
    }
}

/// The inputs as BF16 bits: A (`m x k`) then B (`n x k`). Random: uniform in [-1, 1) rounded to
/// BF16. Small integers: in [-8, 8], A with non-zeros only where `(row + col) % stride == 0`,
/// `stride = ceil(k / 4)` (at most 4 per row; see the module docs).
pub fn generate_inputs(size: Mnk, values: Values, seed: u64) -> (Vec<u16>, Vec<u16>) {
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let value = |rng: &mut rand::rngs::StdRng| match values {
        Values::Random => Bf16::from_f32(rng.gen_range(-1.0f32..1.0)).0,
        Values::SmallIntegers => Bf16::from_f32(rng.gen_range(-8i32..=8) as f32).0,
    };
    let stride = k.div_ceil(4);
    let mut a = Vec::with_capacity(m * k);
    for row in 0..m {
        for col in 0..k {
            let keep = values == Values::Random || (row + col) % stride == 0;
            a.push(if keep { value(&mut rng) } else { 0 });
        }
    }
    let b = (0..n * k).map(|_| value(&mut rng)).collect();
    (a, b)
}

/// A family's entry point for one N.
enum Resolved {
    TensorStore(Kernel<Bf16GemmStoreParams>),
    Direct(Kernel<Bf16GemmParams>),
    CpAsyncTensorStore(Kernel<Bf16CpAsyncStoreParams>),
    CpAsyncDirect(Kernel<Bf16CpAsyncParams>),
}

impl Resolved {
    /// `cuOccupancyMaxActiveClusters` for this entry point at `config`.
    fn max_active_clusters(&self, gpu: &Gpu, config: LaunchConfig) -> Result<u32> {
        Ok(match self {
            Resolved::TensorStore(k) => k.max_active_clusters(gpu, config)?,
            Resolved::Direct(k) => k.max_active_clusters(gpu, config)?,
            Resolved::CpAsyncTensorStore(k) => k.max_active_clusters(gpu, config)?,
            Resolved::CpAsyncDirect(k) => k.max_active_clusters(gpu, config)?,
        })
    }
}

/// A kernel's persistent grid: one block per SM, at most one per tile; for a family that runs
/// in clusters, as many whole clusters as can be resident at once (a GPC's SMs need not pair
/// up), at most one per cluster's patch of tiles.
fn launch_config(
    gpu: &Gpu,
    kernel: &Bf16Kernel,
    entry: &Resolved,
    m: u32,
    n: u32,
) -> Result<LaunchConfig> {
    let geometry = kernel.style.geometry();
    let (tiles_m, tiles_n) = geometry.tiles(m, n);
    let mut config = LaunchConfig::linear(
        (tiles_m * tiles_n).min(gpu.info().multiprocessors),
        kernel.style.threads(),
        geometry.layout().bytes,
    );
    if kernel.cluster != TileCluster::NONE {
        // Asked for a grid of one cluster: the launch checks refuse a grid that clusters do
        // not tile, and the answer depends only on the block.
        let one_cluster = LaunchConfig {
            grid: (kernel.cluster.blocks(), 1),
            ..config
        };
        let resident = entry.max_active_clusters(gpu, one_cluster)?;
        let clusters = kernel.cluster.cluster_tiles(geometry, m, n).min(resident);
        if clusters == 0 {
            bail!(
                "{}: no cluster of {} blocks fits on {} ({} B of shared memory each)",
                kernel.name,
                kernel.cluster.blocks(),
                gpu.info().name,
                config.shared_bytes
            );
        }
        config.grid.0 = clusters * kernel.cluster.blocks();
    }
    Ok(config)
}

/// A matrix (row-major, `rows x cols`) and, when its rows are not 16-byte multiples (`cols`
/// not a multiple of 8), a copy with rows padded with zeros to `padded_cols`, which a tensor
/// map can describe; the copy is refilled before every launch that reads it.
struct Operand {
    rows: u32,
    cols: u32,
    data: CudaSlice<u16>,
    padded: Option<(u32, CudaSlice<u16>)>,
}

impl Operand {
    fn new(gpu: &Gpu, rows: u32, cols: u32, data: CudaSlice<u16>, what: &str) -> Result<Operand> {
        let padded = if !cols.is_multiple_of(8) {
            let padded_cols = cols.next_multiple_of(8);
            let len = rows as usize * padded_cols as usize;
            Some((
                padded_cols,
                gpu.zeros::<u16>(len, &format!("{what} padded"))?,
            ))
        } else {
            None
        };
        Ok(Operand {
            rows,
            cols,
            data,
            padded,
        })
    }

    /// The buffer and row length a kernel reads (rows 16-byte multiples, as a tensor map or a
    /// 16-byte `cp.async` needs): the matrix itself, or its padded copy ([`pad_operands`]
    /// refills it).
    fn aligned(&self) -> (&CudaSlice<u16>, u32) {
        match &self.padded {
            Some((padded_cols, copy)) => (copy, *padded_cols),
            None => (&self.data, self.cols),
        }
    }
}

/// `bf16_pad_rows`'s parameters: two matrices' sources, copies and rows, then k and kp.
type PadParams = (
    *const Bf16,
    *mut Bf16,
    u32,
    *const Bf16,
    *mut Bf16,
    u32,
    u32,
    u32,
);

/// Queues the refill of the padded copies of `a` and `b` (those that have one): each row of
/// `cols` into a row of `padded_cols`, zeros past `cols`. One `bf16_pad_rows` launch when both
/// need one with the same row lengths (A and B `n x k`), one each otherwise, `unused` standing
/// in for the absent second copy (0 rows: never touched). The copy engine's 2-D copy
/// (`cuMemcpy2DAsync`) was slower with these odd pitches, and so was a launch per operand
/// when one serves both (docs/results.md).
fn pad_operands(
    gpu: &Gpu,
    pad: &Kernel<PadParams>,
    a: &mut Operand,
    b: &mut Operand,
    unused: &mut CudaSlice<u16>,
) -> Result<()> {
    let launch =
        |first: &mut Operand, second: Option<&mut Operand>, unused: &mut CudaSlice<u16>| {
            let Some((kp, first_copy)) = &mut first.padded else {
                return Ok(());
            };
            let (k, kp) = (first.cols, *kp);
            let (second_data, second_copy, second_rows) = match second {
                Some(Operand {
                    data,
                    rows,
                    padded: Some((_, copy)),
                    ..
                }) => (&*data, copy, *rows),
                _ => (&first.data, unused, 0),
            };
            let rows = first.rows as u64 + second_rows as u64;
            let warps_per_block = (HELPER_THREADS / 32) as u64;
            let blocks = rows.div_ceil(warps_per_block).min(8 * 1024) as u32;
            let config = LaunchConfig::linear(blocks, HELPER_THREADS, 0);
            // SAFETY: bf16_pad_rows: each source holds rows * k BF16 and each copy rows * kp
            // (driver allocations: 256-byte aligned), kp = k rounded up to 8 (a second matrix of
            // 0 rows is never read or written).
            unsafe {
                pad.launch(
                    gpu,
                    config,
                    (
                        &first.data,
                        first_copy,
                        first.rows,
                        second_data,
                        second_copy,
                        second_rows,
                        k,
                        kp,
                    ),
                )
            }
        };
    if a.padded.is_some() && b.padded.is_some() && a.cols == b.cols {
        launch(a, Some(b), unused)?;
    } else {
        launch(a, None, unused)?;
        launch(b, None, unused)?;
    }
    Ok(())
}

/// A, B, C, the reference, cuBLAS, the resolved kernels.
pub struct Bf16Problem {
    size: Mnk,
    values: Values,
    /// A, `m x k`.
    a: Operand,
    /// B, `n x k`.
    b: Operand,
    /// B as `k x n` row-major (for the `b_kn` kernels and cuBLAS's NN GEMM).
    b_kn: Operand,
    pad: Kernel<PadParams>,
    /// What `pad` is given for an absent second matrix (never touched).
    pad_unused: CudaSlice<u16>,
    c: CudaSlice<u16>,
    widened: CudaSlice<f32>,
    widen: Kernel<(*const Bf16, *mut f32, u64, u32)>,
    reference: Reference,
    cublas: Result<Blas, String>,
    /// cuBLASLt's handle and its plan for this shape (dropped before the handle).
    cublas_lt: Result<(LtGemm, BlasLt), String>,
    /// Each family's entry point for this N, resolved once (none without the sm_90a module).
    entries: Vec<(&'static Bf16Kernel, Resolved)>,
    maps: TensorMaps,
}

impl Bf16Problem {
    fn new(gpu: &Gpu, size: Mnk, inputs: Inputs) -> Result<Bf16Problem> {
        let Mnk { m, n, k } = size;
        ensure!(
            (m as u64) * (n as u64) < 1 << 31,
            "{size}: M x N must be below 2^31"
        );
        let (a_host, b_host) = generate_inputs(size, inputs.values, inputs.seed);
        let (nu, ku) = (n as usize, k as usize);
        let mut b_kn_host = vec![0u16; b_host.len()];
        for (j, row) in b_host.chunks_exact(ku).enumerate() {
            for (kk, &x) in row.iter().enumerate() {
                b_kn_host[kk * nu + j] = x;
            }
        }
        let a = Operand::new(gpu, m, k, gpu.upload(&a_host, "A")?, "A")?;
        let b = Operand::new(gpu, n, k, gpu.upload(&b_host, "B")?, "B")?;
        let b_kn = Operand::new(gpu, k, n, gpu.upload(&b_kn_host, "B (k x n)")?, "B (k x n)")?;
        drop((a_host, b_host, b_kn_host));
        let mn = m as usize * n as usize;
        let c = gpu.zeros::<u16>(mn, "C")?;
        let widened = gpu.zeros::<f32>(mn, "C widened")?;
        let reference = {
            let mut c64 = gpu.zeros::<f64>(mn, "the reference C")?;
            let config = LaunchConfig::linear(
                (mn as u64).div_ceil(HELPER_THREADS as u64) as u32,
                HELPER_THREADS,
                0,
            );
            let kernel = gpu.entry_point(bf16_gemm_reference)?;
            // SAFETY: bf16_gemm_reference(a, b, c, m, n, k) reads m*k and n*k BF16 and
            // writes m*n doubles, which the buffers hold; the 1-D grid covers m*n threads
            // (below 2^31, checked).
            unsafe { kernel.launch(gpu, config, (&a.data, &b.data, &mut c64, m, n, k))? };
            gpu.synchronize(|| format!("computing the reference of a {size} BF16 GEMM"))?;
            Reference::new(gpu, c64, "the reference C")?
        };
        let info = gpu.info();
        let sm90a_loaded = info.specific.is_some_and(|(arch, _)| arch == Arch::Sm90a);
        let mut entries = Vec::new();
        if sm90a_loaded {
            for kernel in BF16_KERNELS {
                let resolved = match (&kernel.entries, kernel.epilogue_for(n)) {
                    (Bf16Entries::TensorMaps { tensor_store, .. }, Epilogue::TensorStore) => {
                        Resolved::TensorStore(gpu.entry_point(*tensor_store)?)
                    }
                    (Bf16Entries::TensorMaps { direct, .. }, Epilogue::Direct) => {
                        Resolved::Direct(gpu.entry_point(*direct)?)
                    }
                    (Bf16Entries::Pointers { tensor_store, .. }, Epilogue::TensorStore) => {
                        Resolved::CpAsyncTensorStore(gpu.entry_point(*tensor_store)?)
                    }
                    (Bf16Entries::Pointers { direct, .. }, Epilogue::Direct) => {
                        Resolved::CpAsyncDirect(gpu.entry_point(*direct)?)
                    }
                };
                entries.push((kernel, resolved));
            }
        }
        Ok(Bf16Problem {
            size,
            values: inputs.values,
            a,
            b,
            b_kn,
            pad: gpu.entry_point(bf16_pad_rows)?,
            pad_unused: gpu.zeros::<u16>(8, "the pad's unused copy")?,
            c,
            widened,
            widen: gpu.entry_point(bf16_widen)?,
            reference,
            cublas: Blas::open(gpu, cublas::cublasMath_t::CUBLAS_DEFAULT_MATH),
            cublas_lt: BlasLt::open(gpu).and_then(|lt| Ok((lt.bf16_gemm_abt(gpu, m, n, k)?, lt))),
            entries,
            maps: TensorMaps::default(),
        })
    }
}

impl Problem<Bf16Experiment> for Bf16Problem {
    fn unavailable(&self, experiment: &Bf16Experiment) -> Option<Unavailable> {
        match (experiment, &self.cublas) {
            (Bf16Experiment::Cublas | Bf16Experiment::CublasBKn, Err(why)) => {
                Some(Unavailable::Missing(why.clone()))
            }
            (Bf16Experiment::CublasLt, _) => self
                .cublas_lt
                .as_ref()
                .err()
                .cloned()
                .map(Unavailable::Missing),
            (Bf16Experiment::Kernel(_), _) if self.entries.is_empty() => Some(
                Unavailable::Missing("needs the sm_90a module (compute capability 9.0)".into()),
            ),
            _ => None,
        }
    }

    fn poison(&mut self, gpu: &Gpu, _: &Bf16Experiment) -> Result<()> {
        Ok(gpu.fill_u16(&mut self.c, BF16_POISON, "C")?)
    }

    fn launch(&mut self, gpu: &Gpu, experiment: &Bf16Experiment) -> Result<()> {
        let Mnk { m, n, k } = self.size;
        match experiment {
            Bf16Experiment::Kernel(kernel) => {
                let Some((_, entry)) = self.entries.iter().find(|(f, _)| std::ptr::eq(*f, *kernel))
                else {
                    bail!("{} is not loaded (no sm_90a module)", kernel.name);
                };
                let b_operand = match kernel.b_layout {
                    BLayout::NK => &mut self.b,
                    BLayout::KN => &mut self.b_kn,
                };
                pad_operands(gpu, &self.pad, &mut self.a, b_operand, &mut self.pad_unused)?;
                let (a_buffer, kp) = self.a.aligned();
                let (b_buffer, b_dims, b_box) = match kernel.b_layout {
                    BLayout::NK => {
                        let (b, bk) = self.b.aligned();
                        (b, (bk, n), kernel.cluster.b_box())
                    }
                    BLayout::KN => {
                        let (b, np) = self.b_kn.aligned();
                        (b, (np, k), super::BKnTile::BOX)
                    }
                };
                let (a, b) = (gpu.address(a_buffer), gpu.address(b_buffer));
                let geometry = kernel.style.geometry();
                let config = launch_config(gpu, kernel, entry, m, n)?;
                let (a_box, c_box) = (kernel.cluster.a_box(geometry), CBox::BOX);
                debug_assert_eq!(BK, a_box[0]);
                let map = |address, dims, [box_cols, box_rows]: [u32; 2]| {
                    self.maps.matrix(
                        ElementType::BF16,
                        address,
                        dims,
                        (box_cols, box_rows),
                        SWIZZLE,
                    )
                };
                let a_map = map(a, (kp, m), a_box)?;
                let b_map = map(b, b_dims, b_box)?;
                // SAFETY (both): the kernels take maps of A (kp x m) and B (kp x n, or for the
                // b_kn kernels n' x k) BF16 with the tiles' boxes, 128-byte swizzle and zero
                // fill (so padded columns, zeros too, add nothing: A's and B's past k meet
                // zeros, B's past n only feed columns of C that are never stored), and C (m x n BF16, which `c` holds) as a
                // map with CBox's box (tensor store: N a multiple of 8, so its rows are
                // 16-byte multiples) or a pointer; m, n, kp; 1-D grid, the style's threads,
                // the epilogue's shared memory.
                // The `cp_async` kernels take A and B (`n x k`) themselves: driver allocations
                // (16-byte aligned), rows of kp elements, kp a multiple of 8.
                match entry {
                    Resolved::TensorStore(entry) => {
                        let c_map = map(gpu.address(&self.c), (n, m), c_box)?;
                        unsafe { entry.launch(gpu, config, (&a_map, &b_map, &c_map, m, n, kp))? }
                    }
                    Resolved::Direct(entry) => unsafe {
                        entry.launch(gpu, config, (&a_map, &b_map, &mut self.c, m, n, kp))?
                    },
                    Resolved::CpAsyncTensorStore(entry) => {
                        let c_map = map(gpu.address(&self.c), (n, m), c_box)?;
                        unsafe {
                            entry.launch(gpu, config, (a_buffer, b_buffer, &c_map, m, n, kp))?
                        }
                    }
                    Resolved::CpAsyncDirect(entry) => unsafe {
                        entry.launch(gpu, config, (a_buffer, b_buffer, &mut self.c, m, n, kp))?
                    },
                }
            }
            Bf16Experiment::CublasLt => {
                let (plan, handle) = match &self.cublas_lt {
                    Ok(lt) => lt,
                    Err(why) => bail!("cuBLASLt is unavailable: {why}"),
                };
                let (a, b) = (gpu.address(&self.a.data), gpu.address(&self.b.data));
                let c = gpu.address(&self.c);
                // SAFETY: the plan is this problem's shape; the buffers hold A, B and C.
                unsafe { plan.run(handle, gpu, a, b, c) }
                    .map_err(|e| anyhow::anyhow!("{e} ({})", self.size))?;
            }
            Bf16Experiment::Cublas | Bf16Experiment::CublasBKn => {
                let handle = match &self.cublas {
                    Ok(cublas) => cublas.handle(),
                    Err(why) => bail!("cuBLAS is unavailable: {why}"),
                };
                let (alpha, beta) = (1.0f32, 0.0f32);
                let a = gpu.address(&self.a.data);
                let c = gpu.address(&self.c);
                let (mi, ni, ki) = (m as i32, n as i32, k as i32);
                // Row-major C = A B^T is column-major C^T (n x m, ld n) = B A^T, where A's
                // memory is A^T column-major (ld k): op N; B's (n x k row-major) is B^T
                // column-major (ld k): op T — the TN GEMM. With B k x n row-major, its memory
                // is B column-major... as C^T = B^T A^T needs: op N, ld n — the NN GEMM.
                let (b, op_b, ldb) = match experiment {
                    Bf16Experiment::CublasBKn => (
                        gpu.address(&self.b_kn.data),
                        cublas::cublasOperation_t::CUBLAS_OP_N,
                        ni,
                    ),
                    _ => (
                        gpu.address(&self.b.data),
                        cublas::cublasOperation_t::CUBLAS_OP_T,
                        ki,
                    ),
                };
                // SAFETY: a live handle on the GPU's stream; the buffers hold what the leading
                // dimensions describe.
                let status = unsafe {
                    cublas::cublasGemmEx(
                        handle,
                        op_b,
                        cublas::cublasOperation_t::CUBLAS_OP_N,
                        ni,
                        mi,
                        ki,
                        (&alpha as *const f32).cast(),
                        b as *const _,
                        cublas::cudaDataType_t::CUDA_R_16BF,
                        ldb,
                        a as *const _,
                        cublas::cudaDataType_t::CUDA_R_16BF,
                        ki,
                        (&beta as *const f32).cast(),
                        c as *mut _,
                        cublas::cudaDataType_t::CUDA_R_16BF,
                        ni,
                        cublas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        cublas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                    )
                };
                ensure!(
                    status == cublas::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
                    "cublasGemmEx ({}) failed: {status:?}",
                    self.size
                );
            }
        }
        Ok(())
    }

    fn check(&mut self, gpu: &Gpu, _: &Bf16Experiment) -> Result<CheckReport> {
        let len = self.c.len() as u64;
        let blocks = (len.div_ceil(HELPER_THREADS as u64)).min(4 * 1024) as u32;
        // SAFETY: bf16_widen(src, dst, len, poison): both buffers hold `len` elements; any
        // 1-D grid of HELPER_THREADS blocks.
        unsafe {
            self.widen.launch(
                gpu,
                LaunchConfig::linear(blocks, HELPER_THREADS, 0),
                (&self.c, &mut self.widened, len, POISON.to_bits()),
            )?
        };
        self.reference
            .check(gpu, &self.widened, self.values, bf16_output_tolerance())
    }

    /// In C itself, as BF16 (the check widens C); for a library, a `BM x BN` tile.
    fn plant(&mut self, gpu: &Gpu, experiment: &Bf16Experiment, fault: Fault) -> Result<usize> {
        let tile = match experiment {
            Bf16Experiment::Kernel(kernel) => (kernel.style.geometry().tile_m, BN),
            _ => (BM, BN),
        };
        let (size, c) = ((self.size.m, self.size.n), &mut self.c);
        let wrong = |bits| Bf16::from_f32(far_off(Bf16(bits).to_f32())).0;
        plant_in_matrix(gpu, c, size, tile, fault, BF16_POISON, wrong)
    }

    fn work(&self) -> Work {
        Work::Flops(self.size.flops())
    }

    /// For a family that runs in clusters, its grid: how many clusters the GPU holds at once
    /// can leave SMs without a block.
    fn note(&mut self, gpu: &Gpu, experiment: &Bf16Experiment) -> Result<Option<String>> {
        let Bf16Experiment::Kernel(kernel) = experiment else {
            return Ok(None);
        };
        if kernel.cluster == TileCluster::NONE {
            return Ok(None);
        }
        let Some((_, entry)) = self.entries.iter().find(|(f, _)| std::ptr::eq(*f, *kernel)) else {
            return Ok(None);
        };
        let Mnk { m, n, .. } = self.size;
        let blocks = launch_config(gpu, kernel, entry, m, n)?.grid.0;
        let TileCluster { m: cm, n: cn } = kernel.cluster;
        Ok(Some(format!(
            "{blocks} blocks in {} clusters of {cm}x{cn} tiles ({} SMs)",
            blocks / kernel.cluster.blocks(),
            gpu.info().multiprocessors
        )))
    }
}

#[cfg(test)]
mod tests;
