//! The helper kernels' bodies (device code): the `f64` reference, the widening for the check,
//! the row padding. The reference and the widening are generic over the element
//! ([`SixteenBit`]), one entry point per element in [`super`]; the padding copies 16-bit
//! words, whatever they hold.

use gpu::ptx;
use gpu::wgmma::SixteenBit;

/// See `bf16_gemm_reference`.
pub(super) unsafe fn reference<E: SixteenBit>(
    a: *const E,
    b: *const E,
    c: *mut f64,
    m: u32,
    n: u32,
    k: u32,
) {
    let index = ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64;
    if index >= m as u64 * n as u64 {
        return;
    }
    // n >= 1 here (index < m n): said to the compiler, which then drops a zero check.
    let n = n.max(1);
    let (row, col) = (index / n as u64, index % n as u64);
    let mut sum = 0.0f64;
    for kk in 0..k as u64 {
        // SAFETY: row < m, col < n, kk < k: inside A and B (launch contract).
        let (x, y) = unsafe {
            (
                *a.add((row * k as u64 + kk) as usize),
                *b.add((col * k as u64 + kk) as usize),
            )
        };
        sum += x.to_f32() as f64 * y.to_f32() as f64;
    }
    // SAFETY: index < m * n.
    unsafe { *c.add(index as usize) = sum };
}

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
/// `src` is 16-byte aligned and holds `len` elements.
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

/// See `bf16_pad_rows`: one warp per row of either matrix, each lane one 16-byte chunk of
/// the padded row at a time, cut out of the (at most two) aligned 16-byte chunks of the
/// source it straddles ([`window8`]), elements past `k` zeroed.
pub(super) unsafe fn pad_rows(matrices: [(*const u16, *mut u16, u32); 2], k: u32, kp: u32) {
    let lane = ptx::thread_idx_x() % 32;
    let warps = ptx::grid_dim_x() as u64 * (ptx::block_dim_x() / 32) as u64;
    let mut row =
        (ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64) / 32;
    let [(a_src, a_dst, a_rows), (b_src, b_dst, b_rows)] = matrices;
    let total = a_rows as u64 + b_rows as u64;
    while row < total {
        let (src, dst, rows, r) = if row < a_rows as u64 {
            (a_src, a_dst, a_rows, row)
        } else {
            (b_src, b_dst, b_rows, row - a_rows as u64)
        };
        let len = rows as u64 * k as u64;
        let start = r * k as u64;
        let mut col0 = 8 * lane;
        while col0 < kp {
            let mut words = [0u32; 4];
            if col0 < k {
                let from = start + col0 as u64;
                // SAFETY: `src` holds `len` elements, 16-byte aligned (contract).
                let (lo, hi) = unsafe {
                    (
                        chunk_or_zeros(src, len, from / 8),
                        chunk_or_zeros(src, len, from / 8 + 1),
                    )
                };
                words = window8(lo, hi, (from % 8) as u32);
                // Zero what lies past the row's k elements (the next row's start).
                let valid = k - col0;
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
            // SAFETY: chunk col0 / 8 of row r of `dst` (rows of kp, a multiple of 8),
            // 16-byte aligned (contract).
            unsafe {
                ptx::st_global_v4(
                    dst.add((r * kp as u64 + col0 as u64) as usize)
                        .cast::<[f32; 4]>(),
                    words.map(f32::from_bits),
                )
            };
            col0 += 8 * 32;
        }
        row += warps;
    }
}

/// See `bf16_widen`.
pub(super) unsafe fn widen<E: SixteenBit>(src: *const E, dst: *mut f32, len: u64, poison: u32) {
    let step = ptx::grid_dim_x() as u64 * ptx::block_dim_x() as u64;
    let mut i = ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64;
    while i < len {
        // SAFETY: i < len (launch contract).
        let x = unsafe { *src.add(i as usize) };
        let y = if x.to_bits() == super::C_POISON {
            f32::from_bits(poison)
        } else {
            x.to_f32()
        };
        // SAFETY: as above.
        unsafe { *dst.add(i as usize) = y };
        i += step;
    }
}
