//! Pipelines: a ring of `STAGES` shared-memory buffers that producers fill with async copies
//! while consumers read older ones — `cuda::pipeline`, with its four operations:
//!
//! | operation | [`ThreadPipeline`] (thread scope) | [`BlockPipeline`] (block scope) | `BulkPipeline` (sm_90, copy engine) | `ClusterBulkPipeline` (sm_90, multicast) |
//! |---|---|---|---|---|
//! | `producer_acquire` | nothing to wait for | loop on parity wait of `empty[s]` (none on the first pass) | as block scope | as block scope (this block's `empty[s]`, which every receiving block's consumers release) |
//! | copies bound to the stage | `cp.async` | `cp.async` | `mbarrier.expect_tx` + `cp.async.bulk` on `full[s]` | as bulk, or `expect_tx` of every receiver's slice + `.multicast::cluster` |
//! | `producer_commit` | `cp.async.commit_group` | `cp.async.mbarrier.arrive.noinc` on `full[s]` | `mbarrier.arrive` on `full[s]` | as bulk |
//! | `consumer_wait` | `cp.async.wait_group N` | loop on parity wait of `full[s]` | as block scope | as block scope |
//! | `consumer_release` | nothing | `mbarrier.arrive` on `empty[s]` | as block scope | `mapa` + `mbarrier.arrive.release.cta.shared::cluster` on `empty[s]` of each block of the group |
//!
//! A pipeline is [`split`](ThreadPipeline::split) into a producer and a consumer side, so a
//! thread can fill one stage while it holds another for reading (the point of a pipeline),
//! and a warp-specialized kernel gives each role only its side.
//! [`Producer::producer_acquire`] returns a [`ProducerStage`]: copies go to its buffer
//! ([`ProducerStage::index`]) and are bound to it by passing the stage to
//! [`memcpy_async`](crate::memcpy_async); [`ProducerStage::producer_commit`] (or dropping the
//! stage) commits. [`Consumer::consumer_wait`] returns a [`ConsumerStage`] whose buffer may be
//! read until [`ConsumerStage::consumer_release`] (or its drop). A stage borrows its side
//! mutably, so a side cannot open a second stage before closing the first, and stages are
//! committed and released in order.
//!
//! Zero cost: indices and phases live in registers; the thread pipeline's wait count is a
//! run-time value that folds to the `wait_group` immediate when the loop commits once per
//! iteration (commit even when nothing is left to copy: an empty group is free). The lowering
//! tests check both.

use crate::layout::{Mbarrier, PipelineSharedState};
use crate::pipeline_state::PipelineState;
use crate::ptx;
use crate::shared::Shared;
use core::cell::Cell;
use core::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
    /// Makes the commit/release hooks uncallable outside this module.
    pub struct Token;
}
use sealed::Token;

/// The producer side of a pipeline.
pub trait Producer: sealed::Sealed + Sized {
    /// Waits until the next stage's buffer is free and opens it for filling
    /// (`producer_acquire`).
    fn producer_acquire(&mut self) -> ProducerStage<'_, Self>;

    #[doc(hidden)]
    fn commit(&mut self, _: Token);
}

/// A producer whose commit tracks this thread's `cp.async` copies (an async-group, or a
/// `cp.async.mbarrier.arrive`): its stages complete [`memcpy_async`](crate::memcpy_async)
/// copies. A [`BulkPipeline`]'s producer is not one — its stage completes only on bytes
/// expected by bulk copies — so `cp.async` copies cannot be bound to it.
pub trait CpAsyncProducer: Producer {}

/// The consumer side of a pipeline.
pub trait Consumer: sealed::Sealed + Sized {
    /// Waits until the oldest committed stage has landed and opens it for reading
    /// (`consumer_wait`).
    fn consumer_wait(&mut self) -> ConsumerStage<'_, Self>;

    #[doc(hidden)]
    fn release(&mut self, _: Token);
}

/// A stage being filled: its buffer index, and the binding for copies into it.
#[must_use = "copies into a stage are committed when it is committed or dropped"]
pub struct ProducerStage<'p, P: Producer> {
    side: &'p mut P,
    index: u32,
}

impl<P: Producer> ProducerStage<'_, P> {
    /// The buffer to fill, `0..STAGES`.
    #[inline(always)]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Commits the copies issued for this stage (`producer_commit`): the same as dropping it.
    #[inline(always)]
    pub fn producer_commit(self) {}
}

