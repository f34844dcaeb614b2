//! The type parameters of the 16-bit GEMM's one body (sm_90a): who produces ([`Roles`]), how
//! B is laid out ([`BLayoutKind`]), what a consumer warpgroup multiplies under each schedule
//! ([`ConsumerTile`]) and where its `wgmma` reads A ([`ReadA`]: the mainloop on
//! [`mma_k_tiles`] for A in shared memory or in registers), with the geometry each schedule
//! has and where a stage's tiles are.

#![cfg(target_feature = "sm_90a")]

use super::{BM, Geometry};
use gpu::collective::tensor_core::{Cooperative, PingPong, Schedule, mma_k_tiles};
use gpu::pipeline::GroupConsumer;
use gpu::ptx::{MatrixDescriptor, Shared};
use gpu::wgmma::{
    BOperand, SixteenBit, SwizzledKMajor, SwizzledMnMajor, WarpgroupMma, WarpgroupMmaRegs, Wgmma,
};

/// Who fills the stages.
pub(super) trait Roles {
    /// Warpgroup 0 produces (one thread) and gives its registers to the two consumer
    /// warpgroups 1 and 2; else warpgroups 0 and 1 consume and thread 0 also produces,
    /// `STAGES - 1` k-tiles ahead.
    const SPECIALIZED: bool;
}

/// A producer warpgroup beside the consumers.
pub(super) struct WarpSpecialized;
impl Roles for WarpSpecialized {
    const SPECIALIZED: bool = true;
}

/// The first consumer thread produces too.
pub(super) struct Multistage;
impl Roles for Multistage {
    const SPECIALIZED: bool = false;
}

/// How B is laid out in global memory, and so in a stage: the tile type (`TN` columns of C)
/// and how its copies and descriptor are made.
pub(super) trait BLayoutKind<E: SixteenBit> {
    /// The stage's B tile.
    type Tile: BOperand;
    /// `k x n` row-major (copied in 64-column boxes, read MN-major), else `n x k`.
    const KN: bool;
    /// Columns of C the tile feeds.
    const TILE_N: u32;
    /// The descriptor of the stage's B tile at `base`.
    ///
    /// # Safety
    /// As the tile type's `descriptor`.
    unsafe fn descriptor(base: Shared<u8>) -> MatrixDescriptor;
}

/// B `n x k` (K-major), `TN` rows of it per tile.
pub(super) struct BNk<const TN: u32>;
/// B `k x n` (MN-major), `TN` columns of it per tile.
pub(super) struct BKn<const TN: u32>;

impl<E: SixteenBit, const TN: u32> BLayoutKind<E> for BNk<TN> {
    type Tile = SwizzledKMajor<TN, E>;
    const KN: bool = false;
    const TILE_N: u32 = TN;
    #[inline(always)]
    unsafe fn descriptor(base: Shared<u8>) -> MatrixDescriptor {
        // SAFETY: forwarded contract.
        unsafe { SwizzledKMajor::<TN, E>::descriptor(base, 0) }
    }
}

impl<E: SixteenBit, const TN: u32> BLayoutKind<E> for BKn<TN> {
    type Tile = SwizzledMnMajor<TN, E>;
    const KN: bool = true;
    const TILE_N: u32 = TN;
    #[inline(always)]
    unsafe fn descriptor(base: Shared<u8>) -> MatrixDescriptor {
        // SAFETY: forwarded contract.
        unsafe { SwizzledMnMajor::<TN, E>::descriptor(base) }
    }
}

/// What one consumer warpgroup multiplies per tile under a schedule: its rows of the stage's
/// A tile by all of B's tile (`Full`), or at C's right edge, at most `NARROW_N` wide, by
/// B's first 64 rows or columns (`Narrow`; see `NARROW_N` in the body). Cooperative: 64 rows (the other warpgroup has
/// the other 64) by 256; ping-pong: the whole 128 x 128 tile, two 64-row multiplies stacked
/// in one commit group.
pub(super) trait ConsumerTile: Schedule {
    /// The full-width multiply.
    type Full<E: SixteenBit>;
    /// The narrow edge's.
    type Narrow<E: SixteenBit>;
}

impl ConsumerTile for Cooperative {
    type Full<E: SixteenBit> = Wgmma<E, 256>;
    type Narrow<E: SixteenBit> = Wgmma<E, 64>;
}

impl ConsumerTile for PingPong {
    type Full<E: SixteenBit> = Wgmma<E, 128, 128>;
    type Narrow<E: SixteenBit> = Wgmma<E, 64, 128>;
}

