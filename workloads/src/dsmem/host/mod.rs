//! The DSMEM workloads' host half ([`super`]): sizes (a cluster shape and a distance), the
//! chains and the global buffer, the grid (as many clusters as the GPU holds at once), the
//! launches (clusters given at launch) and the exact checks.

use super::entry_points::{BandwidthParams, LatencyParams};
use super::{
    BANDWIDTH_KERNELS, BUFFER_BYTES, BUFFER_CHUNKS, BandwidthKernel, BandwidthMode,
    CHUNKS_PER_THREAD, ChainKind, GLOBAL_SLICES, GLOBAL_STREAM, HOPS, LATENCY_KERNELS,
    LatencyKernel, LatencyTarget, REPEATS, SHARED_BYTES, THREADS, chain_next, pattern,
};
use anyhow::{Result, bail};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{self, CheckReport, POISON};
use harness::experiment::{
    Experiment, Fault, Inputs, Problem, Role, Unavailable, Values, Work, Workload,
};
use ptx_builder::Arch;
use std::fmt;

/// The largest cluster an H100 / H200 runs (16 with the non-portable opt-in).
pub const MAX_CLUSTER: u32 = 16;

/// A size: clusters of `blocks` blocks (1-D), each block reaching the one `distance` ranks
/// after its own, and optionally fewer steps than the workload's own (hops of a chain,
/// repeats of a buffer: a sanitizer run at a sensible speed). Written `4:1` or `4:1:8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// Blocks per cluster (1-D).
    pub blocks: u32,
    /// How many ranks on each block's peer is, cyclically (below `blocks`).
    pub distance: u32,
    /// Hops or repeats per launch, if not the workload's [`HOPS`] / [`REPEATS`].
    pub steps: Option<u32>,
}

impl Reach {
    /// Clusters of `blocks`, the peer `distance` on, the workload's own steps.
    pub const fn new(blocks: u32, distance: u32) -> Reach {
        Reach {
            blocks,
            distance,
            steps: None,
        }
    }
    /// Hops per latency launch.
    pub fn hops(self) -> u32 {
        self.steps.unwrap_or(HOPS)
    }
    /// Repeats per bandwidth launch.
    pub fn repeats(self) -> u32 {
        self.steps.unwrap_or(REPEATS)
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cluster {}, peer +{}", self.blocks, self.distance)?;
        match self.steps {
            Some(steps) => write!(f, ", {steps} steps"),
            None => Ok(()),
        }
    }
}

/// Reads `C:d[:N]` (clusters of C blocks, peer d ranks on, N hops or repeats; `C` alone:
/// d = 1).
pub fn parse_reach(text: &str) -> Result<Reach, String> {
    let bad = || format!("`{text}` is not a cluster size and distance like 4:1 (or 4:1:8)");
    let mut fields = text.trim().splitn(3, ':').map(str::trim);
    let blocks = fields.next().unwrap_or_default();
    let distance = fields.next();
    let steps = match fields.next() {
        Some(n) => match n.parse::<u32>() {
            Ok(n) if (1..=1 << 24).contains(&n) => Some(n),
            _ => return Err(format!("`{text}`: the steps are 1 to {}", 1 << 24)),
        },
        None => None,
    };
    let blocks: u32 = blocks.parse().map_err(|_| bad())?;
    if !(2..=MAX_CLUSTER).contains(&blocks) {
        return Err(format!(
            "`{text}`: a cluster here has 2 to {MAX_CLUSTER} blocks (the most this GPU \
             generation runs)"
        ));
    }
    let distance = match distance {
        Some(d) => d.parse().map_err(|_| bad())?,
        None => 1,
    };
    if !(1..blocks).contains(&distance) {
        return Err(format!(
            "`{text}`: the distance is 1 to {} (another block of the cluster's {blocks})",
            blocks - 1
        ));
    }
    Ok(Reach {
        blocks,
        distance,
        steps,
    })
}

/// The sizes both workloads run by default: every cluster size, the nearest peer and the
/// farthest (half way round).
fn default_reaches() -> Vec<Reach> {
    [(2, 1), (4, 1), (4, 2), (8, 1), (8, 4), (16, 1), (16, 8)]
        .map(|(blocks, distance)| Reach::new(blocks, distance))
        .to_vec()
}

