//! The BF16 GEMM's device code (sm_90a): one body for all three styles and both B layouts.

#![cfg(target_feature = "sm_90a")]

use super::{
    ATile, BK, BKnTile, BM, BN, BTile, CBox, DIRECT_ROW_BYTES, GROUP_M, Geometry,
    WARPGROUP_STAGING_BYTES,
};
use gpu::cluster::{Cluster, MulticastGroup};
use gpu::group::Threads;
use gpu::layout::{Mbarrier, PipelineSharedState};
use gpu::memcpy_async::AlignedSize;
use gpu::memcpy_async::bulk::{memcpy_async_tensor, memcpy_async_tensor_multicast};
use gpu::memcpy_async::completion::BulkCompletion;
use gpu::memcpy_async::cp_async::{GlobalTile, TileShape, memcpy_async_tile};
use gpu::pipeline::{
    BlockPipeline, BulkPipeline, BulkProducer, ClusterBulkPipeline, ClusterBulkProducer, Consumer,
    GroupConsumer, Producer, ProducerStage,
};
use gpu::ptx::{self, Shared, TensorMapRef};
use gpu::schedule::{GridStride, TileSchedule, grouped_tile};
use gpu::shared::dynamic_shared;
use gpu::wgmma::{
    Accumulator, Bf16, Bf16Mma, SwizzledKMajor, WARPGROUP_THREADS, WarpgroupMma, x4_lane_row,
};

const _: () = assert!(BTile::BYTES == BKnTile::BYTES);

/// Registers per thread of the producer warpgroup after `setmaxnreg.dec`, and of each consumer
/// after `setmaxnreg.inc`: `(40 + 2 * 232) * 128 = 64512` of the SM's 65536.
const PRODUCER_REGS: u32 = 40;
const CONSUMER_REGS: u32 = 232;

/// Where a kernel writes C.
#[derive(Clone, Copy)]
pub(super) enum COut {
    /// C's tensor map (the tensor-store epilogue).
    TensorMap(TensorMapRef),
    /// C itself, `m x n` (the direct-store epilogue).
    Pointer(*mut Bf16),
}

/// The geometry of the ping-pong kernels (`pingpong`) or of the others.
pub(super) const fn geometry(pingpong: bool) -> Geometry {
    if pingpong {
        Geometry::TILE_PER_WARPGROUP
    } else {
        Geometry::SHARED_TILE
    }
}

/// Stage `s`'s A and B tiles.
#[inline(always)]
fn stage_tiles(g: Geometry, s: u32) -> (Shared<u8>, Shared<u8>) {
    let a = dynamic_shared().add(g.layout().stage_offset(s));
    (a, a.add(g.a_tile_bytes()))
}

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
/// `tile_m / CN`-row slice), those of its cluster column B's (`b_group`, `CM`, `BN / CM` rows
/// each).
#[derive(Clone, Copy)]
struct ClusterPlace {
    rank_m: u32,
    rank_n: u32,
    a_group: MulticastGroup,
    b_group: MulticastGroup,
}

/// `C = A B^T` (module docs). `SPECIALIZED`: warpgroup 0 produces and warpgroups 1 and 2
/// consume; else warpgroups 0 and 1 consume and thread 0 also produces. `PINGPONG`
/// (specialized only): each consumer warpgroup takes every other tile of the block's walk, a
/// 64 x 256 tile of its own ([`Geometry::TILE_PER_WARPGROUP`]), skipping the other's stages
/// in the shared ring; else both share each 128 x 256 tile. `B_KN`: `b` maps B as `k x n`
/// row-major (boxes [`BKnTile::BOX`], the tile MN-major), else as `n x k`. `STAGES` is the
/// geometry's; `c` says which epilogue. `A_REGS`: the consumers load their A rows from the
/// stage into registers (`ldmatrix`) and multiply from there (`wgmma`'s register form), else
/// `wgmma` reads A from shared memory too. `CM x CN` (cooperative, `n x k` B only): the blocks
/// of a cluster of `CM * CN` take a `CM x CN` patch of tiles together, those on a tile row
/// sharing A's tile and those on a tile column B's, each copying its slice of a shared tile to
/// all of them at once (TMA multicast) through a [`ClusterBulkPipeline`]; `1 x 1` is a
/// [`BulkPipeline`] of one block.
///
/// # Safety
/// The kernels' launch contract, with `3 * 128` threads if `SPECIALIZED`, else `2 * 128`; for
/// a cluster, clusters of `CM * CN` blocks along x and maps whose boxes are the slices (A
/// `[64, tile_m / CN]`, B `[64, BN / CM]`).
#[inline(always)]
pub(super) unsafe fn gemm<
    const SPECIALIZED: bool,
    const PINGPONG: bool,
    const B_KN: bool,
    const A_REGS: bool,
    const STAGES: usize,
    const CM: u32,
    const CN: u32,
