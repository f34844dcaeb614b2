//! Hopper's copy engine (sm_90): bulk copies between global and shared memory that one
//! thread issues for a whole buffer, completing a transaction count on an mbarrier (loads) or
//! a bulk async-group (stores), and the fences and helpers they need.
//!
//! Compiled only for sm_90 (`cfg(target_feature = "sm_90")`): the sm_80 PTX holds none of
//! these instructions, and code that calls them does not build for sm_80.
//!
//! SASS: a bulk load is `UBLKCP.S.G`, a bulk store `UBLKCP.G.S`; the transaction-count
//! operations are `SYNCS.ARRIVE.TRANS64.*` / `SYNCS.EXCH`-family instructions.

use super::objects::Mbarrier;
use super::smem::Shared;
use core::arch::asm;

/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], bytes,
/// [bar];` — the copy engine copies `bytes` from global `src` to shared `dst` and, when they
/// have landed, completes `bytes` of transaction count on the mbarrier `bar`.
///
/// # Safety
/// 1. `bytes` is a non-zero multiple of 16; `src` and `dst` are 16-byte aligned; `src` holds
///    `bytes` readable bytes of global memory and `dst` `bytes` of this block's shared memory.
/// 2. `bar` holds an initialized mbarrier whose current phase expects these bytes
///    ([`mbarrier_expect_tx`] before, by this thread) and cannot complete before they land (it
///    still expects an arrival).
/// 3. Nothing reads or writes `dst` until that phase completed.
#[inline(always)]
pub unsafe fn cp_async_bulk_global_to_shared(
    dst: u32,
    src: *const u8,
    bytes: u32,
    bar: Shared<Mbarrier>,
) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{dst}], [{src}], {bytes}, [{bar}];",
            dst = in(reg32) dst,
            src = in(reg64) src,
            bytes = in(reg32) bytes,
            bar = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// An L2 cache policy for a copy's global accesses: a 64-bit descriptor made by
/// `createpolicy` ([`l2_policy_evict_first`]), given to a copy's `.L2::cache_hint` operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Policy(u64);

/// `createpolicy.fractional.L2::evict_first.b64 policy, 1.0;` — a policy under which the lines
/// a copy touches are the first L2 evicts: data read or written once (a stream) then does not
/// push out data that is reused.
#[inline(always)]
#[must_use]
pub fn l2_policy_evict_first() -> L2Policy {
    let policy: u64;
    // SAFETY: computes a descriptor in a register; touches no memory.
    unsafe {
        asm!(
            "createpolicy.fractional.L2::evict_first.b64 {p}, 1.0;",
            p = out(reg64) policy,
            options(pure, nomem, nostack, preserves_flags)
        )
    }
    L2Policy(policy)
}

/// [`cp_async_bulk_global_to_shared`] with an L2 policy for the reads of `src`:
/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [dst],
/// [src], bytes, [bar], policy;`.
///
/// # Safety
/// As [`cp_async_bulk_global_to_shared`].
#[inline(always)]
pub unsafe fn cp_async_bulk_global_to_shared_l2_hint(
    dst: u32,
    src: *const u8,
    bytes: u32,
    bar: Shared<Mbarrier>,
    policy: L2Policy,
) {
    // SAFETY: the caller upholds the contract of `cp_async_bulk_global_to_shared`.
    unsafe {
        asm!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [{dst}], [{src}], {bytes}, [{bar}], {policy};",
            dst = in(reg32) dst,
            src = in(reg64) src,
            bytes = in(reg32) bytes,
            bar = in(reg32) bar.addr(),
            policy = in(reg64) policy.0,
            options(nostack, preserves_flags)
        )
    }
}

