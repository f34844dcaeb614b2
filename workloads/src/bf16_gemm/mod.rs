//! BF16 GEMM on Hopper's tensor cores: `C = A B^T`, A `m x k` and B `n x k` row-major BF16
//! (B as a `Linear` layer stores its weights), or `C = A B` with B `k x n` row-major (`a @ b`:
//! the `_b_kn` kernels, whose B tiles `wgmma` reads transposed), FP32 accumulation, C `m x n`
//! row-major BF16; any `M, N, K >= 1`.
//!
//! A block owns a [`BM`] x [`BN`] tile of C at a time and walks K in steps of [`BK`]: per
//! k-tile one elected thread loads A's `BM x 64` box and B's `BN x 64` box with two tensor
//! copies (128-byte swizzle, zero fill past the matrix) into a [`BulkPipeline`] stage, and two
//! consumer warpgroups each multiply their 64 rows of A by all of B with one fused
//! `wgmma` k-tile ([`gpu::wgmma`]: four m64n256k16 multiplies). Blocks are persistent: a grid
//! of one block per SM walks the tiles in a grouped order for L2 reuse
//! ([`gpu::schedule::grouped_tile`]). The epilogue rounds the accumulators to BF16 and stores
//! them, guarded at the edges.
//!
//! Styles ([`Bf16Style`]):
//! - `ws_cooperative`: a producer warpgroup (one thread issuing the copies, its registers
//!   given to the consumers with `setmaxnreg`) and two consumer warpgroups sharing the tile;
//! - `ws_pingpong`: the same three warpgroups, each consumer on its own 64 x 256 tiles, the
//!   two taking the block's tiles in turn from one ring of stages (the other's stages
//!   skipped), so that one's epilogue runs while the other multiplies;
//! - `multistage`: no producer warpgroup; the first consumer thread also issues the copies,
//!   `STAGES - 1` k-tiles ahead;
//! - `cp_async`: no copy engine; all 256 threads of the two warpgroups copy each stage with
//!   16-byte `cp.async` (zero-filling at the edges) into the same swizzled tiles, through a
//!   `BlockPipeline`, `STAGES - 1` k-tiles ahead: what the tensor copies buy.
//!
//! `ws_cooperative_rs` is `ws_cooperative` with the consumers loading A into registers
//! (`ldmatrix`) and multiplying from there: `wgmma`'s register form.
//!
//! Tensor maps need rows that are 16-byte multiples: for K not a multiple of 8 the host copies
//! A and B (and, for N not a multiple of 8, the `_b_kn` kernels' `k x n` B) into zero-padded
//! buffers with `bf16_pad_rows` first, in the timed launch; for N not a multiple of 8 the
//! direct-store entry points write C.
//!
//! [`BulkPipeline`]: gpu::pipeline::BulkPipeline

#[cfg(target_arch = "nvptx64")]
mod kernels;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

use gpu::layout::StagedLayout;
use gpu::tensor_map::TensorMap;
use gpu::wgmma::{Bf16, SwizzledKMajor, SwizzledMnMajor, WARPGROUP_THREADS};

/// Rows of A in a stage at most (the shared 128 x 256 tile).
pub const BM: u32 = 128;
/// Columns of C per block tile (one m64n256 `wgmma` per consumer).
pub const BN: u32 = 256;
/// K per pipeline stage: one 128-byte swizzle row of BF16.
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

/// How a kernel writes C. Both round the accumulators to BF16 into shared memory first, one
/// 64 x 256 part per consumer warpgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Tensor stores (`UTMASTG`) that the next tile's math overlaps; C's rows must be 16-byte
    /// multiples (N a multiple of 8).
    TensorStore,
    /// The warpgroup stores the rows itself, staged shifted to where C's 16-byte chunks fall:
    /// 16-byte stores, the elements at each end of a row's part one by one; any N.
    Direct,
}

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

    /// Bytes of a stage's A tile (`tile_m` rows of 64 BF16).
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

/// Threads of the reference and widening kernels' blocks.
pub const HELPER_THREADS: u32 = 256;

/// How a block's stages are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bf16Style {
    /// A producer warpgroup and two consumer warpgroups sharing a 128 x 256 tile.
    WsCooperative,
    /// A producer warpgroup and two consumer warpgroups on alternate 64 x 256 tiles, one's
    /// epilogue overlapping the other's math.
    WsPingpong,
    /// Two warpgroups that compute, the first thread also producing.
    Multistage,
    /// Two warpgroups that compute, every thread also copying its share of each stage with
    /// `cp.async` (no copy engine).
    CpAsync,
}

