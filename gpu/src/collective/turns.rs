//! The order in which a block's consumer warpgroups issue their mainloops (ping-pong:
//! FlashAttention-3's warp-scheduler barriers, CUTLASS's `OrderedSequenceBarrier`), as one
//! trait ([`IssueOrder`]) with two barriers under it: named barriers ([`NamedTurns`], what
//! attention runs: 2-4% faster there, docs/design.md) and mbarriers ([`MbarrierTurns`] over an
//! [`OrderBarrier`], what the GEMM runs: its turns also keep two warpgroups that skip each
//! other's stages within one ring phase). Both keep the tensor cores to one warpgroup at a
//! time, so that one's softmax or epilogue runs while the other multiplies.
//!
//! Also the warpgroup's own named barrier ([`warpgroup_barrier`]), which the epilogues of
//! both kernels sync their staging with.

use crate::layout::Mbarrier;
use crate::ptx;
use crate::shared::Shared;
use crate::wgmma::WARPGROUP_THREADS;

/// The turns of a block's consumer warpgroups: before issuing its multiplies a warpgroup
/// [`wait`](Self::wait)s for its turn, after issuing them it passes the turn on
/// ([`done`](Self::done)). Warpgroup 0 takes the first turn without waiting.
pub trait IssueOrder {
    /// Waits for this warpgroup's turn.
    ///
    /// # Safety
    /// The whole warpgroup calls it, converged; each warpgroup takes its turns in ring order,
    /// as many as the others (else one waits forever); the barrier's setup contract holds.
    unsafe fn wait(&mut self);

    /// This warpgroup has issued its multiplies: the next warpgroup's turn.
    ///
    /// # Safety
    /// As [`wait`](Self::wait), once after each of its turns.
    unsafe fn done(&self);
}

/// The warpgroup's own named barrier: `bar.sync 1 + consumer, 128` for consumer warpgroup
/// `consumer` (0 to 2; ids 1 to 3, 0 being the block's). The whole warpgroup calls it.
#[inline(always)]
pub fn warpgroup_barrier(consumer: u32) {
    match consumer {
        0 => ptx::barrier_sync_threads::<1>(WARPGROUP_THREADS),
        1 => ptx::barrier_sync_threads::<2>(WARPGROUP_THREADS),
        _ => ptx::barrier_sync_threads::<3>(WARPGROUP_THREADS),
    }
}

/// The first id of [`NamedTurns`]' barriers (one per warpgroup: 4 to 6, after the block's 0
/// and the warpgroups' own 1 to 3, [`warpgroup_barrier`]).
pub const TURN_BARRIER: u32 = 4;

/// Turns round a ring of `CONSUMERS` warpgroups through named barriers: warpgroup `c` waits
/// with `bar.sync 4 + c, 256` until the one before it has arrived (`bar.arrive 4 + c, 256`)
/// after issuing. Needs no shared memory and no setup. Without `PINGPONG` both steps are
/// no-ops, so that a kernel generic over its schedule calls them unconditionally.
///
/// ```ignore
/// let mut turns = NamedTurns::<2, true>::new(warpgroup - 1);
/// unsafe { turns.wait() };   // warpgroup 0's first turn does not wait
/// // ... issue this warpgroup's wgmma ...
/// unsafe { turns.done() };   // the other's turn
/// ```
pub struct NamedTurns<const CONSUMERS: u32, const PINGPONG: bool> {
    consumer: u32,
    first: bool,
}

impl<const CONSUMERS: u32, const PINGPONG: bool> NamedTurns<CONSUMERS, PINGPONG> {
    /// The turns of consumer warpgroup `consumer` (0 to `CONSUMERS - 1`, at most 3).
    #[inline(always)]
    pub fn new(consumer: u32) -> Self {
        const { assert!(CONSUMERS >= 1 && CONSUMERS <= 3) };
        NamedTurns {
            consumer,
            first: true,
        }
    }
}

impl<const CONSUMERS: u32, const PINGPONG: bool> IssueOrder for NamedTurns<CONSUMERS, PINGPONG> {
    /// `bar.sync 4 + consumer, 256` (but warpgroup 0's first turn).
    #[inline(always)]
    unsafe fn wait(&mut self) {
        if PINGPONG {
            if !(self.first && self.consumer == 0) {
                ptx::barrier_sync_named(TURN_BARRIER + self.consumer, 2 * WARPGROUP_THREADS);
            }
            self.first = false;
        }
    }

