//! The 16-bit GEMM on Hopper's tensor cores (sm_90a): `C = A B^T`, A `m x k` and B `n x k`
//! row-major (B as a `Linear` layer stores its weights), or `C = A B` with B `k x n` row-major
//! (`a @ b`: the `_b_kn` kernels, whose B tiles `wgmma` reads transposed), elements BF16 or
//! FP16 ([`gpu::wgmma::SixteenBit`]), FP32 accumulation, C `m x n` row-major; any
//! `M, N, K >= 1` (K a multiple of 8: the tensor maps' rows are 16-byte multiples).
//!
//! A block owns a [`BM`] x [`BN`] tile of C at a time and walks K in steps of [`BK`]: per
//! k-tile one elected thread loads A's `BM x 64` box and B's `BN x 64` box with two tensor
//! copies (128-byte swizzle, zero fill past the matrix) into a stage of a bulk pipeline, and
//! two consumer warpgroups each multiply their 64 rows of A by all of B
//! ([`gpu::collective::tensor_core`]: one `wgmma` k-tile in flight, the stage released when
//! the wait after the next one shows it read). Blocks are persistent: a grid of one block per
//! SM walks the tiles in a grouped order for L2 reuse ([`gpu::schedule::grouped_tile`]). The
//! epilogue rounds the accumulators and stores them, guarded at the edges: tensor stores for N
//! a multiple of 8, the warpgroup's own 16-byte stores for any N (the `_direct` entry points).
//!
//! Every kernel is one generic body (`kernels.rs`): who produces (a producer warpgroup giving
//! its registers away with `setmaxnreg`, or the first consumer thread), the consumers'
//! schedule (cooperative on a 128 x 256 tile, or ping-pong on 64 x 256 tiles of their own), B's
//! layout, A from shared memory or registers, the k-tiles in flight and the cluster of tiles
//! (TMA multicast) are its parameters; [`gemm_entry_points!`] declares each instantiation once,
//! for the device and the host. A `cp.async` form (all threads copying) is the study's
//! question on Hopper. [`Gemm16`] is the host API.

#[cfg(target_arch = "nvptx64")]
mod epilogue;
#[cfg(target_arch = "nvptx64")]
mod kernels;

#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

use gpu::layout::StagedLayout;
use gpu::tensor_map::TensorMap;
use gpu::wgmma::{Bf16, F16, SwizzledKMajor, SwizzledMnMajor};

/// Rows of A in a stage at most (the shared 128 x 256 tile).
pub const BM: u32 = 128;
/// Columns of C per block tile (one m64n256 `wgmma` per consumer).
pub const BN: u32 = 256;
/// K per pipeline stage: one 128-byte swizzle row of 16-bit elements.
pub const BK: u32 = 64;
/// Tile rows per group of the grouped tile order.
pub const GROUP_M: u32 = 16;

/// A stage's A tile (the first 64 rows of it for the ping-pong geometry, whose descriptors
/// are the same).
pub type ATile = SwizzledKMajor<BM>;
/// A stage's B tile, from B `n x k` (K-major).
pub type BTile = SwizzledKMajor<BN>;
/// A stage's B tile, from B `k x n` row-major (MN-major: four 64 x 64 boxes, read transposed).
pub type BKnTile = SwizzledMnMajor<BN>;
/// One of the four 64 x 64 boxes a consumer warpgroup's 64 x 256 part of C is staged in for
/// the tensor store (swizzled as the loads are, so the epilogue's writes miss no bank).
pub type CBox = SwizzledKMajor<64>;

/// A style's block geometry: rows of C per tile (the tile is `tile_m x BN`), pipeline depth,
/// and the dynamic shared memory they make — the stages (A's tile, then B's), their mbarriers,
/// then the C staging (two consumer warpgroups' 64 x 256 BF16) at the next 1 KiB boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Rows of C per tile: 128 (two consumer warpgroups share it) or 64 (one warpgroup's).
    pub tile_m: u32,
    /// Pipeline depth.
    pub stages: u32,
}

impl Geometry {
    /// A 128 x 256 tile shared by two consumer warpgroups; the 64 KiB C staging leaves room for
    /// three 48 KiB stages in the 227 KiB a block may have.
    pub const SHARED_TILE: Geometry = Geometry {
        tile_m: 128,
        stages: 3,
    };
    /// A 64 x 256 tile per consumer warpgroup (ping-pong): 40 KiB stages, four of them.
    pub const TILE_PER_WARPGROUP: Geometry = Geometry {
        tile_m: 64,
        stages: 4,
    };

    /// Bytes of a stage's A tile (`tile_m` rows of 64 16-bit elements).
    pub const fn a_tile_bytes(self) -> u32 {
        self.tile_m * 128
    }

