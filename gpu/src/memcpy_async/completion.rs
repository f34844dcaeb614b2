//! What a copy completes on: the binding a `memcpy_async` call takes as its last argument.
//!
//! | binding | copies | per bound call | the copies are known landed when |
//! |---|---|---|---|
//! | [`Barrier`] | `cp.async` | `cp.async.mbarrier.arrive.noinc` (one arrival) | the barrier's phase completes |
//! | [`Uncounted`]`(&barrier)` | `cp.async` | `cp.async.mbarrier.arrive` (no arrival counted) | the barrier's phase completes |
//! | a pipeline's [`ProducerStage`] | `cp.async` | nothing: the stage's commit binds them | the stage is waited for |
//! | [`Unbound`] | `cp.async` | nothing: the thread's next binding covers them | that binding completes |
//! | [`Barrier`] (sm_90) | bulk, tensor | `mbarrier.expect_tx` of the bytes | the phase completes (arrivals and bytes) |
//! | [`Arriving`]`(&barrier)` (sm_90) | bulk, tensor | `mbarrier.arrive.expect_tx` (an arrival and the bytes) | the phase completes |
//! | a bulk-capable pipeline's [`ProducerStage`] (sm_90) | bulk, tensor | `mbarrier.expect_tx` on the stage's `full` barrier | the stage is waited for |
//! | a [`ClusterBulkPipeline`](crate::pipeline::ClusterBulkPipeline)'s stage (sm_90) | multicast tensor ([`memcpy_async_tensor_multicast`](super::bulk::memcpy_async_tensor_multicast)) | `mbarrier.expect_tx` of every receiver's slice | the stage is waited for |
//!
//! [`Completion`] is what `cp.async` copies bind to, [`BulkCompletion`] what the copy engine's
//! bulk and tensor copies complete their bytes on; which to choose is discussed in
//! [`memcpy_async`](super)'s module docs.

use crate::barrier::Barrier;
#[cfg(target_feature = "sm_90")]
use crate::layout::Mbarrier;
#[cfg(target_feature = "sm_90")]
use crate::pipeline::{BlockProducer, ClusterBulkProducer, CopyEngineFenced};
use crate::pipeline::{CpAsyncProducer, ProducerStage};
use crate::ptx;
#[cfg(target_feature = "sm_90")]
use crate::shared::Shared;

/// What a copy's completion is bound to. Implemented by [`Barrier`] and by a pipeline's
/// [`ProducerStage`].
pub trait Completion {
    /// Binds this thread's copies issued so far to `self`.
    ///
    /// # Safety
    /// `self` is live and its current phase / stage is open.
    #[doc(hidden)]
    unsafe fn bind_copies(&self);
}

/// `cp.async.mbarrier.arrive.noinc`: each `memcpy_async` call bound to a barrier is one
/// arrival of the calling thread on the current phase, made when its copies so far have
/// landed. The barrier's expected count must include these arrivals (PTX ISA's `.noinc`
/// example): e.g. 32 threads that each make two bound calls and then `arrive()` once per
/// phase need `Barrier::init(slot, 3 * 32)`.
///
/// The incrementing form (`cp.async.mbarrier.arrive` without `.noinc`, which adds to the
/// pending count so the expected count stays unchanged) is available in [`crate::ptx`], but
/// compute-sanitizer's synccheck (CUDA 13.0) reports every use of it as "Missing wait";
/// `.noinc` is what this crate binds with, and it is also one instruction (`ARRIVES.*.ARVCNT`)
/// instead of two.
impl Completion for Barrier {
    #[inline(always)]
    unsafe fn bind_copies(&self) {
        // SAFETY: a `Barrier` is initialized (type invariant); the phase is open and expects
        // this arrival (caller).
        unsafe { ptx::cp_async_mbarrier_arrive_noinc(self.slot()) }
    }
}

/// Binds copies to a [`Barrier`] the way `cuda::barrier` does:
/// `cp.async.mbarrier.arrive.shared.b64` without `.noinc` raises the phase's pending count
/// when issued and lowers it when this thread's copies land, so the copies add no arrival to
/// the expected count — initialize the barrier for the threads that [`Barrier::arrive`]
/// themselves, as in C++. Two instructions per binding (SASS `ARRIVES.LDGSTSBAR.64` plus the
/// increment) instead of one, and compute-sanitizer's synccheck (CUDA 13.0) reports each as
/// "Missing wait": prefer binding to the [`Barrier`] itself (`.noinc`) unless the expected
/// count cannot include the copies.
pub struct Uncounted<'b>(pub &'b Barrier);

impl Completion for Uncounted<'_> {
    #[inline(always)]
    unsafe fn bind_copies(&self) {
        // SAFETY: a `Barrier` is initialized (type invariant); its phase is open (caller).
        unsafe { ptx::cp_async_mbarrier_arrive(self.0.slot()) }
    }
}

/// Nothing per copy: committing the stage binds every copy issued since it was acquired
/// (`commit_group`, or `cp.async.mbarrier.arrive.noinc`).
impl<P: CpAsyncProducer> Completion for ProducerStage<'_, P> {
    #[inline(always)]
    unsafe fn bind_copies(&self) {}
}