impl Bf16Style {
    /// Its block geometry.
    pub const fn geometry(self) -> Geometry {
        match self {
            Bf16Style::WsPingpong => Geometry::TILE_PER_WARPGROUP,
            Bf16Style::WsCooperative | Bf16Style::Multistage | Bf16Style::CpAsync => {
                Geometry::SHARED_TILE
            }
        }
    }

    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            Bf16Style::WsCooperative | Bf16Style::WsPingpong => 3 * WARPGROUP_THREADS,
            Bf16Style::Multistage | Bf16Style::CpAsync => 2 * WARPGROUP_THREADS,
        }
    }

    /// The label reports use.
    pub const fn label(self) -> &'static str {
        match self {
            Bf16Style::WsCooperative => "ws_cooperative",
            Bf16Style::WsPingpong => "ws_pingpong",
            Bf16Style::Multistage => "multistage",
            Bf16Style::CpAsync => "cp_async",
        }
    }

    /// One line on it.
    pub const fn summary(self) -> &'static str {
        match self {
            Bf16Style::WsCooperative => {
                "producer warpgroup (setmaxnreg 40) + 2 consumer warpgroups (232) on a 128x256 tile, TMA + wgmma, persistent"
            }
            Bf16Style::WsPingpong => {
                "producer warpgroup + 2 consumer warpgroups on alternate 64x256 tiles, epilogue overlapping math, TMA + wgmma, persistent"
            }
            Bf16Style::Multistage => {
                "2 warpgroups compute, one elected thread issues the tensor copies ahead, TMA + wgmma, persistent"
            }
            Bf16Style::CpAsync => {
                "2 warpgroups compute, all 256 threads cp.async 16-byte chunks into the swizzled stages (BlockPipeline), wgmma, persistent"
            }
        }
    }
}

/// The parameters of the direct-store kernels: tensor maps of A (`k x m`, box
/// `Geometry::a_box()`) and B (`k x n`, box [`BTile::BOX`]; `n x k`, box [`BKnTile::BOX`], for
/// the `_b_kn` kernels), 128-byte swizzle, zero fill; C; m, n, k.
pub type Bf16GemmParams = (TensorMap, TensorMap, *mut Bf16, u32, u32, u32);

/// The parameters of the tensor-store kernels: as [`Bf16GemmParams`] with C's tensor map
/// (`n x m`, box [`CBox::BOX`], 128-byte swizzle) in place of its pointer.
pub type Bf16GemmStoreParams = (TensorMap, TensorMap, TensorMap, u32, u32, u32);

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

/// Where the consumers' `wgmma` takes A from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ASource {
    /// Shared memory, through a descriptor, as B.
    SharedMemory,
    /// Registers, loaded from the stage with `ldmatrix` (CUTLASS's "RS" form, what a kernel
    /// that transforms A on its way to the tensor cores needs).
    Registers,
}

/// A family's two entry points: the tensor-store one for N a multiple of 8 and the
/// direct-store one for any N, taking A and B as tensor maps or (the `cp_async` style) as
/// pointers.
#[derive(Debug)]
pub enum Bf16Entries {
    /// A and B through tensor maps.
    TensorMaps {
        /// The tensor-store kernel.
        tensor_store: gpu::kernel::EntryPoint<Bf16GemmStoreParams>,
        /// The direct-store kernel.
        direct: gpu::kernel::EntryPoint<Bf16GemmParams>,
    },
    /// A and B as pointers.
    Pointers {
        /// The tensor-store kernel.
        tensor_store: gpu::kernel::EntryPoint<Bf16CpAsyncStoreParams>,
        /// The direct-store kernel.
        direct: gpu::kernel::EntryPoint<Bf16CpAsyncParams>,
    },
}