impl<P: Producer> Drop for ProducerStage<'_, P> {
    #[inline(always)]
    fn drop(&mut self) {
        self.side.commit(Token);
    }
}

/// A stage whose copies have landed: its buffer may be read until it is released.
#[must_use = "a stage is released when it is released or dropped"]
pub struct ConsumerStage<'p, C: Consumer> {
    side: &'p mut C,
    index: u32,
}

impl<C: Consumer> ConsumerStage<'_, C> {
    /// The buffer to read, `0..STAGES`.
    #[inline(always)]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Hands the buffer back to the producers (`consumer_release`): the same as dropping it.
    #[inline(always)]
    pub fn consumer_release(self) {}
}

impl<C: Consumer> Drop for ConsumerStage<'_, C> {
    #[inline(always)]
    fn drop(&mut self) {
        self.side.release(Token);
    }
}

/// A thread-scope pipeline (`cuda::pipeline<cuda::thread_scope_thread>`): async-groups, no
/// shared state. Each thread waits only for its own copies, so when threads read data other
/// threads copied, a block barrier (`barrier.sync`) must follow
/// [`Consumer::consumer_wait`], and one must separate the last reads of a buffer from its
/// refill.
///
/// The state is one ring position (the next stage to fill) and the number of committed,
/// unreleased stages; the consumer's stage is derived from them, so a loop that releases a
/// stage and refills it sees one index, not two that the compiler cannot prove equal.
pub struct ThreadPipeline<const STAGES: usize> {
    head: Cell<PipelineState<STAGES>>,
    in_flight: Cell<u32>,
}

impl<const STAGES: usize> ThreadPipeline<STAGES> {
    const VALID: () = assert!(
        STAGES >= 1 && STAGES <= 8,
        "a thread-scope pipeline has 1..=8 stages (cp.async.wait_group immediates)"
    );

    /// An empty pipeline. Costs nothing: its state lives in registers.
    #[inline(always)]
    pub fn new() -> Self {
        let () = Self::VALID;
        ThreadPipeline {
            head: Cell::new(PipelineState::producer_start()),
            in_flight: Cell::new(0),
        }
    }

    /// The producer and consumer sides.
    #[inline(always)]
    pub fn split(&mut self) -> (ThreadProducer<'_, STAGES>, ThreadConsumer<'_, STAGES>) {
        let this = &*self;
        (
            ThreadProducer { pipeline: this },
            ThreadConsumer { pipeline: this },
        )
    }
}

impl<const STAGES: usize> Default for ThreadPipeline<STAGES> {
    fn default() -> Self {
        Self::new()
    }
}

/// The producer side of a [`ThreadPipeline`].
pub struct ThreadProducer<'p, const STAGES: usize> {
    pipeline: &'p ThreadPipeline<STAGES>,
}

/// The consumer side of a [`ThreadPipeline`].
pub struct ThreadConsumer<'p, const STAGES: usize> {
    pipeline: &'p ThreadPipeline<STAGES>,
}

impl<const STAGES: usize> sealed::Sealed for ThreadProducer<'_, STAGES> {}
impl<const STAGES: usize> sealed::Sealed for ThreadConsumer<'_, STAGES> {}

impl<const STAGES: usize> Producer for ThreadProducer<'_, STAGES> {
    /// Nothing to wait for: the thread's own program order frees the buffer. Acquiring while
    /// all `STAGES` are committed and unreleased traps.
    #[inline(always)]
    fn producer_acquire(&mut self) -> ProducerStage<'_, Self> {
        if self.pipeline.in_flight.get() >= STAGES as u32 {
            ptx::trap();
        }
        let index = self.pipeline.head.get().index();
        ProducerStage { side: self, index }
    }

    /// `cp.async.commit_group`.
    #[inline(always)]
    fn commit(&mut self, _: Token) {
        ptx::commit_group();
        let p = self.pipeline;
        p.in_flight.set(p.in_flight.get() + 1);
        let mut head = p.head.get();
        head.advance();
        p.head.set(head);
    }
}

impl<const STAGES: usize> CpAsyncProducer for ThreadProducer<'_, STAGES> {}

