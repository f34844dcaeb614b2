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
//!   `STAGES - 1` k-tiles ahead.
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

/// How a kernel writes C. Both round the accumulators to BF16 into shared memory first (one
/// 64 x 256 part per consumer warpgroup, as four swizzled [`CBox`]es, conflict-free).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Tensor stores (`UTMASTG`) that the next tile's math overlaps; C's rows must be 16-byte
    /// multiples (N a multiple of 8).
    TensorStore,
    /// The warpgroup stores the staged rows itself, a row at a time (4-byte stores at the
    /// row's 4-byte boundaries, guarded at the edges): any N.
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

/// The C staging of the tensor-store epilogue: two consumer warpgroups' 64 x 256 BF16.
pub const C_STAGING_BYTES: u32 = 2 * 4 * CBox::BYTES;

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
}

impl Bf16Style {
    /// Its block geometry.
    pub const fn geometry(self) -> Geometry {
        match self {
            Bf16Style::WsPingpong => Geometry::TILE_PER_WARPGROUP,
            Bf16Style::WsCooperative | Bf16Style::Multistage => Geometry::SHARED_TILE,
        }
    }

    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            Bf16Style::WsCooperative | Bf16Style::WsPingpong => 3 * WARPGROUP_THREADS,
            Bf16Style::Multistage => 2 * WARPGROUP_THREADS,
        }
    }

    /// The label reports use.
    pub const fn label(self) -> &'static str {
        match self {
            Bf16Style::WsCooperative => "ws_cooperative",
            Bf16Style::WsPingpong => "ws_pingpong",
            Bf16Style::Multistage => "multistage",
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

/// How B is laid out in global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BLayout {
    /// `n x k` row-major: `C = A B^T` (a `Linear` layer's weights), B K-major in the tile.
    NK,
    /// `k x n` row-major: `C = A B` (`a @ b`), B MN-major in the tile (`wgmma` transposes it).
    KN,
}

/// One BF16 GEMM kernel family: its style, B's layout and its two entry points, the
/// tensor-store one for N a multiple of 8 and the direct-store one for any N.
#[derive(Debug)]
pub struct Bf16Kernel {
    /// The family's name (its tensor-store entry point's).
    pub name: &'static str,
    /// How its stages are filled.
    pub style: Bf16Style,
    /// How its B is laid out.
    pub b_layout: BLayout,
    /// The tensor-store kernel.
    pub tensor_store: gpu::kernel::EntryPoint<Bf16GemmStoreParams>,
    /// The direct-store kernel.
    pub direct: gpu::kernel::EntryPoint<Bf16GemmParams>,
}

impl Bf16Kernel {
    /// The epilogue it runs at `n`.
    pub const fn epilogue_for(&self, n: u32) -> Epilogue {
        if n.is_multiple_of(8) {
            Epilogue::TensorStore
        } else {
            Epilogue::Direct
        }
    }
}

/// Every BF16 kernel family, in report order.
pub static BF16_KERNELS: &[Bf16Kernel] = &[
    Bf16Kernel {
        name: bf16_gemm_ws_cooperative.name(),
        style: Bf16Style::WsCooperative,
        b_layout: BLayout::NK,
        tensor_store: bf16_gemm_ws_cooperative,
        direct: bf16_gemm_ws_cooperative_direct,
    },
    Bf16Kernel {
        name: bf16_gemm_ws_cooperative_b_kn.name(),
        style: Bf16Style::WsCooperative,
        b_layout: BLayout::KN,
        tensor_store: bf16_gemm_ws_cooperative_b_kn,
        direct: bf16_gemm_ws_cooperative_b_kn_direct,
    },
    Bf16Kernel {
        name: bf16_gemm_ws_pingpong.name(),
        style: Bf16Style::WsPingpong,
        b_layout: BLayout::NK,
        tensor_store: bf16_gemm_ws_pingpong,
        direct: bf16_gemm_ws_pingpong_direct,
    },
    Bf16Kernel {
        name: bf16_gemm_ws_pingpong_b_kn.name(),
        style: Bf16Style::WsPingpong,
        b_layout: BLayout::KN,
        tensor_store: bf16_gemm_ws_pingpong_b_kn,
        direct: bf16_gemm_ws_pingpong_b_kn_direct,
    },
    Bf16Kernel {
        name: bf16_gemm_multistage.name(),
        style: Bf16Style::Multistage,
        b_layout: BLayout::NK,
        tensor_store: bf16_gemm_multistage,
        direct: bf16_gemm_multistage_direct,
    },
    Bf16Kernel {
        name: bf16_gemm_multistage_b_kn.name(),
        style: Bf16Style::Multistage,
        b_layout: BLayout::KN,
        tensor_store: bf16_gemm_multistage_b_kn,
        direct: bf16_gemm_multistage_b_kn_direct,
    },
];

