//! The streaming kernels (see [`super`]). Every body's `# Safety`: `x` and `y` hold `n` floats
//! each, 16-byte aligned, `n % 4 == 0`; blocks of the table's threads with its layout's
//! dynamic shared memory; any grid.

use super::StreamKernel;
use crate::memcpy_async::{AlignedSize, Block, Group, memcpy_async_zfill};
use crate::pipeline::{Consumer, Producer, ThreadPipeline};
use crate::ptx;

/// Four floats moved as one 16-byte access.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Quad([f32; 4]);

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

/// The copy engine: one elected thread per block bulk-copies each tile of `x` into a
/// `BulkPipeline` stage, waits for it, and bulk-stores it to `y`; the stage is released once
/// the store has read it.
///
/// # Safety
/// See the module docs; sm_90.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
unsafe fn stream_bulk<const STAGES: usize>(
    kernel: &StreamKernel,
    x: *const f32,
    y: *mut f32,
    n: u32,
) {
    use crate::memcpy_async::{memcpy_async_bulk, store_async_bulk};
    use crate::pipeline::BulkPipeline;
    let tile = kernel.tile_floats();
    let layout = kernel.layout();
    let stage = |s: u32| layout.stage::<f32>(s);
    let (first, step, mine) = my_tiles(n.div_ceil(tile));
    let bytes_of = |i: u32| {
        let base = (first + i * step) * tile;
        match AlignedSize::<16>::new((n - base).min(tile) * 4) {
            Some(size) => (base, size),
            // n % 4 == 0 (launch contract): never taken.
            None => ptx::trap(),
        }
    };
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
            let (base, size) = bytes_of(i);
            // SAFETY: `size` bytes of x exist from `base`; the stage is free (acquired); its
            // full phase expects this thread's commit below.
            unsafe { memcpy_async_bulk(stage(s.index()), x.wrapping_add(base as usize), size, &s) };
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
        let (base, size) = bytes_of(i);
        // SAFETY: the tile landed (its phase completed); y has `size` bytes from `base`; the
        // stage is released only after the store has read it.
        unsafe { store_async_bulk(y.wrapping_add(base as usize), stage(ready.index()), size) };
        ptx::bulk_commit_group();
        // Refill the stage released last time while this store reads its own.
        fill(i + STAGES as u32 - 1);
        ptx::bulk_wait_group_read::<0>();
        ready.consumer_release();
    }
    // Every store's writes are done before the block retires.
    ptx::bulk_wait_group::<0>();
}

/// One entry point per bulk kernel of the table: [`stream_bulk`] with that kernel's stages,
/// tile and geometry.
macro_rules! bulk_entry_points {
    ($($name:ident = $kernel:ident,)*) => {$(
        #[doc = concat!("[`stream_bulk`] as [`super::", stringify!($kernel), "`] says.")]
        ///
        /// # Safety
        /// See the module docs; sm_90.
        #[cfg(target_feature = "sm_90")]
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(x: *const f32, y: *mut f32, n: u32) {
            const KERNEL: StreamKernel = super::$kernel;
            // SAFETY: forwarded.
            unsafe { stream_bulk::<{ KERNEL.style.stages() as usize }>(&KERNEL, x, y, n) }
        }
    )*};
}

bulk_entry_points! {
    stream_bulk_3 = STREAM_BULK_3,
    stream_bulk_4 = STREAM_BULK_4,
    stream_bulk_3_64k = STREAM_BULK_3_64K,
    stream_bulk_4_24k = STREAM_BULK_4_24K,
}