impl<const STAGES: usize> Consumer for ThreadConsumer<'_, STAGES> {
    /// `cp.async.wait_group (committed stages - 1)`: this thread's copies of the oldest stage
    /// are complete. Waiting with nothing committed traps.
    #[inline(always)]
    fn consumer_wait(&mut self) -> ConsumerStage<'_, Self> {
        let in_flight = self.pipeline.in_flight.get();
        if in_flight == 0 {
            ptx::trap();
        }
        ptx::wait_group(in_flight - 1);
        // The oldest committed stage: `in_flight` stages behind the head, around the ring.
        let back = self.pipeline.head.get().index() + STAGES as u32 - in_flight;
        let index = if back >= STAGES as u32 {
            back - STAGES as u32
        } else {
            back
        };
        ConsumerStage { side: self, index }
    }

    #[inline(always)]
    fn release(&mut self, _: Token) {
        let p = self.pipeline;
        p.in_flight.set(p.in_flight.get() - 1);
    }
}

/// A block-scope pipeline (`cuda::pipeline<cuda::thread_scope_block>`): per stage a `full` and
/// an `empty` mbarrier in shared memory ([`PipelineSharedState`]).
///
/// Producers commit with `cp.async.mbarrier.arrive.noinc` on `full[s]`, so the phase completes
/// once every producer's copies have landed; consumers wait on `full[s]`'s phase parity, read,
/// and arrive on `empty[s]`, which producers wait on before refilling. No block barrier is
/// needed, and producers and consumers may be different threads (warp specialization).
///
/// The first pass over the ring does not wait on `empty` at all: the buffers start free. Not
/// CUTLASS's wait for the phase before phase 0, after which racecheck reports every refill and
/// read as a race (docs/design.md: The first pass skips the empty wait).
///
/// # What completes a stage: the kind `K`
///
/// `K` ([`FullArrival`]) is fixed by the constructor and says what completes `full[s]`: the
/// producers' `cp.async` copies alone ([`CpAsyncOnly`], the default), those and the bytes of
/// bulk or tensor copies ([`CpAsyncAndBulk`], sm_90), or bulk copies alone ([`BulkOnly`]: a
/// [`BulkPipeline`]). The copy engine may only complete an mbarrier whose initialization was
/// fenced for it (`fence.mbarrier_init`), which only the last two kinds' constructors do; so a
/// bulk or tensor copy into a stage of a `CpAsyncOnly` pipeline does not compile — its stage is
/// no [`BulkCompletion`](crate::memcpy_async::completion::BulkCompletion):
///
/// ```compile_fail,E0277
/// # #![no_std]
/// # use gpu::layout::PipelineSharedState;
/// # use gpu::memcpy_async::{AlignedSize, bulk::memcpy_async_bulk};
/// # use gpu::pipeline::{BlockPipeline, Producer};
/// # use gpu::shared::Shared;
/// unsafe fn fill(barriers: Shared<PipelineSharedState<2>>, dst: Shared<u8>, src: *const u8) {
///     // Not fenced for the copy engine: a `BlockPipeline<2, CpAsyncOnly>`.
///     let mut pipeline = unsafe { BlockPipeline::<2>::init_all_threads(barriers, 32) };
///     let (mut producer, _consumer) = pipeline.split();
///     let stage = producer.producer_acquire();
///     // error[E0277]: the mbarriers of a `CpAsyncOnly` block pipeline are not fenced for
///     // the copy engine
///     unsafe { memcpy_async_bulk(dst, src, AlignedSize::of(4096), &stage, None) };
/// }
/// ```
///
/// The same code with `BlockPipeline::<2, CpAsyncAndBulk>::init_all_threads_with_bulk`
/// ([`BlockPipeline::init_all_threads_with_bulk`]) compiles. The kind is a type only: the
/// pipeline is the same registers and the same instructions whatever it is.
pub struct BlockPipeline<const STAGES: usize, K: FullArrival = CpAsyncOnly> {
    barriers: Shared<PipelineSharedState<STAGES>>,
    producer: PipelineState<STAGES>,
    consumer: PipelineState<STAGES>,
    /// Stages the producer side has not filled yet: their acquire needs no wait.
    unfilled: u32,
    kind: PhantomData<K>,
}

