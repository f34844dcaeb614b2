//! A compute thread's fragment of the block tile: where it sits ([`Fragment`]), its multiply
//! (a stage four k at a time, or k by k with the operands one k ahead: [`FragmentPipe`]), and
//! its store to C.

use super::problem::Problem;
use crate::Quad;
#[cfg(target_feature = "sm_90")]
use crate::gemm32::shapes::BK;
use crate::gemm32::shapes::{ALayout, LANES_M, LANES_N};
use gpu::ptx;
use gpu::shared::Shared;

/// Where a compute thread's fragment sits in the block tile: columns `col + 32 j .. +4`
/// (`j < TN / 4`), the eight column groups of a warp 16 bytes apart; rows
/// ([`Fragment::row_of`]) by how A is stored. With A m-major, rows `row + 4 i`: lanes `l` and
/// `l + 1` take adjacent rows, so the four rows a warp reads at once sit 32 bytes apart (no
/// bank conflict). With A k-major, rows `row + 16 (i / 4) + i % 4`: four consecutive rows per
/// `LDS.128`, the four lanes' quads side by side.
#[derive(Clone, Copy)]
pub(super) struct Fragment {
    row: u32,
    pub(super) col: u32,
    a_layout: ALayout,
}

impl Fragment {
    /// The fragment of compute thread `thread` (its warp `thread / 32` in a `WM x WN`
    /// arrangement, row-major) when stages hold A in `a_layout`.
    #[inline(always)]
    pub(super) fn of<const TM: usize, const TN: usize, const WN: u32>(
        thread: u32,
        a_layout: ALayout,
    ) -> Fragment {
        let (warp, lane) = (thread / 32, thread % 32);
        let (wm, wn) = (warp / WN, warp % WN);
        let lane_row = match a_layout {
            ALayout::MMajor => lane % LANES_M,
            ALayout::KMajor => lane % LANES_M * 4,
        };
        Fragment {
            row: wm * LANES_M * TM as u32 + lane_row,
            col: wn * LANES_N * TN as u32 + lane / LANES_M * 4,
            a_layout,
        }
    }

    /// The block-tile row of the fragment's row `i`.
    #[inline(always)]
    pub(super) fn row_of(&self, i: u32) -> u32 {
        match self.a_layout {
            ALayout::MMajor => self.row + 4 * i,
            ALayout::KMajor => self.row + 4 * LANES_M * (i / 4) + i % 4,
        }
    }
}

/// `acc += A_stage * B_stage` for this thread's fragment, one group of four k at a time (see
/// [`multiply_k_quad`]).
///
/// # Safety
/// The stage's copies landed and are visible to this thread; nothing writes it meanwhile.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub(super) unsafe fn multiply_stage<const TM: usize, const TN: usize>(
    tiles: (Shared<f32>, Shared<f32>),
    bn: u32,
    f: Fragment,
    acc: &mut [[f32; TN]; TM],
) {
    for kq in 0..BK / 4 {
        // SAFETY: forwarded.
        unsafe { multiply_k_quad(tiles, bn, f, acc, kq) };
    }
}

/// `acc += A_stage[.., 4 kq..4 kq + 4] * B_stage[4 kq..4 kq + 4, ..]`: `TN` B values for each
/// of the four k (`LDS.128`) and four A values of each of the `TM` rows (`LDS.128`), then four
/// rank-1 updates of `TM x TN` FFMAs each.
///
/// # Safety
/// As [`multiply_stage`]; `kq < BK / 4`.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
unsafe fn multiply_k_quad<const TM: usize, const TN: usize>(
    (a, b): (Shared<f32>, Shared<f32>),
    bn: u32,
    f: Fragment,
    acc: &mut [[f32; TN]; TM],
    kq: u32,
) {
    let mut bk = [[0.0f32; TN]; 4];
    for (kk, row) in bk.iter_mut().enumerate() {
        for g in 0..TN / 4 {
            let at = (kq * 4 + kk as u32) * bn + f.col + 32 * g as u32;
            // SAFETY: inside the B tile (col + 32 g + 4 <= bn); 16-byte aligned.
            let v = unsafe { b.add(at).cast::<[f32; 4]>().read() };
            row[4 * g..4 * g + 4].copy_from_slice(&v);
        }
    }
    // The four A values of every row, then four rank-1 updates: each k's 128 FFMAs read
    // only registers, so the scheduler has long independent runs.
    let mut ak = [[0.0f32; 4]; TM];
    for (i, row) in ak.iter_mut().enumerate() {
        let at = (f.row + 4 * i as u32) * BK + kq * 4;
        // SAFETY: inside the A tile (row < bm); 16-byte aligned (BK = 8).
        *row = unsafe { a.add(at).cast::<[f32; 4]>().read() };
    }
    for kk in 0..4 {
        for (out, a_row) in acc.iter_mut().zip(&ak) {
            for (o, &b_value) in out.iter_mut().zip(&bk[kk]) {
                *o = ptx::fma_f32(a_row[kk], b_value, *o);
            }
        }
    }
}

/// One k's operands for a thread's fragment, with A stored k-major: the `TM` values of A's
/// column k in the fragment's rows and the `TN` values of B's row k in its columns.
#[derive(Clone, Copy)]
pub(super) struct KFragment<const TM: usize, const TN: usize> {
    a: [f32; TM],
    b: [f32; TN],
}

