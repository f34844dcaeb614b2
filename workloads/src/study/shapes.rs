//! The study's problem and styles, for host and device: matrix shapes, the completion styles,
//! and each kernel's shared-memory layout.

use gpu::kernel::EntryPoint;
use gpu::layout::StagedLayout;
use gpu::tensor_map::TensorMap;

/// Rows of A and C.
pub const M: u32 = 32;
/// Columns of B and C.
pub const N: u32 = 32;
/// Threads in a warp.
pub const WARP_SIZE: u32 = 32;
/// One stage buffer: column k of A (32 floats), then row k of B (32 floats).
pub const STAGE_BYTES: u32 = (M + N) * 4;
/// Steps per stage of [`Style::Tensor`]: a tensor copy's box has rows of at least 16 bytes,
/// so one box of A is 4 of its columns (4 steps), and B comes 4 rows at a time.
pub const TENSOR_STEPS: u32 = 4;
/// Largest K a kernel accepts: A and B are then 512 MiB each, and `row * K + k` stays far
/// from `u32` overflow.
pub const MAX_K: u32 = 1 << 22;

/// How a study kernel moves data to shared memory and waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Style {
    /// `ld.global` + `st.shared`, `barrier.sync` before and after the math.
    SyncBaseline,
    /// Raw PTX async-groups: `cp.async.ca` + `commit_group` + `wait_group`, then `barrier.sync`.
    RawAsyncGroup,
    /// Raw PTX mbarriers: `cp.async.mbarrier.arrive.noinc` on a per-stage `full` mbarrier,
    /// parity waits, `mbarrier.arrive` on an `empty` mbarrier to free the buffer.
    RawMbarrier,
    /// The library's split arrive/wait [`Barrier`](gpu::barrier::Barrier), two per stage,
    /// `memcpy_async` bound to them.
    SplitBarrier,
    /// [`ThreadPipeline`](gpu::pipeline::ThreadPipeline) + `barrier.sync`.
    ThreadPipeline,
    /// [`BlockPipeline`](gpu::pipeline::BlockPipeline), every thread producer and consumer:
    /// the study's double-buffered "pingpong".
    BlockPipeline,
    /// A producer warp feeds a consumer warp through a
    /// [`BlockPipeline`](gpu::pipeline::BlockPipeline).
    WarpSpecialized,
    /// Hopper's copy engine (sm_90): per stage of [`TENSOR_STEPS`] steps, one elected thread
    /// loads A's `32 x 4` box with a 2-D tensor copy and B's 4 rows with a 1-D bulk copy into a
    /// [`BulkPipeline`](gpu::pipeline::BulkPipeline); K must be a multiple of 4 (tensor-map
    /// rows are 16-byte aligned).
    Tensor,
}

impl Style {
    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            Style::WarpSpecialized => 2 * WARP_SIZE,
            _ => WARP_SIZE,
        }
    }

    /// Whether the style keeps a `full` and an `empty` mbarrier per stage.
    pub const fn has_stage_barriers(self) -> bool {
        match self {
            Style::SyncBaseline | Style::RawAsyncGroup | Style::ThreadPipeline => false,
            Style::RawMbarrier
            | Style::SplitBarrier
            | Style::BlockPipeline
            | Style::WarpSpecialized
            | Style::Tensor => true,
        }
    }

    /// Bytes of one stage buffer: one step's operands ([`STAGE_BYTES`]), or
    /// [`TENSOR_STEPS`] steps' for the tensor style (A's box, then B's rows).
    pub const fn stage_bytes(self) -> u32 {
        match self {
            Style::Tensor => TENSOR_STEPS * STAGE_BYTES,
            _ => STAGE_BYTES,
        }
    }

    /// Whether the style needs sm_90 (the copy engine): absent from the sm_80 PTX.
    pub const fn needs_sm90(self) -> bool {
        matches!(self, Style::Tensor)
    }

    /// Whether the style is hand-written PTX (the yardstick of the library styles).
    pub const fn is_raw_ptx(self) -> bool {
        matches!(self, Style::RawAsyncGroup | Style::RawMbarrier)
    }

    /// The raw-PTX kernel style this library style must match in speed.
    pub const fn raw_counterpart(self) -> Option<Style> {
        match self {
            Style::ThreadPipeline => Some(Style::RawAsyncGroup),
            Style::BlockPipeline | Style::SplitBarrier | Style::WarpSpecialized => {
                Some(Style::RawMbarrier)
            }
            Style::SyncBaseline | Style::RawAsyncGroup | Style::RawMbarrier | Style::Tensor => None,
        }
    }

    /// The style's name in reports.
    pub const fn label(self) -> &'static str {
        match self {
            Style::SyncBaseline => "sync_baseline",
            Style::RawAsyncGroup => "raw_async_group",
            Style::RawMbarrier => "raw_mbarrier",
            Style::SplitBarrier => "split_barrier",
            Style::ThreadPipeline => "thread_pipeline",
            Style::BlockPipeline => "block_pipeline",
            Style::WarpSpecialized => "warp_specialized",
            Style::Tensor => "tensor",
        }
    }

    /// One line on what the style does.
    pub const fn summary(self) -> &'static str {
        match self {
            Style::SyncBaseline => "ld.global + st.shared, barrier.sync x2 per step",
            Style::RawAsyncGroup => "raw PTX: cp.async + commit_group / wait_group + barrier.sync",
            Style::RawMbarrier => "raw PTX: cp.async + mbarrier.arrive.noinc + parity waits",
            Style::SplitBarrier => "Barrier (split arrive/wait) + memcpy_async bound to it",
            Style::ThreadPipeline => "ThreadPipeline (async-groups) + barrier.sync",
            Style::BlockPipeline => "BlockPipeline (mbarriers), all threads produce and consume",
            Style::WarpSpecialized => "producer warp -> consumer warp through a BlockPipeline",
            Style::Tensor => {
                "sm_90: one thread, 4 steps per stage: A box by tensor copy, B rows by bulk copy"
            }
        }
    }
}

/// A study kernel's dynamic shared memory: `stages` buffers of [`Style::stage_bytes`], then
/// the `full` / `empty` mbarriers for styles that have them.
pub const fn shared_layout(style: Style, stages: u32) -> StagedLayout {
    StagedLayout::new(style.stage_bytes(), stages, style.has_stage_barriers())
}

/// A study kernel's entry point, by its parameter types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StudyEntry {
    /// `(a, b, c, k)`: A (32 x K), B (K x 32) and C (32 x 32), row-major `f32`.
    Pointers(EntryPoint<(*const f32, *const f32, *mut f32, u32)>),
    /// The tensor style (sm_90): a tensor map of A in place of `a`.
    TensorMapA(EntryPoint<(TensorMap, *const f32, *mut f32, u32)>),
}

/// One study kernel: its entry point, style and pipeline depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StudyKernel {
    /// Entry point name (the name `entry` is exported under).
    pub name: &'static str,
    /// Its entry point.
    pub entry: StudyEntry,
    /// How it copies and waits.
    pub style: Style,
    /// Buffers in the ring (1 for the synchronous baseline).
    pub stages: u32,
}

impl StudyKernel {
    /// Threads per block (grid: one block).
    pub const fn threads(&self) -> u32 {
        self.style.threads()
    }

    /// Its dynamic shared-memory layout.
    pub const fn shared(&self) -> StagedLayout {
        shared_layout(self.style, self.stages)
    }
}
