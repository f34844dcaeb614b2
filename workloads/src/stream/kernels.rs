//! The streaming kernels' bodies, which their entry points ([`super::entry_points`]) call.
//! Every body's `# Safety`: `x` and `y` hold `n` floats each, 16-byte aligned, `n % 4 == 0`;
//! blocks of the table's threads with its `shared_bytes` of dynamic shared memory; any 1-D
//! grid.

use super::StreamKernel;
use crate::Quad;
use gpu::group::{Block, Group};
use gpu::memcpy_async::{AlignedSize, cp_async::memcpy_async_zfill};
use gpu::pipeline::{Consumer, Producer, ThreadPipeline};
use gpu::ptx;
use gpu::schedule::{GridStride, TileQueue, TileQueueState, TileSchedule};
use gpu::shared::dynamic_shared;
#[cfg(target_feature = "sm_90")]
use gpu::{
    memcpy_async::bulk::{
        memcpy_async_bulk, memcpy_async_tensor, store_async_bulk, store_async_tensor,
    },
    memcpy_async::completion::BulkCompletion,
    pipeline::BulkPipeline,
    shared::Shared,
    tensor_map::TensorMapRef,
};

/// What a stage holds when the schedule had no tile left for it.
const NO_TILE: u32 = u32::MAX;

/// Tiles through a `ThreadPipeline` of `memcpy_async` (16-byte copies, the last tile
/// zero-filled past `n`), then from shared memory to `y` with 16-byte accesses, in the order
/// `schedule` gives — which thread 0 alone asks for, writing each stage's tile into the
/// kernel's tile slots one iteration before the block needs it.
///
/// # Safety
/// See the module docs; `schedule` is this block's, used by thread 0 only (a queue's contract).
#[inline(always)]
unsafe fn thread_pipeline_stream<const STAGES: usize>(
    kernel: &StreamKernel,
    x: *const f32,
    y: *mut f32,
    n: u32,
    mut schedule: impl TileSchedule,
) {
    const { assert!(STAGES >= 2, "a tile in flight while another is stored") };
    let tile = kernel.tile_floats();
    let layout = kernel.layout();
    let stage = |s: u32| layout.stage::<f32>(s);
    let slots = dynamic_shared()
        .add(kernel.tile_slots_offset())
        .cast::<u32>();
    let block = Block::this_block();
    let (rank, threads) = (block.thread_rank(), block.size());
    // Thread 0 names the tile of stage `s`; the barrier after it shows the slot to all.
    let mut name_tile = |s: u32| {
        if rank == 0 {
            // SAFETY: slot `s` of the kernel's layout; nobody reads it until the next barrier
            // (its stage was consumed before the last one).
            unsafe { slots.add(s).write(schedule.next().unwrap_or(NO_TILE)) };
        }
    };
    let mut pipeline = ThreadPipeline::<STAGES>::new();
    let (mut producer, mut consumer) = pipeline.split();
    let mut fill = || {
        let s = producer.producer_acquire();
        // SAFETY: named before the last barrier.
        let t = unsafe { slots.add(s.index()).read() };
        if t != NO_TILE {
            let base = t * tile;
            let valid = (n - base).min(tile) * 4;
            // SAFETY: `valid` bytes of x exist from `base` (t < tiles); the stage is free
            // (fresh, or released before the last barrier).
            unsafe {
                memcpy_async_zfill(
                    &block,
                    stage(s.index()),
                    x.wrapping_add(base as usize),
                    AlignedSize::<16>::of(kernel.tile_bytes),
                    valid,
                    &s,
                )
            };
        }
        s.producer_commit();
    };
    let ahead = STAGES as u32 - 1;
    for s in 0..ahead {
        name_tile(s);
    }
    ptx::barrier_sync();
    for _ in 0..ahead {
        fill();
    }
    let mut i = 0;
    loop {
        // The stage this iteration refills was consumed in the last one (its slot last read
        // before the last barrier); asked before the wait, so the two latencies overlap.
        name_tile((i + ahead) % STAGES as u32);
        let ready = consumer.consumer_wait();
        // Every thread's copies of the tile are visible, and the slot named above.
        ptx::barrier_sync();
        // SAFETY: named before an earlier barrier; renamed only after the next one.
        let t = unsafe { slots.add(ready.index()).read() };
        if t == NO_TILE {
            // The schedule ended (a queue ends for good: every later slot is empty too).
            break;
        }
        let base = t * tile;
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
        // Everyone has read the stage (and its slot) before anyone refills it.
        ptx::barrier_sync();
        fill();
        i += 1;
    }
}