    /// The tensor map box of A: its tile type's (`SwizzledKMajor<tile_m>`), `[64, tile_m]`.
    pub const fn a_box(self) -> [u32; 2] {
        match self.tile_m {
            64 => SwizzledKMajor::<64>::BOX,
            _ => ATile::BOX,
        }
    }

    const fn stage_layout(self) -> StagedLayout {
        StagedLayout::new(self.a_tile_bytes() + BTile::BYTES, self.stages, true)
    }

    /// Where the ping-pong order's two mbarriers are: right after the pipeline's.
    pub const fn order_offset(self) -> u32 {
        self.stage_layout().bytes
    }

    /// Where the C staging starts: the first 1 KiB boundary after the mbarriers (the
    /// pipeline's and the ping-pong order's).
    pub const fn staging_offset(self) -> u32 {
        (self.order_offset() + 2 * gpu::layout::Mbarrier::BYTES).next_multiple_of(1024)
    }

    /// The dynamic shared memory.
    pub const fn layout(self) -> StagedLayout {
        StagedLayout {
            bytes: self.staging_offset() + C_STAGING_BYTES,
            ..self.stage_layout()
        }
    }

    /// Tiles of an `m x n` C: `(rows, columns)`.
    pub const fn tiles(self, m: u32, n: u32) -> (u32, u32) {
        (m.div_ceil(self.tile_m), n.div_ceil(BN))
    }
}

/// Bytes between rows of the direct-store staging: 256 BF16 plus up to 7 of shift (each row
/// staged where its 16-byte chunks of C fall), rounded to 16 bytes — 528, so that eight rows'
/// same word fall in eight different bank groups.
pub const DIRECT_ROW_BYTES: u32 = (2 * (BN + 7)).next_multiple_of(16);

/// One consumer warpgroup's C staging: four swizzled [`CBox`]es (tensor store) or 64 shifted
/// rows of [`DIRECT_ROW_BYTES`] (direct store), whichever is larger, in whole KiB.
pub const WARPGROUP_STAGING_BYTES: u32 = {
    let boxes = 4 * CBox::BYTES;
    let rows = 64 * DIRECT_ROW_BYTES;
    (if boxes > rows { boxes } else { rows }).next_multiple_of(1024)
};

/// The C staging: two consumer warpgroups'.
pub const C_STAGING_BYTES: u32 = 2 * WARPGROUP_STAGING_BYTES;

/// The parameters of the direct-store kernels: tensor maps of A (`k x m`, box
/// `Geometry::a_box()`) and B (`k x n`, box [`BTile::BOX`]; `n x k`, box [`BKnTile::BOX`], for
/// the `_b_kn` kernels), 128-byte swizzle, zero fill; C; m, n, k.
pub type GemmParams<E> = (TensorMap, TensorMap, *mut E, u32, u32, u32);

/// [`GemmParams`] of a BF16 family.
pub type Bf16GemmParams = GemmParams<Bf16>;

/// [`GemmParams`] of an FP16 family.
pub type F16GemmParams = GemmParams<F16>;

/// The parameters of the tensor-store kernels, of either element: as [`GemmParams`] with C's
/// tensor map (`n x m`, box [`CBox::BOX`], 128-byte swizzle) in place of its pointer.
pub type GemmStoreParams = (TensorMap, TensorMap, TensorMap, u32, u32, u32);

/// The parameters of the `cp_async` direct-store kernels: A (`m x k`) and B (`n x k`),
/// row-major, `k` a multiple of 8; C; m, n, k.
pub type Bf16CpAsyncParams = (*const Bf16, *const Bf16, *mut Bf16, u32, u32, u32);

/// The parameters of the `cp_async` tensor-store kernels: as [`Bf16CpAsyncParams`] with C's
/// tensor map in place of its pointer.
pub type Bf16CpAsyncStoreParams = (*const Bf16, *const Bf16, TensorMap, u32, u32, u32);

/// How B is laid out in global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BLayout {
    /// `n x k` row-major: `C = A B^T` (a `Linear` layer's weights), B K-major in the tile.
    NK,
    /// `k x n` row-major: `C = A B` (`a @ b`), B MN-major in the tile (`wgmma` transposes it).
    KN,
}

/// How the blocks of a thread block cluster share a kernel's operand tiles: `m x n` blocks
/// (rank `rank_m * n + rank_n`, along x) take an `m x n` patch of C's tiles together; those
/// on a tile row share A's tile and those on a tile column B's, each copying its slice (A:
/// `tile_m / n` rows, B: `BN / m`) to all of them with one multicast tensor copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileCluster {
    /// Blocks along M (sharing B's tile).
    pub m: u32,
    /// Blocks along N (sharing A's tile).
    pub n: u32,
}

