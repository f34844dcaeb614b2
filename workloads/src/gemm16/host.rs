//! The BF16 and FP16 GEMMs ([`super`]): `C = A B^T` (or `C = A B`), every kernel against four
//! cuBLAS baselines on the same buffers — BF16 `cublasGemmEx` TN (B `n x k`) and NN (B
//! `k x n`), BF16 cuBLASLt, and FP16 `cublasGemmEx` TN — the fastest of them on each problem
//! being the reference (on Hopper both types run at one tensor-core rate, so the fastest 16-bit
//! cuBLAS is the bar for both); each row checked against a reference kernel of our own that
//! accumulates the inputs of its element type in `f64`.
//!
//! Inputs: one stream of draws from the seed, rounded to each element type (so the BF16 and
//! FP16 problems multiply the same values, each as its type holds them); each type has its
//! own A, B, reference and tolerance, C is shared (poisoned before every checked launch).
//!
//! Checks (the output widened to f32 on the GPU, the poison kept apart):
//! - random inputs in [-1, 1), BF16: every element within `2^-8` of the reference relative to
//!   `max(|ref|, max_i |ref_i|)`, and `||C - ref|| / ||ref||` within `2^-8`
//!   ([`output_tolerance`]): rounding C to BF16 (8 significant bits) moves an element by at
//!   most `2^-8` of its size — the bound itself for the largest element, everything else judged
//!   on that scale, and the norm-wise error well under half of it — FP32 accumulation by about
//!   `sqrt(K) 2^-24`, far less; a missing or repeated k-tile moves C by `sqrt(64 / K)` of its
//!   scale (9% at K = 8192), twenty times the bound;
//! - the same, FP16: `2^-10` on both — rounding C to FP16 (11 significant bits) moves an
//!   element by at most `2^-11` of its size, so a factor two of margin even for the largest,
//!   and four times stricter than BF16's — plus what FP16's subnormals add below `2^-14` (a
//!   step of `2^-24` whatever the value: the bound adds `2^-24` per element, nothing at any
//!   realistic scale). C stays far inside FP16's range (65504): `|C| <= K`, about `sqrt(K) / 3`
//!   for these inputs;
//! - small integers, exact: A keeps at most 4 non-zeros per row (integers in [-8, 8]), B any
//!   integers in [-8, 8], so every product and partial sum is an integer below 2^24 (exact in
//!   FP32) and every result at most 256 in magnitude (exact in BF16 and FP16): C must equal the
//!   reference bit for bit.
//!
//! Rows that no tensor map can describe (K, or for B `k x n` N, not a multiple of 8): each
//! launch first copies those operands into buffers whose rows are padded with zeros to a
//! multiple of 8 (`gemm16_pad_rows`, which copies bits: either type), and multiplies those; the
//! time includes the copies.

use super::{
    BK, BLayout, BM, BN, Bf16CpAsyncParams, Bf16CpAsyncStoreParams, Bf16GemmParams, C_POISON, CBox,
    DirectEntry, ElementType, Epilogue, F16GemmParams, GEMM16_KERNELS, Gemm16Entries, Gemm16Kernel,
    GemmStoreParams, HELPER_THREADS, TileCluster, bf16_gemm_reference, bf16_widen,
    f16_gemm_reference, f16_widen, gemm16_pad_rows,
};
use crate::gemm::host::{Mnk, parse_mnk, plant_in_matrix};
use crate::verify::{verify_against_reference, verify_reference_scale};
use anyhow::{Result, bail};
use gpu::wgmma::{Bf16, F16};
use gpu_kernels::gemm16::{Gemm16, Gemm16Schedule, GemmShape};
use gpu_runtime::blas::{Blas, sys as cublas};
use gpu_runtime::blaslt::{BlasLt, LtGemm};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::tensor_map::{self, Swizzle, TensorMaps};
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{CheckReport, POISON};
use harness::experiment::{
    Experiment, Fault, Inputs, Problem, Role, Unavailable, Values, Work, Workload,
};
pub(crate) use operands::far_off_bits;
use operands::{ElementInputs, Padder, input_bytes};
pub use operands::{generate_inputs, output_tolerance};
use ptx_builder::Arch;
use std::sync::LazyLock;

mod gemm_ex;
mod operands;