/// [`thread_pipeline_stream`] of `kernel` (a thread-pipeline kernel of `STAGES` stages whose
/// order is [`TileOrder::Queue`](super::TileOrder::Queue)): tiles from a queue.
///
/// # Safety
/// See the module docs; `queue` is a zeroed `TileQueueState` no other launch uses meanwhile.
#[inline(always)]
pub(super) unsafe fn thread_pipeline_queued<const STAGES: usize>(
    kernel: &StreamKernel,
    x: *const f32,
    y: *mut f32,
    n: u32,
    queue: *mut TileQueueState,
) {
    // SAFETY: the launch's queue (contract above); thread 0 alone asks it, until it ends.
    let schedule = unsafe { TileQueue::new(queue, n.div_ceil(kernel.tile_floats())) };
    // SAFETY: forwarded.
    unsafe { thread_pipeline_stream::<STAGES>(kernel, x, y, n, schedule) }
}

/// [`thread_pipeline_stream`] of `kernel` (a thread-pipeline kernel of `STAGES` stages whose
/// order is [`TileOrder::GridStride`](super::TileOrder::GridStride)): grid-strided tiles.
///
/// # Safety
/// See the module docs.
#[inline(always)]
pub(super) unsafe fn thread_pipeline_strided<const STAGES: usize>(
    kernel: &StreamKernel,
    x: *const f32,
    y: *mut f32,
    n: u32,
) {
    let schedule = GridStride::this_block(n.div_ceil(kernel.tile_floats()));
    // SAFETY: forwarded.
    unsafe { thread_pipeline_stream::<STAGES>(kernel, x, y, n, schedule) }
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
    /// The tiles of `kernel` over `x` and `y` (`n` floats each), with its L2 policy.
    #[inline(always)]
    fn of(kernel: &StreamKernel, x: *const f32, y: *mut f32, n: u32) -> BulkTiles {
        let l2 = match kernel.style {
            super::StreamStyle::Bulk {
                evict_first: true, ..
            } => Some(ptx::l2_policy_evict_first()),
            _ => None,
        };
        BulkTiles {
            x,
            y,
            n,
            tile: kernel.tile_floats(),
            l2,
        }
    }

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

/// The copy engine: one elected thread per block copies each tile `schedule` gives it into a
/// `BulkPipeline` stage, waits for it, and copies it back out to `y`; the stage is released
/// once the store has read it. No data passes through registers, and the tiles of the stages
/// in flight stay in that thread's registers.
///
/// # Safety
/// See the module docs; sm_90; `tiles` within `x` and `y` as their type says; `schedule` is
/// this block's, used by the elected thread only (a queue's contract).
#[cfg(target_feature = "sm_90")]
#[inline(always)]
unsafe fn stream_engine<const STAGES: usize>(
    kernel: &StreamKernel,
    tiles: &impl EngineTiles,
    mut schedule: impl TileSchedule,
) {
    const { assert!(STAGES >= 2, "a tile in flight while another is stored") };
    let layout = kernel.layout();
    let stage = |s: u32| layout.stage::<f32>(s);
    let barriers = layout.barriers();
    // SAFETY: every thread calls it; one elected thread produces and consumes every stage.
    let mut pipeline = unsafe { BulkPipeline::<STAGES>::init(barriers, 1) };
    if ptx::thread_idx_x() >= 32 || !ptx::elect_one() {
        return;
    }
    let (mut producer, mut consumer) = pipeline.split();
    let mut fill = || {
        let s = producer.producer_acquire();
        let t = schedule.next();
        if let Some(t) = t {
            // SAFETY: a tile of the arrays (the schedule's count); the stage is free
            // (acquired); its full phase expects this thread's commit below.
            unsafe { tiles.load(t, stage(s.index()), &s) };
        }
        s.producer_commit();
        t.unwrap_or(NO_TILE)
    };
    // The tiles of the STAGES - 1 stages filled and not yet stored, oldest first in
    // `in_flight[0]` (the last entry is spare: the array length cannot be STAGES - 1); `push`
    // shifts them along, so every index is a constant and they stay in registers.
    let mut in_flight = [NO_TILE; STAGES];
    let push = |in_flight: &mut [u32; STAGES], t: u32| {
        for k in 0..STAGES - 2 {
            in_flight[k] = in_flight[k + 1];
        }
        in_flight[STAGES - 2] = t;
    };
    for _ in 0..STAGES - 1 {
        push(&mut in_flight, fill());
    }
    loop {
        let ready = consumer.consumer_wait();
        let t = in_flight[0];
        if t == NO_TILE {
            // The schedule ended (for good: every later stage is empty too).
            break;
        }
        // The copy engine wrote the stage and reads it next; the fence orders this thread's
        // view of the completed load before the store it issues (one per tile).
        ptx::fence_proxy_async_shared();
        // SAFETY: the tile landed (its phase completed); the stage is released only after
        // the store has read it.
        unsafe { tiles.store(t, stage(ready.index())) };
        ptx::bulk_commit_group();
        // Refill the stage released last time while this store reads its own.
        push(&mut in_flight, fill());
        ptx::bulk_wait_group_read::<0>();
        ready.consumer_release();
    }
    // Every store's writes are done before the block retires.
    ptx::bulk_wait_group::<0>();
}

/// [`stream_engine`] of 1-D bulk copies as `kernel` (a bulk kernel of `STAGES` stages whose
/// order is [`TileOrder::Queue`](super::TileOrder::Queue)) says, tiles from a queue.
///
/// # Safety
/// See the module docs; sm_90; `queue` is a zeroed `TileQueueState` no other launch uses
/// meanwhile.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub(super) unsafe fn bulk_queued<const STAGES: usize>(
    kernel: &StreamKernel,
    x: *const f32,
    y: *mut f32,
    n: u32,
    queue: *mut TileQueueState,
) {
    let tiles = BulkTiles::of(kernel, x, y, n);
    // SAFETY: the launch's queue (contract above); the elected thread alone asks it, until it
    // ends.
    let schedule = unsafe { TileQueue::new(queue, tiles.count()) };
    // SAFETY: forwarded.
    unsafe { stream_engine::<STAGES>(kernel, &tiles, schedule) }
}

