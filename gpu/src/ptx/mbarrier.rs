//! `mbarrier`: a 64-bit barrier object in shared memory that counts arrivals per phase
//! (sm_80+). A phase completes when the expected number of arrivals has been seen; the object
//! then moves to the next phase, whose parity flips.
//!
//! Waiting either compares against a state token returned by `arrive` (`test_wait`,
//! `try_wait`), or against a phase parity (`.parity` forms: "has the phase with this parity
//! completed?"), which needs no token and suits loops that track the phase themselves.
//!
//! SASS: on sm_90 `SYNCS.EXCH.64` (init), `SYNCS.ARRIVE.TRANS64.*` (arrive),
//! `SYNCS.PHASECHK.TRANS64[.TRYWAIT]` (test/try_wait); on sm_80 `ATOMS` and shared loads.
//!
//! Every function here takes `bar`, the typed `.shared` address of the mbarrier
//! ([`Shared<Mbarrier>`]). The type says what the address is for, not that it is valid:
//! `Shared::cast` / `add` are plain address arithmetic, so each contract requires an
//! initialized (hence 8-byte aligned) mbarrier, and `mbarrier_init` an aligned slot.

use super::objects::Mbarrier;
use super::smem::Shared;
use core::arch::asm;

/// `mbarrier.init.shared.b64 [bar], count;` — starts phase 0 expecting `count` arrivals
/// (1..=2^20 - 1).
///
/// # Safety
/// 1. `bar` is 8-byte aligned shared memory reserved for this mbarrier.
/// 2. No thread uses the mbarrier until a barrier (`barrier.sync`) orders that use after
///    this init, and no copy or arrival is pending on a previous object at `bar`.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: Shared<Mbarrier>, count: u32) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "mbarrier.init.shared.b64 [{bar}], {count};",
            bar = in(reg32) bar.addr(),
            count = in(reg32) count,
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.inval.shared.b64 [bar];` — ends the mbarrier's life so that its 8 bytes can be
/// reused for something else.
///
/// # Safety
/// `bar` holds an initialized mbarrier that no thread will use again and on which no
/// arrival (`cp.async.mbarrier.arrive`) is pending.
#[inline(always)]
pub unsafe fn mbarrier_inval(bar: Shared<Mbarrier>) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "mbarrier.inval.shared.b64 [{bar}];",
            bar = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.arrive.shared.b64 state, [bar];` — one arrival on the current phase; returns the
/// state token of the phase arrived at (for [`mbarrier_test_wait`] / [`mbarrier_try_wait`] and
/// [`mbarrier_pending_count`]). Release semantics at CTA scope.
///
/// # Safety
/// `bar` holds an initialized mbarrier whose current phase still expects an arrival.
#[inline(always)]
#[must_use = "the state is the token to wait with; `let _ =` when waiting by parity"]
pub unsafe fn mbarrier_arrive(bar: Shared<Mbarrier>) -> u64 {
    let state: u64;
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "mbarrier.arrive.shared.b64 {state}, [{bar}];",
            state = out(reg64) state,
            bar = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
    state
}

/// `mbarrier.arrive_drop.shared.b64 state, [bar];` — arrives on the current phase and lowers
/// the expected count of every later phase by one: the thread leaves the barrier.
///
/// # Safety
/// As [`mbarrier_arrive`]; the thread must not arrive on this mbarrier again.
#[inline(always)]
#[must_use = "the state is the token to wait with; `let _ =` when it is not needed"]
pub unsafe fn mbarrier_arrive_drop(bar: Shared<Mbarrier>) -> u64 {
    let state: u64;
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "mbarrier.arrive_drop.shared.b64 {state}, [{bar}];",
            state = out(reg64) state,
            bar = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
    state
}

/// `mbarrier.pending_count.b64 count, state;` — the arrivals the phase of `state` still
/// expected when that token was produced. `mbarrier.arrive` captures the state from before
/// its own arrival, so that arrival is still counted.
#[inline(always)]
#[must_use]
pub fn mbarrier_pending_count(state: u64) -> u32 {
    let count: u32;
    // SAFETY: decodes a value in registers; touches no memory.
    unsafe {
        asm!(
            "mbarrier.pending_count.b64 {count}, {state};",
            count = out(reg32) count,
            state = in(reg64) state,
            options(pure, nomem, nostack, preserves_flags)
        )
    }
    count
}

