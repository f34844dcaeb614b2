//! The device side of the example: three kernels built on the library.
//!
//! - [`scale`](constant@scale): `y = alpha * x` for any `n`, streamed through shared memory with a three-stage
//!   `ThreadPipeline` — two tiles in flight while a third is read — with the tail of `x`
//!   zero-filled by the copies (`memcpy_async_zfill`). Any grid of one-dimensional blocks
//!   (block `b` takes tiles `b, b + grid, ...`), with [`SHARED_BYTES`] of dynamic shared
//!   memory; `x` holds `n` floats and `y` `n` floats.
//! - [`row_softmax`](constant@row_softmax): a softmax over each row of a matrix with any number of columns, on
//!   the library's math (`gpu::math::exp`) and block reductions (`gpu::reduce`): the kernel a
//!   user writes first.
//! - [`gemv_multicast`](constant@gemv_multicast) (sm_90a): `y = A x` in thread block clusters of [`GEMV_CLUSTER`]
//!   blocks. Every block needs all of `x`, so the blocks of a cluster stream it through one
//!   `ClusterBulkPipeline`: each copies its share of every tile to all of them at once (a
//!   multicast bulk copy, one L2 read for the cluster), and a stage is refilled only when
//!   the warps of every block have released it.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]

/// Floats per tile (one pipeline stage).
pub const TILE: u32 = 1024;
/// Stages of the pipeline.
pub const STAGES: u32 = 3;
/// Dynamic shared memory a block needs.
pub const SHARED_BYTES: u32 = STAGES * TILE * 4;