/// Whether the loaded code is the sm_90 module, which alone holds these kernels (an sm_80
/// run lists them as unavailable).
fn sm90(gpu: &Gpu) -> bool {
    gpu.info().arch == Arch::Sm90
}

/// What `--size` takes (both workloads).
const SIZE_SYNTAX: &str = "C:d[:N] — clusters of C blocks (2-16), each reaching the block d ranks on (1 <= d < C); N hops or repeats per launch (default: the workload's)";

/// The sizes the GPU tests check both workloads at: the smallest cluster, a far peer, the
/// largest (non-portable) cluster half way round.
fn test_reaches() -> Vec<(Values, Reach)> {
    [(2, 1), (4, 3), (16, 8)]
        .map(|(blocks, distance)| (Values::Random, Reach::new(blocks, distance)))
        .to_vec()
}

/// The grid for `reach`: as many clusters as `kernels` all hold at once (one block per SM:
/// their shared memory), or why none fits (none given: the code is not sm_90's).
fn grid<P: gpu_runtime::Params>(
    gpu: &Gpu,
    reach: Reach,
    kernels: &[&Kernel<P>],
) -> Result<Result<u32, String>> {
    if kernels.is_empty() {
        return Ok(Err(format!(
            "needs the sm_90 code; this is the {} code",
            gpu.info().code_label()
        )));
    }
    let config = LaunchConfig::linear(reach.blocks, THREADS, SHARED_BYTES).with_cluster([
        reach.blocks,
        1,
        1,
    ]);
    let mut clusters = u32::MAX;
    for kernel in kernels {
        clusters = clusters.min(kernel.max_active_clusters(gpu, config)?);
    }
    if clusters == 0 {
        return Ok(Err(format!(
            "no cluster of {} blocks of {THREADS} threads with {} KiB of shared memory each \
             fits on this GPU",
            reach.blocks,
            SHARED_BYTES / 1024
        )));
    }
    Ok(Ok(clusters * reach.blocks))
}

/// What both problems launch with: the size, the grid (or why no cluster fits), and where
/// each experiment's kernel is.
struct Launches<E: 'static, P: gpu_runtime::Params> {
    reach: Reach,
    /// Blocks in the grid, or why no cluster fits (or the code is not sm_90's).
    grid: Result<u32, String>,
    entry: fn(&E) -> gpu_runtime::EntryPoint<P>,
}

impl<E, P: gpu_runtime::Params> Launches<E, P> {
    /// Why nothing runs here (no cluster fits, or not the sm_90 code): something missing.
    fn unavailable(&self) -> Option<Unavailable> {
        self.grid.as_ref().err().cloned().map(Unavailable::Missing)
    }