impl<const STAGES: usize> BlockPipeline<STAGES, CpAsyncOnly> {
    /// Collective: every thread of the block is both producer and consumer (`threads` =
    /// the block's size). Thread 0 initializes the mbarriers; then the block syncs.
    ///
    /// # Safety
    /// 1. Every thread of the block calls it with the same arguments, and `threads` is the
    ///    number of threads in the block.
    /// 2. `barriers` is reserved for this pipeline while it is used.
    #[inline(always)]
    pub unsafe fn init_all_threads(
        barriers: Shared<PipelineSharedState<STAGES>>,
        threads: u32,
    ) -> Self {
        // SAFETY: forwarded contract; every thread produces and consumes.
        unsafe { Self::init_partitioned(barriers, threads, threads) }
    }

    /// Collective: `producers` threads fill stages and `consumers` threads read them (for a
    /// warp-specialized kernel with one producer warp, `producers = 32`). Thread 0
    /// initializes the mbarriers; then the block syncs.
    ///
    /// # Safety
    /// 1. Every thread of the block calls it with the same arguments.
    /// 2. Exactly `producers` threads use the producer side and `consumers` threads the
    ///    consumer side, once per stage each, in turn (a thread may use both).
    /// 3. `barriers` is reserved for this pipeline while it is used; both counts are 1..2^20.
    #[inline(always)]
    pub unsafe fn init_partitioned(
        barriers: Shared<PipelineSharedState<STAGES>>,
        producers: u32,
        consumers: u32,
    ) -> Self {
        // SAFETY: forwarded contract; only cp.async (the generic proxy's view of the
        // mbarriers) completes `full`, so no proxy fence is needed.
        unsafe { Self::init_rings(barriers, producers, consumers) }
    }
}

#[cfg(target_feature = "sm_90")]
impl<const STAGES: usize> BlockPipeline<STAGES, CpAsyncAndBulk> {
    /// [`BlockPipeline::init_all_threads`] for a pipeline whose stages one thread also fills
    /// with bulk or tensor copies (sm_90): the copies' bytes complete on `full` beside every
    /// thread's `cp.async` arrival, so thread 0 fences the initialization for the copy engine
    /// (`fence.mbarrier_init`). A stage acquired from it binds such a copy as the phase's
    /// expected bytes ([`BulkCompletion`](crate::memcpy_async::completion::BulkCompletion)).
    ///
    /// # Safety
    /// As [`BlockPipeline::init_all_threads`].
    #[inline(always)]
    pub unsafe fn init_all_threads_with_bulk(
        barriers: Shared<PipelineSharedState<STAGES>>,
        threads: u32,
    ) -> Self {
        // SAFETY: forwarded contract; the copy engine completes `full` too.
        unsafe { Self::init_rings(barriers, threads, threads) }
    }
}

impl<const STAGES: usize, K: FullArrival> BlockPipeline<STAGES, K> {
    /// Thread 0 initializes `full` (`full_arrivals` per phase) and `empty` (`consumers`),
    /// fencing the initialization for the copy engine when it will complete `full`
    /// ([`FullArrival`] `K`); then the block syncs.
    ///
    /// # Safety
    /// As [`BlockPipeline::init_partitioned`], with `full_arrivals` for `producers`.
    #[inline(always)]
    unsafe fn init_rings(
        barriers: Shared<PipelineSharedState<STAGES>>,
        full_arrivals: u32,
        consumers: u32,
    ) -> Self {
        // SAFETY: forwarded contract.
        unsafe { Self::init_barriers(barriers, full_arrivals, consumers) };
        ptx::barrier_sync();
        Self::ring(barriers)
    }

    /// Thread 0's half of [`BlockPipeline::init_rings`]: the mbarriers, and the fence for the
    /// copy engine. Whoever calls it syncs the threads that will use them before they do.
    ///
    /// # Safety
    /// As [`BlockPipeline::init_rings`].
    #[inline(always)]
    unsafe fn init_barriers(
        barriers: Shared<PipelineSharedState<STAGES>>,
        full_arrivals: u32,
        empty_arrivals: u32,
    ) {
        if ptx::thread_idx_x() == 0 {
            for stage in 0..STAGES as u32 {
                // SAFETY: one thread initializes each mbarrier; the caller's sync publishes
                // them.
                unsafe {
                    ptx::mbarrier_init(full(barriers, stage), full_arrivals);
                    ptx::mbarrier_init(empty(barriers, stage), empty_arrivals);
                }
            }
            #[cfg(target_feature = "sm_90")]
            if K::FOR_COPY_ENGINE {
                ptx::fence_mbarrier_init();
            }
        }
    }

