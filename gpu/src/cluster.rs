//! Thread block clusters (sm_90): [`Cluster`] (this block's rank, the cluster's size, the
//! split cluster barrier), [`Remote<T>`] (a typed handle to the same shared object in
//! another block of the cluster: distributed shared memory), [`RemoteBarrier`] (arriving on
//! another block's [`Barrier`]), and the copies between blocks.
//!
//! Every block of a cluster runs the same kernel, so an object declared in shared memory sits
//! at the same offset in each; [`Cluster::remote`] turns this block's handle to it into the
//! handle of block `rank`'s copy (`mapa`). A block's shared memory lives only as long as the
//! block: a block must not exit while others may still touch it, which is what a cluster
//! barrier ([`Cluster::sync`]) before the end is for.
//!
//! | operation | PTX |
//! |---|---|
//! | [`Cluster::this`] | `%cluster_ctarank`, `%cluster_nctarank` |
//! | [`Cluster::arrive`] / [`ClusterArrival::wait`] | `barrier.cluster.arrive.release.aligned` / `barrier.cluster.wait.acquire.aligned` |
//! | [`Cluster::remote`], [`Cluster::remote_barrier`] | `mapa.shared::cluster.u32` |
//! | [`Remote::read`] / [`Remote::write`] | `ld.shared::cluster` / `st.shared::cluster` (`.b32`, `.v4.b32`) |
//! | [`Remote::store_async`] | `st.async.shared::cluster.mbarrier::complete_tx::bytes` |
//! | [`Remote::add_async`] | `red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32` |
//! | [`RemoteBarrier::arrive`] | `mbarrier.arrive.release.cluster.shared::cluster.b64` |
//! | [`wait_parity_cluster`] | loop on `mbarrier.try_wait.parity.acquire.cluster` |
//! | [`copy_to_peer`] | `cp.async.bulk.shared::cluster.shared::cta` |
//! | [`multicast_from_global`] | `cp.async.bulk.shared::cluster.global...multicast::cluster` |
//! | [`MulticastGroup`] | the `ctaMask` of a multicast copy; the blocks of a [`ClusterBulkPipeline`](crate::pipeline::ClusterBulkPipeline) |
//!
//! The kernel declares its cluster shape (`[cluster = (x, y, z)]` in
//! [`kernel!`](crate::kernel!)) or the host gives it at launch.

use crate::barrier::Barrier;
use crate::ptx::{self, ClusterValue, Mbarrier, SharedCluster};
use crate::shared::Shared;

/// This block's place in its cluster: its rank and the cluster's size, read once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cluster {
    rank: u32,
    size: u32,
}

/// Proof that this thread arrived on the cluster barrier's current phase;
/// [`ClusterArrival::wait`] consumes it.
#[must_use = "an arrival is only useful to wait for the others"]
pub struct ClusterArrival {
    _arrived: (),
}

impl Cluster {
    /// The cluster of the executing block (a launch without clusters is one of one block).
    #[inline(always)]
    #[must_use]
    pub fn this() -> Cluster {
        Cluster {
            rank: ptx::cluster_ctarank(),
            size: ptx::cluster_nctarank(),
        }
    }

    /// This block's rank, `0..size()`.
    #[inline(always)]
    #[must_use]
    pub const fn rank(self) -> u32 {
        self.rank
    }

    /// Blocks in the cluster.
    #[inline(always)]
    #[must_use]
    pub const fn size(self) -> u32 {
        self.size
    }

    /// The rank `distance` places after this block's, cyclically.
    #[inline(always)]
    #[must_use]
    pub const fn rank_after(self, distance: u32) -> u32 {
        (self.rank + distance) % self.size
    }

    /// Arrives on the cluster barrier, releasing this thread's earlier writes (this block's
    /// shared memory, others' through [`Remote`], global memory) to every thread of the
    /// cluster that waits after it. Work that does not touch what others write may go
    /// between this and [`ClusterArrival::wait`].
    ///
    /// # Safety
    /// Every thread of the warp calls it together (the barrier is `.aligned`), and every
    /// thread of every block of the cluster arrives once on each phase (else the waits
    /// hang: the host's watchdog reports it).
    #[inline(always)]
    pub unsafe fn arrive(self) -> ClusterArrival {
        // SAFETY: forwarded contract.
        unsafe { ptx::barrier_cluster_arrive_release() };
        ClusterArrival { _arrived: () }
    }