    /// Sizes the grid for `reach`, one that every one of `experiments`' kernels (`entry` gives
    /// each one's; on the sm_90 code only) fits on.
    fn new(
        gpu: &Gpu,
        reach: Reach,
        experiments: &'static [E],
        entry: fn(&E) -> gpu_runtime::EntryPoint<P>,
    ) -> Result<Self> {
        let kernels: Vec<Kernel<P>> = if sm90(gpu) {
            experiments
                .iter()
                .map(|e| Ok(gpu.entry_point(entry(e))?))
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let grid = grid(gpu, reach, &kernels.iter().collect::<Vec<_>>())?;
        Ok(Launches { reach, grid, entry })
    }

    /// Blocks to size the outputs for (one cluster's where none fits).
    fn blocks(&self) -> u32 {
        *self.grid.as_ref().unwrap_or(&self.reach.blocks)
    }

    /// Blocks in the grid, or why there is none.
    fn grid(&self) -> Result<u32> {
        self.grid.clone().map_err(|why| anyhow::anyhow!("{why}"))
    }

    /// `experiment`'s kernel.
    fn resolve(&self, gpu: &Gpu, experiment: &E) -> Result<Kernel<P>> {
        Ok(gpu.entry_point((self.entry)(experiment))?)
    }

    /// The launch: the grid in clusters of the size's blocks, [`THREADS`] threads and
    /// [`SHARED_BYTES`] each.
    fn config(&self) -> Result<LaunchConfig> {
        let grid = self.grid()?;
        Ok(
            LaunchConfig::linear(grid, THREADS, SHARED_BYTES).with_cluster([
                self.reach.blocks,
                1,
                1,
            ]),
        )
    }
}

/// The rank-`distance`-on peer of block `b` (global index) and the block feeding it (the
/// one whose peer it is), in clusters of `blocks`.
fn peer_and_feeder(b: u32, reach: Reach) -> (u32, u32) {
    let (base, rank) = (b - b % reach.blocks, b % reach.blocks);
    let c = reach.blocks;
    (
        base + (rank + reach.distance) % c,
        base + (rank + c - reach.distance) % c,
    )
}

/// Thread `t`'s wrapping sum of one buffer of stream `stream` (its chunks `t + j THREADS`).
fn buffer_sum(stream: u32, t: u32) -> u32 {
    let mut sum = 0u32;
    for j in 0..CHUNKS_PER_THREAD {
        let chunk = t + j * THREADS;
        for k in 0..4 {
            sum = sum.wrapping_add(pattern(stream, 4 * chunk + k));
        }
    }
    sum
}

/// Plants `fault` in the `len` words the check compares, in order, `tile` of them a unit of
/// the kernel's writes: the middle word changed, or the last tile poisoned. Returns its index.
fn plant_words(
    gpu: &Gpu,
    words: &mut CudaSlice<u32>,
    len: usize,
    tile: usize,
    fault: Fault,
) -> Result<usize> {
    let (start, values) = match fault {
        Fault::WrongElement => {
            let got = gpu.download_range(words, len / 2..len / 2 + 1, "an output word")?[0];
            (len / 2, vec![got.wrapping_add(1000)])
        }
        Fault::UnwrittenTile => {
            let start = (len - 1) / tile * tile;
            (start, vec![POISON.to_bits(); len - start])
        }
    };
    gpu.upload_into(&values, words, start, "a fault in the output")?;
    Ok(start)
}

// ---------------------------------------------------------------------------------------
// Latency

/// The latency workload.
pub struct DsmemLatency;

impl Experiment for LatencyKernel {
    fn name(&self) -> &'static str {
        self.name
    }
    fn role(&self) -> Role {
        match self.target {
            LatencyTarget::Local => Role::Baseline,
            _ => Role::Library,
        }
    }
    fn style(&self) -> &'static str {
        match self.target {
            LatencyTarget::Local => "ld.shared",
            LatencyTarget::Remote => "ld.shared::cluster",
            LatencyTarget::L2 => "ld.global.cg (L2)",
            LatencyTarget::Dram => "ld.global.cg (DRAM)",
        }
    }
    fn stages(&self) -> Option<u32> {
        None
    }
    fn threads(&self) -> Option<u32> {
        Some(THREADS)
    }
    fn shared_bytes(&self) -> Option<u32> {
        Some(SHARED_BYTES)
    }
    fn summary(&self) -> &'static str {
        match self.target {
            LatencyTarget::Local => "a dependent chain of loads in the block's own shared memory",
            LatencyTarget::Remote => {
                "a dependent chain of loads in another block's shared memory (DSMEM)"
            }
            LatencyTarget::L2 => "a dependent chain of loads over 512 KiB of global memory (L2)",
            LatencyTarget::Dram => "a dependent chain of loads over 256 MiB of global memory",
        }
    }
    fn archs(&self) -> &'static [Arch] {
        &[Arch::Sm90]
    }
}

/// A chain of `kind` on the host: slot `i`'s word (at `i * slot_words`) is its next slot.
fn chain_words(kind: ChainKind) -> Vec<u32> {
    let (slots, words) = (kind.slots(), kind.slot_words());
    let mut chain = vec![0u32; (slots * words) as usize];
    for i in 0..slots {
        chain[(i * words) as usize] = chain_next(i, slots);
    }
    chain
}

/// The slot block `block` of `grid` reaches in `hops` hops on a chain of `slots` (walked
/// step by step: the check does not trust `chain_jump`, which the kernel uses to start).
fn chain_end(block: u32, grid: u32, slots: u32, hops: u32) -> u32 {
    let start = (0..block * (slots / grid)).fold(0, |slot, _| chain_next(slot, slots));
    (0..hops).fold(start, |slot, _| chain_next(slot, slots))
}

