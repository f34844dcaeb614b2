//! Objects that live in shared memory and whose size and alignment the host must know too:
//! a pipeline's [`PipelineSharedState`] (its [`Mbarrier`]s, defined with the instructions that
//! take them in [`crate::ptx`]), [`StagedLayout`], the usual shape of a pipelined kernel's
//! dynamic shared memory (stage buffers, then barriers), and [`TileLayout`], where a tile
//! copy puts a tile's rows.
//!
//! Plain Rust, built for the host as well, so a launch asks for exactly the bytes the kernel
//! carves up.

pub use crate::ptx::Mbarrier;

/// The mbarriers of a block-scope pipeline, one pair per stage, as laid out in shared memory:
/// `full[s]` completes a phase when stage `s` has been filled (the producers' copies landed),
/// `empty[s]` when every consumer released it.
#[repr(C, align(8))]
pub struct PipelineSharedState<const STAGES: usize> {
    /// Filled: expected arrivals = producer threads (each commit arrives once).
    pub full: [Mbarrier; STAGES],
    /// Released: expected arrivals = consumer threads.
    pub empty: [Mbarrier; STAGES],
}

impl<const STAGES: usize> PipelineSharedState<STAGES> {
    /// Bytes of shared memory it takes: [`pipeline_barrier_bytes`]`(STAGES)`.
    pub const BYTES: u32 = size_of::<Self>() as u32;
}

/// Bytes of the `full` / `empty` mbarrier pairs of a `stages`-deep pipeline (16 per stage):
/// the run-time twin of [`PipelineSharedState::BYTES`].
#[inline]
pub const fn pipeline_barrier_bytes(stages: u32) -> u32 {
    2 * stages * Mbarrier::BYTES
}

/// Where the bytes of a 2-D tile's rows go in shared memory: the destination of a tile copy
/// ([`memcpy_async_tile`](crate::memcpy_async::cp_async::memcpy_async_tile)). Chunks of 16
/// bytes (at 16-byte offsets of a row) stay together.
pub trait TileLayout: Copy {
    /// Where row `row` starts, from the tile's start.
    fn row_start(self, row: u32) -> u32;
    /// Where byte `byte` of row `row` is, from the row's start.
    fn byte_in_row(self, row: u32, byte: u32) -> u32;
}

/// Rows `pitch` bytes apart, each as it is: byte `b` of row `r` at `r * pitch + b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPitch(pub u32);

impl TileLayout for RowPitch {
    #[inline(always)]
    fn row_start(self, row: u32) -> u32 {
        row * self.0
    }
    #[inline(always)]
    fn byte_in_row(self, _: u32, byte: u32) -> u32 {
        byte
    }
}

/// Dynamic shared memory made of `stages` buffers of `stage_bytes` each, then (optionally)
/// a [`PipelineSharedState`] for them: what a pipelined kernel carves up and what its launch
/// must ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagedLayout {
    /// Bytes of one stage buffer (a multiple of 16, so every stage is 16-byte aligned).
    pub stage_bytes: u32,
    /// Buffers in the ring.
    pub stages: u32,
    /// Byte offset of the pipeline's mbarriers (`full[0..stages]`, then `empty[0..stages]`),
    /// right after the buffers.
    pub barriers_offset: u32,
    /// Dynamic shared memory to launch with.
    pub bytes: u32,
}

impl StagedLayout {
    /// `stages` buffers of `stage_bytes`, followed by their mbarrier pairs if `with_barriers`.
    #[inline]
    pub const fn new(stage_bytes: u32, stages: u32, with_barriers: bool) -> StagedLayout {
        assert!(
            stage_bytes.is_multiple_of(16),
            "stage buffers are 16-byte multiples"
        );
        let barriers_offset = stages * stage_bytes;
        let barrier_bytes = if with_barriers {
            pipeline_barrier_bytes(stages)
        } else {
            0
        };
        StagedLayout {
            stage_bytes,
            stages,
            barriers_offset,
            bytes: barriers_offset + barrier_bytes,
        }
    }

    /// Byte offset of stage `s`'s buffer.
    #[inline]
    pub const fn stage_offset(self, s: u32) -> u32 {
        s * self.stage_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host reserves `pipeline_barrier_bytes(stages)` for what the device lays out as a
    /// `PipelineSharedState`: two 8-byte mbarriers per stage, 8-byte aligned.
    #[test]
    fn pipeline_barriers_are_two_mbarriers_per_stage() {
        assert_eq!(Mbarrier::BYTES, 8);
        assert_eq!(align_of::<Mbarrier>(), 8);
        assert_eq!(PipelineSharedState::<1>::BYTES, 16);
        assert_eq!(PipelineSharedState::<3>::BYTES, 48);
        assert_eq!(PipelineSharedState::<4>::BYTES, 64);
        for stages in [1, 3, 4] {
            assert_eq!(pipeline_barrier_bytes(stages), 16 * stages);
        }
        assert_eq!(align_of::<PipelineSharedState<3>>(), 8);
    }

    #[test]
    fn staged_layout_puts_barriers_after_the_buffers() {
        let l = StagedLayout::new(256, 3, true);
        assert_eq!(l.stage_offset(2), 512);
        assert_eq!(l.barriers_offset, 768);
        assert_eq!(l.bytes, 768 + 48);
        assert_eq!(StagedLayout::new(256, 3, false).bytes, 768);
    }
}