    /// The ring over initialized barriers, every stage free.
    #[inline(always)]
    fn ring(barriers: Shared<PipelineSharedState<STAGES>>) -> Self {
        BlockPipeline {
            barriers,
            producer: PipelineState::producer_start(),
            consumer: PipelineState::consumer_start(),
            unfilled: STAGES as u32,
            kind: PhantomData,
        }
    }

    /// The producer and consumer sides.
    #[inline(always)]
    pub fn split(&mut self) -> (BlockProducer<'_, STAGES, K>, BlockConsumer<'_, STAGES>) {
        (
            BlockProducer {
                barriers: self.barriers,
                state: &mut self.producer,
                unfilled: &mut self.unfilled,
                kind: PhantomData,
            },
            BlockConsumer {
                barriers: self.barriers,
                state: &mut self.consumer,
            },
        )
    }
}

/// `full[stage]`: the first `STAGES` mbarriers of the shared state.
#[inline(always)]
fn full<const STAGES: usize>(
    barriers: Shared<PipelineSharedState<STAGES>>,
    stage: u32,
) -> Shared<Mbarrier> {
    barriers.cast::<Mbarrier>().add(stage)
}

/// `empty[stage]`: the `STAGES` mbarriers after `full`.
#[inline(always)]
fn empty<const STAGES: usize>(
    barriers: Shared<PipelineSharedState<STAGES>>,
    stage: u32,
) -> Shared<Mbarrier> {
    barriers.cast::<Mbarrier>().add(STAGES as u32 + stage)
}

/// The kind of a [`BlockPipeline`] (and of its [`BlockProducer`]): what completes `full[s]`,
/// fixed when the mbarriers are initialized — how a producer's commit arrives on it, and
/// whether the copy engine's bytes count too (then the initialization is fenced for it).
///
/// | kind | made by | commit | bulk / tensor copies into a stage |
/// |---|---|---|---|
/// | [`CpAsyncOnly`] | [`BlockPipeline::init_all_threads`], [`BlockPipeline::init_partitioned`] | `cp.async.mbarrier.arrive.noinc` | do not compile |
/// | [`CpAsyncAndBulk`] (sm_90) | [`BlockPipeline::init_all_threads_with_bulk`] | `cp.async.mbarrier.arrive.noinc` | their bytes complete `full[s]` too |
/// | [`BulkOnly`] (sm_90) | [`BulkPipeline::init`] | `mbarrier.arrive` (one producer) | the only copies (no `cp.async`) |
pub trait FullArrival: sealed::Sealed {
    /// Whether the copy engine completes `full` too, so that its initialization is fenced for
    /// it (`fence.mbarrier_init`).
    #[doc(hidden)]
    const FOR_COPY_ENGINE: bool;

    #[doc(hidden)]
    /// # Safety
    /// `full` is initialized and its phase expects this arrival.
    unsafe fn arrive(full: Shared<Mbarrier>);
}

/// A [`FullArrival`] kind whose `full` barriers were fenced for the copy engine when they were
/// initialized (`fence.mbarrier_init`, sm_90): a stage of such a pipeline binds bulk and tensor
/// copies ([`BulkCompletion`](crate::memcpy_async::completion::BulkCompletion)).
#[cfg(target_feature = "sm_90")]
#[diagnostic::on_unimplemented(
    message = "the mbarriers of a `{Self}` block pipeline are not fenced for the copy engine",
    label = "a bulk or tensor copy cannot complete on this stage",
    note = "make the pipeline with `BlockPipeline::<STAGES, CpAsyncAndBulk>::init_all_threads_with_bulk` or `BulkPipeline::init`"
)]
pub trait CopyEngineFenced: FullArrival {}

/// [`BlockPipeline`]'s default kind: `cp.async.mbarrier.arrive.noinc`, an arrival when this
/// thread's `cp.async` copies land; nothing else completes `full`, so the mbarriers are not
/// fenced for the copy engine and bulk or tensor copies cannot be bound to a stage.
pub enum CpAsyncOnly {}

impl sealed::Sealed for CpAsyncOnly {}
impl FullArrival for CpAsyncOnly {
    const FOR_COPY_ENGINE: bool = false;

    #[inline(always)]
    unsafe fn arrive(full: Shared<Mbarrier>) {
        // SAFETY: forwarded contract.
        unsafe { ptx::cp_async_mbarrier_arrive_noinc(full) }
    }
}

