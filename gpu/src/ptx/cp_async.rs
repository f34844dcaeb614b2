//! `cp.async`: non-blocking copies from global to shared memory (sm_80+), and the two ways to
//! learn that they completed: async-groups (`commit_group` / `wait_group`, per thread) and
//! `cp.async.mbarrier.arrive` (an mbarrier arrival triggered by completion, see
//! [`super::mbarrier`]).
//!
//! SASS: a copy is `LDGSTS.E` (4 B), `LDGSTS.E.64`, `LDGSTS.E.128`, or `LDGSTS.E.BYPASS.128` for
//! `.cg`; `commit_group` is `LDGDEPBAR`, `wait_group N` is `DEPBAR.LE SB0, N`.

use super::objects::Mbarrier;
use super::smem::Shared;
use core::arch::asm;

/// `cp.async.ca.shared.global [dst], [src], BYTES;` — copies `BYTES` (4, 8 or 16, checked at
/// compile time) from global to shared memory, caching the source in L1 and L2.
///
/// # Safety
/// 1. `src` points to `BYTES` readable bytes of global memory, aligned to `BYTES`.
/// 2. `dst` is a `.shared` address of `BYTES` bytes in this block's shared memory, aligned to
///    `BYTES`.
/// 3. Nothing reads or writes `dst` until the copy is known complete (a `wait_group` that
///    covers it, or an mbarrier phase it is bound to), and `src` is not written meanwhile.
#[inline(always)]
pub unsafe fn cp_async_ca<const BYTES: u32>(dst: u32, src: *const u8) {
    const {
        assert!(
            BYTES == 4 || BYTES == 8 || BYTES == 16,
            "cp.async.ca copies 4, 8 or 16 bytes"
        )
    };
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "cp.async.ca.shared.global [{dst}], [{src}], {bytes};",
            dst = in(reg32) dst,
            src = in(reg64) src,
            bytes = const BYTES,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.cg.shared.global [dst], [src], 16;` — copies 16 bytes, caching in L2 only
/// (bypassing L1): the form for data read once. `.cg` exists only for 16 bytes.
///
/// # Safety
/// As [`cp_async_ca`] with `BYTES = 16`.
#[inline(always)]
pub unsafe fn cp_async_cg(dst: u32, src: *const u8) {
    // SAFETY: the caller upholds the contract of `cp_async_ca` for 16 bytes.
    unsafe {
        asm!(
            "cp.async.cg.shared.global [{dst}], [{src}], 16;",
            dst = in(reg32) dst,
            src = in(reg64) src,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.ca.shared.global [dst], [src], BYTES, src_bytes;` — copies the first `src_bytes`
/// of the `BYTES` and writes zeros to the rest of `dst`: a ragged tail without a branch.
/// `src_bytes = 0` only zero-fills and reads nothing.
///
/// # Safety
/// As [`cp_async_ca`], except that only the first `src_bytes` (at most `BYTES`) of `src` need
/// be readable; `src` must still be aligned to `BYTES`.
#[inline(always)]
pub unsafe fn cp_async_ca_zfill<const BYTES: u32>(dst: u32, src: *const u8, src_bytes: u32) {
    const {
        assert!(
            BYTES == 4 || BYTES == 8 || BYTES == 16,
            "cp.async.ca copies 4, 8 or 16 bytes"
        )
    };
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "cp.async.ca.shared.global [{dst}], [{src}], {bytes}, {src_bytes};",
            dst = in(reg32) dst,
            src = in(reg64) src,
            bytes = const BYTES,
            src_bytes = in(reg32) src_bytes,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.cg.shared.global [dst], [src], 16, src_bytes;` — the zero-filling form of
/// [`cp_async_cg`].
///
/// # Safety
/// As [`cp_async_ca_zfill`] with `BYTES = 16`.
#[inline(always)]
pub unsafe fn cp_async_cg_zfill(dst: u32, src: *const u8, src_bytes: u32) {
    // SAFETY: the caller upholds the contract of `cp_async_ca_zfill` for 16 bytes.
    unsafe {
        asm!(
            "cp.async.cg.shared.global [{dst}], [{src}], 16, {src_bytes};",
            dst = in(reg32) dst,
            src = in(reg64) src,
            src_bytes = in(reg32) src_bytes,
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.commit_group;` — closes this thread's current group of `cp.async` copies (an
/// empty group is fine and completes at once). Lowers to `LDGDEPBAR`.
#[inline(always)]
pub fn commit_group() {
    // SAFETY: only changes this thread's async-group bookkeeping.
    unsafe { asm!("cp.async.commit_group;", options(nostack, preserves_flags)) }
}

/// `cp.async.wait_group N;` — waits until at most `pending` of this thread's committed groups
/// are still in flight, so all older groups (and their writes to shared memory) are complete
/// for this thread. Lowers to `DEPBAR.LE SB0, N`.
///
/// PTX takes `N` as an immediate. `pending` is meant to be a compile-time constant after
/// inlining, when the `match` below folds to a single instruction; a run-time value costs a
/// jump table. Counts above 7 wait for everything (`wait_all`), which is always correct.
///
/// Other threads see the copied data only after a barrier (`barrier.sync`) or an mbarrier
/// phase that orders them after this wait.
#[inline(always)]
pub fn wait_group(pending: u32) {
    match pending {
        0 => wait_group_imm::<0>(),
        1 => wait_group_imm::<1>(),
        2 => wait_group_imm::<2>(),
        3 => wait_group_imm::<3>(),
        4 => wait_group_imm::<4>(),
        5 => wait_group_imm::<5>(),
        6 => wait_group_imm::<6>(),
        7 => wait_group_imm::<7>(),
        _ => wait_all(),
    }
}

#[inline(always)]
fn wait_group_imm<const N: u32>() {
    // SAFETY: waiting has no memory-safety preconditions.
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack, preserves_flags)) }
}