    /// [`Cluster::arrive`] without the release: for an arrival that publishes nothing (a
    /// block saying it has started, so that others may write into its shared memory).
    ///
    /// # Safety
    /// As [`Cluster::arrive`].
    #[inline(always)]
    pub unsafe fn arrive_relaxed(self) -> ClusterArrival {
        // SAFETY: forwarded contract.
        unsafe { ptx::barrier_cluster_arrive_relaxed() };
        ClusterArrival { _arrived: () }
    }

    /// Arrive and wait: every block of the cluster has reached this point, and what each
    /// wrote before it is visible to all after it (CUDA's `cluster.sync()`).
    ///
    /// # Safety
    /// As [`Cluster::arrive`].
    #[inline(always)]
    pub unsafe fn sync(self) {
        // SAFETY: forwarded contract.
        unsafe { self.arrive().wait() }
    }

    /// The object at `local` in this block's shared memory, in block `rank`'s (`mapa`).
    ///
    /// # Panics
    /// If `rank` is not a rank of this cluster: a `trap` (the launch fails). A trap, not a
    /// panic message: its formatting would put a frame in local memory.
    #[inline(always)]
    #[must_use]
    pub fn remote<T>(self, local: Shared<T>, rank: u32) -> Remote<T> {
        if rank >= self.size {
            ptx::trap();
        }
        Remote {
            addr: ptx::mapa(local, rank),
        }
    }

    /// The mbarrier of `barrier`, in block `rank`'s shared memory (`mapa`).
    ///
    /// # Panics
    /// If `rank` is not a rank of this cluster.
    #[inline(always)]
    #[must_use]
    pub fn remote_barrier(self, barrier: &Barrier, rank: u32) -> RemoteBarrier {
        RemoteBarrier {
            bar: self.remote(barrier.slot(), rank).addr,
        }
    }
}

/// A set of ranks of a cluster that share data by multicast: the blocks one tensor copy
/// reaches at once ([`memcpy_async_tensor_multicast`]), or that fill each other's stages
/// ([`ClusterBulkPipeline`]). Always names this block and only ranks of its cluster.
///
/// [`memcpy_async_tensor_multicast`]: crate::memcpy_async::bulk::memcpy_async_tensor_multicast
/// [`ClusterBulkPipeline`]: crate::pipeline::ClusterBulkPipeline
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MulticastGroup {
    mask: u16,
    /// Ranks in `mask`: kept, not counted, so that a group of a constant size has a constant
    /// length (a `popcount` of a rank-dependent mask does not fold).
    len: u16,
}

impl MulticastGroup {
    /// The ranks whose bits are set in `mask` (bit r: rank r).
    ///
    /// # Panics
    /// If `mask` names a rank outside `cluster` or leaves out this block's: a `trap`.
    #[inline(always)]
    #[must_use]
    pub fn new(cluster: Cluster, mask: u16) -> MulticastGroup {
        let ranks = (1u32 << cluster.size) - 1;
        if (mask as u32) & !ranks != 0 || (mask as u32 >> cluster.rank) & 1 == 0 {
            ptx::trap();
        }
        MulticastGroup {
            mask,
            len: mask.count_ones() as u16,
        }
    }

    /// This block alone (in a launch without clusters, a cluster of one).
    #[inline(always)]
    #[must_use]
    pub fn alone() -> MulticastGroup {
        MulticastGroup {
            mask: 1 << ptx::cluster_ctarank(),
            len: 1,
        }
    }

    /// The `count` consecutive ranks from `first` (`first..first + count`): a row of a
    /// cluster whose rank runs along it.
    ///
    /// # Panics
    /// As [`MulticastGroup::new`].
    #[inline(always)]
    #[must_use]
    pub fn ranks(cluster: Cluster, first: u32, count: u32) -> MulticastGroup {
        MulticastGroup::strided(cluster, first, count, 1)
    }

