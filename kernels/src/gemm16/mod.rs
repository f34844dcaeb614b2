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
//! the wait after the next one shows it read) — or, in ping-pong, each its own 128 x 128 tile
//! ([`Geometry::TILE_PER_WARPGROUP`]). Blocks are persistent: a grid of one block per
//! SM walks the tiles in a grouped order for L2 reuse ([`gpu::schedule::grouped_tile`]). The
//! epilogue rounds the accumulators and stores them, guarded at the edges: tensor stores for N
//! a multiple of 8, the warpgroup's own 16-byte stores for any N (the `_direct` entry points).
//!
//! Every kernel is one generic body (`kernels.rs`): who produces (a producer warpgroup giving
//! its registers away with `setmaxnreg`, or the first consumer thread), the consumers'
//! schedule (cooperative on a 128 x 256 tile, or ping-pong on 128 x 128 tiles of their own), B's
//! layout, A from shared memory or registers, the k-tiles in flight and the cluster of tiles
//! (TMA multicast) are its parameters; its table ([`gpu::kernel_table!`]) declares each
//! instantiation once, for the device and the host. A `cp.async` form (all threads copying) is the study's
//! question on Hopper. [`Gemm16`] is the host API.

#[cfg(target_arch = "nvptx64")]
mod epilogue;
#[cfg(target_arch = "nvptx64")]
mod kernels;
#[cfg(target_arch = "nvptx64")]
mod operands;

#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;
mod family;
pub use family::{ASource, ElementType, Epilogue};
mod pad;
#[cfg(not(target_arch = "nvptx64"))]
pub use pad::RowPadder;
pub use pad::{PAD_THREADS, PadRows, gemm16_pad_rows};

use gpu::layout::{Mbarrier, SharedLayout, SharedRegion};
use gpu::tensor_map::TensorMap;
use gpu::wgmma::{Bf16, F16, SwizzledKMajor, SwizzledMnMajor, WARPGROUP_THREADS};

/// Rows of A in a stage at most (the shared 128 x 256 tile).
pub const BM: u32 = 128;
/// Columns of C per block tile (one m64n256 `wgmma` per consumer).
pub const BN: u32 = 256;
/// K per pipeline stage: one 128-byte swizzle row of 16-bit elements.
pub const BK: u32 = 64;
/// Tile rows per group of the grouped tile order.
pub const GROUP_M: u32 = 16;

/// A stage's A tile.
///
/// ```
/// use gpu_kernels::gemm16::{ATile, BM, BK};
/// // A's tile: BM rows of BK 16-bit elements, 128-byte swizzled.
/// assert_eq!(ATile::BOX, [BK, BM]);
/// ```
pub type ATile = SwizzledKMajor<BM>;
/// A cooperative stage's B tile, from B `n x k` (K-major; ping-pong's is 128 rows).
///
/// ```
/// use gpu_kernels::gemm16::{BTile, BN, BK};
/// assert_eq!(BTile::BOX, [BK, BN]);
/// ```
pub type BTile = SwizzledKMajor<BN>;
/// A cooperative stage's B tile, from B `k x n` row-major (MN-major: four 64 x 64 boxes, read
/// transposed; ping-pong's is two).
///
/// ```
/// use gpu_kernels::gemm16::BKnTile;
/// // B `k x n`: 64 columns of n (128 bytes) per box row.
/// assert_eq!(BKnTile::BOX[0], 64);
/// ```
pub type BKnTile = SwizzledMnMajor<BN>;
/// One of the 64 x 64 boxes a consumer warpgroup's part of C (64 x 256, or 128 x 128 in two
/// 64-row parts) is staged in for
/// the tensor store (swizzled as the loads are, so the epilogue's writes miss no bank).
///
/// ```
/// use gpu_kernels::gemm16::CBox;
/// assert_eq!(CBox::BOX[0], 64);
/// ```
pub type CBox = SwizzledKMajor<64>;