/// Where the consumers' `wgmma` reads A.
pub(super) trait ASourceKind {
    /// From registers (`ldmatrix` from the stage, `wgmma`'s register form; no k-tile in
    /// flight beside it, see [`mma_k_tiles`]), else from shared memory.
    const REGISTERS: bool;
}

/// A from shared memory.
pub(super) struct ASmem;
impl ASourceKind for ASmem {
    const REGISTERS: bool = false;
}

/// A from registers.
pub(super) struct ARegs;
impl ASourceKind for ARegs {
    const REGISTERS: bool = true;
}

/// A warpgroup's mainloop over one tile with A read as `Self` says, multiply `M`, B stored as
/// `B`: [`mma_k_tiles`] over the tile's stages, A's rows `a_row..` of each stage's A tile
/// (all of the warpgroup's rows: `M` says how many).
pub(super) trait ReadA<M: WarpgroupMma<B>, B: BOperand>: ASourceKind {
    /// Runs it into `acc` with `K` k-tiles in flight (none for A from registers).
    ///
    /// # Safety
    /// As [`mma_k_tiles`]: the whole warpgroup, converged, at the same ring position; the
    /// next `k_tiles` fills of the ring are this tile's, each stage holding A's and B's
    /// tiles of geometry `g` once its wait returns.
    #[allow(clippy::too_many_arguments)]
    unsafe fn mainloop<
        E: SixteenBit,
        L: BLayoutKind<E, Tile = B>,
        C: GroupConsumer,
        const K: usize,
    >(
        consumer: &mut C,
        acc: &mut M::Acc,
        g: Geometry,
        k_tiles: u32,
        a_row: u32,
        wg_thread: u32,
        after_release: &mut impl FnMut(),
        issued: impl FnOnce(),
    );
}

impl<M: WarpgroupMma<B>, B: BOperand> ReadA<M, B> for ASmem {
    #[inline(always)]
    unsafe fn mainloop<
        E: SixteenBit,
        L: BLayoutKind<E, Tile = B>,
        C: GroupConsumer,
        const K: usize,
    >(
        consumer: &mut C,
        acc: &mut M::Acc,
        g: Geometry,
        k_tiles: u32,
        a_row: u32,
        wg_thread: u32,
        after_release: &mut impl FnMut(),
        issued: impl FnOnce(),
    ) {
        let operands = |s: u32| {
            let (a_tile, b_tile) = stage_tiles(g, s);
            // SAFETY: the stage's phase completed before `operands` runs on it (both boxes
            // landed); this warpgroup's rows of A and the first columns of B.
            unsafe {
                (
                    SwizzledKMajor::<BM, E>::descriptor(a_tile, a_row),
                    L::descriptor(b_tile),
                )
            }
        };
        // SAFETY: forwarded contract.
        unsafe {
            mma_k_tiles::<M, B, C, _, K>(
                consumer,
                acc,
                k_tiles,
                wg_thread,
                operands,
                after_release,
                issued,
            )
        };
    }
}

impl<M: WarpgroupMmaRegs<B>, B: BOperand> ReadA<M, B> for ARegs {
    #[inline(always)]
    unsafe fn mainloop<
        E: SixteenBit,
        L: BLayoutKind<E, Tile = B>,
        C: GroupConsumer,
        const K: usize,
    >(
        consumer: &mut C,
        acc: &mut M::Acc,
        g: Geometry,
        k_tiles: u32,
        a_row: u32,
        wg_thread: u32,
        after_release: &mut impl FnMut(),
        issued: impl FnOnce(),
    ) {
        let operands = |s: u32| {
            let (a_tile, b_tile) = stage_tiles(g, s);
            // SAFETY: as for A from shared memory; the whole warpgroup loads its fragment.
            unsafe {
                (
                    SwizzledKMajor::<BM, E>::load_a(a_tile, a_row, wg_thread),
                    L::descriptor(b_tile),
                )
            }
        };
        // SAFETY: forwarded contract; none in flight (the next fragment reuses the registers).
        unsafe {
            mma_k_tiles::<M, B, C, _, 0>(
                consumer,
                acc,
                k_tiles,
                wg_thread,
                operands,
                after_release,
                issued,
            )
        };
    }
}

/// Stage `s`'s A and B tiles.
#[inline(always)]
pub(super) fn stage_tiles(g: Geometry, s: u32) -> (Shared<u8>, Shared<u8>) {
    let a = g.shared().stages.at(s);
    (a, a.add(g.a_tile_bytes()))
}

/// The geometry of schedule `S`.
pub(super) const fn geometry<S: Schedule>() -> Geometry {
    if S::PINGPONG {
        Geometry::TILE_PER_WARPGROUP
    } else {
        Geometry::SHARED_TILE
    }
}
