//! The cluster form of the copy-engine pipeline: [`ClusterBulkPipeline`].

use super::{
    BlockConsumer, BlockPipeline, BulkOnly, BulkProducer, Consumer, ConsumerStage, GroupConsumer,
    HeldStage, Producer, ProducerStage, Token, empty, full, sealed,
};
use crate::cluster::{Cluster, MulticastGroup};
use crate::layout::{Mbarrier, PipelineSharedState};
use crate::ptx;
use crate::shared::Shared;

/// A [`BulkPipeline`](super::BulkPipeline) shared by the blocks of a multicast group of a
/// cluster (sm_90; CUTLASS's `PipelineTmaAsync` with a cluster shape): each block's producer fills its slice of the
/// stage in every block of the group at once ([`memcpy_async_tensor_multicast`]), so a stage
/// of a block is filled by all the group's producers, and may be refilled only when the
/// consumers of every block of the group have released it. So each block's `empty[s]`
/// expects `consumers` arrivals from each block of the group, and each consumer group arrives
/// on `empty[s]` of every block of the group
/// ([`ConsumerStage::consumer_release_for_group`]: thread `r` of the group on block `r`'s,
/// `mbarrier.arrive.release.cta.shared::cluster` — a consumer only read the stage, so nothing
/// needs publishing at cluster scope, and the cluster-scope release would cost a
/// `MEMBAR.ALL.GPU` per stage); `full[s]` stays local — one arrival,
/// this block's producer's, and the bytes of every slice that lands here.
///
/// The blocks of the group walk the same stages in the same order (same tiles of K, same
/// number of fills): a block that stopped early would leave the others' `full` waiting for
/// its slices. The first pass skips the empty wait as in a [`BlockPipeline`]; the
/// initialization ends with a cluster barrier, since other blocks' copies and arrivals reach
/// these mbarriers, and the blocks must sync the cluster again before any exits
/// ([`Cluster::sync`](crate::cluster::Cluster::sync)): the last arrivals on a peer's `empty`
/// may still be in flight.
///
/// [`memcpy_async_tensor_multicast`]: crate::memcpy_async::bulk::memcpy_async_tensor_multicast
pub struct ClusterBulkPipeline<const STAGES: usize> {
    ring: BlockPipeline<STAGES, BulkOnly>,
    group: MulticastGroup,
}

impl<const STAGES: usize> ClusterBulkPipeline<STAGES> {
    /// Collective over the cluster: thread 0 of each block initializes its mbarriers
    /// (`full`: one arrival; `empty`: `consumers` for each block of `group`), fences them for
    /// the copy engine at cluster scope (`fence.mbarrier_init.release.cluster`), and the
    /// cluster syncs (`barrier.cluster.arrive.release` / `wait.acquire`, every thread).
    ///
    /// # Safety
    /// 1. Every thread of every block of the cluster calls it (the cluster barrier), with the
    ///    same `barriers` and `consumers`. The groups are symmetric (block `y` is in `x`'s
    ///    group exactly when `x` is in `y`'s; they may differ from block to block, a row and
    ///    a column of a 2-D cluster say), each fill of a stage of `x` reaches every block of
    ///    `x`'s group (the union of its copies' receivers is the group), and the blocks of a
    ///    group walk the same number of stages.
    /// 2. As [`BulkPipeline::init`](super::BulkPipeline::init) (2) for each block, its consumers releasing with
    ///    [`ConsumerStage::consumer_release_for_group`] (every thread of a group, with its
    ///    index in the group: the first `group`'s highest rank + 1 of them arrive) or
    ///    [`ConsumerStage::consumer_release`] (each thread arrives on every block of the
    ///    group); [`GroupConsumer::skip`] only where every block of the group skips the same
    ///    stages (consumer groups taking turns in step across the blocks).
    /// 3. `barriers` is reserved for this pipeline while it is used in every block of the
    ///    cluster; `consumers * group.len()` is 1..2^20; the cluster syncs again before any
    ///    of its blocks exits.
    #[inline(always)]
    pub unsafe fn init(
        barriers: Shared<PipelineSharedState<STAGES>>,
        consumers: u32,
        cluster: Cluster,
        group: MulticastGroup,
    ) -> Self {
        // SAFETY: forwarded contract; the cluster barrier publishes the mbarriers to every
        // block that will copy into or arrive on them.
        unsafe {
            BlockPipeline::<STAGES, BulkOnly>::init_barriers(barriers, 1, consumers * group.len());
            // Thread 0's warp converges after its initialization: the barrier is `.aligned`.
            ptx::syncwarp();
            cluster.sync();
        }
        ClusterBulkPipeline {
            ring: BlockPipeline::ring(barriers),
            group,
        }
    }

    /// The producer and consumer sides.
    #[inline(always)]
    pub fn split(
        &mut self,
    ) -> (
        ClusterBulkProducer<'_, STAGES>,
        ClusterBulkConsumer<'_, STAGES>,
    ) {
        let group = self.group;
        let (ring_producer, ring_consumer) = self.ring.split();
        (
            ClusterBulkProducer {
                ring: ring_producer,
                group,
            },
            ClusterBulkConsumer {
                ring: ring_consumer,
                group,
            },
        )
    }
}

