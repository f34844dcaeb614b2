//! The copies every thread issues itself with `cp.async` (sm_80+): one thread's, a group's
//! (split by rank), zero-filled, and 2-D tiles, each bound to a
//! [`Completion`].
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
//! `stage` is the [`ProducerStage`](crate::pipeline::ProducerStage) of a
//! [`ThreadPipeline`](crate::pipeline::ThreadPipeline) or
//! [`BlockPipeline`](crate::pipeline::BlockPipeline) — the stage acquired and not yet committed.
//! [`memcpy_async_zfill`] adds what `cuda::memcpy_async` lacks: a ragged source whose tail is
//! filled with zeros by the copies themselves, none reading past the source's end (memcheck
//! sees only valid reads); and
//! [`memcpy_async_tile`] copies a 2-D tile of strided rows (a GEMM operand tile) the same way,
//! zero-filling whatever hangs over the edge of its matrix, and
//! [`memcpy_async_tile_transposed`] lands such a tile transposed, one element per copy (a GEMM
//! operand stored k-major, so that one `LDS.128` reads four rows of one column).
//!
//! # Size and alignment pick the instruction
//!
//! The size is an [`AlignedSize<ALIGN>`](super::AlignedSize) (like
//! `cuda::aligned_size_t<ALIGN>`): the byte count and both addresses are multiples of `ALIGN`,
//! and the copy is cut into `ALIGN`-byte chunks:
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

use super::AlignedSize;
use super::completion::Completion;
use crate::group::{Group, ThisThread};
#[cfg(doc)]
use crate::layout::RowPitch;
use crate::layout::TileLayout;
use crate::ptx;
use crate::shared::Shared;

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

/// Copies one `ALIGN`-byte chunk of which only the first `src_bytes` come from `src`; the
/// rest is zeroed. No copy reads a byte outside `src`'s first `src_bytes` (rounded up to a
/// word) nor outside the 16 bytes of [`ptx::zero_chunk`], so a memory checker sees only valid
/// reads:
///
/// - a whole chunk (`src_bytes >= ALIGN`) is the plain copy from `src`, and a chunk past the
///   source (`src_bytes == 0`) the same plain copy from the zero chunk: one instruction,
///   its source chosen without a branch;
/// - the chunk the source ends in is cut into 4-byte words (see [`copy_partial_chunk`]).
///
/// `cp.async`'s own `src-size` form would do all three in one instruction, but memcheck
/// counts it as a read of the whole `ALIGN` bytes, an error where the allocation ends inside
/// the chunk.
///
/// # Safety
/// As [`copy_chunk`], except that only the first `src_bytes` of `src` need be readable (any
/// `src` when `src_bytes == 0`).
#[inline(always)]
unsafe fn copy_chunk_zfill<const ALIGN: u32>(dst: u32, src: *const u8, src_bytes: u32) {
    if src_bytes >= ALIGN || src_bytes == 0 {
        let from = if src_bytes == 0 {
            ptx::zero_chunk()
        } else {
            src
        };
        // SAFETY: `from` has ALIGN readable bytes: the whole chunk (caller) or the zeros.
        unsafe { copy_chunk::<ALIGN>(dst, from) }
    } else {
        // SAFETY: forwarded contract.
        unsafe { copy_partial_chunk::<ALIGN>(dst, src, src_bytes) }
    }
}

/// A chunk of a 2-D tile at its matrix's edge: one `ALIGN`-byte copy with `src-size` =
/// `src_bytes` (`... .ZFILL` in SASS; 0 for a chunk past the edge, which reads nothing), the
/// same single instruction as inside the matrix. memcheck counts it as a read of all `ALIGN`
/// bytes from its source, so it may report the chunk where the matrix's allocation ends
/// inside it (the last row, when a row is not a multiple of `ALIGN` bytes: the GEMMs choose
/// `ALIGN` so that rows are) or a tile whose first valid row is shorter than `ALIGN`. Kept to
/// one instruction because a tile copy is unrolled into kernels that use every register:
/// splitting the chunk here (as [`memcpy_async_zfill`] does) made the 255-register GEMM
/// mainloops spill.
///
/// # Safety
/// As [`copy_chunk_zfill`].
#[inline(always)]
unsafe fn copy_tile_chunk<const ALIGN: u32>(dst: u32, src: *const u8, src_bytes: u32) {
    // SAFETY: `src` has `src_bytes` readable bytes (caller).
    unsafe {
        if ALIGN == 16 {
            ptx::cp_async_cg_zfill(dst, src, src_bytes)
        } else {
            ptx::cp_async_ca_zfill::<ALIGN>(dst, src, src_bytes)
        }
    }
}