/// [`stream_engine`] of 1-D bulk copies as `kernel` (a bulk kernel of `STAGES` stages whose
/// order is [`TileOrder::GridStride`](super::TileOrder::GridStride)) says, grid-strided tiles.
///
/// # Safety
/// See the module docs; sm_90.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub(super) unsafe fn bulk_strided<const STAGES: usize>(
    kernel: &StreamKernel,
    x: *const f32,
    y: *mut f32,
    n: u32,
) {
    let tiles = BulkTiles::of(kernel, x, y, n);
    let schedule = GridStride::this_block(tiles.count());
    // SAFETY: forwarded.
    unsafe { stream_engine::<STAGES>(kernel, &tiles, schedule) }
}

/// [`stream_engine`] of 2-D tensor copies as `kernel` (a tensor kernel of `STAGES` stages)
/// says, tiles from a queue; `x` and `y` are the kernel's tensor-map parameters.
///
/// # Safety
/// `x` and `y` are tensor maps of two buffers of `n` floats (`n % 4 == 0`) with the view and
/// box of [`super::TensorView::of`] for this kernel's tile; sm_90; `queue` is a zeroed
/// `TileQueueState` no other launch uses meanwhile.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub(super) unsafe fn tensor_queued<const STAGES: usize>(
    kernel: &StreamKernel,
    x: TensorMapRef,
    y: TensorMapRef,
    view: super::TensorView,
    queue: *mut TileQueueState,
) {
    let Some(box_bytes) = AlignedSize::<16>::new(view.box_floats() * 4) else {
        // Row of 4 floats or more (n % 4 == 0): never taken.
        ptx::trap()
    };
    if ptx::thread_idx_x() == 0 {
        ptx::prefetch_tensormap(x);
        ptx::prefetch_tensormap(y);
    }
    let tiles = TensorTiles {
        x,
        y,
        rows: view.rows,
        box_rows: view.box_rows,
        box_bytes,
    };
    // SAFETY: the launch's queue (contract above); the elected thread alone asks it, until it
    // ends.
    let schedule = unsafe { TileQueue::new(queue, tiles.count()) };
    // SAFETY: forwarded; the box fits a stage (TensorView::of).
    unsafe { stream_engine::<STAGES>(kernel, &tiles, schedule) }
}