macro_rules! wait_instruction {
    ($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty, $class:ident) => $instr:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `bar` holds an initialized mbarrier.
        #[inline(always)]
        #[must_use = "the result says whether the phase completed"]
        pub unsafe fn $name(bar: Shared<Mbarrier>, $arg: $ty) -> bool {
            let done: u32;
            // SAFETY: the caller guarantees `bar` is a live mbarrier. The memory clobber keeps
            // reads of the data it guards after the wait.
            unsafe {
                asm!(
                    concat!(
                        "{{ .reg .pred p; ",
                        $instr,
                        " p, [{bar}], {arg}; selp.u32 {done}, 1, 0, p; }}"
                    ),
                    bar = in(reg32) bar.addr(),
                    arg = in($class) $arg,
                    done = out(reg32) done,
                    options(nostack, preserves_flags)
                )
            }
            done != 0
        }
    };
}

wait_instruction!(
    /// `mbarrier.test_wait.shared.b64 p, [bar], state;` — whether the phase of `state` has
    /// completed. Does not block. Acquire semantics when it returns `true`.
    mbarrier_test_wait(state: u64, reg64) => "mbarrier.test_wait.shared.b64"
);
wait_instruction!(
    /// `mbarrier.test_wait.parity.shared.b64 p, [bar], parity;` — whether the phase with
    /// parity `parity` (0 or 1) has completed, i.e. the current phase's parity differs.
    /// Does not block. A fresh mbarrier is in phase 0, so parity 1 reads as complete.
    mbarrier_test_wait_parity(parity: u32, reg32) => "mbarrier.test_wait.parity.shared.b64"
);
#[cfg(target_feature = "sm_90")]
wait_instruction!(
    /// `mbarrier.try_wait.shared.b64 p, [bar], state;` (sm_90) — like [`mbarrier_test_wait`],
    /// but the hardware may suspend the thread for a while inside the instruction, so a loop
    /// around it spins less.
    mbarrier_try_wait(state: u64, reg64) => "mbarrier.try_wait.shared.b64"
);
#[cfg(target_feature = "sm_90")]
wait_instruction!(
    /// `mbarrier.try_wait.parity.shared.b64 p, [bar], parity;` (sm_90) — the suspending form
    /// of [`mbarrier_test_wait_parity`].
    mbarrier_try_wait_parity(parity: u32, reg32) => "mbarrier.try_wait.parity.shared.b64"
);

/// Blocks until the phase of `state` completes: a loop around `mbarrier.try_wait` on sm_90,
/// around `mbarrier.test_wait` on sm_80 (which has no `try_wait`).
///
/// # Safety
/// `bar` holds an initialized mbarrier and `state` came from an arrival on it.
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: Shared<Mbarrier>, state: u64) {
    #[cfg(target_feature = "sm_90")]
    // SAFETY: forwarded contract.
    while !unsafe { mbarrier_try_wait(bar, state) } {}
    #[cfg(not(target_feature = "sm_90"))]
    // SAFETY: forwarded contract.
    while !unsafe { mbarrier_test_wait(bar, state) } {}
}

/// Blocks until the phase with parity `parity` completes: a loop around
/// `mbarrier.try_wait.parity` on sm_90, `mbarrier.test_wait.parity` on sm_80.
///
/// # Safety
/// `bar` holds an initialized mbarrier.
#[inline(always)]
pub unsafe fn mbarrier_wait_parity(bar: Shared<Mbarrier>, parity: u32) {
    #[cfg(target_feature = "sm_90")]
    // SAFETY: forwarded contract.
    while !unsafe { mbarrier_try_wait_parity(bar, parity) } {}
    #[cfg(not(target_feature = "sm_90"))]
    // SAFETY: forwarded contract.
    while !unsafe { mbarrier_test_wait_parity(bar, parity) } {}
}