/// The kind made by [`BlockPipeline::init_all_threads_with_bulk`] (sm_90): commits arrive as
/// for [`CpAsyncOnly`], and `full` also waits for the bytes that bulk or tensor copies into the
/// stage expected; the mbarriers are fenced for the copy engine.
#[cfg(target_feature = "sm_90")]
pub enum CpAsyncAndBulk {}

#[cfg(target_feature = "sm_90")]
impl sealed::Sealed for CpAsyncAndBulk {}
#[cfg(target_feature = "sm_90")]
impl FullArrival for CpAsyncAndBulk {
    const FOR_COPY_ENGINE: bool = true;

    #[inline(always)]
    unsafe fn arrive(full: Shared<Mbarrier>) {
        // SAFETY: forwarded contract.
        unsafe { ptx::cp_async_mbarrier_arrive_noinc(full) }
    }
}
#[cfg(target_feature = "sm_90")]
impl CopyEngineFenced for CpAsyncAndBulk {}

/// [`BulkPipeline`]'s kind: a plain `mbarrier.arrive`; the phase also waits for the bytes its
/// bulk copies expected. The mbarriers are fenced for the copy engine.
#[cfg(target_feature = "sm_90")]
pub enum BulkOnly {}

#[cfg(target_feature = "sm_90")]
impl sealed::Sealed for BulkOnly {}
#[cfg(target_feature = "sm_90")]
impl FullArrival for BulkOnly {
    const FOR_COPY_ENGINE: bool = true;

    #[inline(always)]
    unsafe fn arrive(full: Shared<Mbarrier>) {
        // SAFETY: forwarded contract.
        let _ = unsafe { ptx::mbarrier_arrive(full) };
    }
}
#[cfg(target_feature = "sm_90")]
impl CopyEngineFenced for BulkOnly {}

/// The producer side of a [`BlockPipeline`] of kind `K` (with [`BulkOnly`], of a
/// [`BulkPipeline`]).
pub struct BlockProducer<'p, const STAGES: usize, K: FullArrival = CpAsyncOnly> {
    barriers: Shared<PipelineSharedState<STAGES>>,
    state: &'p mut PipelineState<STAGES>,
    unfilled: &'p mut u32,
    kind: PhantomData<K>,
}

/// The consumer side of a [`BlockPipeline`] or a [`BulkPipeline`].
pub struct BlockConsumer<'p, const STAGES: usize> {
    barriers: Shared<PipelineSharedState<STAGES>>,
    state: &'p mut PipelineState<STAGES>,
}

impl<const STAGES: usize, K: FullArrival> sealed::Sealed for BlockProducer<'_, STAGES, K> {}
impl<const STAGES: usize> sealed::Sealed for BlockConsumer<'_, STAGES> {}

impl<const STAGES: usize, K: FullArrival> Producer for BlockProducer<'_, STAGES, K> {
    /// Waits for the parity of `empty[s]` the producer expects, except on the first pass
    /// over the ring, when the buffers are free (see [`BlockPipeline`]).
    #[inline(always)]
    fn producer_acquire(&mut self) -> ProducerStage<'_, Self> {
        let index = self.wait_until_free();
        ProducerStage { side: self, index }
    }

    /// `K`'s arrival on `full[s]` (`cp.async.mbarrier.arrive.noinc`: arrives when this
    /// thread's copies land; bulk: `mbarrier.arrive`, the bytes being expected already).
    #[inline(always)]
    fn commit(&mut self, _: Token) {
        // SAFETY: `full[s]` expects one arrival per producer per phase (init contract).
        unsafe { K::arrive(full(self.barriers, self.state.index())) };
        self.state.advance();
    }
}

impl<const STAGES: usize, K: FullArrival> BlockProducer<'_, STAGES, K> {
    /// The next stage's index, once its buffer is free: at once on the first pass over the
    /// ring, else after the parity wait on `empty[s]`.
    #[inline(always)]
    fn wait_until_free(&mut self) -> u32 {
        let index = self.state.index();
        if *self.unfilled > 0 {
            *self.unfilled -= 1;
        } else {
            // SAFETY: the mbarriers were initialized by `init_*` (type invariant).
            unsafe { ptx::mbarrier_wait_parity(empty(self.barriers, index), self.state.phase()) };
        }
        index
    }
}

impl<const STAGES: usize> CpAsyncProducer for BlockProducer<'_, STAGES, CpAsyncOnly> {}
#[cfg(target_feature = "sm_90")]
impl<const STAGES: usize> CpAsyncProducer for BlockProducer<'_, STAGES, CpAsyncAndBulk> {}

