//! Streaming: `y = x` for `n` floats (a multiple of 4, so every chunk is 16 bytes), far past
//! L2, moved global -> shared -> global in the ways the library offers, against the driver's
//! own device-to-device copy. A bandwidth benchmark: every kernel is persistent, the host sizes
//! the grid from the SM count, and the blocks take their tiles in one of two orders
//! ([`TileOrder`]): from a [`TileQueue`](gpu::schedule) (the next tile in address order to
//! whichever block asks) or grid-strided (`b, b + grid, ...`, fixed in advance).
//!
//! Kernel parameters: `(x, y, n)` — device pointers, except for the tensor-copy kernels, which
//! take tensor maps of `x` and `y` viewed as [`TensorView::of`] says — then, for the kernels
//! whose order is [`TileOrder::Queue`], a pointer to a zeroed
//! [`TileQueueState`] (left zeroed by the launch).
//!
//! Each kernel is one line of [`STREAM_KERNELS`], declared from it in [`entry_points`]: its
//! [`EntryPoint`] (everywhere), which its [`StreamKernel`] carries as a [`StreamEntry`], and
//! its entry point (on nvptx64), so the host launches exactly what the device defines, with
//! the parameter types it declares.

use gpu::kernel::EntryPoint;
use gpu::layout::StagedLayout;
use gpu::schedule::TileQueueState;
use gpu::tensor_map::TensorMap;

pub mod entry_points;
#[cfg(target_arch = "nvptx64")]
mod kernels;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

/// How a streaming kernel moves the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamStyle {
    /// Plain 16-byte loads and stores (`ld.global.v4` / `st.global.v4`), no shared memory.
    Plain,
    /// `memcpy_async` (16-byte `cp.async.cg`) of each tile over the block into a
    /// `ThreadPipeline`, then 16-byte shared loads and global stores.
    ThreadPipeline {
        /// Stages in the ring.
        stages: u32,
    },
    /// The copy engine (sm_90): one elected thread bulk-copies each tile into a
    /// `BulkPipeline` stage and bulk-stores it back out; no data passes through registers.
    Bulk {
        /// Stages in the ring.
        stages: u32,
        /// Whether the copies ask L2 to evict their lines first (`createpolicy
        /// .L2::evict_first` on the loads and the stores: every byte is touched once).
        evict_first: bool,
    },
    /// The copy engine's tensor copies (sm_90, TMA): as `Bulk`, but each tile is a 2-D box of
    /// a [`TensorView`] of the arrays, the last one zero-filled past the end by the copy
    /// engine on the way in and clipped on the way out.
    Tensor {
        /// Stages in the ring.
        stages: u32,
    },
}

impl StreamStyle {
    /// Stages in shared memory (none for plain copies).
    pub const fn stages(self) -> u32 {
        match self {
            StreamStyle::Plain => 0,
            StreamStyle::ThreadPipeline { stages }
            | StreamStyle::Bulk { stages, .. }
            | StreamStyle::Tensor { stages } => stages,
        }
    }

    /// The style's name in reports.
    pub const fn label(self) -> &'static str {
        match self {
            StreamStyle::Plain => "plain",
            StreamStyle::ThreadPipeline { .. } => "thread_pipeline",
            StreamStyle::Bulk {
                evict_first: false, ..
            } => "bulk",
            StreamStyle::Bulk {
                evict_first: true, ..
            } => "bulk_evict_first",
            StreamStyle::Tensor { .. } => "tensor",
        }
    }

    /// One line on what it does.
    pub const fn summary(self) -> &'static str {
        match self {
            StreamStyle::Plain => "ld.global.v4 x4 -> st.global.v4 x4 per thread, grid-stride",
            StreamStyle::ThreadPipeline { .. } => {
                "cp.async 16 B tiles from a TileQueue through a ThreadPipeline, then LDS.128 -> STG.128"
            }
            StreamStyle::Bulk {
                evict_first: false, ..
            } => {
                "sm_90 copy engine: tiles from a TileQueue, cp.async.bulk in (BulkPipeline) and out, one thread per block"
            }
            StreamStyle::Bulk {
                evict_first: true, ..
            } => "as bulk, every copy with an L2 evict_first policy (.L2::cache_hint)",
            StreamStyle::Tensor { .. } => {
                "sm_90 TMA: as bulk, 2-D cp.async.bulk.tensor boxes in and out"
            }
        }
    }
}

