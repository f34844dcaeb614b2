//! `memcpy_async`: global -> shared copies with `cp.async`, bound to a completion mechanism.
//!
//! # The four forms
//!
//! | form | C++ | who copies |
//! |---|---|---|
//! | [`memcpy_async`]`(dst, src, size, &barrier)` | `cuda::memcpy_async(dst, src, size, barrier)` | this thread |
//! | [`memcpy_async_group`]`(&group, dst, src, size, &barrier)` | `cuda::memcpy_async(group, dst, src, size, barrier)` | the group, split |
//! | [`memcpy_async`]`(dst, src, size, &stage)` | `cuda::memcpy_async(dst, src, size, pipeline)` | this thread |
//! | [`memcpy_async_group`]`(&group, dst, src, size, &stage)` | `cuda::memcpy_async(group, dst, src, size, pipeline)` | the group, split |
//!
//! `stage` is the [`ProducerStage`] of a [`ThreadPipeline`](crate::pipeline::ThreadPipeline) or
//! [`BlockPipeline`](crate::pipeline::BlockPipeline) — the stage acquired and not yet committed.
//! [`memcpy_async_zfill`] adds what `cuda::memcpy_async` lacks: a ragged source whose tail is
//! filled with zeros by the copy itself (`cp.async`'s `src-size` operand), with no branch; and
//! [`memcpy_async_tile`] copies a 2-D tile of strided rows (a GEMM operand tile) the same way,
//! zero-filling whatever hangs over the edge of its matrix, and
//! [`memcpy_async_tile_transposed`] lands such a tile transposed, one element per copy (a GEMM
//! operand stored k-major, so that one `LDS.128` reads four rows of one column).
//!
//! # Size and alignment pick the instruction
//!
//! The size is an [`AlignedSize<ALIGN>`] (like `cuda::aligned_size_t<ALIGN>`): the byte count
//! and both addresses are multiples of `ALIGN`, and the copy is cut into `ALIGN`-byte chunks:
//!
//! | `ALIGN` | instruction | SASS |
//! |---|---|---|
//! | 16 | `cp.async.cg.shared.global ..., 16` (L2 only) | `LDGSTS.E.BYPASS.128` |
//! | 8 | `cp.async.ca.shared.global ..., 8` | `LDGSTS.E.64` |
//! | 4 | `cp.async.ca.shared.global ..., 4` | `LDGSTS.E` |
//!
//! A group copy gives chunk `i` to the thread of rank `i % group size`, so consecutive threads
//! copy consecutive chunks (coalesced); a group size and chunk count known at compile time
//! unroll to straight-line copies.
//!
//! # Which completion mechanism?
//!
//! All of them issue the same copies; they differ in how a thread learns the data landed
//! (on sm_90, [`memcpy_async_bulk`] instead has the copy engine move a whole buffer for one
//! thread, and [`memcpy_async_tensor`] a box of a tensor described by a tensor map, their bytes
//! completing a phase of a [`Barrier`] or a [`BulkPipeline`](crate::pipeline::BulkPipeline)
//! stage):
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
//! - **Split arrive/wait barrier** ([`Barrier`]): each bound `memcpy_async` is an arrival made
//!   when its copies land (`.noinc`), and each thread also arrives itself; the token from
//!   `arrive` is waited on later. The most flexible (independent work between arrive and wait,
//!   `arrive_and_drop`); the expected count must include the bound calls.

use crate::barrier::Barrier;
use crate::pipeline::{CpAsyncProducer, ProducerStage};
use crate::ptx;
use crate::shared::Shared;

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

    /// `bytes` for a count known at compile time; a count that is not a multiple of `ALIGN`
    /// fails to compile when used in a `const`.
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

/// Threads that copy together: a group copy splits its chunks over them by rank.
pub trait Group {
    /// This thread's rank in the group, `0..size()`.
    fn thread_rank(&self) -> u32;
    /// Number of threads in the group.
    fn size(&self) -> u32;
}

/// The calling thread alone.
pub struct ThisThread;

impl Group for ThisThread {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        0
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        1
    }
}

/// The calling thread's warp: 32 threads, rank = lane. All 32 lanes must take part.
///
/// The lane is read once, when the group is made, so copies in a loop cost no special-register
/// read (as with `cooperative_groups::tiled_partition<32>`).
#[derive(Clone, Copy)]
pub struct Warp {
    lane: u32,
}