impl<const STAGES: usize> Consumer for BlockConsumer<'_, STAGES> {
    /// Waits for the parity of `full[s]` the consumer expects.
    #[inline(always)]
    fn consumer_wait(&mut self) -> ConsumerStage<'_, Self> {
        let index = self.state.index();
        // SAFETY: the mbarriers were initialized by `init_*` (type invariant).
        unsafe { ptx::mbarrier_wait_parity(full(self.barriers, index), self.state.phase()) };
        ConsumerStage { side: self, index }
    }

    /// `mbarrier.arrive` on `empty[s]`.
    #[inline(always)]
    fn release(&mut self, _: Token) {
        // SAFETY: `empty[s]` expects one arrival per consumer per phase (init contract).
        // Producers wait by parity: the state is not needed.
        let _ = unsafe { ptx::mbarrier_arrive(empty(self.barriers, self.state.index())) };
        self.state.advance();
    }
}

/// The consumer side of a ring whose stages groups of threads read together (a warpgroup's
/// `wgmma`), each group releasing a stage once for all its threads, and whose groups may take
/// turns over the ring: a [`BlockConsumer`] (one arrival on this block's `empty[s]`) or a
/// [`ClusterBulkConsumer`] (one arrival on `empty[s]` of each block that fills the stage).
pub trait GroupConsumer: Consumer {
    /// Moves this consumer's ring position past `stages` stages without waiting for or
    /// releasing them: stages that another group of consumers reads and releases (the
    /// alternate tiles of a ping-pong kernel, whose consumer groups share one ring). Register
    /// arithmetic only.
    fn skip(&mut self, stages: u32);

    /// Waits for the next stage as [`Consumer::consumer_wait`] does and moves this consumer
    /// past it at once, handing the stage out as a [`HeldStage`]: for reads that outlive the
    /// wait for the next stage (multiplies in flight), released later with
    /// [`consumer_release_held`](Self::consumer_release_held).
    fn consumer_wait_held(&mut self) -> HeldStage;

    /// Releases a held stage for the group, as
    /// [`ConsumerStage::consumer_release_for_group`] does: every thread of the group calls it
    /// with its index in the group, once the group's reads of the stage are complete. Held
    /// stages are released in the order they were waited for.
    fn consumer_release_held(&mut self, stage: HeldStage, group_thread: u32);

    #[doc(hidden)]
    fn release_for_group(&mut self, group_thread: u32, _: Token);
}

/// A stage a group of consumers waited for and may still read
/// ([`GroupConsumer::consumer_wait_held`]): its buffer index, until it is released with
/// [`GroupConsumer::consumer_release_held`]. Only a consumer makes one; dropping one
/// unreleased leaves its producer waiting for the stage.
#[must_use = "a held stage must be released, or its producer waits for it forever"]
#[derive(Debug)]
pub struct HeldStage {
    index: u32,
}

impl HeldStage {
    /// The buffer to read, `0..STAGES`.
    #[inline(always)]
    pub fn index(&self) -> u32 {
        self.index
    }
}

impl<const STAGES: usize> GroupConsumer for BlockConsumer<'_, STAGES> {
    #[inline(always)]
    fn skip(&mut self, stages: u32) {
        *self.state = self.state.advanced_by(stages);
    }

    #[inline(always)]
    fn consumer_wait_held(&mut self) -> HeldStage {
        let index = self.state.index();
        // SAFETY: the mbarriers were initialized by `init_*` (type invariant).
        unsafe { ptx::mbarrier_wait_parity(full(self.barriers, index), self.state.phase()) };
        self.state.advance();
        HeldStage { index }
    }

    /// Thread 0 of the group arrives on `empty[s]`.
    #[inline(always)]
    fn consumer_release_held(&mut self, stage: HeldStage, group_thread: u32) {
        if group_thread == 0 {
            // SAFETY: `empty[s]` expects one arrival per group per phase (init contract);
            // held stages are released in ring order.
            let _ = unsafe { ptx::mbarrier_arrive(empty(self.barriers, stage.index)) };
        }
    }

    /// Thread 0 of the group arrives on `empty[s]`.
    #[inline(always)]
    fn release_for_group(&mut self, group_thread: u32, _: Token) {
        if group_thread == 0 {
            // SAFETY: `empty[s]` expects one arrival per group per phase (init contract).
            let _ = unsafe { ptx::mbarrier_arrive(empty(self.barriers, self.state.index())) };
        }
        self.state.advance();
    }
}

