//! The 16-bit GEMM's device code (sm_90a): one body for every style, both B layouts and both
//! element types (BF16, FP16), on the tensor-core collective
//! ([`gpu::collective::tensor_core`]): the producer's walk is [`load_k_tiles`] per tile, each
//! consumer warpgroup's mainloop [`mma_k_tiles`] with one k-tile in flight, the schedule a
//! type (`Cooperative`, `PingPong`), the epilogue another ([`StoreC`]).

#![cfg(target_feature = "sm_90a")]

use super::epilogue::{StoreC, TileOut, TileParts};
pub(super) use super::operands::{ARegs, ASmem, BKn, BNk, Multistage, WarpSpecialized, geometry};
use super::operands::{BLayoutKind, ConsumerTile, ReadA, Roles, stage_tiles};
use super::{BK, BM, BN, GROUP_M, Geometry};
use gpu::cluster::{Cluster, MulticastGroup};
use gpu::collective::tensor_core::{
    IssueOrder, MbarrierTurns, OrderBarrier, load_k_tiles, mma_k_tiles,
};
use gpu::group::Threads;
use gpu::layout::PipelineSharedState;
use gpu::memcpy_async::AlignedSize;
use gpu::memcpy_async::bulk::{memcpy_async_tensor, memcpy_async_tensor_multicast};
use gpu::memcpy_async::completion::BulkCompletion;
use gpu::memcpy_async::cp_async::{GlobalTile, TileShape, memcpy_async_tile};
use gpu::pipeline::{
    BlockPipeline, BulkPipeline, BulkProducer, ClusterBulkPipeline, ClusterBulkProducer,
    GroupConsumer, Producer, ProducerStage,
};
use gpu::ptx::{self, Shared, TensorMapRef};
use gpu::schedule::{GridStride, TileSchedule, grouped_tile};
use gpu::wgmma::{
    Accumulator, SixteenBit, SwizzledKMajor, SwizzledMnMajor, WARPGROUP_THREADS, WarpgroupMma,
    Wgmma,
};

/// Registers per thread of the producer warpgroup after `setmaxnreg.dec`, and of each consumer
/// after `setmaxnreg.inc`: `(40 + 2 * 232) * 128 = 64512` of the SM's 65536.
const PRODUCER_REGS: u32 = 40;
const CONSUMER_REGS: u32 = 232;

/// How a stage takes this block's slice of an operand tile that the blocks of `receivers`
/// share: multicast to all of them ([`memcpy_async_tensor_multicast`]) from a
/// [`ClusterBulkPipeline`]'s stage; from a [`BulkPipeline`]'s, whose group is this block
/// alone, the slice is the whole tile, copied as any other.
trait SliceCopy {
    /// # Safety
    /// As [`memcpy_async_tensor_multicast`].
    unsafe fn copy_slice(
        &self,
        dst: Shared<u8>,
        map: TensorMapRef,
        coords: [i32; 2],
        slice_bytes: AlignedSize<16>,
        receivers: MulticastGroup,
    );
}

impl<const STAGES: usize> SliceCopy for ProducerStage<'_, BulkProducer<'_, STAGES>> {
    #[inline(always)]
    unsafe fn copy_slice(
        &self,
        dst: Shared<u8>,
        map: TensorMapRef,
        coords: [i32; 2],
        slice_bytes: AlignedSize<16>,
        _receivers: MulticastGroup,
    ) {
        // SAFETY: forwarded contract (a group of this block alone: the whole tile).
        unsafe { memcpy_async_tensor(dst, map, coords, slice_bytes, self) }
    }
}

impl<const STAGES: usize> SliceCopy for ProducerStage<'_, ClusterBulkProducer<'_, STAGES>> {
    #[inline(always)]
    unsafe fn copy_slice(
        &self,
        dst: Shared<u8>,
        map: TensorMapRef,
        coords: [i32; 2],
        slice_bytes: AlignedSize<16>,
        receivers: MulticastGroup,
    ) {
        // SAFETY: forwarded contract.
        unsafe { memcpy_async_tensor_multicast(dst, map, coords, slice_bytes, self, receivers) }
    }
}