/// A style's block geometry: the tile of C (`tile_m x tile_n`), pipeline depth, and the
/// dynamic shared memory they make — the stages (A's tile, then B's), their mbarriers, then
/// the C staging (two consumer warpgroups', [`WARPGROUP_STAGING_BYTES`] each) at the next
/// 1 KiB boundary.
///
/// ```
/// use gpu_kernels::gemm16::Geometry;
/// let g = Geometry::SHARED_TILE;
/// assert_eq!((g.tile_m, g.tile_n, g.stages), (128, 256, 3));
/// // 1000 x 3000: 8 tiles of 128 rows by 12 of 256 columns.
/// assert_eq!(g.tiles(1000, 3000), (8, 12));
/// assert!(g.shared().bytes <= 227 * 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Rows of C per tile (128).
    pub tile_m: u32,
    /// Columns of C per tile: 256 (two consumer warpgroups share the tile, 64 rows each) or
    /// 128 (one warpgroup's, all 128 rows).
    pub tile_n: u32,
    /// Pipeline depth.
    pub stages: u32,
}

impl Geometry {
    /// A 128 x 256 tile shared by two consumer warpgroups; the 66 KiB C staging leaves room
    /// for three 48 KiB stages in the 227 KiB a block may have.
    pub const SHARED_TILE: Geometry = Geometry {
        tile_m: 128,
        tile_n: BN,
        stages: 3,
    };
    /// A 128 x 128 tile per consumer warpgroup (ping-pong): 32 KiB stages, five of them — a
    /// 64 x 256 one (40 KiB, four stages) moved 1.25x the bytes per multiply and had one
    /// stage fewer to hide the loads with.
    pub const TILE_PER_WARPGROUP: Geometry = Geometry {
        tile_m: 128,
        tile_n: 128,
        stages: 5,
    };

    /// Bytes of a stage's A tile (`tile_m` rows of 64 16-bit elements).
    pub const fn a_tile_bytes(self) -> u32 {
        self.tile_m * 128
    }

    /// Bytes of a stage's B tile (`tile_n` rows or columns of 64 16-bit elements).
    pub const fn b_tile_bytes(self) -> u32 {
        self.tile_n * 128
    }

    /// The tensor map box of A: its tile type's (`SwizzledKMajor<tile_m>`), `[64, tile_m]`.
    pub const fn a_box(self) -> [u32; 2] {
        match self.tile_m {
            64 => SwizzledKMajor::<64>::BOX,
            _ => ATile::BOX,
        }
    }

    /// The tensor map box of B `n x k` (`SwizzledKMajor<tile_n>`): `[64, tile_n]`.
    pub const fn b_box(self) -> [u32; 2] {
        match self.tile_n {
            128 => SwizzledKMajor::<128>::BOX,
            _ => BTile::BOX,
        }
    }

    /// The block's dynamic shared memory, carved once ([`GemmShared`]).
    pub const fn shared(self) -> GemmShared {
        let stage_bytes = self.a_tile_bytes() + self.b_tile_bytes();
        // The tiles are 128-byte swizzled: 1 KiB aligned.
        let layout = SharedLayout::EMPTY;
        let (layout, stages) = layout.region::<u8>(self.stages, stage_bytes, 1024);
        let (layout, barriers) = layout.array::<Mbarrier>(2 * self.stages);
        let (layout, order) = layout.array::<Mbarrier>(2);
        let (layout, staging) = layout.region::<u8>(2, WARPGROUP_STAGING_BYTES, 1024);
        GemmShared {
            stages,
            barriers,
            order,
            staging,
            bytes: layout.bytes(),
        }
    }

    /// Tiles of an `m x n` C: `(rows, columns)`.
    pub const fn tiles(self, m: u32, n: u32) -> (u32, u32) {
        (m.div_ceil(self.tile_m), n.div_ceil(self.tile_n))
    }
}

