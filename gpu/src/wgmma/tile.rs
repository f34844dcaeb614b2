//! Register-tile verbs on a warpgroup's [`Accumulator`], after ThunderKittens' `row_max`,
//! `row_sum`, `mul_row` and `exp2`: what an attention kernel's online softmax does to its
//! `S = Q K^T` tile between the two multiplies, in registers and quad shuffles only.
//!
//! The accumulator's layout makes rows cheap. Thread `t` holds rows `r = 16 (t / 32) +
//! (t % 32) / 4` (registers `i` with `(i / 2) % 2 == 0`) and `r + 8` (the others), `N / 4`
//! columns of each; the four lanes of a quad (`4 q..4 q + 4` of a warp: lane `l`, `l ^ 1`,
//! `l ^ 2`, `l ^ 3`) hold the same two rows and between them all `N` columns. So a row
//! reduction is a fold over this thread's `REGS / 2` registers of the row, then two butterfly
//! shuffles (`shfl.sync.bfly` by 1, then by 2), after which every lane of the quad has the
//! row's value. A verb returns or takes one value per row as `[f32; 2]`: `[row r, row r + 8]`.
//!
//! | call | lowers to, per row (SASS) |
//! |---|---|
//! | [`row_max`](Accumulator::row_max) | `REGS / 2 - 1` `FMNMX`, then 2 `SHFL.BFLY` + 2 `FMNMX` |
//! | [`row_max_with`](Accumulator::row_max_with)`(init)` | one `FMNMX` more (the running maximum folded in first) |
//! | [`row_sum`](Accumulator::row_sum) | `REGS / 2 - 1` `FADD`, then 2 `SHFL.BFLY` + 2 `FADD` |
//! | [`scale_rows`](Accumulator::scale_rows)`(s)` | `REGS / 2` `FMUL` |
//! | [`exp2_scaled`](Accumulator::exp2_scaled)`(scale, offset)` | `REGS / 2` `FFMA` + `REGS / 2` `MUFU.EX2` (`ex2.approx.ftz.f32`) |
//! | [`mask_columns_from`](Accumulator::mask_columns_from)`(t, limit)` | `REGS / 2` `ISETP` + `REGS / 2` `FSEL` |
//!
//! With these an online-softmax step over one `64 x N` tile of scores `s` reads (the running
//! maximum `m` and sum `l` of this thread's rows, the output `o`, `scale = softmax_scale *
//! log2(e)`):
//!
//! ```ignore
//! let m_new = s.row_max_with(m);
//! let offset = m_new.map(|x| x * scale); // a row masked out entirely (-inf) needs 0 here
//! let alpha = [0, 1].map(|h| gpu::math::exp2(m[h] * scale - offset[h]));
//! s.exp2_scaled(scale, offset); // P = 2^(S scale - m scale) = e^(softmax_scale (S - m))
//! let sum = s.row_sum();
//! l = [0, 1].map(|h| l[h] * alpha[h] + sum[h]);
//! o.scale_rows(alpha);
//! let p = s.to_a_fragment::<Bf16>(0); // P's first 64 columns as the A operand of P V
//! m = m_new;
//! ```
//!
//! # Convergence
//! The reductions shuffle with the full warp's mask (`shfl.sync ... 0xffffffff`): all 32
//! lanes of the warp call them together, converged. The four warps of the warpgroup are
//! independent of each other here (a quad never spans two warps), so they need not be in
//! step. The element-wise verbs ([`scale_rows`](Accumulator::scale_rows),
//! [`exp2_scaled`](Accumulator::exp2_scaled)) have no such requirement.

use super::{AFragment, Accumulator};
#[cfg(target_arch = "nvptx64")]
use crate::{math, ptx, reduce::shfl_xor};

/// Which of a thread's two rows register `i` of an [`Accumulator`] holds: 0 for row
/// `16 (t / 32) + (t % 32) / 4`, 1 for the row 8 below it. Registers come in fours: two
/// adjacent columns of the first row, then the same two columns of the second.
#[inline(always)]
const fn row_half(i: usize) -> usize {
    (i / 2) % 2
}

impl<const REGS: usize> Accumulator<REGS> {
    /// A tile of whole 8-column groups (wgmma's N is a multiple of 8): `REGS` a multiple of 4.
    #[cfg(target_arch = "nvptx64")]
    const WHOLE_GROUPS: () = assert!(REGS >= 4 && REGS.is_multiple_of(4));

