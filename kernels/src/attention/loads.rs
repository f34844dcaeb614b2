//! How the attention kernels' producer warpgroup fills the Q, K and V stages: tensor copies
//! issued by one thread ([`Tma`], every kernel but one), or `cp.async` by all 128 threads
//! ([`CpAsync`], the ablation's "no TMA"). The walk over tiles and key blocks is the same;
//! a [`Loads`] copies one 64-column box.

#![cfg(target_feature = "sm_90a")]

use super::{AttentionArgs, AttentionGeometry, AttentionSources};
use gpu::group::{Group, Threads};
use gpu::layout::{Mbarrier, PipelineSharedState, SharedRegion};
use gpu::memcpy_async::AlignedSize;
use gpu::memcpy_async::bulk::memcpy_async_tensor;
use gpu::memcpy_async::completion::Completion;
use gpu::pipeline::{
    BlockPipeline, BlockProducer, BulkOnly, CpAsyncOnly, FullArrival, ProducerStage,
};
use gpu::ptx::{self, Shared, TensorMapRef};
use gpu::wgmma::WARPGROUP_THREADS;

/// Q, K or V: which tensor a box comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Operand {
    Q,
    K,
    V,
}

/// A stage of a pipeline filled by `L`.
pub(super) type Stage<'a, 'p, L, const STAGES: usize> =
    ProducerStage<'a, BlockProducer<'p, STAGES, <L as Loads>::Kind>>;

/// The producer's copies (module docs).
pub(super) trait Loads: Sized {
    /// What completes a stage's `full` mbarrier.
    type Kind: FullArrival;
    /// Whether the copies write through the generic proxy, so that a consumer fences its view
    /// of a filled stage for the async proxy (`fence.proxy.async`) before `wgmma` reads it.
    const GENERIC_PROXY: bool;

    /// The producer warpgroup gives registers away (`setmaxnreg.dec`) to what its copies
    /// need; with [`Loads::consumer_registers`], `(producer + consumers * consumer) * 128` is at
    /// most the SM's 65536.
    ///
    /// # Safety
    /// The whole producer warpgroup, converged.
    unsafe fn producer_registers();

    /// A consumer warpgroup of `CONSUMERS` takes registers (`setmaxnreg.inc`).
    ///
    /// # Safety
    /// The whole consumer warpgroup, converged, after the producer gave its registers.
    unsafe fn consumer_registers<const CONSUMERS: u32>();

    /// The loads of producer-warpgroup thread `thread` (`0..128`) for these tensors, or `None`
    /// for a thread that copies nothing. The whole warpgroup calls it, converged.
    fn for_thread(
        thread: u32,
        g: AttentionGeometry,
        maps: [TensorMapRef; 3],
        sources: AttentionSources,
        args: &AttentionArgs,
    ) -> Option<Self>;

    /// A pipeline of `STAGES` on `barriers` (`2 * STAGES` mbarriers), each fill released by
    /// `consumers` warpgroups and completed by this kind's copies.
    ///
    /// # Safety
    /// Every thread of the block calls it with the same arguments; `barriers` is reserved for
    /// it; the producer side is used by exactly the threads [`Loads::for_thread`] gives loads.
    unsafe fn pipeline<const STAGES: usize>(
        barriers: SharedRegion<Mbarrier>,
        consumers: u32,
    ) -> BlockPipeline<STAGES, Self::Kind>;

    /// Copies the `rows x 64` box of `operand` whose first element is column `col`, head
    /// `head`, row `row` of sequence `batch` into `dst` (a 128-byte swizzled box), rows past
    /// the sequence's end as zeros, bound to `stage`.
    ///
    /// # Safety
    /// `dst` is 1 KiB aligned, `rows * 128` bytes of the stage's buffer, which is free
    /// (acquired) and read by nobody until the stage is waited for; the coordinates are
    /// inside the tensor but for the rows; the tensors are as the launch contract says.
    #[allow(clippy::too_many_arguments)]
    unsafe fn copy_box<const STAGES: usize>(
        &self,
        operand: Operand,
        dst: Shared<u8>,
        col: u32,
        head: u32,
        row: u32,
        batch: u32,
        rows: u32,
        stage: &Stage<'_, '_, Self, STAGES>,
    );
}