/// A geometry's dynamic shared memory ([`Geometry::shared`], a [`SharedLayout`]): what the
/// kernels take typed handles from and the host launches with.
///
/// ```
/// use gpu_kernels::gemm16::Geometry;
/// let shared = Geometry::TILE_PER_WARPGROUP.shared();
/// assert_eq!(shared.stages.offset(), 0);
/// assert!(shared.staging.offset() < shared.bytes);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct GemmShared {
    /// The stages, each A's tile then B's (1 KiB aligned).
    pub stages: SharedRegion<u8>,
    /// The pipeline's mbarriers (`full[0..stages]`, `empty[0..stages]`: a
    /// `PipelineSharedState`).
    pub barriers: SharedRegion<Mbarrier>,
    /// The ping-pong order's two mbarriers ([`gpu::collective::tensor_core::OrderBarrier`]).
    pub order: SharedRegion<Mbarrier>,
    /// The two consumer warpgroups' C staging, [`WARPGROUP_STAGING_BYTES`] each (1 KiB
    /// aligned).
    pub staging: SharedRegion<u8>,
    /// The dynamic shared memory to launch with.
    pub bytes: u32,
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
///
/// ```
/// use gpu_kernels::gemm16::{GemmParams, f16_gemm_ws_cooperative_direct};
/// let entry: gpu::kernel::EntryPoint<GemmParams<gpu::wgmma::F16>> = f16_gemm_ws_cooperative_direct;
/// assert_eq!(entry.name(), "f16_gemm_ws_cooperative_direct");
/// ```
pub type GemmParams<E> = (TensorMap, TensorMap, *mut E, u32, u32, u32);

/// [`GemmParams`] of a BF16 family.
///
/// ```
/// use gpu_kernels::gemm16::{Bf16GemmParams, bf16_gemm_ws_pingpong_direct};
/// let entry: gpu::kernel::EntryPoint<Bf16GemmParams> = bf16_gemm_ws_pingpong_direct;
/// assert_eq!(entry.name(), "bf16_gemm_ws_pingpong_direct");
/// ```
pub type Bf16GemmParams = GemmParams<Bf16>;

/// [`GemmParams`] of an FP16 family.
///
/// ```
/// use gpu_kernels::gemm16::{F16GemmParams, f16_gemm_ws_pingpong_direct};
/// let entry: gpu::kernel::EntryPoint<F16GemmParams> = f16_gemm_ws_pingpong_direct;
/// assert_eq!(entry.name(), "f16_gemm_ws_pingpong_direct");
/// ```
pub type F16GemmParams = GemmParams<F16>;

/// The parameters of the tensor-store kernels, of either element: as [`GemmParams`] with C's
/// tensor map (`n x m`, box [`CBox::BOX`], 128-byte swizzle) in place of its pointer.
///
/// ```
/// use gpu_kernels::gemm16::{GemmStoreParams, bf16_gemm_ws_cooperative, f16_gemm_ws_cooperative};
/// // The same parameters for either element: three tensor maps and the sizes.
/// let entries: [gpu::kernel::EntryPoint<GemmStoreParams>; 2] =
///     [bf16_gemm_ws_cooperative, f16_gemm_ws_cooperative];
/// assert_ne!(entries[0].name(), entries[1].name());
/// ```
pub type GemmStoreParams = (TensorMap, TensorMap, TensorMap, u32, u32, u32);

/// The parameters of the `cp_async` direct-store kernels: A (`m x k`) and B (`n x k`),
/// row-major, `k` a multiple of 8; C; m, n, k.
///
/// ```
/// use gpu_kernels::gemm16::{Bf16CpAsyncParams, bf16_gemm_cp_async_direct};
/// let entry: gpu::kernel::EntryPoint<Bf16CpAsyncParams> = bf16_gemm_cp_async_direct;
/// assert_eq!(entry.name(), "bf16_gemm_cp_async_direct");
/// ```
pub type Bf16CpAsyncParams = (*const Bf16, *const Bf16, *mut Bf16, u32, u32, u32);

/// The parameters of the `cp_async` tensor-store kernels: as [`Bf16CpAsyncParams`] with C's
/// tensor map in place of its pointer.
///
/// ```
/// use gpu_kernels::gemm16::{Bf16CpAsyncStoreParams, bf16_gemm_cp_async};
/// let entry: gpu::kernel::EntryPoint<Bf16CpAsyncStoreParams> = bf16_gemm_cp_async;
/// assert_eq!(entry.name(), "bf16_gemm_cp_async");
/// ```
pub type Bf16CpAsyncStoreParams = (*const Bf16, *const Bf16, TensorMap, u32, u32, u32);