    /// `f` folded over each of this thread's two rows, in register order (registers 0 and 1
    /// of the row first): `REGS / 2 - 1` applications per row.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn fold_rows(&self, f: impl Fn(f32, f32) -> f32) -> [f32; 2] {
        let () = Self::WHOLE_GROUPS;
        let r = &self.regs;
        let mut acc = [f(r[0], r[1]), f(r[2], r[3])];
        let mut i = 4;
        while i < REGS {
            acc[0] = f(f(acc[0], r[i]), r[i + 1]);
            acc[1] = f(f(acc[1], r[i + 2]), r[i + 3]);
            i += 4;
        }
        acc
    }

    /// The largest element of each of this thread's two rows over the whole tile (all `N`
    /// columns), in every lane of the quad: `[row r, row r + 8]`. `max.f32` throughout: a NaN
    /// loses to a number; `+0` and `-0` may come out either way.
    ///
    /// Lowers to `REGS / 2 - 1` `max.f32` per row over this thread's registers, then per row
    /// `shfl.sync.bfly.b32` by 1 and by 2, each followed by a `max.f32` (SASS: `FMNMX`,
    /// `SHFL.BFLY`). Every lane of the warp calls it, converged (module docs).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    #[must_use]
    pub fn row_max(&self) -> [f32; 2] {
        quad_reduce(self.fold_rows(f32::max), f32::max)
    }

    /// The running maximum: the largest of each row's elements and `init` (the maximum of
    /// the earlier tiles, as this returned it), in every lane of the quad. `init` is folded
    /// in before the shuffles, so the result is the same in the four lanes even where their
    /// `init`s differ (it is then the largest of the four).
    ///
    /// Lowers to what [`row_max`](Self::row_max) does and one `max.f32` more per row. Every
    /// lane of the warp calls it, converged (module docs).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    #[must_use]
    pub fn row_max_with(&self, init: [f32; 2]) -> [f32; 2] {
        let local = self.fold_rows(f32::max);
        quad_reduce([init[0].max(local[0]), init[1].max(local[1])], f32::max)
    }

    /// The sum of each of this thread's two rows over the whole tile, in every lane of the
    /// quad: `[row r, row r + 8]`. The order of the additions: this thread's registers of the
    /// row in register order, then the butterfly — lane `l` adds lane `l ^ 1`'s partial, then
    /// lane `l ^ 2`'s pair sum; the four lanes add the same two numbers at each step, in
    /// either order, so they end with the same bits.
    ///
    /// Lowers to `REGS / 2 - 1` `add.f32` per row, then per row `shfl.sync.bfly.b32` by 1 and
    /// by 2, each followed by an `add.f32` (SASS: `FADD`, `SHFL.BFLY`). Every lane of the warp
    /// calls it, converged (module docs).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    #[must_use]
    pub fn row_sum(&self) -> [f32; 2] {
        quad_reduce(self.fold_rows(|a, b| a + b), |a, b| a + b)
    }

    /// Every element of row `r` (this thread's first row) times `s[0]`, of row `r + 8` times
    /// `s[1]`: the rescaling of an online softmax's output by `2^(m_old - m_new)`.
    ///
    /// Lowers to `REGS` `mul.f32` (SASS `FMUL`, `REGS / 2` per row); no shuffles.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn scale_rows(&mut self, s: [f32; 2]) {
        let () = Self::WHOLE_GROUPS;
        let mut i = 0;
        while i < REGS {
            self.regs[i] *= s[row_half(i)];
            i += 1;
        }
    }

    /// Every element `x` of row `h` (0: this thread's first row, 1: the one 8 below) becomes
    /// `2^(x * scale - row_offset[h])`, the product and the subtraction rounded once: the
    /// exponentials of a softmax with `scale = softmax_scale * log2(e)` and `row_offset =
    /// row_max * scale` (FlashAttention's form, so that `e^(softmax_scale (x - max))` costs
    /// one `FFMA` and one `MUFU.EX2`).
    ///
    /// Accuracy that of [`math::exp2`]: within 2 ulp of `2^y` for the rounded `y` (the
    /// library's self-test bounds it by 3), a result below `2^-126` flushed to 0. An element
    /// of `-inf` (masked out) gives 0 while its row's offset is finite; a row whose offset is
    /// `-inf` (every element masked, so the maximum is `-inf`) gives NaN for those: pass 0 as
    /// that row's offset.
    ///
    /// Lowers to `REGS` `fma.rn.f32` (`x`, `scale`, `-row_offset`; the two negations fold
    /// into the `FFMA`s) and `REGS` `ex2.approx.ftz.f32` (SASS `MUFU.EX2`); no shuffles.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn exp2_scaled(&mut self, scale: f32, row_offset: [f32; 2]) {
        let () = Self::WHOLE_GROUPS;
        let minus = [-row_offset[0], -row_offset[1]];
        let mut i = 0;
        while i < REGS {
            self.regs[i] = math::exp2(ptx::fma_f32(self.regs[i], scale, minus[row_half(i)]));
            i += 1;
        }
    }
}