    /// `bar.arrive 4 + next, 256`.
    #[inline(always)]
    unsafe fn done(&self) {
        if PINGPONG {
            let next = if self.consumer + 1 == CONSUMERS {
                0
            } else {
                self.consumer + 1
            };
            ptx::barrier_arrive_named(TURN_BARRIER + next, 2 * WARPGROUP_THREADS);
        }
    }
}

/// The ordered sequence barrier of a two-warpgroup ping-pong: two mbarriers, `order[c]`
/// completing a phase when the other warpgroup has issued a whole mainloop; warpgroup `c`
/// waits for it before its next one (but warpgroup 0 not before its first). Besides keeping
/// the tensor cores to one warpgroup at a time, it is what lets the two skip each other's
/// stages in one ring: neither runs more than one ring phase ahead of the stages it waits on
/// by parity. [`MbarrierTurns`] walks its phases.
#[derive(Clone, Copy)]
pub struct OrderBarrier {
    order: Shared<Mbarrier>,
}

impl OrderBarrier {
    /// Bytes of shared memory the two mbarriers take.
    pub const BYTES: u32 = 16;

    /// The barrier at `at`, its two mbarriers initialized (one arrival per phase) by the
    /// thread whose `initializer` is true.
    ///
    /// # Safety
    /// `at` is 8-byte aligned, [`Self::BYTES`] reserved for this barrier; every thread of the
    /// block calls it with the same `at`, `initializer` true in exactly one, and the block
    /// syncs before any thread waits on or arrives at it.
    #[inline(always)]
    pub unsafe fn new(at: Shared<u8>, initializer: bool) -> OrderBarrier {
        let order = at.cast::<Mbarrier>();
        if initializer {
            // SAFETY: forwarded contract.
            unsafe {
                ptx::mbarrier_init(order, 1);
                ptx::mbarrier_init(order.add(1), 1);
            }
        }
        OrderBarrier { order }
    }

    /// Warpgroup `consumer` (0 or 1) waits for its turn: phase `phase` of its mbarrier (0, 1,
    /// 0, ... over its successive waits).
    ///
    /// # Safety
    /// The block synced after [`new`](Self::new); the other warpgroup arrives once per
    /// mainloop ([`Self::arrive`]).
    #[inline(always)]
    pub unsafe fn wait(&self, consumer: u32, phase: u32) {
        // SAFETY: forwarded contract.
        unsafe { ptx::mbarrier_wait_parity(self.order.add(consumer), phase) };
    }

    /// Warpgroup `consumer` has issued its mainloop: the other's turn. One thread of it.
    ///
    /// # Safety
    /// As [`wait`](Self::wait): one arrival per mainloop, waited for in turn.
    #[inline(always)]
    pub unsafe fn arrive(&self, consumer: u32) {
        // SAFETY: forwarded contract.
        let _ = unsafe { ptx::mbarrier_arrive(self.order.add(1 - consumer)) };
    }
}

/// Warpgroup `consumer`'s turns (0 or 1) through an [`OrderBarrier`]: it waits on its
/// mbarrier's phases in turn, and its thread 0 arrives on the other's.
pub struct MbarrierTurns {
    order: OrderBarrier,
    consumer: u32,
    group_thread: u32,
    phase: u32,
    first: bool,
}

impl MbarrierTurns {
    /// The turns of warpgroup `consumer` (0 or 1) over `order`, for the thread whose index
    /// in the warpgroup is `group_thread`.
    #[inline(always)]
    pub fn new(order: OrderBarrier, consumer: u32, group_thread: u32) -> Self {
        MbarrierTurns {
            order,
            consumer,
            group_thread,
            phase: 0,
            first: true,
        }
    }
}

impl IssueOrder for MbarrierTurns {
    /// `mbarrier.try_wait.parity` on this warpgroup's mbarrier (but warpgroup 0's first turn).
    #[inline(always)]
    unsafe fn wait(&mut self) {
        if !(self.first && self.consumer == 0) {
            // SAFETY: forwarded contract (the block synced after the barrier's setup).
            unsafe { self.order.wait(self.consumer, self.phase) };
            self.phase ^= 1;
        }
        self.first = false;
    }

    /// `mbarrier.arrive` on the other warpgroup's mbarrier, by thread 0 of this one.
    #[inline(always)]
    unsafe fn done(&self) {
        if self.group_thread == 0 {
            // SAFETY: forwarded contract: one arrival per turn, waited for in turn.
            unsafe { self.order.arrive(self.consumer) };
        }
    }
}