/// The BF16 GEMM workload (its FP16 families beside the BF16 ones).
pub struct Gemm16Workload;

/// One experiment: cuBLAS, or a kernel of ours.
#[derive(Clone, Copy, Debug)]
pub enum Gemm16Experiment {
    /// `cublasGemmEx`, BF16 in and out, FP32 compute: a baseline.
    Cublas,
    /// cuBLASLt's `cublasLtMatmul` with its heuristic's best algorithm and a 32 MiB workspace
    /// (what PyTorch's `matmul` runs): another baseline (the fastest baseline is the
    /// reference of each problem).
    CublasLt,
    /// `cublasGemmEx` on B stored `k x n` row-major (`C = A B`: the NN GEMM), the reference
    /// layout of the `b_kn` kernels (a baseline too).
    CublasBKn,
    /// `cublasGemmEx`, FP16 in and out, FP32 compute: the FP16 families' counterpart of
    /// [`Gemm16Experiment::Cublas`] (a baseline too).
    CublasF16,
    /// A kernel of ours.
    Kernel(&'static Gemm16Kernel),
    /// What a user calls: `gpu_kernels::gemm16::Gemm16::bf16` (B `n x k`), the schedule its
    /// cost model picks for the shape, through its own module.
    Library,
}

static EXPERIMENTS: LazyLock<Vec<Gemm16Experiment>> = LazyLock::new(|| {
    [
        Gemm16Experiment::Cublas,
        Gemm16Experiment::CublasLt,
        Gemm16Experiment::CublasBKn,
        Gemm16Experiment::CublasF16,
    ]
    .into_iter()
    .chain(GEMM16_KERNELS.iter().map(Gemm16Experiment::Kernel))
    .chain([Gemm16Experiment::Library])
    .collect()
});

/// The row name of cuBLAS's `cublasGemmEx`.
pub const CUBLAS: &str = "cublas_gemm_ex_bf16";
/// The row name of cuBLASLt.
pub const CUBLAS_LT: &str = "cublaslt_matmul_bf16";
/// The row name of cuBLAS's `cublasGemmEx` with B `k x n`.
pub const CUBLAS_B_KN: &str = "cublas_gemm_ex_bf16_b_kn";
/// The row name of cuBLAS's FP16 `cublasGemmEx`.
pub const CUBLAS_F16: &str = "cublas_gemm_ex_f16";
/// The row name of [`Gemm16Experiment::Library`].
pub const LIBRARY: &str = "gemm16";

impl Gemm16Experiment {
    /// The element type of its A, B and C.
    pub fn element(&self) -> ElementType {
        match self {
            Gemm16Experiment::Cublas
            | Gemm16Experiment::CublasLt
            | Gemm16Experiment::CublasBKn
            | Gemm16Experiment::Library => ElementType::Bf16,
            Gemm16Experiment::CublasF16 => ElementType::F16,
            Gemm16Experiment::Kernel(k) => k.element,
        }
    }

    /// The kernel family, for a kernel of ours.
    fn family(&self) -> Option<&'static Gemm16Kernel> {
        match self {
            Gemm16Experiment::Kernel(k) => Some(k),
            _ => None,
        }
    }
}