impl Bf16Entries {
    /// The tensor-store and direct-store entry points' names.
    pub const fn names(&self) -> [&'static str; 2] {
        match self {
            Bf16Entries::TensorMaps {
                tensor_store,
                direct,
            } => [tensor_store.name(), direct.name()],
            Bf16Entries::Pointers {
                tensor_store,
                direct,
            } => [tensor_store.name(), direct.name()],
        }
    }
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

/// One BF16 GEMM kernel family: its style, B's layout, where A is multiplied from, and its
/// two entry points.
#[derive(Debug)]
pub struct Bf16Kernel {
    /// The family's name (its tensor-store entry point's).
    pub name: &'static str,
    /// How its stages are filled.
    pub style: Bf16Style,
    /// How its B is laid out.
    pub b_layout: BLayout,
    /// Where its `wgmma` reads A.
    pub a_source: ASource,
    /// The blocks that share its tiles.
    pub cluster: TileCluster,
    /// Its entry points.
    pub entries: Bf16Entries,
}

impl Bf16Kernel {
    /// One line on it: its style's, or for A from registers, that.
    pub const fn summary(&self) -> &'static str {
        match (self.a_source, self.cluster) {
            (ASource::Registers, _) => {
                "as ws_cooperative, the consumers ldmatrix A into registers and wgmma from there (the RS form)"
            }
            (_, TileCluster { m: 2, n: 1 }) => {
                "as ws_cooperative, in 2x1 clusters: two blocks on adjacent tile rows, each multicasting half of B's tile to both"
            }
            (_, TileCluster { m: 1, n: 2 }) => {
                "as ws_cooperative, in 1x2 clusters: two blocks on adjacent tile columns, each multicasting half of A's tile to both"
            }
            _ => self.style.summary(),
        }
    }

    /// The epilogue it runs at `n`.
    pub const fn epilogue_for(&self, n: u32) -> Epilogue {
        if n.is_multiple_of(8) {
            Epilogue::TensorStore
        } else {
            Epilogue::Direct
        }
    }
}

/// One family's table row.
macro_rules! family {
    ($style:ident, $b:ident, $a:ident, $kind:ident: $store:ident, $direct:ident) => {
        family!($style, $b, $a, 1 x 1, $kind: $store, $direct)
    };
    ($style:ident, $b:ident, $a:ident, $cm:literal x $cn:literal, $kind:ident: $store:ident, $direct:ident) => {
        Bf16Kernel {
            name: $store.name(),
            style: Bf16Style::$style,
            b_layout: BLayout::$b,
            a_source: ASource::$a,
            cluster: TileCluster { m: $cm, n: $cn },
            entries: Bf16Entries::$kind {
                tensor_store: $store,
                direct: $direct,
            },
        }
    };
}

/// Every BF16 kernel family, in report order.
pub static BF16_KERNELS: &[Bf16Kernel] = &[
    family!(WsCooperative, NK, SharedMemory, TensorMaps: bf16_gemm_ws_cooperative, bf16_gemm_ws_cooperative_direct),
    family!(WsCooperative, KN, SharedMemory, TensorMaps: bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct),
    family!(WsCooperative, NK, Registers, TensorMaps: bf16_gemm_ws_cooperative_rs, bf16_gemm_ws_cooperative_rs_direct),
    family!(WsCooperative, NK, SharedMemory, 2 x 1, TensorMaps: bf16_gemm_ws_cooperative_2x1, bf16_gemm_ws_cooperative_2x1_direct),
    family!(WsCooperative, NK, SharedMemory, 1 x 2, TensorMaps: bf16_gemm_ws_cooperative_1x2, bf16_gemm_ws_cooperative_1x2_direct),
    family!(WsPingpong, NK, SharedMemory, TensorMaps: bf16_gemm_ws_pingpong, bf16_gemm_ws_pingpong_direct),
    family!(WsPingpong, KN, SharedMemory, TensorMaps: bf16_gemm_ws_pingpong_b_kn, bf16_gemm_ws_pingpong_b_kn_direct),
    family!(Multistage, NK, SharedMemory, TensorMaps: bf16_gemm_multistage, bf16_gemm_multistage_direct),
    family!(Multistage, KN, SharedMemory, TensorMaps: bf16_gemm_multistage_b_kn, bf16_gemm_multistage_b_kn_direct),
    family!(CpAsync, NK, SharedMemory, Pointers: bf16_gemm_cp_async, bf16_gemm_cp_async_direct),
];