impl Workload for DsmemLatency {
    type Experiment = LatencyKernel;
    type Size = Reach;
    type Problem = LatencyProblem;

    fn name(&self) -> &'static str {
        "dsmem-latency"
    }
    fn summary(&self) -> &'static str {
        "load-to-use latency of another block's shared memory by cluster size and rank distance, beside local shared memory, L2 and DRAM (sm_90)"
    }
    fn experiments(&self) -> &'static [LatencyKernel] {
        LATENCY_KERNELS
    }
    fn helper_kernels(&self) -> &'static [&'static str] {
        const HELPERS: &[&str] = &[super::entry_points::dsmem_hang_cluster.name()];
        HELPERS
    }
    fn helper_kernel_archs(&self, _: &str) -> &'static [Arch] {
        &[Arch::Sm90]
    }
    fn device_bytes(&self, _: Reach) -> u64 {
        [ChainKind::Shared, ChainKind::L2, ChainKind::Dram]
            .iter()
            .map(|k| 4 * (k.slots() * k.slot_words()) as u64)
            .sum::<u64>()
            + 12 * 1024 * MAX_CLUSTER as u64
    }
    fn size_syntax(&self) -> &'static str {
        SIZE_SYNTAX
    }
    fn parse_size(&self, text: &str) -> Result<Reach, String> {
        parse_reach(text)
    }
    fn default_sizes(&self) -> Vec<Reach> {
        default_reaches()
    }
    fn test_cases(&self) -> Vec<(Values, Reach)> {
        test_reaches()
    }
    fn prepare(&self, gpu: &Gpu, reach: Reach, _: Inputs) -> Result<LatencyProblem> {
        let launches = Launches::new(gpu, reach, LATENCY_KERNELS, |k| k.entry)?;
        let blocks = launches.blocks() as usize;
        let upload = |kind| gpu.upload(&chain_words(kind), "a chain");
        Ok(LatencyProblem {
            chains: [
                upload(ChainKind::Shared)?,
                upload(ChainKind::L2)?,
                upload(ChainKind::Dram)?,
            ],
            end: gpu.zeros(blocks, "the chains' ends")?,
            cycles: gpu.zeros(blocks, "the cycle counts")?,
            launches,
        })
    }
}

/// The chains on the GPU, the outputs, the resolved kernels.
pub struct LatencyProblem {
    launches: Launches<LatencyKernel, LatencyParams>,
    /// The shared-memory, L2 and DRAM chains.
    chains: [CudaSlice<u32>; 3],
    end: CudaSlice<u32>,
    cycles: CudaSlice<u64>,
}

impl Problem<LatencyKernel> for LatencyProblem {
    fn unavailable(&self, _: &LatencyKernel) -> Option<Unavailable> {
        self.launches.unavailable()
    }
    fn poison(&mut self, gpu: &Gpu, _: &LatencyKernel) -> Result<()> {
        Ok(gpu.fill_words(&mut self.end, POISON.to_bits(), "the chains' ends")?)
    }
    type Resolved = Kernel<LatencyParams>;