/// The chunk a source ends in (`0 < src_bytes < ALIGN`), one 4-byte `cp.async.ca` per word
/// (`LDGSTS.E`, at most `ALIGN / 4`; only tails take it): a word wholly inside the source
/// copies from it, a word past it copies zeros from the zero chunk, and the word the source
/// ends inside — only when `src_bytes` is not a multiple of 4 — copies its 1 to 3 valid bytes
/// and zero-fills the rest (`src-size`), which memcheck still counts as a 4-byte read: a
/// byte-granular source must be allocated in whole words to run under memcheck.
///
/// # Safety
/// As [`copy_chunk_zfill`], with `0 < src_bytes < ALIGN`.
#[inline(always)]
unsafe fn copy_partial_chunk<const ALIGN: u32>(dst: u32, src: *const u8, src_bytes: u32) {
    for word in 0..ALIGN / 4 {
        let at = word * 4;
        let valid = src_bytes.saturating_sub(at).min(4);
        let from = if valid == 0 {
            ptx::zero_chunk()
        } else {
            src.wrapping_add(at as usize)
        };
        // SAFETY: `dst + at` is a 4-byte aligned word of the chunk (caller); `from` holds the
        // bytes the copy reads: `valid` of `src`, or 4 of the zero chunk (read with
        // `src-size` 4, whole).
        unsafe { ptx::cp_async_ca_zfill::<4>(dst + at, from, if valid == 0 { 4 } else { valid }) };
    }
}

/// This thread copies `size` bytes from `src` (global) to `dst` (shared), bound to
/// `completion`.
///
/// # Safety
/// 1. `src` points to `size.bytes()` readable bytes of global memory, `dst` to as many bytes
///    of this block's shared memory; both are aligned to `ALIGN`.
/// 2. `completion` is open: a [`Barrier`](crate::barrier::Barrier) whose current phase still
///    expects this call's arrival (see the `Completion` impl for
///    [`Barrier`](crate::barrier::Barrier)), or the stage acquired for this copy.
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
/// Every chunk wholly inside the source is one plain `ALIGN`-byte copy (the aligned body is
/// the same loop as [`memcpy_async_group`]'s); the chunk the source ends in is copied a
/// 4-byte word at a time and the chunks past it copy zeros from a zero chunk in global
/// memory, so no copy reads outside the source: memcheck-clean at any length that is a
/// multiple of 4 bytes (a source ending inside a word still has one 4-byte read over its
/// end: allocate byte-granular sources in whole words to run under memcheck).
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
    // The chunks wholly inside the source first, with exactly the plain copies of
    // `memcpy_async_group` (the aligned body costs nothing), then the ragged rest.
    let whole = (src_bytes / ALIGN).min(size.chunks());
    let mut chunk = group.thread_rank();
    while chunk < whole {
        let offset = chunk * ALIGN;
        // SAFETY: chunk < whole: ALIGN readable bytes of the source, inside `size` of dst.
        unsafe { copy_chunk::<ALIGN>(dst + offset, src.add(offset as usize)) };
        chunk += group.size();
    }
    while chunk < size.chunks() {
        let offset = chunk * ALIGN;
        let valid = src_bytes.saturating_sub(offset).min(ALIGN);
        // No out-of-range address is formed for a chunk past the source (it reads zeros).
        let from = src.wrapping_add(offset as usize);
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
/// laid out as `dst_layout` says: rows some bytes apart, [`RowPitch`], or a swizzled tile such
/// as [`SwizzledKMajor`](crate::wgmma::SwizzledKMajor)), bound to `completion`: chunk `i` (row-major over the tile,
/// `ALIGN` bytes each) goes to the thread of rank `i % group size`, so consecutive threads
/// copy consecutive chunks of a row (coalesced). Whatever lies outside the valid part of
/// `src` is written as zeros by the copies themselves (`cp.async`'s `src-size`), so a tile at
/// the edge of a matrix of any size needs no other code. A tile entirely inside takes the
/// plain copies (`LDGSTS.E.BYPASS.128` for 16 bytes), one at an edge the zero-filling ones
/// (`... .ZFILL`); the branch is uniform across the group. memcheck counts each of those as
/// a read of all `ALIGN` bytes, so it reports the chunk where the matrix's allocation ends
/// inside it: rows that are a multiple of `ALIGN` bytes (what the GEMMs choose `ALIGN` by)
/// have none.
///
/// # Safety
/// 1. Every row `r < valid_rows` of `src` has `valid_row_bytes` readable bytes of global
///    memory at `base + r * row_stride`; `base` and `row_stride` are multiples of `ALIGN`,
///    and so is `shape.row_bytes`.
/// 2. `dst_layout` maps every `ALIGN`-byte chunk of the shape to an `ALIGN`-aligned offset,
///    no two to the same bytes; `dst` plus those offsets is this block's shared memory,
///    `ALIGN` aligned, that nothing touches until the completion says the copies landed.
/// 3. Every thread of `group` calls it with the same arguments; `completion` is open for each
///    thread's binding (as for [`memcpy_async_group`]).
#[inline(always)]
pub unsafe fn memcpy_async_tile<G: Group, T, U, L: TileLayout, C: Completion, const ALIGN: u32>(
    group: &G,
    dst: Shared<T>,
    dst_layout: L,
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
        let to = dst + dst_layout.row_start(row) + dst_layout.byte_in_row(row, offset);
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
            unsafe { copy_tile_chunk::<ALIGN>(to, from, valid) };
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
            unsafe { copy_tile_chunk::<ALIGN>(to, from, bytes) };
        }
    }
    // SAFETY: the completion is open (caller).
    unsafe { completion.bind_copies() };
}