gpu::kernel! {
    /// `y[i] = alpha * x[i]` for `i < n`. Declared once for both sides: on the device, the
    /// entry point `scale`; everywhere, `scale: EntryPoint<(*const f32, *mut f32, u32, f32)>`,
    /// which the app resolves and launches with typed arguments.
    ///
    /// # Safety
    /// Blocks of any size with `SHARED_BYTES` of dynamic shared memory; `x` and `y` hold `n`
    /// floats each, 16-byte aligned.
    pub fn scale(x: *const f32, y: *mut f32, n: u32, alpha: f32) {
        // SAFETY: forwarded launch contract.
        unsafe { crate::device::scale(x, y, n, alpha) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{STAGES, TILE};
    use gpu::group::Block;
    use gpu::memcpy_async::{AlignedSize, cp_async::memcpy_async_zfill};
    use gpu::pipeline::{Consumer, Producer, ThreadPipeline};
    use gpu::ptx;
    use gpu::shared::{Shared, dynamic_shared};

    /// Stage `s`'s buffer.
    fn stage(s: u32) -> Shared<f32> {
        dynamic_shared().add(s * TILE * 4).cast()
    }

    /// The body of [`scale`](constant@scale)(super::scale).
    ///
    /// # Safety
    /// `scale`'s launch contract.
    #[inline(always)]
    pub(super) unsafe fn scale(x: *const f32, y: *mut f32, n: u32, alpha: f32) {
        let block = Block::this_block();
        let (rank, threads) = (ptx::thread_idx_x(), ptx::block_dim_x());
        let tiles = n.div_ceil(TILE);
        let (first, step) = (ptx::block_idx_x(), ptx::grid_dim_x());
        let mine = tiles.saturating_sub(first).div_ceil(step);
        let tile_of = |i: u32| first + i * step;

        let mut pipeline = ThreadPipeline::<{ STAGES as usize }>::new();
        let (mut producer, mut consumer) = pipeline.split();
        let mut fill = |i: u32| {
            let s = producer.producer_acquire();
            if i < mine {
                let t = tile_of(i);
                let left = (n - t * TILE).min(TILE) * 4;
                let src = x.wrapping_add((t * TILE) as usize);
                // SAFETY: `left` bytes of x exist from `src` (16-byte aligned: tiles are 4 KiB);
                // the stage is free (fresh, or released after the barrier below).
                unsafe {
                    memcpy_async_zfill(
                        &block,
                        stage(s.index()),
                        src,
                        AlignedSize::<16>::of(TILE * 4),
                        left,
                        &s,
                    )
                };
            }
            // An empty commit when nothing is left keeps the wait count a constant.
            s.producer_commit();
        };
        for i in 0..STAGES - 1 {
            fill(i);
        }
        for i in 0..mine {
            // Refill first, then wait: the stage tile i - 1 used was released (and the block
            // barrier passed) at the end of the last round, so STAGES - 1 tiles are in flight
            // while this one is read. Refilling after the release instead would leave one
            // fewer in flight (none with two stages) while the block computes.
            fill(i + STAGES - 1);
            let ready = consumer.consumer_wait();
            // Every thread's copies of this tile are visible.
            ptx::barrier_sync();
            let base = tile_of(i) * TILE;
            let mut e = rank;
            while e < TILE {
                if base + e < n {
                    // SAFETY: the tile landed; base + e < n, inside y.
                    unsafe {
                        let v = stage(ready.index()).add(e).read();
                        y.add((base + e) as usize).write(alpha * v);
                    }
                }
                e += threads;
            }
            ready.consumer_release();
            // Everyone is done with the stage before anyone refills it (next round).
            ptx::barrier_sync();
        }
    }
}

/// Threads per block of [`row_softmax`](constant@row_softmax).
pub const SOFTMAX_THREADS: u32 = 256;
/// The longest row [`row_softmax`](constant@row_softmax) takes, in floats (one stage holds a row: 16 KiB).
pub const SOFTMAX_MAX_COLS: u32 = 4096;
/// Stages of its pipeline: the next row lands while this one is reduced.
pub const SOFTMAX_STAGES: u32 = 2;
/// Dynamic shared memory a block of it needs.
pub const SOFTMAX_SHARED_BYTES: u32 = SOFTMAX_STAGES * SOFTMAX_MAX_COLS * 4;

gpu::kernel! {
    /// `y[r][c] = exp(x[r][c] - max_c x[r]) / sum_c exp(x[r][c] - max_c x[r])` for each of
    /// `rows` rows of `cols` floats, packed row after row (any `cols`: rows need not be
    /// 16-byte aligned). Block `b` takes rows `b, b + grid, ...`; each row goes through shared
    /// memory in a two-stage `ThreadPipeline` (4-byte copies), and is reduced with
    /// `gpu::reduce::block_reduce` (max, then the sum of `gpu::math::exp`).
    ///
    /// # Safety
    /// A 1-D grid of blocks of [`SOFTMAX_THREADS`] threads with [`SOFTMAX_SHARED_BYTES`] of
    /// dynamic shared memory; `1 <= cols <= SOFTMAX_MAX_COLS`; `x` and `y` hold `rows * cols`
    /// floats.
    pub fn row_softmax(x: *const f32, y: *mut f32, rows: u32, cols: u32)
        [max_threads = SOFTMAX_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { crate::softmax_device::row_softmax(x, y, rows, cols) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod softmax_device {
    use super::{SOFTMAX_MAX_COLS, SOFTMAX_STAGES};
    use gpu::group::Block;
    use gpu::memcpy_async::{AlignedSize, cp_async::memcpy_async_group};
    use gpu::pipeline::{Consumer, Producer, ThreadPipeline};
    use gpu::reduce::{Max, Sum, block_reduce};
    use gpu::shared::{Shared, dynamic_shared};
    use gpu::{math, ptx};

    gpu::static_shared!(fn partials() -> [f32; 32]);

    /// Stage `s`'s row.
    fn stage(s: u32) -> Shared<f32> {
        dynamic_shared().add(s * SOFTMAX_MAX_COLS * 4).cast()
    }

    /// The body of [`row_softmax`](constant@row_softmax)(super::row_softmax).
    ///
    /// # Safety
    /// Its launch contract.
    #[inline(always)]
    pub(super) unsafe fn row_softmax(x: *const f32, y: *mut f32, rows: u32, cols: u32) {
        let block = Block::this_block();
        let (tid, threads) = (ptx::thread_idx_x(), ptx::block_dim_x());
        // No division check: grid_dim_x() is at least 1.
        let (first, step) = (ptx::block_idx_x(), ptx::grid_dim_x());
        let mine = rows.saturating_sub(first).div_ceil(step);
        let row_of = |i: u32| (first + i * step) as usize * cols as usize;
        let mut pipeline = ThreadPipeline::<{ SOFTMAX_STAGES as usize }>::new();
        let (mut producer, mut consumer) = pipeline.split();
        let mut fill = |i: u32| {
            let s = producer.producer_acquire();
            if i < mine {
                // SAFETY: the row's cols floats exist (contract) and fit the stage
                // (cols <= SOFTMAX_MAX_COLS); 4-byte aligned like any float; the stage is free
                // (fresh, or released after the block barrier that ends a round).
                unsafe {
                    memcpy_async_group(
                        &block,
                        stage(s.index()),
                        x.wrapping_add(row_of(i)),
                        AlignedSize::<4>::round_up(cols * 4),
                        &s,
                    )
                };
            }
            // An empty commit past the last row keeps the wait count uniform.
            s.producer_commit();
        };
        fill(0);
        for i in 0..mine {
            // Refill first: the next row is in flight while this one is reduced.
            fill(i + 1);
            let ready = consumer.consumer_wait();
            // Every thread's copies of the row are visible.
            ptx::barrier_sync();
            let row = stage(ready.index());
            let mut max = f32::NEG_INFINITY;
            let mut c = tid;
            while c < cols {
                // SAFETY: c < cols: inside the landed row.
                max = max.max(unsafe { row.add(c).read() });
                c += threads;
            }
            // SAFETY: every thread of the block, whole warps (256 threads).
            let max = unsafe { block_reduce::<Max, f32>(max, partials()) };
            let mut sum = 0.0f32;
            let mut c = tid;
            while c < cols {
                // Each thread keeps its own exponentials in the stage (only it reads them).
                // SAFETY: c < cols; this thread's element.
                unsafe {
                    let e = math::exp(row.add(c).read() - max);
                    row.add(c).write(e);
                    sum += e;
                }
                c += threads;
            }
            // SAFETY: as above.
            let sum = unsafe { block_reduce::<Sum, f32>(sum, partials()) };
            let scale = math::recip_accurate(sum);
            let out = y.wrapping_add(row_of(i));
            let mut c = tid;
            while c < cols {
                // SAFETY: c < cols: this thread's element of the row, inside y.
                unsafe { *out.add(c as usize) = row.add(c).read() * scale };
                c += threads;
            }
            ready.consumer_release();
            // Everyone is done with the stage before the next round refills it.
            ptx::barrier_sync();
        }
    }
}

/// Floats of `x` per stage of [`gemv_multicast`](constant@gemv_multicast) (8 KiB).
pub const GEMV_TILE: u32 = 2048;
/// Stages of its pipeline.
pub const GEMV_STAGES: u32 = 4;
/// Blocks per cluster: each copies `GEMV_TILE / GEMV_CLUSTER` floats of every tile.
pub const GEMV_CLUSTER: u32 = 2;
/// Rows of `A` a block takes at a time: one per warp.
pub const GEMV_ROWS: u32 = 8;
/// Threads per block.
pub const GEMV_THREADS: u32 = 32 * GEMV_ROWS;
/// Dynamic shared memory a block needs: the stages, then the pipeline's mbarriers.
pub const GEMV_SHARED_BYTES: u32 = GEMV_STAGES * GEMV_TILE * 4 + 2 * GEMV_STAGES * 8;

gpu::kernel! {
    /// `y = A x`, `A` `rows x n` row-major: each warp takes a row of its block's batch of
    /// [`GEMV_ROWS`], the blocks of a cluster adjacent batches, and all of them read `x` from
    /// the stages their cluster shares.
    ///
    /// # Safety
    /// A 1-D grid of whole clusters ([`GEMV_CLUSTER`] blocks, declared by the kernel) of
    /// [`GEMV_THREADS`] threads, [`GEMV_SHARED_BYTES`] of dynamic shared memory, the sm_90a
    /// module (multicast copies are optimized for it: PTX ISA); `a`
    /// holds `rows * n` floats; `x` holds `n` rounded up to a multiple of [`GEMV_TILE`] floats,
    /// zeros past `n`, 16-byte aligned; `y` holds `rows` floats; `n >= 1`.
    pub fn gemv_multicast(a: *const f32, x: *const f32, y: *mut f32, rows: u32, n: u32)
        [max_threads = GEMV_THREADS]
        [cluster = (GEMV_CLUSTER, 1, 1)]
        [device if target_feature = "sm_90a"]
    {
        // SAFETY: forwarded launch contract.
        unsafe { crate::cluster_device::gemv(a, x, y, rows, n) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod cluster_device {
    use super::{GEMV_CLUSTER, GEMV_ROWS, GEMV_STAGES, GEMV_TILE};
    use gpu::cluster::{Cluster, MulticastGroup};
    use gpu::layout::PipelineSharedState;
    use gpu::memcpy_async::{AlignedSize, bulk::memcpy_async_bulk_multicast};
    use gpu::pipeline::{ClusterBulkPipeline, Consumer, Producer};
    use gpu::ptx;
    use gpu::reduce::{Sum, warp_reduce};
    use gpu::shared::{Shared, dynamic_shared};

    const STAGES: usize = GEMV_STAGES as usize;

    /// Stage `s`'s copy of a tile of `x`.
    fn stage(s: u32) -> Shared<f32> {
        dynamic_shared().add(s * GEMV_TILE * 4).cast()
    }

    /// The body of [`gemv_multicast`](constant@gemv_multicast)(super::gemv_multicast).
    ///
    /// # Safety
    /// Its launch contract.
    #[inline(always)]
    pub(super) unsafe fn gemv(a: *const f32, x: *const f32, y: *mut f32, rows: u32, n: u32) {
        let cluster = Cluster::this();
        let rank = cluster.rank();
        let everyone = MulticastGroup::ranks(cluster, 0, GEMV_CLUSTER);
        let barriers: Shared<PipelineSharedState<STAGES>> =
            dynamic_shared().add(GEMV_STAGES * GEMV_TILE * 4).cast();
        // SAFETY: every thread of the cluster calls it; thread 0 alone produces; each warp
        // releases every stage once (`consumer_release_for_group`); both blocks walk the same
        // stages (below); the cluster syncs at the end.
        let mut pipeline =
            unsafe { ClusterBulkPipeline::<STAGES>::init(barriers, GEMV_ROWS, cluster, everyone) };
        let (mut producer, mut consumer) = pipeline.split();
        let (warp, lane) = (ptx::thread_idx_x() / 32, ptx::thread_idx_x() % 32);
        let tiles = n.div_ceil(GEMV_TILE);
        let slice = GEMV_TILE / GEMV_CLUSTER;
        // Clusters take pairs of adjacent batches of rows (`pair`: batches 2 pair, 2 pair + 1),
        // the blocks one batch each; both walk the same pairs, so the same stages, even where
        // one's batch is past the last row.
        let pairs = rows.div_ceil(GEMV_ROWS).div_ceil(GEMV_CLUSTER);
        // At least one cluster (the launch contract): `max(1)` says so to the compiler, which
        // then leaves out a division-by-zero panic (`grid_dim_x() / 2` may be 0 for all it
        // knows; `grid_dim_x()` itself is known to be at least 1).
        let (first, step) = (
            ptx::block_idx_x() / GEMV_CLUSTER,
            (ptx::grid_dim_x() / GEMV_CLUSTER).max(1),
        );
        let my_pairs = pairs.saturating_sub(first).div_ceil(step);
        let fills = my_pairs * tiles;
        let producing = ptx::thread_idx_x() == 0;
        // The producer's place: fills made, and the tile of x the next one copies.
        let (mut filled, mut next_tile) = (0, 0);
        let mut fill_next = || {
            if filled == fills {
                return;
            }
            let t = next_tile;
            next_tile = if t + 1 == tiles { 0 } else { t + 1 };
            let s = producer.producer_acquire();
            let share = rank * slice;
            // SAFETY: this block's share of tile t of x (padded to whole tiles, 16-byte
            // aligned; 4 KiB), into the same place of the stage in both blocks, which both
            // released (the acquire); the other block copies the other share of the same
            // stage.
            unsafe {
                memcpy_async_bulk_multicast(
                    stage(s.index()).add(share),
                    x.wrapping_add((t * GEMV_TILE + share) as usize),
                    AlignedSize::<16>::of(slice * 4),
                    &s,
                    everyone,
                )
            };
            s.producer_commit();
            filled += 1;
        };
        if producing {
            for _ in 0..STAGES - 1 {
                fill_next();
            }
        }
        for p in 0..my_pairs {
            let batch = (first + p * step) * GEMV_CLUSTER + rank;
            let row = batch * GEMV_ROWS + warp;
            let mut sum = 0.0f32;
            for t in 0..tiles {
                let ready = consumer.consumer_wait();
                if row < rows {
                    let base = t * GEMV_TILE;
                    let mut e = lane;
                    while e < GEMV_TILE && base + e < n {
                        // SAFETY: the stage landed; row < rows and base + e < n: inside A.
                        unsafe {
                            let xe = stage(ready.index()).add(e).read();
                            sum += *a.add(row as usize * n as usize + (base + e) as usize) * xe;
                        }
                        e += 32;
                    }
                }
                // The whole warp has read the stage before two of its lanes release it.
                ptx::syncwarp();
                ready.consumer_release_for_group(lane);
                if producing {
                    fill_next();
                }
            }
            let sum = warp_reduce::<Sum, f32>(sum);
            if lane == 0 && row < rows {
                // SAFETY: row < rows.
                unsafe { *y.add(row as usize) = sum };
            }
        }
        // No block exits while the other may still copy into it or arrive on its barriers.
        // Thread 0's warp converges first (it alone produced): the barrier is `.aligned`.
        ptx::syncwarp();
        // SAFETY: every thread of the cluster, converged per warp.
        unsafe { cluster.sync() };
    }
}