/// This block's place in a `CM x CN` cluster of tiles (`CM` consecutive tile rows, `CN` tile
/// columns; rank `rank_m * CN + rank_n`) and the blocks it shares each operand with: the
/// blocks of its cluster row share A's tile (`a_group`, `CN` of them, each copying a
/// `tile_m / CN`-row slice), those of its cluster column B's (`b_group`, `CM`, `tile_n / CM` rows
/// each).
#[derive(Clone, Copy)]
struct ClusterPlace {
    rank_m: u32,
    rank_n: u32,
    a_group: MulticastGroup,
    b_group: MulticastGroup,
}

/// `C = A B^T` or `C = A B` (module docs), elements `E`, FP32 accumulation. `R`: who
/// produces ([`WarpSpecialized`]: warpgroup 0, the consumers warpgroups 1 and 2;
/// [`Multistage`]: warpgroups 0 and 1 consume and thread 0 also produces). `S`: the
/// consumers' schedule (`PingPong`, specialized only: each consumer warpgroup takes every
/// other tile of the block's walk, a 128 x 128 tile of its own, skipping the other's stages in
/// the shared ring; `Cooperative`: both share each 128 x 256 tile). `L`: B's layout
/// ([`BKn`]: `b` maps B as `k x n` row-major, boxes of 64 columns, the tile MN-major; [`BNk`]:
/// `n x k`). `A`: where the consumers' `wgmma` reads A ([`ARegs`]: `ldmatrix` into
/// registers, the register form). `K`: k-tiles of `wgmma` kept in flight per consumer
/// warpgroup (A from shared memory; A from registers keeps none): with 1 the next k-tile's
/// multiplies are queued while the previous one's run, so a lone warpgroup's tensor cores do
/// not idle across the wait for the next stage, at the price of one stage of the ring held
/// longer. `STAGES` is the geometry's; `c` the epilogue. `CM x CN`
/// (warp-specialized, `n x k` B, A from shared memory only): the blocks of a cluster of `CM * CN`
/// take a `CM x CN` patch of tiles together, those on a tile row sharing A's tile and those
/// on a tile column B's, each copying its slice of a shared tile to all of them at once (TMA
/// multicast) through a [`ClusterBulkPipeline`]; `1 x 1` is a [`BulkPipeline`] of one block.
///
/// # Safety
/// The kernels' launch contract, with `3 * 128` threads if specialized, else `2 * 128`; for
/// a cluster, clusters of `CM * CN` blocks along x and maps whose boxes are the slices (A
/// `[64, tile_m / CN]`, B `[64, tile_n / CM]`: `TileCluster::a_box` / `b_box` of the
/// schedule's geometry).
#[inline(always)]
pub(super) unsafe fn gemm<
    E,
    S,
    R,
    L,
    A,
    O,
    const K: usize,
    const STAGES: usize,
    const CM: u32,
    const CN: u32,
