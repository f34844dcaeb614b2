//! The streaming kernels (see [`super`]). Every body's `# Safety`: `x` and `y` hold `n` floats
//! each, 16-byte aligned, `n % 4 == 0`; blocks of the table's threads with its layout's
//! dynamic shared memory; any grid.

use super::StreamKernel;
use crate::memcpy_async::{AlignedSize, Block, Group, memcpy_async_zfill};
use crate::pipeline::{Consumer, Producer, ThreadPipeline};
use crate::ptx;
use crate::workloads::Quad;
#[cfg(target_feature = "sm_90")]
use crate::{
    memcpy_async::{
        BulkCompletion, memcpy_async_bulk, memcpy_async_tensor, store_async_bulk,
        store_async_tensor,
    },
    pipeline::BulkPipeline,
    shared::Shared,
    tensor_map::{TensorMap, TensorMapRef},
    tensor_map_param,
};

/// This block's tiles of `tiles`: `first, first + step, ...`, `count` of them.
#[inline(always)]
fn my_tiles(tiles: u32) -> (u32, u32, u32) {
    let (first, step) = (ptx::block_idx_x(), ptx::grid_dim_x());
    (first, step, tiles.saturating_sub(first).div_ceil(step))
}

/// Plain 16-byte loads and stores, grid-stride.
///
/// # Safety
/// See the module docs.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn stream_plain(x: *const f32, y: *mut f32, n: u32) {
    let quads = n / 4;
    let stride = ptx::grid_dim_x() * ptx::block_dim_x();
    let mut i = ptx::block_idx_x() * ptx::block_dim_x() + ptx::thread_idx_x();
    let (x, y) = (x.cast::<Quad>(), y.cast::<Quad>());
    while i < quads {
        // SAFETY: i < n / 4.
        unsafe { y.add(i as usize).write(x.add(i as usize).read()) };
        i += stride;
    }
}

/// Tiles through a four-stage `ThreadPipeline` of `memcpy_async` (16-byte copies, the last
/// tile zero-filled past `n`), then from shared memory to `y` with 16-byte accesses.
///
/// # Safety
/// See the module docs.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn stream_thread_pipeline_4(x: *const f32, y: *mut f32, n: u32) {
    const KERNEL: StreamKernel = super::STREAM_THREAD_PIPELINE_4;
    const STAGES: usize = KERNEL.style.stages() as usize;
    let tile = KERNEL.tile_floats();
    let layout = KERNEL.layout();
    let stage = |s: u32| layout.stage::<f32>(s);
    let block = Block::this_block();
    let (rank, threads) = (block.thread_rank(), block.size());
    let (first, step, mine) = my_tiles(n.div_ceil(tile));
    let mut pipeline = ThreadPipeline::<STAGES>::new();
    let (mut producer, mut consumer) = pipeline.split();
    let mut fill = |i: u32| {
        let s = producer.producer_acquire();
        if i < mine {
            let base = (first + i * step) * tile;
            let valid = (n - base).min(tile) * 4;
            // SAFETY: `valid` bytes of x exist from `base`; the stage is free (fresh, or
            // released after the barrier below).
            unsafe {
                memcpy_async_zfill(
                    &block,
                    stage(s.index()),
                    x.wrapping_add(base as usize),
                    AlignedSize::<16>::of(KERNEL.tile_bytes),
                    valid,
                    &s,
                )
            };
        }
        s.producer_commit();
    };
    for i in 0..STAGES as u32 - 1 {
        fill(i);
    }
    for i in 0..mine {
        let ready = consumer.consumer_wait();
        // Every thread's copies of the tile are visible.
        ptx::barrier_sync();
        let base = (first + i * step) * tile;
        let quads = (n - base).min(tile) / 4;
        let buffer = stage(ready.index()).cast::<[f32; 4]>();
        let mut q = rank;
        while q < quads {
            // SAFETY: the tile landed; q < its quads, inside y.
            unsafe {
                let v = buffer.add(q).read();
                y.add((base + 4 * q) as usize).cast::<Quad>().write(Quad(v));
            }
            q += threads;
        }
        ready.consumer_release();
        // Everyone has read the stage before anyone refills it.
        ptx::barrier_sync();
        fill(i + STAGES as u32 - 1);
    }
}

