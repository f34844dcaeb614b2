//! The tensor-core collective (sm_90a; CUTLASS 3's sm90 collective mainloop): a producer
//! that copies every k-tile of a tile into a pipeline's stages ([`load_k_tiles`]), and a
//! consumer warpgroup that multiplies them with `K` k-tiles of `wgmma` in flight, each stage
//! released once the multiplies reading it have completed ([`mma_k_tiles`]: the release trails
//! the read by `K` stages), with the schedule of the consumer warpgroups as a type
//! ([`Cooperative`], [`PingPong`] with its [`OrderBarrier`]).
//!
//! A kernel built on it writes only what is its own: which copies fill a stage, where in a
//! stage the operands are, and what happens to the tile after its mainloop (an epilogue).

use crate::pipeline::{GroupConsumer, HeldStage, Producer, ProducerStage};
use crate::ptx::MatrixDescriptor;
use crate::wgmma::{AFragment, BOperand, InFlight, WarpgroupMma, WarpgroupMmaRegs};

pub use super::turns::{IssueOrder, MbarrierTurns, NamedTurns, OrderBarrier, warpgroup_barrier};

/// The producer's mainloop (CUTLASS's `load`): `k_tiles` times, acquire the next free stage,
/// let `copy` issue the copies of k-tile `kt` bound to it, commit it.
#[inline(always)]
pub fn load_k_tiles<P: Producer>(
    producer: &mut P,
    k_tiles: u32,
    mut copy: impl FnMut(&ProducerStage<'_, P>, u32),
) {
    for kt in 0..k_tiles {
        let stage = producer.producer_acquire();
        copy(&stage, kt);
        stage.producer_commit();
    }
}

/// Where a k-tile's A operand of multiply `M` (B stored as `B`) is read from: shared memory
/// (its [`MatrixDescriptor`]) or this thread's registers (an [`AFragment`] the caller loaded
/// from the stage, `ldmatrix`; the atoms that take A from registers only,
/// [`WarpgroupMmaRegs`]).
pub trait AOperand<M: WarpgroupMma<B>, B: BOperand>: Copy {
    /// The most k-tiles that may be in flight: A from registers allows none beside the one
    /// being issued, since the next k-tile's fragment is loaded into the same registers
    /// ([`InFlight::mma_a_regs`]).
    const MAX_IN_FLIGHT: usize;

    /// Issues one k-tile with this A into `flight`.
    ///
    /// # Safety
    /// As [`InFlight::mma`].
    unsafe fn issue<S, const K: usize>(
        self,
        flight: &mut InFlight<'_, M::Acc, S, K>,
        stage: S,
        b: MatrixDescriptor,
        accumulate: bool,
    ) -> Option<S>;
}

impl<M: WarpgroupMma<B>, B: BOperand> AOperand<M, B> for MatrixDescriptor {
    const MAX_IN_FLIGHT: usize = 7;

    #[inline(always)]
    unsafe fn issue<S, const K: usize>(
        self,
        flight: &mut InFlight<'_, M::Acc, S, K>,
        stage: S,
        b: MatrixDescriptor,
        accumulate: bool,
    ) -> Option<S> {
        // SAFETY: forwarded contract.
        unsafe { flight.mma::<M, B>(stage, self, b, accumulate) }
    }
}

impl<M: WarpgroupMmaRegs<B>, B: BOperand> AOperand<M, B> for AFragment {
    const MAX_IN_FLIGHT: usize = 0;

    #[inline(always)]
    unsafe fn issue<S, const K: usize>(
        self,
        flight: &mut InFlight<'_, M::Acc, S, K>,
        stage: S,
        b: MatrixDescriptor,
        accumulate: bool,
    ) -> Option<S> {
        // SAFETY: forwarded contract; K = 0 (`mma_k_tiles` checks it), so the group is
        // complete before the next fragment is loaded.
        unsafe { flight.mma_a_regs::<M, B>(stage, &self, b, accumulate) }
    }
}

/// A warpgroup's mainloop (CUTLASS's `mma` and `mma_tail`): for each of `k_tiles >= 1`
/// stages, wait for it, issue its multiplies into `acc` (`operands(stage)` says where A and
/// B are), and keep at most `K` k-tiles in flight; a stage is released for the group
/// (`group_thread`: this thread's index in the warpgroup) as soon as the wait after a later
/// issue shows its multiplies complete, then `after_release` runs (a multistage producer's
/// next copy). `issued` runs once after the last issue, before the tail waits (ping-pong:
/// the other warpgroup may start issuing). When it returns the accumulators are complete and
/// every stage is released.
///
/// `K` is at most the A operand's [`AOperand::MAX_IN_FLIGHT`] (checked when it is built).
///
/// # Safety
/// The whole warpgroup calls it, converged, with the same arguments (but `group_thread`); the
/// next `k_tiles` stages of the consumer's ring are this tile's, each holding the operands
/// `operands` describes once its wait returns (the copy engine's completion observed, or
/// copies by threads fenced for the async proxy in `operands`), and nothing writes a stage
/// until it is released.
#[inline(always)]
pub unsafe fn mma_k_tiles<M, B, C, A, const K: usize>(
    consumer: &mut C,
    acc: &mut M::Acc,
    k_tiles: u32,
    group_thread: u32,
    mut operands: impl FnMut(u32) -> (A, MatrixDescriptor),
    mut after_release: impl FnMut(),
    issued: impl FnOnce(),
) where
    M: WarpgroupMma<B>,
    B: BOperand,
    C: GroupConsumer,
    A: AOperand<M, B>,
{
    const {
        assert!(
            K <= A::MAX_IN_FLIGHT,
            "too many k-tiles in flight for this A operand"
        )
    };
    let mut flight = InFlight::<_, HeldStage, K>::new(acc);
    for kt in 0..k_tiles {
        let stage = consumer.consumer_wait_held();
        let (a, b) = operands(stage.index());
        let accumulate = kt > 0;
        // SAFETY: the stage's operands are filled and stay unwritten until it is released,
        // which happens only when `InFlight` hands it back (its group complete); the whole
        // warpgroup (contract).
        let done = unsafe { a.issue::<_, K>(&mut flight, stage, b, accumulate) };
        if let Some(done) = done {
            consumer.consumer_release_held(done, group_thread);
            after_release();
        }
    }
    issued();
    // SAFETY: the whole warpgroup (contract).
    let held = unsafe { flight.finish() };
    for stage in held.into_iter().flatten() {
        consumer.consumer_release_held(stage, group_thread);
        after_release();
    }
}

/// How the consumer warpgroups of a block share its tiles (CUTLASS's kernel schedules).
pub trait Schedule {
    /// Whether each warpgroup takes whole tiles of its own in turn (ping-pong), rather than
    /// all sharing each tile (cooperative).
    const PINGPONG: bool;
    /// The warpgroups that read and release each stage.
    const READERS_PER_STAGE: u32 = if Self::PINGPONG { 1 } else { 2 };
}

/// Both consumer warpgroups multiply each tile together, each its own 64 rows (CUTLASS's
/// `KernelTmaWarpSpecializedCooperative`).
pub struct Cooperative;

impl Schedule for Cooperative {
    const PINGPONG: bool = false;
}

/// Each consumer warpgroup takes every other tile, the two issuing their mainloops in turn
/// ([`OrderBarrier`]) so that one's epilogue runs while the other multiplies (CUTLASS's
/// `KernelTmaWarpSpecializedPingpong`).
pub struct PingPong;

impl Schedule for PingPong {
    const PINGPONG: bool = true;
}