/// How B is laid out in global memory.
///
/// ```
/// use gpu_kernels::GemmShape;
/// use gpu_kernels::gemm16::{BLayout, GemmStrides};
/// // `x @ W.T` with W as a Linear layer stores it (out x in) is NK; `x @ W` is KN.
/// let shape = GemmShape { m: 8, n: 16, k: 24 };
/// assert_eq!(GemmStrides::packed(shape, BLayout::NK).b, shape.k);
/// assert_eq!(GemmStrides::packed(shape, BLayout::KN).b, shape.n);
/// ```
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
/// `tile_m / n` rows, B: `tile_n / m`) to all of them with one multicast tensor copy.
///
/// ```
/// use gpu_kernels::gemm16::{Geometry, TileCluster};
/// let pair = TileCluster { m: 2, n: 1 };
/// assert_eq!(pair.blocks(), 2);
/// // Each block of a 2 x 1 cluster loads half of B's tile and multicasts it to both.
/// assert_eq!(pair.b_box(Geometry::SHARED_TILE)[1], 128);
/// assert_eq!(TileCluster::NONE.b_box(Geometry::SHARED_TILE)[1], 256);
/// ```
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
    /// `[64, tile_n / m]`.
    pub const fn b_box(self, g: Geometry) -> [u32; 2] {
        [BK, g.tile_n / self.m]
    }

    /// Clusters of `m x n` tiles over an `m x n` C (tile counts rounded up).
    pub const fn cluster_tiles(self, g: Geometry, m: u32, n: u32) -> u32 {
        let (tiles_m, tiles_n) = g.tiles(m, n);
        tiles_m.div_ceil(self.m) * tiles_n.div_ceil(self.n)
    }
}