/// Declares one family's two entry points.
macro_rules! bf16_entry_points {
    ($($style:literal $name:ident, $direct:ident: $threads:literal, $specialized:literal, $pingpong:literal, $b_kn:literal;)*) => {$(
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
                [device if target_feature = "sm_90a"]
            {
                let a = gpu::tensor_map_param!(entry, 0, a);
                let b = gpu::tensor_map_param!(entry, 1, b);
                let c = gpu::tensor_map_param!(entry, 2, c);
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm::<$specialized, $pingpong, $b_kn, {
                        kernels::geometry($pingpong).stages as usize
                    }>(
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
                [device if target_feature = "sm_90a"]
            {
                let a = gpu::tensor_map_param!(entry, 0, a);
                let b = gpu::tensor_map_param!(entry, 1, b);
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::gemm::<$specialized, $pingpong, $b_kn, {
                        kernels::geometry($pingpong).stages as usize
                    }>(
                        a, b, kernels::COut::Pointer(c), m, n, k,
                    )
                }
            }
        }
    )*};
}

bf16_entry_points! {
    "`C = A B^T`, a producer warpgroup and two consumer warpgroups" bf16_gemm_ws_cooperative, bf16_gemm_ws_cooperative_direct: 384, true, false, false;
    "`C = A B` (B `k x n`), a producer warpgroup and two consumer warpgroups" bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct: 384, true, false, true;
    "`C = A B^T`, ping-pong consumer warpgroups" bf16_gemm_ws_pingpong, bf16_gemm_ws_pingpong_direct: 384, true, true, false;
    "`C = A B` (B `k x n`), ping-pong consumer warpgroups" bf16_gemm_ws_pingpong_b_kn, bf16_gemm_ws_pingpong_b_kn_direct: 384, true, true, true;
    "`C = A B^T`, two warpgroups that compute, one thread also producing" bf16_gemm_multistage, bf16_gemm_multistage_direct: 256, false, false, false;
    "`C = A B` (B `k x n`), two warpgroups that compute, one thread also producing" bf16_gemm_multistage_b_kn, bf16_gemm_multistage_b_kn_direct: 256, false, false, true;
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
    /// Copies `rows` rows of `k` BF16 (packed) into rows of `kp` (a multiple of 8, at least
    /// `k`), zeros past `k`: what a tensor map can describe when `k` is not a multiple of 8.
    /// One thread per 16-byte chunk of the output, grid-stride.
    ///
    /// # Safety
    /// Any 1-D grid of [`HELPER_THREADS`]-thread blocks; `src` holds `rows * k` and `dst`
    /// `rows * kp` BF16, `dst` 16-byte aligned; `k <= kp`, `kp % 8 == 0`.
    pub fn bf16_pad_rows(src: *const Bf16, dst: *mut Bf16, rows: u32, k: u32, kp: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::pad_rows(src, dst, rows, k, kp) }
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

    /// Eight BF16 written as one 16-byte store.
    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    struct Chunk([u32; 4]);

    /// See `bf16_pad_rows`.
    pub(super) unsafe fn pad_rows(src: *const Bf16, dst: *mut Bf16, rows: u32, k: u32, kp: u32) {
        let per_row = (kp / 8) as u64;
        let chunks = rows as u64 * per_row;
        let step = ptx::grid_dim_x() as u64 * ptx::block_dim_x() as u64;
        let mut c =
            ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64;
        while c < chunks {
            let (row, col0) = (c / per_row, (c % per_row) as u32 * 8);
            let mut words = [0u32; 4];
            let mut j = 0;
            while j < 8 {
                let col = col0 + j;
                if col < k {
                    // SAFETY: row < rows, col < k: inside `src` (launch contract).
                    let x = unsafe { *src.add((row * k as u64 + col as u64) as usize) };
                    words[(j / 2) as usize] |= (x.0 as u32) << (16 * (j % 2));
                }
                j += 1;
            }
            // SAFETY: chunk c of `dst` (rows * kp / 8 chunks), 16-byte aligned (contract).
            unsafe { dst.cast::<Chunk>().add(c as usize).write(Chunk(words)) };
            c += step;
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