/// [`Loads::producer_registers`] and [`Loads::consumer_registers`] for a split of `producer`
/// registers per producer thread and, for 1, 2 and 3 consumer warpgroups, the registers of
/// each consumer thread (`setmaxnreg` takes them as immediates); each split fits the SM's
/// 65536 (checked at compile time).
macro_rules! register_split {
    (producer: $producer:literal, consumers: [$one:literal, $two:literal, $three:literal]) => {
        #[inline(always)]
        unsafe fn producer_registers() {
            // SAFETY: forwarded contract.
            unsafe { ptx::setmaxnreg_dec::<$producer>() }
        }

        #[inline(always)]
        unsafe fn consumer_registers<const CONSUMERS: u32>() {
            const {
                assert!(($producer + $one) * 128 <= 65536);
                assert!(($producer + 2 * $two) * 128 <= 65536);
                assert!(($producer + 3 * $three) * 128 <= 65536);
                assert!(CONSUMERS >= 1 && CONSUMERS <= 3);
            };
            // SAFETY (each): forwarded contract.
            match CONSUMERS {
                1 => unsafe { ptx::setmaxnreg_inc::<$one>() },
                2 => unsafe { ptx::setmaxnreg_inc::<$two>() },
                _ => unsafe { ptx::setmaxnreg_inc::<$three>() },
            }
        }
    };
}

/// Tensor copies (TMA) of 4-D maps `(d, heads, seqlen, batch)`, issued by one elected thread
/// of the warpgroup's first warp; their bytes complete the stage.
pub(super) struct Tma {
    maps: [TensorMapRef; 3],
}

impl Loads for Tma {
    type Kind = BulkOnly;
    const GENERIC_PROXY: bool = false;

    // One thread's copies: `(24 + 2 * 240) * 128 = 64512`, `(24 + 3 * 160) * 128 = 64512`.
    register_split!(producer: 24, consumers: [240, 240, 160]);

    #[inline(always)]
    fn for_thread(
        thread: u32,
        _: AttentionGeometry,
        maps: [TensorMapRef; 3],
        _: AttentionSources,
        _: &AttentionArgs,
    ) -> Option<Self> {
        if thread < 32 && ptx::elect_one() {
            for map in maps {
                ptx::prefetch_tensormap(map);
            }
            Some(Tma { maps })
        } else {
            None
        }
    }

    #[inline(always)]
    unsafe fn pipeline<const STAGES: usize>(
        barriers: SharedRegion<Mbarrier>,
        consumers: u32,
    ) -> BlockPipeline<STAGES, BulkOnly> {
        // SAFETY: forwarded contract; one thread produces.
        unsafe {
            BlockPipeline::<STAGES, BulkOnly>::init(
                barriers.at(0).cast::<PipelineSharedState<STAGES>>(),
                consumers,
            )
        }
    }

    #[inline(always)]
    unsafe fn copy_box<const STAGES: usize>(
        &self,
        operand: Operand,
        dst: Shared<u8>,
        col: u32,
        head: u32,
        row: u32,
        batch: u32,
        rows: u32,
        stage: &Stage<'_, '_, Self, STAGES>,
    ) {
        let map = self.maps[operand as usize];
        let at = [col as i32, head as i32, row as i32, batch as i32];
        // SAFETY: the map's box is `64 x rows` of 2-byte elements with 128-byte swizzle
        // (launch contract), `rows * 128` bytes; `dst` as the contract says; zero fill past
        // the sequence's end.
        unsafe { memcpy_async_tensor(dst, map, at, AlignedSize::<16>::of(rows * 128), stage) };
    }
}

/// `cp.async` of 16 bytes by each of the producer warpgroup's 128 threads in turn, written in
/// the layout the tensor copies give (128-byte swizzle), zero-filled past a sequence's end
/// (`src-size` 0: no row of another sequence is read); each thread's copies arrive on the
/// stage when they land (`cp.async.mbarrier.arrive.noinc`).
pub(super) struct CpAsync {
    threads: Threads,
    sources: AttentionSources,
    args: AttentionArgs,
    head_dim: u32,
}

