//! The DSMEM kernels' bodies (sm_90): latency chains and bandwidth loops over
//! [`gpu::cluster`].

use super::{
    BARRIERS_OFFSET, BUFFER_CHUNKS, BandwidthMode, CHUNKS_PER_THREAD, LatencyTarget,
    RECEIVE_OFFSET, SHORT_CHAIN_SLOTS, SOURCE_OFFSET, STAGE_BYTES, STAGE_CHUNKS, STAGES,
    STAGES_OFFSET, THREADS, chain_start, pattern,
};
use gpu::barrier::Barrier;
use gpu::cluster::{self, Cluster};
use gpu::ptx::{self, Mbarrier, Shared};
use gpu::shared::dynamic_shared;

/// The part of dynamic shared memory at `offset` (see the module's layout constants).
#[inline(always)]
fn part<T>(offset: u32) -> Shared<T> {
    dynamic_shared().add(offset).cast()
}

/// `sum` plus the four words of `v`, wrapping.
#[inline(always)]
fn add4(sum: u32, v: [u32; 4]) -> u32 {
    sum.wrapping_add(v[0])
        .wrapping_add(v[1])
        .wrapping_add(v[2])
        .wrapping_add(v[3])
}

/// `full[s]` and `empty[s]`, initialized by [`bandwidth`] before its first cluster barrier.
#[inline(always)]
fn stage_barriers(s: u32) -> (Barrier, Barrier) {
    let full = part::<Mbarrier>(BARRIERS_OFFSET + 8 * s);
    let empty = part::<Mbarrier>(BARRIERS_OFFSET + 8 * (STAGES + s));
    // SAFETY: both are initialized (thread 0, then a cluster barrier) before any use.
    unsafe {
        (
            Barrier::from_initialized(full),
            Barrier::from_initialized(empty),
        )
    }
}

/// See the latency kernels in `entry_points`.
///
/// # Safety
/// Their launch contract.
#[inline(always)]
pub(super) unsafe fn latency(
    chain: *const u32,
    hops: u32,
    distance: u32,
    end: *mut u32,
    cycles: *mut u64,
    target: LatencyTarget,
) {
    let tid = ptx::thread_idx_x();
    let cluster = Cluster::this();
    let local = part::<u32>(RECEIVE_OFFSET);
    if matches!(target, LatencyTarget::Local | LatencyTarget::Remote) {
        let mut i = tid;
        while i < SHORT_CHAIN_SLOTS {
            // SAFETY: the chain holds SHORT_CHAIN_SLOTS words; the receive buffer 8192.
            unsafe { local.add(i).write(*chain.add(i as usize)) };
            i += THREADS;
        }
    }
    // Every block's chain is in place before a peer reads it.
    // SAFETY: every thread of the cluster runs this, warp by warp.
    unsafe { cluster.sync() };
    if tid == 0 {
        let (slots, words) = (target.chain().slots(), target.chain().slot_words());
        let mut slot = chain_start(ptx::block_idx_x(), ptx::grid_dim_x(), slots);
        let start = ptx::clock64();
        match target {
            LatencyTarget::Local => {
                for _ in 0..hops {
                    // SAFETY: every slot holds a slot index below SHORT_CHAIN_SLOTS.
                    slot = unsafe { local.add(slot).read() };
                }
            }
            LatencyTarget::Remote => {
                let remote = cluster.remote(local, cluster.rank_after(distance));
                for _ in 0..hops {
                    // SAFETY: as above, in the peer, which waits at the last cluster
                    // barrier before exiting and writes its chain only before the first.
                    slot = unsafe { remote.add(slot).read() };
                }
            }
            LatencyTarget::L2 | LatencyTarget::Dram => {
                for _ in 0..hops {
                    // SAFETY: every slot holds a slot index below the chain's slots, and
                    // the chain holds slots * words words (launch contract).
                    slot = unsafe { ptx::ld_global_cg_u32(chain.add((slot * words) as usize)) };
                }
            }
        }
        let stop = ptx::clock64();
        let block = ptx::block_idx_x();
        // The host pairs blocks assuming 1-D clusters of consecutive blocks: a block placed
        // otherwise reports no end (the check fails).
        let placed = cluster.rank() == ptx::cluster_ctaid_x()
            && ptx::cluster_id_x() * cluster.size() + cluster.rank() == block
            && (cluster.size() == 1 || ptx::is_explicit_cluster());
        if !placed {
            slot = u32::MAX;
        }
        let block = block as usize;
        // SAFETY: one word and one count per block (launch contract).
        unsafe {
            *end.add(block) = slot;
            *cycles.add(block) = stop - start;
        }
    }
    // No block exits while a peer may still read its shared memory. The reads are done (their
    // values used above): a relaxed arrival, nothing to release.
    // SAFETY: as above.
    unsafe { cluster.arrive_relaxed().wait() };
}