impl Warp {
    /// This thread's warp (`mov.u32 r, %laneid;`).
    #[inline(always)]
    pub fn this_warp() -> Warp {
        Warp {
            lane: ptx::lane_id(),
        }
    }

    /// This thread's lane, `0..32`.
    #[inline(always)]
    pub fn lane(&self) -> u32 {
        self.lane
    }

    /// The warp's index in a one-dimensional block (`%tid.x / 32`), broadcast from lane 0
    /// with `shfl.sync` so that ptxas knows it is warp-uniform: branching on it (producer
    /// warp / consumer warp) keeps each role's loop on the uniform datapath. All 32 lanes
    /// must call it together.
    #[inline(always)]
    pub fn index_in_block(&self) -> u32 {
        ptx::shfl_sync_idx(ptx::thread_idx_x() / 32, 0)
    }
}

impl Group for Warp {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        self.lane
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        32
    }
}

/// A set of threads whose ranks and size the caller assigns (the first `size` threads of a
/// block, or one role of a warp-specialized kernel). Give it a size known at compile time
/// and a group copy of a tile of known size unrolls, after inlining, to straight-line copies
/// with constant offsets.
#[derive(Clone, Copy)]
pub struct Threads {
    rank: u32,
    size: u32,
}

impl Threads {
    /// The thread of rank `rank` in a group of `size`; traps (the launch fails) if
    /// `rank >= size`.
    #[inline(always)]
    pub fn new(rank: u32, size: u32) -> Self {
        if rank >= size {
            ptx::trap();
        }
        Threads { rank, size }
    }
}

impl Group for Threads {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        self.rank
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        self.size
    }
}

/// The whole block, which must be one-dimensional: rank = `%tid.x`, size = `%ntid.x`, read
/// once when the group is made.
#[derive(Clone, Copy)]
pub struct Block {
    rank: u32,
    size: u32,
}

impl Block {
    /// This thread's block.
    #[inline(always)]
    pub fn this_block() -> Block {
        Block {
            rank: ptx::thread_idx_x(),
            size: ptx::block_dim_x(),
        }
    }
}

impl Group for Block {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        self.rank
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        self.size
    }
}

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

/// Copies one `ALIGN`-byte chunk: `cp.async.cg` for 16 bytes, `cp.async.ca` otherwise.
///
/// # Safety
/// `src` holds `ALIGN` readable bytes of global memory and `dst` is `ALIGN` bytes of this
/// block's shared memory, both `ALIGN`-aligned; nothing touches `dst` until the copy is
/// known complete.
#[inline(always)]
unsafe fn copy_chunk<const ALIGN: u32>(dst: u32, src: *const u8) {
    // SAFETY (both arms): the caller guarantees both addresses hold ALIGN aligned bytes.
    if ALIGN == 16 {
        unsafe { ptx::cp_async_cg(dst, src) }
    } else {
        unsafe { ptx::cp_async_ca::<ALIGN>(dst, src) }
    }
}

/// Copies one chunk of which only the first `src_bytes` come from `src`; the rest is zeroed.
///
/// # Safety
/// As [`copy_chunk`], except that only the first `src_bytes` (at most `ALIGN`) of `src` need
/// be readable.
#[inline(always)]
unsafe fn copy_chunk_zfill<const ALIGN: u32>(dst: u32, src: *const u8, src_bytes: u32) {
    // SAFETY (both arms): the caller guarantees the addresses and the readable prefix.
    if ALIGN == 16 {
        unsafe { ptx::cp_async_cg_zfill(dst, src, src_bytes) }
    } else {
        unsafe { ptx::cp_async_ca_zfill::<ALIGN>(dst, src, src_bytes) }
    }
}

/// This thread copies `size` bytes from `src` (global) to `dst` (shared), bound to
/// `completion`.
///
/// # Safety
/// 1. `src` points to `size.bytes()` readable bytes of global memory, `dst` to as many bytes
///    of this block's shared memory; both are aligned to `ALIGN`.
/// 2. `completion` is open: a [`Barrier`] whose current phase still expects this call's
///    arrival (see the `Completion` impl for [`Barrier`]), or the stage acquired for this copy.
/// 3. Nothing reads `dst` (or writes `src` or `dst`) before the completion says the copy
///    landed: the barrier phase completed, or the stage was committed and then waited for.
#[inline(always)]
pub unsafe fn memcpy_async<T, U, C: Completion, const ALIGN: u32>(
    dst: Shared<T>,
    src: *const U,
    size: AlignedSize<ALIGN>,
    completion: &C,
) {
    // SAFETY: forwarded contract; the single-thread group is this thread.
    unsafe { memcpy_async_group(&ThisThread, dst, src, size, completion) }
}

