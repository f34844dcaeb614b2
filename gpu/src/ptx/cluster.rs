//! Thread block clusters (sm_90): the blocks of a cluster run at once on neighbouring SMs and
//! each can reach the others' shared memory through the `.shared::cluster` window
//! (distributed shared memory, DSMEM), arrive on their mbarriers, and have one copy written
//! into all of them (multicast).
//!
//! Compiled only for sm_90 (`cfg(target_feature = "sm_90")`): the sm_80 PTX holds none of
//! these instructions, and code that calls them does not build for sm_80.
//!
//! Addresses: a block's own shared memory is a [`Shared<T>`] (`.shared::cta`); the same
//! object in block `rank` of the cluster is a [`SharedCluster<T>`], made by [`mapa`]. Both
//! are 32-bit. A `.shared::cta` address is also a valid `.shared::cluster` address of the
//! executing block, which is how the copies below take their own block's side.
//!
//! SASS: `mapa` is `MAPA`; loads and stores through the window `LD`/`ST` with a cluster
//! address (`LDS`-class for the own block); the cluster barrier `UCGABAR_ARV` /
//! `UCGABAR_WAIT`; remote arrivals and `st.async` `SYNCS.*`; block-to-block copies `UBLKCP.S.S`.

use super::objects::Mbarrier;
use super::smem::Shared;
use core::arch::asm;
use core::marker::PhantomData;

/// The `.shared::cluster` address of a `T` in the shared memory of some block of this
/// cluster (this one included): what [`mapa`] returns for a [`Shared<T>`] and a rank. Like
/// `Shared`, it is plain address data: `Copy`, no lifetime; the contracts of the functions
/// that use it say what must hold.
#[repr(transparent)]
pub struct SharedCluster<T> {
    addr: u32,
    _type: PhantomData<*mut T>,
}

impl<T> Clone for SharedCluster<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedCluster<T> {}

impl<T> SharedCluster<T> {
    /// A handle for the `.shared::cluster` address `addr`.
    ///
    /// # Safety
    /// `addr` is a `.shared::cluster` address, aligned for `T`, of memory the caller may use
    /// as a `T` (for as long as the handle, and copies of it, are used).
    #[inline(always)]
    pub const unsafe fn from_addr(addr: u32) -> Self {
        SharedCluster {
            addr,
            _type: PhantomData,
        }
    }

    /// The 32-bit `.shared::cluster` address.
    #[inline(always)]
    #[must_use]
    pub const fn addr(self) -> u32 {
        self.addr
    }

    /// The handle `count` elements further (address arithmetic: no access, no check). The
    /// window maps each block's shared memory contiguously, so an offset within one object
    /// stays in the same block.
    #[inline(always)]
    #[must_use]
    pub const fn add(self, count: u32) -> Self {
        SharedCluster {
            addr: self
                .addr
                .wrapping_add(count.wrapping_mul(size_of::<T>() as u32)),
            _type: PhantomData,
        }
    }

    /// The same address, viewed as a `U`.
    #[inline(always)]
    #[must_use]
    pub const fn cast<U>(self) -> SharedCluster<U> {
        SharedCluster {
            addr: self.addr,
            _type: PhantomData,
        }
    }
}

impl<T> From<Shared<T>> for SharedCluster<T> {
    /// The executing block's own object, as a `.shared::cluster` address: the same 32 bits
    /// (PTX: a `.shared::cta` address is a valid `.shared::cluster` address of the executing
    /// block).
    #[inline(always)]
    fn from(local: Shared<T>) -> Self {
        SharedCluster {
            addr: local.addr(),
            _type: PhantomData,
        }
    }
}

special_register!(
    /// This block's rank in its cluster (0..[`cluster_nctarank`]).
    cluster_ctarank => "%cluster_ctarank", below 16
);
special_register!(
    /// The number of blocks in this block's cluster (1 without a cluster launch).
    cluster_nctarank => "%cluster_nctarank", in 1..17
);
special_register!(
    /// This cluster's index in the grid of clusters, x dimension.
    cluster_id_x => "%clusterid.x", below 0x8000_0000
);
special_register!(
    /// This block's index within its cluster, x dimension.
    cluster_ctaid_x => "%cluster_ctaid.x", below 16
);