/// In what order the blocks of a tiled streaming kernel take their tiles ([`gpu::schedule`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileOrder {
    /// Block `b` of `g` takes tiles `b, b + g, ...` ([`gpu::schedule::GridStride`]); also
    /// the plain kernel's walk over 16-byte chunks.
    GridStride,
    /// One thread per block takes the next tile from a queue in global memory
    /// (`TileQueue`): the tiles in flight are always the next ones in address order.
    Queue,
}

/// A streaming kernel's entry point, by its parameter types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEntry {
    /// `(x, y, n)`: device pointers to the `n` floats of `x` and `y`.
    Pointers(EntryPoint<(*const f32, *mut f32, u32)>),
    /// `(x, y, n, queue)`: as [`StreamEntry::Pointers`], then the tile queue's state.
    PointersQueued(EntryPoint<(*const f32, *mut f32, u32, *mut TileQueueState)>),
    /// `(x, y, n, queue)`: tensor maps of `x` and `y` (as [`TensorView::of`] says) in place
    /// of the pointers, then the tile queue's state.
    TensorMapsQueued(EntryPoint<(TensorMap, TensorMap, u32, *mut TileQueueState)>),
}

impl StreamEntry {
    /// The name the entry point is exported under.
    pub const fn name(self) -> &'static str {
        match self {
            StreamEntry::Pointers(entry) => entry.name(),
            StreamEntry::PointersQueued(entry) => entry.name(),
            StreamEntry::TensorMapsQueued(entry) => entry.name(),
        }
    }

    /// Whether its last parameter is a tile queue's state.
    pub const fn takes_queue(self) -> bool {
        !matches!(self, StreamEntry::Pointers(_))
    }
}

/// One streaming kernel: its entry point, style, tile order, and launch geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamKernel {
    /// Entry point name (the name `entry` is exported under).
    pub name: &'static str,
    /// Its entry point.
    pub entry: StreamEntry,
    /// How it moves the data.
    pub style: StreamStyle,
    /// In what order its blocks take tiles.
    pub order: TileOrder,
    /// Threads per block.
    pub threads: u32,
    /// Blocks per SM the host launches.
    pub blocks_per_sm: u32,
    /// Bytes of one tile (one stage buffer).
    pub tile_bytes: u32,
}

impl StreamKernel {
    /// Its dynamic shared memory: the stages, then their mbarriers where it has them.
    pub const fn layout(&self) -> StagedLayout {
        StagedLayout::new(self.tile_bytes, self.style.stages(), self.needs_sm90())
    }

    /// Where the tile of each stage is written down for the whole block, after the layout:
    /// one `u32` per stage, in the kernels whose every thread copies (the thread pipeline);
    /// the copy-engine kernels keep theirs in the one thread that issues the copies.
    pub const fn tile_slots_offset(&self) -> u32 {
        self.layout().bytes
    }

    /// Dynamic shared memory to launch with: the layout, then the tile slots where it has them.
    pub const fn shared_bytes(&self) -> u32 {
        let slots = match self.style {
            StreamStyle::ThreadPipeline { stages } => 4 * stages,
            _ => 0,
        };
        self.layout().bytes + slots
    }

    /// One line on what it does.
    pub const fn summary(&self) -> &'static str {
        match (self.order, self.style) {
            (TileOrder::Queue, style) | (TileOrder::GridStride, style @ StreamStyle::Plain) => {
                style.summary()
            }
            (TileOrder::GridStride, _) => {
                "the same kernel with grid-strided tiles (b, b + grid, ...) instead of a TileQueue"
            }
        }
    }

    /// Whether it takes a tile queue's state as its last parameter.
    pub const fn takes_queue(&self) -> bool {
        matches!(self.order, TileOrder::Queue)
    }

    /// Whether it needs sm_90 (the copy engine): absent from the sm_80 PTX.
    pub const fn needs_sm90(&self) -> bool {
        matches!(
            self.style,
            StreamStyle::Bulk { .. } | StreamStyle::Tensor { .. }
        )
    }

    /// Floats per tile.
    pub const fn tile_floats(&self) -> u32 {
        self.tile_bytes / 4
    }
}

/// Quads (16 bytes) each thread of `stream_plain` loads before it stores them: the loads in
/// flight that a kernel without shared memory has (64 KiB per SM at 2048 threads).
pub const PLAIN_QUADS_PER_THREAD: u32 = 4;