>(
    a: TensorMapRef,
    b: TensorMapRef,
    c: O,
    m: u32,
    n: u32,
    k: u32,
) where
    E: SixteenBit,
    S: ConsumerTile,
    R: Roles,
    L: BLayoutKind<E>,
    A: ReadA<S::Full<E>, L::Tile> + ReadA<S::Narrow<E>, L::Tile>,
    O: StoreC<E>,
    S::Full<E>: WarpgroupMma<L::Tile>,
    S::Narrow<E>: WarpgroupMma<L::Tile>,
    <S::Full<E> as WarpgroupMma<L::Tile>>::Acc: TileParts,
    <S::Narrow<E> as WarpgroupMma<L::Tile>>::Acc: TileParts,
{
    const { assert!(R::SPECIALIZED || !S::PINGPONG) };
    const { assert!(STAGES as u32 == geometry::<S>().stages) };
    const { assert!(CM * CN == 1 || (R::SPECIALIZED && !L::KN && !A::REGISTERS)) };
    let g = geometry::<S>();
    const { assert!(L::TILE_N == geometry::<S>().tile_n) };
    const {
        assert!(
            CM * CN <= 16
                && L::TILE_N.is_multiple_of(8 * CM)
                && geometry::<S>().tile_m.is_multiple_of(8 * CN)
        )
    };
    let thread = ptx::thread_idx_x();
    let barriers: Shared<PipelineSharedState<STAGES>> = g.shared().barriers.at(0).cast();
    // SAFETY: the order's two mbarriers (the geometry reserves them); one thread initializes
    // them; the pipeline's init below syncs the block.
    let order =
        unsafe { OrderBarrier::new(g.shared().order.at(0).cast(), S::PINGPONG && thread == 0) };
    if CM * CN == 1 {
        // SAFETY: every thread calls it; one thread produces; each fill is released by
        // `READERS_PER_STAGE` group releases (one per warpgroup that reads it), ping-pong
        // consumers skipping the other's fills and kept within one phase by `order`; the
        // layout reserves the barriers.
        let mut pipeline = unsafe { BulkPipeline::<STAGES>::init(barriers, S::READERS_PER_STAGE) };
        let (producer, consumer) = pipeline.split();
        let alone = MulticastGroup::alone();
        let place = ClusterPlace {
            rank_m: 0,
            rank_n: 0,
            a_group: alone,
            b_group: alone,
        };
        // SAFETY: forwarded contract; a group of one block.
        unsafe {
            gemm_roles::<E, S, R, L, A, O, K, STAGES, 1, 1, _, _>(
                producer, consumer, order, place, a, b, c, m, n, k,
            )
        }
    } else {
        let cluster = Cluster::this();
        let rank = cluster.rank();
        let (rank_m, rank_n) = (rank / CN, rank % CN);
        // The cluster row's ranks, and the cluster column's (every CN-th from rank_n).
        let row = MulticastGroup::ranks(cluster, rank_m * CN, CN);
        let column = MulticastGroup::strided(cluster, rank_n, CM, CN);
        let both = MulticastGroup::new(cluster, row.mask() | column.mask());
        // SAFETY: every thread of every block of the cluster calls it with the same
        // arguments, the group of each block being its row and column (symmetric: a block is
        // in another's iff that one is in its); the blocks of a cluster walk the same cluster
        // tiles and so the same stages; the consumer warpgroups that read a fill release it
        // once for the group (both, cooperative; its owner, ping-pong, whose turns are the
        // same in every block of the cluster, so they skip the same stages); the cluster
        // syncs below before any block exits.
        let mut pipeline = unsafe {
            ClusterBulkPipeline::<STAGES>::init(barriers, S::READERS_PER_STAGE, cluster, both)
        };
        let (producer, consumer) = pipeline.split();
        let place = ClusterPlace {
            rank_m,
            rank_n,
            a_group: row,
            b_group: column,
        };
        // SAFETY: forwarded contract.
        unsafe {
            gemm_roles::<E, S, R, L, A, O, K, STAGES, CM, CN, _, _>(
                producer, consumer, order, place, a, b, c, m, n, k,
            )
        };
        // No block exits while a peer may still copy into it or arrive on its barriers. The
        // warps converge first (the barrier is `.aligned`): one lane of the producer warp
        // produced, and one of each consumer warpgroup's first warp waited for its stores.
        ptx::syncwarp();
        // SAFETY: every thread of the cluster gets here once, converged per warp.
        unsafe { cluster.sync() };
    }
}

/// [`gemm`]'s producer and consumers, over either pipeline.
///
/// # Safety
/// As [`gemm`]; `producer` and `consumer` are the two sides of this block's pipeline, `place`
/// its place in the cluster (`rank_m < CM`, `rank_n < CN`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_roles<
    E,
    S,
    R,
    L,
    A,
    O,
    const K: usize,
    const STAGES: usize,
    const CM: u32,
    const CN: u32,
    P: Producer,
    C: GroupConsumer,
