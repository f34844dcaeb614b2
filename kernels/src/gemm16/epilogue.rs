//! The GEMM's epilogues, as types ([`StoreC`]): a consumer warpgroup's tile of FP32
//! accumulators rounded to the element type and written to C through its staging in shared
//! memory, by tensor stores ([`TensorStore`]) or by the warpgroup itself ([`DirectStore`]).

#![cfg(target_feature = "sm_90a")]

use super::WARPGROUP_STAGING_BYTES;
use super::{CBox, DIRECT_ROW_BYTES};
use gpu::collective::tensor_core::warpgroup_barrier;
use gpu::ptx::{self, Shared, TensorMapRef};
use gpu::wgmma::{Accumulator, SixteenBit, x4_lane_row};

/// Where a warpgroup's tile of C goes: C's size, the warpgroup's staging, the tile's first
/// row and column (a tile of two 64-row parts: part `p` from row `row0 + 64 p`).
#[derive(Clone, Copy)]
pub(super) struct TileOut {
    pub m: u32,
    pub n: u32,
    pub staging: Shared<u8>,
    pub consumer_index: u32,
    pub row0: u32,
    pub col0: u32,
}

/// A warpgroup's tile of accumulators as the epilogue takes it: one 64-row [`Accumulator`]
/// (cooperative) or two stacked (ping-pong's 128 rows), stored part by part.
pub(super) trait TileParts: Sized {
    /// The tile, zeros.
    fn zeros() -> Self;

    /// Writes the tile through `c` ([`StoreC::store`], part by part).
    ///
    /// # Safety
    /// As [`StoreC::store`].
    unsafe fn store<E: SixteenBit, O: StoreC<E>>(&self, c: O, out: &TileOut, t: u32);
}

impl<const REGS: usize> TileParts for Accumulator<REGS> {
    #[inline(always)]
    fn zeros() -> Self {
        Accumulator::zeros()
    }

    #[inline(always)]
    unsafe fn store<E: SixteenBit, O: StoreC<E>>(&self, c: O, out: &TileOut, t: u32) {
        // SAFETY: forwarded contract.
        unsafe { c.store(out, 0, t, self) }
    }
}

impl<const REGS: usize> TileParts for [Accumulator<REGS>; 2] {
    #[inline(always)]
    fn zeros() -> Self {
        [Accumulator::zeros(); 2]
    }

    #[inline(always)]
    unsafe fn store<E: SixteenBit, O: StoreC<E>>(&self, c: O, out: &TileOut, t: u32) {
        // Two parts of at most 128 columns: the tensor store stages both at once (2 x 16 KiB).
        const { assert!(2 * Accumulator::<REGS>::N * 64 * 2 <= WARPGROUP_STAGING_BYTES) };
        // SAFETY: forwarded contract; the parts in order (the first frees the staging).
        unsafe {
            c.store(out, 0, t, &self[0]);
            c.store(out, 1, t, &self[1]);
        }
    }
}

/// An epilogue: how a kernel writes its tiles of C (elements `E`).
pub(super) trait StoreC<E: SixteenBit>: Copy {
    /// Rounds part `part` (rows `64 part..64 part + 64` of the warpgroup's tile, 0 or 1) of a
    /// warpgroup's accumulators — `N` = 256, 128 or 64 (a narrow edge tile) columns — to `E`
    /// and writes what of it is inside C, through its staging. Part 0 first waits until the
    /// staging is free; part 1 follows part 0 of the same tile (`N` at most 128). How:
    /// - [`TensorStore`]: staged as swizzled 64 x 64 boxes ([`CBox`], `REGS / 8` `stmatrix_x4`
    ///   per thread, conflict-free; part 1's after part 0's); one thread issues a tensor store
    ///   per box (clipped at C's edges by the copy engine) and goes on without waiting; the
    ///   next tile's part 0 first waits until they have read the staging;
    /// - [`DirectStore`]: row `r` staged `lead & !1` elements into a row of [`DIRECT_ROW_BYTES`]
    ///   (4-byte stores), `lead` being how far into a 16-byte chunk of C the row's part starts
    ///   (any N: a row of C starts anywhere in a chunk), so that C's chunks are the staging's (one
    ///   element earlier for an odd lead: a 4-byte load and four funnel shifts more); then each
    ///   warp writes every fourth row, lane `l` C's `l`-th chunk wholly inside the part (one
    ///   `LDS.128`, one 16-byte store), lanes 0-15 the fewer than 8 elements at each end that C's
    ///   row shares with its neighbours' tiles, one each (part 1 staged where part 0 was, once
    ///   the warpgroup has read it).
    ///
    /// # Safety
    /// `out.staging` is this warpgroup's 1 KiB aligned [`WARPGROUP_STAGING_BYTES`] of shared
    /// memory, used for nothing else; `self` holds C's tensor map with box [`CBox::BOX`] and
    /// 128-byte swizzle, or points to C's `m * n` elements, 16-byte aligned; the whole
    /// warpgroup calls it; `part` is 0, or 1 right after part 0 of the same tile with `N` at
    /// most 128 (so that both parts' boxes fit the staging: [`TileParts`] keeps to this).
    unsafe fn store<const REGS: usize>(
        self,
        out: &TileOut,
        part: u32,
        t: u32,
        acc: &Accumulator<REGS>,
    );