    fn resolve(&self, gpu: &Gpu, experiment: &LatencyKernel) -> Result<Kernel<LatencyParams>> {
        self.launches.resolve(gpu, experiment)
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        experiment: &LatencyKernel,
        kernel: &Kernel<LatencyParams>,
    ) -> Result<()> {
        let config = self.launches.config()?;
        let reach = self.launches.reach;
        let chain = match experiment.target.chain() {
            ChainKind::Shared => &self.chains[0],
            ChainKind::L2 => &self.chains[1],
            ChainKind::Dram => &self.chains[2],
        };
        // SAFETY: blocks of THREADS with SHARED_BYTES, clusters of `reach.blocks` with the
        // distance below it (parse_reach); the chain of the kernel's target; `end` and
        // `cycles` hold a word and a count per block of the grid.
        unsafe {
            kernel.launch(
                gpu,
                config,
                (
                    chain,
                    reach.hops(),
                    reach.distance,
                    &mut self.end,
                    &mut self.cycles,
                ),
            )?
        };
        Ok(())
    }
    fn check(&mut self, gpu: &Gpu, experiment: &LatencyKernel) -> Result<CheckReport> {
        let grid = self.launches.grid()? as usize;
        let end = gpu.download_range(&self.end, 0..grid, "the chains' ends")?;
        let slots = experiment.target.chain().slots();
        let expected: Vec<u32> = (0..grid as u32)
            .map(|b| chain_end(b, grid as u32, slots, self.launches.reach.hops()))
            .collect();
        Ok(check::check_words(&end, &expected))
    }
    /// In the chains' ends (a word per block); the tile is the last cluster's.
    fn plant(&mut self, gpu: &Gpu, _: &LatencyKernel, fault: Fault) -> Result<usize> {
        let (grid, cluster) = (self.launches.grid()?, self.launches.reach.blocks);
        plant_words(gpu, &mut self.end, grid as usize, cluster as usize, fault)
    }
    fn work(&self) -> Work {
        Work::Steps(self.launches.reach.hops() as u64)
    }
    fn note(
        &mut self,
        gpu: &Gpu,
        _: &LatencyKernel,
        _: &Kernel<LatencyParams>,
    ) -> Result<Option<String>> {
        let Ok(grid) = self.launches.grid else {
            return Ok(None);
        };
        let cycles = gpu.download_range(&self.cycles, 0..grid as usize, "the cycle counts")?;
        let hops = self.launches.reach.hops() as f64;
        let per_hop: Vec<f64> = cycles.iter().map(|&c| c as f64 / hops).collect();
        let mean = per_hop.iter().sum::<f64>() / per_hop.len() as f64;
        let (min, max) = per_hop
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        Ok(Some(format!(
            "{mean:.1} cycles/hop ({min:.1}-{max:.1} over {grid} blocks)"
        )))
    }
}

// ---------------------------------------------------------------------------------------
// Bandwidth

/// The bandwidth workload.
pub struct DsmemBandwidth;

impl Experiment for BandwidthKernel {
    fn name(&self) -> &'static str {
        self.name
    }
    fn role(&self) -> Role {
        match self.mode {
            BandwidthMode::LocalRead => Role::Baseline,
            _ => Role::Library,
        }
    }
    fn style(&self) -> &'static str {
        match self.mode {
            BandwidthMode::LocalRead => "ld.shared",
            BandwidthMode::RemoteRead => "ld.shared::cluster",
            BandwidthMode::RemoteWrite => "st.shared::cluster",
            BandwidthMode::StAsync => "st.async",
            BandwidthMode::RedAsync => "red.async",
            BandwidthMode::BulkCopy => "bulk copy",
            BandwidthMode::Multicast => "multicast",
            BandwidthMode::L2Read => "ld.global.cg (L2)",
            BandwidthMode::DramRead => "ld.global.cg (DRAM)",
        }
    }
    fn stages(&self) -> Option<u32> {
        match self.mode {
            BandwidthMode::StAsync
            | BandwidthMode::RedAsync
            | BandwidthMode::BulkCopy
            | BandwidthMode::Multicast => Some(super::STAGES),
            _ => None,
        }
    }
    fn threads(&self) -> Option<u32> {
        Some(THREADS)
    }
    fn shared_bytes(&self) -> Option<u32> {
        Some(SHARED_BYTES)
    }
    fn summary(&self) -> &'static str {
        match self.mode {
            BandwidthMode::RedAsync => {
                "red.async adds into another block's zeroed stages, completing on its mbarrier"
            }
            BandwidthMode::LocalRead => "16-byte loads of the block's own shared memory",
            BandwidthMode::RemoteRead => "16-byte loads of another block's shared memory",
            BandwidthMode::RemoteWrite => "16-byte stores into another block's shared memory",
            BandwidthMode::StAsync => {
                "16-byte st.async into another block's stages, completing on its mbarrier"
            }
            BandwidthMode::BulkCopy => {
                "16 KiB block-to-block bulk copies into another block's stages"
            }
            BandwidthMode::Multicast => {
                "16 KiB bulk copies from global memory multicast into every block of the cluster"
            }
            BandwidthMode::L2Read => "16-byte loads of global memory that hit L2",
            BandwidthMode::DramRead => "16-byte loads of global memory from DRAM",
        }
    }
    fn archs(&self) -> &'static [Arch] {
        &[Arch::Sm90]
    }
}