/// Declares one family's two entry points.
macro_rules! bf16_entry_points {
    ($($style:literal $name:ident, $direct:ident: $threads:literal, $specialized:literal, $pingpong:literal, $b_kn:literal, $a_regs:literal, $cm:literal x $cn:literal $([cluster = $cluster:tt])?;)*) => {$(
        gpu::kernel! {
            #[doc = concat!($style, "; tensor-store epilogue (module docs).")]
            ///
            /// # Safety
            #[doc = concat!("1-D grid of any size, ", stringify!($threads), " threads, ")]
            /// the style's `Geometry::layout().bytes` of dynamic shared memory; `a` a tensor map
            /// of A (`k x m` BF16, box `Geometry::a_box()`), `b` of B (`k x n`, box
            /// [`BTile::BOX`]; for the `_b_kn` kernels `n x k`, box [`BKnTile::BOX`]), `c` of C
            /// (`n x m`, box [`CBox::BOX`]), all 128-byte swizzle (zero fill on loads);
            /// m, n, k >= 1.
            pub fn $name(a: TensorMap, b: TensorMap, c: TensorMap, m: u32, n: u32, k: u32)
                [max_threads = $threads]
                $([cluster = $cluster])?
                [device if target_feature = "sm_90a"]
            {
                let a = gpu::tensor_map_param!(entry, 0, a);
                let b = gpu::tensor_map_param!(entry, 1, b);
                let c = gpu::tensor_map_param!(entry, 2, c);
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm::<$specialized, $pingpong, $b_kn, $a_regs, {
                        kernels::geometry($pingpong).stages as usize
                    }, $cm, $cn>(
                        a, b, kernels::COut::TensorMap(c), m, n, k,
                    )
                }
            }
        }

        gpu::kernel! {
            #[doc = concat!($style, "; direct-store epilogue (module docs).")]
            ///
            /// # Safety
            /// As the tensor-store kernel, with `c` holding `m * n` BF16.
            pub fn $direct(a: TensorMap, b: TensorMap, c: *mut Bf16, m: u32, n: u32, k: u32)
                [max_threads = $threads]
                $([cluster = $cluster])?
                [device if target_feature = "sm_90a"]
            {
                let a = gpu::tensor_map_param!(entry, 0, a);
                let b = gpu::tensor_map_param!(entry, 1, b);
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm::<$specialized, $pingpong, $b_kn, $a_regs, {
                        kernels::geometry($pingpong).stages as usize
                    }, $cm, $cn>(
                        a, b, kernels::COut::Pointer(c), m, n, k,
                    )
                }
            }
        }
    )*};
}

bf16_entry_points! {
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups" bf16_gemm_ws_cooperative, bf16_gemm_ws_cooperative_direct: 384, true, false, false, false, 1 x 1;
    "`C = A B` (B `k x n`), a producer warpgroup and two consumer warpgroups" bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct: 384, true, false, true, false, 1 x 1;
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups, in 2 x 1 clusters sharing B's tile by multicast" bf16_gemm_ws_cooperative_2x1, bf16_gemm_ws_cooperative_2x1_direct: 384, true, false, false, false, 2 x 1 [cluster = (2, 1, 1)];
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups, in 1 x 2 clusters sharing A's tile by multicast" bf16_gemm_ws_cooperative_1x2, bf16_gemm_ws_cooperative_1x2_direct: 384, true, false, false, false, 1 x 2 [cluster = (2, 1, 1)];
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups multiplying A from registers" bf16_gemm_ws_cooperative_rs, bf16_gemm_ws_cooperative_rs_direct: 384, true, false, false, true, 1 x 1;
    "`C = A B^T`, ping-pong consumer warpgroups" bf16_gemm_ws_pingpong, bf16_gemm_ws_pingpong_direct: 384, true, true, false, false, 1 x 1;
    "`C = A B` (B `k x n`), ping-pong consumer warpgroups" bf16_gemm_ws_pingpong_b_kn, bf16_gemm_ws_pingpong_b_kn_direct: 384, true, true, true, false, 1 x 1;
    "`C = A B^T`, two warpgroups that compute, one thread also producing" bf16_gemm_multistage, bf16_gemm_multistage_direct: 256, false, false, false, false, 1 x 1;
    "`C = A B` (B `k x n`), two warpgroups that compute, one thread also producing" bf16_gemm_multistage_b_kn, bf16_gemm_multistage_b_kn_direct: 256, false, false, true, false, 1 x 1;
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
            kernels::gemm_cp_async::<{ Geometry::SHARED_TILE.stages as usize }>(
                a, b, kernels::COut::TensorMap(c), m, n, k,
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
            kernels::gemm_cp_async::<{ Geometry::SHARED_TILE.stages as usize }>(
                a, b, kernels::COut::Pointer(c), m, n, k,
            )
        }
    }
}

