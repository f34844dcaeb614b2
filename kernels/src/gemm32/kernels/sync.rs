//! [`GemmStyle::Sync`]: no async copy, k-tiles staged through registers into two shared
//! buffers.

use super::block_tile::BlockTile;
use super::fragment::FragmentPipe;
use super::problem::Geometry;
use crate::Quad;
use crate::gemm32::shapes::{ALayout, BK, GemmStyle};
use gpu::collective::StageMma;
use gpu::memcpy_async::cp_async::{GlobalTile, TileShape};
use gpu::ptx;

/// Up to four floats of one copy chunk of a tile, loaded into registers: the part inside the
/// matrix, zeros for the rest (the synchronous twin of a zero-filling `cp.async`).
///
/// # Safety
/// As [`memcpy_async_tile`]'s source contract for `src`.
///
/// [`memcpy_async_tile`]: gpu::memcpy_async::cp_async::memcpy_async_tile
#[inline(always)]
unsafe fn load_chunk<const ALIGN: u32>(src: &GlobalTile<f32>, row: u32, offset: u32) -> [f32; 4] {
    let at = src
        .base
        .cast::<u8>()
        .wrapping_add(row as usize * src.row_stride + offset as usize)
        .cast::<f32>();
    let inside = row < src.valid_rows;
    if ALIGN == 16 && inside && offset + 16 <= src.valid_row_bytes {
        // SAFETY: 16 readable, 16-byte aligned bytes.
        return unsafe { at.cast::<Quad>().read().0 };
    }
    let mut v = [0.0f32; 4];
    for (e, x) in v.iter_mut().enumerate().take(ALIGN as usize / 4) {
        if inside && offset + 4 * (e as u32) < src.valid_row_bytes {
            // SAFETY: inside the valid part of the row.
            *x = unsafe { at.add(e).read() };
        }
    }
    v
}

/// Chunks of one k-tile a thread of the sync kernel stages through registers (at most).
const SYNC_MAX_CHUNKS: usize = 16;

/// [`GemmStyle::Sync`]: while multiplying k-tile `t` from one shared buffer, load k-tile
/// `t + 1` into registers (plain loads, zeros past the edges), then store it to the other
/// buffer; one `barrier.sync` per k-tile.
///
/// # Safety
/// The GEMM launch contract (module docs).
pub unsafe fn sync<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const ALIGN: u32,
    const INTERIOR: bool,
>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    type Geo<const TM: usize, const TN: usize, const WM: u32, const WN: u32> =
        Geometry<TM, TN, WM, WN>;
    let block = BlockTile::<TM, TN, WM, WN>::new(GemmStyle::Sync, (a, b, c), (m, n, k), INTERIOR);
    let p = block.p;
    let bm_bn = (Geo::<TM, TN, WM, WN>::BM, Geo::<TM, TN, WM, WN>::BN);
    let tiles = p.k_tiles();
    let thread = ptx::thread_idx_x();
    let threads = Geo::<TM, TN, WM, WN>::COMPUTE_THREADS;
    let f = block.fragment(thread);
    let shapes = [
        Geo::<TM, TN, WM, WN>::A_SHAPE,
        Geo::<TM, TN, WM, WN>::B_SHAPE,
    ];
    let chunks = |shape: TileShape| shape.rows * shape.row_bytes / ALIGN;
    const {
        let threads = WM * WN * 32;
        let a_chunks = Geo::<TM, TN, WM, WN>::BM * BK * 4 / ALIGN;
        let b_chunks = BK * Geo::<TM, TN, WM, WN>::BN * 4 / ALIGN;
        assert!(
            a_chunks.is_multiple_of(threads) && b_chunks.is_multiple_of(threads),
            "every thread of the sync kernel stages the same number of chunks"
        );
        assert!(
            (a_chunks + b_chunks) / threads <= SYNC_MAX_CHUNKS as u32,
            "the sync kernel stages at most SYNC_MAX_CHUNKS chunks per thread"
        )
    };

    // This thread's chunks of k-tile t, A's then B's, into registers.
    let load = |t: u32| {
        let mut regs = [[0.0f32; 4]; SYNC_MAX_CHUNKS];
        let mut slot = 0;
        for (which, src) in [p.a_tile(t, bm_bn.0), p.b_tile(t, bm_bn.1)]
            .iter()
            .enumerate()
        {
            let shape = shapes[which];
            let per_row = shape.row_bytes / ALIGN;
            for round in 0..chunks(shape) / threads {
                let chunk = thread + round * threads;
                // SAFETY: the tile is clipped to its matrix.
                regs[slot] =
                    unsafe { load_chunk::<ALIGN>(src, chunk / per_row, chunk % per_row * ALIGN) };
                slot += 1;
            }
        }
        regs
    };
    // ... and from registers to stage buffer `s`.
    let store = |s: u32, regs: &[[f32; 4]; SYNC_MAX_CHUNKS]| {
        let (a_dst, b_dst) = block.stage(s);
        let mut slot = 0;
        for (which, dst) in [a_dst, b_dst].into_iter().enumerate() {
            let shape = shapes[which];
            let per_row = shape.row_bytes / ALIGN;
            for round in 0..chunks(shape) / threads {
                let chunk = thread + round * threads;
                let (row, offset) = (chunk / per_row, chunk % per_row * ALIGN);
                // SAFETY (all three): inside the stage; no one reads this buffer until the
                // barrier after the store (its last reads were issued before the previous
                // barrier).
                if which == 0 && block.a_layout == ALayout::KMajor {
                    // A lands transposed: the chunk's floats are k `offset / 4 ..` of `row`.
                    let k_row = Geo::<TM, TN, WM, WN>::TILE.a_k_row_floats();
                    for e in 0..ALIGN / 4 {
                        let at = (offset / 4 + e) * k_row + row;
                        unsafe { dst.add(at).write(regs[slot][e as usize]) };
                    }
                } else {
                    let at = dst.cast::<u8>().add(row * shape.row_bytes + offset);
                    unsafe {
                        if ALIGN == 16 {
                            at.cast::<[f32; 4]>().write(regs[slot]);
                        } else {
                            at.cast::<f32>().write(regs[slot][0]);
                        }
                    }
                }
                slot += 1;
            }
        }
    };

    store(0, &load(0));
    ptx::barrier_sync();
    let mut acc = [[0.0f32; TN]; TM];
    // SAFETY: stored and synced.
    let mut frags = unsafe { FragmentPipe::start(&block, f, 0) };
    let mut t = 0;
    loop {
        let next = (t + 1 < tiles).then(|| load(t + 1));
        // SAFETY: stored and synced.
        unsafe { frags.multiply_all_but_last(&block, t % 2, &mut acc) };
        t += 1;
        let Some(regs) = next else { break };
        // Every read of this buffer (k-tile t - 2) was issued before the barrier that made
        // k-tile t - 1 visible.
        store(t % 2, &regs);
        ptx::barrier_sync();
        // SAFETY: stored and synced.
        unsafe { frags.advance(&block, t % 2, &mut acc) };
    }
    frags.finish(&block, &mut acc);
    // SAFETY: launch contract.
    unsafe { block.store::<ALIGN>(f, &acc) };
}