    /// The `count` ranks `first, first + stride, ...`: a column of a cluster of rows of
    /// `stride` blocks. Its length is `count`, a constant where `count` is.
    ///
    /// # Panics
    /// As [`MulticastGroup::new`], and where a rank would be past 15 (`count` or `stride` 0
    /// names no rank, or only `first`'s: `count` 0 leaves out this block).
    #[inline(always)]
    #[must_use]
    pub fn strided(cluster: Cluster, first: u32, count: u32, stride: u32) -> MulticastGroup {
        if count > 0 && first + (count - 1) * stride > 15 {
            ptx::trap();
        }
        let mut bits = 0u32;
        let mut i = 0;
        while i < count {
            bits |= 1 << (first + i * stride);
            i += 1;
        }
        MulticastGroup {
            len: count as u16,
            ..MulticastGroup::new(cluster, bits as u16)
        }
    }

    /// The ranks, as the `ctaMask` operand: bit r for rank r.
    #[inline(always)]
    #[must_use]
    pub const fn mask(self) -> u16 {
        self.mask
    }

    /// How many blocks.
    #[inline(always)]
    #[must_use]
    pub const fn len(self) -> u32 {
        self.len as u32
    }

    /// Always false: a group names at least this block.
    #[inline(always)]
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.mask == 0
    }

    /// Whether `rank` is in the group (false for any `rank >= 16`).
    #[inline(always)]
    #[must_use]
    pub const fn contains(self, rank: u32) -> bool {
        rank < 16 && (self.mask as u32 >> rank) & 1 != 0
    }
}

impl ClusterArrival {
    /// Waits until every thread of the cluster has arrived on this phase, acquiring what
    /// their arrivals released.
    ///
    /// # Safety
    /// Every thread of the warp calls it together (`.aligned`).
    #[inline(always)]
    pub unsafe fn wait(self) {
        // SAFETY: forwarded contract; this thread arrived (the token).
        unsafe { ptx::barrier_cluster_wait() }
    }
}

/// A `T` in the shared memory of a block of this cluster (this one, or another): what
/// [`Cluster::remote`] returns. The typed form of a `.shared::cluster` address.
pub struct Remote<T> {
    addr: SharedCluster<T>,
}

impl<T> Clone for Remote<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Remote<T> {}

impl<T> Remote<T> {
    /// The `.shared::cluster` address.
    #[inline(always)]
    #[must_use]
    pub const fn address(self) -> SharedCluster<T> {
        self.addr
    }

    /// The handle `count` elements further, in the same block (address arithmetic).
    #[inline(always)]
    #[must_use]
    pub const fn add(self, count: u32) -> Self {
        Remote {
            addr: self.addr.add(count),
        }
    }

    /// The same memory viewed as a `U`.
    #[inline(always)]
    #[must_use]
    pub const fn cast<U>(self) -> Remote<U> {
        Remote {
            addr: self.addr.cast(),
        }
    }
}

impl<T: ClusterValue> Remote<T> {
    /// Reads the value (`ld.shared::cluster`).
    ///
    /// # Safety
    /// The memory holds an initialized `T`, aligned to its size, of a block that has not
    /// exited, and its last write was ordered before this read (a cluster barrier between,
    /// or the writer's release and this thread's acquire); nothing writes it concurrently.
    #[inline(always)]
    pub unsafe fn read(self) -> T {
        // SAFETY: forwarded contract.
        unsafe { T::load_cluster(self.addr) }
    }

    /// Writes the value (`st.shared::cluster`): visible to the owner after a cluster
    /// barrier, or a release / acquire pair.
    ///
    /// # Safety
    /// The memory is a `T`, aligned to its size, of a block that has not exited; nothing
    /// else reads or writes it concurrently.
    #[inline(always)]
    pub unsafe fn write(self, value: T) {
        // SAFETY: forwarded contract.
        unsafe { T::store_cluster(self.addr, value) }
    }
}

impl Remote<[u32; 4]> {
    /// Stores `value` asynchronously (`st.async.v4.b32`; the other widths of the instruction
    /// are left until a kernel needs them); when it has landed it completes 16 bytes of
    /// transaction count on `done`, a barrier of the same block, so the owner waits on its own
    /// barrier and needs no cluster barrier to see it.
    ///
    /// # Safety
    /// 1. `done` is in the same block as this memory; that block does not exit before the
    ///    store lands, and `done`'s current phase expects these bytes (its owner's
    ///    `expect_tx`) and cannot complete without them.
    /// 2. Nothing reads or writes this memory until that phase completed.
    #[inline(always)]
    pub unsafe fn store_async(self, value: [u32; 4], done: RemoteBarrier) {
        // SAFETY: forwarded contract.
        unsafe { ptx::st_async_v4_b32(self.addr, value, done.bar) }
    }
}