impl TileCluster {
    /// One block, no cluster.
    pub const NONE: TileCluster = TileCluster { m: 1, n: 1 };

    /// Blocks per cluster.
    pub const fn blocks(self) -> u32 {
        self.m * self.n
    }

    /// The tensor map box of A: this block's slice of a stage's A tile, `[64, tile_m / n]`.
    pub const fn a_box(self, g: Geometry) -> [u32; 2] {
        [BK, g.tile_m / self.n]
    }

    /// The tensor map box of B (`n x k`): this block's slice of a stage's B tile,
    /// `[64, BN / m]`.
    pub const fn b_box(self) -> [u32; 2] {
        [BK, BN / self.m]
    }

    /// Clusters of `m x n` tiles over an `m x n` C (tile counts rounded up).
    pub const fn cluster_tiles(self, g: Geometry, m: u32, n: u32) -> u32 {
        let (tiles_m, tiles_n) = g.tiles(m, n);
        tiles_m.div_ceil(self.m) * tiles_n.div_ceil(self.n)
    }
}

/// Declares one family's two entry points: element type, threads, who produces, the
/// consumers' schedule, B's layout, where A is multiplied from, the k-tiles of `wgmma` in
/// flight, the cluster of tiles.
macro_rules! gemm_entry_points {
    ($($style:literal $name:ident, $direct:ident: $e:ident, $threads:literal, $roles:ident, $schedule:ident, $b:ident, $a:ident, in flight $k:literal, $cm:literal x $cn:literal $([cluster = $cluster:tt])?;)*) => {$(
        gpu::kernel! {
            #[doc = concat!($style, "; tensor-store epilogue (module docs).")]
            ///
            /// # Safety
            #[doc = concat!("1-D grid of any size, ", stringify!($threads), " threads, ")]
            /// the style's `Geometry::layout().bytes` of dynamic shared memory; `a` a tensor map
            /// of A (`k x m`, box `Geometry::a_box()`), `b` of B (`k x n`, box [`BTile::BOX`];
            /// for the `_b_kn` kernels `n x k`, box [`BKnTile::BOX`]), `c` of C (`n x m`, box
            /// [`CBox::BOX`]), all 128-byte swizzle (zero fill on loads); m, n, k >= 1.
            pub fn $name(a: TensorMap, b: TensorMap, c: TensorMap, m: u32, n: u32, k: u32)
                [max_threads = $threads]
                $([cluster = $cluster])?
                [device if target_feature = "sm_90a"]
            {
                use gpu::collective::tensor_core::$schedule;
                let a = gpu::tensor_map_param!(entry, 0, a);
                let b = gpu::tensor_map_param!(entry, 1, b);
                let c = gpu::tensor_map_param!(entry, 2, c);
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm::<$e, $schedule, kernels::$roles, kernels::$b, kernels::$a, _, $k, {
                        kernels::geometry::<$schedule>().stages as usize
                    }, $cm, $cn>(
                        a, b, epilogue::TensorStore(c), m, n, k,
                    )
                }
            }
        }

        gpu::kernel! {
            #[doc = concat!($style, "; direct-store epilogue (module docs).")]
            ///
            /// # Safety
            /// As the tensor-store kernel, with `c` holding `m * n` elements.
            pub fn $direct(a: TensorMap, b: TensorMap, c: *mut $e, m: u32, n: u32, k: u32)
                [max_threads = $threads]
                $([cluster = $cluster])?
                [device if target_feature = "sm_90a"]
            {
                use gpu::collective::tensor_core::$schedule;
                let a = gpu::tensor_map_param!(entry, 0, a);
                let b = gpu::tensor_map_param!(entry, 1, b);
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm::<$e, $schedule, kernels::$roles, kernels::$b, kernels::$a, _, $k, {
                        kernels::geometry::<$schedule>().stages as usize
                    }, $cm, $cn>(
                        a, b, epilogue::DirectStore(c), m, n, k,
                    )
                }
            }
        }
    )*};
}

