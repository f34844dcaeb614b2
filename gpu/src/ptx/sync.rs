//! Block-level barriers.
//!
//! No other fence is needed by this crate's copies: `cp.async` writes through the generic
//! proxy, `mbarrier.arrive` has release and `mbarrier.test_wait` / `try_wait` acquire
//! semantics at CTA scope, and `barrier.sync` orders shared memory among the threads it joins.
//! (Only the copy engine's bulk/tensor copies of sm_90 need `fence.proxy.async`; see `bulk`.)

use core::arch::asm;

/// `barrier.sync 0;` — waits until every thread of the block arrives (`__syncthreads()`).
///
/// The non-`.aligned` form on purpose: `bar.sync` (aligned) lets the compiler assume that all
/// threads reach the same instruction, which MIR jump threading can break
/// (rust-lang/rust#137086). Both become `BAR.SYNC` in SASS.
///
/// Every thread of the block must reach it (with all threads of each warp converged or not).
#[inline(always)]
pub fn barrier_sync() {
    // SAFETY: a barrier has no memory-safety preconditions; a missing participant hangs.
    unsafe { asm!("barrier.sync 0;", options(nostack, preserves_flags)) }
}

/// `barrier.sync ID, threads;` — named barrier `ID` (1..16) joining `threads` threads (a
/// multiple of 32), so that a subset of the block (one role of a warp-specialized kernel) can
/// synchronize without the others.
#[inline(always)]
pub fn barrier_sync_threads<const ID: u32>(threads: u32) {
    const {
        assert!(
            ID >= 1 && ID < 16,
            "named barriers are 1..16 (0 is __syncthreads)"
        )
    };
    // SAFETY: as for `barrier_sync`.
    unsafe {
        asm!(
            "barrier.sync {id}, {n};",
            id = const ID,
            n = in(reg32) threads,
            options(nostack, preserves_flags)
        )
    }
}

/// `barrier.sync id, threads;` with the barrier chosen at run time: named barrier `id`
/// (1..16) joining `threads` threads (a multiple of 32) — one per group when a block's warps
/// split into groups that each synchronize alone (the group's index picks its barrier).
///
/// Every thread of the group must reach it with the same `id` and `threads`; an `id` of 0 or
/// 16 and more is outside the contract (0 is the block's `__syncthreads` barrier).
#[inline(always)]
pub fn barrier_sync_named(id: u32, threads: u32) {
    // SAFETY: as for `barrier_sync`.
    unsafe {
        asm!(
            "barrier.sync {id}, {n};",
            id = in(reg32) id,
            n = in(reg32) threads,
            options(nostack, preserves_flags)
        )
    }
}

/// `bar.warp.sync 0xffffffff;` — waits until all 32 lanes of the warp reach it
/// (`__syncwarp()`): reconverges a warp after one lane ran alone (an elected lane issuing a
/// copy), so the warp's next work runs once for all lanes instead of once per diverged path.
#[inline(always)]
pub fn syncwarp() {
    // SAFETY: a warp barrier has no memory-safety preconditions; all 32 lanes must reach it.
    unsafe {
        asm!(
            "bar.warp.sync 0xffffffff;",
            options(nostack, preserves_flags)
        )
    }
}

/// `barrier.arrive id, threads;` — this thread arrives at named barrier `id` (1..16) without
/// waiting: the barrier completes when `threads` threads (a multiple of 32) have arrived or
/// synced, releasing those that wait with [`barrier_sync_named`]. One role's signal to
/// another (a ping-pong kernel's "your turn").
///
/// Every thread of the arriving warps calls it with the same `id` and `threads`; an `id` of
/// 0 or 16 and more is outside the contract.
#[inline(always)]
pub fn barrier_arrive_named(id: u32, threads: u32) {
    // SAFETY: as for `barrier_sync`: arriving has no memory-safety preconditions.
    unsafe {
        asm!(
            "barrier.arrive {id}, {n};",
            id = in(reg32) id,
            n = in(reg32) threads,
            options(nostack, preserves_flags)
        )
    }
}