/// No binding: the copies are tracked by the next binding this thread makes — a bound
/// `memcpy_async` (`cp.async.mbarrier.arrive` tracks *all* earlier copies of the thread), a
/// pipeline commit, or `cp.async.wait_group` / `wait_all`. Lets several copies share one
/// barrier arrival.
pub struct Unbound;

impl Completion for Unbound {
    #[inline(always)]
    unsafe fn bind_copies(&self) {}
}

/// What a bulk copy's completion is bound to (sm_90): an mbarrier whose current phase counts
/// the copy's bytes. Implemented by [`Barrier`], [`Arriving`], and the producer stage of a
/// pipeline whose mbarriers were fenced for the copy engine: a
/// [`BulkPipeline`](crate::pipeline::BulkPipeline)'s, or a
/// [`BlockPipeline`](crate::pipeline::BlockPipeline)'s of kind
/// [`CpAsyncAndBulk`](crate::pipeline::CpAsyncAndBulk).
#[cfg(target_feature = "sm_90")]
pub trait BulkCompletion {
    /// The mbarrier the bytes complete on.
    #[doc(hidden)]
    fn transaction_barrier(&self) -> Shared<Mbarrier>;

    /// Makes a copy's `bytes` expected on the barrier's current phase, before the copy is
    /// issued: `mbarrier.expect_tx` (the bytes alone), unless the binding says otherwise.
    ///
    /// # Safety
    /// The barrier is initialized and its current phase still open.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn expect(&self, bytes: u32) {
        // SAFETY: forwarded contract.
        unsafe { ptx::mbarrier_expect_tx(self.transaction_barrier(), bytes) }
    }
}

/// Binds a bulk or tensor copy to a [`Barrier`] as one of its arrivals, like a bound `cp.async`
/// copy: `mbarrier.arrive.expect_tx` of the copy's bytes (the issuing thread's arrival and the
/// expectation in one instruction, as CUTLASS's producers do), then the copy. The barrier's
/// expected count includes one arrival per copy bound this way; the issuing thread still makes
/// its own arrival too if the count says so.
#[cfg(target_feature = "sm_90")]
pub struct Arriving<'b>(pub &'b Barrier);

#[cfg(target_feature = "sm_90")]
impl BulkCompletion for Arriving<'_> {
    #[inline(always)]
    fn transaction_barrier(&self) -> Shared<Mbarrier> {
        self.0.slot()
    }

    #[inline(always)]
    unsafe fn expect(&self, bytes: u32) {
        // SAFETY: forwarded contract; the phase expects this arrival (the binding's contract).
        let _state = unsafe { ptx::mbarrier_arrive_expect_tx(self.0.slot(), bytes) };
    }
}

/// The barrier itself: the bytes are expected on its current phase, not counted as arrivals
/// (as libcu++'s `memcpy_async` does on sm_90), so the expected count is the threads that
/// arrive, as for plain synchronization.
#[cfg(target_feature = "sm_90")]
impl BulkCompletion for Barrier {
    #[inline(always)]
    fn transaction_barrier(&self) -> Shared<Mbarrier> {
        self.slot()
    }
}

/// A bulk or tensor copy into a stage completes on the stage's `full` barrier as expected
/// bytes (`mbarrier.expect_tx`, no arrival): in a [`BulkPipeline`] the producer's commit is
/// the phase's one arrival; in a [`BlockPipeline`] made with
/// [`BlockPipeline::init_all_threads_with_bulk`] the phase waits for the bytes as well as for
/// every producer's `cp.async` commit. Either way the issuing thread expects the bytes before
/// its own commit, so the phase cannot complete without them.
///
/// Only for the pipeline kinds whose mbarriers were fenced for the copy engine
/// ([`CopyEngineFenced`]): a stage of a [`BlockPipeline`] made by `init_all_threads` or
/// `init_partitioned` ([`CpAsyncOnly`](crate::pipeline::CpAsyncOnly)) is not one, so a bulk
/// copy into it does not compile (see [`BlockPipeline`]).
///
/// [`BulkPipeline`]: crate::pipeline::BulkPipeline
/// [`BlockPipeline`]: crate::pipeline::BlockPipeline
/// [`BlockPipeline::init_all_threads_with_bulk`]: crate::pipeline::BlockPipeline::init_all_threads_with_bulk
#[cfg(target_feature = "sm_90")]
impl<const STAGES: usize, K: CopyEngineFenced> BulkCompletion
    for ProducerStage<'_, BlockProducer<'_, STAGES, K>>
{
    #[inline(always)]
    fn transaction_barrier(&self) -> Shared<Mbarrier> {
        self.full_barrier()
    }
}

/// A tensor or bulk copy of this block's own (not multicast) into a stage of a
/// [`ClusterBulkPipeline`](crate::pipeline::ClusterBulkPipeline): its bytes expected on this
/// block's `full[s]`, as for a [`BulkPipeline`](crate::pipeline::BulkPipeline)'s stage.
#[cfg(target_feature = "sm_90")]
impl<const STAGES: usize> BulkCompletion for ProducerStage<'_, ClusterBulkProducer<'_, STAGES>> {
    #[inline(always)]
    fn transaction_barrier(&self) -> Shared<Mbarrier> {
        self.cluster_full_barrier()
    }
}
