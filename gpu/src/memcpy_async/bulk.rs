//! The copy engine's copies (sm_90, TMA): one thread moves a whole buffer
//! (`cp.async.bulk`) or a box of a tensor described by a tensor map (`cp.async.bulk.tensor`)
//! between global and shared memory. Loads complete their bytes on a
//! [`BulkCompletion`]; stores on this thread's bulk
//! async-groups.

use super::AlignedSize;
use super::completion::BulkCompletion;
#[cfg(target_feature = "sm_90")]
use crate::cluster::MulticastGroup;
#[cfg(target_feature = "sm_90")]
use crate::pipeline::{ClusterBulkProducer, ProducerStage};
use crate::ptx;
use crate::shared::Shared;
use crate::tensor_map::TensorMapRef;

/// This thread alone copies `size` bytes from `src` (global) to `dst` (shared) with one bulk
/// copy of the copy engine (sm_90, TMA): `mbarrier.expect_tx` of the bytes on the completion's
/// barrier, then `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes` (SASS
/// `UBLKCP.S.G`). The barrier's phase completes when its arrivals are in and the bytes have
/// landed. One elected thread issues it for the whole buffer ([`crate::ptx::elect_one`]).
/// `l2`: an L2 policy for the reads of `src` (`.L2::cache_hint`, e.g.
/// [`crate::ptx::l2_policy_evict_first`] for data read once), or `None`.
///
/// # Safety
/// 1. `src` holds `size.bytes()` (a non-zero multiple of 16) readable bytes of global memory,
///    `dst` as many of this block's shared memory, both 16-byte aligned.
/// 2. The completion's barrier is initialized, its initialization made visible to the copy
///    engine ([`crate::ptx::fence_mbarrier_init`] then a block barrier), and its current phase
///    still expects an arrival that comes after this call (so it cannot complete early) — or,
///    bound with [`Arriving`](super::completion::Arriving), this call's own arrival.
/// 3. Nothing reads or writes `dst` until that phase completed.
#[inline(always)]
pub unsafe fn memcpy_async_bulk<T, U, C: BulkCompletion>(
    dst: Shared<T>,
    src: *const U,
    size: AlignedSize<16>,
    completion: &C,
    l2: Option<ptx::L2Policy>,
) {
    let bar = completion.transaction_barrier();
    // SAFETY: forwarded contract: the phase is open and expects these bytes from now on.
    unsafe {
        completion.expect(size.bytes());
        match l2 {
            None => ptx::cp_async_bulk_global_to_shared(dst.addr(), src.cast(), size.bytes(), bar),
            Some(policy) => ptx::cp_async_bulk_global_to_shared_l2_hint(
                dst.addr(),
                src.cast(),
                size.bytes(),
                bar,
                policy,
            ),
        }
    }
}

/// This thread copies `size` bytes from `src` (shared) to `dst` (global) with one bulk copy
/// (sm_90: `cp.async.bulk.global.shared::cta.bulk_group`, SASS `UBLKCP.G.S`), in this thread's
/// current bulk async-group: [`crate::ptx::bulk_commit_group`] closes it and
/// [`crate::ptx::bulk_wait_group_read`] says when `src` may be written again. `l2`: an L2
/// policy for the writes of `dst` (`.L2::cache_hint`), or `None`.
///
/// # Safety
/// 1. As [`memcpy_async_bulk`] (1) with the directions swapped; nothing else touches `dst`
///    until the group completes.
/// 2. What ordinary stores wrote to `src` was fenced for the copy engine
///    ([`crate::ptx::fence_proxy_async_shared`] by the writers, then a barrier). Data that a
///    bulk copy brought in: the issuing thread waited on that copy's barrier and then fenced
///    (`fence_proxy_async_shared`) — the wait makes the bytes visible to the thread, and we do
///    not read the PTX memory model as promising that it orders them for the copy engine's
///    next read without the fence (the streaming kernels fence once per tile).
/// 3. `src` is not written until a `bulk_wait_group_read` covering this copy returned.
#[inline(always)]
pub unsafe fn store_async_bulk<T, U>(
    dst: *mut U,
    src: Shared<T>,
    size: AlignedSize<16>,
    l2: Option<ptx::L2Policy>,
) {
    // SAFETY: forwarded contract.
    unsafe {
        match l2 {
            None => ptx::cp_async_bulk_shared_to_global(dst.cast(), src.addr(), size.bytes()),
            Some(policy) => ptx::cp_async_bulk_shared_to_global_l2_hint(
                dst.cast(),
                src.addr(),
                size.bytes(),
                policy,
            ),
        }
    }
}

/// This thread alone copies the box at `coords` of the tensor `map` describes into `dst`
/// (shared) with one tensor copy of the copy engine (sm_90, TMA): `mbarrier.expect_tx` of the
/// box's bytes on the completion's barrier, then
/// `cp.async.bulk.tensor.<R>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes` (SASS
/// `UTMALDG.<R>D`). Elements of the box outside the tensor arrive as the map's fill (zeros or
/// NaN) and count among the bytes, so a ragged edge needs neither a branch nor a smaller
/// expectation.
///
/// # Safety
/// 1. `map` describes a tensor of rank `C::RANK` in readable global memory, and `box_bytes` is
///    its box's size in bytes (the product of the box dimensions and the element size): a
///    wrong count leaves the phase waiting forever or completes it early.
/// 2. `dst` is 128-byte aligned (1024 with 128-byte swizzle) and holds `box_bytes` of this
///    block's shared memory.
/// 3. As [`memcpy_async_bulk`] (2) and (3) for the completion and `dst`.
#[inline(always)]
pub unsafe fn memcpy_async_tensor<T, C: ptx::TensorCoords, B: BulkCompletion>(
    dst: Shared<T>,
    map: TensorMapRef,
    coords: C,
    box_bytes: AlignedSize<16>,
    completion: &B,
) {
    let bar = completion.transaction_barrier();
    // SAFETY: forwarded contract: the phase is open and expects the box's bytes from now on.
    unsafe {
        completion.expect(box_bytes.bytes());
        ptx::cp_async_bulk_tensor_global_to_shared(dst.addr(), map, coords, bar);
    }
}