/// `cp.async.wait_all;` — waits for every `cp.async` of this thread, committed or not
/// (`commit_group` + `wait_group 0`).
#[inline(always)]
pub fn wait_all() {
    // SAFETY: waiting has no memory-safety preconditions.
    unsafe { asm!("cp.async.wait_all;", options(nostack, preserves_flags)) }
}

/// `cp.async.mbarrier.arrive.shared.b64 [bar];` — when all prior `cp.async` copies of this
/// thread complete, arrive on the mbarrier at `bar`. The pending count is incremented now
/// and decremented by that arrival, so this adds no arrival to the expected count: the thread
/// still arrives itself (this is what `memcpy_async(..., barrier)` does). Lowers to
/// `ARRIVES.LDGSTSBAR.64`.
///
/// # Safety
/// `bar` holds an initialized mbarrier whose current phase is still open (will see this
/// thread's own arrival).
#[inline(always)]
pub unsafe fn cp_async_mbarrier_arrive(bar: Shared<Mbarrier>) {
    // SAFETY: the caller guarantees `bar` is a live mbarrier.
    unsafe {
        asm!(
            "cp.async.mbarrier.arrive.shared.b64 [{bar}];",
            bar = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.mbarrier.arrive.noinc.shared.b64 [bar];` — like [`cp_async_mbarrier_arrive`],
/// but the pending count is not incremented first: the completion arrival counts as one of
/// the phase's expected arrivals (a producer's "commit" in a block-scope pipeline).
///
/// # Safety
/// `bar` holds an initialized mbarrier whose expected count includes this arrival.
#[inline(always)]
pub unsafe fn cp_async_mbarrier_arrive_noinc(bar: Shared<Mbarrier>) {
    // SAFETY: the caller guarantees `bar` is a live mbarrier expecting this arrival.
    unsafe {
        asm!(
            "cp.async.mbarrier.arrive.noinc.shared.b64 [{bar}];",
            bar = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}
