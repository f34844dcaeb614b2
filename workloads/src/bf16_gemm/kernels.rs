//! The BF16 GEMM's device code (sm_90a): one body for all three styles and both B layouts.

#![cfg(target_feature = "sm_90a")]

use super::{ATile, BK, BKnTile, BN, BTile, CBox, GROUP_M, Geometry};
use gpu::layout::{Mbarrier, PipelineSharedState};
use gpu::memcpy_async::AlignedSize;
use gpu::memcpy_async::bulk::memcpy_async_tensor;
use gpu::pipeline::{BulkPipeline, Consumer, Producer};
use gpu::ptx::{self, Shared, TensorMapRef};
use gpu::schedule::{GridStride, TileSchedule, grouped_tile};
use gpu::shared::dynamic_shared;
use gpu::wgmma::{Accumulator, Bf16, Bf16Mma, SwizzledKMajor, WARPGROUP_THREADS, WarpgroupMma};

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

/// `C = A B^T` (module docs). `SPECIALIZED`: warpgroup 0 produces and warpgroups 1 and 2
/// consume; else warpgroups 0 and 1 consume and thread 0 also produces. `PINGPONG`
/// (specialized only): each consumer warpgroup takes every other tile of the block's walk, a
/// 64 x 256 tile of its own ([`Geometry::TILE_PER_WARPGROUP`]), skipping the other's stages
/// in the shared ring; else both share each 128 x 256 tile. `B_KN`: `b` maps B as `k x n`
/// row-major (boxes [`BKnTile::BOX`], the tile MN-major), else as `n x k`. `STAGES` is the
/// geometry's; `c` says which epilogue.
///
/// # Safety
/// The kernels' launch contract, with `3 * 128` threads if `SPECIALIZED`, else `2 * 128`.
#[inline(always)]
pub(super) unsafe fn gemm<
    const SPECIALIZED: bool,
    const PINGPONG: bool,
    const B_KN: bool,
    const STAGES: usize,