impl<const TM: usize, const TN: usize> KFragment<TM, TN> {
    /// Reads k `kk` of a stage whose A is k-major, rows `a_row_floats` apart: `TM / 4` and
    /// `TN / 4` `LDS.128`.
    ///
    /// # Safety
    /// As [`multiply_stage`]; `kk < BK`; `TM % 4 == 0`.
    #[inline(always)]
    pub(super) unsafe fn load(
        (a, b): (Shared<f32>, Shared<f32>),
        (a_row_floats, bn): (u32, u32),
        f: Fragment,
        kk: u32,
    ) -> Self {
        let mut frag = KFragment {
            a: [0.0; TM],
            b: [0.0; TN],
        };
        for q in 0..TM / 4 {
            let at = kk * a_row_floats + f.row_of(4 * q as u32);
            // SAFETY: inside the A tile (rows row_of(4 q) .. +4 < bm); 16-byte aligned (row
            // and row length multiples of 4).
            let v = unsafe { a.add(at).cast::<[f32; 4]>().read() };
            frag.a[4 * q..4 * q + 4].copy_from_slice(&v);
        }
        for g in 0..TN / 4 {
            let at = kk * bn + f.col + 32 * g as u32;
            // SAFETY: inside the B tile; 16-byte aligned.
            let v = unsafe { b.add(at).cast::<[f32; 4]>().read() };
            frag.b[4 * g..4 * g + 4].copy_from_slice(&v);
        }
        frag
    }

    /// `acc += a b^T`: `TM x TN` FFMAs.
    #[inline(always)]
    pub(super) fn multiply(&self, acc: &mut [[f32; TN]; TM]) {
        for (out, &a_value) in acc.iter_mut().zip(&self.a) {
            for (o, &b_value) in out.iter_mut().zip(&self.b) {
                *o = ptx::fma_f32(a_value, b_value, *o);
            }
        }
    }
}

/// A thread's operands one k ahead of its multiply (CUTLASS's fragment double-buffering):
/// while k's fragment multiplies, k + 1's `LDS.128`s are in flight, across k-tiles too — the
/// next k-tile's first k loads before the current one's last multiplies, so the wait and
/// block synchronization between k-tiles overlap that multiply. Stages hold A k-major.
///
/// The [`StageMma`] of the `cp.async` styles' collective mainloop
/// ([`consume_k_tiles!`](gpu::consume_k_tiles)): [`FragmentPipe::start`] on the first stage,
/// then per k-tile `multiply_all_but_last` (after which every read of the stage is issued and
/// it may be released), then `advance` onto the next stage (waited for), or `finish` after the
/// last.
pub(super) struct FragmentPipe<const TM: usize, const TN: usize> {
    pub(super) f: Fragment,
    /// Loaded, not yet multiplied.
    pub(super) held: KFragment<TM, TN>,
}

impl<const TM: usize, const TN: usize> FragmentPipe<TM, TN> {
    /// Multiplies the held k, then holds `loaded` (whose loads were issued first, so they
    /// overlap the FFMAs).
    #[inline(always)]
    pub(super) fn multiply_then_hold(
        &mut self,
        loaded: KFragment<TM, TN>,
        acc: &mut [[f32; TN]; TM],
    ) {
        self.held.multiply(acc);
        self.held = loaded;
    }
}

/// Writes this thread's fragment of C, clipped to the matrix.
///
/// # Safety
/// The launch contract; with `ALIGN = 16`, `n` is a multiple of 4.
#[inline(always)]
pub(super) unsafe fn store_fragment<const TM: usize, const TN: usize, const ALIGN: u32>(
    p: &Problem,
    f: Fragment,
    acc: &[[f32; TN]; TM],
) {
    for (i, out) in acc.iter().enumerate() {
        let row = p.m0 + f.row_of(i as u32);
        if !p.interior && row >= p.m {
            continue;
        }
        for g in 0..TN / 4 {
            let col = p.n0 + f.col + 32 * g as u32;
            let v = [out[4 * g], out[4 * g + 1], out[4 * g + 2], out[4 * g + 3]];
            // SAFETY: launch contract; the row is inside C.
            unsafe { store_quad::<ALIGN>(p, row, col, v) };
        }
    }
}

/// Writes the four values of C's `row` (inside C) from column `col` (a multiple of 4), clipped
/// to its columns: one 16-byte store with `ALIGN = 16` (`n % 4 == 0`), else one per element
/// (both epilogues: [`store_fragment`] and the split-K one).
///
/// # Safety
/// The launch contract; `row < m`.
#[inline(always)]
pub(super) unsafe fn store_quad<const ALIGN: u32>(p: &Problem, row: u32, col: u32, v: [f32; 4]) {
    let at = p.c.wrapping_add(row as usize * p.n as usize + col as usize);
    if ALIGN == 16 && (p.interior || col < p.n) {
        // SAFETY: n % 4 == 0 and col % 4 == 0, so all four are in the row, and the address
        // is 16-byte aligned.
        unsafe { at.cast::<Quad>().write(Quad(v)) };
    } else if ALIGN != 16 {
        for (e, &value) in v.iter().enumerate() {
            if p.interior || col + (e as u32) < p.n {
                // SAFETY: inside the matrix.
                unsafe { at.add(e).write(value) };
            }
        }
    }
}