gemm_entry_points! {
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups" bf16_gemm_ws_cooperative, bf16_gemm_ws_cooperative_direct: Bf16, 384, WarpSpecialized, Cooperative, BNk, ASmem, in flight 1, 1 x 1;
    "`C = A B` (B `k x n`), a producer warpgroup and two consumer warpgroups" bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct: Bf16, 384, WarpSpecialized, Cooperative, BKn, ASmem, in flight 1, 1 x 1;
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups, in 2 x 1 clusters sharing B's tile by multicast" bf16_gemm_ws_cooperative_2x1, bf16_gemm_ws_cooperative_2x1_direct: Bf16, 384, WarpSpecialized, Cooperative, BNk, ASmem, in flight 1, 2 x 1 [cluster = (2, 1, 1)];
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups, in 1 x 2 clusters sharing A's tile by multicast" bf16_gemm_ws_cooperative_1x2, bf16_gemm_ws_cooperative_1x2_direct: Bf16, 384, WarpSpecialized, Cooperative, BNk, ASmem, in flight 1, 1 x 2 [cluster = (2, 1, 1)];
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups multiplying A from registers" bf16_gemm_ws_cooperative_rs, bf16_gemm_ws_cooperative_rs_direct: Bf16, 384, WarpSpecialized, Cooperative, BNk, ARegs, in flight 0, 1 x 1;
    "`C = A B^T`, ping-pong consumer warpgroups" bf16_gemm_ws_pingpong, bf16_gemm_ws_pingpong_direct: Bf16, 384, WarpSpecialized, PingPong, BNk, ASmem, in flight 1, 1 x 1;
    "`C = A B^T`, ping-pong consumer warpgroups, in 2 x 1 clusters sharing B's tile by multicast" bf16_gemm_ws_pingpong_2x1, bf16_gemm_ws_pingpong_2x1_direct: Bf16, 384, WarpSpecialized, PingPong, BNk, ASmem, in flight 1, 2 x 1 [cluster = (2, 1, 1)];
    "`C = A B` (B `k x n`), ping-pong consumer warpgroups" bf16_gemm_ws_pingpong_b_kn, bf16_gemm_ws_pingpong_b_kn_direct: Bf16, 384, WarpSpecialized, PingPong, BKn, ASmem, in flight 1, 1 x 1;
    "`C = A B^T`, two warpgroups that compute, one thread also producing" bf16_gemm_multistage, bf16_gemm_multistage_direct: Bf16, 256, Multistage, Cooperative, BNk, ASmem, in flight 0, 1 x 1;
    "`C = A B` (B `k x n`), two warpgroups that compute, one thread also producing" bf16_gemm_multistage_b_kn, bf16_gemm_multistage_b_kn_direct: Bf16, 256, Multistage, Cooperative, BKn, ASmem, in flight 0, 1 x 1;
    "FP16: `C = A B^T`, a producer warpgroup and two consumer warpgroups" f16_gemm_ws_cooperative, f16_gemm_ws_cooperative_direct: F16, 384, WarpSpecialized, Cooperative, BNk, ASmem, in flight 1, 1 x 1;
    "FP16: `C = A B^T`, ping-pong consumer warpgroups" f16_gemm_ws_pingpong, f16_gemm_ws_pingpong_direct: F16, 384, WarpSpecialized, PingPong, BNk, ASmem, in flight 1, 1 x 1;
}

gpu::kernel! {
    /// `C = A B^T` fed by `cp.async` (style `cp_async`); tensor-store epilogue.
    ///
    /// # Safety
    /// 1-D grid of any size, 256 threads, `Geometry::SHARED_TILE.layout().bytes` of dynamic
    /// shared memory; `a` and `b` hold `m x k` and `n x k` BF16 row-major, 16-byte aligned,
    /// `k` a multiple of 8; `c` a tensor map of C (`n x m`, box [`CBox::BOX`], 128-byte
    /// swizzle); m, n, k >= 1.
    pub fn bf16_gemm_cp_async(a: *const Bf16, b: *const Bf16, c: TensorMap, m: u32, n: u32, k: u32)
        [max_threads = 256]
        [device if target_feature = "sm_90a"]
    {
        let c = gpu::tensor_map_param!(entry, 2, c);
        // SAFETY: forwarded launch contract.
        unsafe {
            kernels::gemm_cp_async::<Bf16, _, 0, { Geometry::SHARED_TILE.stages as usize }>(
                a, b, epilogue::TensorStore(c), m, n, k,
            )
        }
    }
}

gpu::kernel! {
    /// `C = A B^T` fed by `cp.async` (style `cp_async`); direct-store epilogue.
    ///
    /// # Safety
    /// As the tensor-store kernel, with `c` holding `m * n` BF16, 16-byte aligned.
    pub fn bf16_gemm_cp_async_direct(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32)
        [max_threads = 256]
        [device if target_feature = "sm_90a"]
    {
        // SAFETY: forwarded launch contract.
        unsafe {
            kernels::gemm_cp_async::<Bf16, _, 0, { Geometry::SHARED_TILE.stages as usize }>(
                a, b, epilogue::DirectStore(c), m, n, k,
            )
        }
    }
}