    /// Before the block exits: the last tensor stores have read the staging (thread `t` of
    /// the warpgroup; nothing for direct stores).
    fn drain(self, t: u32);
}

/// The tensor-store epilogue: C's tensor map.
#[derive(Clone, Copy)]
pub(super) struct TensorStore(pub TensorMapRef);

/// The direct-store epilogue: C itself, `m x n`.
#[derive(Clone, Copy)]
pub(super) struct DirectStore<E>(pub *mut E);

/// Waits (thread 0) for the previous tile's stores, then for the warpgroup: the staging is
/// free again.
#[inline(always)]
fn staging_free(out: &TileOut, t: u32, tensor_stores: bool) {
    if t == 0 && tensor_stores {
        ptx::bulk_wait_group_read::<0>();
    }
    // Everyone is done reading the previous tile's staging (direct) or its stores have read
    // it (tensor store).
    warpgroup_barrier(out.consumer_index);
}

impl<E: SixteenBit> StoreC<E> for TensorStore {
    #[inline(always)]
    unsafe fn store<const REGS: usize>(
        self,
        out: &TileOut,
        part: u32,
        t: u32,
        acc: &Accumulator<REGS>,
    ) {
        let TileOut {
            staging,
            consumer_index,
            row0,
            col0,
            ..
        } = *out;
        let map = self.0;
        // The accumulators' columns: 256, 128, or 64 for a narrow edge tile.
        let width = Accumulator::<REGS>::N;
        const { assert!(Accumulator::<REGS>::N <= 256) };
        let row0 = row0 + 64 * part;
        // Part 1 (of a tile at most 128 wide) is staged after part 0's boxes.
        let staging = staging.add(part * (width / 64) * CBox::BYTES);
        if part == 0 {
            staging_free(out, t, true);
        }
        let staged =
            |row: u32, col: u32| (col / 64) * CBox::BYTES + CBox::byte_offset(row, col % 64);
        let (lane_row, lane_col) = x4_lane_row(t % 32);
        let row = 16 * (t / 32) + lane_row;
        for q in 0..REGS / 8 {
            let col = 16 * q as u32 + lane_col;
            // SAFETY: a 16-byte row of one 8 x 8 matrix inside this warpgroup's staging
            // (row < 64, col < 256, a multiple of 8), each lane's its own; converged.
            unsafe { ptx::stmatrix_x4(staging.add(staged(row, col)).cast(), acc.pack_x4::<E>(q)) };
        }
        ptx::fence_proxy_async_shared();
        warpgroup_barrier(consumer_index);
        if t == 0 {
            let mut part = 0;
            while part < width / 64 {
                let coords = [(col0 + 64 * part) as i32, row0 as i32];
                // SAFETY: the box is staged (barrier above, fenced for the copy engine);
                // the map is C's (contract); the copy engine clips it at C's edges.
                unsafe {
                    gpu::memcpy_async::bulk::store_async_tensor(
                        map,
                        coords,
                        staging.add(part * CBox::BYTES),
                    )
                };
                part += 1;
            }
            ptx::bulk_commit_group();
        }
    }

    #[inline(always)]
    fn drain(self, t: u32) {
        if t == 0 {
            ptx::bulk_wait_group_read::<0>();
        }
    }
}