/// [`cp_async_bulk_shared_to_global`] with an L2 policy for the writes of `dst`:
/// `cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [dst], [src], bytes, policy;`.
///
/// # Safety
/// As [`cp_async_bulk_shared_to_global`].
#[inline(always)]
pub unsafe fn cp_async_bulk_shared_to_global_l2_hint(
    dst: *mut u8,
    src: u32,
    bytes: u32,
    policy: L2Policy,
) {
    // SAFETY: the caller upholds the contract of `cp_async_bulk_shared_to_global`.
    unsafe {
        asm!(
            "cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [{dst}], [{src}], {bytes}, {policy};",
            dst = in(reg64) dst,
            src = in(reg32) src,
            bytes = in(reg32) bytes,
            policy = in(reg64) policy.0,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.global.shared::cta.bulk_group [dst], [src], bytes;` — the copy engine copies
/// `bytes` from shared `src` to global `dst`, tracked by this thread's bulk async-groups
/// ([`bulk_commit_group`], [`bulk_wait_group_read`]).
///
/// # Safety
/// 1. As [`cp_async_bulk_global_to_shared`] for sizes and alignment, with `dst` `bytes` of
///    writable global memory that nothing else touches until the group completes.
/// 2. `src` is not written until a `bulk_wait_group_read` covering the copy returned; data
///    written to `src` by ordinary stores is made visible to the copy engine first
///    ([`fence_proxy_async_shared`] by the writing threads, then a barrier).
#[inline(always)]
pub unsafe fn cp_async_bulk_shared_to_global(dst: *mut u8, src: u32, bytes: u32) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "cp.async.bulk.global.shared::cta.bulk_group [{dst}], [{src}], {bytes};",
            dst = in(reg64) dst,
            src = in(reg32) src,
            bytes = in(reg32) bytes,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.commit_group;` — closes this thread's current bulk async-group (the bulk
/// stores issued since the last commit).
#[inline(always)]
pub fn bulk_commit_group() {
    // SAFETY: only changes this thread's bulk async-group bookkeeping.
    unsafe {
        asm!(
            "cp.async.bulk.commit_group;",
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.wait_group.read N;` — waits until at most `N` of this thread's bulk groups
/// still read their shared-memory source: older sources may be overwritten. (The writes to
/// global memory may still be in flight; the kernel's end completes them.)
#[inline(always)]
pub fn bulk_wait_group_read<const N: u32>() {
    // SAFETY: waiting has no memory-safety preconditions.
    unsafe {
        asm!(
            "cp.async.bulk.wait_group.read {n};",
            n = const N,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.wait_group N;` — waits until at most `N` of this thread's bulk groups are
/// incomplete: the older ones' writes are done.
#[inline(always)]
pub fn bulk_wait_group<const N: u32>() {
    // SAFETY: waiting has no memory-safety preconditions.
    unsafe {
        asm!(
            "cp.async.bulk.wait_group {n};",
            n = const N,
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], bytes;` — the current phase of `bar`
/// also waits for `bytes` of transaction count (completed by bulk copies).
///
/// # Safety
/// `bar` holds an initialized mbarrier whose current phase has not completed.
#[inline(always)]
pub unsafe fn mbarrier_expect_tx(bar: Shared<Mbarrier>, bytes: u32) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{bar}], {bytes};",
            bar = in(reg32) bar.addr(),
            bytes = in(reg32) bytes,
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 state, [bar], bytes;` — this thread
/// arrives on `bar` and the current phase also waits for `bytes` of transaction count, in one
/// instruction (`SYNCS.ARRIVE.TRANS64.RED`): the arrival of a thread that is about to issue bulk
/// copies of those bytes. Returns the arrival's phase state.
///
/// # Safety
/// `bar` holds an initialized mbarrier whose current phase still expects this arrival.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: Shared<Mbarrier>, bytes: u32) -> u64 {
    let state: u64;
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 {state}, [{bar}], {bytes};",
            state = out(reg64) state,
            bar = in(reg32) bar.addr(),
            bytes = in(reg32) bytes,
            options(nostack, preserves_flags)
        )
    }
    state
}

/// `fence.proxy.async.shared::cta;` — orders this thread's ordinary accesses to shared memory
/// before later accesses by the copy engine (the async proxy): after writing a buffer that a
/// bulk store will read.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence has no memory-safety preconditions.
    unsafe {
        asm!(
            "fence.proxy.async.shared::cta;",
            options(nostack, preserves_flags)
        )
    }
}

/// `fence.mbarrier_init.release.cluster;` — makes this thread's `mbarrier.init`s visible to the
/// copy engine before any bulk copy completes on those barriers (then a block barrier makes
/// them visible to the other threads).
#[inline(always)]
pub fn fence_mbarrier_init() {
    // SAFETY: a fence has no memory-safety preconditions.
    unsafe {
        asm!(
            "fence.mbarrier_init.release.cluster;",
            options(nostack, preserves_flags)
        )
    }
}

/// `elect.sync _|p, 0xffffffff;` — `true` in exactly one lane of the (converged) warp: the
/// thread that issues a bulk copy for all.
#[inline(always)]
#[must_use]
pub fn elect_one() -> bool {
    let elected: u32;
    // SAFETY: a warp-level vote; touches no memory. All 32 lanes must execute it.
    unsafe {
        asm!(
            "{{ .reg .pred p; elect.sync _|p, 0xffffffff; selp.u32 {0}, 1, 0, p; }}",
            out(reg32) elected,
            options(nomem, nostack, preserves_flags)
        )
    }
    elected != 0
}