/// The group's threads copy `size` bytes from `src` (global) to `dst` (shared) together,
/// each taking every `group.size()`-th chunk, bound to `completion`. Every thread of the
/// group calls it with the same arguments.
///
/// # Safety
/// As [`memcpy_async`], for every thread of `group`; each thread's `completion` covers its
/// own share (a block pipeline's `full` barrier expects every producer to commit).
#[inline(always)]
pub unsafe fn memcpy_async_group<G: Group, T, U, C: Completion, const ALIGN: u32>(
    group: &G,
    dst: Shared<T>,
    src: *const U,
    size: AlignedSize<ALIGN>,
    completion: &C,
) {
    let src = src.cast::<u8>();
    let dst = dst.addr();
    let mut chunk = group.thread_rank();
    while chunk < size.chunks() {
        let offset = chunk * ALIGN;
        // SAFETY: chunk < chunks, so both addresses are inside the ranges the caller vouches
        // for, and aligned to ALIGN.
        unsafe { copy_chunk::<ALIGN>(dst + offset, src.add(offset as usize)) };
        chunk += group.size();
    }
    // SAFETY: the completion is open (caller).
    unsafe { completion.bind_copies() };
}

/// Like [`memcpy_async_group`], but only the first `src_bytes` come from `src`: the rest of
/// `dst` (up to `size`) is filled with zeros by the copy instructions themselves. For ragged
/// tails: `size` is the padded tile, `src_bytes` what is left of the input.
///
/// # Safety
/// As [`memcpy_async_group`], except that only `min(src_bytes, size)` bytes of `src` need be
/// readable; `src` must still be aligned to `ALIGN`.
#[inline(always)]
pub unsafe fn memcpy_async_zfill<G: Group, T, U, C: Completion, const ALIGN: u32>(
    group: &G,
    dst: Shared<T>,
    src: *const U,
    size: AlignedSize<ALIGN>,
    src_bytes: u32,
    completion: &C,
) {
    let src = src.cast::<u8>();
    let dst = dst.addr();
    let mut chunk = group.thread_rank();
    while chunk < size.chunks() {
        let offset = chunk * ALIGN;
        let valid = src_bytes.saturating_sub(offset).min(ALIGN);
        // A chunk entirely past the source reads nothing; point it at the (valid) start so no
        // out-of-range address is ever formed.
        let from = if valid == 0 {
            src
        } else {
            // SAFETY: offset < src_bytes, inside the readable range.
            unsafe { src.add(offset as usize) }
        };
        // SAFETY: dst + offset is inside `size`; `from` has `valid` readable bytes.
        unsafe { copy_chunk_zfill::<ALIGN>(dst + offset, from, valid) };
        chunk += group.size();
    }
    // SAFETY: the completion is open (caller).
    unsafe { completion.bind_copies() };
}

/// The shape of a 2-D tile: `rows` rows of `row_bytes` bytes (a multiple of the copy's
/// `ALIGN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileShape {
    /// Rows.
    pub rows: u32,
    /// Bytes per row.
    pub row_bytes: u32,
}

/// A 2-D tile of global memory, possibly hanging over the edge of its matrix: rows
/// `row_stride` bytes apart from `base`, of which only the first `valid_rows` exist, each with
/// only its first `valid_row_bytes`; the rest of the tile reads as zeros.
#[derive(Clone, Copy, Debug)]
pub struct GlobalTile<U> {
    /// The tile's first element.
    pub base: *const U,
    /// Bytes from one row to the next in global memory.
    pub row_stride: usize,
    /// Rows that exist (the rest are zero-filled).
    pub valid_rows: u32,
    /// Bytes of each row that exist (the rest are zero-filled).
    pub valid_row_bytes: u32,
}

