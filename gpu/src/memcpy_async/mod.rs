//! `memcpy_async`: global -> shared copies bound to what they complete on
//! (`cuda::memcpy_async`), by concern:
//!
//! | module | holds |
//! |---|---|
//! | [`completion`] | what a copy completes on: [`Completion`](completion::Completion) for `cp.async` (a barrier, a pipeline stage), [`BulkCompletion`](completion::BulkCompletion) for the copy engine's bytes (sm_90) |
//! | [`cp_async`] | the copies every thread issues with `cp.async`: one thread's, a group's, zero-filled, 2-D tiles |
//! | [`bulk`] (sm_90) | the copy engine's: one thread moves a whole buffer (`cp.async.bulk`) or a box of a tensor (`cp.async.bulk.tensor`), in or out |
//!
//! Both kinds take their byte count as an [`AlignedSize`]. The threads that share out a group
//! copy are a [`Group`](crate::group::Group).
//!
//! # Which completion mechanism?
//!
//! All of them issue the same copies; they differ in how a thread learns the data landed
//! (on sm_90, [`memcpy_async_bulk`](bulk::memcpy_async_bulk) instead has the copy engine move a
//! whole buffer for one thread, and [`memcpy_async_tensor`](bulk::memcpy_async_tensor) a box of
//! a tensor described by a tensor map, their bytes completing a phase of a
//! [`Barrier`](crate::barrier::Barrier) or of a [`BulkPipeline`](crate::pipeline::BulkPipeline)
//! stage — or of a [`BlockPipeline`](crate::pipeline::BlockPipeline) stage, if the pipeline's
//! mbarriers were fenced for the copy engine: see
//! [`CopyEngineFenced`](crate::pipeline::CopyEngineFenced)):
//!
//! - **Async-groups** ([`ThreadPipeline`](crate::pipeline::ThreadPipeline),
//!   `cp.async.commit_group` / `wait_group`): per-thread and the cheapest bookkeeping (no shared
//!   state, `DEPBAR` on a scoreboard). A thread only knows its *own* copies landed, so when
//!   threads read each other's data a `barrier.sync` follows the wait — every thread of the
//!   block then waits for the slowest. Right for kernels that already sync the block once per
//!   step (classic multistage GEMM mainloops).
//! - **mbarrier with `.noinc` arrivals** ([`BlockPipeline`](crate::pipeline::BlockPipeline)):
//!   copies complete a barrier phase; any thread can wait for any stage, and a separate
//!   `empty` barrier tells producers when a buffer is free. No block-wide barrier, so
//!   producers and consumers can be different warps (warp specialization) and a consumer never
//!   waits for unrelated threads.
//! - **Split arrive/wait barrier** ([`Barrier`](crate::barrier::Barrier)): each bound
//!   `memcpy_async` is an arrival made when its copies land (`.noinc`), and each thread also
//!   arrives itself; the token from `arrive` is waited on later. The most flexible
//!   (independent work between arrive and wait, `arrive_and_drop`); the expected count must
//!   include the bound calls.

#[cfg(target_feature = "sm_90")]
pub mod bulk;
pub mod completion;
pub mod cp_async;

/// A byte count that is a multiple of `ALIGN` (4, 8 or 16), promising that both addresses
/// of the copy are aligned to `ALIGN` too. `ALIGN` selects the `cp.async` form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlignedSize<const ALIGN: u32> {
    bytes: u32,
}

impl<const ALIGN: u32> AlignedSize<ALIGN> {
    const VALID: () = assert!(
        ALIGN == 4 || ALIGN == 8 || ALIGN == 16,
        "cp.async copies 4, 8 or 16 bytes: ALIGN must be one of them"
    );

    /// `bytes`, if it is a multiple of `ALIGN`.
    #[inline(always)]
    #[must_use]
    pub const fn new(bytes: u32) -> Option<Self> {
        let () = Self::VALID;
        if bytes.is_multiple_of(ALIGN) {
            Some(AlignedSize { bytes })
        } else {
            None
        }
    }

    /// `bytes` rounded up to a multiple of `ALIGN`: the size that cannot fail at run time (a
    /// tile of `cols * 4` bytes for 4-byte copies, say). The copy moves the rounded size: pair
    /// it with [`memcpy_async_zfill`](cp_async::memcpy_async_zfill) and the true count where
    /// the source ends before it. Saturates at the largest multiple of `ALIGN` below 2^32.
    #[inline(always)]
    #[must_use]
    pub const fn round_up(bytes: u32) -> Self {
        let () = Self::VALID;
        let bytes = match bytes.checked_next_multiple_of(ALIGN) {
            Some(b) => b,
            None => u32::MAX / ALIGN * ALIGN,
        };
        AlignedSize { bytes }
    }

    /// `bytes` for a count known at compile time; a count that is not a multiple of `ALIGN`
    /// fails to compile when used in a `const`; at run time use [`AlignedSize::new`] (an
    /// `Option`) or [`AlignedSize::round_up`] (infallible).
    #[inline(always)]
    pub const fn of(bytes: u32) -> Self {
        match Self::new(bytes) {
            Some(size) => size,
            None => panic!("the size is not a multiple of its alignment"),
        }
    }

    /// The byte count.
    #[inline(always)]
    pub const fn bytes(self) -> u32 {
        self.bytes
    }

    /// Number of `ALIGN`-byte chunks.
    #[inline(always)]
    pub const fn chunks(self) -> u32 {
        self.bytes / ALIGN
    }
}
