//! The GEMM's kernel bodies: one generic function per [`GemmStyle`], sharing the tile copy,
//! the per-stage multiply and the epilogue, so the styles differ only in their mainloop.
//!
//! Generic parameters, in order: the thread tile `TM x TN`, the warps `WM x WN` (see
//! [`GemmTile`](super::GemmTile)), the style's own (`STAGES`, and `PRODUCER_WARPS` for warp
//! specialization), `ALIGN`, the bytes per copy (16 or 4), and `INTERIOR`: the block's tiles
//! lie inside the matrices ([`block_is_interior`]; the entry points pick), so its copies and
//! stores need no bound checks.
//!
//! Every body's `# Safety` is the GEMM launch contract: grid [`GemmKernel::grid`], blocks of
//! [`GemmKernel::threads`] threads with [`GemmKernel::layout`] bytes of dynamic shared memory;
//! `a` holds `m * k` floats, `b` `k * n`, `c` `m * n`, each 16-byte aligned;
//! `1 <= m, n, k <= MAX_DIM`; with `ALIGN = 16`, `k` and `n` are multiples of 4; with
//! `INTERIOR`, [`block_is_interior`] holds for the block.
//!
//! [`GemmKernel::grid`]: super::GemmKernel::grid
//! [`GemmKernel::threads`]: super::GemmKernel::threads
//! [`GemmKernel::layout`]: super::GemmKernel::layout

use super::shapes::{
    ALayout, BK, GemmStyle, GemmTile, LANES_M, LANES_N, REFERENCE_TILE, staged_layout,
};
use crate::Quad;
use gpu::collective::StageMma;
use gpu::group::{Group, Threads, Warp};
use gpu::layout::{PipelineSharedState, RowPitch, StagedLayout};
use gpu::memcpy_async::completion::{Completion, Unbound};
use gpu::memcpy_async::cp_async::{
    GlobalTile, TileShape, memcpy_async_tile, memcpy_async_tile_transposed,
};
use gpu::pipeline::{BlockPipeline, Consumer, Producer, ThreadPipeline};
use gpu::ptx;
use gpu::shared::Shared;
#[cfg(target_feature = "sm_90")]
use gpu::{
    memcpy_async::{AlignedSize, bulk::memcpy_async_tensor},
    pipeline::{BulkPipeline, CpAsyncAndBulk},
    tensor_map::TensorMapRef,
};

/// The operands and this block's tile of C.
#[derive(Clone, Copy)]
struct Problem {
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    /// First row of this block's tile.
    m0: u32,
    /// First column of this block's tile.
    n0: u32,
    /// Whether every k-tile of this block lies inside both matrices: then no copy needs a
    /// bound check or a zero fill, and the clipping below folds away.
    interior: bool,
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
    fn k_tiles_per_share(&self) -> u32 {
        self.k.div_ceil(BK).div_ceil(self.parts)
    }

