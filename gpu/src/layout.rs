//! Objects that live in shared memory and whose size and alignment the host must know too:
//! a pipeline's [`PipelineSharedState`] (its [`Mbarrier`]s, defined with the instructions that
//! take them in [`crate::ptx`]), [`StagedLayout`], the usual shape of a pipelined kernel's
//! dynamic shared memory (stage buffers, then barriers), [`SharedLayout`], the typed carve-up of
//! any kernel's dynamic shared memory into [`SharedRegion`]s, and [`TileLayout`], where a tile
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

/// Where the buffers and mbarriers of a [`StagedLayout`] placed at the start of dynamic shared
/// memory are (the host launches with [`StagedLayout::bytes`] of it).
#[cfg(target_arch = "nvptx64")]
impl StagedLayout {
    /// Stage `s`'s buffer.
    #[inline(always)]
    pub fn stage<T>(self, s: u32) -> crate::ptx::Shared<T> {
        crate::shared::dynamic_shared()
            .add(self.stage_offset(s))
            .cast()
    }

    /// The pipeline's mbarriers (`full[0..STAGES]`, then `empty[0..STAGES]`), after the
    /// buffers.
    #[inline(always)]
    pub fn barriers<const STAGES: usize>(self) -> crate::ptx::Shared<PipelineSharedState<STAGES>> {
        crate::shared::dynamic_shared()
            .add(self.barriers_offset)
            .cast()
    }
}

/// A block's dynamic shared memory carved into typed regions at compile time: each region is
/// `count` items of `item_bytes`, from the next multiple of its alignment after the previous
/// one. Built as a `const` the host and the device share — the host launches with
/// [`bytes`](Self::bytes), the device takes each item as a typed [`Shared`](crate::ptx::Shared)
/// handle ([`SharedRegion::at`]) — so no kernel adds offsets by hand, and the two sides cannot
/// disagree.
///
/// ```
/// use gpu::layout::{Mbarrier, SharedLayout};
/// let (layout, stages) = SharedLayout::EMPTY.region::<u8>(3, 48 * 1024, 1024);
/// let (layout, barriers) = layout.array::<Mbarrier>(6);
/// let (layout, staging) = layout.region::<u8>(2, 32 * 1024, 1024);
/// assert_eq!((stages.item_offset(2), barriers.offset(), staging.offset()), (98304, 147456, 148480));
/// assert_eq!(layout.bytes(), 148480 + 65536);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedLayout {
    bytes: u32,
}

impl SharedLayout {
    /// Nothing reserved yet.
    pub const EMPTY: SharedLayout = SharedLayout { bytes: 0 };

    /// Reserves `count` items of `item_bytes` each (a multiple of `align`, so every item is
    /// aligned too) at the next multiple of `align` (a power of two): the layout after it, and
    /// the region.
    pub const fn region<T>(
        self,
        count: u32,
        item_bytes: u32,
        align: u32,
    ) -> (SharedLayout, SharedRegion<T>) {
        assert!(align.is_power_of_two(), "alignments are powers of two");
        assert!(
            item_bytes.is_multiple_of(align) && align >= align_of::<T>() as u32,
            "items keep the region's alignment, at least their type's"
        );
        let offset = self.bytes.next_multiple_of(align);
        let region = SharedRegion {
            offset,
            count,
            item_bytes,
            item: core::marker::PhantomData,
        };
        (
            SharedLayout {
                bytes: offset + count * item_bytes,
            },
            region,
        )
    }

    /// Reserves `count` values of `T`, at its size and alignment.
    pub const fn array<T>(self, count: u32) -> (SharedLayout, SharedRegion<T>) {
        self.region::<T>(count, size_of::<T>() as u32, align_of::<T>() as u32)
    }

    /// The bytes reserved: the dynamic shared memory to launch with.
    pub const fn bytes(self) -> u32 {
        self.bytes
    }
}

/// `count` items of `item_bytes` at `offset` of the dynamic shared memory, each holding a `T`
/// (a tile of bytes, an mbarrier, a pipeline's state): one region of a [`SharedLayout`].
pub struct SharedRegion<T> {
    offset: u32,
    count: u32,
    item_bytes: u32,
    item: core::marker::PhantomData<fn() -> T>,
}

impl<T> Clone for SharedRegion<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SharedRegion<T> {}

impl<T> PartialEq for SharedRegion<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.offset, self.count, self.item_bytes) == (other.offset, other.count, other.item_bytes)
    }
}

impl<T> Eq for SharedRegion<T> {}

impl<T> core::fmt::Debug for SharedRegion<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedRegion")
            .field("offset", &self.offset)
            .field("count", &self.count)
            .field("item_bytes", &self.item_bytes)
            .finish()
    }
}

impl<T> SharedRegion<T> {
    /// Where it starts in the dynamic shared memory.
    pub const fn offset(self) -> u32 {
        self.offset
    }

    /// Its items.
    pub const fn count(self) -> u32 {
        self.count
    }

    /// Where item `i` starts.
    pub const fn item_offset(self, i: u32) -> u32 {
        self.offset + i * self.item_bytes
    }

    /// Item `i` (below [`count`](Self::count)), as a typed handle: `mov` of the dynamic shared
    /// memory's address plus a constant or one multiply-add — the address arithmetic a kernel
    /// would write.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn at(self, i: u32) -> crate::ptx::Shared<T> {
        crate::shared::dynamic_shared()
            .add(self.item_offset(i))
            .cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host reserves `pipeline_barrier_bytes(stages)` for what the device lays out as a
    /// `PipelineSharedState`: two 8-byte mbarriers per stage, 8-byte aligned.
    #[test]
    fn regions_follow_each_other_at_their_alignment() {
        let (l, a) = SharedLayout::EMPTY.region::<u8>(3, 40 * 1024, 1024);
        assert_eq!((a.offset(), a.count(), a.item_offset(1)), (0, 3, 40 * 1024));
        let (l, bars) = l.array::<Mbarrier>(8);
        assert_eq!(bars.offset(), 120 * 1024);
        // 8 mbarriers (64 bytes) later, the next 1 KiB boundary.
        let (l, c) = l.region::<u8>(2, 1024, 1024);
        assert_eq!(c.offset(), 121 * 1024);
        assert_eq!(l.bytes(), 123 * 1024);
        // An odd start is rounded up to the alignment.
        let (l, x) = SharedLayout::EMPTY.region::<u8>(1, 3, 1);
        let (_, y) = l.array::<u32>(1);
        assert_eq!((x.offset(), y.offset()), (0, 4));
    }

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