/// Bytes per tile of the async-copy kernels.
pub const PIPELINE_TILE_BYTES: u32 = 16 * 1024;
/// Bytes per tile of the bulk kernels.
pub const BULK_TILE_BYTES: u32 = 32 * 1024;

/// How the tensor-copy kernels see `n` floats: `rows` rows of `row_floats` (the largest power
/// of two up to 256 that divides `n`, so the rows tile the array exactly), copied in boxes of
/// `row_floats x box_rows` (at most a tile, at most 256 rows). The last box may hang past the
/// last row: the copy engine fills it with zeros on loads and drops it on stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorView {
    /// Floats per row (a power of two, 4..=256 for `n % 4 == 0`).
    pub row_floats: u32,
    /// Rows.
    pub rows: u32,
    /// Rows per box.
    pub box_rows: u32,
}

impl TensorView {
    /// The view of `n` floats for tiles of `tile_floats` (a multiple of 256).
    pub const fn of(n: u32, tile_floats: u32) -> TensorView {
        let row_floats = if n == 0 {
            256
        } else {
            let pow2 = 1 << n.trailing_zeros();
            if pow2 < 256 { pow2 } else { 256 }
        };
        let box_rows = tile_floats / row_floats;
        TensorView {
            row_floats,
            rows: n / row_floats,
            box_rows: if box_rows < 256 { box_rows } else { 256 },
        }
    }

    /// Floats of one box.
    pub const fn box_floats(self) -> u32 {
        self.row_floats * self.box_rows
    }
}

pub use entry_points::STREAM_KERNELS;

/// The kernel of [`STREAM_KERNELS`] named `name`.
pub fn find(name: &str) -> Option<&'static StreamKernel> {
    STREAM_KERNELS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_fit_their_blocks_per_sm() {
        for k in STREAM_KERNELS {
            assert!(
                k.shared_bytes() * k.blocks_per_sm <= 227 * 1024,
                "{}",
                k.name
            );
            assert_eq!(k.tile_bytes % 16, 0, "{}", k.name);
        }
        let bulk = find("stream_bulk_4").unwrap();
        assert_eq!(bulk.layout().bytes, 4 * 32768 + 4 * 16);
    }

    #[test]
    fn entries_agree_with_style_and_order() {
        for k in STREAM_KERNELS {
            let tensor = matches!(k.style, StreamStyle::Tensor { .. });
            match k.entry {
                StreamEntry::Pointers(_) => assert!(!tensor && !k.takes_queue(), "{}", k.name),
                StreamEntry::PointersQueued(_) => {
                    assert!(!tensor && k.takes_queue(), "{}", k.name)
                }
                StreamEntry::TensorMapsQueued(_) => {
                    assert!(tensor && k.takes_queue(), "{}", k.name)
                }
            }
            assert_eq!(k.entry.takes_queue(), k.takes_queue(), "{}", k.name);
            assert_eq!(k.name, k.entry.name());
        }
        for (i, k) in STREAM_KERNELS.iter().enumerate() {
            assert!(
                STREAM_KERNELS[..i].iter().all(|o| o.name != k.name),
                "{} twice",
                k.name
            );
        }
    }

    #[test]
    fn tensor_views_tile_the_array_and_boxes_fit_a_stage() {
        let big = TensorView::of(1 << 29, find("stream_tensor_3").unwrap().tile_floats());
        assert_eq!((big.row_floats, big.rows, big.box_rows), (256, 1 << 21, 32));
        assert_eq!(big.box_floats() * 4, BULK_TILE_BYTES);
        let ragged = TensorView::of(8192 * 5 + 4, find("stream_tensor_3").unwrap().tile_floats());
        assert_eq!((ragged.row_floats, ragged.box_rows), (4, 256));
        for n in [
            4,
            12,
            1000,
            8192 * 5 + 4,
            (3 << 20) + 12,
            65540,
            u32::MAX - 3,
        ] {
            for k in STREAM_KERNELS
                .iter()
                .filter(|k| k.style.label() == "tensor")
            {
                let v = TensorView::of(n, k.tile_floats());
                assert_eq!(v.rows * v.row_floats, n, "{n}");
                assert!(v.row_floats >= 4 && v.row_floats <= 256 && v.row_floats.is_power_of_two());
                assert!((1..=256).contains(&v.box_rows));
                assert!(v.box_floats() <= k.tile_floats(), "{n} {}", k.name);
                assert_eq!(v.box_floats() % 4, 0);
            }
        }
    }
}