>(
    a: TensorMapRef,
    b: TensorMapRef,
    c: COut,
    m: u32,
    n: u32,
    k: u32,
) {
    const { assert!(SPECIALIZED || !PINGPONG) };
    const { assert!(STAGES as u32 == geometry(PINGPONG).stages) };
    const { assert!(CM * CN == 1 || (SPECIALIZED && !PINGPONG && !B_KN && !A_REGS)) };
    const { assert!(CM * CN <= 16 && BN.is_multiple_of(8 * CM) && BM.is_multiple_of(8 * CN)) };
    let g = geometry(PINGPONG);
    let thread = ptx::thread_idx_x();
    let barriers: Shared<PipelineSharedState<STAGES>> =
        dynamic_shared().add(g.layout().barriers_offset).cast();
    // Who releases a stage: one thread of each warpgroup that read it (both, sharing a tile;
    // the owner alone, ping-pong).
    let releasers = if PINGPONG { 1 } else { 2 };
    // Ping-pong: the consumer warpgroups run their mainloops in turn (CUTLASS's ordered
    // sequence barrier): `order[c]` completes a phase when the other warpgroup has finished a
    // mainloop, and warpgroup `c` waits for it before its next. Besides keeping the tensor
    // cores to one warpgroup while the other runs its epilogue, this is what makes skipping
    // the other's stages sound: a warpgroup never runs more than one ring phase ahead of the
    // stages it waits on by parity.
    let order: Shared<Mbarrier> = dynamic_shared().add(g.order_offset()).cast();
    if PINGPONG && thread == 0 {
        // SAFETY: one thread initializes both; the pipeline's init below syncs the block.
        unsafe {
            ptx::mbarrier_init(order, 1);
            ptx::mbarrier_init(order.add(1), 1);
        }
    }
    if CM * CN == 1 {
        // SAFETY: every thread calls it; one thread produces; each fill is released by
        // `releasers` group releases (one per warpgroup that reads it), ping-pong consumers
        // skipping the other's fills and kept within one phase by `order`; the layout reserves
        // the barriers.
        let mut pipeline = unsafe { BulkPipeline::<STAGES>::init(barriers, releasers) };
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
            gemm_roles::<SPECIALIZED, PINGPONG, B_KN, A_REGS, STAGES, 1, 1, _, _>(
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
        // tiles and so the same stages; the two consumer warpgroups release each fill once for
        // the group; no skipping (cooperative); the cluster syncs below before any block
        // exits.
        let mut pipeline =
            unsafe { ClusterBulkPipeline::<STAGES>::init(barriers, releasers, cluster, both) };
        let (producer, consumer) = pipeline.split();
        let place = ClusterPlace {
            rank_m,
            rank_n,
            a_group: row,
            b_group: column,
        };
        // SAFETY: forwarded contract.
        unsafe {
            gemm_roles::<SPECIALIZED, PINGPONG, B_KN, A_REGS, STAGES, CM, CN, _, _>(
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
    const SPECIALIZED: bool,
    const PINGPONG: bool,
    const B_KN: bool,
    const A_REGS: bool,
    const STAGES: usize,
    const CM: u32,
    const CN: u32,
    P: Producer,
    C: GroupConsumer,
>(
    mut producer: P,
    mut consumer: C,
    order: Shared<Mbarrier>,
    place: ClusterPlace,
    a: TensorMapRef,
    b: TensorMapRef,
    c: COut,
    m: u32,
    n: u32,
    k: u32,
) where
    for<'s> ProducerStage<'s, P>: BulkCompletion + SliceCopy,
{
    let thread = ptx::thread_idx_x();
    let warpgroup = thread / WARPGROUP_THREADS;
    let g = geometry(PINGPONG);
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
    let (a_slice_rows, b_slice_rows) = (g.tile_m / CN, BN / CM);
    let (a_slice, b_slice, b_box_bytes) = (
        AlignedSize::<16>::of(a_slice_rows * 128),
        AlignedSize::<16>::of(b_slice_rows * 128),
        AlignedSize::<16>::of(BKnTile::BOX_BYTES),
    );

    // The producer's walk: every (tile, k-tile) of this block, in order.
    let mut produce_one = |tile: u32, kt: u32| {
        let (tm, tn) = tile_of(tile);
        let stage = producer.producer_acquire();
        let (a_dst, b_dst) = stage_tiles(g, stage.index());
        let k0 = (kt * BK) as i32;
        // This block's slices: all of each tile outside a cluster.
        let a_row = tm * g.tile_m + place.rank_n * a_slice_rows;
        let b_row = tn * BN + place.rank_m * b_slice_rows;
        let (a_dst, b_dst_slice) = (
            a_dst.add(place.rank_n * a_slice_rows * 128),
            b_dst.add(place.rank_m * b_slice_rows * 128),
        );
        // SAFETY: the stage is free (acquired) in every block it is copied to (the group's
        // releases); the maps describe A and B with these boxes and 128-byte swizzle (launch
        // contract); the tiles are 1024-byte aligned (stage bytes are a multiple of 1 KiB),
        // the slices too (multiples of 8 rows of 128 bytes); its full phase expects this
        // thread's commit below; every block of a group copies its slice of this stage.
        unsafe {
            if CN == 1 {
                memcpy_async_tensor(a_dst, a, [k0, a_row as i32], a_slice, &stage);
            } else {
                stage.copy_slice(a_dst, a, [k0, a_row as i32], a_slice, place.a_group);
            }
            if B_KN {
                let mut j = 0;
                while j < BKnTile::BOXES {
                    let n0 = (tn * BN + 64 * j) as i32;
                    let dst = b_dst.add(j * BKnTile::BOX_BYTES);
                    memcpy_async_tensor(dst, b, [n0, k0], b_box_bytes, &stage);
                    j += 1;
                }
            } else if CM == 1 {
                memcpy_async_tensor(b_dst_slice, b, [k0, b_row as i32], b_slice, &stage);
            } else {
                stage.copy_slice(b_dst_slice, b, [k0, b_row as i32], b_slice, place.b_group);
            }
        }
        stage.producer_commit();
    };

    if SPECIALIZED && warpgroup == 0 {
        // SAFETY: the whole warpgroup, converged; its one thread below needs few registers.
        unsafe { ptx::setmaxnreg_dec::<PRODUCER_REGS>() };
        if thread < 32 && ptx::elect_one() {
            ptx::prefetch_tensormap(a);
            ptx::prefetch_tensormap(b);
            let mut tiles = walk();
            while let Some(tile) = tiles.next() {
                for kt in 0..k_tiles {
                    produce_one(tile, kt);
                }
            }
        }
        return;
    }
    if SPECIALIZED {
        // SAFETY: the whole warpgroup, converged; the producer gave these registers back.
        unsafe { ptx::setmaxnreg_inc::<CONSUMER_REGS>() };
    }
    let consumer_index = if SPECIALIZED {
        warpgroup - 1
    } else {
        warpgroup
    };
    let wg_thread = thread % WARPGROUP_THREADS;
    // Multistage: thread 0 produces, `STAGES - 1` k-tiles ahead of the consumers, over the
    // same walk.
    let producing = !SPECIALIZED && thread == 0;
    let mut ahead = walk();
    let mut ahead_tile = if producing { ahead.next() } else { None };
    let mut ahead_kt = 0;
    let mut produce_next = || {
        if let Some(tile) = ahead_tile {
            produce_one(tile, ahead_kt);
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
    // The phase of `order[consumer_index]` this warpgroup waits for next.
    let mut order_phase = 0;
    while let Some(tile) = tiles.next() {
        let mine = !PINGPONG || turn % 2 == consumer_index;
        let first = turn < 2;
        turn += 1;
        if !mine {
            // The other warpgroup's tile: its k-tiles pass through the ring meanwhile.
            consumer.skip(k_tiles);
            continue;
        }
        if PINGPONG && !(first && consumer_index == 0) {
            // SAFETY: initialized above; the other warpgroup arrives once per mainloop.
            unsafe { ptx::mbarrier_wait_parity(order.add(consumer_index), order_phase) };
            order_phase ^= 1;
        }
        let (tm, tn) = tile_of(tile);
        // A cluster's patch may reach past C (an odd number of tile rows, say): such a block
        // multiplies what its group copies (zeros) and stores nothing.
        let inside = CM * CN == 1 || (tm < tiles_m && tn < tiles_n);
        // This warpgroup's rows of the stage's A tile.
        let a_row = if PINGPONG { 0 } else { 64 * consumer_index };
        let (row0, col0) = (tm * g.tile_m + a_row, tn * BN);
        let staging =
            dynamic_shared().add(g.staging_offset() + consumer_index * WARPGROUP_STAGING_BYTES);
        let mut after_k_tile = || {
            if producing {
                produce_next();
            }
        };
        // The mainloop is over; in ping-pong the other warpgroup's may start.
        let mainloop_done = || {
            if PINGPONG && wg_thread == 0 {
                // SAFETY: initialized above; one arrival per mainloop, waited for in turn.
                let _ = unsafe { ptx::mbarrier_arrive(order.add(1 - consumer_index)) };
            }
        };
        let out = TileOut {
            c,
            m,
            n,
            staging,
            consumer_index,
            row0,
            col0,
        };
        // SAFETY (both): the pipeline's stages in ring order, as the producer fills them; this
        // warpgroup's own staging (1 KiB aligned, 32 KiB); C's map or C itself (launch
        // contract); the whole warpgroup calls them.
        if inside && n - col0 <= NARROW_N {
            // A tile at C's right edge at most 64 wide: a quarter of the multiply.
            unsafe {
                multiply_and_store::<64, 32, PINGPONG, B_KN, A_REGS, STAGES, _, _, _>(
                    &mut consumer,
                    &mut after_k_tile,
                    mainloop_done,
                    g,
                    k_tiles,
                    a_row,
                    wg_thread,
                    Some(&out),
                )
            };
        } else {
            unsafe {
                multiply_and_store::<256, 128, PINGPONG, B_KN, A_REGS, STAGES, _, _, _>(
                    &mut consumer,
                    &mut after_k_tile,
                    mainloop_done,
                    g,
                    k_tiles,
                    a_row,
                    wg_thread,
                    inside.then_some(&out),
                )
            };
        }
    }
    if matches!(c, COut::TensorMap(_)) && wg_thread == 0 {
        // The last stores must have read the staging before the block's shared memory goes
        // away.
        ptx::bulk_wait_group_read::<0>();
    }
}

/// Where a warpgroup's tile of C goes: C (its map or itself) and its size, the warpgroup's
/// staging, the tile's first row and column.
#[derive(Clone, Copy)]
struct TileOut {
    c: COut,
    m: u32,
    n: u32,
    staging: Shared<u8>,
    consumer_index: u32,
    row0: u32,
    col0: u32,
}

/// Tiles at C's right edge at most this wide multiply only their first 64 columns
/// (`m64n64`): with N = 4097 or 4104 the 17th column of tiles would otherwise cost a full
/// 256-wide multiply for 1 or 8 columns, a wave of its own.
const NARROW_N: u32 = 64;

/// A warpgroup's tile: its multiply over all `k_tiles` stages of the ring, `N` columns of B
/// (its first `N` rows or columns in the stage) into `REGS = N / 2` accumulators
/// (`after_k_tile` runs after each stage is released: the multistage producer's next copy),
/// then `mainloop_done`, then [`store_tile`] to `out` (`None`: a tile past C, multiplied and
/// not stored).
///
/// # Safety
/// The whole warpgroup calls it, converged, at the same ring position; the next `k_tiles`
/// fills of the ring are this tile's (A's rows `a_row..a_row + 64` for this warpgroup); with
/// `out`, [`store_tile`]'s contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn multiply_and_store<
    const N: u32,
    const REGS: usize,
    const PINGPONG: bool,
    const B_KN: bool,
    const A_REGS: bool,
    const STAGES: usize,
    C: GroupConsumer,
    F: FnMut(),
    D: FnOnce(),
>(
    consumer: &mut C,
    after_k_tile: &mut F,
    mainloop_done: D,
    g: Geometry,
    k_tiles: u32,
    a_row: u32,
    wg_thread: u32,
    out: Option<&TileOut>,
) where
    Bf16Mma<N>: WarpgroupMma<BTile, Acc = Accumulator<REGS>>
        + WarpgroupMma<BKnTile, Acc = Accumulator<REGS>>,
{
    let mut acc = Accumulator::<REGS>::zeros();
    for kt in 0..k_tiles {
        let ready = consumer.consumer_wait();
        let (a_tile, b_tile) = stage_tiles(g, ready.index());
        let accumulate = kt > 0;
        // SAFETY: the stage's phase completed (both boxes landed, written by the copy engine,
        // the completion observed by the wait, so this thread's loads see them too); this
        // warpgroup's 64 rows of A and the first N of B; the whole warpgroup calls it with the
        // same operands; nothing writes the stage until it is released below.
        unsafe {
            if A_REGS {
                let a = if PINGPONG {
                    SwizzledKMajor::<64>::load_a(a_tile, 0, wg_thread)
                } else {
                    ATile::load_a(a_tile, a_row, wg_thread)
                };
                if B_KN {
                    let db = BKnTile::descriptor(b_tile);
                    <Bf16Mma<N> as WarpgroupMma<BKnTile>>::mma_k64_a_regs(
                        &mut acc, &a, db, accumulate,
                    );
                } else {
                    let db = BTile::descriptor(b_tile, 0);
                    <Bf16Mma<N> as WarpgroupMma<BTile>>::mma_k64_a_regs(
                        &mut acc, &a, db, accumulate,
                    );
                }
            } else {
                let da = if PINGPONG {
                    SwizzledKMajor::<64>::descriptor(a_tile, 0)
                } else {
                    ATile::descriptor(a_tile, a_row)
                };
                if B_KN {
                    let db = BKnTile::descriptor(b_tile);
                    <Bf16Mma<N> as WarpgroupMma<BKnTile>>::mma_k64(&mut acc, da, db, accumulate);
                } else {
                    let db = BTile::descriptor(b_tile, 0);
                    <Bf16Mma<N> as WarpgroupMma<BTile>>::mma_k64(&mut acc, da, db, accumulate);
                }
            }
        }
        // The wgmma wait inside the multiply covers this warpgroup's reads of the stage: one
        // thread releases it for the warpgroup.
        ready.consumer_release_for_group(wg_thread);
        after_k_tile();
    }
    mainloop_done();
    if let Some(out) = out {
        // SAFETY: forwarded contract.
        unsafe { store_tile(out, wg_thread, &acc) };
    }
}

/// The warpgroup's named barrier (1 or 2; 0 is the block's).
#[inline(always)]
fn warpgroup_barrier(consumer_index: u32) {
    if consumer_index == 0 {
        ptx::barrier_sync_threads::<1>(WARPGROUP_THREADS);
    } else {
        ptx::barrier_sync_threads::<2>(WARPGROUP_THREADS);
    }
}

/// Rounds a warpgroup's 64 x 256 accumulators (64 x 64 for a narrow edge tile) to BF16 and
/// writes the part of the tile inside C, through its staging:
/// - `COut::TensorMap`: staged as swizzled 64 x 64 boxes ([`CBox`], `REGS / 8` `stmatrix_x4`
///   per thread, conflict-free); one thread issues a tensor store per box (clipped at C's
///   edges by the copy engine) and goes on without waiting; the next call first waits until
///   they have read the staging;
/// - `COut::Pointer`: row `r` staged `lead & !1` elements into a row of [`DIRECT_ROW_BYTES`]
///   (4-byte stores), `lead` being how far into a 16-byte chunk of C the row's part starts
///   (any N: a row of C starts anywhere in a chunk), so that C's chunks are the staging's (one
///   element earlier for an odd lead: a 4-byte load and four funnel shifts more); then each
///   warp writes every fourth row, lane `l` C's `l`-th chunk wholly inside the part (one
///   `LDS.128`, one 16-byte store), lanes 0-15 the fewer than 8 elements at each end that C's
///   row shares with its neighbours' tiles, one each.
///
/// # Safety
/// `out.staging` is this warpgroup's 1 KiB aligned [`WARPGROUP_STAGING_BYTES`] of shared
/// memory, used for nothing else; `out.c` is C's tensor map with box [`CBox::BOX`] and 128-byte
/// swizzle, or points to C's `m * n` BF16, 16-byte aligned; the whole warpgroup calls it.
#[inline(always)]
unsafe fn store_tile<const REGS: usize>(out: &TileOut, t: u32, acc: &Accumulator<REGS>) {
    let TileOut {
        c,
        m,
        n,
        staging,
        consumer_index,
        row0,
        col0,
    } = *out;
    // The accumulators' columns: 256, or 64 for a narrow edge tile.
    let width = Accumulator::<REGS>::N;
    if t == 0 && matches!(c, COut::TensorMap(_)) {
        ptx::bulk_wait_group_read::<0>();
    }
    // Everyone is done reading the previous tile's staging (Direct) or its stores have read
    // it (TensorStore).
    warpgroup_barrier(consumer_index);
    match c {
        COut::TensorMap(map) => {
            let staged =
                |row: u32, col: u32| (col / 64) * CBox::BYTES + CBox::byte_offset(row, col % 64);
            let (lane_row, lane_col) = x4_lane_row(t % 32);
            let row = 16 * (t / 32) + lane_row;
            for q in 0..REGS / 8 {
                let col = 16 * q as u32 + lane_col;
                // SAFETY: a 16-byte row of one 8 x 8 matrix inside this warpgroup's staging
                // (row < 64, col < 256, a multiple of 8), each lane's its own; converged.
                unsafe {
                    ptx::stmatrix_x4(staging.add(staged(row, col)).cast(), acc.stmatrix_regs(q))
                };
            }
            ptx::fence_proxy_async_shared();
            warpgroup_barrier(consumer_index);
            if t == 0 {
                let mut part = 0;
                while part < width / 64 {
                    let coords = [(col0 + 64 * part) as i32, row0 as i32];
                    // SAFETY: the box is staged (barrier above, fenced for the copy engine);
                    // the map is C's (contract); the copy engine clips it at C's edges.
                    unsafe {
                        gpu::memcpy_async::bulk::store_async_tensor(
                            map,
                            coords,
                            staging.add(part * CBox::BYTES),
                        )
                    };
                    part += 1;
                }
                ptx::bulk_commit_group();
            }
        }
        COut::Pointer(c) => {
            // Where row `r`'s part starts in C and in a 16-byte chunk of it.
            let start_of = |r: u32| (row0 + r) as u64 * n as u64 + col0 as u64;
            let lead_of = |r: u32| (start_of(r) % 8) as u32;
            // This thread's two rows (Accumulator::position): r and r + 8.
            let (top, _) = Accumulator::<REGS>::position(t, 0);
            // Row r is staged `lead & !1` elements in: an even shift, so that every pair is
            // one aligned 4-byte store; an odd lead leaves C's chunks one element before the
            // staging's (fixed on the way out).
            let shifts = [lead_of(top) & !1, lead_of(top + 8) & !1];
            for i in 0..REGS / 2 {
                let (r, col) = Accumulator::<REGS>::position(t, 2 * i as u32);
                let packed = ptx::pack_bf16x2(acc.regs[2 * i], acc.regs[2 * i + 1]);
                let at = staging.add(r * DIRECT_ROW_BYTES + 2 * (shifts[i % 2] + col));
                // SAFETY: two elements of row r's staging (shift + col + 1 < 262), written by
                // this thread alone; 4-byte aligned (shift and col even).
                unsafe { at.cast::<u32>().write(packed) };
            }
            warpgroup_barrier(consumer_index);
            let cols = if n - col0 < width { n - col0 } else { width } as i32;
            let lane = (t % 32) as i32;
            // Sixteen rows per warp, unrolled so that their loads and stores overlap.
            for i in 0..16 {
                let r = t / 32 + 4 * i;
                if row0 + r >= m {
                    break;
                }
                let start = start_of(r);
                let lead = (start % 8) as i32;
                let row = staging.add(r * DIRECT_ROW_BYTES);
                // SAFETY (below): C's chunk `j` of this part, `first + 8 j`, is inside C where
                // an element of it is in the part (row < m, columns below cols).
                let first = unsafe { c.add((start - lead as u64) as usize) };
                // Chunk `j` holds the part's columns `8 j - lead..8 j - lead + 8`, staged at
                // bytes `16 j..16 j + 16` of the row; those wholly inside: `j_first..=j_last`
                // (at most 32).
                let j_first = (lead + 7) / 8;
                let j_last = (cols + lead) / 8 - 1;
                let j = j_first + lane;
                if j <= j_last {
                    // C's chunk j is staged elements 8 j - lead % 2 .. + 8: staging chunk j,
                    // or for an odd lead the last element of chunk j - 1 and seven of chunk j.
                    // SAFETY: staged 16-byte chunks of the row (j < 33; j >= 1 for an odd
                    // lead), written above.
                    let chunk: [f32; 4] = unsafe { row.add(16 * j as u32).cast().read() };
                    let words = if lead % 2 == 0 {
                        chunk
                    } else {
                        // SAFETY: as above (the word before chunk j).
                        let before: u32 = unsafe { row.add(16 * j as u32 - 4).cast().read() };
                        let w = chunk.map(f32::to_bits);
                        [
                            (before >> 16) | (w[0] << 16),
                            (w[0] >> 16) | (w[1] << 16),
                            (w[1] >> 16) | (w[2] << 16),
                            (w[2] >> 16) | (w[3] << 16),
                        ]
                        .map(f32::from_bits)
                    };
                    // SAFETY: 8 elements of this part of C's row (j in range), 16-byte aligned
                    // (C is; `first + 8 j` is a multiple of 8 elements).
                    unsafe { ptx::st_global_v4(first.add(8 * j as usize).cast(), words) };
                }
                // The columns outside those chunks, fewer than 8 at each end, one per lane:
                // lanes 0-7 the head, 8-15 the tail.
                let head_end = (8 * j_first - lead).min(cols);
                let tail_start = (8 * (j_last + 1) - lead).max(head_end);
                let col = if lane < 8 {
                    lane
                } else {
                    tail_start + lane - 8
                };
                let edge = if lane < 8 {
                    col < head_end
                } else {
                    lane < 16 && col < cols
                };
                if edge {
                    let at = 2 * ((lead & !1) + col) as u32;
                    // SAFETY: the aligned word holding the row's staged element for col,
                    // written above.
                    let word: u32 = unsafe { row.add(at & !3).cast::<u32>().read() };
                    let x = Bf16((word >> (8 * (at & 2))) as u16);
                    // SAFETY: an element of this part of C's row (0 <= col < cols).
                    unsafe { c.add(start as usize + col as usize).write(x) };
                }
            }
        }
    }
}

/// `C = A B^T` fed by `cp.async` (module docs, style `cp_async`): the [`Geometry::SHARED_TILE`]
/// block of two warpgroups, every thread copying its share of each stage (16-byte zero-filling
/// copies into the swizzled tiles, [`memcpy_async_tile`]) through a [`BlockPipeline`]
/// `STAGES - 1` k-tiles ahead, both warpgroups multiplying as the other styles do.
///
/// # Safety
/// The `cp_async` kernels' launch contract: 256 threads, the geometry's shared memory, `a`
/// and `b` holding `m x k` and `n x k` BF16 row-major, 16-byte aligned, `k` a multiple of 8.
#[inline(always)]
pub(super) unsafe fn gemm_cp_async<const STAGES: usize>(
    a: *const Bf16,
    b: *const Bf16,
    c: COut,
    m: u32,
    n: u32,
    k: u32,
) {
    let g = Geometry::SHARED_TILE;
    const { assert!(STAGES as u32 == Geometry::SHARED_TILE.stages) };
    let thread = ptx::thread_idx_x();
    let (consumer_index, wg_thread) = (thread / WARPGROUP_THREADS, thread % WARPGROUP_THREADS);
    let threads = Threads::new(thread, 2 * WARPGROUP_THREADS);
    let (tiles_m, tiles_n) = g.tiles(m, n);
    let tile_count = tiles_m * tiles_n;
    let k_tiles = k.div_ceil(BK);
    let barriers: Shared<PipelineSharedState<STAGES>> =
        dynamic_shared().add(g.layout().barriers_offset).cast();
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
        let stage = producer.producer_acquire();
        let (a_dst, b_dst) = stage_tiles(g, stage.index());
        let k0 = ahead_kt * BK;
        let (ra, rb) = (tm * g.tile_m, tn * BN);
        let tile_of = |base: *const Bf16, row: u32, rows: u32| GlobalTile {
            base: base.wrapping_add(row as usize * k as usize + k0 as usize),
            row_stride: row_bytes,
            valid_rows: rows - row,
            valid_row_bytes: (k - k0) * 2,
        };
        // SAFETY: the stage is free (acquired); rows below m (n) and bytes below k of A (B)
        // are readable, 16-byte aligned (k a multiple of 8, contract); the swizzled layouts
        // map each 16-byte chunk of a tile to its own aligned place in it; every thread calls
        // both with the same arguments.
        unsafe {
            memcpy_async_tile::<_, _, _, _, _, 16>(
                &threads,
                a_dst,
                ATile {},
                tile_of(a, ra, m),
                TileShape {
                    rows: g.tile_m,
                    row_bytes: 128,
                },
                &stage,
            );
            memcpy_async_tile::<_, _, _, _, _, 16>(
                &threads,
                b_dst,
                BTile {},
                tile_of(b, rb, n),
                TileShape {
                    rows: BN,
                    row_bytes: 128,
                },
                &stage,
            );
        }
        stage.producer_commit();
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
        for kt in 0..k_tiles {
            let ready = consumer.consumer_wait();
            // The copies landed through the generic proxy; `wgmma` reads through the async
            // one.
            ptx::fence_proxy_async_shared();
            let (a_tile, b_tile) = stage_tiles(g, ready.index());
            // SAFETY: the stage's phase completed (every thread's copies landed, fenced for
            // the async proxy by each reader); the warpgroup's 64 rows of A and all of B; the
            // whole warpgroup calls it; nothing writes the stage until it is released.
            unsafe {
                let da = ATile::descriptor(a_tile, a_row);
                let db = BTile::descriptor(b_tile, 0);
                <Bf16Mma<256> as WarpgroupMma<BTile>>::mma_k64(&mut acc, da, db, kt > 0);
            }
            ready.consumer_release_for_group(wg_thread);
            produce_next();
        }
        let (row0, col0) = (tm * g.tile_m + a_row, tn * BN);
        let staging =
            dynamic_shared().add(g.staging_offset() + consumer_index * WARPGROUP_STAGING_BYTES);
        // SAFETY: as in `gemm`.
        unsafe {
            store_tile(
                &TileOut {
                    c,
                    m,
                    n,
                    staging,
                    consumer_index,
                    row0,
                    col0,
                },
                wg_thread,
                &acc,
            )
        };
    }
    if matches!(c, COut::TensorMap(_)) && wg_thread == 0 {
        ptx::bulk_wait_group_read::<0>();
    }
}
