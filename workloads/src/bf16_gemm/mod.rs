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
//! The kernels are generic over the 16-bit element ([`gpu::wgmma::SixteenBit`]): the
//! `f16_gemm_*` families ([`ElementType::F16`]) are the BF16 ones instantiated for IEEE
//! binary16 A, B and C (FP32 accumulation too), measured beside them: the proof that the
//! element is a parameter, not a rewrite.
//!
//! [`BulkPipeline`]: gpu::pipeline::BulkPipeline

#[cfg(target_arch = "nvptx64")]
mod helpers;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

// The kernels, their tiles, geometry and entry points are `gpu-kernels`' (the crate users
// call); this workload measures them.
use gpu::wgmma::{Bf16, F16, WARPGROUP_THREADS};
pub use gpu_kernels::gemm16::*;

/// How a kernel writes C. Both round the accumulators to C's element into shared memory first,
/// one 64 x 256 part per consumer warpgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Tensor stores (`UTMASTG`) that the next tile's math overlaps; C's rows must be 16-byte
    /// multiples (N a multiple of 8).
    TensorStore,
    /// The warpgroup stores the rows itself, staged shifted to where C's 16-byte chunks fall:
    /// 16-byte stores, the elements at each end of a row's part one by one; any N.
    Direct,
}

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

/// The element type of a family's A, B and C (FP32 accumulation either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// bfloat16 ([`Bf16`]: 8 exponent bits, 7 mantissa bits).
    Bf16,
    /// IEEE binary16 ([`F16`]: 5 exponent bits, 10 mantissa bits).
    F16,
}

impl ElementType {
    /// Both, BF16 first.
    pub const ALL: [ElementType; 2] = [ElementType::Bf16, ElementType::F16];

    /// Its name in entry points and rows (`bf16`, `f16`).
    pub const fn label(self) -> &'static str {
        match self {
            ElementType::Bf16 => "bf16",
            ElementType::F16 => "f16",
        }
    }

    /// The bits of `x` rounded to this type (to nearest, ties to even).
    pub const fn round(self, x: f32) -> u16 {
        match self {
            ElementType::Bf16 => Bf16::from_f32(x).0,
            ElementType::F16 => F16::from_f32(x).0,
        }
    }

    /// The value of `bits` of this type, exactly.
    pub const fn value(self, bits: u16) -> f32 {
        match self {
            ElementType::Bf16 => Bf16(bits).to_f32(),
            ElementType::F16 => F16(bits).to_f32(),
        }
    }
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

/// A tensor-map family's direct-store entry point, typed by the element of its C.
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
#[derive(Debug)]
pub enum Bf16Entries {
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

/// One GEMM kernel family: its element, style, B's layout, where A is multiplied from, and
/// its two entry points.
#[derive(Debug)]
pub struct Bf16Kernel {
    /// The family's name (its tensor-store entry point's).
    pub name: &'static str,
    /// The element of its A, B and C.
    pub element: ElementType,
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
    /// The style reports and plots group it under: its style's label, prefixed `f16_` for an
    /// FP16 family (so that each FP16 style is drawn beside, not merged with, its BF16 one).
    pub const fn style_label(&self) -> &'static str {
        match (self.element, self.style) {
            (ElementType::Bf16, style) => style.label(),
            (ElementType::F16, Bf16Style::WsCooperative) => "f16_ws_cooperative",
            (ElementType::F16, Bf16Style::WsPingpong) => "f16_ws_pingpong",
            (ElementType::F16, Bf16Style::Multistage) => "f16_multistage",
            (ElementType::F16, Bf16Style::CpAsync) => "f16_cp_async",
        }
    }

