//! The self-test's shapes, for host and device: tiles, the copy forms and their launch
//! geometry, and what the barrier operations test observes.

use gpu::kernel::EntryPoint;
use gpu::layout::StagedLayout;

/// Floats per tile (one stage buffer): 1 KiB.
pub const TILE_FLOATS: u32 = 256;
/// Bytes per tile.
pub const TILE_BYTES: u32 = TILE_FLOATS * 4;
/// Tiles per block the host launches for: the grid is `tiles / TILES_PER_BLOCK` blocks
/// (rounded up), and each block takes `tiles / grid` of them (rounded up).
pub const TILES_PER_BLOCK: u32 = 16;

/// Which abstraction a copy kernel exercises, with the parameters its body is generic over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyForm {
    /// Per-thread `memcpy_async` (16-byte `cg` chunks) into a `ThreadPipeline`, `barrier.sync`
    /// before reading and before refilling. 32 threads.
    ThreadPipeline {
        /// Pipeline depth.
        stages: u32,
    },
    /// Group `memcpy_async` (16-byte chunks) over the block into a `BlockPipeline`, all threads
    /// producer and consumer. 64 threads.
    BlockPipeline {
        /// Pipeline depth.
        stages: u32,
    },
    /// Warp 0 produces (group copy over the warp, 16-byte chunks), warp 1 consumes, through a
    /// partitioned `BlockPipeline`. 64 threads.
    WarpSpecialized {
        /// Pipeline depth.
        stages: u32,
    },
    /// Per-thread `memcpy_async` of `align`-byte chunks bound to two `Barrier`s in static
    /// shared memory (double buffering); arrive/wait with tokens. 32 threads.
    BarrierPerThread {
        /// Chunk size and alignment: 4, 8 or 16 bytes.
        align: u32,
    },
    /// Group `memcpy_async` over the warp (16-byte chunks) bound to two `Barrier`s. 32 threads.
    BarrierGroup,
    /// As [`CopyForm::BarrierGroup`], bound with `Uncounted` (the incrementing
    /// `cp.async.mbarrier.arrive`: the barriers expect the threads' own arrivals only). 32
    /// threads.
    BarrierUncounted,
    /// sm_90: one thread copies each tile with one bulk copy (`memcpy_async_bulk`) bound to
    /// two `Barrier`s — as the barrier's expected bytes (`mbarrier.expect_tx`), or with
    /// `arriving`, as one of its arrivals too (`Arriving`: `mbarrier.arrive.expect_tx`). 32
    /// threads.
    BulkBarrier {
        /// Whether the copy is bound with `Arriving`.
        arriving: bool,
    },
    /// `memcpy_async_zfill` of `align`-byte chunks over the block into a `BlockPipeline`;
    /// any `n`, the last tile padded with zeros. 64 threads.
    ZeroFill {
        /// Pipeline depth.
        stages: u32,
        /// Chunk size and alignment: 4, 8 or 16 bytes.
        align: u32,
    },
}

