//! The DSMEM kernels' declarations ([`gpu::kernel!`]): one entry point per experiment, each
//! a thin call of the kernel body with its target or mode as a constant (folded away).
//! sm_90 only: the sm_80 PTX holds none of them.

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
use super::kernels;
#[allow(unused_imports)]
use super::{BandwidthMode, LatencyTarget, THREADS};

/// `(chain, hops, distance, end, cycles)`: see the [module docs](super).
pub type LatencyParams = (*const u32, u32, u32, *mut u32, *mut u64);
/// `(global, slices, repeats, distance, sums)`: see the [module docs](super).
pub type BandwidthParams = (*const u32, u32, u32, u32, *mut u32);

macro_rules! latency_kernel {
    ($(#[$doc:meta])* $name:ident => $target:ident) => {
        gpu::kernel! {
            $(#[$doc])*
            ///
            /// # Safety
            /// Blocks of [`THREADS`] threads with [`super::SHARED_BYTES`] of dynamic shared
            /// memory, any cluster shape with `distance` below its size; `chain` holds the
            /// target's chain ([`super::ChainKind`]: each slot's word the next slot, times
            /// its `slot_words`); `end` one word and `cycles` one per block.
            pub fn $name(chain: *const u32, hops: u32, distance: u32, end: *mut u32, cycles: *mut u64)
                [max_threads = THREADS]
                [device if target_feature = "sm_90"]
            {
                // SAFETY: forwarded launch contract.
                unsafe { kernels::latency(chain, hops, distance, end, cycles, LatencyTarget::$target) }
            }
        }
    };
}

latency_kernel!(
    /// Thread 0 of each block chases the chain in its own shared memory (`ld.shared`).
    dsmem_latency_local => Local
);
latency_kernel!(
    /// Thread 0 of each block chases the chain in the shared memory of the block `distance`
    /// ranks on (`ld.shared::cluster`).
    dsmem_latency_remote => Remote
);
latency_kernel!(
    /// Thread 0 of each block chases a 512 KiB chain in global memory (`ld.global.cg`: L2).
    dsmem_latency_l2 => L2
);
latency_kernel!(
    /// Thread 0 of each block chases a 256 MiB chain in global memory (`ld.global.cg`:
    /// DRAM).
    dsmem_latency_dram => Dram
);

macro_rules! bandwidth_kernel {
    ($(#[$doc:meta])* $name:ident => $mode:ident) => {
        gpu::kernel! {
            $(#[$doc])*
            ///
            /// # Safety
            /// Blocks of [`THREADS`] threads with [`super::SHARED_BYTES`] of dynamic shared
            /// memory, a 1-D grid of at most `slices` blocks and of whole clusters,
            /// `distance` below the cluster's size; `global` holds `slices` slices of
            /// [`super::BUFFER_BYTES`], 16-byte aligned; `sums` one word per thread of the
            /// grid.
            pub fn $name(global: *const u32, slices: u32, repeats: u32, distance: u32, sums: *mut u32)
                [max_threads = THREADS]
                [device if target_feature = "sm_90"]
            {
                // SAFETY: forwarded launch contract.
                unsafe { kernels::bandwidth(global.cast(), slices, repeats, distance, sums, BandwidthMode::$mode) }
            }
        }
    };
}

bandwidth_kernel!(
    /// `ld.shared.v4` of the block's own source buffer.
    dsmem_bandwidth_local_read => LocalRead
);
bandwidth_kernel!(
    /// `ld.shared::cluster.v4` of the source buffer of the block `distance` ranks on.
    dsmem_bandwidth_remote_read => RemoteRead
);
bandwidth_kernel!(
    /// `st.shared::cluster.v4` into the receive buffer of the block `distance` ranks on.
    dsmem_bandwidth_remote_write => RemoteWrite
);
bandwidth_kernel!(
    /// `st.async.v4` into the stages of the block `distance` ranks on (two stages, full and
    /// empty barriers, remote arrivals).
    dsmem_bandwidth_st_async => StAsync
);
bandwidth_kernel!(
    /// `red.async.add.u32` into the zeroed stages of the block `distance` ranks on (as
    /// `st.async`, a word at a time).
    dsmem_bandwidth_red_async => RedAsync
);
bandwidth_kernel!(
    /// Block-to-block bulk copies of 16 KiB into the stages of the block `distance` ranks on.
    dsmem_bandwidth_bulk_copy => BulkCopy
);
bandwidth_kernel!(
    /// Rank 0 multicasts 16 KiB copies of its cluster's global slice into every block's
    /// stages.
    dsmem_bandwidth_multicast => Multicast
);
bandwidth_kernel!(
    /// `ld.global.cg.v4` of the block's own global slice (L2 hits).
    dsmem_bandwidth_l2_read => L2Read
);
bandwidth_kernel!(
    /// `ld.global.cg.v4` of a new global slice each repeat (DRAM).
    dsmem_bandwidth_dram_read => DramRead
);

gpu::kernel! {
    /// Deadlocks on purpose, to test the host's watchdog on clusters (the workloads never
    /// run it): in a cluster of two, rank 0 waits at the cluster barrier for rank 1, and rank
    /// 1 waits, before arriving there, for an arrival rank 0 makes only after the barrier.
    ///
    /// # Safety
    /// Clusters of 2 blocks of [`super::HANG_THREADS`] threads with 8 bytes of dynamic shared
    /// memory. It never returns: the host's watchdog must end the program.
    // No launch bounds: the PTX patcher places them after a parameter list's own line, which
    // a kernel without parameters does not have (nor does it need the registers).
    pub fn dsmem_hang_cluster()
        [device if target_feature = "sm_90"]
    {
        // SAFETY: forwarded launch contract.
        unsafe { kernels::hang_cluster() }
    }
}