/// The group's threads copy a `shape` tile from `src` (global, strided rows) to `dst` (shared,
/// rows `dst_row_bytes` apart), bound to `completion`: chunk `i` (row-major over the tile,
/// `ALIGN` bytes each) goes to the thread of rank `i % group size`, so consecutive threads
/// copy consecutive chunks of a row (coalesced). Whatever lies outside the valid part of
/// `src` is written as zeros by the copies themselves (`cp.async`'s `src-size`), so a tile at
/// the edge of a matrix of any size needs no other code. A tile entirely inside takes the
/// plain copies (`LDGSTS.E.BYPASS.128` for 16 bytes), one at an edge the zero-filling ones
/// (`... .ZFILL`); the branch is uniform across the group.
///
/// # Safety
/// 1. Every row `r < valid_rows` of `src` has `valid_row_bytes` readable bytes of global
///    memory at `base + r * row_stride`; `base`, `row_stride` and `dst_row_bytes` are
///    multiples of `ALIGN`, and so is `shape.row_bytes`.
/// 2. `dst` starts `shape.rows * dst_row_bytes` bytes of this block's shared memory, `ALIGN`
///    aligned, that nothing touches until the completion says the copies landed.
/// 3. Every thread of `group` calls it with the same arguments; `completion` is open for each
///    thread's binding (as for [`memcpy_async_group`]).
#[inline(always)]
pub unsafe fn memcpy_async_tile<G: Group, T, U, C: Completion, const ALIGN: u32>(
    group: &G,
    dst: Shared<T>,
    dst_row_bytes: u32,
    src: GlobalTile<U>,
    shape: TileShape,
    completion: &C,
) {
    let () = AlignedSize::<ALIGN>::VALID;
    let chunks_per_row = shape.row_bytes / ALIGN;
    let chunks = shape.rows * chunks_per_row;
    let base = src.base.cast::<u8>();
    let dst = dst.addr();
    let inside = src.valid_rows >= shape.rows && src.valid_row_bytes >= shape.row_bytes;
    // A trip count that does not depend on the rank: with the tile's shape and the group's
    // size known, the loop unrolls to straight-line copies.
    for round in 0..chunks.div_ceil(group.size()) {
        let chunk = group.thread_rank() + round * group.size();
        if chunk >= chunks {
            break;
        }
        let (row, offset) = (chunk / chunks_per_row, chunk % chunks_per_row * ALIGN);
        let to = dst + row * dst_row_bytes + offset;
        let from = base.wrapping_add(row as usize * src.row_stride + offset as usize);
        if inside {
            // SAFETY: the whole tile is readable (caller, 1); `to` is inside `dst` (2).
            unsafe { copy_chunk::<ALIGN>(to, from) };
        } else {
            let valid = if row < src.valid_rows {
                src.valid_row_bytes.saturating_sub(offset).min(ALIGN)
            } else {
                0
            };
            // A chunk past the edge reads nothing; point it at the tile's (valid) base so no
            // address outside the matrix is ever given to the copy.
            let from = if valid == 0 { base } else { from };
            // SAFETY: `from` has `valid` readable bytes (caller, 1); `to` is inside `dst`.
            unsafe { copy_chunk_zfill::<ALIGN>(to, from, valid) };
        }
    }
    // SAFETY: the completion is open (caller, 3).
    unsafe { completion.bind_copies() };
}