/// What the copy-engine loop needs of its tiles: a load of tile `t` into a stage and a store
/// of it back out, as 1-D bulk copies ([`BulkTiles`]) or tensor copies ([`TensorTiles`]).
#[cfg(target_feature = "sm_90")]
trait EngineTiles {
    /// Tiles in all.
    fn count(&self) -> u32;
    /// Copies tile `t` of `x` into `dst`, its bytes completing on `stage`.
    ///
    /// # Safety
    /// `t < count()`; `dst` is a free stage buffer of the kernel's tile bytes; `stage` is the
    /// producer stage acquired for it, not yet committed.
    unsafe fn load<C: BulkCompletion>(&self, t: u32, dst: Shared<f32>, stage: &C);
    /// Writes tile `t` of `y` from `src`, in this thread's current bulk group.
    ///
    /// # Safety
    /// `t < count()`; `src` holds tile `t`, landed and fenced for the copy engine.
    unsafe fn store(&self, t: u32, src: Shared<f32>);
}

/// Tiles of `tile` floats of `x` and `y`, moved by 1-D bulk copies; the last one is cut at `n`.
#[cfg(target_feature = "sm_90")]
struct BulkTiles {
    x: *const f32,
    y: *mut f32,
    n: u32,
    tile: u32,
    /// The L2 policy of every copy, if any.
    l2: Option<ptx::L2Policy>,
}

#[cfg(target_feature = "sm_90")]
impl BulkTiles {
    /// Tile `t`'s first float and size.
    #[inline(always)]
    fn span(&self, t: u32) -> (usize, AlignedSize<16>) {
        let base = t * self.tile;
        match AlignedSize::<16>::new((self.n - base).min(self.tile) * 4) {
            Some(size) => (base as usize, size),
            // n % 4 == 0 (launch contract): never taken.
            None => ptx::trap(),
        }
    }
}

#[cfg(target_feature = "sm_90")]
impl EngineTiles for BulkTiles {
    #[inline(always)]
    fn count(&self) -> u32 {
        self.n.div_ceil(self.tile)
    }
    #[inline(always)]
    unsafe fn load<C: BulkCompletion>(&self, t: u32, dst: Shared<f32>, stage: &C) {
        let (base, size) = self.span(t);
        // SAFETY: `size` bytes of x exist from `base` (t < count); the caller's stage contract.
        unsafe { memcpy_async_bulk(dst, self.x.wrapping_add(base), size, stage, self.l2) }
    }
    #[inline(always)]
    unsafe fn store(&self, t: u32, src: Shared<f32>) {
        let (base, size) = self.span(t);
        // SAFETY: y has `size` bytes from `base`; the caller's source contract.
        unsafe { store_async_bulk(self.y.wrapping_add(base), src, size, self.l2) }
    }
}

/// `x` and `y` as [`super::TensorView`]s (rows of `row_floats`), tiles of `box_rows` rows
/// moved by 2-D tensor copies: the copy engine zero-fills the last tile's rows past the end on
/// the way in and drops them on the way out.
#[cfg(target_feature = "sm_90")]
struct TensorTiles {
    x: TensorMapRef,
    y: TensorMapRef,
    rows: u32,
    box_rows: u32,
    box_bytes: AlignedSize<16>,
}

#[cfg(target_feature = "sm_90")]
impl EngineTiles for TensorTiles {
    #[inline(always)]
    fn count(&self) -> u32 {
        self.rows.div_ceil(self.box_rows)
    }
    #[inline(always)]
    unsafe fn load<C: BulkCompletion>(&self, t: u32, dst: Shared<f32>, stage: &C) {
        let row = (t * self.box_rows) as i32;
        // SAFETY: the maps describe x and y with boxes of `box_bytes` (launch contract); the
        // caller's stage contract.
        unsafe { memcpy_async_tensor(dst, self.x, [0, row], self.box_bytes, stage) }
    }
    #[inline(always)]
    unsafe fn store(&self, t: u32, src: Shared<f32>) {
        let row = (t * self.box_rows) as i32;
        // SAFETY: as for the load; the caller's source contract.
        unsafe { store_async_tensor(self.y, [0, row], src) }
    }
}

