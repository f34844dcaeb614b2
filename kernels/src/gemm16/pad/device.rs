//! The body of `gemm16_pad_rows` (device code): rows a tensor map cannot describe (a stride
//! not a multiple of 8 elements, or a start off 16 bytes) copied into rows that it can. It
//! copies 16-bit words, whatever they hold.

use super::PadRows;
use gpu::ptx;

/// The eight 16-bit elements starting `s` (0..8) elements into the 16 of `lo` then `hi`
/// (two 16-byte chunks, element 0 in the low half of `lo[0]`): how a chunk that starts
/// anywhere is cut out of the two aligned chunks it straddles. Selects and funnel shifts
/// only (no indexing by `s`, which would put the words in local memory).
#[inline(always)]
fn window8(lo: [u32; 4], hi: [u32; 4], s: u32) -> [u32; 4] {
    let mut w = [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]];
    if s & 2 != 0 {
        w = [w[1], w[2], w[3], w[4], w[5], w[6], w[7], 0];
    }
    if s & 4 != 0 {
        w = [w[2], w[3], w[4], w[5], w[6], w[7], 0, 0];
    }
    if s & 1 != 0 {
        [
            (w[0] >> 16) | (w[1] << 16),
            (w[1] >> 16) | (w[2] << 16),
            (w[2] >> 16) | (w[3] << 16),
            (w[3] >> 16) | (w[4] << 16),
        ]
    } else {
        [w[0], w[1], w[2], w[3]]
    }
}

/// The 16-byte chunk `q` of `src`, zeros past its `len` elements: one 16-byte load where
/// the chunk is whole, element loads for the last, partial one.
///
/// # Safety
/// `src` is 16-byte aligned and its `len` elements are readable, but for those before the
/// matrix's first element (its `src_offset`: the same 16-byte granule, so the same
/// allocation).
#[inline(always)]
unsafe fn chunk_or_zeros(src: *const u16, len: u64, q: u64) -> [u32; 4] {
    let from = 8 * q;
    if from + 8 <= len {
        // SAFETY: the whole chunk is inside `src`, 16-byte aligned.
        let x = unsafe { ptx::ld_global_v4(src.add(from as usize).cast()) };
        return x.map(f32::to_bits);
    }
    let mut words = [0u32; 4];
    let mut e = 0;
    while e < 8 {
        if from + e < len {
            // SAFETY: element from + e < len of `src`.
            let x = unsafe { *src.add((from + e) as usize) };
            words[(e / 2) as usize] |= (x as u32) << (16 * (e % 2));
        }
        e += 1;
    }
    words
}

/// See `gemm16_pad_rows`: one warp per row of either matrix, each lane one 16-byte chunk of
/// the copy's row at a time, cut out of the (at most two) aligned 16-byte chunks of the
/// source it straddles ([`window8`]), elements past `cols` zeroed.
///
/// # Safety
/// The launch contract of `gemm16_pad_rows`.
pub(super) unsafe fn pad_rows(matrices: [PadRows; 2]) {
    let lane = ptx::thread_idx_x() % 32;
    let warps = ptx::grid_dim_x() as u64 * (ptx::block_dim_x() / 32) as u64;
    let mut row =
        (ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64) / 32;
    let [first, second] = matrices;
    let total = first.rows as u64 + second.rows as u64;
    while row < total {
        let (m, r) = if row < first.rows as u64 {
            (first, row)
        } else {
            (second, row - first.rows as u64)
        };
        let (src, dst) = (m.src as *const u16, m.dst as *mut u16);
        // Elements from the aligned `src`: the matrix starts `src_offset` in.
        let len = m.src_offset as u64 + (m.rows as u64 - 1) * m.src_stride as u64 + m.cols as u64;
        let start = m.src_offset as u64 + r * m.src_stride as u64;
        let mut col0 = 8 * lane;
        while col0 < m.dst_stride {
            let mut words = [0u32; 4];
            if col0 < m.cols {
                let from = start + col0 as u64;
                // SAFETY: `src` 16-byte aligned, `len` elements readable (contract).
                let (lo, hi) = unsafe {
                    (
                        chunk_or_zeros(src, len, from / 8),
                        chunk_or_zeros(src, len, from / 8 + 1),
                    )
                };
                words = window8(lo, hi, (from % 8) as u32);
                // Zero what lies past the row's `cols` elements (the next row's start).
                let valid = m.cols - col0;
                let mut e = 0;
                while e < 4 {
                    let keep = match valid.saturating_sub(2 * e) {
                        0 => 0,
                        1 => 0xFFFF,
                        _ => u32::MAX,
                    };
                    words[e as usize] &= keep;
                    e += 1;
                }
            }
            // SAFETY: chunk col0 / 8 of row r of `dst` (rows of dst_stride, a multiple of 8;
            // col0 < dst_stride), 16-byte aligned (contract).
            unsafe {
                ptx::st_global_v4(
                    dst.add((r * m.dst_stride as u64 + col0 as u64) as usize)
                        .cast::<[f32; 4]>(),
                    words.map(f32::from_bits),
                )
            };
            col0 += 8 * 32;
        }
        row += warps;
    }
}