/// Like [`memcpy_async_tile`], but the tile lands transposed: element `(r, c)` of `src` (each
/// element `ALIGN` bytes: a `T`) goes to `dst + c * dst_row_bytes + r * ALIGN`, so the
/// source's columns become the destination's rows. The reads stay coalesced (chunk `i`,
/// row-major over the source tile, goes to the thread of rank `i % group size`); every copy
/// moves one element (`cp.async.ca` of 4 or 8 bytes, `LDGSTS.E` / `LDGSTS.E.64`, or 16). For a
/// GEMM operand stored k-major in shared memory, so that one `LDS.128` reads four
/// consecutive rows of one column. Whether the scattered stores conflict in shared-memory
/// banks is the caller's layout: rows of the destination padded by one 16-byte step, with
/// four source rows per warp instruction, keep them conflict-free.
///
/// # Safety
/// As [`memcpy_async_tile`], with `dst` spanning `shape.row_bytes / ALIGN` rows of
/// `dst_row_bytes` (each at least `shape.rows * ALIGN`), and `size_of::<T>() == ALIGN`.
#[inline(always)]
pub unsafe fn memcpy_async_tile_transposed<G: Group, T, C: Completion, const ALIGN: u32>(
    group: &G,
    dst: Shared<T>,
    dst_row_bytes: u32,
    src: GlobalTile<T>,
    shape: TileShape,
    completion: &C,
) {
    let () = AlignedSize::<ALIGN>::VALID;
    const {
        assert!(
            size_of::<T>() == ALIGN as usize,
            "one copy moves one element"
        )
    };
    let per_row = shape.row_bytes / ALIGN;
    let chunks = shape.rows * per_row;
    let base = src.base.cast::<u8>();
    let dst = dst.addr();
    let inside = src.valid_rows >= shape.rows && src.valid_row_bytes >= shape.row_bytes;
    for round in 0..chunks.div_ceil(group.size()) {
        let chunk = group.thread_rank() + round * group.size();
        if chunk >= chunks {
            break;
        }
        let (row, col) = (chunk / per_row, chunk % per_row);
        let to = dst + col * dst_row_bytes + row * ALIGN;
        let from = base.wrapping_add(row as usize * src.row_stride + (col * ALIGN) as usize);
        if inside {
            // SAFETY: the whole tile is readable (caller); `to` is inside `dst`.
            unsafe { copy_chunk::<ALIGN>(to, from) };
        } else {
            let valid = row < src.valid_rows && (col + 1) * ALIGN <= src.valid_row_bytes;
            // An element past the edge reads nothing: point it at the tile's (valid) base.
            let (from, bytes) = if valid { (from, ALIGN) } else { (base, 0) };
            // SAFETY: `from` has `bytes` readable bytes (caller); `to` is inside `dst`.
            unsafe { copy_chunk_zfill::<ALIGN>(to, from, bytes) };
        }
    }
    // SAFETY: the completion is open (caller).
    unsafe { completion.bind_copies() };
}

/// What a bulk copy's completion is bound to (sm_90): an mbarrier whose current phase counts
/// the copy's bytes. Implemented by [`Barrier`] and by a
/// [`BulkPipeline`](crate::pipeline::BulkPipeline)'s producer stage.
#[cfg(target_feature = "sm_90")]
pub trait BulkCompletion {
    /// The mbarrier the bytes complete on.
    #[doc(hidden)]
    fn transaction_barrier(&self) -> Shared<crate::layout::Mbarrier>;

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
    fn transaction_barrier(&self) -> Shared<crate::layout::Mbarrier> {
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
    fn transaction_barrier(&self) -> Shared<crate::layout::Mbarrier> {
        self.slot()
    }
}

/// This thread alone copies `size` bytes from `src` (global) to `dst` (shared) with one bulk
/// copy of the copy engine (sm_90, TMA): `mbarrier.expect_tx` of the bytes on the completion's
/// barrier, then `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes` (SASS
/// `UBLKCP.S.G`). The barrier's phase completes when its arrivals are in and the bytes have
/// landed. One elected thread issues it for the whole buffer ([`crate::ptx::elect_one`]).
/// `l2`: an L2 policy for the reads of `src` (`.L2::cache_hint`, e.g.
/// [`crate::ptx::l2_policy_evict_first`] for data read once), or `None`.
///
/// # Safety
/// 1. `src` holds `size.bytes()` (a non-zero multiple of 16) readable bytes of global memory,
///    `dst` as many of this block's shared memory, both 16-byte aligned.
/// 2. The completion's barrier is initialized, its initialization made visible to the copy
///    engine ([`crate::ptx::fence_mbarrier_init`] then a block barrier), and its current phase
///    still expects an arrival that comes after this call (so it cannot complete early) — or,
///    bound with [`Arriving`], this call's own arrival.
/// 3. Nothing reads or writes `dst` until that phase completed.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub unsafe fn memcpy_async_bulk<T, U, C: BulkCompletion>(
    dst: Shared<T>,
    src: *const U,
    size: AlignedSize<16>,
    completion: &C,
    l2: Option<ptx::L2Policy>,
) {
    let bar = completion.transaction_barrier();
    // SAFETY: forwarded contract: the phase is open and expects these bytes from now on.
    unsafe {
        completion.expect(size.bytes());
        match l2 {
            None => ptx::cp_async_bulk_global_to_shared(dst.addr(), src.cast(), size.bytes(), bar),
            Some(policy) => ptx::cp_async_bulk_global_to_shared_l2_hint(
                dst.addr(),
                src.cast(),
                size.bytes(),
                bar,
                policy,
            ),
        }
    }
}

