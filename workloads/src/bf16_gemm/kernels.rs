//! The BF16 GEMM's device code (sm_90a): one body for both styles.

#![cfg(target_feature = "sm_90a")]

use super::{ATile, BK, BM, BN, BTile, CBox, Epilogue, GROUP_M};
use gpu::layout::PipelineSharedState;
use gpu::memcpy_async::AlignedSize;
use gpu::memcpy_async::bulk::memcpy_async_tensor;
use gpu::pipeline::{BulkPipeline, Consumer, Producer};
use gpu::ptx::{self, Shared, TensorMapRef};
use gpu::schedule::{GridStride, TileSchedule, grouped_tile};
use gpu::shared::dynamic_shared;
use gpu::wgmma::{Accumulator, Bf16, Bf16Mma, WARPGROUP_THREADS, WarpgroupMma};

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

/// The epilogue whose shared-memory layout a kernel with `STAGES` stages uses.
const fn epilogue_of(stages: usize) -> Epilogue {
    if stages as u32 == Epilogue::TensorStore.stages() {
        Epilogue::TensorStore
    } else {
        Epilogue::Direct
    }
}

/// Stage `s`'s A and B tiles.
#[inline(always)]
fn stage_tiles<const STAGES: usize>(s: u32) -> (Shared<u8>, Shared<u8>) {
    let a = dynamic_shared().add(epilogue_of(STAGES).layout().stage_offset(s));
    (a, a.add(ATile::BYTES))
}