/// See the bandwidth kernels in `entry_points`.
///
/// # Safety
/// Their launch contract.
#[inline(always)]
pub(super) unsafe fn bandwidth(
    global: *const [u32; 4],
    slices: u32,
    repeats: u32,
    distance: u32,
    sums: *mut u32,
    mode: BandwidthMode,
) {
    // At least one slice (the contract: slices >= grid >= 1): no zero check on `% slices`.
    let slices = slices.max(1);
    let tid = ptx::thread_idx_x();
    let block = ptx::block_idx_x();
    let cluster = Cluster::this();
    let source = part::<[f32; 4]>(SOURCE_OFFSET);
    let receive = part::<[f32; 4]>(RECEIVE_OFFSET);
    let mut c = tid;
    while c < BUFFER_CHUNKS {
        let w = 4 * c;
        let words = [
            pattern(block, w),
            pattern(block, w + 1),
            pattern(block, w + 2),
            pattern(block, w + 3),
        ];
        // SAFETY: chunk c < BUFFER_CHUNKS of the source buffer, this thread's alone.
        unsafe { source.add(c).write(words.map(f32::from_bits)) };
        c += THREADS;
    }
    if mode == BandwidthMode::RedAsync {
        let stages = part::<[f32; 4]>(STAGES_OFFSET);
        let mut c = tid;
        while c < STAGES * STAGE_CHUNKS {
            // SAFETY: the stages, before the first cluster barrier: no peer adds yet.
            unsafe { stages.add(c).write([0.0; 4]) };
            c += THREADS;
        }
    }
    if tid == 0 {
        let receivers = match mode {
            BandwidthMode::Multicast => cluster.size(),
            _ => 1,
        };
        for s in 0..STAGES {
            // SAFETY: the barrier slots are this kernel's, initialized once, here.
            unsafe {
                let _ = Barrier::init(part(BARRIERS_OFFSET + 8 * s), 1);
                let _ = Barrier::init(part(BARRIERS_OFFSET + 8 * (STAGES + s)), receivers);
            }
        }
        // The inits are visible to the copy engine and to the cluster's remote arrivals.
        ptx::fence_mbarrier_init();
    }
    // Every block's source and barriers are ready before a peer touches them.
    // SAFETY: every thread of the cluster runs this, warp by warp.
    unsafe { cluster.sync() };
    let peer = cluster.rank_after(distance);
    // Thread `tid` takes chunks tid + j * THREADS; repeat r starts at j = r % CHUNKS_PER_THREAD
    // (a new address every repeat: no load can be reused).
    let chunk = |r: u32, j: u32| tid + ((j + r) % CHUNKS_PER_THREAD) * THREADS;
    let mut sum = 0u32;
    match mode {
        BandwidthMode::LocalRead => {
            for r in 0..repeats {
                for j in 0..CHUNKS_PER_THREAD {
                    // SAFETY: written before the first cluster barrier, read-only since.
                    let v = unsafe { source.add(chunk(r, j)).read() };
                    sum = add4(sum, v.map(f32::to_bits));
                }
            }
        }
        BandwidthMode::RemoteRead => {
            let remote = cluster.remote(source.cast::<[u32; 4]>(), peer);
            for r in 0..repeats {
                for j in 0..CHUNKS_PER_THREAD {
                    // SAFETY: the peer's source, written before the first cluster barrier,
                    // read-only since; the peer waits at the last one before exiting.
                    sum = add4(sum, unsafe { remote.add(chunk(r, j)).read() });
                }
            }
        }
        BandwidthMode::RemoteWrite => {
            let remote = cluster.remote(receive.cast::<[u32; 4]>(), peer);
            let mut mine = [[0u32; 4]; CHUNKS_PER_THREAD as usize];
            for (j, words) in mine.iter_mut().enumerate() {
                // SAFETY: this block's source, read-only since the barrier.
                *words = unsafe { source.add(tid + j as u32 * THREADS).read() }.map(f32::to_bits);
            }
            for r in 0..repeats {
                for (j, words) in mine.iter().enumerate() {
                    // SAFETY: the peer's receive buffer, which only this thread writes at
                    // this chunk and no one reads before the next cluster barrier.
                    unsafe {
                        remote
                            .add(tid + j as u32 * THREADS)
                            .write(words.map(|w| w.wrapping_add(r)))
                    };
                }
            }
            // The stores into every block have landed and are visible: the fence makes the
            // relaxed arrival a release (the same as `Cluster::sync`, spelled out).
            ptx::fence_acq_rel_cluster();
            // SAFETY: every thread of the cluster runs this.
            unsafe { cluster.arrive_relaxed().wait() };
            for j in 0..CHUNKS_PER_THREAD {
                // SAFETY: written by the feeding block before the barrier above.
                let v = unsafe { receive.add(tid + j * THREADS).read() };
                sum = add4(sum, v.map(f32::to_bits));
            }
        }
        BandwidthMode::L2Read => {
            // SAFETY: block < grid <= slices (launch contract).
            let slice = unsafe { global.add((block * BUFFER_CHUNKS) as usize) };
            for r in 0..repeats {
                for j in 0..CHUNKS_PER_THREAD {
                    // SAFETY: inside this block's slice.
                    sum = add4(sum, unsafe {
                        ptx::ld_global_cg_v4(slice.add(chunk(r, j) as usize))
                    });
                }
            }
        }
        BandwidthMode::DramRead => {
            let grid = ptx::grid_dim_x();
            for r in 0..repeats {
                let s = ((block as u64 + r as u64 * grid as u64) % slices as u64) as usize;
                // SAFETY: s < slices.
                let slice = unsafe { global.add(s * BUFFER_CHUNKS as usize) };
                for j in 0..CHUNKS_PER_THREAD {
                    // SAFETY: inside slice s.
                    sum = add4(sum, unsafe {
                        ptx::ld_global_cg_v4(slice.add(chunk(r, j) as usize))
                    });
                }
            }
        }
        BandwidthMode::StAsync
        | BandwidthMode::RedAsync
        | BandwidthMode::BulkCopy
        | BandwidthMode::Multicast => {
            // SAFETY: forwarded launch contract; the barriers are initialized.
            sum = unsafe { pipelined(mode, cluster, peer, distance, global, repeats) };
        }
    }
    // SAFETY: one word per thread of the grid (launch contract).
    unsafe { *sums.add((block * THREADS + tid) as usize) = sum };
    // No block exits while a peer may still read, write or arrive in its shared memory.
    // SAFETY: as above.
    unsafe { cluster.sync() };
}

