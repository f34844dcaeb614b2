//! [`Barrier`]: a block-scope split arrive/wait barrier (`cuda::barrier<thread_scope_block>`)
//! over one mbarrier in shared memory.
//!
//! Arrival and wait are separate: a thread arrives ([`Barrier::arrive`]), does independent work,
//! then waits with the [`ArrivalToken`] its arrival returned. Each
//! [`memcpy_async`](crate::memcpy_async) call bound to the barrier is one more arrival, made
//! when that thread's copies land, so the wait also means "the bound copies are in shared
//! memory" (initialize the barrier for both kinds of arrivals).
//!
//! The token is the only way to wait by state, and only [`Barrier::arrive`] makes one, so
//! waiting without having arrived does not compile. Loops that track the phase themselves
//! use [`Barrier::wait_parity`] instead.
//!
//! | operation | PTX |
//! |---|---|
//! | [`Barrier::init`] | `mbarrier.init.shared.b64` |
//! | [`Barrier::arrive`], [`Barrier::arrive_no_token`] | `mbarrier.arrive.shared.b64` |
//! | [`Barrier::wait`] | loop on `mbarrier.try_wait.shared.b64` (sm_90) / `test_wait` (sm_80) |
//! | [`Barrier::wait_parity`] | loop on `mbarrier.try_wait.parity` / `test_wait.parity` |
//! | [`Barrier::arrive_and_drop`] | `mbarrier.arrive_drop.shared.b64` |
//! | [`Barrier::invalidate`] | `mbarrier.inval.shared.b64` |

use crate::ptx;
use crate::ptx::Mbarrier;
use crate::shared::Shared;

/// A block-scope barrier: a handle (one register) to an initialized mbarrier.
///
/// Its methods are safe because a `Barrier` only comes from [`Barrier::init`] /
/// [`Barrier::from_initialized`], whose contracts make the mbarrier valid. It is not `Copy`,
/// so [`Barrier::arrive_and_drop`] and [`Barrier::invalidate`], which consume it, end its use.
pub struct Barrier {
    bar: Shared<Mbarrier>,
}

/// Proof of one arrival on a [`Barrier`] phase; [`Barrier::wait`] consumes it.
#[must_use = "an arrival token is only useful to wait for its phase"]
pub struct ArrivalToken {
    state: u64,
}

impl ArrivalToken {
    /// Arrivals the phase still expected when this thread arrived, this arrival included:
    /// the token captures the barrier's state from just before the arrival
    /// (`mbarrier.pending_count`; measured on an H200: the first of 64 arrivals reads 64).
    #[inline(always)]
    #[must_use]
    pub fn pending_count(&self) -> u32 {
        ptx::mbarrier_pending_count(self.state)
    }
}

impl Barrier {
    /// Initializes the mbarrier at `slot` for `expected` arrivals per phase. Call from one
    /// thread; see [`Barrier::init_by_first_thread`] for the collective form.
    ///
    /// # Safety
    /// 1. `slot` is 8-byte aligned shared memory that nothing else uses while the barrier is
    ///    in use.
    /// 2. Only this thread initializes it, and other threads get the barrier through
    ///    [`Barrier::from_initialized`] after a block-wide sync that follows this call.
    /// 3. `expected` is 1..2^20.
    #[inline(always)]
    #[must_use = "the handle is the only way to use the barrier"]
    pub unsafe fn init(slot: Shared<Mbarrier>, expected: u32) -> Barrier {
        // SAFETY: forwarded contract (1)-(3).
        unsafe { ptx::mbarrier_init(slot, expected) };
        Barrier { bar: slot }
    }

    /// Collective: thread 0 of the block initializes the mbarrier at `slot` for `expected`
    /// arrivals per phase, then the block syncs (`barrier.sync 0`) and every thread gets the
    /// handle.
    ///
    /// # Safety
    /// 1. Every thread of the block calls it, with the same `slot` and `expected`.
    /// 2. `slot` is 8-byte aligned shared memory that nothing else uses while the barrier is
    ///    in use; `expected` is 1..2^20.
    #[inline(always)]
    #[must_use = "the handle is the only way to use the barrier"]
    pub unsafe fn init_by_first_thread(slot: Shared<Mbarrier>, expected: u32) -> Barrier {
        if ptx::thread_idx_x() == 0 {
            // SAFETY: one thread initializes; the sync below publishes it (contract 1-2).
            let _ = unsafe { Barrier::init(slot, expected) };
        }
        ptx::barrier_sync();
        Barrier { bar: slot }
    }