impl CopyForm {
    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            CopyForm::ThreadPipeline { .. }
            | CopyForm::BarrierPerThread { .. }
            | CopyForm::BarrierGroup
            | CopyForm::BarrierUncounted
            | CopyForm::BulkBarrier { .. } => 32,
            CopyForm::BlockPipeline { .. }
            | CopyForm::WarpSpecialized { .. }
            | CopyForm::ZeroFill { .. } => 64,
        }
    }

    /// Ring depth: the pipeline's stages, or the barrier forms' two buffers.
    pub const fn stages(self) -> u32 {
        match self {
            CopyForm::ThreadPipeline { stages }
            | CopyForm::BlockPipeline { stages }
            | CopyForm::WarpSpecialized { stages }
            | CopyForm::ZeroFill { stages, .. } => stages,
            CopyForm::BarrierPerThread { .. }
            | CopyForm::BarrierGroup
            | CopyForm::BarrierUncounted
            | CopyForm::BulkBarrier { .. } => BARRIER_FORM_BUFFERS,
        }
    }

    /// Chunk size of the copies (bytes).
    pub const fn align(self) -> u32 {
        match self {
            CopyForm::BarrierPerThread { align } | CopyForm::ZeroFill { align, .. } => align,
            _ => 16,
        }
    }

    /// The dynamic shared memory the kernel carves up: tile buffers then, for the block-scope
    /// pipelines, their mbarriers. The barrier forms use static shared memory (none dynamic).
    pub const fn shared_layout(self) -> StagedLayout {
        match self {
            CopyForm::BarrierPerThread { .. }
            | CopyForm::BarrierGroup
            | CopyForm::BarrierUncounted
            | CopyForm::BulkBarrier { .. } => StagedLayout::new(TILE_BYTES, 0, false),
            CopyForm::ThreadPipeline { stages } => StagedLayout::new(TILE_BYTES, stages, false),
            CopyForm::BlockPipeline { stages }
            | CopyForm::WarpSpecialized { stages }
            | CopyForm::ZeroFill { stages, .. } => StagedLayout::new(TILE_BYTES, stages, true),
        }
    }

    /// Whether it needs sm_90 (bulk copies): absent from the sm_80 PTX.
    pub const fn needs_sm90(self) -> bool {
        matches!(self, CopyForm::BulkBarrier { .. })
    }

    /// Whether `n` need not be a multiple of [`TILE_FLOATS`].
    pub const fn accepts_ragged(self) -> bool {
        matches!(self, CopyForm::ZeroFill { .. })
    }
}

/// Buffers (and barriers) of the barrier forms, in static shared memory.
pub const BARRIER_FORM_BUFFERS: u32 = 2;

/// One copy kernel of the self-test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyKernel {
    /// Entry point name (the name `entry` is exported under).
    pub name: &'static str,
    /// Its entry point: `(src, dst, n)`.
    pub entry: EntryPoint<(*const f32, *mut f32, u32)>,
    /// The abstraction it exercises.
    pub form: CopyForm,
}

impl CopyKernel {
    /// Tiles for `n` floats (the last one partial for zero-fill kernels).
    pub const fn tiles(&self, n: u32) -> u32 {
        n.div_ceil(TILE_FLOATS)
    }

    /// Blocks to launch for `n` floats.
    pub const fn blocks(&self, n: u32) -> u32 {
        self.tiles(n).div_ceil(TILES_PER_BLOCK)
    }

    /// Floats the kernel writes to `dst`: whole tiles.
    pub const fn output_len(&self, n: u32) -> usize {
        (self.tiles(n) * TILE_FLOATS) as usize
    }
}

/// The `Barrier` operations test: `barrier_ops(out: *mut u32)`, one block of
/// [`BARRIER_OPS_THREADS`] threads, writing one word per [`BarrierObservation`].
pub const BARRIER_OPS: EntryPoint<(*mut u32,)> = super::entry_points::barrier_ops;
/// Threads of the barrier operations test (two warps).
pub const BARRIER_OPS_THREADS: u32 = 64;
/// Bounded waits in the barrier operations test give up after this many polls and record a
/// timeout, instead of hanging the GPU on a broken barrier.
pub const BARRIER_OPS_POLLS: u32 = 1 << 20;

/// What `barrier_ops` observes: the discriminant is the output word it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum BarrierObservation {
    /// `ArrivalToken::pending_count` of the first of 64 arrivals.
    FirstTokenPendingCount,
    /// `test_wait` on phase 0 after one of 64 arrivals.
    PhaseZeroDoneAfterOneArrival,
    /// `wait` (bounded) on phase 0 after all 64 arrivals: 1 unless it timed out.
    PhaseZeroDoneAfterAllArrivals,
    /// Phase 1: warp 0 arrives and waits (bounded), warp 1 `arrive_and_drop`s.
    PhaseOneDoneWithDrop,
    /// Phase 2: warp 0 alone completes it, the expected count having dropped to 32.
    PhaseTwoDoneByWarpZeroAlone,
    /// `test_wait_parity(0)` after three phases.
    ParityZeroAfterThreePhases,
    /// `test_wait_parity(1)` after three phases.
    ParityOneAfterThreePhases,
    /// Threads whose own wait saw phase 0 complete (read back through a generic pointer).
    ThreadsThatSawPhaseZero,
    /// After `invalidate`, the slot re-initialized for one arrival: `arrive_and_wait`
    /// returns and phase 0 then reads complete.
    ReinitializedArriveAndWait,
}