impl<const REGS: usize> Accumulator<REGS> {
    /// Every element of this thread's row `h` (0: its first row, 1: the one 8 below) whose
    /// column is at or past `limit[h]` becomes `-inf`: the mask of an attention score tile
    /// (keys past the sequence's end, or past a causal row's diagonal), `limit` counted from
    /// the tile's first column (negative: the whole row; `N` or more: none). `t` is this
    /// thread's index in the warpgroup. Exactly the elements [`Accumulator::position`] puts
    /// at those columns.
    ///
    /// Lowers to `REGS` integer compares and `REGS` selects (SASS `ISETP`, `FSEL`), the
    /// columns being constants plus `2 (t % 4)`; no shuffles.
    #[inline(always)]
    pub fn mask_columns_from(&mut self, t: u32, limit: [i32; 2]) {
        let mut i = 0;
        while i < REGS {
            let (_, col) = Self::position(t, i as u32);
            if col as i32 >= limit[row_half(i)] {
                self.regs[i] = f32::NEG_INFINITY;
            }
            i += 1;
        }
    }
}

/// `v` (one value per row) combined over the four lanes of the quad: `combine` with lane
/// `l ^ 1`'s, then with lane `l ^ 2`'s. Every lane of the warp calls it, converged.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn quad_reduce(v: [f32; 2], combine: impl Fn(f32, f32) -> f32) -> [f32; 2] {
    let mut v = v;
    let mut mask = 1;
    while mask <= 2 {
        v = [
            combine(v[0], shfl_xor(v[0], mask)),
            combine(v[1], shfl_xor(v[1], mask)),
        ];
        mask *= 2;
    }
    v
}

