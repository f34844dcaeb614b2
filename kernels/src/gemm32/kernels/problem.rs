//! One block's part of the GEMM: its operands and tile of C ([`Problem`]), the tile geometry
//! its const generics describe ([`Geometry`]), and whether its tiles lie inside the matrices.

use crate::gemm32::shapes::{BK, GemmStyle, GemmTile, staged_layout};
use gpu::layout::StagedLayout;
use gpu::memcpy_async::cp_async::{GlobalTile, TileShape};
use gpu::ptx;

/// The operands and this block's tile of C.
#[derive(Clone, Copy)]
pub(super) struct Problem {
    pub(super) a: *const f32,
    pub(super) b: *const f32,
    pub(super) c: *mut f32,
    pub(super) m: u32,
    pub(super) n: u32,
    pub(super) k: u32,
    /// First row of this block's tile.
    pub(super) m0: u32,
    /// First column of this block's tile.
    pub(super) n0: u32,
    /// Whether every k-tile of this block lies inside both matrices: then no copy needs a
    /// bound check or a zero fill, and the clipping below folds away.
    pub(super) interior: bool,
    /// Shares the k-tiles of this tile of C are cut into: the cluster's blocks times each
    /// block's k groups (1: K is not split, and every split term folds away where it was).
    parts: u32,
    /// Which share this thread's group multiplies: its block's rank in the cluster times the
    /// block's k groups, plus its group.
    part: u32,
}

impl Problem {
    /// The problem as group `group` of this block sees it (grid x over n, y over m). With K
    /// split `split` ways over a cluster (`split` consecutive blocks along x per tile of C) and
    /// `k_groups` ways in each block, block `x` takes tile column `x / split`, and its group
    /// `g` the `(x % split) k_groups + g`-th share of the k-tiles.
    #[inline(always)]
    pub(super) fn for_block(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        (m, n, k): (u32, u32, u32),
        (bm, bn): (u32, u32),
        interior: bool,
        (split, k_groups, group): (u32, u32, u32),
    ) -> Problem {
        Problem {
            a,
            b,
            c,
            m,
            n,
            k,
            m0: ptx::block_idx_y() * bm,
            n0: ptx::block_idx_x() / split * bn,
            interior,
            parts: split * k_groups,
            part: (ptx::block_idx_x() % split) * k_groups + group,
        }
    }

    /// The first k-tile of this group's share (0 unless K is split).
    #[inline(always)]
    pub(super) fn k_first(&self) -> u32 {
        if self.parts == 1 {
            return 0;
        }
        self.part * self.k.div_ceil(BK).div_ceil(self.parts)
    }

    /// K-tiles of the largest share: what every share walks when K splits evenly.
    #[inline(always)]
    pub(super) fn k_tiles_per_share(&self) -> u32 {
        self.k.div_ceil(BK).div_ceil(self.parts)
    }

    /// K-tiles to walk: all of them, or this group's share (possibly none when K has fewer
    /// k-tiles than there are shares).
    #[inline(always)]
    pub(super) fn k_tiles(&self) -> u32 {
        let tiles = self.k.div_ceil(BK);
        if self.parts == 1 {
            return tiles;
        }
        tiles
            .div_ceil(self.parts)
            .min(tiles.saturating_sub(self.k_first()))
    }

    /// K-tile `t` (of this block's share) of this block's rows of A: `bm x BK`, clipped to the
    /// matrix.
    #[inline(always)]
    pub(super) fn a_tile(&self, t: u32, bm: u32) -> GlobalTile<f32> {
        let k0 = (self.k_first() + t) * BK;
        GlobalTile {
            base: self
                .a
                .wrapping_add(self.m0 as usize * self.k as usize + k0 as usize),
            row_stride: self.k as usize * 4,
            valid_rows: if self.interior {
                bm
            } else {
                (self.m - self.m0).min(bm)
            },
            valid_row_bytes: if self.interior {
                BK * 4
            } else {
                (self.k - k0).min(BK) * 4
            },
        }
    }

    /// K-tile `t` (of this block's share) of this block's columns of B: `BK x bn`, clipped to
    /// the matrix.
    #[inline(always)]
    pub(super) fn b_tile(&self, t: u32, bn: u32) -> GlobalTile<f32> {
        let k0 = (self.k_first() + t) * BK;
        GlobalTile {
            base: self
                .b
                .wrapping_add(k0 as usize * self.n as usize + self.n0 as usize),
            row_stride: self.n as usize * 4,
            valid_rows: if self.interior {
                BK
            } else {
                (self.k - k0).min(BK)
            },
            valid_row_bytes: if self.interior {
                bn * 4
            } else {
                (self.n - self.n0).min(bn) * 4
            },
        }
    }
}

/// The tile geometry a body's const generics describe.
pub(super) struct Geometry<const TM: usize, const TN: usize, const WM: u32, const WN: u32>;

impl<const TM: usize, const TN: usize, const WM: u32, const WN: u32> Geometry<TM, TN, WM, WN> {
    /// The tile these generics describe: the same [`GemmTile`] the host's table holds, so host
    /// and device derive the block shape and the layout from one definition.
    pub(super) const TILE: GemmTile = GemmTile {
        warps_m: WM,
        warps_n: WN,
        thread_m: TM as u32,
        thread_n: TN as u32,
    };
    pub(super) const BM: u32 = Self::TILE.bm();
    pub(super) const BN: u32 = Self::TILE.bn();
    pub(super) const COMPUTE_THREADS: u32 = Self::TILE.compute_threads();
    pub(super) const A_SHAPE: TileShape = TileShape {
        rows: Self::BM,
        row_bytes: BK * 4,
    };
    pub(super) const B_SHAPE: TileShape = TileShape {
        rows: BK,
        row_bytes: Self::BN * 4,
    };
    pub(super) const VALID: () = assert!(
        TN.is_multiple_of(4) && TM >= 1 && BK.is_multiple_of(4),
        "a thread's columns are read and written as float4"
    );

    /// The shared-memory layout of `style` with this tile (what [`GemmKernel::layout`] gives
    /// the host for the same tile and style).
    ///
    /// [`GemmKernel::layout`]: crate::gemm32::GemmKernel::layout
    pub(super) const fn layout(style: GemmStyle) -> StagedLayout {
        staged_layout(style, Self::TILE)
    }
}

/// Whether this block's every k-tile lies inside both matrices (`k % BK == 0`, and the
/// block's rows and columns inside C): the entry points then call the body with
/// `INTERIOR = true`, whose copies compile without bound checks or zero fills.
#[inline(always)]
pub fn block_is_interior<const TM: usize, const TN: usize, const WM: u32, const WN: u32>(
    m: u32,
    n: u32,
    k: u32,
) -> bool {
    split_block_is_interior::<TM, TN, WM, WN, 1>(m, n, k)
}

/// [`block_is_interior`] for a block of a split-K cluster of `SPLIT` blocks along x (its tile
/// column `x / SPLIT`): whether every k-tile of its share lies inside both matrices.
#[inline(always)]
pub fn split_block_is_interior<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const SPLIT: u32,
>(
    m: u32,
    n: u32,
    k: u32,
) -> bool {
    // No overflow: a block exists only where its first row and column are inside the
    // matrix, and the dimensions are at most MAX_DIM.
    k.is_multiple_of(BK)
        && (ptx::block_idx_y() + 1) * Geometry::<TM, TN, WM, WN>::BM <= m
        && (ptx::block_idx_x() / SPLIT + 1) * Geometry::<TM, TN, WM, WN>::BN <= n
}