/// A line of [`GEMM16_KERNELS`] ([`gpu::kernel_table!`]), named fields — its tensor-store entry
/// point and `direct:` its direct-store one, `element:` of A, B and C, `style:` (who produces
/// and how the consumers share the tiles: [`Gemm16Style`]), `b:` B's layout ([`BLayout`]), `a:`
/// where `wgmma` reads A ([`ASource`]), `in_flight:` k-tiles of `wgmma` kept in flight,
/// `cluster:` the cluster of tiles (`(m x n)` blocks; with `, launch (x, y, z)`, declared at
/// the launch). `@entry` declares both entry points of the family (device and host:
/// [`gpu::kernel!`]), `@row` is its [`Gemm16Kernel`] — so a family is written once.
macro_rules! gemm16_row {
    (@$what:ident $name:ident {
        direct: $direct:ident,
        element: $e:ident,
        style: $style:ident,
        b: $b:ident,
        a: $a:ident,
        in_flight: $k:literal,
        cluster: ($cm:literal x $cn:literal $(, launch $cluster:tt)?)
    }) => {
        gemm16_row! { $what $style, $name, $direct, $e, $b, $a, $k, $cm, $cn, [$($cluster)?] }
    };
    (entry $($line:tt)*) => {
        gemm16_row!(@entries $($line)*);
    };
    (row $style:ident, $name:ident, $direct:ident, $e:ident, $b:ident, $a:ident, $k:literal,
     $cm:literal, $cn:literal, [$($cluster:tt)?]) => {
        Gemm16Kernel {
            name: $name.name(),
            element: ElementType::$e,
            style: Gemm16Style::$style,
            b_layout: BLayout::$b,
            a_source: ASource::$a,
            in_flight: $k,
            cluster: TileCluster { m: $cm, n: $cn },
            entries: gemm16_row!(@table $style, $e, $name, $direct),
        }
    };
    (@table CpAsync, Bf16, $store:ident, $direct:ident) => {
        Gemm16Entries::Pointers { tensor_store: $store, direct: $direct }
    };
    (@table $style:ident, $e:ident, $store:ident, $direct:ident) => {
        Gemm16Entries::TensorMaps { tensor_store: $store, direct: DirectEntry::$e($direct) }
    };
    // The `cp_async` style: A and B as pointers, all threads copying (BF16, B n x k, A from
    // shared memory).
    (@entries CpAsync, $name:ident, $direct:ident, $e:ident, NK, SharedMemory, $k:literal, $cm:literal, $cn:literal, []) => {
        gpu::kernel! {
            /// `C = A B^T` fed by `cp.async` (style `cp_async`); tensor-store epilogue.
            ///
            /// # Safety
            /// 1-D grid of any size, 256 threads, `Geometry::SHARED_TILE.shared().bytes` of
            /// dynamic shared memory; `a` and `b` hold `m x k` and `n x k` row-major,
            /// 16-byte aligned, `k` a multiple of 8; `c` a tensor map of C (`n x m`, box
            /// [`CBox::BOX`], 128-byte swizzle); m, n, k >= 1.
            pub fn $name(a: *const $e, b: *const $e, c: TensorMap, m: u32, n: u32, k: u32)
                [max_threads = 256]
                [device if target_feature = "sm_90a"]
            {
                let c = gpu::tensor_map_param!(entry, 2, c);
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm_cp_async::<$e, _, $k, { Geometry::SHARED_TILE.stages as usize }>(
                        a, b, epilogue::TensorStore(c), m, n, k,
                    )
                }
            }
        }

        gpu::kernel! {
            /// `C = A B^T` fed by `cp.async` (style `cp_async`); direct-store epilogue.
            ///
            /// # Safety
            /// As the tensor-store kernel, with `c` holding `m * n` elements, 16-byte aligned.
            pub fn $direct(a: *const $e, b: *const $e, c: *mut $e, m: u32, n: u32, k: u32)
                [max_threads = 256]
                [device if target_feature = "sm_90a"]
            {
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm_cp_async::<$e, _, $k, { Geometry::SHARED_TILE.stages as usize }>(
                        a, b, epilogue::DirectStore(c), m, n, k,
                    )
                }
            }
        }
    };
    // The tensor-map styles: who produces and the schedule follow from the style.
    (@entries WsCooperative, $($rest:tt)*) => {
        gemm16_row!(@tma WarpSpecialized, Cooperative, 384, $($rest)*);
    };
    (@entries WsPingpong, $($rest:tt)*) => {
        gemm16_row!(@tma WarpSpecialized, PingPong, 384, $($rest)*);
    };
    (@entries Multistage, $($rest:tt)*) => {
        gemm16_row!(@tma Multistage, Cooperative, 256, $($rest)*);
    };
    (@tma $roles:ident, $schedule:ident, $threads:literal, $name:ident, $direct:ident, $e:ident,
     $b:ident, $a:ident, $k:literal, $cm:literal, $cn:literal, [$($cluster:tt)?]) => {
        gpu::kernel! {
            /// A tensor-map family of the table (its row says what it is); tensor-store
            /// epilogue (module docs).
            ///
            /// # Safety
            #[doc = concat!("1-D grid of any size, ", stringify!($threads), " threads, ")]
            /// the style's `Geometry::shared().bytes` of dynamic shared memory; `a` a tensor map
            /// of A (`k x m`, box `TileCluster::a_box`), `b` of B (`k x n`, box
            /// `TileCluster::b_box`; B `k x n`: `n x k`, box [`BKnTile::BOX`]), `c` of C (`n x
            /// m`, box [`CBox::BOX`]), all 128-byte swizzle (zero fill on loads); m, n, k >= 1;
            /// for a cluster of tiles, clusters of its blocks along x.
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
                    kernels::gemm::<$e, $schedule, kernels::$roles, gemm16_row!(@b $b $schedule),
                        gemm16_row!(@a $a), _, $k, { kernels::geometry::<$schedule>().stages as usize },
                        $cm, $cn>(a, b, epilogue::TensorStore(c), m, n, k)
                }
            }
        }

        gpu::kernel! {
            /// As its tensor-store twin, with the direct-store epilogue (any N).
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
                    kernels::gemm::<$e, $schedule, kernels::$roles, gemm16_row!(@b $b $schedule),
                        gemm16_row!(@a $a), _, $k, { kernels::geometry::<$schedule>().stages as usize },
                        $cm, $cn>(a, b, epilogue::DirectStore(c), m, n, k)
                }
            }
        }
    };
    (@b NK $schedule:ident) => { kernels::BNk<{ kernels::geometry::<$schedule>().tile_n }> };
    (@b KN $schedule:ident) => { kernels::BKn<{ kernels::geometry::<$schedule>().tile_n }> };
    (@a SharedMemory) => { kernels::ASmem };
    (@a Registers) => { kernels::ARegs };
}