>(
    mut producer: P,
    mut consumer: C,
    order: OrderBarrier,
    place: ClusterPlace,
    a: TensorMapRef,
    b: TensorMapRef,
    c: O,
    m: u32,
    n: u32,
    k: u32,
) where
    E: SixteenBit,
    S: ConsumerTile,
    R: Roles,
    L: BLayoutKind<E>,
    A: ReadA<S::Full<E>, L::Tile> + ReadA<S::Narrow<E>, L::Tile>,
    O: StoreC<E>,
    S::Full<E>: WarpgroupMma<L::Tile>,
    S::Narrow<E>: WarpgroupMma<L::Tile>,
    <S::Full<E> as WarpgroupMma<L::Tile>>::Acc: TileParts,
    <S::Narrow<E> as WarpgroupMma<L::Tile>>::Acc: TileParts,
    for<'s> ProducerStage<'s, P>: BulkCompletion + SliceCopy,
{
    let thread = ptx::thread_idx_x();
    let warpgroup = thread / WARPGROUP_THREADS;
    let g = geometry::<S>();
    let (tiles_m, tiles_n) = g.tiles(m, n);
    let k_tiles = k.div_ceil(BK);
    // The cluster's tiles: CM x CN patches, walked in the grouped order; a cluster takes
    // every (clusters)-th, and this block its tile of each.
    let (cluster_tiles_m, cluster_tiles_n) = (tiles_m.div_ceil(CM), tiles_n.div_ceil(CN));
    let cluster_tile_count = cluster_tiles_m * cluster_tiles_n;
    let walk = || {
        GridStride::new(
            ptx::block_idx_x() / (CM * CN),
            ptx::grid_dim_x() / (CM * CN),
            cluster_tile_count,
        )
    };
    let tile_of = |tile: u32| {
        let (cm, cn) = grouped_tile(tile, cluster_tiles_m, cluster_tiles_n, GROUP_M / CM);
        (cm * CM + place.rank_m, cn * CN + place.rank_n)
    };
    let (a_slice_rows, b_slice_rows) = (g.tile_m / CN, g.tile_n / CM);
    let (a_slice, b_slice, b_box_bytes) = (
        AlignedSize::<16>::of(a_slice_rows * 128),
        AlignedSize::<16>::of(b_slice_rows * 128),
        AlignedSize::<16>::of(SwizzledMnMajor::<64, E>::BOX_BYTES),
    );

    // The copies of k-tile `kt` of tile `(tm, tn)` into a stage: this block's slices of A's
    // and B's tiles (all of each outside a cluster).
    let copy = |stage: &ProducerStage<'_, P>, (tm, tn): (u32, u32), kt: u32| {
        let (a_dst, b_dst) = stage_tiles(g, stage.index());
        let k0 = (kt * BK) as i32;
        let a_row = tm * g.tile_m + place.rank_n * a_slice_rows;
        let b_row = tn * g.tile_n + place.rank_m * b_slice_rows;
        let (a_dst, b_dst_slice) = (
            a_dst.add(place.rank_n * a_slice_rows * 128),
            b_dst.add(place.rank_m * b_slice_rows * 128),
        );
        // SAFETY: the stage is free (acquired) in every block it is copied to (the group's
        // releases); the maps describe A and B with these boxes and 128-byte swizzle (launch
        // contract); the tiles are 1024-byte aligned (stage bytes are a multiple of 1 KiB),
        // the slices too (multiples of 8 rows of 128 bytes); its full phase expects this
        // thread's commit; every block of a group copies its slice of this stage.
        unsafe {
            if CN == 1 {
                memcpy_async_tensor(a_dst, a, [k0, a_row as i32], a_slice, stage);
            } else {
                stage.copy_slice(a_dst, a, [k0, a_row as i32], a_slice, place.a_group);
            }
            if L::KN {
                let mut j = 0;
                while j < g.tile_n / 64 {
                    let n0 = (tn * g.tile_n + 64 * j) as i32;
                    let dst = b_dst.add(j * SwizzledMnMajor::<64, E>::BOX_BYTES);
                    memcpy_async_tensor(dst, b, [n0, k0], b_box_bytes, stage);
                    j += 1;
                }
            } else if CM == 1 {
                memcpy_async_tensor(b_dst_slice, b, [k0, b_row as i32], b_slice, stage);
            } else {
                stage.copy_slice(b_dst_slice, b, [k0, b_row as i32], b_slice, place.b_group);
            }
        }
    };

    if R::SPECIALIZED && warpgroup == 0 {
        // SAFETY: the whole warpgroup, converged; its one thread below needs few registers.
        unsafe { ptx::setmaxnreg_dec::<PRODUCER_REGS>() };
        if thread < 32 && ptx::elect_one() {
            ptx::prefetch_tensormap(a);
            ptx::prefetch_tensormap(b);
            let mut tiles = walk();
            while let Some(tile) = tiles.next() {
                let t = tile_of(tile);
                load_k_tiles(&mut producer, k_tiles, |stage, kt| copy(stage, t, kt));
            }
        }
        return;
    }
    if R::SPECIALIZED {
        // SAFETY: the whole warpgroup, converged; the producer gave these registers back.
        unsafe { ptx::setmaxnreg_inc::<CONSUMER_REGS>() };
    }
    let consumer_index = if R::SPECIALIZED {
        warpgroup - 1
    } else {
        warpgroup
    };
    let wg_thread = thread % WARPGROUP_THREADS;
    // Multistage: thread 0 produces, `STAGES - 1` k-tiles ahead of the consumers, over the
    // same walk, one k-tile after each release.
    let producing = !R::SPECIALIZED && thread == 0;
    let mut ahead = walk();
    let mut ahead_tile = if producing { ahead.next() } else { None };
    let mut ahead_kt = 0;
    let mut produce_next = || {
        if let Some(tile) = ahead_tile {
            let t = tile_of(tile);
            load_k_tiles(&mut producer, 1, |stage, _| copy(stage, t, ahead_kt));
            ahead_kt += 1;
            if ahead_kt == k_tiles {
                ahead_kt = 0;
                ahead_tile = ahead.next();
            }
        }
    };
    if producing {
        for _ in 0..STAGES - 1 {
            produce_next();
        }
    }

    let mut tiles = walk();
    let mut turn = 0;
    // Ping-pong's turns through `order`'s mbarriers.
    let mut turns = MbarrierTurns::new(order, consumer_index, wg_thread);
    while let Some(tile) = tiles.next() {
        let mine = !S::PINGPONG || turn % 2 == consumer_index;
        turn += 1;
        if !mine {
            // The other warpgroup's tile: its k-tiles pass through the ring meanwhile.
            consumer.skip(k_tiles);
            continue;
        }
        if S::PINGPONG {
            // SAFETY: initialized and synced above; the whole warpgroup; the other
            // warpgroup passes the turn once per mainloop.
            unsafe { turns.wait() };
        }
        let (tm, tn) = tile_of(tile);
        // A cluster's patch may reach past C (an odd number of tile rows, say): such a block
        // multiplies what its group copies (zeros) and stores nothing.
        let inside = CM * CN == 1 || (tm < tiles_m && tn < tiles_n);
        // This warpgroup's rows of the stage's A tile.
        let a_row = if S::PINGPONG { 0 } else { 64 * consumer_index };
        let out = TileOut {
            m,
            n,
            staging: g.shared().staging.at(consumer_index),
            consumer_index,
            row0: tm * g.tile_m + a_row,
            col0: tn * g.tile_n,
        };
        let mut after_release = || {
            if producing {
                produce_next();
            }
        };
        // Every multiply of the tile is issued: in ping-pong the other warpgroup may start.
        let issued = || {
            if S::PINGPONG {
                // SAFETY: initialized above; once per mainloop, waited for in turn.
                unsafe { turns.done() };
            }
        };
        let tile = TileMainloop {
            g,
            k_tiles,
            a_row,
            wg_thread,
        };
        // SAFETY (both): the pipeline's stages in ring order, as the producer fills them; this
        // warpgroup's own staging (1 KiB aligned, 33 KiB); C's map or C itself (launch
        // contract); the whole warpgroup calls them.
        if inside && n - out.col0 <= NARROW_N {
            // A tile at C's right edge at most 64 wide: its first 64 columns only.
            let acc = unsafe {
                tile.run::<E, S::Narrow<E>, L, A, K, _>(&mut consumer, &mut after_release, issued)
            };
            // SAFETY: as above.
            unsafe { acc.store(c, &out, wg_thread) };
        } else {
            let acc = unsafe {
                tile.run::<E, S::Full<E>, L, A, K, _>(&mut consumer, &mut after_release, issued)
            };
            if inside {
                // SAFETY: as above.
                unsafe { acc.store(c, &out, wg_thread) };
            }
        }
    }
    // The last stores must have read the staging before the block's shared memory goes away.
    c.drain(wg_thread);
}

