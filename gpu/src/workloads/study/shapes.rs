//! The study's problem and styles, for host and device: matrix shapes, the completion styles,
//! and each kernel's shared-memory layout.

use crate::layout::StagedLayout;

/// Rows of A and C.
pub const M: u32 = 32;
/// Columns of B and C.
pub const N: u32 = 32;
/// Threads in a warp.
pub const WARP_SIZE: u32 = 32;
/// One stage buffer: column k of A (32 floats), then row k of B (32 floats).
pub const STAGE_BYTES: u32 = (M + N) * 4;
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
    /// The library's split arrive/wait [`Barrier`](crate::barrier::Barrier), two per stage,
    /// `memcpy_async` bound to them.
    SplitBarrier,
    /// [`ThreadPipeline`](crate::pipeline::ThreadPipeline) + `barrier.sync`.
    ThreadPipeline,
    /// [`BlockPipeline`](crate::pipeline::BlockPipeline), every thread producer and consumer:
    /// the study's double-buffered "pingpong".
    BlockPipeline,
    /// A producer warp feeds a consumer warp through a
    /// [`BlockPipeline`](crate::pipeline::BlockPipeline).
    WarpSpecialized,
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
            | Style::WarpSpecialized => true,
        }
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
            Style::SyncBaseline | Style::RawAsyncGroup | Style::RawMbarrier => None,
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
        }
    }
}

/// A study kernel's dynamic shared memory: `stages` buffers of [`STAGE_BYTES`], then the
/// `full` / `empty` mbarriers for styles that have them.
pub const fn shared_layout(style: Style, stages: u32) -> StagedLayout {
    StagedLayout::new(STAGE_BYTES, stages, style.has_stage_barriers())
}

/// One study kernel: its entry-point name, style and pipeline depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StudyKernel {
    /// Entry point name.
    pub name: &'static str,
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