gpu::kernel_table! {
    /// Every kernel family, in report order (the FP16 ones after all BF16 ones).
    pub static GEMM16_KERNELS: [Gemm16Kernel] by gemm16_row;
    bf16_gemm_ws_cooperative { direct: bf16_gemm_ws_cooperative_direct, element: Bf16, style: WsCooperative, b: NK, a: SharedMemory, in_flight: 1, cluster: (1 x 1) }
    bf16_gemm_ws_cooperative_b_kn { direct: bf16_gemm_ws_cooperative_b_kn_direct, element: Bf16, style: WsCooperative, b: KN, a: SharedMemory, in_flight: 1, cluster: (1 x 1) }
    bf16_gemm_ws_cooperative_rs { direct: bf16_gemm_ws_cooperative_rs_direct, element: Bf16, style: WsCooperative, b: NK, a: Registers, in_flight: 0, cluster: (1 x 1) }
    bf16_gemm_ws_cooperative_2x1 { direct: bf16_gemm_ws_cooperative_2x1_direct, element: Bf16, style: WsCooperative, b: NK, a: SharedMemory, in_flight: 1, cluster: (2 x 1, launch (2, 1, 1)) }
    bf16_gemm_ws_cooperative_1x2 { direct: bf16_gemm_ws_cooperative_1x2_direct, element: Bf16, style: WsCooperative, b: NK, a: SharedMemory, in_flight: 1, cluster: (1 x 2, launch (2, 1, 1)) }
    bf16_gemm_ws_pingpong { direct: bf16_gemm_ws_pingpong_direct, element: Bf16, style: WsPingpong, b: NK, a: SharedMemory, in_flight: 1, cluster: (1 x 1) }
    bf16_gemm_ws_pingpong_b_kn { direct: bf16_gemm_ws_pingpong_b_kn_direct, element: Bf16, style: WsPingpong, b: KN, a: SharedMemory, in_flight: 1, cluster: (1 x 1) }
    bf16_gemm_ws_pingpong_2x1 { direct: bf16_gemm_ws_pingpong_2x1_direct, element: Bf16, style: WsPingpong, b: NK, a: SharedMemory, in_flight: 1, cluster: (2 x 1, launch (2, 1, 1)) }
    bf16_gemm_multistage { direct: bf16_gemm_multistage_direct, element: Bf16, style: Multistage, b: NK, a: SharedMemory, in_flight: 0, cluster: (1 x 1) }
    bf16_gemm_multistage_b_kn { direct: bf16_gemm_multistage_b_kn_direct, element: Bf16, style: Multistage, b: KN, a: SharedMemory, in_flight: 0, cluster: (1 x 1) }
    bf16_gemm_cp_async { direct: bf16_gemm_cp_async_direct, element: Bf16, style: CpAsync, b: NK, a: SharedMemory, in_flight: 0, cluster: (1 x 1) }
    f16_gemm_ws_cooperative { direct: f16_gemm_ws_cooperative_direct, element: F16, style: WsCooperative, b: NK, a: SharedMemory, in_flight: 1, cluster: (1 x 1) }
    f16_gemm_ws_pingpong { direct: f16_gemm_ws_pingpong_direct, element: F16, style: WsPingpong, b: NK, a: SharedMemory, in_flight: 1, cluster: (1 x 1) }
}

/// How a block's stages are filled.
///
/// ```
/// use gpu_kernels::gemm16::Gemm16Style;
/// assert_eq!(Gemm16Style::WsPingpong.label(), "ws_pingpong");
/// assert_eq!(Gemm16Style::WsCooperative.threads(), 384);
/// assert_eq!(Gemm16Style::CpAsync.geometry().tile_n, 256);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gemm16Style {
    /// A producer warpgroup and two consumer warpgroups sharing a 128 x 256 tile.
    WsCooperative,
    /// A producer warpgroup and two consumer warpgroups on alternate 128 x 128 tiles, one's
    /// epilogue overlapping the other's math.
    WsPingpong,
    /// Two warpgroups that compute, the first thread also producing.
    Multistage,
    /// Two warpgroups that compute, every thread also copying its share of each stage with
    /// `cp.async` (no copy engine).
    CpAsync,
}