impl<E: SixteenBit> StoreC<E> for DirectStore<E> {
    #[inline(always)]
    unsafe fn store<const REGS: usize>(
        self,
        out: &TileOut,
        part: u32,
        t: u32,
        acc: &Accumulator<REGS>,
    ) {
        let TileOut {
            m,
            n,
            staging,
            consumer_index,
            row0,
            col0,
        } = *out;
        let c = self.0;
        let width = Accumulator::<REGS>::N;
        let row0 = row0 + 64 * part;
        // Part 0's rows read (or the previous tile's): the staging is free.
        staging_free(out, t, false);
        // Where row `r`'s part starts in C and in a 16-byte chunk of it.
        let start_of = |r: u32| (row0 + r) as u64 * n as u64 + col0 as u64;
        let lead_of = |r: u32| (start_of(r) % 8) as u32;
        // This thread's two rows (Accumulator::position): r and r + 8.
        let (top, _) = Accumulator::<REGS>::position(t, 0);
        // Row r is staged `lead & !1` elements in: an even shift, so that every pair is
        // one aligned 4-byte store; an odd lead leaves C's chunks one element before the
        // staging's (fixed on the way out).
        let shifts = [lead_of(top) & !1, lead_of(top + 8) & !1];
        for i in 0..REGS / 2 {
            let (r, col) = Accumulator::<REGS>::position(t, 2 * i as u32);
            let packed = E::pack2(acc.regs[2 * i], acc.regs[2 * i + 1]);
            let at = staging.add(r * DIRECT_ROW_BYTES + 2 * (shifts[i % 2] + col));
            // SAFETY: two elements of row r's staging (shift + col + 1 < 262), written by
            // this thread alone; 4-byte aligned (shift and col even).
            unsafe { at.cast::<u32>().write(packed) };
        }
        warpgroup_barrier(consumer_index);
        let cols = if n - col0 < width { n - col0 } else { width } as i32;
        let lane = (t % 32) as i32;
        // Sixteen rows per warp, unrolled so that their loads and stores overlap.
        for i in 0..16 {
            let r = t / 32 + 4 * i;
            if row0 + r >= m {
                break;
            }
            let start = start_of(r);
            let lead = (start % 8) as i32;
            let row = staging.add(r * DIRECT_ROW_BYTES);
            // SAFETY (below): C's chunk `j` of this part, `first + 8 j`, is inside C where
            // an element of it is in the part (row < m, columns below cols).
            let first = unsafe { c.add((start - lead as u64) as usize) };
            // Chunk `j` holds the part's columns `8 j - lead..8 j - lead + 8`, staged at
            // bytes `16 j..16 j + 16` of the row; those wholly inside: `j_first..=j_last`
            // (at most 32).
            let j_first = (lead + 7) / 8;
            let j_last = (cols + lead) / 8 - 1;
            let j = j_first + lane;
            if j <= j_last {
                // C's chunk j is staged elements 8 j - lead % 2 .. + 8: staging chunk j,
                // or for an odd lead the last element of chunk j - 1 and seven of chunk j.
                // SAFETY: staged 16-byte chunks of the row (j < 33; j >= 1 for an odd
                // lead), written above.
                let chunk: [f32; 4] = unsafe { row.add(16 * j as u32).cast().read() };
                let words = if lead % 2 == 0 {
                    chunk
                } else {
                    // SAFETY: as above (the word before chunk j).
                    let before: u32 = unsafe { row.add(16 * j as u32 - 4).cast().read() };
                    let w = chunk.map(f32::to_bits);
                    [
                        (before >> 16) | (w[0] << 16),
                        (w[0] >> 16) | (w[1] << 16),
                        (w[1] >> 16) | (w[2] << 16),
                        (w[2] >> 16) | (w[3] << 16),
                    ]
                    .map(f32::from_bits)
                };
                // SAFETY: 8 elements of this part of C's row (j in range), 16-byte aligned
                // (C is; `first + 8 j` is a multiple of 8 elements).
                unsafe { ptx::st_global_v4(first.add(8 * j as usize).cast(), words) };
            }
            // The columns outside those chunks, fewer than 8 at each end, one per lane:
            // lanes 0-7 the head, 8-15 the tail.
            let head_end = (8 * j_first - lead).min(cols);
            let tail_start = (8 * (j_last + 1) - lead).max(head_end);
            let col = if lane < 8 {
                lane
            } else {
                tail_start + lane - 8
            };
            let edge = if lane < 8 {
                col < head_end
            } else {
                lane < 16 && col < cols
            };
            if edge {
                let at = 2 * ((lead & !1) + col) as u32;
                // SAFETY: the aligned word holding the row's staged element for col,
                // written above.
                let word: u32 = unsafe { row.add(at & !3).cast::<u32>().read() };
                let x = E::from_bits((word >> (8 * (at & 2))) as u16);
                // SAFETY: an element of this part of C's row (0 <= col < cols).
                unsafe { c.add(start as usize + col as usize).write(x) };
            }
        }
    }

    #[inline(always)]
    fn drain(self, _t: u32) {}
}