impl AFragment {
    /// `(row, k)` in the warpgroup's 64 x 64 k-tile of the first of the two 16-bit elements
    /// register `r` (0..16) of warpgroup thread `t` holds (the low half; the high half is
    /// `(row, k + 1)`): the PTX ISA's register fragment of A for `wgmma.mma_async.m64nNk16`
    /// (each warp `w = t / 32` the `mma.m16n8k16` A fragment of rows `16 w..16 w + 16`),
    /// k-slice `r / 4`. With `g = 16 w + (t % 32) / 4`, `c = t % 4` and `k0 = 16 (r / 4)`,
    /// registers `a0..a3` of a slice are `(g, k0 + 2 c)`, `(g + 8, k0 + 2 c)`,
    /// `(g, k0 + 2 c + 8)` and `(g + 8, k0 + 2 c + 8)`.
    #[inline(always)]
    pub const fn position(t: u32, r: u32) -> (u32, u32) {
        let g = 16 * (t / 32) + (t % 32) / 4;
        let c = t % 4;
        let a = r % 4;
        (g + 8 * (a % 2), 16 * (r / 4) + 2 * c + 8 * (a / 2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wgmma::x4_lane_row;

    /// The PTX ISA's A fragment of `mma.m16n8k16` (.f16/.bf16), element `a_i` (`i` in 0..8)
    /// of lane `lane`: row `groupID` for `i` in {0, 1, 4, 5}, else `groupID + 8`; column
    /// `2 threadID_in_group + (i & 1)`, plus 8 for `i >= 4` — written as the ISA states it,
    /// independently of [`AFragment::position`].
    fn m16n8k16_a(lane: u32, i: u32) -> (u32, u32) {
        let (group, in_group) = (lane >> 2, lane % 4);
        let row = if i < 2 || (4..6).contains(&i) {
            group
        } else {
            group + 8
        };
        let col = in_group * 2 + (i & 1) + if i >= 4 { 8 } else { 0 };
        (row, col)
    }

    /// The four lanes `l`, `l ^ 1`, `l ^ 2`, `l ^ 3` of a quad hold the same two rows, each in
    /// the registers `row_half` says, and between them every column of both once: what the
    /// fold over a thread's registers and the two shuffles rely on.
    fn quads_hold_whole_rows<const REGS: usize>() {
        let n = Accumulator::<REGS>::N;
        for t in 0..128u32 {
            let (first, _) = Accumulator::<REGS>::position(t, 0);
            let mut columns = [vec![0u32; n as usize], vec![0u32; n as usize]];
            for lane in [t, t ^ 1, t ^ 2, t ^ 3] {
                for i in 0..REGS {
                    let (row, col) = Accumulator::<REGS>::position(lane, i as u32);
                    assert_eq!(
                        row,
                        first + 8 * row_half(i) as u32,
                        "t {t} lane {lane} i {i}"
                    );
                    columns[row_half(i)][col as usize] += 1;
                }
            }
            assert!(columns.iter().flatten().all(|&c| c == 1), "t {t}");
        }
    }

    #[test]
    fn the_lanes_of_a_quad_hold_the_same_rows_and_all_their_columns() {
        quads_hold_whole_rows::<4>();
        quads_hold_whole_rows::<32>();
        quads_hold_whole_rows::<64>();
        quads_hold_whole_rows::<88>();
        quads_hold_whole_rows::<128>();
    }

    /// The mask sets exactly the elements at or past each row's limit, in both rows of every
    /// thread, negative and past-the-end limits included.
    #[test]
    fn the_column_mask_sets_what_is_at_or_past_each_rows_limit() {
        for t in 0..128u32 {
            for limit in [[-3, 200], [0, 1], [37, 64], [64, 5], [63, 62]] {
                let mut acc = Accumulator::<32> { regs: [1.0; 32] };
                acc.mask_columns_from(t, limit);
                for i in 0..32 {
                    let (row, col) = Accumulator::<32>::position(t, i as u32);
                    let (first, _) = Accumulator::<32>::position(t, 0);
                    let h = usize::from(row != first);
                    let masked = col as i32 >= limit[h];
                    assert_eq!(acc.regs[i] == f32::NEG_INFINITY, masked, "t {t} i {i}");
                }
            }
        }
    }

    #[test]
    fn the_a_fragment_is_the_ptx_isas_m16n8k16_fragment_per_warp() {
        for t in 0..128u32 {
            let (w, lane) = (t / 32, t % 32);
            for r in 0..16u32 {
                // Register r of slice r / 4 packs a_(2 (r % 4)) (low) and a_(2 (r % 4) + 1).
                let (row, k) = AFragment::position(t, r);
                let (lo, hi) = (
                    m16n8k16_a(lane, 2 * (r % 4)),
                    m16n8k16_a(lane, 2 * (r % 4) + 1),
                );
                assert_eq!(
                    (row, k),
                    (16 * w + lo.0, 16 * (r / 4) + lo.1),
                    "t {t} r {r}"
                );
                assert_eq!(
                    (row, k + 1),
                    (16 * w + hi.0, 16 * (r / 4) + hi.1),
                    "t {t} r {r}"
                );
            }
        }
        // The 128 threads' 16 registers cover the 64 x 64 k-tile once, in pairs.
        let mut seen = vec![false; 64 * 64];
        for t in 0..128 {
            for r in 0..16 {
                let (row, k) = AFragment::position(t, r);
                for col in [k, k + 1] {
                    assert!(!std::mem::replace(
                        &mut seen[(row * 64 + col) as usize],
                        true
                    ));
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    /// `to_a_fragment::<E>(j)` puts `pack2(regs[8 q + 2 m], regs[8 q + 2 m + 1])` in register
    /// `4 s + m` of the fragment, `q = 4 j + s` (four `pack_x4(q)`): those two accumulator
    /// elements are exactly the fragment's element pair of that register, columns
    /// `64 j..64 j + 64` of the tile as the k-tile.
    #[test]
    fn to_a_fragment_packs_the_elements_the_a_fragment_holds() {
        const REGS: usize = 128;
        for t in 0..128u32 {
            for j in 0..REGS / 32 {
                for s in 0..4 {
                    let q = 4 * j + s;
                    for m in 0..4 {
                        let (lo, hi) = (8 * q + 2 * m, 8 * q + 2 * m + 1);
                        let (row, k) = AFragment::position(t, (4 * s + m) as u32);
                        let col = 64 * j as u32 + k;
                        assert_eq!(Accumulator::<REGS>::position(t, lo as u32), (row, col));
                        assert_eq!(Accumulator::<REGS>::position(t, hi as u32), (row, col + 1));
                    }
                }
            }
        }
    }

    /// `SwizzledKMajor::load_a`'s `ldmatrix_x4` gives register `m` of a slice the 8 x 8
    /// matrix `m` lanes `8 m..8 m + 8` address ([`x4_lane_row`]); a lane's share of it (row
    /// `lane / 4`, columns `2 (lane % 4)`, `+ 1`) is where [`AFragment::position`] puts that
    /// register, so registers loaded from shared memory and packed from an accumulator agree.
    #[test]
    fn ldmatrix_x4_loads_the_same_fragment() {
        for t in 0..128u32 {
            for r in 0..16u32 {
                let m = r % 4;
                let (row0, col0) = x4_lane_row(8 * m + (t % 32) / 4);
                let want = (16 * (t / 32) + row0, 16 * (r / 4) + col0 + 2 * (t % 4));
                assert_eq!(AFragment::position(t, r), want, "t {t} r {r}");
            }
        }
    }
}