/// This thread's block copies its slice of a stage shared by a multicast group
/// ([`ClusterBulkPipeline`]): the box at `coords` of the tensor `map` describes, read once,
/// into `dst` of every block of `receivers` (sm_90:
/// `cp.async.bulk.tensor.<R>d...multicast::cluster`, SASS `UTMALDG.<R>D.MULTICAST`). Every block
/// of `receivers` copies one such slice of `slice_bytes` into the same stage, so this block's
/// `full[s]` expects all of them: `mbarrier.expect_tx` of `receivers.len() * slice_bytes`,
/// then the copy. A 2 x 1 cluster sharing B: block `r` copies rows `128 r..128 r + 128` of the
/// 256-row B tile to both blocks, and each block receives the whole tile.
///
/// # Safety
/// 1. As [`memcpy_async_tensor`] (1) and (2), `box_bytes` being `slice_bytes`, and `dst` the
///    same offset in every block of `receivers`.
/// 2. Every block of `receivers` makes this call for the same stage (the same ring position,
///    the same `receivers`, `slice_bytes` and `dst` but its own slice), and `receivers` is a
///    subset of the pipeline's group of every one of them; slices of different calls do not
///    overlap, and together a fill's copies reach every block of the group (the pipeline's
///    contract).
/// 3. Nothing in any of those blocks reads `dst` until its stage is waited for.
///
/// [`ClusterBulkPipeline`]: crate::pipeline::ClusterBulkPipeline
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub unsafe fn memcpy_async_tensor_multicast<T, C: ptx::TensorCoords, const STAGES: usize>(
    dst: Shared<T>,
    map: TensorMapRef,
    coords: C,
    slice_bytes: AlignedSize<16>,
    stage: &ProducerStage<'_, ClusterBulkProducer<'_, STAGES>>,
    receivers: MulticastGroup,
) {
    let bar = stage.cluster_full_barrier();
    // SAFETY: forwarded contract: the stage is open (acquired, not committed) and expects
    // every receiver's slice from now on; the peers' slices may land first (the phase's
    // transaction count goes below zero until this expectation, its pending arrival keeping
    // it open).
    unsafe {
        ptx::mbarrier_expect_tx(bar, receivers.len() * slice_bytes.bytes());
        ptx::cp_async_bulk_tensor_global_to_shared_multicast(
            dst.addr(),
            map,
            coords,
            bar,
            receivers.mask(),
        );
    }
}

/// [`memcpy_async_tensor_multicast`] for a plain buffer: this block's `slice` of a stage
/// shared by a multicast group, `size` bytes of global `src` read once into `dst` of every
/// block of `receivers` (sm_90: `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx
/// ::bytes.multicast::cluster`, SASS `UBLKCP.S.G.MULTICAST`), after `mbarrier.expect_tx` of
/// `receivers.len() * size` on this block's `full[s]`.
///
/// # Safety
/// 1. As [`memcpy_async_bulk`] (1), `dst` the same offset in every block of `receivers`.
/// 2. As [`memcpy_async_tensor_multicast`] (2) and (3), with `size` for `slice_bytes`.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub unsafe fn memcpy_async_bulk_multicast<T, U, const STAGES: usize>(
    dst: Shared<T>,
    src: *const U,
    size: AlignedSize<16>,
    stage: &ProducerStage<'_, ClusterBulkProducer<'_, STAGES>>,
    receivers: MulticastGroup,
) {
    let bar = stage.cluster_full_barrier();
    // SAFETY: forwarded contract, as in `memcpy_async_tensor_multicast`.
    unsafe {
        ptx::mbarrier_expect_tx(bar, receivers.len() * size.bytes());
        ptx::cp_async_bulk_global_to_shared_multicast(
            dst.addr(),
            src.cast(),
            size.bytes(),
            bar,
            receivers.mask(),
        );
    }
}

/// This thread writes the box at `coords` of the tensor `map` describes from `src` (shared)
/// with one tensor copy (sm_90: `cp.async.bulk.tensor.<R>d.global.shared::cta.tile.bulk_group`,
/// SASS `UTMASTG.<R>D`), in this thread's current bulk async-group; elements of the box outside
/// the tensor are not written, so a ragged edge is clipped by the copy engine.
///
/// # Safety
/// 1. `map` describes a tensor of rank `C::RANK` in writable global memory that nothing else
///    touches until the group completes; `src` is 128-byte aligned and holds the box.
/// 2. As [`store_async_bulk`] (2) and (3) for `src`.
#[inline(always)]
pub unsafe fn store_async_tensor<T, C: ptx::TensorCoords>(
    map: TensorMapRef,
    coords: C,
    src: Shared<T>,
) {
    // SAFETY: forwarded contract.
    unsafe { ptx::cp_async_bulk_tensor_shared_to_global(map, coords, src.addr()) }
}