gpu::kernel! {
    /// The reference: `C = A B^T` accumulated in `f64` from the BF16 inputs, one thread per
    /// element, to an `m x n` array of `f64`.
    ///
    /// # Safety
    /// 1-D grid covering `m * n` threads in blocks of [`HELPER_THREADS`]; `a` holds `m * k`,
    /// `b` `n * k` BF16, `c` `m * n` doubles.
    pub fn bf16_gemm_reference(a: *const Bf16, b: *const Bf16, c: *mut f64, m: u32, n: u32, k: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::reference(a, b, c, m, n, k) }
    }
}

gpu::kernel! {
    /// BF16 to f32, exactly, except that the BF16 poison `0xFFFF` becomes `harness`'s f32
    /// poison bits `poison` (so an unwritten element is reported as such).
    ///
    /// # Safety
    /// Any 1-D grid of [`HELPER_THREADS`]-thread blocks; `src` and `dst` hold `len` elements.
    pub fn bf16_widen(src: *const Bf16, dst: *mut f32, len: u64, poison: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::widen(src, dst, len, poison) }
    }
}

gpu::kernel! {
    /// Copies the `a_rows` rows of `a_src` and the `b_rows` rows of `b_src`, each of `k` BF16
    /// (packed), into rows of `kp` (a multiple of 8, at least `k`) of `a_dst` and `b_dst`,
    /// zeros past `k`: what a tensor map can describe when `k` is not a multiple of 8. Both
    /// operands in one launch (a second launch cost its own ramp and tail: docs/results.md);
    /// `b_rows = 0` pads `a` alone. One warp per row, grid-stride over the rows of both; each
    /// lane one 16-byte output chunk at a time (two 16-byte loads, one store), no division.
    ///
    /// # Safety
    /// Any 1-D grid of [`HELPER_THREADS`]-thread blocks; `a_src` holds `a_rows * k` and
    /// `a_dst` `a_rows * kp` BF16, `b_src` and `b_dst` likewise with `b_rows`, all 16-byte
    /// aligned; `k <= kp`, `kp % 8 == 0`.
    pub fn bf16_pad_rows(
        a_src: *const Bf16,
        a_dst: *mut Bf16,
        a_rows: u32,
        b_src: *const Bf16,
        b_dst: *mut Bf16,
        b_rows: u32,
        k: u32,
        kp: u32,
    )
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::pad_rows([(a_src, a_dst, a_rows), (b_src, b_dst, b_rows)], k, kp) }
    }
}

/// The BF16 bits C is poisoned with before a checked launch (a NaN no kernel writes: the
/// conversion's NaN is `0x7FC0`-like).
pub const BF16_POISON: u16 = 0xFFFF;

#[cfg(target_arch = "nvptx64")]
mod helpers {
    use gpu::ptx;
    use gpu::wgmma::Bf16;

    /// See `bf16_gemm_reference`.
    pub(super) unsafe fn reference(
        a: *const Bf16,
        b: *const Bf16,
        c: *mut f64,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let index =
            ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64;
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
    unsafe fn chunk_or_zeros(src: *const Bf16, len: u64, q: u64) -> [u32; 4] {
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
                words[(e / 2) as usize] |= (x.0 as u32) << (16 * (e % 2));
            }
            e += 1;
        }
        words
    }

    /// See `bf16_pad_rows`: one warp per row of either matrix, each lane one 16-byte chunk of
    /// the padded row at a time, cut out of the (at most two) aligned 16-byte chunks of the
    /// source it straddles ([`window8`]), elements past `k` zeroed.
    pub(super) unsafe fn pad_rows(matrices: [(*const Bf16, *mut Bf16, u32); 2], k: u32, kp: u32) {
        let lane = ptx::thread_idx_x() % 32;
        let warps = ptx::grid_dim_x() as u64 * (ptx::block_dim_x() / 32) as u64;
        let mut row = (ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64
            + ptx::thread_idx_x() as u64)
            / 32;
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
    pub(super) unsafe fn widen(src: *const Bf16, dst: *mut f32, len: u64, poison: u32) {
        let step = ptx::grid_dim_x() as u64 * ptx::block_dim_x() as u64;
        let mut i =
            ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64;
        while i < len {
            // SAFETY: i < len (launch contract).
            let x = unsafe { *src.add(i as usize) };
            let y = if x.0 == super::BF16_POISON {
                f32::from_bits(poison)
            } else {
                x.to_f32()
            };
            // SAFETY: as above.
            unsafe { *dst.add(i as usize) = y };
            i += step;
        }
    }
}