impl Gemm16Style {
    /// Its block geometry.
    pub const fn geometry(self) -> Geometry {
        match self {
            Gemm16Style::WsPingpong => Geometry::TILE_PER_WARPGROUP,
            Gemm16Style::WsCooperative | Gemm16Style::Multistage | Gemm16Style::CpAsync => {
                Geometry::SHARED_TILE
            }
        }
    }

    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            Gemm16Style::WsCooperative | Gemm16Style::WsPingpong => 3 * WARPGROUP_THREADS,
            Gemm16Style::Multistage | Gemm16Style::CpAsync => 2 * WARPGROUP_THREADS,
        }
    }

    /// The label reports use.
    pub const fn label(self) -> &'static str {
        match self {
            Gemm16Style::WsCooperative => "ws_cooperative",
            Gemm16Style::WsPingpong => "ws_pingpong",
            Gemm16Style::Multistage => "multistage",
            Gemm16Style::CpAsync => "cp_async",
        }
    }

    /// One line on it.
    pub const fn summary(self) -> &'static str {
        match self {
            Gemm16Style::WsCooperative => {
                "producer warpgroup (setmaxnreg 40) + 2 consumer warpgroups (232) on a 128x256 tile, TMA + wgmma, persistent"
            }
            Gemm16Style::WsPingpong => {
                "producer warpgroup + 2 consumer warpgroups on alternate 128x128 tiles, epilogue overlapping math, TMA + wgmma, persistent"
            }
            Gemm16Style::Multistage => {
                "2 warpgroups compute, one elected thread issues the tensor copies ahead, TMA + wgmma, persistent"
            }
            Gemm16Style::CpAsync => {
                "2 warpgroups compute, all 256 threads cp.async 16-byte chunks into the swizzled stages (BlockPipeline), wgmma, persistent"
            }
        }
    }
}

/// A tensor-map family's direct-store entry point, typed by the element of its C.
///
/// ```
/// use gpu_kernels::ElementType;
/// use gpu_kernels::gemm16::{DirectEntry, f16_gemm_ws_pingpong_direct};
/// let direct = DirectEntry::F16(f16_gemm_ws_pingpong_direct);
/// assert_eq!(direct.element(), ElementType::F16);
/// assert_eq!(direct.cluster(), None);
/// ```
#[derive(Clone, Copy, Debug)]
pub enum DirectEntry {
    /// C in BF16.
    Bf16(gpu::kernel::EntryPoint<Bf16GemmParams>),
    /// C in FP16.
    F16(gpu::kernel::EntryPoint<F16GemmParams>),
}

impl DirectEntry {
    /// Its element.
    pub const fn element(&self) -> ElementType {
        match self {
            DirectEntry::Bf16(_) => ElementType::Bf16,
            DirectEntry::F16(_) => ElementType::F16,
        }
    }

    /// The name it is exported under.
    pub const fn name(&self) -> &'static str {
        match self {
            DirectEntry::Bf16(e) => e.name(),
            DirectEntry::F16(e) => e.name(),
        }
    }

    /// The cluster it was declared with, if any.
    pub const fn cluster(&self) -> Option<[u32; 3]> {
        match self {
            DirectEntry::Bf16(e) => e.cluster(),
            DirectEntry::F16(e) => e.cluster(),
        }
    }
}