/// The producer side of a [`ClusterBulkPipeline`]: this block's one thread that issues the
/// copies, its slices multicast to the group.
pub struct ClusterBulkProducer<'p, const STAGES: usize> {
    ring: BulkProducer<'p, STAGES>,
    group: MulticastGroup,
}

/// The consumer side of a [`ClusterBulkPipeline`].
pub struct ClusterBulkConsumer<'p, const STAGES: usize> {
    ring: BlockConsumer<'p, STAGES>,
    group: MulticastGroup,
}

impl<const STAGES: usize> sealed::Sealed for ClusterBulkProducer<'_, STAGES> {}
impl<const STAGES: usize> sealed::Sealed for ClusterBulkConsumer<'_, STAGES> {}

impl<const STAGES: usize> Producer for ClusterBulkProducer<'_, STAGES> {
    /// As a [`BulkPipeline`](super::BulkPipeline)'s: this block's `empty[s]`, which collects
    /// the releases of the whole group.
    #[inline(always)]
    fn producer_acquire(&mut self) -> ProducerStage<'_, Self> {
        let index = self.ring.wait_until_free();
        ProducerStage { side: self, index }
    }

    /// `mbarrier.arrive` on this block's `full[s]`.
    #[inline(always)]
    fn commit(&mut self, token: Token) {
        self.ring.commit(token);
    }
}

impl<const STAGES: usize> ProducerStage<'_, ClusterBulkProducer<'_, STAGES>> {
    /// The blocks this stage is shared with.
    #[inline(always)]
    pub fn group(&self) -> MulticastGroup {
        self.side.group
    }

    #[inline(always)]
    pub(crate) fn cluster_full_barrier(&self) -> Shared<Mbarrier> {
        full(self.side.ring.barriers, self.index)
    }
}

impl<const STAGES: usize> Consumer for ClusterBulkConsumer<'_, STAGES> {
    /// This block's `full[s]`, as a [`BlockConsumer`].
    #[inline(always)]
    fn consumer_wait(&mut self) -> ConsumerStage<'_, Self> {
        let index = self.ring.state.index();
        // SAFETY: the mbarriers were initialized by `init` (type invariant).
        unsafe {
            ptx::mbarrier_wait_parity(full(self.ring.barriers, index), self.ring.state.phase())
        };
        ConsumerStage { side: self, index }
    }

    /// One arrival on `empty[s]` of every block of the group, this one's included.
    #[inline(always)]
    fn release(&mut self, _: Token) {
        let local = empty(self.ring.barriers, self.ring.state.index());
        let mut rank = 0;
        while rank < 16 {
            if self.group.contains(rank) {
                // SAFETY: block `rank` of the group expects one arrival per consumer per
                // phase on its `empty[s]` (init contract) and has not exited (the closing
                // cluster sync).
                unsafe { ptx::mbarrier_arrive_cluster_cta(ptx::mapa(local, rank)) };
            }
            rank += 1;
        }
        self.ring.state.advance();
    }
}

impl<const STAGES: usize> GroupConsumer for ClusterBulkConsumer<'_, STAGES> {
    /// As a [`BlockConsumer`]'s: register arithmetic only. Sound when every block of the
    /// multicast group skips the same stages (its consumer groups take the same turns: a
    /// ping-pong walk of the same tiles), so that the group that reads a stage releases it in
    /// every block that fills it.
    #[inline(always)]
    fn skip(&mut self, stages: u32) {
        self.ring.skip(stages);
    }

    #[inline(always)]
    fn consumer_wait_held(&mut self) -> HeldStage {
        self.ring.consumer_wait_held()
    }

    /// Thread `r` of the group arrives on block `r`'s `empty[s]`, for each rank `r` of the
    /// multicast group.
    #[inline(always)]
    fn consumer_release_held(&mut self, stage: HeldStage, group_thread: u32) {
        self.arrive_for_group(stage.index, group_thread);
    }

    /// Thread `r` of the group arrives on block `r`'s `empty[s]`, for each rank `r` of the
    /// multicast group.
    #[inline(always)]
    fn release_for_group(&mut self, group_thread: u32, _: Token) {
        self.arrive_for_group(self.ring.state.index(), group_thread);
        self.ring.state.advance();
    }
}

impl<const STAGES: usize> ClusterBulkConsumer<'_, STAGES> {
    /// Thread `group_thread` of a consumer group arrives on `empty[index]` of block
    /// `group_thread`, if that block is in the multicast group.
    #[inline(always)]
    fn arrive_for_group(&self, index: u32, group_thread: u32) {
        if self.group.contains(group_thread) {
            let local = empty(self.ring.barriers, index);
            // SAFETY: as in `release`, one arrival per group.
            unsafe { ptx::mbarrier_arrive_cluster_cta(ptx::mapa(local, group_thread)) };
        }
    }
}