/// This thread copies `size` bytes from `src` (shared) to `dst` (global) with one bulk copy
/// (sm_90: `cp.async.bulk.global.shared::cta.bulk_group`, SASS `UBLKCP.G.S`), in this thread's
/// current bulk async-group: [`crate::ptx::bulk_commit_group`] closes it and
/// [`crate::ptx::bulk_wait_group_read`] says when `src` may be written again. `l2`: an L2
/// policy for the writes of `dst` (`.L2::cache_hint`), or `None`.
///
/// # Safety
/// 1. As [`memcpy_async_bulk`] (1) with the directions swapped; nothing else touches `dst`
///    until the group completes.
/// 2. What ordinary stores wrote to `src` was fenced for the copy engine
///    ([`crate::ptx::fence_proxy_async_shared`] by the writers, then a barrier). Data that a
///    bulk copy brought in: the issuing thread waited on that copy's barrier and then fenced
///    (`fence_proxy_async_shared`) — the wait makes the bytes visible to the thread, and we do
///    not read the PTX memory model as promising that it orders them for the copy engine's
///    next read without the fence (the streaming kernels fence once per tile).
/// 3. `src` is not written until a `bulk_wait_group_read` covering this copy returned.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub unsafe fn store_async_bulk<T, U>(
    dst: *mut U,
    src: Shared<T>,
    size: AlignedSize<16>,
    l2: Option<ptx::L2Policy>,
) {
    // SAFETY: forwarded contract.
    unsafe {
        match l2 {
            None => ptx::cp_async_bulk_shared_to_global(dst.cast(), src.addr(), size.bytes()),
            Some(policy) => ptx::cp_async_bulk_shared_to_global_l2_hint(
                dst.cast(),
                src.addr(),
                size.bytes(),
                policy,
            ),
        }
    }
}

/// This thread alone copies the box at `coords` of the tensor `map` describes into `dst`
/// (shared) with one tensor copy of the copy engine (sm_90, TMA): `mbarrier.expect_tx` of the
/// box's bytes on the completion's barrier, then
/// `cp.async.bulk.tensor.<R>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes` (SASS
/// `UTMALDG.<R>D`). Elements of the box outside the tensor arrive as the map's fill (zeros or
/// NaN) and count among the bytes, so a ragged edge needs neither a branch nor a smaller
/// expectation.
///
/// # Safety
/// 1. `map` describes a tensor of rank `C::RANK` in readable global memory, and `box_bytes` is
///    its box's size in bytes (the product of the box dimensions and the element size): a
///    wrong count leaves the phase waiting forever or completes it early.
/// 2. `dst` is 128-byte aligned (1024 with 128-byte swizzle) and holds `box_bytes` of this
///    block's shared memory.
/// 3. As [`memcpy_async_bulk`] (2) and (3) for the completion and `dst`.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub unsafe fn memcpy_async_tensor<T, C: ptx::TensorCoords, B: BulkCompletion>(
    dst: Shared<T>,
    map: crate::tensor_map::TensorMapRef,
    coords: C,
    box_bytes: AlignedSize<16>,
    completion: &B,
) {
    let bar = completion.transaction_barrier();
    // SAFETY: forwarded contract: the phase is open and expects the box's bytes from now on.
    unsafe {
        completion.expect(box_bytes.bytes());
        ptx::cp_async_bulk_tensor_global_to_shared(dst.addr(), map, coords, bar);
    }
}

/// This thread writes the box at `coords` of the tensor `map` describes from `src` (shared)
/// with one tensor copy (sm_90: `cp.async.bulk.tensor.<R>d.global.shared::cta.tile.bulk_group`,
/// SASS `UTMASTG.<R>D`), in this thread's current bulk async-group; elements of the box outside
/// the tensor are not written, so a ragged edge is clipped by the copy engine.
///
/// # Safety
/// 1. `map` describes a tensor of rank `C::RANK` in writable global memory that nothing else
///    touches until the group completes; `src` is 128-byte aligned and holds the box.
/// 2. As [`store_async_bulk`] (2) and (3) for `src`.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub unsafe fn store_async_tensor<T, C: ptx::TensorCoords>(
    map: crate::tensor_map::TensorMapRef,
    coords: C,
    src: Shared<T>,
) {
    // SAFETY: forwarded contract.
    unsafe { ptx::cp_async_bulk_tensor_shared_to_global(map, coords, src.addr()) }
}