>(
    a: TensorMapRef,
    b: TensorMapRef,
    c: COut,
    m: u32,
    n: u32,
    k: u32,
) {
    let thread = ptx::thread_idx_x();
    let warpgroup = thread / WARPGROUP_THREADS;
    const { assert!(SPECIALIZED || !PINGPONG) };
    const { assert!(STAGES as u32 == geometry(PINGPONG).stages) };
    let g = geometry(PINGPONG);
    let (tiles_m, tiles_n) = g.tiles(m, n);
    let tile_count = tiles_m * tiles_n;
    let k_tiles = k.div_ceil(BK);
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
    // SAFETY: every thread calls it; one thread produces; each fill is released by
    // `releasers` group releases (one per warpgroup that reads it), ping-pong consumers skipping
    // the other's fills and kept within one phase by `order`; the layout reserves the barriers.
    let mut pipeline = unsafe { BulkPipeline::<STAGES>::init(barriers, releasers) };
    let (mut producer, mut consumer) = pipeline.split();
    let (a_bytes, b_bytes, b_box_bytes) = (
        AlignedSize::<16>::of(g.a_tile_bytes()),
        AlignedSize::<16>::of(BTile::BYTES),
        AlignedSize::<16>::of(BKnTile::BOX_BYTES),
    );

    // The producer's walk: every (tile, k-tile) of this block, in order.
    let mut produce_one = |tile: u32, kt: u32| {
        let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        let stage = producer.producer_acquire();
        let (a_dst, b_dst) = stage_tiles(g, stage.index());
        let k0 = (kt * BK) as i32;
        // SAFETY: the stage is free (acquired); the maps describe A and B with these boxes and
        // 128-byte swizzle (launch contract); the tiles are 1024-byte aligned (stage bytes are
        // a multiple of 1 KiB); its full phase expects this thread's commit below.
        unsafe {
            memcpy_async_tensor(a_dst, a, [k0, (tm * g.tile_m) as i32], a_bytes, &stage);
            if B_KN {
                let mut j = 0;
                while j < BKnTile::BOXES {
                    let n0 = (tn * BN + 64 * j) as i32;
                    let dst = b_dst.add(j * BKnTile::BOX_BYTES);
                    memcpy_async_tensor(dst, b, [n0, k0], b_box_bytes, &stage);
                    j += 1;
                }
            } else {
                memcpy_async_tensor(b_dst, b, [k0, (tn * BN) as i32], b_bytes, &stage);
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
            let mut tiles = GridStride::this_block(tile_count);
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
    let mut ahead = GridStride::this_block(tile_count);
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

    let mut tiles = GridStride::this_block(tile_count);
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
        let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        // This warpgroup's rows of the stage's A tile.
        let a_row = if PINGPONG { 0 } else { 64 * consumer_index };
        let mut acc = Accumulator::<128>::zeros();
        for kt in 0..k_tiles {
            let ready = consumer.consumer_wait();
            let (a_tile, b_tile) = stage_tiles(g, ready.index());
            // SAFETY: the stage's phase completed (both boxes landed, written by the copy
            // engine); this warpgroup's 64 rows of A and all BN rows of B; the whole
            // warpgroup calls it with the same operands; nothing writes the stage until it is
            // released below.
            unsafe {
                let da = if PINGPONG {
                    SwizzledKMajor::<64>::descriptor(a_tile, 0)
                } else {
                    ATile::descriptor(a_tile, a_row)
                };
                if B_KN {
                    let db = BKnTile::descriptor(b_tile);
                    <Bf16Mma<256> as WarpgroupMma<BKnTile>>::mma_k64(&mut acc, da, db, kt > 0);
                } else {
                    let db = BTile::descriptor(b_tile, 0);
                    <Bf16Mma<256> as WarpgroupMma<BTile>>::mma_k64(&mut acc, da, db, kt > 0);
                }
            }
            // The wgmma wait inside the multiply covers this warpgroup's reads of the stage:
            // one thread releases it for the warpgroup.
            ready.consumer_release_for_group(wg_thread == 0);
            if producing {
                produce_next();
            }
        }
        if PINGPONG && wg_thread == 0 {
            // This mainloop is done: the other warpgroup's may start.
            // SAFETY: initialized above; one arrival per mainloop, waited for in turn.
            let _ = unsafe { ptx::mbarrier_arrive(order.add(1 - consumer_index)) };
        }
        let (row0, col0) = (tm * g.tile_m + a_row, tn * BN);
        let staging = dynamic_shared().add(g.staging_offset() + consumer_index * 4 * CBox::BYTES);
        // SAFETY: this warpgroup's own staging (1 KiB aligned, 32 KiB); C's map or C itself
        // (launch contract); the whole warpgroup calls it.
        unsafe {
            store_tile(
                c,
                m,
                n,
                staging,
                consumer_index,
                row0,
                col0,
                wg_thread,
                &acc,
            )
        };
    }
    if matches!(c, COut::TensorMap(_)) && wg_thread == 0 {
        // The last stores must have read the staging before the block's shared memory goes
        // away.
        ptx::bulk_wait_group_read::<0>();
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

/// Rounds a warpgroup's 64 x 256 accumulators to BF16 into its staging (four swizzled 64 x 64
/// boxes, conflict-free), then writes the part of the tile inside C:
/// - `COut::TensorMap`: one thread issues four tensor stores (clipped at C's edges by the copy
///   engine) and goes on without waiting; the next call first waits until they have read the
///   staging;
/// - `COut::Pointer`: the warpgroup writes the rows itself, thread `t` the 4-byte pair that
///   starts at the row's `t`-th 4-byte boundary (a row of odd N may start half-way into one:
///   its first and last elements are then written alone), coalesced, guarded at the edges.
///
/// # Safety
/// `staging` is this warpgroup's 1 KiB aligned `4 * CBox::BYTES` of shared memory, used for
/// nothing else; `c` is C's tensor map with box [`CBox::BOX`] and 128-byte swizzle, or points
/// to C's `m * n` BF16; the whole warpgroup calls it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_tile(
    c: COut,
    m: u32,
    n: u32,
    staging: Shared<u8>,
    consumer_index: u32,
    row0: u32,
    col0: u32,
    t: u32,
    acc: &Accumulator<128>,
) {
    if t == 0 && matches!(c, COut::TensorMap(_)) {
        ptx::bulk_wait_group_read::<0>();
    }
    // Everyone is done reading the previous tile's staging (Direct) or its stores have read
    // it (TensorStore).
    warpgroup_barrier(consumer_index);
    let staged = |row: u32, col: u32| (col / 64) * CBox::BYTES + CBox::byte_offset(row, col % 64);
    let mut i = 0;
    while i < 128 {
        let (r, col) = Accumulator::<128>::position(t, i as u32);
        let packed = ptx::pack_bf16x2(acc.regs[i], acc.regs[i + 1]);
        // SAFETY: inside this warpgroup's staging; 4-byte aligned (col even).
        unsafe { staging.add(staged(r, col)).cast::<u32>().write(packed) };
        i += 2;
    }
    match c {
        COut::TensorMap(map) => {
            ptx::fence_proxy_async_shared();
            warpgroup_barrier(consumer_index);
            if t == 0 {
                let mut part = 0;
                while part < 4 {
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
            warpgroup_barrier(consumer_index);
            let cols = if n - col0 < BN { n - col0 } else { BN };
            let read = |row: u32, col: u32| -> u16 {
                let at = staged(row, col);
                // SAFETY: the aligned word holding the element, inside the staging (row < 64,
                // col < 256), written above.
                let word: u32 = unsafe { staging.add(at & !3).cast::<u32>().read() };
                (word >> (8 * (at & 2))) as u16
            };
            let mut r = 0;
            while r < 64 && row0 + r < m {
                let start = (row0 + r) as usize * n as usize + col0 as usize;
                // SAFETY (below): elements start + col for col < cols are inside C's row.
                let row = unsafe { c.add(start) };
                // The first column at a 4-byte boundary of C: 0 or 1.
                let skew = (start % 2) as u32;
                let col = 2 * t + skew;
                if col + 1 < cols {
                    let pair = read(r, col) as u32 | (read(r, col + 1) as u32) << 16;
                    // SAFETY: col + 1 < cols; 4-byte aligned (start + col even).
                    unsafe { row.add(col as usize).cast::<u32>().write(pair) };
                } else if col < cols {
                    // SAFETY: col < cols.
                    unsafe { row.add(col as usize).write(Bf16(read(r, col))) };
                }
                if skew == 1 && t == 0 {
                    // SAFETY: cols >= 1.
                    unsafe { row.write(Bf16(read(r, 0))) };
                }
                r += 1;
            }
        }
    }
}