/// Whether the kernel was launched with an explicit cluster shape (a cluster launch, or a
/// kernel declaring `.reqnctapercluster`): `mov.pred p, %is_explicit_cluster;` (and a `selp`).
#[inline(always)]
#[must_use]
pub fn is_explicit_cluster() -> bool {
    let value: u32;
    // SAFETY: reading a special register has no side effects.
    unsafe {
        asm!(
            "{{ .reg .pred p; mov.pred p, %is_explicit_cluster; selp.u32 {v}, 1, 0, p; }}",
            v = out(reg32) value,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    value != 0
}

/// `barrier.cluster.arrive.release.aligned;` — this thread arrives on the cluster barrier,
/// releasing its earlier writes (shared, cluster and global) to the threads that wait after
/// the barrier completes. Does not wait: [`barrier_cluster_wait`] does.
///
/// # Safety
/// Every thread of the warp executes this same instruction together (`.aligned`), and each
/// thread arrives once per phase, then waits, before arriving again.
#[inline(always)]
pub unsafe fn barrier_cluster_arrive_release() {
    // SAFETY: the caller upholds the contract above. A memory clobber: writes before it stay
    // before it.
    unsafe { asm!("barrier.cluster.arrive.release.aligned;", options(nostack)) }
}

/// `barrier.cluster.arrive.relaxed.aligned;` — arrives without ordering memory: for a thread
/// that only signals "I have started" (as after initializing nothing others read), cheaper
/// than [`barrier_cluster_arrive_release`].
///
/// # Safety
/// As [`barrier_cluster_arrive_release`].
#[inline(always)]
pub unsafe fn barrier_cluster_arrive_relaxed() {
    // SAFETY: the caller upholds the contract above.
    unsafe { asm!("barrier.cluster.arrive.relaxed.aligned;", options(nostack)) }
}

/// `barrier.cluster.wait.acquire.aligned;` — waits until every thread of every block of the
/// cluster has arrived on the current phase, acquiring what their release arrivals released.
///
/// # Safety
/// Every thread of the warp executes this same instruction together (`.aligned`), after
/// arriving on this phase.
#[inline(always)]
pub unsafe fn barrier_cluster_wait() {
    // SAFETY: the caller upholds the contract above. A memory clobber: reads after it stay
    // after it.
    unsafe { asm!("barrier.cluster.wait.acquire.aligned;", options(nostack)) }
}

/// `mapa.shared::cluster.u32 d, a, rank;` — the address of the object at `local` in this
/// block's shared memory, in the shared memory of block `rank` of the cluster (every block
/// runs the same kernel, so the same object sits at the same offset in each). Address
/// arithmetic only; using the result needs `rank < cluster_nctarank()`.
#[inline(always)]
#[must_use]
pub fn mapa<T>(local: Shared<T>, rank: u32) -> SharedCluster<T> {
    let addr: u32;
    // SAFETY: computes an address; touches no memory.
    unsafe {
        asm!(
            "mapa.shared::cluster.u32 {d}, {a}, {r};",
            d = out(reg32) addr,
            a = in(reg32) local.addr(),
            r = in(reg32) rank,
            options(pure, nomem, nostack, preserves_flags)
        )
    }
    SharedCluster {
        addr,
        _type: PhantomData,
    }
}

/// A value that one `ld.shared::cluster` / `st.shared::cluster` moves: 4 bytes, or four
/// `u32` (`.v4`, 16 bytes).
///
/// # Safety
/// Implementations must access exactly `size_of::<Self>()` bytes at the address.
pub unsafe trait ClusterValue: Copy {
    /// `ld.shared::cluster` of one value.
    ///
    /// # Safety
    /// `addr` is a `.shared::cluster` address of a `Self` in a block of this cluster that
    /// has not exited, aligned to `size_of::<Self>()`, that no thread or copy writes
    /// concurrently (the write was ordered before this read: a cluster barrier, or a release
    /// / acquire pair at cluster scope).
    unsafe fn load_cluster(addr: SharedCluster<Self>) -> Self;

    /// `st.shared::cluster` of one value.
    ///
    /// # Safety
    /// As [`ClusterValue::load_cluster`], and no one else reads or writes it concurrently.
    unsafe fn store_cluster(addr: SharedCluster<Self>, value: Self);
}

/// Lowers to `ld.shared::cluster.b32` / `st.shared::cluster.b32`.
// SAFETY: one access moves exactly 4 bytes.
unsafe impl ClusterValue for u32 {
    #[inline(always)]
    unsafe fn load_cluster(addr: SharedCluster<u32>) -> u32 {
        let value: u32;
        // SAFETY: the caller upholds the trait contract. Not `pure`: another block's data
        // changes under barriers this asm cannot see, so it must not be hoisted or merged.
        unsafe {
            asm!(
                "ld.shared::cluster.b32 {v}, [{a}];",
                v = out(reg32) value,
                a = in(reg32) addr.addr(),
                options(readonly, nostack, preserves_flags)
            )
        }
        value
    }

    #[inline(always)]
    unsafe fn store_cluster(addr: SharedCluster<u32>, value: u32) {
        // SAFETY: the caller upholds the trait contract.
        unsafe {
            asm!(
                "st.shared::cluster.b32 [{a}], {v};",
                a = in(reg32) addr.addr(),
                v = in(reg32) value,
                options(nostack, preserves_flags)
            )
        }
    }
}

/// Lowers to `ld.shared::cluster.v4.b32` / `st.shared::cluster.v4.b32`: the address must be
/// 16-byte aligned.
// SAFETY: one v4 access moves exactly 16 bytes.
unsafe impl ClusterValue for [u32; 4] {
    #[inline(always)]
    unsafe fn load_cluster(addr: SharedCluster<[u32; 4]>) -> [u32; 4] {
        let (x, y, z, w): (u32, u32, u32, u32);
        // SAFETY: the caller upholds the trait contract (see the `u32` form on `pure`).
        unsafe {
            asm!(
                "ld.shared::cluster.v4.b32 {{{x}, {y}, {z}, {w}}}, [{a}];",
                x = out(reg32) x,
                y = out(reg32) y,
                z = out(reg32) z,
                w = out(reg32) w,
                a = in(reg32) addr.addr(),
                options(readonly, nostack, preserves_flags)
            )
        }
        [x, y, z, w]
    }

    #[inline(always)]
    unsafe fn store_cluster(addr: SharedCluster<[u32; 4]>, [x, y, z, w]: [u32; 4]) {
        // SAFETY: the caller upholds the trait contract.
        unsafe {
            asm!(
                "st.shared::cluster.v4.b32 [{a}], {{{x}, {y}, {z}, {w}}};",
                a = in(reg32) addr.addr(),
                x = in(reg32) x,
                y = in(reg32) y,
                z = in(reg32) z,
                w = in(reg32) w,
                options(nostack, preserves_flags)
            )
        }
    }
}

/// `st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [dst], {..}, [bar];` — an
/// asynchronous 16-byte store into the shared memory of a block of the cluster (normally
/// another one) that, once written, completes 16 bytes of transaction count on the mbarrier
/// `bar` in the same block as `dst`: the receiver waits on its own barrier, no fence or
/// cluster barrier between.
///
/// # Safety
/// 1. `dst` is 16-byte aligned and `bar` an initialized mbarrier, both in the same block of
///    this cluster, which does not exit before the store lands.
/// 2. The phase of `bar` the store completes on expects these bytes (its block's
///    `expect_tx`) and nothing reads or writes `dst` until that phase completed.
#[inline(always)]
pub unsafe fn st_async_v4_b32(
    dst: SharedCluster<[u32; 4]>,
    [x, y, z, w]: [u32; 4],
    bar: SharedCluster<Mbarrier>,
) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [{d}], {{{x}, {y}, {z}, {w}}}, [{b}];",
            d = in(reg32) dst.addr(),
            x = in(reg32) x,
            y = in(reg32) y,
            z = in(reg32) z,
            w = in(reg32) w,
            b = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// `red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [dst],
/// value, [bar];` — an asynchronous `*dst += value` in the shared memory of a block of the
/// cluster that completes 4 bytes of transaction count on `bar` in the same block: how
/// partial results are reduced into one block without a round trip.
///
/// # Safety
/// As [`st_async_v4_b32`] (`dst` 4-byte aligned, 4 bytes), except that other `red.async`
/// adds to `dst` may run concurrently (each is atomic).
#[inline(always)]
pub unsafe fn red_async_add_u32(dst: SharedCluster<u32>, value: u32, bar: SharedCluster<Mbarrier>) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [{d}], {v}, [{b}];",
            d = in(reg32) dst.addr(),
            v = in(reg32) value,
            b = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.arrive.release.cluster.shared::cluster.b64 _, [bar];` — one arrival on an
/// mbarrier of a block of the cluster (normally another one), releasing this thread's earlier
/// writes at cluster scope to whoever acquires that phase
/// ([`mbarrier_try_wait_parity_acquire_cluster`]). A remote arrival returns no state token.
///
/// # Safety
/// `bar` holds an initialized mbarrier of a block of this cluster that does not exit before
/// the arrival, and its current phase still expects an arrival.
#[inline(always)]
pub unsafe fn mbarrier_arrive_cluster(bar: SharedCluster<Mbarrier>) {
    // SAFETY: the caller upholds the contract above. A memory clobber: writes before it stay
    // before it.
    unsafe {
        asm!(
            "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{b}];",
            b = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.arrive.release.cta.shared::cluster.b64 _, [bar];` — one arrival on an mbarrier
/// of a block of the cluster whose release orders only at CTA scope (PTX's default for the
/// instruction, and CUTLASS's `ClusterBarrier::arrive(cta_id)`): for handing a buffer back to
/// the block that refills it when this thread only read it, so that nothing it wrote needs
/// publishing to that block. [`mbarrier_arrive_cluster`]'s cluster-scope release costs a
/// `MEMBAR.ALL.GPU` before the arrival; this one none.
///
/// # Safety
/// As [`mbarrier_arrive_cluster`]; the waiter reads nothing this thread wrote.
#[inline(always)]
pub unsafe fn mbarrier_arrive_cluster_cta(bar: SharedCluster<Mbarrier>) {
    // SAFETY: the caller upholds the contract above. A memory clobber: this thread's reads of
    // the buffer stay before it.
    unsafe {
        asm!(
            "mbarrier.arrive.release.cta.shared::cluster.b64 _, [{b}];",
            b = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// `mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [bar], parity;` — whether
/// the phase with parity `parity` of this block's mbarrier `bar` has completed, acquiring at
/// cluster scope what the arrivals on it released (remote arrivals included): what a
/// consumer of data written by other blocks waits with. May suspend the thread for a while.
///
/// # Safety
/// `bar` holds an initialized mbarrier.
#[inline(always)]
#[must_use = "the result says whether the phase completed"]
pub unsafe fn mbarrier_try_wait_parity_acquire_cluster(bar: Shared<Mbarrier>, parity: u32) -> bool {
    let done: u32;
    // SAFETY: the caller guarantees `bar` is a live mbarrier. The memory clobber keeps reads
    // of the data it guards after the wait.
    unsafe {
        asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [{bar}], {parity}; selp.u32 {done}, 1, 0, p; }}",
            bar = in(reg32) bar.addr(),
            parity = in(reg32) parity,
            done = out(reg32) done,
            options(nostack, preserves_flags)
        )
    }
    done != 0
}

/// `fence.acq_rel.cluster;` — orders this thread's memory accesses before and after it at
/// cluster scope: with a relaxed arrival, the fence that makes it a release.
#[inline(always)]
pub fn fence_acq_rel_cluster() {
    // SAFETY: a fence; touches no memory itself.
    unsafe { asm!("fence.acq_rel.cluster;", options(nostack, preserves_flags)) }
}

/// `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src],
/// bytes, [bar];` — the copy engine copies `bytes` from this block's shared memory `src` to
/// `dst` in the shared memory of a block of the cluster and completes `bytes` of transaction
/// count on `bar`, in the same block as `dst`, when they have landed.
///
/// # Safety
/// 1. `bytes` is a non-zero multiple of 16; `src` and `dst` are 16-byte aligned and hold
///    `bytes` each; nothing writes `src` until the copy has read it (the receiver's barrier
///    completing says so).
/// 2. `bar` is an initialized mbarrier in `dst`'s block, whose current phase expects these
///    bytes and cannot complete before they land; that block does not exit before then.
/// 3. Nothing reads or writes `dst` until that phase completed.
#[inline(always)]
pub unsafe fn cp_async_bulk_shared_to_cluster(
    dst: SharedCluster<u8>,
    src: u32,
    bytes: u32,
    bar: SharedCluster<Mbarrier>,
) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
            d = in(reg32) dst.addr(),
            s = in(reg32) src,
            n = in(reg32) bytes,
            b = in(reg32) bar.addr(),
            options(nostack, preserves_flags)
        )
    }
}

/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
/// [dst], [src], bytes, [bar], mask;` — the copy engine reads `bytes` of global `src` once
/// and writes them to `dst` in the shared memory of every block whose rank is set in `mask`
/// (bit r: rank r), completing `bytes` of transaction count on the mbarrier at `bar`'s
/// offset in each of those blocks.
///
/// # Safety
/// 1. As [`super::cp_async_bulk_global_to_shared`], for each block in `mask`: `dst` and
///    `bar` are the offsets of the buffer and the mbarrier in every one of them, each
///    block's phase expects these bytes, and none reads `dst` before its phase completed.
/// 2. `mask` names only ranks of this cluster, none of which exits before the copy lands.
#[inline(always)]
pub unsafe fn cp_async_bulk_global_to_shared_multicast(
    dst: u32,
    src: *const u8,
    bytes: u32,
    bar: Shared<Mbarrier>,
    mask: u16,
) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{s}], {n}, [{b}], {m};",
            d = in(reg32) dst,
            s = in(reg64) src,
            n = in(reg32) bytes,
            b = in(reg32) bar.addr(),
            m = in(reg16) mask,
            options(nostack, preserves_flags)
        )
    }
}