    /// One line on it: its style's, or for A from registers, that.
    pub const fn summary(&self) -> &'static str {
        if let ElementType::F16 = self.element {
            return "the BF16 family of its style, B layout and cluster, instantiated for FP16 A, B and C (FP32 accumulation)";
        }
        match (self.a_source, self.cluster, self.style) {
            (_, TileCluster { m: 2, n: 1 }, Bf16Style::WsPingpong) => {
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

/// One family's table row: element, style, B's layout, A's source, cluster, entry points.
macro_rules! family {
    ($e:ident, $style:ident, $b:ident, $a:ident, $kind:ident: $store:ident, $direct:ident) => {
        family!($e, $style, $b, $a, 1 x 1, $kind: $store, $direct)
    };
    ($e:ident, $style:ident, $b:ident, $a:ident, $cm:literal x $cn:literal, $kind:ident: $store:ident, $direct:ident) => {
        Bf16Kernel {
            name: $store.name(),
            element: ElementType::$e,
            style: Bf16Style::$style,
            b_layout: BLayout::$b,
            a_source: ASource::$a,
            cluster: TileCluster { m: $cm, n: $cn },
            entries: family!(@entries $e, $kind, $store, $direct),
        }
    };
    (@entries $e:ident, TensorMaps, $store:ident, $direct:ident) => {
        Bf16Entries::TensorMaps { tensor_store: $store, direct: DirectEntry::$e($direct) }
    };
    (@entries Bf16, Pointers, $store:ident, $direct:ident) => {
        Bf16Entries::Pointers { tensor_store: $store, direct: $direct }
    };
}

/// Every kernel family, BF16 and FP16, in report order (the FP16 ones after all BF16 ones).
pub static BF16_KERNELS: &[Bf16Kernel] = &[
    family!(Bf16, WsCooperative, NK, SharedMemory, TensorMaps: bf16_gemm_ws_cooperative, bf16_gemm_ws_cooperative_direct),
    family!(Bf16, WsCooperative, KN, SharedMemory, TensorMaps: bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct),
    family!(Bf16, WsCooperative, NK, Registers, TensorMaps: bf16_gemm_ws_cooperative_rs, bf16_gemm_ws_cooperative_rs_direct),
    family!(Bf16, WsCooperative, NK, SharedMemory, 2 x 1, TensorMaps: bf16_gemm_ws_cooperative_2x1, bf16_gemm_ws_cooperative_2x1_direct),
    family!(Bf16, WsCooperative, NK, SharedMemory, 1 x 2, TensorMaps: bf16_gemm_ws_cooperative_1x2, bf16_gemm_ws_cooperative_1x2_direct),
    family!(Bf16, WsPingpong, NK, SharedMemory, TensorMaps: bf16_gemm_ws_pingpong, bf16_gemm_ws_pingpong_direct),
    family!(Bf16, WsPingpong, KN, SharedMemory, TensorMaps: bf16_gemm_ws_pingpong_b_kn, bf16_gemm_ws_pingpong_b_kn_direct),
    family!(Bf16, WsPingpong, NK, SharedMemory, 2 x 1, TensorMaps: bf16_gemm_ws_pingpong_2x1, bf16_gemm_ws_pingpong_2x1_direct),
    family!(Bf16, Multistage, NK, SharedMemory, TensorMaps: bf16_gemm_multistage, bf16_gemm_multistage_direct),
    family!(Bf16, Multistage, KN, SharedMemory, TensorMaps: bf16_gemm_multistage_b_kn, bf16_gemm_multistage_b_kn_direct),
    family!(Bf16, CpAsync, NK, SharedMemory, Pointers: bf16_gemm_cp_async, bf16_gemm_cp_async_direct),
    family!(F16, WsCooperative, NK, SharedMemory, TensorMaps: f16_gemm_ws_cooperative, f16_gemm_ws_cooperative_direct),
    family!(F16, WsPingpong, NK, SharedMemory, TensorMaps: f16_gemm_ws_pingpong, f16_gemm_ws_pingpong_direct),
];

gpu::kernel! {
    /// The reference: `C = A B^T` accumulated in `f64` from the BF16 inputs, one thread per
    /// element, to an `m x n` array of `f64`.
    ///
    /// # Safety
    /// 1-D grid covering `m * n` threads in blocks of [`HELPER_THREADS`]; `a` holds `m * k`,
    /// `b` `n * k` elements, `c` `m * n` doubles.
    pub fn bf16_gemm_reference(a: *const Bf16, b: *const Bf16, c: *mut f64, m: u32, n: u32, k: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::reference(a, b, c, m, n, k) }
    }
}

gpu::kernel! {
    /// As [`bf16_gemm_reference`], from FP16 inputs.
    ///
    /// # Safety
    /// As [`bf16_gemm_reference`].
    pub fn f16_gemm_reference(a: *const F16, b: *const F16, c: *mut f64, m: u32, n: u32, k: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::reference(a, b, c, m, n, k) }
    }
}

gpu::kernel! {
    /// BF16 to f32, exactly, except that the poison [`C_POISON`] becomes `harness`'s f32
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
    /// As [`bf16_widen`], from FP16 (exact too: every binary16 value, subnormals included, is
    /// an f32).
    ///
    /// # Safety
    /// As [`bf16_widen`].
    pub fn f16_widen(src: *const F16, dst: *mut f32, len: u64, poison: u32)
        [max_threads = HELPER_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { helpers::widen(src, dst, len, poison) }
    }
}

gpu::kernel! {
    /// Copies the `a_rows` rows of `a_src` and the `b_rows` rows of `b_src`, each of `k` 16-bit
    /// elements (packed; their bits, so BF16 and FP16 alike), into rows of `kp` (a multiple of
    /// 8, at least `k`) of `a_dst` and `b_dst`, zeros past `k`: what a tensor map can describe
    /// when `k` is not a multiple of 8. Both operands in one launch (a second launch cost its
    /// own ramp and tail: docs/results.md); `b_rows = 0` pads `a` alone. One warp per row,
    /// grid-stride over the rows of both; each lane one 16-byte output chunk at a time (two
    /// 16-byte loads, one store), no division.
    ///
    /// # Safety
    /// Any 1-D grid of [`HELPER_THREADS`]-thread blocks; `a_src` holds `a_rows * k` and
    /// `a_dst` `a_rows * kp` elements, `b_src` and `b_dst` likewise with `b_rows`, all 16-byte
    /// aligned; `k <= kp`, `kp % 8 == 0`.
    pub fn bf16_pad_rows(
        a_src: *const u16,
        a_dst: *mut u16,
        a_rows: u32,
        b_src: *const u16,
        b_dst: *mut u16,
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

/// The bits C is poisoned with before a checked launch, of either element: `0xFFFF`, a NaN in
/// BF16 (exponent all ones, mantissa `0x7F`) and in FP16 (exponent `0x1F`, mantissa `0x3FF`)
/// alike, that no kernel writes: the inputs are finite and small (the host's module docs), so
/// every accumulator and every element of C rounded from it is finite.
pub const C_POISON: u16 = 0xFFFF;