/// Tiles at C's right edge at most this wide multiply only their first 64 columns
/// (`m64n64`): with N = 4097 or 4104 the 17th column of tiles would otherwise cost a full
/// 256-wide multiply for 1 or 8 columns, a wave of its own.
const NARROW_N: u32 = 64;

/// One warpgroup's mainloop over a tile's `k_tiles` stages: A's rows from `a_row` on (as many as
/// its multiply has: 64, or 128 stacked) of
/// each stage, and `N` columns of B.
#[derive(Clone, Copy)]
struct TileMainloop {
    g: Geometry,
    k_tiles: u32,
    a_row: u32,
    wg_thread: u32,
}

impl TileMainloop {
    /// The tile's accumulators (`M::Acc`: this warpgroup's rows by `M`'s columns of B, the
    /// first in the stage), on [`mma_k_tiles`] with `K` k-tiles in flight (none for A from
    /// registers) (`after_release` after each stage is released: the multistage producer's
    /// next copy; `issued` after the last issue).
    ///
    /// # Safety
    /// The whole warpgroup calls it, converged, at the same ring position; the next `k_tiles`
    /// fills of the ring are this tile's.
    #[inline(always)]
    unsafe fn run<E, M, L, A, const K: usize, C>(
        self,
        consumer: &mut C,
        after_release: &mut impl FnMut(),
        issued: impl FnOnce(),
    ) -> M::Acc
    where
        E: SixteenBit,
        L: BLayoutKind<E>,
        M: WarpgroupMma<L::Tile>,
        M::Acc: TileParts,
        A: ReadA<M, L::Tile>,
        C: GroupConsumer,
    {
        let TileMainloop {
            g,
            k_tiles,
            a_row,
            wg_thread,
        } = self;
        let mut acc = M::Acc::zeros();
        // SAFETY: forwarded contract; nothing writes a stage until it is released.
        unsafe {
            A::mainloop::<E, L, C, K>(
                consumer,
                &mut acc,
                g,
                k_tiles,
                a_row,
                wg_thread,
                after_release,
                issued,
            )
        };
        acc
    }
}