    /// A handle to an mbarrier another thread initialized.
    ///
    /// # Safety
    /// The mbarrier at `slot` was initialized, that initialization is ordered before this
    /// call (a block-wide sync), and it is not invalidated while the handle is used.
    #[inline(always)]
    pub const unsafe fn from_initialized(slot: Shared<Mbarrier>) -> Barrier {
        Barrier { bar: slot }
    }

    /// The mbarrier's shared-memory slot (for `cp.async.mbarrier.arrive`).
    #[inline(always)]
    #[must_use]
    pub const fn slot(&self) -> Shared<Mbarrier> {
        self.bar
    }

    /// Arrives on the current phase (release semantics) and returns its token.
    /// Lowers to `mbarrier.arrive.shared.b64`.
    #[inline(always)]
    pub fn arrive(&self) -> ArrivalToken {
        // SAFETY: the barrier is initialized (type invariant).
        let state = unsafe { ptx::mbarrier_arrive(self.bar) };
        ArrivalToken { state }
    }

    /// Arrives on the current phase without keeping its state (`mbarrier.arrive`, result
    /// unused), for code that tracks the phase parity itself and waits with
    /// [`Barrier::wait_parity`]. Nothing then depends on the arrival's result, so it costs no
    /// round trip: a token's state must come back from shared memory before it can be kept.
    #[inline(always)]
    pub fn arrive_no_token(&self) {
        // SAFETY: the barrier is initialized (type invariant). The state is not needed.
        let _ = unsafe { ptx::mbarrier_arrive(self.bar) };
    }

    /// Blocks until the phase `token` arrived at completes (acquire semantics).
    #[inline(always)]
    pub fn wait(&self, token: ArrivalToken) {
        // SAFETY: the barrier is initialized; the token came from an arrival.
        unsafe { ptx::mbarrier_wait(self.bar, token.state) }
    }

    /// Whether the phase `token` arrived at has completed, without blocking.
    #[inline(always)]
    #[must_use = "the result says whether the phase completed"]
    pub fn test_wait(&self, token: &ArrivalToken) -> bool {
        // SAFETY: the barrier is initialized; the token came from an arrival.
        unsafe { ptx::mbarrier_test_wait(self.bar, token.state) }
    }

    /// Blocks until the phase with parity `parity` (0 or 1) completes. A fresh barrier is in
    /// phase 0, so `wait_parity(1)` returns at once.
    #[inline(always)]
    pub fn wait_parity(&self, parity: u32) {
        // SAFETY: the barrier is initialized (type invariant).
        unsafe { ptx::mbarrier_wait_parity(self.bar, parity & 1) }
    }

    /// Whether the phase with parity `parity` has completed, without blocking.
    #[inline(always)]
    #[must_use = "the result says whether the phase completed"]
    pub fn test_wait_parity(&self, parity: u32) -> bool {
        // SAFETY: the barrier is initialized (type invariant).
        unsafe { ptx::mbarrier_test_wait_parity(self.bar, parity & 1) }
    }

    /// Arrives and waits for the phase to complete (`cuda::barrier::arrive_and_wait`).
    #[inline(always)]
    pub fn arrive_and_wait(&self) {
        let token = self.arrive();
        self.wait(token);
    }

    /// Arrives on the current phase and leaves: later phases expect one arrival fewer.
    /// Lowers to `mbarrier.arrive_drop.shared.b64`. The thread must not use the barrier again.
    #[inline(always)]
    pub fn arrive_and_drop(self) {
        // SAFETY: the barrier is initialized; `self` is consumed, so this handle cannot
        // arrive again. The state is not needed: a thread that left does not wait.
        let _ = unsafe { ptx::mbarrier_arrive_drop(self.bar) };
    }

    /// Ends the barrier's life (`mbarrier.inval.shared.b64`) so its slot can be reused.
    ///
    /// # Safety
    /// No thread uses the barrier afterwards (order it with a block-wide sync), and no
    /// `memcpy_async` bound to it is still in flight.
    #[inline(always)]
    pub unsafe fn invalidate(self) {
        // SAFETY: forwarded contract.
        unsafe { ptx::mbarrier_inval(self.bar) }
    }
}
