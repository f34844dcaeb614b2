//! One block's view of the GEMM: its operands and tile of C ([`Problem`]), the tile geometry
//! its const generics describe ([`Geometry`]), whether its tiles lie inside the matrices, the
//! copy of a k-tile into a stage, and [`BlockTile`], the operations every mainloop is made of.

#[cfg(target_feature = "sm_90")]
use super::fragment::multiply_stage;
use super::fragment::{Fragment, KFragment, store_fragment};
use crate::gemm::shapes::{ALayout, BK, GemmStyle, GemmTile, staged_layout};
use gpu::group::{Group, Threads};
use gpu::layout::{PipelineSharedState, RowPitch, StagedLayout};
use gpu::memcpy_async::completion::{Completion, Unbound};
use gpu::memcpy_async::cp_async::{
    GlobalTile, TileShape, memcpy_async_tile, memcpy_async_tile_transposed,
};
use gpu::ptx;
use gpu::shared::Shared;

/// The operands and this block's tile of C.
#[derive(Clone, Copy)]
pub(super) struct Problem {
    a: *const f32,
    b: *const f32,
    pub(super) c: *mut f32,
    pub(super) m: u32,
    pub(super) n: u32,
    k: u32,
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
    fn for_block(
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
    fn k_first(&self) -> u32 {
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
    const VALID: () = assert!(
        TN.is_multiple_of(4) && TM >= 1 && BK.is_multiple_of(4),
        "a thread's columns are read and written as float4"
    );

    /// The shared-memory layout of `style` with this tile (what [`GemmKernel::layout`] gives
    /// the host for the same tile and style).
    ///
    /// [`GemmKernel::layout`]: crate::gemm::GemmKernel::layout
    const fn layout(style: GemmStyle) -> StagedLayout {
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

/// Stage `s`'s A tile (`bm` rows of `BK` floats) and B tile (`BK` rows of `bn` floats).
#[inline(always)]
fn stage_tiles(layout: StagedLayout, a_bytes: u32, s: u32) -> (Shared<f32>, Shared<f32>) {
    let stage = layout.stage::<u8>(s);
    (stage.cast(), stage.add(a_bytes).cast())
}

/// Copies k-tile `t` of A and B into a stage, the copies split over `group`, bound to
/// `completion` (the A copies ride on the B copies' binding).
///
/// # Safety
/// The launch contract; `t < k_tiles`; the stage is free until `completion` says the copies
/// landed; every thread of `group` calls it.
#[inline(always)]
unsafe fn copy_k_tile<
    G: Group,
    C: Completion,
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const ALIGN: u32,
>(
    group: &G,
    p: &Problem,
    t: u32,
    (a_dst, b_dst): (Shared<f32>, Shared<f32>),
    a_layout: ALayout,
    completion: &C,
) {
    type G4<const TM: usize, const TN: usize, const WM: u32, const WN: u32> =
        Geometry<TM, TN, WM, WN>;
    let a = p.a_tile(t, G4::<TM, TN, WM, WN>::BM);
    let b = p.b_tile(t, G4::<TM, TN, WM, WN>::BN);
    // SAFETY: both tiles are clipped to their matrices; rows of A are K floats apart and of B
    // N floats, multiples of ALIGN (launch contract); the stage is free (caller).
    unsafe {
        match a_layout {
            ALayout::MMajor => memcpy_async_tile::<_, _, _, _, _, ALIGN>(
                group,
                a_dst,
                RowPitch(BK * 4),
                a,
                G4::<TM, TN, WM, WN>::A_SHAPE,
                &Unbound,
            ),
            // One float per copy whatever ALIGN says: a transposing copy moves elements.
            ALayout::KMajor => memcpy_async_tile_transposed::<_, _, _, 4>(
                group,
                a_dst,
                G4::<TM, TN, WM, WN>::TILE.a_k_row_floats() * 4,
                a,
                G4::<TM, TN, WM, WN>::A_SHAPE,
                &Unbound,
            ),
        }
        memcpy_async_tile::<_, _, _, _, _, ALIGN>(
            group,
            b_dst,
            RowPitch(G4::<TM, TN, WM, WN>::BN * 4),
            b,
            G4::<TM, TN, WM, WN>::B_SHAPE,
            completion,
        );
    }
}

/// One block's view of a GEMM with the tile `TM x TN` per thread, `WM x WN` warps: its part of
/// the problem and the shared-memory layout of its style, and the operations every mainloop
/// is made of.
pub(super) struct BlockTile<const TM: usize, const TN: usize, const WM: u32, const WN: u32> {
    pub(super) p: Problem,
    layout: StagedLayout,
    pub(super) a_layout: ALayout,
    /// The first of this group's stages in the layout (0 but for k groups: group `g` owns
    /// stages `g STAGES ..`).
    first_stage: u32,
}

impl<const TM: usize, const TN: usize, const WM: u32, const WN: u32> BlockTile<TM, TN, WM, WN> {
    /// This block's tile of the problem, laid out for `style`.
    #[inline(always)]
    pub(super) fn new(
        style: GemmStyle,
        ptrs: (*const f32, *const f32, *mut f32),
        mnk: (u32, u32, u32),
        interior: bool,
    ) -> Self {
        Self::for_group(style, ptrs, mnk, interior, 0)
    }

    /// This block's tile of the problem as k group `group` of `style` sees it: its share of
    /// the k-tiles, its own stages.
    #[inline(always)]
    pub(super) fn for_group(
        style: GemmStyle,
        (a, b, c): (*const f32, *const f32, *mut f32),
        mnk: (u32, u32, u32),
        interior: bool,
        group: u32,
    ) -> Self {
        let () = Geometry::<TM, TN, WM, WN>::VALID;
        let bm_bn = (
            Geometry::<TM, TN, WM, WN>::BM,
            Geometry::<TM, TN, WM, WN>::BN,
        );
        let split = (style.split(), style.k_groups(), group);
        BlockTile {
            p: Problem::for_block(a, b, c, mnk, bm_bn, interior, split),
            layout: Geometry::<TM, TN, WM, WN>::layout(style),
            a_layout: style.a_layout(),
            first_stage: group * style.stages(),
        }
    }

    /// Compute thread `thread`'s fragment of the tile.
    #[inline(always)]
    pub(super) fn fragment(&self, thread: u32) -> Fragment {
        Fragment::of::<TM, TN, WN>(thread, self.a_layout)
    }

    /// The threads that compute, as a copy group (a compute thread's rank is its `%tid.x`).
    #[inline(always)]
    pub(super) fn compute_group(thread: u32) -> Threads {
        Threads::new(thread, Geometry::<TM, TN, WM, WN>::COMPUTE_THREADS)
    }

    /// Stage `s`'s A and B tiles.
    #[inline(always)]
    pub(super) fn stage(&self, s: u32) -> (Shared<f32>, Shared<f32>) {
        let a_bytes = Geometry::<TM, TN, WM, WN>::TILE.a_tile_bytes(self.a_layout);
        stage_tiles(self.layout, a_bytes, self.first_stage + s)
    }

    /// The pipeline's mbarriers, after the stages.
    #[inline(always)]
    pub(super) fn barriers<const STAGES: usize>(&self) -> Shared<PipelineSharedState<STAGES>> {
        self.layout.barriers()
    }

    /// Copies k-tile `t` into stage `s`, split over `group`, bound to `completion`.
    ///
    /// # Safety
    /// As [`copy_k_tile`]: `t` is a k-tile, stage `s` is free, every thread of `group` calls.
    #[inline(always)]
    pub(super) unsafe fn copy<G: Group, C: Completion, const ALIGN: u32>(
        &self,
        group: &G,
        t: u32,
        s: u32,
        completion: &C,
    ) {
        // SAFETY: forwarded.
        unsafe {
            copy_k_tile::<_, _, TM, TN, WM, WN, ALIGN>(
                group,
                &self.p,
                t,
                self.stage(s),
                self.a_layout,
                completion,
            )
        }
    }

    /// Copies k-tile `t` of A alone into stage `s`, k-major, split over `group`, bound to
    /// `completion` (the tensor-copy-B style: B arrives by the copy engine). Written apart
    /// from [`copy_k_tile`] on purpose: sharing its A half changed the code LLVM placed for the
    /// measured `cp.async` kernels.
    ///
    /// # Safety
    /// As [`copy_k_tile`], for A.
    #[cfg(target_feature = "sm_90")]
    #[inline(always)]
    pub(super) unsafe fn copy_a_k_major<G: Group, C: Completion>(
        &self,
        group: &G,
        t: u32,
        s: u32,
        completion: &C,
    ) {
        type G4<const TM: usize, const TN: usize, const WM: u32, const WN: u32> =
            Geometry<TM, TN, WM, WN>;
        let a = self.p.a_tile(t, G4::<TM, TN, WM, WN>::BM);
        // SAFETY: the tile is clipped to A; the stage is free (caller); one float per copy.
        unsafe {
            memcpy_async_tile_transposed::<_, _, _, 4>(
                group,
                self.stage(s).0,
                G4::<TM, TN, WM, WN>::TILE.a_k_row_floats() * 4,
                a,
                G4::<TM, TN, WM, WN>::A_SHAPE,
                completion,
            )
        }
    }

    /// `acc += ` stage `s`'s product for fragment `f`.
    ///
    /// # Safety
    /// As [`multiply_stage`]: the stage's copies landed and are visible to this thread.
    #[cfg(target_feature = "sm_90")]
    #[inline(always)]
    pub(super) unsafe fn multiply(&self, s: u32, f: Fragment, acc: &mut [[f32; TN]; TM]) {
        // SAFETY: forwarded.
        unsafe { multiply_stage::<TM, TN>(self.stage(s), Geometry::<TM, TN, WM, WN>::BN, f, acc) }
    }

    /// Fragment `f`'s operands at k `kk` of stage `s` (A k-major).
    ///
    /// # Safety
    /// As [`multiply_stage`]; the tile stores A k-major.
    #[inline(always)]
    pub(super) unsafe fn load_k(&self, s: u32, f: Fragment, kk: u32) -> KFragment<TM, TN> {
        let strides = (
            Geometry::<TM, TN, WM, WN>::TILE.a_k_row_floats(),
            Geometry::<TM, TN, WM, WN>::BN,
        );
        // SAFETY: forwarded.
        unsafe { KFragment::load(self.stage(s), strides, f, kk) }
    }

    /// Writes fragment `f` of C.
    ///
    /// # Safety
    /// The launch contract (with `ALIGN = 16`, `n % 4 == 0`).
    #[inline(always)]
    pub(super) unsafe fn store<const ALIGN: u32>(&self, f: Fragment, acc: &[[f32; TN]; TM]) {
        // SAFETY: forwarded.
        unsafe { store_fragment::<TM, TN, ALIGN>(&self.p, f, acc) }
    }
}