/// `C = A B^T` fed by `cp.async` (module docs, style `cp_async`): the [`Geometry::SHARED_TILE`]
/// block of two warpgroups, every thread copying its share of each stage (16-byte zero-filling
/// copies into the swizzled tiles, [`memcpy_async_tile`]) through a [`BlockPipeline`]
/// `STAGES - 1` k-tiles ahead, both warpgroups multiplying as the other styles do (`K`
/// k-tiles in flight).
///
/// # Safety
/// The `cp_async` kernels' launch contract: 256 threads, the geometry's shared memory, `a`
/// and `b` holding `m x k` and `n x k` row-major, 16-byte aligned, `k` a multiple of 8.
#[inline(always)]
pub(super) unsafe fn gemm_cp_async<E, O, const K: usize, const STAGES: usize>(
    a: *const E,
    b: *const E,
    c: O,
    m: u32,
    n: u32,
    k: u32,
) where
    E: SixteenBit,
    O: StoreC<E>,
    Wgmma<E, 256>: WarpgroupMma<SwizzledKMajor<BN, E>, Acc = Accumulator<128>>,
{
    let g = Geometry::SHARED_TILE;
    const { assert!(STAGES as u32 == Geometry::SHARED_TILE.stages) };
    let thread = ptx::thread_idx_x();
    let (consumer_index, wg_thread) = (thread / WARPGROUP_THREADS, thread % WARPGROUP_THREADS);
    let threads = Threads::new(thread, 2 * WARPGROUP_THREADS);
    let (tiles_m, tiles_n) = g.tiles(m, n);
    let tile_count = tiles_m * tiles_n;
    let k_tiles = k.div_ceil(BK);
    let barriers: Shared<PipelineSharedState<STAGES>> = g.shared().barriers.at(0).cast();
    // SAFETY: every thread calls it; all 256 produce (one commit each per fill) and the two
    // warpgroups release each fill once each; the layout reserves the barriers.
    let mut pipeline =
        unsafe { BlockPipeline::<STAGES>::init_partitioned(barriers, 2 * WARPGROUP_THREADS, 2) };
    let (mut producer, mut consumer) = pipeline.split();
    let row_bytes = k as usize * 2;

    // Every thread's share of one (tile, k-tile): the same walk as the consumers', ahead.
    let mut ahead = GridStride::this_block(tile_count);
    let mut ahead_tile = ahead.next();
    let mut ahead_kt = 0;
    let mut produce_next = || {
        let Some(tile) = ahead_tile else { return };
        let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        let k0 = ahead_kt * BK;
        let (ra, rb) = (tm * g.tile_m, tn * BN);
        let tile_of = |base: *const E, row: u32, rows: u32| GlobalTile {
            base: base.wrapping_add(row as usize * k as usize + k0 as usize),
            row_stride: row_bytes,
            valid_rows: rows - row,
            valid_row_bytes: (k - k0) * 2,
        };
        load_k_tiles(&mut producer, 1, |stage, _| {
            let (a_dst, b_dst) = stage_tiles(g, stage.index());
            // SAFETY: the stage is free (acquired); rows below m (n) and bytes below k of A
            // (B) are readable, 16-byte aligned (k a multiple of 8, contract); the swizzled
            // layouts map each 16-byte chunk of a tile to its own aligned place in it; every
            // thread calls both with the same arguments.
            unsafe {
                memcpy_async_tile::<_, _, _, _, _, 16>(
                    &threads,
                    a_dst,
                    SwizzledKMajor::<BM, E>::LAYOUT,
                    tile_of(a, ra, m),
                    TileShape {
                        rows: g.tile_m,
                        row_bytes: 128,
                    },
                    stage,
                );
                memcpy_async_tile::<_, _, _, _, _, 16>(
                    &threads,
                    b_dst,
                    SwizzledKMajor::<BN, E>::LAYOUT,
                    tile_of(b, rb, n),
                    TileShape {
                        rows: BN,
                        row_bytes: 128,
                    },
                    stage,
                );
            }
        });
        ahead_kt += 1;
        if ahead_kt == k_tiles {
            ahead_kt = 0;
            ahead_tile = ahead.next();
        }
    };
    for _ in 0..STAGES - 1 {
        produce_next();
    }

    let mut tiles = GridStride::this_block(tile_count);
    while let Some(tile) = tiles.next() {
        let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        let a_row = 64 * consumer_index;
        let mut acc = Accumulator::<128>::zeros();
        let operands = |s: u32| {
            // The copies landed through the generic proxy; `wgmma` reads through the async
            // one.
            ptx::fence_proxy_async_shared();
            let (a_tile, b_tile) = stage_tiles(g, s);
            // SAFETY: the stage's phase completed (every thread's copies landed, fenced for
            // the async proxy by each reader); the warpgroup's 64 rows of A and all of B.
            unsafe {
                (
                    SwizzledKMajor::<BM, E>::descriptor(a_tile, a_row),
                    SwizzledKMajor::<BN, E>::descriptor(b_tile, 0),
                )
            }
        };
        // SAFETY: the whole warpgroup calls it; the stages in ring order, filled by every
        // thread's copies `STAGES - 1` ahead; nothing writes a stage until it is released.
        unsafe {
            mma_k_tiles::<Wgmma<E, 256>, SwizzledKMajor<BN, E>, _, _, K>(
                &mut consumer,
                &mut acc,
                k_tiles,
                wg_thread,
                operands,
                &mut produce_next,
                || {},
            )
        };
        let out = TileOut {
            m,
            n,
            staging: g.shared().staging.at(consumer_index),
            consumer_index,
            row0: tm * g.tile_m + a_row,
            col0: tn * BN,
        };
        // SAFETY: as in `gemm`.
        unsafe { acc.store(c, &out, wg_thread) };
    }
    c.drain(wg_thread);
}