/// The copy engine: one elected thread per block copies each of its tiles into a
/// `BulkPipeline` stage, waits for it, and copies it back out to `y`; the stage is released
/// once the store has read it. No data passes through registers.
///
/// # Safety
/// See the module docs; sm_90; `tiles` within `x` and `y` as their type says.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
unsafe fn stream_engine<const STAGES: usize>(kernel: &StreamKernel, tiles: &impl EngineTiles) {
    let layout = kernel.layout();
    let stage = |s: u32| layout.stage::<f32>(s);
    let (first, step, mine) = my_tiles(tiles.count());
    let barriers = layout.barriers();
    // SAFETY: every thread calls it; one elected thread produces and consumes every stage.
    let mut pipeline = unsafe { BulkPipeline::<STAGES>::init(barriers, 1) };
    if ptx::thread_idx_x() >= 32 || !ptx::elect_one() {
        return;
    }
    let (mut producer, mut consumer) = pipeline.split();
    let mut fill = |i: u32| {
        let s = producer.producer_acquire();
        if i < mine {
            // SAFETY: a tile of this block; the stage is free (acquired); its full phase
            // expects this thread's commit below.
            unsafe { tiles.load(first + i * step, stage(s.index()), &s) };
        }
        s.producer_commit();
    };
    for i in 0..STAGES as u32 - 1 {
        fill(i);
    }
    for i in 0..mine {
        let ready = consumer.consumer_wait();
        // The copy engine wrote the stage and reads it next; the fence orders this thread's
        // view of the completed load before the store it issues (one per tile).
        ptx::fence_proxy_async_shared();
        // SAFETY: the tile landed (its phase completed); the stage is released only after
        // the store has read it.
        unsafe { tiles.store(first + i * step, stage(ready.index())) };
        ptx::bulk_commit_group();
        // Refill the stage released last time while this store reads its own.
        fill(i + STAGES as u32 - 1);
        ptx::bulk_wait_group_read::<0>();
        ready.consumer_release();
    }
    // Every store's writes are done before the block retires.
    ptx::bulk_wait_group::<0>();
}

/// One entry point per bulk kernel of the table: [`stream_engine`] over [`BulkTiles`] with
/// that kernel's stages, tile and geometry.
macro_rules! bulk_entry_points {
    ($($name:ident = $kernel:ident,)*) => {$(
        #[doc = concat!("[`stream_engine`] of 1-D bulk copies as [`super::", stringify!($kernel), "`] says.")]
        ///
        /// # Safety
        /// See the module docs; sm_90.
        #[cfg(target_feature = "sm_90")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(x: *const f32, y: *mut f32, n: u32) {
            const KERNEL: StreamKernel = super::$kernel;
            let l2 = match KERNEL.style {
                super::StreamStyle::Bulk { evict_first: true, .. } => Some(ptx::l2_policy_evict_first()),
                _ => None,
            };
            let tiles = BulkTiles { x, y, n, tile: KERNEL.tile_floats(), l2 };
            // SAFETY: forwarded.
            unsafe { stream_engine::<{ KERNEL.style.stages() as usize }>(&KERNEL, &tiles) }
        }
    )*};
}

bulk_entry_points! {
    stream_bulk_3 = STREAM_BULK_3,
    stream_bulk_4 = STREAM_BULK_4,
    stream_bulk_3_64k = STREAM_BULK_3_64K,
    stream_bulk_4_24k = STREAM_BULK_4_24K,
    stream_bulk_3_64k_evict_first = STREAM_BULK_3_64K_EVICT_FIRST,
}

/// One entry point per tensor kernel of the table: [`stream_engine`] over [`TensorTiles`].
/// Parameters `(x, y, n)`: tensor maps of `x` and `y` as [`super::TensorView::of`]`(n, tile
/// floats)` says (rows of `row_floats`, boxes of `row_floats x box_rows`), and `n`.
macro_rules! tensor_entry_points {
    ($($name:ident = $kernel:ident,)*) => {$(
        #[doc = concat!("[`stream_engine`] of 2-D tensor copies as [`super::", stringify!($kernel), "`] says.")]
        ///
        /// # Safety
        /// `x` and `y` are tensor maps of two buffers of `n` floats (`n % 4 == 0`) with the
        /// view and box of [`super::TensorView::of`] for this kernel's tile; sm_90.
        #[cfg(target_feature = "sm_90")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(x: TensorMap, y: TensorMap, n: u32) {
            const KERNEL: StreamKernel = super::$kernel;
            let (x, y) = (tensor_map_param!($name, 0, x), tensor_map_param!($name, 1, y));
            let view = super::TensorView::of(n, KERNEL.tile_floats());
            let Some(box_bytes) = AlignedSize::<16>::new(view.box_floats() * 4) else {
                // Row of 4 floats or more (n % 4 == 0): never taken.
                ptx::trap()
            };
            if ptx::thread_idx_x() == 0 {
                ptx::prefetch_tensormap(x);
                ptx::prefetch_tensormap(y);
            }
            let tiles = TensorTiles { x, y, rows: view.rows, box_rows: view.box_rows, box_bytes };
            // SAFETY: forwarded; the box fits a stage (TensorView::of).
            unsafe { stream_engine::<{ KERNEL.style.stages() as usize }>(&KERNEL, &tiles) }
        }
    )*};
}

tensor_entry_points! {
    stream_tensor_3 = STREAM_TENSOR_3,
    stream_tensor_3_64k = STREAM_TENSOR_3_64K,
}