/// The global buffer: slice `s` is stream `GLOBAL_STREAM + s`.
fn global_words() -> Vec<u32> {
    let words = BUFFER_BYTES / 4;
    (0..GLOBAL_SLICES)
        .flat_map(|s| (0..words).map(move |w| pattern(GLOBAL_STREAM + s, w)))
        .collect()
}

/// Each thread's expected sum for `mode` on a grid of `grid` blocks.
fn expected_sums(mode: BandwidthMode, reach: Reach, grid: u32, slice_sums: &[u32]) -> Vec<u32> {
    let repeats = reach.repeats();
    let mut sums = Vec::with_capacity((grid * THREADS) as usize);
    for b in 0..grid {
        let (peer, feeder) = peer_and_feeder(b, reach);
        for t in 0..THREADS {
            let global = |s: u32| slice_sums[(s * THREADS + t) as usize];
            let sum = match mode {
                BandwidthMode::LocalRead => repeats.wrapping_mul(buffer_sum(b, t)),
                BandwidthMode::RemoteRead => repeats.wrapping_mul(buffer_sum(peer, t)),
                BandwidthMode::RemoteWrite => buffer_sum(feeder, t)
                    .wrapping_add((4 * CHUNKS_PER_THREAD).wrapping_mul(repeats - 1)),
                BandwidthMode::StAsync | BandwidthMode::RedAsync | BandwidthMode::BulkCopy => {
                    repeats.wrapping_mul(buffer_sum(feeder, t))
                }
                BandwidthMode::Multicast => repeats.wrapping_mul(global(b / reach.blocks)),
                BandwidthMode::L2Read => repeats.wrapping_mul(global(b)),
                BandwidthMode::DramRead => (0..repeats).fold(0u32, |sum, r| {
                    let s = ((b as u64 + r as u64 * grid as u64) % GLOBAL_SLICES as u64) as u32;
                    sum.wrapping_add(global(s))
                }),
            };
            sums.push(sum);
        }
    }
    sums
}

impl Workload for DsmemBandwidth {
    type Experiment = BandwidthKernel;
    type Size = Reach;
    type Problem = BandwidthProblem;

    fn name(&self) -> &'static str {
        "dsmem-bandwidth"
    }
    fn summary(&self) -> &'static str {
        "bandwidth of another block's shared memory (loads, stores, st.async, bulk and multicast copies) by cluster size, beside local shared memory, L2 and DRAM (sm_90)"
    }
    fn experiments(&self) -> &'static [BandwidthKernel] {
        BANDWIDTH_KERNELS
    }
    fn device_bytes(&self, _: Reach) -> u64 {
        GLOBAL_SLICES as u64 * BUFFER_BYTES as u64 + 4 * (THREADS * 1024) as u64
    }
    fn size_syntax(&self) -> &'static str {
        SIZE_SYNTAX
    }
    fn parse_size(&self, text: &str) -> Result<Reach, String> {
        parse_reach(text)
    }
    fn default_sizes(&self) -> Vec<Reach> {
        default_reaches()
    }
    fn test_cases(&self) -> Vec<(Values, Reach)> {
        test_reaches()
    }
    fn prepare(&self, gpu: &Gpu, reach: Reach, _: Inputs) -> Result<BandwidthProblem> {
        let launches = Launches::new(gpu, reach, BANDWIDTH_KERNELS, |k| k.entry)?;
        let blocks = launches.blocks();
        if blocks > GLOBAL_SLICES {
            bail!("{blocks} blocks: more than the {GLOBAL_SLICES} slices of the global buffer");
        }
        let global = global_words();
        let slice_sums = (0..GLOBAL_SLICES)
            .flat_map(|s| (0..THREADS).map(move |t| buffer_sum(GLOBAL_STREAM + s, t)))
            .collect();
        debug_assert_eq!(global.len(), (GLOBAL_SLICES * BUFFER_CHUNKS * 4) as usize);
        Ok(BandwidthProblem {
            global: gpu.upload(&global, "the global buffer")?,
            sums: gpu.zeros((blocks * THREADS) as usize, "the sums")?,
            slice_sums,
            launches,
        })
    }
}