impl BarrierObservation {
    /// Every observation, in output order.
    pub const ALL: [BarrierObservation; 9] = [
        BarrierObservation::FirstTokenPendingCount,
        BarrierObservation::PhaseZeroDoneAfterOneArrival,
        BarrierObservation::PhaseZeroDoneAfterAllArrivals,
        BarrierObservation::PhaseOneDoneWithDrop,
        BarrierObservation::PhaseTwoDoneByWarpZeroAlone,
        BarrierObservation::ParityZeroAfterThreePhases,
        BarrierObservation::ParityOneAfterThreePhases,
        BarrierObservation::ThreadsThatSawPhaseZero,
        BarrierObservation::ReinitializedArriveAndWait,
    ];

    /// The output word it is written to.
    pub const fn slot(self) -> usize {
        self as usize
    }

    /// The value the specification of the `Barrier` operations says it must have.
    pub const fn expected(self) -> u32 {
        match self {
            // The token holds the state before the arrival, which is still counted.
            BarrierObservation::FirstTokenPendingCount => BARRIER_OPS_THREADS,
            BarrierObservation::PhaseZeroDoneAfterOneArrival => 0,
            BarrierObservation::PhaseZeroDoneAfterAllArrivals => 1,
            BarrierObservation::PhaseOneDoneWithDrop => 1,
            BarrierObservation::PhaseTwoDoneByWarpZeroAlone => 1,
            // Phase 3 is current: parity 0 (phases 0 and 2) completed, parity 1 (phase 3) not.
            BarrierObservation::ParityZeroAfterThreePhases => 1,
            BarrierObservation::ParityOneAfterThreePhases => 0,
            BarrierObservation::ThreadsThatSawPhaseZero => BARRIER_OPS_THREADS,
            BarrierObservation::ReinitializedArriveAndWait => 1,
        }
    }

    /// What it is, in words.
    pub const fn describe(self) -> &'static str {
        match self {
            BarrierObservation::FirstTokenPendingCount => {
                "pending count in the token of the first of 64 arrivals (state before it)"
            }
            BarrierObservation::PhaseZeroDoneAfterOneArrival => {
                "phase 0 complete after 1 of 64 arrivals (test_wait)"
            }
            BarrierObservation::PhaseZeroDoneAfterAllArrivals => {
                "phase 0 complete after 64 arrivals (bounded wait, 1 = no timeout)"
            }
            BarrierObservation::PhaseOneDoneWithDrop => {
                "phase 1 complete: warp 0 arrive + bounded wait, warp 1 arrive_and_drop"
            }
            BarrierObservation::PhaseTwoDoneByWarpZeroAlone => {
                "phase 2 complete with warp 0 alone (expected count dropped to 32)"
            }
            BarrierObservation::ParityZeroAfterThreePhases => {
                "parity 0 reads complete after three phases"
            }
            BarrierObservation::ParityOneAfterThreePhases => {
                "parity 1 reads incomplete after three phases"
            }
            BarrierObservation::ThreadsThatSawPhaseZero => {
                "threads that saw phase 0 complete after their own wait"
            }
            BarrierObservation::ReinitializedArriveAndWait => {
                "after inval, the slot re-initialized for 1 arrival: arrive_and_wait completes phase 0"
            }
        }
    }
}

/// A kernel that waits forever on purpose — `hang_missing_arrival()`, one block of
/// [`HANG_THREADS`] threads and no parameters: its mbarrier expects one arrival more than the
/// block makes, the classic protocol bug. It exists to test the host's watchdog; the
/// self-test never runs it.
pub const HANG_KERNEL: EntryPoint<()> = super::entry_points::hang_missing_arrival;
/// Threads of [`HANG_KERNEL`].
pub const HANG_THREADS: u32 = 32;

/// Words `barrier_ops` writes.
pub const BARRIER_OPS_OUTPUTS: usize = BarrierObservation::ALL.len();