/// `C = A B^T` (module docs). `SPECIALIZED`: warpgroup 0 produces and warpgroups 1 and 2
/// consume; else warpgroups 0 and 1 consume and thread 0 also produces. `STAGES` is the
/// epilogue's ([`Epilogue::stages`]), `c` of that epilogue's kind.
///
/// # Safety
/// The kernels' launch contract, with `3 * 128` threads if `SPECIALIZED`, else `2 * 128`.
#[inline(always)]
pub(super) unsafe fn gemm<const SPECIALIZED: bool, const STAGES: usize>(
    a: TensorMapRef,
    b: TensorMapRef,
    c: COut,
    m: u32,
    n: u32,
    k: u32,
) {
    let thread = ptx::thread_idx_x();
    let warpgroup = thread / WARPGROUP_THREADS;
    let (tiles_m, tiles_n) = super::tiles(m, n);
    let tile_count = tiles_m * tiles_n;
    let k_tiles = k.div_ceil(BK);
    let layout = epilogue_of(STAGES).layout();
    let barriers: Shared<PipelineSharedState<STAGES>> =
        dynamic_shared().add(layout.barriers_offset).cast();
    // SAFETY: every thread calls it; one thread produces; one thread per consumer warpgroup
    // releases each stage (2 arrivals); the layout reserves the barriers.
    let mut pipeline = unsafe { BulkPipeline::<STAGES>::init(barriers, 2) };
    let (mut producer, mut consumer) = pipeline.split();
    let (a_bytes, b_bytes) = (
        AlignedSize::<16>::of(ATile::BYTES),
        AlignedSize::<16>::of(BTile::BYTES),
    );

    // The producer's walk: every (tile, k-tile) of this block, in order.
    let mut produce_one = |tile: u32, kt: u32| {
        let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        let stage = producer.producer_acquire();
        let (a_dst, b_dst) = stage_tiles::<STAGES>(stage.index());
        let k0 = (kt * BK) as i32;
        // SAFETY: the stage is free (acquired); the maps describe A and B with these boxes and
        // 128-byte swizzle (launch contract); the tiles are 1024-byte aligned (stage bytes are
        // a multiple of 1 KiB); its full phase expects this thread's commit below.
        unsafe {
            memcpy_async_tensor(a_dst, a, [k0, (tm * BM) as i32], a_bytes, &stage);
            memcpy_async_tensor(b_dst, b, [k0, (tn * BN) as i32], b_bytes, &stage);
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
    while let Some(tile) = tiles.next() {
        let (tm, tn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        let mut acc = Accumulator::<128>::zeros();
        for kt in 0..k_tiles {
            let ready = consumer.consumer_wait();
            let (a_tile, b_tile) = stage_tiles::<STAGES>(ready.index());
            // SAFETY: the stage's phase completed (both boxes landed, written by the copy
            // engine); this warpgroup's 64 rows of A and all BN rows of B; the whole
            // warpgroup calls it with the same operands; nothing writes the stage until it is
            // released below.
            unsafe {
                let da = ATile::descriptor(a_tile, 64 * consumer_index);
                let db = BTile::descriptor(b_tile, 0);
                Bf16Mma::<256>::mma_k64(&mut acc, da, db, kt > 0);
            }
            // The wgmma wait inside the multiply covers this warpgroup's reads of the stage:
            // one thread releases it for the warpgroup.
            ready.consumer_release_for_group(wg_thread == 0);
            if producing {
                produce_next();
            }
        }
        let (row0, col0) = (tm * BM + 64 * consumer_index, tn * BN);
        match c {
            COut::Pointer(c) => {
                // SAFETY: C holds m x n BF16 (launch contract); the stores are guarded.
                unsafe { store_tile(c, m, n, row0, col0, wg_thread, &acc) }
            }
            COut::TensorMap(map) => {
                let staging = dynamic_shared()
                    .add(Epilogue::TensorStore.staging_offset() + consumer_index * 4 * CBox::BYTES);
                // SAFETY: this warpgroup's own staging (1 KiB aligned, 32 KiB), C's map
                // (launch contract).
                unsafe {
                    store_tile_via_tensor_copies(
                        map,
                        staging,
                        consumer_index,
                        row0,
                        col0,
                        wg_thread,
                        &acc,
                    )
                }
            }
        }
    }
    if let COut::TensorMap(_) = c {
        if wg_thread == 0 {
            // The last stores must have read the staging before the block's shared memory
            // goes away.
            ptx::bulk_wait_group_read::<0>();
        }
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
/// boxes), then one thread writes the boxes with tensor stores (clipped at C's edges by the
/// copy engine) and goes on without waiting for them; the next call first waits until they
/// have read the staging.
///
/// # Safety
/// `staging` is this warpgroup's 1 KiB aligned `4 * CBox::BYTES` of shared memory, used for
/// nothing else; `map` is C's tensor map with box [`CBox::BOX`] and 128-byte swizzle; the
/// whole warpgroup calls it.
#[inline(always)]
unsafe fn store_tile_via_tensor_copies(
    map: TensorMapRef,
    staging: Shared<u8>,
    consumer_index: u32,
    row0: u32,
    col0: u32,
    t: u32,
    acc: &Accumulator<128>,
) {
    if t == 0 {
        ptx::bulk_wait_group_read::<0>();
    }
    warpgroup_barrier(consumer_index);
    let mut i = 0;
    while i < 128 {
        let (r, col) = Accumulator::<128>::position(t, i as u32);
        let offset = (col / 64) * CBox::BYTES + CBox::byte_offset(r, col % 64);
        let packed = ptx::pack_bf16x2(acc.regs[i], acc.regs[i + 1]);
        // SAFETY: inside this warpgroup's staging; 4-byte aligned (col even).
        unsafe { staging.add(offset).cast::<u32>().write(packed) };
        i += 2;
    }
    ptx::fence_proxy_async_shared();
    warpgroup_barrier(consumer_index);
    if t == 0 {
        let mut part = 0;
        while part < 4 {
            let coords = [(col0 + 64 * part) as i32, row0 as i32];
            // SAFETY: the box is staged (barrier above, fenced for the copy engine); the map
            // is C's (contract); the copy engine clips it at C's edges.
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

/// Rounds a warpgroup's 64 x 256 accumulators to BF16 and stores the part inside C: pairs of
/// columns as one 4-byte store where N is even, single elements otherwise.
///
/// # Safety
/// `c` holds `m * n` BF16.
#[inline(always)]
unsafe fn store_tile(
    c: *mut Bf16,
    m: u32,
    n: u32,
    row0: u32,
    col0: u32,
    t: u32,
    acc: &Accumulator<128>,
) {
    let pairs = n % 2 == 0;
    let mut i = 0;
    while i < 128 {
        let (r, col) = Accumulator::<128>::position(t, i as u32);
        let (row, col) = (row0 + r, col0 + col);
        if row < m && col < n {
            let at = row as usize * n as usize + col as usize;
            if pairs {
                let packed = ptx::pack_bf16x2(acc.regs[i], acc.regs[i + 1]);
                // SAFETY: `col + 1 < n` (n even, col even); 4-byte aligned (at even).
                unsafe { c.add(at).cast::<u32>().write(packed) };
            } else {
                let packed = ptx::pack_bf16x2(acc.regs[i], acc.regs[i + 1]);
                // SAFETY: inside C (checked).
                unsafe { c.add(at).write(Bf16(packed as u16)) };
                if col + 1 < n {
                    // SAFETY: inside C (checked).
                    unsafe { c.add(at + 1).write(Bf16((packed >> 16) as u16)) };
                }
            }
        }
        i += 2;
    }
}