impl<C: GroupConsumer> ConsumerStage<'_, C> {
    /// Releases the stage for a group of threads that read it together and whose reads are
    /// complete for the whole group by now (a warpgroup after the `wgmma.wait_group` of its
    /// multiply): every thread of the group calls it with its index in the group, so each
    /// one's ring position advances, and only the few the side names arrive — which the
    /// pipeline's `consumers` count as one group. A [`BlockConsumer`]: thread 0, one
    /// `mbarrier.arrive` on `empty[s]`; a [`ClusterBulkConsumer`]: thread `r` on block `r`'s
    /// `empty[s]` for each rank `r` of the multicast group. Nothing in the other threads.
    #[inline(always)]
    pub fn consumer_release_for_group(self, group_thread: u32) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so `side` is read out once and used once.
        let side: &mut C = unsafe { core::ptr::read(&this.side) };
        side.release_for_group(group_thread, Token);
    }
}

/// A pipeline filled by the copy engine (sm_90; CUTLASS's `PipelineTmaAsync`): per stage a
/// `full` mbarrier that one producer thread arrives on once per fill, completed by the bytes of
/// its bulk copies ([`memcpy_async_bulk`](crate::memcpy_async::bulk::memcpy_async_bulk) bound to
/// the [`ProducerStage`]: `mbarrier.expect_tx` + `cp.async.bulk`; the commit is the arrival), and
/// an `empty` mbarrier released by the consumers — a [`BlockPipeline`] of kind [`BulkOnly`],
/// its ring, first pass and consumer side the same.
#[cfg(target_feature = "sm_90")]
pub type BulkPipeline<const STAGES: usize> = BlockPipeline<STAGES, BulkOnly>;

/// The producer side of a [`BulkPipeline`]: the one thread that issues the bulk copies.
#[cfg(target_feature = "sm_90")]
pub type BulkProducer<'p, const STAGES: usize> = BlockProducer<'p, STAGES, BulkOnly>;

#[cfg(target_feature = "sm_90")]
impl<const STAGES: usize> BlockPipeline<STAGES, BulkOnly> {
    /// Collective: thread 0 initializes the mbarriers (`full`: one arrival, the producer's;
    /// `empty`: `consumers` arrivals), fences the initialization for the copy engine, and the
    /// block syncs: a [`BulkPipeline`].
    ///
    /// # Safety
    /// 1. Every thread of the block calls it with the same arguments.
    /// 2. Exactly one thread uses the producer side. Each stage's every fill is released by
    ///    exactly `consumers` arrivals: `consumers` threads each releasing it
    ///    ([`ConsumerStage::consumer_release`]), or `consumers` groups each releasing it once for
    ///    all its threads ([`ConsumerStage::consumer_release_for_group`], every thread of the
    ///    group waiting for the stage and calling it); a consumer may [`BlockConsumer::skip`]
    ///    fills that other consumers release, but never wait more than one ring phase ahead of
    ///    the producer (the waits are by parity). All in ring order (a thread may use both
    ///    sides).
    /// 3. `barriers` is reserved for this pipeline while it is used; `consumers` is 1..2^20.
    #[inline(always)]
    pub unsafe fn init(barriers: Shared<PipelineSharedState<STAGES>>, consumers: u32) -> Self {
        // SAFETY: forwarded contract.
        unsafe { Self::init_rings(barriers, 1, consumers) }
    }
}

/// The stage's `full[s]`, which a bulk or tensor copy into it expects its bytes on
/// ([`BulkCompletion`](crate::memcpy_async::completion::BulkCompletion)): only for the kinds
/// whose mbarriers were fenced for the copy engine.
#[cfg(target_feature = "sm_90")]
impl<const STAGES: usize, K: CopyEngineFenced> ProducerStage<'_, BlockProducer<'_, STAGES, K>> {
    #[inline(always)]
    pub(crate) fn full_barrier(&self) -> Shared<Mbarrier> {
        full(self.side.barriers, self.index)
    }
}

#[cfg(target_feature = "sm_90")]
mod cluster;
#[cfg(target_feature = "sm_90")]
pub use cluster::{ClusterBulkConsumer, ClusterBulkPipeline, ClusterBulkProducer};
