//! Distributed shared memory (sm_90 thread block clusters): how far and how fast one block
//! reaches another's shared memory, beside its own shared memory, L2 hits and DRAM, in the
//! same run. Two workloads, one problem shape each:
//!
//! - `dsmem-latency`: a dependent chain of loads (each load's value is the next address) by
//!   one thread per block, every block at once; the kernel counts cycles with `%clock64`
//!   and the launch's time gives nanoseconds per hop.
//! - `dsmem-bandwidth`: every block moves [`REPEATS`] x [`BUFFER_BYTES`] into its registers
//!   or its shared memory, by loads and stores through the cluster window, `st.async`,
//!   block-to-block bulk copies, multicast bulk copies, and (for comparison) loads from L2
//!   and from DRAM.
//!
//! A size is a cluster shape and a distance: `4:1` is clusters of 4 blocks, each block
//! reaching the block one rank after its own (`(rank + 1) % 4`). Blocks run one per SM
//! (their shared memory asks for it) and the grid is as many clusters as the GPU holds at
//! once (`cuOccupancyMaxActiveClusters`).
//!
//! Every result is checked: the chains' final positions against the host's walk of the same
//! chain, each thread's wrapping sum of every word it read or received against the host's
//! sum of what it should have seen.
//!
//! Kernel parameters, declared once in [`entry_points`]:
//! - latency: `(chain, hops, distance, end, cycles)` — the chain (`u32` next-slot indices,
//!   scaled by [`ChainKind::slot_words`]), hops per thread, the peer's distance, each block's
//!   final slot and its cycle count;
//! - bandwidth: `(global, slices, repeats, distance, sums)` — the global buffer of `slices`
//!   slices of [`BUFFER_BYTES`], repeats, the peer's distance, each thread's sum.

pub mod entry_points;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod kernels;

/// The host half: sizes, chains, buffers, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

/// Threads per block of `dsmem_hang_cluster`, the kernel that deadlocks a cluster on purpose
/// (for the watchdog's test).
pub const HANG_THREADS: u32 = 32;

/// Threads per block (both workloads).
pub const THREADS: u32 = 512;
/// The buffer each block reads or receives per repeat (and each block's source in shared
/// memory): 32 KiB.
pub const BUFFER_BYTES: u32 = 32 * 1024;
/// 16-byte chunks in a buffer.
pub const BUFFER_CHUNKS: u32 = BUFFER_BYTES / 16;
/// Chunks each thread takes of a buffer.
pub const CHUNKS_PER_THREAD: u32 = BUFFER_CHUNKS / THREADS;
/// Repeats per launch of the bandwidth kernels: each block moves `REPEATS * BUFFER_BYTES`.
pub const REPEATS: u32 = 1024;
/// The pipelined experiments' stages (`st.async`, `red.async`, bulk copies, multicast): two halves of a
/// buffer in flight.
pub const STAGES: u32 = 2;
/// Bytes per stage.
pub const STAGE_BYTES: u32 = BUFFER_BYTES / STAGES;
/// 16-byte chunks per stage.
pub const STAGE_CHUNKS: u32 = STAGE_BYTES / 16;
/// Hops per latency launch.
pub const HOPS: u32 = 1 << 16;
/// Slots of the shared-memory chain (one word each: 16 KiB) and of the L2 chain (one
/// 128-byte line each: 512 KiB).
pub const SHORT_CHAIN_SLOTS: u32 = 4096;
/// Slots of the DRAM chain: 2^23 lines, 1 GiB. Each block walks its own stretch of it
/// ([`chain_start`]), so one launch touches `grid * HOPS` lines (1 GiB at 132 blocks): far
/// past L2's 50 MiB, and the next launch finds none of them there.
pub const DRAM_CHAIN_SLOTS: u32 = 1 << 23;
/// Slices of the bandwidth workload's global buffer: 8192 x 32 KiB = 256 MiB. Block `b`'s
/// L2 slice is slice `b` (the L2 experiment's whole footprint is the grid's slices, 4 MiB
/// at 132 blocks); the DRAM experiment walks all of them.
pub const GLOBAL_SLICES: u32 = 8192;

/// Dynamic shared memory of every kernel here: its source buffer, its receive buffer, the
/// stages and four mbarriers, rounded up so that one block fills an SM's shared memory
/// past half (one block per SM: the per-SM figures are per block).
pub const SHARED_BYTES: u32 = 120 * 1024;
/// Where each part of the shared memory starts (bytes from its 1024-aligned start).
pub const SOURCE_OFFSET: u32 = 0;
/// The receive buffer (a peer's stores land here; the latency chain lives here).
pub const RECEIVE_OFFSET: u32 = BUFFER_BYTES;
/// The stages of the pipelined experiments.
pub const STAGES_OFFSET: u32 = 2 * BUFFER_BYTES;
/// `full[STAGES]` then `empty[STAGES]` mbarriers.
pub const BARRIERS_OFFSET: u32 = STAGES_OFFSET + STAGES * STAGE_BYTES;
const _: () = assert!(BARRIERS_OFFSET + 2 * STAGES * 8 <= SHARED_BYTES);
const _: () =
    assert!(BUFFER_CHUNKS.is_multiple_of(THREADS) && STAGE_CHUNKS.is_multiple_of(THREADS));

/// The word `word` of data stream `stream`: block `b`'s source buffer is stream `b`, the
/// global buffer's slice `s` is stream [`GLOBAL_STREAM`]` + s`. A mix of the two (the
/// host computes the same words to check the sums).
#[inline(always)]
pub const fn pattern(stream: u32, word: u32) -> u32 {
    let mut x = stream.wrapping_mul(0x9E37_79B9) ^ word.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    x
}