/// A family's two entry points: the tensor-store one for N a multiple of 8 and the
/// direct-store one for any N, taking A and B as tensor maps or (the `cp_async` style, BF16
/// only) as pointers.
///
/// ```
/// use gpu_kernels::gemm16::GEMM16_KERNELS;
/// let family = GEMM16_KERNELS.iter().find(|k| k.name == "bf16_gemm_ws_pingpong").unwrap();
/// assert_eq!(family.entries.names(), ["bf16_gemm_ws_pingpong", "bf16_gemm_ws_pingpong_direct"]);
/// ```
#[derive(Debug)]
pub enum Gemm16Entries {
    /// A and B through tensor maps.
    TensorMaps {
        /// The tensor-store kernel (its parameters are the same for either element).
        tensor_store: gpu::kernel::EntryPoint<GemmStoreParams>,
        /// The direct-store kernel.
        direct: DirectEntry,
    },
    /// A and B as pointers.
    Pointers {
        /// The tensor-store kernel.
        tensor_store: gpu::kernel::EntryPoint<Bf16CpAsyncStoreParams>,
        /// The direct-store kernel.
        direct: gpu::kernel::EntryPoint<Bf16CpAsyncParams>,
    },
}

impl Gemm16Entries {
    /// The tensor-store and direct-store entry points' names.
    pub const fn names(&self) -> [&'static str; 2] {
        match self {
            Gemm16Entries::TensorMaps {
                tensor_store,
                direct,
            } => [tensor_store.name(), direct.name()],
            Gemm16Entries::Pointers {
                tensor_store,
                direct,
            } => [tensor_store.name(), direct.name()],
        }
    }
}

/// One GEMM kernel family: its element, style, B's layout, where A is multiplied from, and
/// its two entry points.
///
/// ```
/// use gpu_kernels::ElementType;
/// use gpu_kernels::gemm16::{GEMM16_KERNELS, Gemm16Style};
/// let fp16: Vec<&str> = GEMM16_KERNELS
///     .iter()
///     .filter(|k| k.element == ElementType::F16)
///     .map(|k| k.style_label())
///     .collect();
/// assert_eq!(fp16, ["f16_ws_cooperative", "f16_ws_pingpong"]);
/// assert!(GEMM16_KERNELS.iter().any(|k| k.style == Gemm16Style::CpAsync));
/// ```
#[derive(Debug)]
pub struct Gemm16Kernel {
    /// The family's name (its tensor-store entry point's).
    pub name: &'static str,
    /// The element of its A, B and C.
    pub element: ElementType,
    /// How its stages are filled.
    pub style: Gemm16Style,
    /// How its B is laid out.
    pub b_layout: BLayout,
    /// Where its `wgmma` reads A.
    pub a_source: ASource,
    /// The k-tiles of `wgmma` each consumer warpgroup keeps in flight.
    pub in_flight: u32,
    /// The blocks that share its tiles.
    pub cluster: TileCluster,
    /// Its entry points.
    pub entries: Gemm16Entries,
}

impl Gemm16Kernel {
    /// The style reports and plots group it under: its style's label, prefixed `f16_` for an
    /// FP16 family (so that each FP16 style is drawn beside, not merged with, its BF16 one).
    pub const fn style_label(&self) -> &'static str {
        match (self.element, self.style) {
            (ElementType::Bf16, style) => style.label(),
            (ElementType::F16, Gemm16Style::WsCooperative) => "f16_ws_cooperative",
            (ElementType::F16, Gemm16Style::WsPingpong) => "f16_ws_pingpong",
            (ElementType::F16, Gemm16Style::Multistage) => "f16_multistage",
            (ElementType::F16, Gemm16Style::CpAsync) => "f16_cp_async",
        }
    }

    /// One line on it: its style's, or for A from registers, that.
    pub const fn summary(&self) -> &'static str {
        if let ElementType::F16 = self.element {
            return "the BF16 family of its style, B layout and cluster, instantiated for FP16 A, B and C (FP32 accumulation)";
        }
        match (self.a_source, self.cluster, self.style) {
            (_, TileCluster { m: 2, n: 1 }, Gemm16Style::WsPingpong) => {
                "as ws_pingpong, in 2x1 clusters: two blocks on adjacent tile rows, each multicasting half of B's tile to both (half the L2 reads of B)"
            }
            (ASource::Registers, _, _) => {
                "as ws_cooperative, the consumers ldmatrix A into registers and wgmma from there (the RS form)"
            }
            (_, TileCluster { m: 2, n: 1 }, _) => {
                "as ws_cooperative, in 2x1 clusters: two blocks on adjacent tile rows, each multicasting half of B's tile to both"
            }
            (_, TileCluster { m: 1, n: 2 }, _) => {
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