impl Experiment for Gemm16Experiment {
    fn name(&self) -> &'static str {
        match self {
            Gemm16Experiment::Cublas => CUBLAS,
            Gemm16Experiment::CublasLt => CUBLAS_LT,
            Gemm16Experiment::CublasBKn => CUBLAS_B_KN,
            Gemm16Experiment::CublasF16 => CUBLAS_F16,
            Gemm16Experiment::Kernel(k) => k.name,
            Gemm16Experiment::Library => LIBRARY,
        }
    }
    fn role(&self) -> Role {
        match self {
            Gemm16Experiment::Kernel(_) | Gemm16Experiment::Library => Role::Library,
            _ => Role::Baseline,
        }
    }
    fn style(&self) -> &'static str {
        match self {
            Gemm16Experiment::Cublas => "cublas",
            Gemm16Experiment::CublasLt => "cublaslt",
            Gemm16Experiment::CublasBKn => "cublas_b_kn",
            Gemm16Experiment::CublasF16 => "cublas_f16",
            Gemm16Experiment::Kernel(k) => k.style_label(),
            Gemm16Experiment::Library => "dispatch",
        }
    }
    fn stages(&self) -> Option<u32> {
        self.family().map(|k| k.style.geometry().stages)
    }
    fn threads(&self) -> Option<u32> {
        self.family().map(|k| k.style.threads())
    }
    fn shared_bytes(&self) -> Option<u32> {
        self.family().map(|k| k.style.geometry().shared().bytes)
    }
    fn summary(&self) -> &'static str {
        match self {
            Gemm16Experiment::Cublas => {
                "cublasGemmEx: BF16 A, B and C, FP32 compute, row-major C = A B^T as the TN GEMM"
            }
            Gemm16Experiment::CublasLt => {
                "cublasLtMatmul: the same GEMM, the heuristic's best algorithm, 32 MiB workspace"
            }
            Gemm16Experiment::CublasBKn => {
                "cublasGemmEx with B k x n row-major: C = A B as the NN GEMM"
            }
            Gemm16Experiment::CublasF16 => {
                "cublasGemmEx: FP16 A, B and C, FP32 compute, row-major C = A B^T as the TN GEMM"
            }
            Gemm16Experiment::Kernel(k) => k.summary(),
            Gemm16Experiment::Library => {
                "gpu_kernels::gemm16::Gemm16::bf16: ws_cooperative or ws_pingpong, as its cost \
                 model picks for the shape"
            }
        }
    }
    fn entry_points(&self) -> Vec<&'static str> {
        self.family()
            .map_or(Vec::new(), |k| k.entries.names().to_vec())
    }
    fn archs(&self) -> &'static [Arch] {
        match self {
            Gemm16Experiment::Kernel(_) | Gemm16Experiment::Library => &[Arch::Sm90a],
            _ => &Arch::PORTABLE,
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

/// Bytes of device memory a problem takes: each element type's inputs and reference
/// (`operands::input_bytes`), C (16 bits, shared), its f32 widening, cuBLASLt's workspace.
fn device_bytes(size: Mnk) -> u64 {
    let mn = size.m as u64 * size.n as u64;
    ElementType::ALL
        .iter()
        .map(|&e| input_bytes(size, e))
        .sum::<u64>()
        + (2 + 4) * mn
        + gpu_runtime::blaslt::WORKSPACE_BYTES as u64
}

impl Workload for Gemm16Workload {
    type Experiment = Gemm16Experiment;
    type Size = Mnk;
    type Problem = Gemm16Problem;

    fn name(&self) -> &'static str {
        "gemm16"
    }
    fn summary(&self) -> &'static str {
        "C = A B^T, BF16 (and FP16) in and out, FP32 accumulate, any size, on wgmma + TMA (sm_90a) vs cuBLAS"
    }
    fn experiments(&self) -> &'static [Gemm16Experiment] {
        &EXPERIMENTS
    }
    fn helper_kernels(&self) -> &'static [&'static str] {
        const HELPERS: &[&str] = &[
            bf16_gemm_reference.name(),
            f16_gemm_reference.name(),
            bf16_widen.name(),
            f16_widen.name(),
            gemm16_pad_rows.name(),
            verify_reference_scale.name(),
            verify_against_reference.name(),
        ];
        HELPERS
    }
    fn timed_helper_kernels(&self) -> &'static [&'static str] {
        const TIMED: &[&str] = &[gemm16_pad_rows.name()];
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
    fn prepare(&self, gpu: &Gpu, size: Mnk, inputs: Inputs) -> Result<Gemm16Problem> {
        Gemm16Problem::new(gpu, size, inputs)
    }
}

/// A family's entry point for one N.
pub enum LoadedEntry {
    /// TMA loads, TMA (or bulk) store.
    TensorStore(Kernel<GemmStoreParams>),
    /// TMA loads, stores from registers.
    Direct(Kernel<Bf16GemmParams>),
    /// The FP16 twin of `Direct`.
    F16Direct(Kernel<F16GemmParams>),
    /// `cp.async` loads, TMA store.
    CpAsyncTensorStore(Kernel<Bf16CpAsyncStoreParams>),
    /// `cp.async` loads, stores from registers.
    CpAsyncDirect(Kernel<Bf16CpAsyncParams>),
}