/// The pipelined experiments: `STAGES * repeats` fills of a 16 KiB stage, each sent by the
/// feeding block (the one `distance` ranks before; rank 0 for multicast) and consumed by this
/// one; `full[s]` (here) completes on the fill's bytes, `empty[s]` (the sender's) on the
/// receivers' remote arrivals. Returns this thread's sum of what it consumed.
///
/// # Safety
/// [`bandwidth`]'s contract, its barriers initialized and a cluster barrier passed.
#[inline(always)]
unsafe fn pipelined(
    mode: BandwidthMode,
    cluster: Cluster,
    peer: u32,
    distance: u32,
    global: *const [u32; 4],
    repeats: u32,
) -> u32 {
    let tid = ptx::thread_idx_x();
    let source = part::<[f32; 4]>(SOURCE_OFFSET);
    let stages = part::<[f32; 4]>(STAGES_OFFSET);
    let size = cluster.size();
    let feeder = match mode {
        BandwidthMode::Multicast => 0,
        _ => (cluster.rank() + size - distance % size) % size,
    };
    let mut sum = 0u32;
    for i in 0..STAGES * repeats {
        let s = i % STAGES;
        let phase = (i / STAGES) & 1;
        let (full, empty) = stage_barriers(s);
        let stage = stages.add(s * STAGE_CHUNKS);
        // Send fill i, once its stage is free everywhere it goes.
        match mode {
            BandwidthMode::StAsync => {
                cluster::wait_parity_cluster(&empty, phase ^ 1);
                let dst = cluster.remote(stage.cast::<[u32; 4]>(), peer);
                let done = cluster.remote_barrier(&full, peer);
                for j in 0..STAGE_CHUNKS / THREADS {
                    let c = tid + j * THREADS;
                    // SAFETY: this block's source (read-only); the peer's stage is free
                    // (its consumers arrived on `empty`) and its `full[s]` expects a stage.
                    unsafe {
                        let v = source.add(s * STAGE_CHUNKS + c).read().map(f32::to_bits);
                        dst.add(c).store_async(v, done);
                    }
                }
            }
            BandwidthMode::RedAsync => {
                cluster::wait_parity_cluster(&empty, phase ^ 1);
                let dst = cluster.remote(stage.cast::<u32>(), peer);
                let done = cluster.remote_barrier(&full, peer);
                for j in 0..STAGE_CHUNKS / THREADS {
                    let c = tid + j * THREADS;
                    // SAFETY: as for `st.async`: the peer zeroed the stage before freeing it;
                    // each word is added to once, completing its 4 bytes.
                    unsafe {
                        let v = source.add(s * STAGE_CHUNKS + c).read().map(f32::to_bits);
                        // Written out: a loop over the array would put it in local memory.
                        dst.add(4 * c).add_async(v[0], done);
                        dst.add(4 * c + 1).add_async(v[1], done);
                        dst.add(4 * c + 2).add_async(v[2], done);
                        dst.add(4 * c + 3).add_async(v[3], done);
                    }
                }
            }
            BandwidthMode::BulkCopy if tid == 0 => {
                cluster::wait_parity_cluster(&empty, phase ^ 1);
                let dst = cluster.remote(stage, peer);
                let done = cluster.remote_barrier(&full, peer);
                // SAFETY: as for `st.async`; 16 KiB, 16-byte aligned at both ends.
                unsafe {
                    cluster::copy_to_peer(dst, source.add(s * STAGE_CHUNKS), STAGE_BYTES, done)
                };
            }
            BandwidthMode::Multicast if tid == 0 && cluster.rank() == 0 => {
                cluster::wait_parity_cluster(&empty, phase ^ 1);
                let slice = ptx::cluster_id_x() * BUFFER_CHUNKS + s * STAGE_CHUNKS;
                let mask = ((1u32 << size) - 1) as u16;
                // SAFETY: the cluster's slice (clusters <= blocks <= slices); stage s is free
                // in every block (all `size` arrived on `empty`), each `full[s]` expects it.
                unsafe {
                    cluster::multicast_from_global(
                        stage.cast::<[u32; 4]>(),
                        global.add(slice as usize),
                        STAGE_BYTES,
                        &full,
                        mask,
                    )
                };
            }
            _ => {}
        }
        // Receive fill i.
        if tid == 0 {
            // SAFETY: `full[s]` expects one arrival per phase: this one.
            let _ = unsafe { ptx::mbarrier_arrive_expect_tx(full.slot(), STAGE_BYTES) };
        }
        cluster::wait_parity_cluster(&full, phase);
        for j in 0..STAGE_CHUNKS / THREADS {
            // SAFETY: the fill has landed (the phase completed); nothing writes the stage
            // until this block frees it below.
            let v = unsafe { stage.add(tid + j * THREADS).read() };
            sum = add4(sum, v.map(f32::to_bits));
            if mode == BandwidthMode::RedAsync {
                // The next fill adds into zeros.
                // SAFETY: as above; this thread's chunk.
                unsafe { stage.add(tid + j * THREADS).write([0.0; 4]) };
            }
        }
        // Every thread has read the stage before the feeder may refill it.
        ptx::barrier_sync();
        if tid == 0 {
            // SAFETY: the feeder's `empty[s]` expects this block's arrival for fill i; the
            // feeder waits at the last cluster barrier before exiting.
            unsafe { cluster.remote_barrier(&empty, feeder).arrive() };
        }
    }
    sum
}

/// See `dsmem_hang_cluster`.
///
/// # Safety
/// Its launch contract.
#[inline(always)]
pub(super) unsafe fn hang_cluster() {
    let cluster = Cluster::this();
    let slot = dynamic_shared().cast::<Mbarrier>();
    if ptx::thread_idx_x() == 0 {
        // SAFETY: the launch's 8 bytes of dynamic shared memory, this barrier's alone.
        let _ = unsafe { Barrier::init(slot, 1) };
        ptx::fence_mbarrier_init();
    }
    ptx::barrier_sync();
    // SAFETY: initialized above, before the block barrier.
    let barrier = unsafe { Barrier::from_initialized(slot) };
    if cluster.rank() == 0 {
        // Rank 1 never arrives: it is waiting for the arrival below.
        // SAFETY: every thread of this block runs it (the deadlock is the point).
        unsafe { cluster.sync() };
        if ptx::thread_idx_x() == 0 {
            // SAFETY: rank 1's barrier expects this arrival (never reached).
            unsafe { cluster.remote_barrier(&barrier, 1).arrive() };
        }
    } else {
        cluster::wait_parity_cluster(&barrier, 0);
        // SAFETY: as above.
        unsafe { cluster.sync() };
    }
}
