//! The DSMEM kernels' declarations ([`gpu::kernel!`]): one entry point per experiment, each
//! a thin call of the kernel body with its target or mode as a constant (folded away).
//! sm_90 only: the sm_80 PTX holds none of them.

#[allow(unused_imports)]
use super::THREADS;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
use super::kernels;
use super::{BandwidthKernel, BandwidthMode, LatencyKernel, LatencyTarget};

/// `(chain, hops, distance, end, cycles)`: see the [module docs](super).
pub type LatencyParams = (*const u32, u32, u32, *mut u32, *mut u64);
/// `(global, slices, repeats, distance, sums)`: see the [module docs](super).
pub type BandwidthParams = (*const u32, u32, u32, u32, *mut u32);

/// A line of [`LATENCY_KERNELS`] ([`gpu::kernel_table!`]): `target:` ([`LatencyTarget`]) and
/// `doc:`; `@entry` declares the kernel, `@row` is its [`LatencyKernel`].
macro_rules! latency_row {
    (@entry $name:ident { target: $target:ident, doc: $doc:literal }) => {
        gpu::kernel! {
            #[doc = $doc]
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
    (@row $name:ident { target: $target:ident, doc: $doc:literal }) => {
        LatencyKernel { name: $name.name(), target: LatencyTarget::$target, entry: $name }
    };
}

gpu::kernel_table! {
    /// Every latency experiment, the baseline first.
    pub static LATENCY_KERNELS: [LatencyKernel] by latency_row;
    dsmem_latency_local { target: Local, doc: "Thread 0 of each block chases the chain in its own shared memory (`ld.shared`)." }
    dsmem_latency_remote { target: Remote, doc: "Thread 0 of each block chases the chain in the shared memory of the block `distance` ranks on (`ld.shared::cluster`)." }
    dsmem_latency_l2 { target: L2, doc: "Thread 0 of each block chases a 512 KiB chain in global memory (`ld.global.cg`: L2)." }
    dsmem_latency_dram { target: Dram, doc: "Thread 0 of each block chases a 256 MiB chain in global memory (`ld.global.cg`: DRAM)." }
}

/// A line of [`BANDWIDTH_KERNELS`] ([`gpu::kernel_table!`]): `mode:` ([`BandwidthMode`]) and
/// `doc:`; `@entry` declares the kernel, `@row` is its [`BandwidthKernel`].
macro_rules! bandwidth_row {
    (@entry $name:ident { mode: $mode:ident, doc: $doc:literal }) => {
        gpu::kernel! {
            #[doc = $doc]
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
    (@row $name:ident { mode: $mode:ident, doc: $doc:literal }) => {
        BandwidthKernel { name: $name.name(), mode: BandwidthMode::$mode, entry: $name }
    };
}

gpu::kernel_table! {
    /// Every bandwidth experiment, the baseline first.
    pub static BANDWIDTH_KERNELS: [BandwidthKernel] by bandwidth_row;
    dsmem_bandwidth_local_read { mode: LocalRead, doc: "`ld.shared.v4` of the block's own source buffer." }
    dsmem_bandwidth_remote_read { mode: RemoteRead, doc: "`ld.shared::cluster.v4` of the source buffer of the block `distance` ranks on." }
    dsmem_bandwidth_remote_write { mode: RemoteWrite, doc: "`st.shared::cluster.v4` into the receive buffer of the block `distance` ranks on." }
    dsmem_bandwidth_st_async { mode: StAsync, doc: "`st.async.v4` into the stages of the block `distance` ranks on (two stages, full and empty barriers, remote arrivals)." }
    dsmem_bandwidth_red_async { mode: RedAsync, doc: "`red.async.add.u32` into the zeroed stages of the block `distance` ranks on (as `st.async`, a word at a time)." }
    dsmem_bandwidth_bulk_copy { mode: BulkCopy, doc: "Block-to-block bulk copies of 16 KiB into the stages of the block `distance` ranks on." }
    dsmem_bandwidth_multicast { mode: Multicast, doc: "Rank 0 multicasts 16 KiB copies of its cluster's global slice into every block's stages." }
    dsmem_bandwidth_l2_read { mode: L2Read, doc: "`ld.global.cg.v4` of the block's own global slice (L2 hits)." }
    dsmem_bandwidth_dram_read { mode: DramRead, doc: "`ld.global.cg.v4` of a new global slice each repeat (DRAM)." }
}

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
