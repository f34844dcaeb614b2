//! One block's view of the GEMM: the copy of a k-tile into a stage, and [`BlockTile`], the
//! operations every mainloop is made of (over its [`Problem`] and [`Geometry`]).

#[cfg(target_feature = "sm_90")]
use super::fragment::multiply_stage;
use super::fragment::{Fragment, FragmentPipe, KFragment, store_fragment};
use super::problem::{Geometry, Problem};
use crate::gemm32::shapes::{ALayout, BK, GemmStyle};
use gpu::collective::StageMma;
use gpu::group::{Group, Threads};
use gpu::layout::{PipelineSharedState, RowPitch, StagedLayout};
use gpu::memcpy_async::completion::{Completion, Unbound};
use gpu::memcpy_async::cp_async::{memcpy_async_tile, memcpy_async_tile_transposed};
use gpu::shared::Shared;

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

impl<const TM: usize, const TN: usize> FragmentPipe<TM, TN> {
    /// Loads k 0 of stage `s` for fragment `f`.
    ///
    /// # Safety
    /// The stage's copies landed and are visible to this thread; nothing writes it until it
    /// is released.
    #[inline(always)]
    pub(super) unsafe fn start<const WM: u32, const WN: u32>(
        block: &BlockTile<TM, TN, WM, WN>,
        f: Fragment,
        s: u32,
    ) -> Self {
        // SAFETY: forwarded.
        let held = unsafe { block.load_k(s, f, 0) };
        FragmentPipe { f, held }
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