impl Remote<u32> {
    /// Adds `value` asynchronously (`red.async ... add.u32`), completing 4 bytes of
    /// transaction count on `done` (as [`Remote::store_async`]).
    ///
    /// # Safety
    /// As [`Remote::store_async`], except that other asynchronous adds to the same word may
    /// run at the same time (each is atomic; each completes its own 4 bytes).
    #[inline(always)]
    pub unsafe fn add_async(self, value: u32, done: RemoteBarrier) {
        // SAFETY: forwarded contract.
        unsafe { ptx::red_async_add_u32(self.addr, value, done.bar) }
    }
}

/// A [`Barrier`] of a block of this cluster, reached through the cluster window: what
/// [`Cluster::remote_barrier`] returns.
#[derive(Clone, Copy)]
pub struct RemoteBarrier {
    bar: SharedCluster<Mbarrier>,
}

impl RemoteBarrier {
    /// One arrival on the barrier's current phase, releasing this thread's earlier writes
    /// at cluster scope to whoever waits for that phase with [`wait_parity_cluster`]
    /// (`mbarrier.arrive.release.cluster.shared::cluster`; a remote arrival yields no
    /// token).
    ///
    /// # Safety
    /// The block holding the barrier does not exit before the arrival lands, and the phase
    /// still expects an arrival.
    #[inline(always)]
    pub unsafe fn arrive(self) {
        // SAFETY: forwarded contract.
        unsafe { ptx::mbarrier_arrive_cluster(self.bar) }
    }

    /// The `.shared::cluster` address of the mbarrier.
    #[inline(always)]
    #[must_use]
    pub const fn address(self) -> SharedCluster<Mbarrier> {
        self.bar
    }
}

/// Waits until the phase of `barrier` (this block's) with parity `parity` completes,
/// acquiring at cluster scope what its arrivals released, remote ones included: a loop on
/// `mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64`.
#[inline(always)]
pub fn wait_parity_cluster(barrier: &Barrier, parity: u32) {
    // SAFETY: a `Barrier` is an initialized mbarrier.
    while !unsafe { ptx::mbarrier_try_wait_parity_acquire_cluster(barrier.slot(), parity) } {}
}

/// Copies `bytes` of this block's shared memory at `src` into `dst` in another block of the
/// cluster by the copy engine (`cp.async.bulk.shared::cluster.shared::cta`), completing
/// `bytes` of transaction count on `done`, a barrier of `dst`'s block. One thread issues it.
///
/// # Safety
/// 1. `bytes` is a non-zero multiple of 16; `src` and `dst` are 16-byte aligned, `bytes`
///    long; nothing writes `src` until the copy has read it (the receiver's barrier
///    completing, told back, says so).
/// 2. `done` is in `dst`'s block, which does not exit before the copy lands; its current
///    phase expects these bytes and cannot complete without them; nothing reads `dst`
///    before it completes.
#[inline(always)]
pub unsafe fn copy_to_peer<T>(dst: Remote<T>, src: Shared<T>, bytes: u32, done: RemoteBarrier) {
    // SAFETY: forwarded contract.
    unsafe { ptx::cp_async_bulk_shared_to_cluster(dst.addr.cast(), src.addr(), bytes, done.bar) }
}

/// Copies `bytes` of global memory at `src` into `dst` in every block of the cluster whose
/// rank is set in `mask`, reading global memory once (`cp.async.bulk...multicast::cluster`);
/// each block's `barrier` (the same object in each) gets `bytes` of transaction count. One
/// thread issues it.
///
/// # Safety
/// 1. `bytes` is a non-zero multiple of 16; `src` and `dst` are 16-byte aligned; `src`
///    holds `bytes` readable bytes.
/// 2. In every block named by `mask` (only ranks of this cluster): the current phase of
///    `barrier` expects these bytes and cannot complete without them, nothing reads `dst`
///    before it completes, and the block does not exit before the copy lands.
#[inline(always)]
pub unsafe fn multicast_from_global<T>(
    dst: Shared<T>,
    src: *const T,
    bytes: u32,
    barrier: &Barrier,
    mask: u16,
) {
    // SAFETY: forwarded contract.
    unsafe {
        ptx::cp_async_bulk_global_to_shared_multicast(
            dst.addr(),
            src.cast(),
            bytes,
            barrier.slot(),
            mask,
        )
    }
}