    /// K-tiles to walk: all of them, or this group's share (possibly none when K has fewer
    /// k-tiles than there are shares).
    #[inline(always)]
    fn k_tiles(&self) -> u32 {
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
    fn a_tile(&self, t: u32, bm: u32) -> GlobalTile<f32> {
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
    fn b_tile(&self, t: u32, bn: u32) -> GlobalTile<f32> {
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
struct Geometry<const TM: usize, const TN: usize, const WM: u32, const WN: u32>;

impl<const TM: usize, const TN: usize, const WM: u32, const WN: u32> Geometry<TM, TN, WM, WN> {
    /// The tile these generics describe: the same [`GemmTile`] the host's table holds, so host
    /// and device derive the block shape and the layout from one definition.
    const TILE: GemmTile = GemmTile {
        warps_m: WM,
        warps_n: WN,
        thread_m: TM as u32,
        thread_n: TN as u32,
    };
    const BM: u32 = Self::TILE.bm();
    const BN: u32 = Self::TILE.bn();
    const COMPUTE_THREADS: u32 = Self::TILE.compute_threads();
    const A_SHAPE: TileShape = TileShape {
        rows: Self::BM,
        row_bytes: BK * 4,
    };
    const B_SHAPE: TileShape = TileShape {
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
    /// [`GemmKernel::layout`]: super::GemmKernel::layout
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

/// Where a compute thread's fragment sits in the block tile: columns `col + 32 j .. +4`
/// (`j < TN / 4`), the eight column groups of a warp 16 bytes apart; rows
/// ([`Fragment::row_of`]) by how A is stored. With A m-major, rows `row + 4 i`: lanes `l` and
/// `l + 1` take adjacent rows, so the four rows a warp reads at once sit 32 bytes apart (no
/// bank conflict). With A k-major, rows `row + 16 (i / 4) + i % 4`: four consecutive rows per
/// `LDS.128`, the four lanes' quads side by side.
#[derive(Clone, Copy)]
struct Fragment {
    row: u32,
    col: u32,
    a_layout: ALayout,
}

impl Fragment {
    /// The fragment of compute thread `thread` (its warp `thread / 32` in a `WM x WN`
    /// arrangement, row-major) when stages hold A in `a_layout`.
    #[inline(always)]
    fn of<const TM: usize, const TN: usize, const WN: u32>(
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
    fn row_of(&self, i: u32) -> u32 {
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
unsafe fn multiply_stage<const TM: usize, const TN: usize>(
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
struct KFragment<const TM: usize, const TN: usize> {
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
    unsafe fn load(
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
    fn multiply(&self, acc: &mut [[f32; TN]; TM]) {
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
struct FragmentPipe<const TM: usize, const TN: usize> {
    f: Fragment,
    /// Loaded, not yet multiplied.
    held: KFragment<TM, TN>,
}

impl<const TM: usize, const TN: usize> FragmentPipe<TM, TN> {
    /// Loads k 0 of stage `s` for fragment `f`.
    ///
    /// # Safety
    /// The stage's copies landed and are visible to this thread; nothing writes it until it
    /// is released.
    #[inline(always)]
    unsafe fn start<const WM: u32, const WN: u32>(
        block: &BlockTile<TM, TN, WM, WN>,
        f: Fragment,
        s: u32,
    ) -> Self {
        // SAFETY: forwarded.
        let held = unsafe { block.load_k(s, f, 0) };
        FragmentPipe { f, held }
    }

    /// Multiplies the held k, then holds `loaded` (whose loads were issued first, so they
    /// overlap the FFMAs).
    #[inline(always)]
    fn multiply_then_hold(&mut self, loaded: KFragment<TM, TN>, acc: &mut [[f32; TN]; TM]) {
        self.held.multiply(acc);
        self.held = loaded;
    }
}

impl<const TM: usize, const TN: usize, const WM: u32, const WN: u32>
    StageMma<BlockTile<TM, TN, WM, WN>> for FragmentPipe<TM, TN>
{
    type Acc = [[f32; TN]; TM];

    #[inline(always)]
    unsafe fn multiply_all_but_last(
        &mut self,
        block: &BlockTile<TM, TN, WM, WN>,
        s: u32,
        acc: &mut Self::Acc,
    ) {
        for kk in 1..BK {
            // SAFETY: forwarded.
            let loaded = unsafe { block.load_k(s, self.f, kk) };
            self.multiply_then_hold(loaded, acc);
        }
    }

    #[inline(always)]
    unsafe fn advance(&mut self, block: &BlockTile<TM, TN, WM, WN>, s: u32, acc: &mut Self::Acc) {
        // SAFETY: forwarded.
        let loaded = unsafe { block.load_k(s, self.f, 0) };
        self.multiply_then_hold(loaded, acc);
    }

    #[inline(always)]
    fn finish(self, _: &BlockTile<TM, TN, WM, WN>, acc: &mut Self::Acc) {
        self.held.multiply(acc);
    }
}

/// Writes this thread's fragment of C, clipped to the matrix.
///
/// # Safety
/// The launch contract; with `ALIGN = 16`, `n` is a multiple of 4.
#[inline(always)]
unsafe fn store_fragment<const TM: usize, const TN: usize, const ALIGN: u32>(
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
unsafe fn store_quad<const ALIGN: u32>(p: &Problem, row: u32, col: u32, v: [f32; 4]) {
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

/// One block's view of a GEMM with the tile `TM x TN` per thread, `WM x WN` warps: its part of
/// the problem and the shared-memory layout of its style, and the operations every mainloop
/// is made of.
struct BlockTile<const TM: usize, const TN: usize, const WM: u32, const WN: u32> {
    p: Problem,
    layout: StagedLayout,
    a_layout: ALayout,
    /// The first of this group's stages in the layout (0 but for k groups: group `g` owns
    /// stages `g STAGES ..`).
    first_stage: u32,
}

impl<const TM: usize, const TN: usize, const WM: u32, const WN: u32> BlockTile<TM, TN, WM, WN> {
    /// This block's tile of the problem, laid out for `style`.
    #[inline(always)]
    fn new(
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
    fn for_group(
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
    fn fragment(&self, thread: u32) -> Fragment {
        Fragment::of::<TM, TN, WN>(thread, self.a_layout)
    }

    /// The threads that compute, as a copy group (a compute thread's rank is its `%tid.x`).
    #[inline(always)]
    fn compute_group(thread: u32) -> Threads {
        Threads::new(thread, Geometry::<TM, TN, WM, WN>::COMPUTE_THREADS)
    }

    /// Stage `s`'s A and B tiles.
    #[inline(always)]
    fn stage(&self, s: u32) -> (Shared<f32>, Shared<f32>) {
        let a_bytes = Geometry::<TM, TN, WM, WN>::TILE.a_tile_bytes(self.a_layout);
        stage_tiles(self.layout, a_bytes, self.first_stage + s)
    }

    /// The pipeline's mbarriers, after the stages.
    #[inline(always)]
    fn barriers<const STAGES: usize>(&self) -> Shared<PipelineSharedState<STAGES>> {
        self.layout.barriers()
    }

    /// Copies k-tile `t` into stage `s`, split over `group`, bound to `completion`.
    ///
    /// # Safety
    /// As [`copy_k_tile`]: `t` is a k-tile, stage `s` is free, every thread of `group` calls.
    #[inline(always)]
    unsafe fn copy<G: Group, C: Completion, const ALIGN: u32>(
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
    unsafe fn copy_a_k_major<G: Group, C: Completion>(
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
    unsafe fn multiply(&self, s: u32, f: Fragment, acc: &mut [[f32; TN]; TM]) {
        // SAFETY: forwarded.
        unsafe { multiply_stage::<TM, TN>(self.stage(s), Geometry::<TM, TN, WM, WN>::BN, f, acc) }
    }

    /// Fragment `f`'s operands at k `kk` of stage `s` (A k-major).
    ///
    /// # Safety
    /// As [`multiply_stage`]; the tile stores A k-major.
    #[inline(always)]
    unsafe fn load_k(&self, s: u32, f: Fragment, kk: u32) -> KFragment<TM, TN> {
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
    unsafe fn store<const ALIGN: u32>(&self, f: Fragment, acc: &[[f32; TN]; TM]) {
        // SAFETY: forwarded.
        unsafe { store_fragment::<TM, TN, ALIGN>(&self.p, f, acc) }
    }
}

/// [`GemmStyle::ThreadPipeline`]: prefetch `STAGES - 1` k-tiles; per k-tile refill the stage
/// the last barrier retired with the k-tile `STAGES - 1` ahead, multiply all but the last k
/// (fragments one k ahead, [`FragmentPipe`]), wait for the next k-tile
/// (`cp.async.wait_group STAGES - 2`) and `barrier.sync` (everyone's copies visible, and
/// everyone's reads of this stage issued), load its first k, multiply the last.
///
/// # Safety
/// The GEMM launch contract (module docs).
pub unsafe fn thread_pipeline<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
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
    let style = GemmStyle::ThreadPipeline {
        stages: STAGES as u32,
    };
    // SAFETY: forwarded launch contract.
    unsafe {
        thread_pipeline_mainloop::<TM, TN, WM, WN, STAGES, 1, 1, ALIGN, INTERIOR>(
            style, a, b, c, m, n, k,
        )
    }
}

/// [`GemmStyle::SplitK`] (sm_90): each of the block's `K_GROUPS` groups of compute warps runs
/// the thread pipeline's mainloop over its share of the k-tiles, through its own stages and
/// its own barrier; then the groups' partial tiles are summed through shared memory and the
/// cluster's `SPLIT` partial tiles through distributed shared memory ([`reduce_split_k`]).
///
/// # Safety
/// The GEMM launch contract (module docs), in clusters of `SPLIT` blocks along x (the grid
/// [`GemmKernel::grid`](super::GemmKernel::grid) gives), with
/// [`GemmKernel::threads`](super::GemmKernel::threads) threads and
/// [`GemmKernel::shared_bytes`](super::GemmKernel::shared_bytes) of dynamic shared memory.
#[cfg(target_feature = "sm_90")]
pub unsafe fn split_k<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
    const SPLIT: u32,
    const K_GROUPS: u32,
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
    const {
        assert!(
            SPLIT * K_GROUPS >= 2 && K_GROUPS <= 15,
            "K split at least two ways, and a named barrier per k group"
        )
    };
    let style = GemmStyle::SplitK {
        stages: STAGES as u32,
        split: SPLIT,
        k_groups: K_GROUPS,
    };
    // SAFETY: forwarded launch contract.
    unsafe {
        thread_pipeline_mainloop::<TM, TN, WM, WN, STAGES, SPLIT, K_GROUPS, ALIGN, INTERIOR>(
            style, a, b, c, m, n, k,
        )
    }
}

/// The thread pipeline's body for `style` (its stages, and K split `SPLIT` ways over a
/// cluster and `K_GROUPS` ways over the block's warps: 1 and 1 for the plain thread pipeline,
/// whose code the split terms leave unchanged — the PTX fingerprints say so).
///
/// # Safety
/// The launch contract of [`thread_pipeline`] (`SPLIT = K_GROUPS = 1`) or [`split_k`].
#[inline(always)]
unsafe fn thread_pipeline_mainloop<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
    const SPLIT: u32,
    const K_GROUPS: u32,
    const ALIGN: u32,
    const INTERIOR: bool,
>(
    style: GemmStyle,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    const {
        assert!(
            (SPLIT == 1 && K_GROUPS == 1) || cfg!(target_feature = "sm_90"),
            "split K is the sm_90 style"
        )
    };
    let group_threads = Geometry::<TM, TN, WM, WN>::COMPUTE_THREADS;
    // One group: the block (its thread index read after its tile, so the whole-K kernels keep
    // their code). A group is the same across a warp; saying so (a shuffle from lane 0) lets
    // ptxas keep what derives from it — the share of K, the stages' addresses — in uniform
    // registers.
    let group_index = if K_GROUPS == 1 {
        0
    } else {
        ptx::shfl_sync_idx(ptx::thread_idx_x() / group_threads, 0)
    };
    let block =
        BlockTile::<TM, TN, WM, WN>::for_group(style, (a, b, c), (m, n, k), INTERIOR, group_index);
    let thread = ptx::thread_idx_x();
    let group_thread = if K_GROUPS == 1 {
        thread
    } else {
        thread % group_threads
    };
    let tiles = block.p.k_tiles();
    let group = BlockTile::<TM, TN, WM, WN>::compute_group(group_thread);
    let f = block.fragment(group_thread);
    // The group's barrier: the block's, a warp's, or the group's named one.
    let group_barrier = || {
        if K_GROUPS == 1 {
            ptx::barrier_sync();
        } else if group_threads == 32 {
            ptx::syncwarp();
        } else {
            ptx::barrier_sync_named(1 + group_index, group_threads);
        }
    };

    let mut pipeline = ThreadPipeline::<STAGES>::new();
    let (mut producer, mut consumer) = pipeline.split();
    let mut produce = |t: u32| {
        let stage = producer.producer_acquire();
        if t < tiles {
            // SAFETY: the stage is free: fresh, or every read of it was issued before a
            // barrier every thread of the group has passed (see the loop).
            unsafe { block.copy::<_, _, ALIGN>(&group, t, stage.index(), &stage) };
        }
        stage.producer_commit();
    };
    // A share of K can be empty (more shares than k-tiles): its partial is zeros.
    let multiplies = (SPLIT == 1 && K_GROUPS == 1) || tiles > 0;
    if multiplies {
        for t in 0..STAGES as u32 - 1 {
            produce(t);
        }
    }
    let mut acc = [[0.0f32; TN]; TM];
    if multiplies {
        // SAFETY: every stage is read after its wait and the group barrier (after_wait);
        // `tiles >= 1` stages are committed (produce commits a stage per k-tile and beyond).
        unsafe {
            gpu::consume_k_tiles! {
                consumer: consumer,
                tiles: tiles,
                context: &block,
                start(s): FragmentPipe::start(&block, f, s),
                acc: &mut acc,
                // Everyone's copies of the stage are visible, and everyone's reads of the one
                // before it are issued.
                after_wait: { group_barrier(); },
                // The stage of k-tile t - 1, all of whose reads were issued before the barrier
                // that made k-tile t visible.
                before_multiply(t): { produce(t + STAGES as u32 - 1); },
                after_release(_t): {},
            }
        }
    }
    if K_GROUPS > 1 && group_threads > 32 {
        // A short share meets its named barrier as often as a full one. Not for the hardware
        // (each group has its own barrier), for racecheck: it reported the groups' partial
        // tiles, written and read between two block barriers, as racing whenever the groups
        // had passed their own barriers a different number of times (results.md).
        for _ in tiles..block.p.k_tiles_per_share() {
            group_barrier();
        }
    }
    if SPLIT == 1 && K_GROUPS == 1 {
        // SAFETY: launch contract.
        unsafe { block.store::<ALIGN>(f, &acc) };
    } else {
        #[cfg(target_feature = "sm_90")]
        // SAFETY: launch contract (split_k's); every copy of this group landed (each k-tile
        // was waited for before its multiply), so its stages are free once the block is past
        // a barrier.
        unsafe {
            reduce_split_k::<TM, TN, WM, WN, SPLIT, K_GROUPS, ALIGN>(
                &block,
                style,
                f,
                (thread, group_index),
                &acc,
            )
        };
    }
}

/// Writes a thread's fragment `f` of a partial tile into `partial` (`bm x bn` floats,
/// row-major, as quads).
///
/// # Safety
/// `partial` is a `bm x bn` tile in shared memory that no one else touches meanwhile.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
unsafe fn write_partial<const TM: usize, const TN: usize>(
    partial: Shared<[f32; 4]>,
    quads_per_row: u32,
    f: Fragment,
    acc: &[[f32; TN]; TM],
) {
    for (i, out) in acc.iter().enumerate() {
        let row = f.row_of(i as u32);
        for g in 0..TN / 4 {
            let col = f.col + 32 * g as u32;
            let v = [out[4 * g], out[4 * g + 1], out[4 * g + 2], out[4 * g + 3]];
            // SAFETY: this thread's quad of the tile (caller).
            unsafe { partial.add(row * quads_per_row + col / 4).write(v) };
        }
    }
}

/// Writes quad `quad` of row `row` of this block's tile of C (both counted in the tile), if
/// the row is inside C; [`store_quad`] clips the columns.
///
/// # Safety
/// The launch contract.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
unsafe fn store_tile_quad<const ALIGN: u32>(p: &Problem, row: u32, quad: u32, v: [f32; 4]) {
    if p.interior || p.m0 + row < p.m {
        // SAFETY: launch contract; the row is inside C.
        unsafe { store_quad::<ALIGN>(p, p.m0 + row, p.n0 + 4 * quad, v) };
    }
}

/// `sum + v`, element by element (written out: an iterator over the arrays would put them in
/// local memory).
#[cfg(target_feature = "sm_90")]
#[inline(always)]
fn add_quad(sum: [f32; 4], v: [f32; 4]) -> [f32; 4] {
    [sum[0] + v[0], sum[1] + v[1], sum[2] + v[2], sum[3] + v[3]]
}

/// The four floats whose bits a DSMEM load returned.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
fn quad_from_bits(v: [u32; 4]) -> [f32; 4] {
    [
        f32::from_bits(v[0]),
        f32::from_bits(v[1]),
        f32::from_bits(v[2]),
        f32::from_bits(v[3]),
    ]
}

/// The split-K epilogue. With k groups, every group writes its partial tile (`bm x bn` floats,
/// row-major) over the block's stages, and after a block barrier the block's threads sum the
/// groups' partials quad by quad, in group order, into the block's partial tile (or, with no
/// cluster, straight to C). Each block of the cluster then holds its partial tile in its own
/// shared memory ([`partial_offset`](super::partial_offset)); after a cluster barrier, block
/// `r` sums rows `r bm / SPLIT ..` of every block's partial (DSMEM loads, in rank order, so
/// the result does not depend on timing) and stores them; a last cluster barrier keeps every
/// block's partial alive until all have read it.
///
/// # Safety
/// [`split_k`]'s launch contract; every thread of the block calls it, once every copy it
/// issued landed.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
unsafe fn reduce_split_k<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const SPLIT: u32,
    const K_GROUPS: u32,
    const ALIGN: u32,
>(
    block: &BlockTile<TM, TN, WM, WN>,
    style: GemmStyle,
    f: Fragment,
    (thread, group_index): (u32, u32),
    acc: &[[f32; TN]; TM],
) {
    type G<const TM: usize, const TN: usize, const WM: u32, const WN: u32> =
        Geometry<TM, TN, WM, WN>;
    let (bm, bn) = (G::<TM, TN, WM, WN>::BM, G::<TM, TN, WM, WN>::BN);
    const { assert!(G::<TM, TN, WM, WN>::BM.is_multiple_of(SPLIT)) };
    let threads = G::<TM, TN, WM, WN>::COMPUTE_THREADS * K_GROUPS;
    let quads_per_row = bn / 4;
    let tile_quads = bm * quads_per_row;
    let partial = gpu::shared::dynamic_shared()
        .add(super::partial_offset(style, G::<TM, TN, WM, WN>::TILE))
        .cast::<[f32; 4]>();
    let p = &block.p;
    if K_GROUPS == 1 {
        // SAFETY: the partial tile's region (GemmKernel::shared_bytes), this thread's quads of
        // it; no one reads it before the cluster barrier below.
        unsafe { write_partial(partial, quads_per_row, f, acc) };
    } else {
        let groups = gpu::shared::dynamic_shared().cast::<[f32; 4]>();
        // Every group is done with its stages.
        ptx::barrier_sync();
        // SAFETY: group g's tile of the region before the partial (partial_offset), over the
        // stages no one reads any more; read only after the barrier below.
        unsafe { write_partial(groups.add(group_index * tile_quads), quads_per_row, f, acc) };
        ptx::barrier_sync();
        let mut q = thread;
        while q < tile_quads {
            let mut sum = [0.0f32; 4];
            for g in 0..K_GROUPS {
                // SAFETY: written before the barrier above.
                let v = unsafe { groups.add(g * tile_quads + q).read() };
                sum = add_quad(sum, v);
            }
            if SPLIT == 1 {
                // SAFETY: launch contract.
                unsafe { store_tile_quad::<ALIGN>(p, q / quads_per_row, q % quads_per_row, sum) };
            } else {
                // SAFETY: the partial tile's region, past the groups' tiles; this thread's
                // quad; read by others only after the cluster barrier below.
                unsafe { partial.add(q).write(sum) };
            }
            q += threads;
        }
        if SPLIT == 1 {
            return;
        }
    }
    let cluster = gpu::cluster::Cluster::this();
    // Every block's partial is written and visible.
    // SAFETY: every thread of the cluster calls it, warp by warp.
    unsafe { cluster.sync() };
    let rows = bm / SPLIT;
    let first_row = cluster.rank() * rows;
    let mut q = thread;
    while q < rows * quads_per_row {
        let (row, quad) = (first_row + q / quads_per_row, q % quads_per_row);
        let at = row * quads_per_row + quad;
        let mut sum = [0.0f32; 4];
        for j in 0..SPLIT {
            let remote = cluster.remote(partial.cast::<[u32; 4]>(), j);
            // SAFETY: block j's partial, written before the barrier above and read-only until
            // the one below.
            let v = unsafe { remote.add(at).read() };
            sum = add_quad(sum, quad_from_bits(v));
        }
        // SAFETY: launch contract.
        unsafe { store_tile_quad::<ALIGN>(p, row, quad, sum) };
        q += threads;
    }
    // No block exits while another may still read its partial.
    // SAFETY: as above.
    unsafe { cluster.sync() };
}

/// [`GemmStyle::BlockPipeline`]: as the thread pipeline, with stages completing mbarrier
/// phases (`cp.async.mbarrier.arrive.noinc`) instead of async-groups and a block barrier;
/// a thread refills after its multiply, waiting (on `empty`) only for the stage everyone
/// released a k-tile earlier.
///
/// # Safety
/// The GEMM launch contract (module docs).
pub unsafe fn block_pipeline<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
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
    const { assert!(STAGES >= 2) };
    let style = GemmStyle::BlockPipeline {
        stages: STAGES as u32,
    };
    let block = BlockTile::<TM, TN, WM, WN>::new(style, (a, b, c), (m, n, k), INTERIOR);
    let tiles = block.p.k_tiles();
    let thread = ptx::thread_idx_x();
    let group = BlockTile::<TM, TN, WM, WN>::compute_group(thread);
    let f = block.fragment(thread);
    // SAFETY: every thread calls it; the layout reserves the barriers after the stages.
    let mut pipeline =
        unsafe { BlockPipeline::<STAGES>::init_all_threads(block.barriers(), group.size()) };
    let (mut producer, mut consumer) = pipeline.split();
    let mut produce = |t: u32| {
        let stage = producer.producer_acquire();
        if t < tiles {
            // SAFETY: the stage is free (acquired).
            unsafe { block.copy::<_, _, ALIGN>(&group, t, stage.index(), &stage) };
        }
        stage.producer_commit();
    };
    for t in 0..STAGES as u32 - 1 {
        produce(t);
    }
    let mut acc = [[0.0f32; TN]; TM];
    // SAFETY: a stage's phase completes when every thread's copies into it landed;
    // `tiles >= 1` stages are committed.
    unsafe {
        gpu::consume_k_tiles! {
            consumer: consumer,
            tiles: tiles,
            context: &block,
            start(s): FragmentPipe::start(&block, f, s),
            acc: &mut acc,
            after_wait: {},
            before_multiply(_t): {},
            // Refill the stage everyone released a k-tile earlier.
            after_release(t): { produce(t + STAGES as u32 - 1); },
        }
    }
    // SAFETY: launch contract.
    unsafe { block.store::<ALIGN>(f, &acc) };
}

/// [`GemmStyle::WarpSpecialized`]: the `WM x WN` compute warps only wait, multiply and
/// release; the `PRODUCER_WARPS` warps after them only acquire, copy and commit, so no
/// compute warp ever issues a copy.
///
/// # Safety
/// The GEMM launch contract (module docs).
pub unsafe fn warp_specialized<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
    const PRODUCER_WARPS: u32,
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
    let style = GemmStyle::WarpSpecialized {
        stages: STAGES as u32,
        producer_warps: PRODUCER_WARPS,
    };
    let block = BlockTile::<TM, TN, WM, WN>::new(style, (a, b, c), (m, n, k), INTERIOR);
    let tiles = block.p.k_tiles();
    let compute_threads = Geometry::<TM, TN, WM, WN>::COMPUTE_THREADS;
    // SAFETY: every thread calls it; the producer warps fill every stage, the compute
    // warps release every stage; the layout reserves the barriers.
    let mut pipeline = unsafe {
        BlockPipeline::<STAGES>::init_partitioned(
            block.barriers(),
            32 * PRODUCER_WARPS,
            compute_threads,
        )
    };
    let (mut producer, mut consumer) = pipeline.split();
    let thread = ptx::thread_idx_x();
    let warp = Warp::this_warp().index_in_block();
    if warp >= WM * WN {
        let group = Threads::new(thread - compute_threads, 32 * PRODUCER_WARPS);
        for t in 0..tiles {
            let stage = producer.producer_acquire();
            // SAFETY: the stage is free (acquired).
            unsafe { block.copy::<_, _, ALIGN>(&group, t, stage.index(), &stage) };
            stage.producer_commit();
        }
        // No copy may outlive the thread that issued it.
        ptx::wait_all();
    } else {
        let f = block.fragment(thread);
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY: a stage's phase completes when the producers' copies into it landed; the
        // producer warps commit `tiles >= 1` stages.
        unsafe {
            gpu::consume_k_tiles! {
                consumer: consumer,
                tiles: tiles,
                context: &block,
            start(s): FragmentPipe::start(&block, f, s),
                acc: &mut acc,
                after_wait: {},
                before_multiply(_t): {},
                after_release(_t): {},
            }
        }
        // SAFETY: launch contract.
        unsafe { block.store::<ALIGN>(f, &acc) };
    }
}

/// [`GemmStyle::Tma`]: one elected thread of warp 0 loads each k-tile with two tensor copies
/// (A's `bm x BK` box and B's `BK x bn` box, zero-filled past the matrix by the copy engine)
/// into a `BulkPipeline` stage, whose `full` phase completes on their bytes; every thread
/// waits for the stage, multiplies, and releases it; the elected thread then refills the
/// stage released a k-tile earlier, and `__syncwarp` reconverges its warp. No block-wide
/// barrier, no copy instruction in the other threads.
///
/// # Safety
/// The GEMM launch contract (module docs) with `k % 4 == 0`, `n % 4 == 0`, and `a`, `b` tensor
/// maps of A and B with the family's boxes (`GemmKernel::a_box`, `GemmKernel::b_box`).
#[cfg(target_feature = "sm_90")]
pub unsafe fn tma<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
>(
    a: TensorMapRef,
    b: TensorMapRef,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    type Geo<const TM: usize, const TN: usize, const WM: u32, const WN: u32> =
        Geometry<TM, TN, WM, WN>;
    let style = GemmStyle::Tma {
        stages: STAGES as u32,
    };
    let no_pointer = core::ptr::null();
    let block =
        BlockTile::<TM, TN, WM, WN>::new(style, (no_pointer, no_pointer, c), (m, n, k), false);
    let (m0, n0) = (block.p.m0 as i32, block.p.n0 as i32);
    let tiles = block.p.k_tiles();
    let thread = ptx::thread_idx_x();
    let f = block.fragment(thread);
    let a_bytes = AlignedSize::<16>::of(Geo::<TM, TN, WM, WN>::TILE.a_tile_bytes(ALayout::MMajor));
    let b_bytes = AlignedSize::<16>::of(Geo::<TM, TN, WM, WN>::TILE.b_tile_bytes());
    // SAFETY: every thread calls it; one thread produces, every compute thread consumes; the
    // layout reserves the barriers.
    let mut pipeline = unsafe {
        BulkPipeline::<STAGES>::init(block.barriers(), Geo::<TM, TN, WM, WN>::COMPUTE_THREADS)
    };
    let (mut producer, mut consumer) = pipeline.split();
    // All of warp 0 votes (converged here); one lane issues every copy.
    let producing = thread < 32 && ptx::elect_one();
    if producing {
        ptx::prefetch_tensormap(a);
        ptx::prefetch_tensormap(b);
    }
    let mut produce = |t: u32| {
        if !producing {
            return;
        }
        let stage = producer.producer_acquire();
        if t < tiles {
            let (a_dst, b_dst) = block.stage(stage.index());
            let k0 = (t * BK) as i32;
            // SAFETY: the stage is free (acquired); the maps describe A and B with these
            // boxes (launch contract); its full phase expects this thread's commit below.
            unsafe {
                memcpy_async_tensor(a_dst, a, [k0, m0], a_bytes, &stage);
                memcpy_async_tensor(b_dst, b, [n0, k0], b_bytes, &stage);
            }
        }
        stage.producer_commit();
    };
    for t in 0..STAGES as u32 - 1 {
        produce(t);
    }
    let mut acc = [[0.0f32; TN]; TM];
    for t in 0..tiles {
        let ready = consumer.consumer_wait();
        // SAFETY: the stage's phase completed: both boxes landed.
        unsafe { block.multiply(ready.index(), f, &mut acc) };
        ready.consumer_release();
        produce(t + STAGES as u32 - 1);
        // The elected lane rejoins its warp: left diverged, warp 0 would run the next
        // multiply twice (once for it, once for the other 31 lanes).
        ptx::syncwarp();
    }
    // SAFETY: launch contract (n % 4 == 0).
    unsafe { block.store::<16>(f, &acc) };
}

/// [`GemmStyle::TmaB`]: the block pipeline's loop, with B by the copy engine. Per k-tile one
/// elected thread of warp 0 expects B's box bytes on the stage's `full` barrier and issues its
/// tensor copy (zero-filled past the matrix), while every thread copies its share of A
/// k-major with transposing `cp.async` and commits (`cp.async.mbarrier.arrive.noinc`): the
/// phase completes when both have landed. The multiply is the `cp.async` styles' fragment
/// pipeline.
///
/// # Safety
/// The GEMM launch contract (module docs) with `n % 4 == 0`, `a` a pointer to A, and `b` a
/// tensor map of B with the family's `b_box`.
#[cfg(target_feature = "sm_90")]
pub unsafe fn tma_b<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
    const INTERIOR: bool,
>(
    a: *const f32,
    b: TensorMapRef,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    let style = GemmStyle::TmaB {
        stages: STAGES as u32,
    };
    let block =
        BlockTile::<TM, TN, WM, WN>::new(style, (a, core::ptr::null(), c), (m, n, k), INTERIOR);
    let (n0, tiles) = (block.p.n0 as i32, block.p.k_tiles());
    let thread = ptx::thread_idx_x();
    let group = BlockTile::<TM, TN, WM, WN>::compute_group(thread);
    let f = block.fragment(thread);
    let b_bytes = AlignedSize::<16>::of(Geometry::<TM, TN, WM, WN>::TILE.b_tile_bytes());
    // SAFETY: every thread calls it; every thread produces and consumes; the elected thread's
    // tensor copies complete on `full` too (fenced for the copy engine); the layout reserves
    // the barriers.
    let mut pipeline = unsafe {
        BlockPipeline::<STAGES, CpAsyncAndBulk>::init_all_threads_with_bulk(
            block.barriers(),
            group.size(),
        )
    };
    let (mut producer, mut consumer) = pipeline.split();
    // All of warp 0 votes (converged here); one lane issues every tensor copy.
    let producing = thread < 32 && ptx::elect_one();
    if producing {
        ptx::prefetch_tensormap(b);
    }
    let mut produce = |t: u32| {
        let stage = producer.producer_acquire();
        if t < tiles {
            if producing {
                let k0 = (t * BK) as i32;
                // SAFETY: the stage is free (acquired); the map describes B with this box
                // (launch contract); the bytes are expected before this thread's commit below.
                unsafe {
                    memcpy_async_tensor(block.stage(stage.index()).1, b, [n0, k0], b_bytes, &stage)
                };
            }
            // SAFETY: the stage is free (acquired); the commit below binds the copies.
            unsafe { block.copy_a_k_major(&group, t, stage.index(), &stage) };
        }
        stage.producer_commit();
    };
    for t in 0..STAGES as u32 - 1 {
        produce(t);
        ptx::syncwarp();
    }
    let mut acc = [[0.0f32; TN]; TM];
    // SAFETY: a stage's phase completes when every thread's copies and B's box landed;
    // `tiles >= 1` stages are committed.
    unsafe {
        gpu::consume_k_tiles! {
            consumer: consumer,
            tiles: tiles,
            context: &block,
            start(s): FragmentPipe::start(&block, f, s),
            acc: &mut acc,
            after_wait: {},
            before_multiply(_t): {},
            after_release(t): {
                produce(t + STAGES as u32 - 1);
                // The elected lane rejoins its warp before the next multiply.
                ptx::syncwarp();
            },
        }
    }
    // SAFETY: launch contract (n % 4 == 0).
    unsafe { block.store::<16>(f, &acc) };
}

/// Up to four floats of one copy chunk of a tile, loaded into registers: the part inside the
/// matrix, zeros for the rest (the synchronous twin of a zero-filling `cp.async`).
///
/// # Safety
/// As [`memcpy_async_tile`]'s source contract for `src`.
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

gpu::static_shared!(
    /// The reference kernel's A tile.
    fn reference_a() -> [f32; (REFERENCE_TILE * REFERENCE_TILE) as usize]
);
gpu::static_shared!(
    /// The reference kernel's B tile.
    fn reference_b() -> [f32; (REFERENCE_TILE * REFERENCE_TILE) as usize]
);

/// `C = A B` with f64 accumulation: thread `(tx, ty)` of a block of `REFERENCE_TILE^2`
/// threads computes `C[m0 + ty][n0 + tx]`, the block walking K in `REFERENCE_TILE` steps
/// through two shared tiles. Deliberately simple: it is what the fast kernels are checked
/// against.
///
/// # Safety
/// Grid `(ceil(n / 16), ceil(m / 16))` of 256-thread blocks; `a` holds `m * k` floats, `b`
/// `k * n`, `c` `m * n` doubles.
#[inline(always)]
pub(super) unsafe fn reference(a: *const f32, b: *const f32, c: *mut f64, m: u32, n: u32, k: u32) {
    let t = ptx::thread_idx_x();
    let (tx, ty) = (t % REFERENCE_TILE, t / REFERENCE_TILE);
    let row = ptx::block_idx_y() * REFERENCE_TILE + ty;
    let col = ptx::block_idx_x() * REFERENCE_TILE + tx;
    let (sa, sb) = (reference_a(), reference_b());
    let mut sum = 0.0f64;
    let mut k0 = 0;
    while k0 < k {
        // SAFETY: reads inside the matrices only; each thread writes its own slot.
        unsafe {
            let ak = k0 + tx;
            let a_value = if row < m && ak < k {
                a.add(row as usize * k as usize + ak as usize).read()
            } else {
                0.0
            };
            let bk = k0 + ty;
            let b_value = if bk < k && col < n {
                b.add(bk as usize * n as usize + col as usize).read()
            } else {
                0.0
            };
            sa.at(t).write(a_value);
            sb.at(t).write(b_value);
        }
        ptx::barrier_sync();
        for kk in 0..REFERENCE_TILE {
            // SAFETY: written before the barrier above.
            let (x, y) = unsafe {
                (
                    sa.at(ty * REFERENCE_TILE + kk).read(),
                    sb.at(kk * REFERENCE_TILE + tx).read(),
                )
            };
            sum += x as f64 * y as f64;
        }
        ptx::barrier_sync();
        k0 += REFERENCE_TILE;
    }
    if row < m && col < n {
        // SAFETY: inside C.
        unsafe { c.add(row as usize * n as usize + col as usize).write(sum) };
    }
}