impl Loads for CpAsync {
    type Kind = CpAsyncOnly;
    const GENERIC_PROXY: bool = true;

    // Every thread walks its copies: 24 and 40 spill; `(56 + 2 * 224) * 128 = 64512`, and the
    // d = 128 consumers fit 224 without spilling.
    register_split!(producer: 56, consumers: [224, 224, 152]);

    #[inline(always)]
    fn for_thread(
        thread: u32,
        g: AttentionGeometry,
        _: [TensorMapRef; 3],
        sources: AttentionSources,
        args: &AttentionArgs,
    ) -> Option<Self> {
        Some(CpAsync {
            threads: Threads::new(thread, WARPGROUP_THREADS),
            sources,
            args: *args,
            head_dim: g.head_dim,
        })
    }

    #[inline(always)]
    unsafe fn pipeline<const STAGES: usize>(
        barriers: SharedRegion<Mbarrier>,
        consumers: u32,
    ) -> BlockPipeline<STAGES, CpAsyncOnly> {
        // SAFETY: forwarded contract; the producer warpgroup's threads produce.
        unsafe {
            BlockPipeline::<STAGES>::init_partitioned(
                barriers.at(0).cast::<PipelineSharedState<STAGES>>(),
                WARPGROUP_THREADS,
                consumers,
            )
        }
    }

    #[inline(always)]
    unsafe fn copy_box<const STAGES: usize>(
        &self,
        operand: Operand,
        dst: Shared<u8>,
        col: u32,
        head: u32,
        row: u32,
        batch: u32,
        rows: u32,
        stage: &Stage<'_, '_, Self, STAGES>,
    ) {
        let a = &self.args;
        let (base, seqlen, heads) = match operand {
            Operand::Q => (self.sources.q, a.seqlen_q, a.heads_q),
            Operand::K => (self.sources.k, a.seqlen_kv, a.heads_kv),
            Operand::V => (self.sources.v, a.seqlen_kv, a.heads_kv),
        };
        let d = self.head_dim as usize;
        let valid_rows = seqlen.saturating_sub(row);
        // A box wholly past the end copies nothing but zeros: give it the sequence's first
        // row, so that no address past the tensor is formed.
        let first = if valid_rows == 0 { 0 } else { row };
        let element = ((batch as usize * seqlen as usize + first as usize) * heads as usize
            + head as usize)
            * d
            + col as usize;
        let base = (base as *const u8).wrapping_add(2 * element);
        let row_stride = heads as usize * d * 2;
        // 128 threads of 16 bytes cover 16 rows of 128 bytes a round: each thread keeps its
        // row (mod 16) and its chunk of the row, so its swizzled place in a row (the chunk
        // XOR the row mod 8) is the same every round.
        let rank = self.threads.thread_rank();
        let (row_in, chunk) = (rank / 8, rank % 8);
        let mut to = dst.addr() + row_in * 128 + ((chunk ^ (row_in % 8)) * 16);
        let mut from = base.wrapping_add(row_in as usize * row_stride + chunk as usize * 16);
        // This thread's rounds whose row exists, then the rest: counts known only at run
        // time, so the loops stay loops (unrolled, each round's address offset would be
        // hoisted out of the walk and held in registers).
        let rounds = rows / 16;
        let valid = valid_rows.saturating_sub(row_in).div_ceil(16).min(rounds);
        for _ in 0..valid {
            // SAFETY: the row exists: 16 readable bytes, 16-byte aligned (launch contract:
            // packed tensors, `col + 64 <= d`, d a multiple of 64); `to` is this thread's own
            // 16 bytes of the box (128-byte swizzle).
            unsafe { ptx::cp_async_cg(to, from) };
            to += 2048;
            from = from.wrapping_add(16 * row_stride);
        }
        for _ in valid..rounds {
            // SAFETY: reads nothing (`src-size` 0) from the tile's first row, which exists;
            // `to` as above.
            unsafe { ptx::cp_async_cg_zfill(to, base, 0) };
            to += 2048;
        }
        // SAFETY: the stage is open (acquired, not committed).
        unsafe { stage.bind_copies() };
    }
}