/// The global buffer, the sums, the resolved kernels.
pub struct BandwidthProblem {
    launches: Launches<BandwidthKernel, BandwidthParams>,
    /// `GLOBAL_SLICES` slices of `BUFFER_BYTES`, as words.
    global: CudaSlice<u32>,
    sums: CudaSlice<u32>,
    /// Each slice's per-thread sum (`buffer_sum` of its stream), `slice * THREADS + t`.
    slice_sums: Vec<u32>,
}

impl Problem<BandwidthKernel> for BandwidthProblem {
    fn unavailable(&self, _: &BandwidthKernel) -> Option<Unavailable> {
        self.launches.unavailable()
    }
    fn poison(&mut self, gpu: &Gpu, _: &BandwidthKernel) -> Result<()> {
        Ok(gpu.fill_words(&mut self.sums, POISON.to_bits(), "the sums")?)
    }
    type Resolved = Kernel<BandwidthParams>;

    fn resolve(&self, gpu: &Gpu, experiment: &BandwidthKernel) -> Result<Kernel<BandwidthParams>> {
        self.launches.resolve(gpu, experiment)
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        _experiment: &BandwidthKernel,
        kernel: &Kernel<BandwidthParams>,
    ) -> Result<()> {
        let config = self.launches.config()?;
        let reach = self.launches.reach;
        // SAFETY: blocks of THREADS with SHARED_BYTES, a grid of whole clusters of
        // `reach.blocks` (at most GLOBAL_SLICES blocks: prepare), the distance below the
        // cluster's size; `global` holds GLOBAL_SLICES slices (16-byte aligned: a driver
        // allocation), `sums` a word per thread of the grid.
        unsafe {
            kernel.launch(
                gpu,
                config,
                (
                    &self.global,
                    GLOBAL_SLICES,
                    reach.repeats(),
                    reach.distance,
                    &mut self.sums,
                ),
            )?
        };
        Ok(())
    }
    fn check(&mut self, gpu: &Gpu, experiment: &BandwidthKernel) -> Result<CheckReport> {
        let grid = self.launches.grid()?;
        let sums = gpu.download(&self.sums, "the sums")?;
        let expected = expected_sums(experiment.mode, self.launches.reach, grid, &self.slice_sums);
        Ok(check::check_words(&sums, &expected))
    }
    /// In the sums (a word per thread); the tile is the last block's.
    fn plant(&mut self, gpu: &Gpu, _: &BandwidthKernel, fault: Fault) -> Result<usize> {
        let len = (self.launches.grid()? * THREADS) as usize;
        plant_words(gpu, &mut self.sums, len, THREADS as usize, fault)
    }
    fn work(&self) -> Work {
        let grid = *self.launches.grid.as_ref().unwrap_or(&0) as u64;
        Work::Bytes(grid * self.launches.reach.repeats() as u64 * BUFFER_BYTES as u64)
    }
    fn note(
        &mut self,
        _: &Gpu,
        _: &BandwidthKernel,
        _: &Kernel<BandwidthParams>,
    ) -> Result<Option<String>> {
        let reach = self.launches.reach;
        Ok(self.launches.grid.as_ref().ok().map(|grid| {
            format!(
                "{grid} blocks in {} clusters, one per SM",
                grid / reach.blocks
            )
        }))
    }
}

/// Launches the kernel that deadlocks a cluster on purpose (`dsmem_hang_cluster`: one
/// cluster of two blocks) and waits for it under the watchdog with `limit`: the result is the
/// watchdog's error (or, if the GPU somehow finished it, an error saying so).
pub fn run_cluster_hang(gpu: &Gpu, limit: std::time::Duration) -> Result<()> {
    let _limit = gpu.time_limit_for(limit);
    let entry = super::entry_points::dsmem_hang_cluster;
    let kernel = gpu.entry_point(entry)?;
    let config = LaunchConfig::linear(2, super::HANG_THREADS, 8).with_cluster([2, 1, 1]);
    // SAFETY: dsmem_hang_cluster() takes no parameters; one cluster of two blocks of
    // HANG_THREADS threads with 8 bytes of dynamic shared memory.
    unsafe { kernel.launch(gpu, config, ())? };
    let name = entry.name();
    gpu.synchronize(|| format!("running `{name}`, which deadlocks its cluster on purpose"))?;
    bail!("`{name}` finished, but its cluster waits for itself")
}

#[cfg(test)]
mod tests;