impl LoadedEntry {
    /// `cuOccupancyMaxActiveClusters` for this entry point at `config`.
    fn max_active_clusters(&self, gpu: &Gpu, config: LaunchConfig) -> Result<u32> {
        Ok(match self {
            LoadedEntry::TensorStore(k) => k.max_active_clusters(gpu, config)?,
            LoadedEntry::Direct(k) => k.max_active_clusters(gpu, config)?,
            LoadedEntry::F16Direct(k) => k.max_active_clusters(gpu, config)?,
            LoadedEntry::CpAsyncTensorStore(k) => k.max_active_clusters(gpu, config)?,
            LoadedEntry::CpAsyncDirect(k) => k.max_active_clusters(gpu, config)?,
        })
    }
}

/// A kernel's persistent grid: one block per SM, at most one per tile; for a family that runs
/// in clusters, as many whole clusters as can be resident at once (a GPC's SMs need not pair
/// up), at most one per cluster's patch of tiles.
fn launch_config(
    gpu: &Gpu,
    kernel: &Gemm16Kernel,
    entry: &LoadedEntry,
    m: u32,
    n: u32,
) -> Result<LaunchConfig> {
    let geometry = kernel.style.geometry();
    let (tiles_m, tiles_n) = geometry.tiles(m, n);
    let mut config = LaunchConfig::linear(
        (tiles_m * tiles_n).min(gpu.info().multiprocessors),
        kernel.style.threads(),
        geometry.shared().bytes,
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

/// Each element type's inputs and reference, C, cuBLAS, the resolved kernels.
pub struct Gemm16Problem {
    size: Mnk,
    values: Values,
    /// BF16's inputs and reference.
    bf16: ElementInputs,
    /// FP16's.
    f16: ElementInputs,
    padder: Padder,
    /// C, of either element (each experiment poisons it before its checked launch).
    c: CudaSlice<u16>,
    widened: CudaSlice<f32>,
    widen_bf16: Kernel<(*const Bf16, *mut f32, u64, u32)>,
    widen_f16: Kernel<(*const F16, *mut f32, u64, u32)>,
    cublas: Result<Blas, String>,
    /// cuBLASLt's handle and its plan for this shape (dropped before the handle).
    cublas_lt: Result<(LtGemm, BlasLt), String>,
    /// The crate's GEMM, as a user loads it.
    gemm16: Result<Gemm16, String>,
    /// Whether the sm_90a module is loaded: our kernels run only there.
    sm90a_loaded: bool,
    maps: TensorMaps,
}

impl Gemm16Problem {
    fn new(gpu: &Gpu, size: Mnk, inputs: Inputs) -> Result<Gemm16Problem> {
        let Mnk { m, n, k } = size;
        anyhow::ensure!(
            (m as u64) * (n as u64) < 1 << 31,
            "{size}: M x N must be below 2^31"
        );
        let bf16 = ElementInputs::new(gpu, size, inputs, ElementType::Bf16)?;
        let f16 = ElementInputs::new(gpu, size, inputs, ElementType::F16)?;
        let mn = m as usize * n as usize;
        let info = gpu.info();
        let sm90a_loaded = info.specific.is_some_and(|(arch, _)| arch == Arch::Sm90a);
        Ok(Gemm16Problem {
            size,
            values: inputs.values,
            bf16,
            f16,
            padder: Padder::new(gpu)?,
            c: gpu.zeros::<u16>(mn, "C")?,
            widened: gpu.zeros::<f32>(mn, "C widened")?,
            widen_bf16: gpu.entry_point(bf16_widen)?,
            widen_f16: gpu.entry_point(f16_widen)?,
            cublas: Blas::open(gpu, cublas::cublasMath_t::CUBLAS_DEFAULT_MATH),
            cublas_lt: BlasLt::open(gpu).and_then(|lt| Ok((lt.bf16_gemm_abt(gpu, m, n, k)?, lt))),
            sm90a_loaded,
            gemm16: Gemm16::load(gpu).map_err(|e| e.to_string()),
            maps: TensorMaps::default(),
        })
    }

    /// `kernel`'s entry point for this N.
    fn resolve_kernel(gpu: &Gpu, kernel: &Gemm16Kernel, n: u32) -> Result<LoadedEntry> {
        Ok(match (&kernel.entries, kernel.epilogue_for(n)) {
            (Gemm16Entries::TensorMaps { tensor_store, .. }, Epilogue::TensorStore) => {
                LoadedEntry::TensorStore(gpu.entry_point(*tensor_store)?)
            }
            (Gemm16Entries::TensorMaps { direct, .. }, Epilogue::Direct) => match direct {
                DirectEntry::Bf16(direct) => LoadedEntry::Direct(gpu.entry_point(*direct)?),
                DirectEntry::F16(direct) => LoadedEntry::F16Direct(gpu.entry_point(*direct)?),
            },
            (Gemm16Entries::Pointers { tensor_store, .. }, Epilogue::TensorStore) => {
                LoadedEntry::CpAsyncTensorStore(gpu.entry_point(*tensor_store)?)
            }
            (Gemm16Entries::Pointers { direct, .. }, Epilogue::Direct) => {
                LoadedEntry::CpAsyncDirect(gpu.entry_point(*direct)?)
            }
        })
    }

    /// The inputs and reference of `element`.
    fn inputs(&self, element: ElementType) -> &ElementInputs {
        match element {
            ElementType::Bf16 => &self.bf16,
            ElementType::F16 => &self.f16,
        }
    }

    /// Queues one launch of a kernel of ours: the padded copies its operands need first, then
    /// the kernel on its element's inputs.
    fn launch_kernel(
        &mut self,
        gpu: &Gpu,
        kernel: &'static Gemm16Kernel,
        entry: &LoadedEntry,
    ) -> Result<()> {
        let Mnk { m, n, k } = self.size;
        let inputs = match kernel.element {
            ElementType::Bf16 => &mut self.bf16,
            ElementType::F16 => &mut self.f16,
        };
        const KEPT: &str = "B k x n is kept for every family that reads it";
        let b_operand = match kernel.b_layout {
            BLayout::NK => &mut inputs.b,
            BLayout::KN => inputs.b_kn.as_mut().expect(KEPT),
        };
        self.padder.pad_operands(gpu, &mut inputs.a, b_operand)?;
        let (a_buffer, kp) = inputs.a.aligned();
        let (b_buffer, b_dims, b_box) = match kernel.b_layout {
            BLayout::NK => {
                let (b, bk) = inputs.b.aligned();
                (b, (bk, n), kernel.cluster.b_box(kernel.style.geometry()))
            }
            BLayout::KN => {
                let (b, np) = inputs.b_kn.as_ref().expect(KEPT).aligned();
                (b, (np, k), super::BKnTile::BOX)
            }
        };
        let (a, b) = (gpu.address(a_buffer), gpu.address(b_buffer));
        let geometry = kernel.style.geometry();
        let config = launch_config(gpu, kernel, entry, m, n)?;
        let (a_box, c_box) = (kernel.cluster.a_box(geometry), CBox::BOX);
        debug_assert_eq!(BK, a_box[0]);
        let map_element = match kernel.element {
            ElementType::Bf16 => tensor_map::ElementType::BF16,
            ElementType::F16 => tensor_map::ElementType::F16,
        };
        let maps = &mut self.maps;
        let map = |address, dims, [box_cols, box_rows]: [u32; 2]| {
            maps.matrix(map_element, address, dims, (box_cols, box_rows), SWIZZLE)
        };
        let a_map = map(a, (kp, m), a_box)?;
        let b_map = map(b, b_dims, b_box)?;
        let c = &mut self.c;
        // SAFETY (all): the kernels take maps of A (kp x m) and B (kp x n, or for the b_kn
        // kernels n' x k) of their element with the tiles' boxes, 128-byte swizzle and zero
        // fill (so padded columns, zeros too, add nothing: A's and B's past k meet zeros, B's
        // past n only feed columns of C that are never stored), and C (m x n of the element,
        // which `c` holds) as a map with CBox's box (tensor store: N a multiple of 8, so its
        // rows are 16-byte multiples) or a pointer; m, n, kp; 1-D grid, the style's threads,
        // the epilogue's shared memory. The `cp_async` kernels take A and B (`n x k`)
        // themselves: driver allocations (16-byte aligned), rows of kp elements, kp a
        // multiple of 8.
        match entry {
            LoadedEntry::TensorStore(entry) => {
                let c_map = map(gpu.address(c), (n, m), c_box)?;
                unsafe { entry.launch(gpu, config, (&a_map, &b_map, &c_map, m, n, kp))? }
            }
            LoadedEntry::Direct(entry) => unsafe {
                entry.launch(gpu, config, (&a_map, &b_map, c, m, n, kp))?
            },
            LoadedEntry::F16Direct(entry) => unsafe {
                entry.launch(gpu, config, (&a_map, &b_map, c, m, n, kp))?
            },
            LoadedEntry::CpAsyncTensorStore(entry) => {
                let c_map = map(gpu.address(c), (n, m), c_box)?;
                unsafe { entry.launch(gpu, config, (a_buffer, b_buffer, &c_map, m, n, kp))? }
            }
            LoadedEntry::CpAsyncDirect(entry) => unsafe {
                entry.launch(gpu, config, (a_buffer, b_buffer, c, m, n, kp))?
            },
        }
        Ok(())
    }
}

impl Problem<Gemm16Experiment> for Gemm16Problem {
    fn unavailable(&self, experiment: &Gemm16Experiment) -> Option<Unavailable> {
        match (experiment, &self.cublas) {
            (
                Gemm16Experiment::Cublas
                | Gemm16Experiment::CublasBKn
                | Gemm16Experiment::CublasF16,
                Err(why),
            ) => Some(Unavailable::Missing(why.clone())),
            (Gemm16Experiment::CublasLt, _) => self
                .cublas_lt
                .as_ref()
                .err()
                .cloned()
                .map(Unavailable::Missing),
            (Gemm16Experiment::Kernel(_), _) if !self.sm90a_loaded => Some(Unavailable::Missing(
                "needs the sm_90a module (compute capability 9.0)".into(),
            )),
            (Gemm16Experiment::Library, _) => self
                .gemm16
                .as_ref()
                .err()
                .map(|why| Unavailable::Missing(why.clone())),
            _ => None,
        }
    }

    fn poison(&mut self, gpu: &Gpu, _: &Gemm16Experiment) -> Result<()> {
        Ok(gpu.fill_u16(&mut self.c, C_POISON, "C")?)
    }

    /// A family's entry point for this N (none for the libraries).
    type Resolved = Option<LoadedEntry>;

    fn resolve(&self, gpu: &Gpu, experiment: &Gemm16Experiment) -> Result<Option<LoadedEntry>> {
        match experiment {
            Gemm16Experiment::Kernel(kernel) => {
                Ok(Some(Self::resolve_kernel(gpu, kernel, self.size.n)?))
            }
            _ => Ok(None),
        }
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        experiment: &Gemm16Experiment,
        entry: &Option<LoadedEntry>,
    ) -> Result<()> {
        match experiment {
            Gemm16Experiment::Kernel(kernel) => {
                let Some(entry) = entry else {
                    bail!("{} launched without its entry point", kernel.name)
                };
                self.launch_kernel(gpu, kernel, entry)?
            }
            Gemm16Experiment::Library => {
                let gemm = match &self.gemm16 {
                    Ok(gemm) => gemm,
                    Err(why) => bail!("gpu-kernels' 16-bit GEMM is unavailable: {why}"),
                };
                let Mnk { m, n, k } = self.size;
                // The inputs as they are: rows a tensor map cannot describe (K not a
                // multiple of 8) are the API's to copy, in the timed launch.
                let inputs = &self.bf16;
                let (a, b) = (&inputs.a.data, &inputs.b.data);
                // SAFETY: A, B and C hold BF16 bits (this experiment's element).
                let (a, b, c) = unsafe {
                    (
                        a.transmute::<half::bf16>(a.len()),
                        b.transmute::<half::bf16>(b.len()),
                        self.c.transmute_mut::<half::bf16>(self.c.len()),
                    )
                };
                let (Some(a), Some(b), Some(mut c)) = (a, b, c) else {
                    unreachable!("a view of a 16-bit buffer as 16-bit elements fits it");
                };
                gemm.gemm(gpu, &a, &b, BLayout::NK, &mut c, GemmShape { m, n, k })?;
            }
            Gemm16Experiment::CublasLt => {
                let (plan, handle) = match &self.cublas_lt {
                    Ok(lt) => lt,
                    Err(why) => bail!("cuBLASLt is unavailable: {why}"),
                };
                let (a, b) = (
                    gpu.address(&self.bf16.a.data),
                    gpu.address(&self.bf16.b.data),
                );
                let c = gpu.address(&self.c);
                // SAFETY: the plan is this problem's shape; the buffers hold A, B and C.
                unsafe { plan.run(handle, gpu, a, b, c) }
                    .map_err(|e| anyhow::anyhow!("{e} ({})", self.size))?;
            }
            Gemm16Experiment::Cublas
            | Gemm16Experiment::CublasBKn
            | Gemm16Experiment::CublasF16 => {
                let handle = match &self.cublas {
                    Ok(cublas) => cublas.handle(),
                    Err(why) => bail!("cuBLAS is unavailable: {why}"),
                };
                let (element, size) = (experiment.element(), self.size);
                let c = gpu.address(&self.c);
                let inputs = self.inputs(element);
                let a = gpu.address(&inputs.a.data);
                let (b, b_layout) = match (experiment, &inputs.b_kn) {
                    (Gemm16Experiment::CublasBKn, Some(b_kn)) => {
                        (gpu.address(&b_kn.data), BLayout::KN)
                    }
                    _ => (gpu.address(&inputs.b.data), BLayout::NK),
                };
                // SAFETY: a live handle on the GPU's stream; the buffers hold A, B (as laid
                // out) and C, packed, of the experiment's element.
                unsafe { gemm_ex::gemm_ex(handle, element, size, (a, b, b_layout, c))? };
            }
        }
        Ok(())
    }

    fn check(&mut self, gpu: &Gpu, experiment: &Gemm16Experiment) -> Result<CheckReport> {
        let len = self.c.len() as u64;
        let blocks = (len.div_ceil(HELPER_THREADS as u64)).min(4 * 1024) as u32;
        let config = LaunchConfig::linear(blocks, HELPER_THREADS, 0);
        let (c, widened, poison) = (&self.c, &mut self.widened, POISON.to_bits());
        // SAFETY (both): {bf16,f16}_widen(src, dst, len, poison): both buffers hold `len`
        // elements; any 1-D grid of HELPER_THREADS blocks.
        match experiment.element() {
            ElementType::Bf16 => unsafe {
                self.widen_bf16
                    .launch(gpu, config, (c, widened, len, poison))?
            },
            ElementType::F16 => unsafe {
                self.widen_f16
                    .launch(gpu, config, (c, widened, len, poison))?
            },
        }
        let inputs = match experiment.element() {
            ElementType::Bf16 => &mut self.bf16,
            ElementType::F16 => &mut self.f16,
        };
        inputs
            .reference
            .check(gpu, &self.widened, self.values, inputs.tolerance)
    }

    /// In C itself, in the experiment's element (the check widens C); for a library, a
    /// `BM x BN` tile.
    fn plant(&mut self, gpu: &Gpu, experiment: &Gemm16Experiment, fault: Fault) -> Result<usize> {
        let tile = match experiment {
            Gemm16Experiment::Kernel(kernel) => {
                let g = kernel.style.geometry();
                (g.tile_m, g.tile_n)
            }
            _ => (BM, BN),
        };
        let (size, c) = ((self.size.m, self.size.n), &mut self.c);
        let element = experiment.element();
        let wrong = |bits| far_off_bits(element, bits);
        plant_in_matrix(gpu, c, size, tile, fault, C_POISON, wrong)
    }

    fn work(&self) -> Work {
        Work::Flops(self.size.flops())
    }

    /// For a family that runs in clusters, its grid: how many clusters the GPU holds at once
    /// can leave SMs without a block.
    fn note(
        &mut self,
        gpu: &Gpu,
        experiment: &Gemm16Experiment,
        entry: &Option<LoadedEntry>,
    ) -> Result<Option<String>> {
        if let (Gemm16Experiment::Library, Ok(gemm)) = (experiment, &self.gemm16) {
            // The K it multiplies: rows padded to a multiple of 8 (`launch`).
            let Mnk { m, n, k } = self.size;
            let k = k.next_multiple_of(8);
            let schedule = match gemm.schedule_for(GemmShape { m, n, k }) {
                Gemm16Schedule::Cooperative => "ws_cooperative",
                Gemm16Schedule::PingPong => "ws_pingpong",
            };
            return Ok(Some(format!("ran {schedule}")));
        }
        let (Gemm16Experiment::Kernel(kernel), Some(entry)) = (experiment, entry) else {
            return Ok(None);
        };
        if kernel.cluster == TileCluster::NONE {
            return Ok(None);
        }
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