/// The first stream of the global buffer's slices.
pub const GLOBAL_STREAM: u32 = 0x4000_0000;

/// The next slot of a chain of `slots` slots (a power of two) after slot `i`: a full-period
/// linear congruential step, so the chain visits every slot once before it repeats, in an
/// order no prefetcher follows.
#[inline(always)]
pub const fn chain_next(i: u32, slots: u32) -> u32 {
    i.wrapping_mul(1_664_525).wrapping_add(1_013_904_223) & (slots - 1)
}

/// The slot `steps` steps along a chain of `slots` slots from slot 0 ([`chain_next`] applied
/// `steps` times), in O(log steps): the affine step composed with itself by squaring.
#[inline(always)]
pub const fn chain_jump(steps: u32, slots: u32) -> u32 {
    // f(x) = a x + c (mod 2^32: reducing mod slots afterwards gives the same slot).
    let (mut a, mut c) = (1_664_525u32, 1_013_904_223u32);
    // The accumulated power of f, starting from the identity.
    let (mut ra, mut rc) = (1u32, 0u32);
    let mut n = steps;
    while n > 0 {
        if n & 1 == 1 {
            ra = a.wrapping_mul(ra);
            rc = a.wrapping_mul(rc).wrapping_add(c);
        }
        c = a.wrapping_mul(c).wrapping_add(c);
        a = a.wrapping_mul(a);
        n >>= 1;
    }
    let _ = ra;
    rc & (slots - 1)
}

/// Where block `block` of `grid` starts on a chain of `slots`: `block * (slots / grid)` steps
/// along it, so the blocks walk disjoint stretches (for up to `slots / grid` hops).
#[inline(always)]
pub const fn chain_start(block: u32, grid: u32, slots: u32) -> u32 {
    chain_jump(block * (slots / grid), slots)
}

/// Which chain a latency experiment follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainKind {
    /// [`SHORT_CHAIN_SLOTS`] words in shared memory (this block's, or a peer's).
    Shared,
    /// [`SHORT_CHAIN_SLOTS`] lines in global memory: L2 hits after the first pass.
    L2,
    /// [`DRAM_CHAIN_SLOTS`] lines in global memory: misses (and TLB misses: the lines are
    /// spread over 1 GiB).
    Dram,
}

impl ChainKind {
    /// Slots of the chain.
    pub const fn slots(self) -> u32 {
        match self {
            ChainKind::Shared | ChainKind::L2 => SHORT_CHAIN_SLOTS,
            ChainKind::Dram => DRAM_CHAIN_SLOTS,
        }
    }
    /// Words per slot (the chain's word for slot `i` is at `i * slot_words`).
    pub const fn slot_words(self) -> u32 {
        match self {
            ChainKind::Shared => 1,
            ChainKind::L2 | ChainKind::Dram => 32,
        }
    }
}

/// What a latency kernel chases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LatencyTarget {
    /// This block's shared memory (`ld.shared`): the baseline.
    Local,
    /// The peer's shared memory through the cluster window (`ld.shared::cluster`).
    Remote,
    /// Global memory, L2 hits (`ld.global.cg`).
    L2,
    /// Global memory, DRAM (`ld.global.cg`).
    Dram,
}

impl LatencyTarget {
    /// The chain it follows.
    pub const fn chain(self) -> ChainKind {
        match self {
            LatencyTarget::Local | LatencyTarget::Remote => ChainKind::Shared,
            LatencyTarget::L2 => ChainKind::L2,
            LatencyTarget::Dram => ChainKind::Dram,
        }
    }
}

/// How a bandwidth kernel moves its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BandwidthMode {
    /// `ld.shared.v4` of this block's source: the baseline.
    LocalRead,
    /// `ld.shared::cluster.v4` of the peer's source.
    RemoteRead,
    /// `st.shared::cluster.v4` into the peer's receive buffer (read back once at the end).
    RemoteWrite,
    /// `st.async.v4` into the peer's stages, each completing on the peer's `full` barrier;
    /// the peer frees a stage by a remote arrival on the sender's `empty` barrier.
    StAsync,
    /// As `StAsync`, by `red.async.add.u32` (four per chunk, each completing 4 bytes) into
    /// the peer's zeroed stages: the asynchronous reduction a split-K GEMM would use.
    RedAsync,
    /// One thread's `cp.async.bulk.shared::cluster.shared::cta` of a 16 KiB half of its
    /// source into the peer's stage, the same barriers as `StAsync`.
    BulkCopy,
    /// Rank 0 of each cluster multicasts each 16 KiB half of its cluster's global slice into
    /// the stages of every block of the cluster (`cp.async.bulk...multicast::cluster`); each
    /// block frees a stage by a remote arrival on rank 0's `empty` barrier.
    Multicast,
    /// `ld.global.cg.v4` of the block's own 32 KiB slice, L2 hits after the first pass.
    L2Read,
    /// `ld.global.cg.v4` of a different slice each repeat, walking 256 MiB: DRAM.
    DramRead,
}

/// One latency experiment.
#[derive(Debug)]
pub struct LatencyKernel {
    /// Its entry point's name.
    pub name: &'static str,
    /// What it chases.
    pub target: LatencyTarget,
    /// Its declaration.
    pub entry: gpu::kernel::EntryPoint<entry_points::LatencyParams>,
}

/// One bandwidth experiment.
#[derive(Debug)]
pub struct BandwidthKernel {
    /// Its entry point's name.
    pub name: &'static str,
    /// How it moves the bytes.
    pub mode: BandwidthMode,
    /// Its declaration.
    pub entry: gpu::kernel::EntryPoint<entry_points::BandwidthParams>,
}

pub use entry_points::{BANDWIDTH_KERNELS, LATENCY_KERNELS};
