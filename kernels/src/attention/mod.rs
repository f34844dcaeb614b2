//! Fused attention forward on Hopper's tensor cores (sm_90a), FlashAttention-3's design on the
//! library: `O = softmax(scale Q K^T + mask) V` and the row log-sum-exp, Q `(batch, seqlen_q,
//! heads_q, d)`, K and V `(batch, seqlen_kv, heads_kv, d)`, O like Q, all row-major BF16 or
//! FP16 ([`gpu::wgmma::SixteenBit`]), FP32 softmax and accumulation; `d` 64, 128 or 256; no
//! mask or causal (aligned to the bottom right when `seqlen_q != seqlen_kv`); grouped-query
//! heads (`heads_q` a multiple of `heads_kv`); any sequence lengths; and a KV cache of
//! `seqlen_kv` rows per sequence of which each sequence attends to its own number
//! ([`Attention::forward_cache`]: one int32 length per sequence on the device, read by each
//! tile before it walks its keys).
//!
//! A block owns a tile of `64 * consumers` query rows of one head at a time (persistent: a
//! grid of at most one block per SM walks the tiles, the longest causal ones first) and walks
//! that head's keys in blocks of `bn`, from the last block back:
//! - a producer warp (its warpgroup's registers given to the consumers with `setmaxnreg`)
//!   loads the tile's Q once and each block of K and of V through two stage pipelines, by
//!   tensor copies of the 4-D tensors (zero fill past a sequence's end: no row of another
//!   sequence or head is read);
//! - each consumer warpgroup multiplies its 64 rows: `S = Q K^T` (`wgmma`, A and B from shared
//!   memory), the online softmax on the score tile in registers ([`gpu::wgmma`]'s tile verbs:
//!   mask, row max, `exp2` with the scale folded in, row sum, rescale of O), P rounded in
//!   registers and fed back as the A operand of `O += P V` (`wgmma` from registers, V read
//!   MN-major);
//! - inside a warpgroup, the next block's `Q K^T` is issued together with this block's `P V`,
//!   so the softmax of one runs while the other multiplies (`overlap`); between the consumer
//!   warpgroups (two, or three at `d = 64`), ordered barriers let one issue while the others
//!   do their softmax (`pingpong`: the named-barrier turns of `gpu::collective::turns`);
//! - the epilogue divides O by the row sums, stages it apart from Q where it fits (in rounds
//!   of 64-column boxes at `d = 256`; else in Q's buffer), swizzled as the loads are, and
//!   writes it with tensor stores (clipped at the sequence's end); the log-sum-exp goes
//!   straight from registers;
//! - the ablation's `cp.async` kernel copies Q, K and V with the producer warpgroup's 128
//!   threads instead of TMA (`loads`);
//! - the decode kernels ([`ATTENTION_DECODE_KERNELS`]) walk otherwise, for few query rows: a
//!   tile packs the query heads that share a KV head (`pack_gqa` heads of `64 / pack_gqa`
//!   queries, Q's and O's boxes shaped so), so a KV head is read once per tile, not once per
//!   query head; and each tile's keys are split into `splits` parts walked by different
//!   blocks, which write FP32 parts that `attention_combine_*` merges by their log-sum-exps
//!   ([`WalkPlan`] chooses both).
//!
//! [`ATTENTION_KERNELS`] lists every kernel; its table ([`gpu::kernel_table!`], one line per
//! kernel) declares each once, for the device and the host. [`Attention`] is the host API.

mod combine;
pub use combine::{
    COMBINE_THREADS, CombineArgs, CombineStrides, attention_combine_bf16, attention_combine_f16,
};
#[cfg(target_arch = "nvptx64")]
mod kernels;
#[cfg(target_arch = "nvptx64")]
mod loads;

#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;
#[cfg(not(target_arch = "nvptx64"))]
mod layout;
#[cfg(not(target_arch = "nvptx64"))]
pub use layout::{AttentionLayout, RowStrides};
#[cfg(not(target_arch = "nvptx64"))]
mod decode;
#[cfg(not(target_arch = "nvptx64"))]
pub use decode::{DecodeEntry, ResolvedAttention};
#[cfg(not(target_arch = "nvptx64"))]
mod plan;
#[cfg(not(target_arch = "nvptx64"))]
pub use plan::{MAX_SPLITS, MIN_BLOCKS_PER_SPLIT, WalkPlan};
#[cfg(not(target_arch = "nvptx64"))]
mod shape;
#[cfg(not(target_arch = "nvptx64"))]
pub use shape::AttentionShape;

use crate::gemm16::ElementType;
use gpu::layout::{Mbarrier, SharedLayout, SharedRegion};
use gpu::tensor_map::TensorMap;
// The elements are named by the table's device instantiations only.
use gpu::wgmma::WARPGROUP_THREADS;
#[allow(unused_imports)]
use gpu::wgmma::{Bf16, F16};

/// Query rows per consumer warpgroup (one m64 `wgmma` row block).
pub const ROWS_PER_CONSUMER: u32 = 64;

/// The problem as the kernels take it, by value: sizes, the softmax scale and the mask.
///
/// ```
/// use gpu_kernels::attention::AttentionShape;
/// let shape = AttentionShape {
///     batch: 1, seqlen_q: 64, seqlen_kv: 64, heads_q: 4, heads_kv: 4, head_dim: 64,
///     causal: true, scale: Some(0.5),
/// };
/// let args = shape.args();
/// assert_eq!((args.causal, args.heads_q), (1, 4));
/// assert_eq!(args.scale_log2, 0.5 * std::f32::consts::LOG2_E);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionArgs {
    /// Sequences.
    pub batch: u32,
    /// Query rows per sequence.
    pub seqlen_q: u32,
    /// Key (and value) rows per sequence.
    pub seqlen_kv: u32,
    /// Query (and output) heads.
    pub heads_q: u32,
    /// Key and value heads (`heads_q` a multiple of it).
    pub heads_kv: u32,
    /// 1: causal, aligned to the bottom right (query `i` sees keys `j <= i + seqlen_kv -
    /// seqlen_q`); 0: no mask.
    pub causal: u32,
    /// The softmax scale times `log2(e)`: the kernels exponentiate with `exp2`.
    pub scale_log2: f32,
}

/// Where Q, K and V start (device addresses): the kernel that copies them with `cp.async`
/// reads them directly (the others through the tensor maps, which hold the same addresses);
/// and where each sequence's number of keys is, for a KV cache.
///
/// ```
/// use gpu_kernels::attention::AttentionSources;
/// let sources = AttentionSources {
///     q: 0x7f00_0000_0000, k: 0x7f00_0010_0000, v: 0x7f00_0020_0000, kv_lengths: 0,
/// };
/// assert_eq!(std::mem::size_of_val(&sources), 32);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionSources {
    /// Q's first element.
    pub q: u64,
    /// K's first element.
    pub k: u64,
    /// V's first element.
    pub v: u64,
    /// 0: every sequence has `seqlen_kv` keys. Else `batch` int32 lengths (a KV cache's
    /// `cache_seqlens`): sequence `b` has its first `kv_lengths[b]` rows of K and V as keys
    /// (clamped to `0..=seqlen_kv`, the cache's rows), the causal mask aligned to its end.
    pub kv_lengths: u64,
}

/// How a decode kernel ([`ATTENTION_DECODE_KERNELS`]) walks, its last parameter: query heads
/// packed per tile and keys split over blocks ([`WalkPlan`] chooses both), and where split
/// parts go. The prefill kernels have no such parameter (their walk is `DecodeWalk::NONE`'s,
/// compiled in).
///
/// ```
/// use gpu_kernels::attention::DecodeWalk;
/// assert_eq!(std::mem::size_of::<DecodeWalk>(), 24);
/// assert_eq!((DecodeWalk::NONE.pack_gqa, DecodeWalk::NONE.splits), (1, 1));
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeWalk {
    /// Query heads packed into one tile (GQA packing): a tile's row `r` is query
    /// `r / pack_gqa` of head `first + r % pack_gqa`. 1, or a divisor of both
    /// `heads_q / heads_kv` and 64 (Q's and O's boxes are `(64, pack_gqa, 64 / pack_gqa, 1)`).
    pub pack_gqa: u32,
    /// Parts each tile's keys are split into (split-KV), at least 1: part `j` of a tile of
    /// `n` blocks of keys walks blocks `j * ceil(n / splits)..` up to the next part's first.
    /// Above 1, every part writes its O (divided by its own sum) and log-sum-exp as FP32 to
    /// `o_partial` and `lse_partial` instead of O and the log-sum-exp, for
    /// `attention_combine_*` to merge.
    pub splits: u32,
    /// With `splits` above 1: `splits * batch * seqlen_q * heads_q` rows of `d` FP32, 16-byte
    /// aligned; part `j`'s O of query row `(b, s, h)` at row `((j * batch + b) * seqlen_q +
    /// s) * heads_q + h` (O's own order per part). Else unused.
    pub o_partial: u64,
    /// With `splits` above 1: the parts' log-sum-exps, one FP32 per row of `o_partial`, in
    /// its order. Else unused.
    pub lse_partial: u64,
}

impl DecodeWalk {
    /// No packing, no split: the prefill kernels' walk.
    pub const NONE: DecodeWalk = DecodeWalk {
        pack_gqa: 1,
        splits: 1,
        o_partial: 0,
        lse_partial: 0,
    };
}

/// A kernel's block geometry: head dimension, keys per block, stages of the K and V
/// pipelines, consumer warpgroups; and the dynamic shared memory they make.
///
/// ```
/// use gpu_kernels::attention::{AttentionKernel, MAX_SHARED_BYTES};
/// use gpu_kernels::ElementType;
/// let g = AttentionKernel::best(ElementType::Bf16, 128).expect("built").geometry;
/// assert_eq!(g.head_dim, 128);
/// assert_eq!(g.threads(), 128 * (1 + g.consumers));
/// assert!(g.shared().bytes <= MAX_SHARED_BYTES);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttentionGeometry {
    /// The head dimension `d`: 64, 128 or 256.
    pub head_dim: u32,
    /// Keys per block (`S`'s columns: the `wgmma` N of `Q K^T`, the K of `P V`).
    pub block_n: u32,
    /// Stages of each of the K and V pipelines.
    pub stages: u32,
    /// Consumer warpgroups, 64 query rows each.
    pub consumers: u32,
}

impl AttentionGeometry {
    /// Query rows per tile.
    pub const fn block_m(self) -> u32 {
        ROWS_PER_CONSUMER * self.consumers
    }

    /// Threads per block: the producer warpgroup and the consumers.
    pub const fn threads(self) -> u32 {
        WARPGROUP_THREADS * (1 + self.consumers)
    }

    /// 64-element (128-byte) column boxes of the head dimension.
    pub const fn d_boxes(self) -> u32 {
        self.head_dim / 64
    }

    /// Bytes of the Q tile (`block_m x d`, as `d / 64` swizzled boxes of `block_m` rows).
    pub const fn q_bytes(self) -> u32 {
        self.block_m() * self.head_dim * 2
    }

    /// Bytes of one K or V stage (`block_n x d`).
    pub const fn kv_stage_bytes(self) -> u32 {
        self.block_n * self.head_dim * 2
    }

    /// The tensor map box of Q (innermost first: d, heads, seqlen, batch): 64 columns of the
    /// tile's rows, `pack_gqa` heads (1 unpacked) by `block_m / pack_gqa` queries.
    pub const fn q_box(self, pack_gqa: u32) -> [u32; 4] {
        [64, pack_gqa, self.block_m() / pack_gqa, 1]
    }

    /// The box of K: one 64-column box of a block of keys.
    pub const fn k_box(self) -> [u32; 4] {
        [64, 1, self.block_n, 1]
    }

    /// The box of V: 64 columns of 64 keys (one box of a `SwizzledMnMajor` k-tile).
    pub const fn v_box(self) -> [u32; 4] {
        [64, 1, 64, 1]
    }

    /// The box of O: 64 columns of one consumer's 64 rows (packed as Q's).
    pub const fn o_box(self, pack_gqa: u32) -> [u32; 4] {
        [64, pack_gqa, ROWS_PER_CONSUMER / pack_gqa, 1]
    }

    /// 64-column boxes of O that the staging apart from Q holds (each for every consumer's
    /// rows), so that the next tile's Q loads while this one's last multiplies and its
    /// stores run: all `d / 64` where they fit beside Q, else the most that do (O then goes
    /// out in rounds of that many boxes, each waiting for the last round's stores to have
    /// read the staging), 0 where none fits (O is staged in Q's buffer).
    pub const fn o_staging_boxes(self) -> u32 {
        let mut boxes = self.d_boxes();
        while boxes > 0 {
            if self.d_boxes().is_multiple_of(boxes) && self.carve(boxes).bytes <= MAX_SHARED_BYTES {
                return boxes;
            }
            boxes -= 1;
        }
        0
    }

    /// Whether O is staged apart from Q ([`AttentionGeometry::o_staging_boxes`]).
    pub const fn separate_o(self) -> bool {
        self.o_staging_boxes() > 0
    }

    /// The block's dynamic shared memory, carved once ([`AttentionShared`]).
    pub const fn shared(self) -> AttentionShared {
        self.carve(self.o_staging_boxes())
    }

    /// The carving with `o_boxes` boxes of O staging apart from Q (0: in Q's buffer).
    const fn carve(self, o_boxes: u32) -> AttentionShared {
        let layout = SharedLayout::EMPTY;
        // 128-byte swizzled tiles: 1 KiB aligned.
        let (layout, q) = layout.region::<u8>(1, self.q_bytes(), 1024);
        let (layout, k) = layout.region::<u8>(self.stages, self.kv_stage_bytes(), 1024);
        let (layout, v) = layout.region::<u8>(self.stages, self.kv_stage_bytes(), 1024);
        let (layout, o) = if o_boxes > 0 {
            layout.region::<u8>(1, o_boxes * self.block_m() * 128, 1024)
        } else {
            (layout, q)
        };
        let (layout, q_barriers) = layout.array::<Mbarrier>(2);
        let (layout, k_barriers) = layout.array::<Mbarrier>(2 * self.stages);
        let (layout, v_barriers) = layout.array::<Mbarrier>(2 * self.stages);
        AttentionShared {
            q,
            k,
            v,
            o,
            q_barriers,
            k_barriers,
            v_barriers,
            bytes: layout.bytes(),
        }
    }

    /// Query tiles of one head of one sequence.
    pub const fn m_blocks(self, seqlen_q: u32) -> u32 {
        seqlen_q.div_ceil(self.block_m())
    }

    /// The tiles of the walk of `args` by `walk`: query blocks of `seqlen_q * pack_gqa`
    /// packed rows, of `heads_q / pack_gqa` head groups, of each sequence, of each split.
    /// Host and device count them alike; at least 1 for sizes of at least 1 (the launch
    /// contract).
    pub const fn tiles(self, args: &AttentionArgs, walk: &DecodeWalk) -> u64 {
        let pack = if walk.pack_gqa == 0 { 1 } else { walk.pack_gqa };
        // In 64 bits: the packed rows may pass 2^32 (a plan's check refuses them).
        let rows = args.seqlen_q as u64 * pack as u64;
        rows.div_ceil(self.block_m() as u64)
            * (args.heads_q / pack) as u64
            * args.batch as u64
            * walk.splits as u64
    }
}

/// A geometry's dynamic shared memory ([`AttentionGeometry::shared`]).
///
/// ```
/// use gpu_kernels::attention::AttentionKernel;
/// use gpu_kernels::ElementType;
/// let shared = AttentionKernel::best(ElementType::Bf16, 64).expect("built").geometry.shared();
/// // Regions in order, none past the total.
/// assert!(shared.q.offset() < shared.k.offset() && shared.k.offset() < shared.v.offset());
/// assert!(shared.v_barriers.offset() < shared.bytes);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct AttentionShared {
    /// The Q tile.
    pub q: SharedRegion<u8>,
    /// The O staging, laid out as Q (each consumer's rows of each 64-column box): apart from
    /// Q, [`AttentionGeometry::o_staging_boxes`] boxes, where they fit, else Q's buffer
    /// itself.
    pub o: SharedRegion<u8>,
    /// The K stages.
    pub k: SharedRegion<u8>,
    /// The V stages.
    pub v: SharedRegion<u8>,
    /// Q's one-stage pipeline (`full`, `empty`).
    pub q_barriers: SharedRegion<Mbarrier>,
    /// The K pipeline's mbarriers.
    pub k_barriers: SharedRegion<Mbarrier>,
    /// The V pipeline's mbarriers.
    pub v_barriers: SharedRegion<Mbarrier>,
    /// The dynamic shared memory to launch with.
    pub bytes: u32,
}

/// The largest dynamic shared memory a block may have on sm_90 (227 KiB).
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;

/// The parameters of every attention kernel: tensor maps of Q, K, V (loads, zero fill) and O
/// (stores), 128-byte swizzle, dimensions innermost first `(d, heads, seqlen, batch)`, boxes
/// [`AttentionGeometry::q_box`], `k_box`, `v_box`, `o_box`; the log-sum-exp, `batch x heads_q
/// x seqlen_q` FP32; the problem; the tensors' addresses (for `cp.async`).
///
/// ```
/// use gpu_kernels::attention::{ATTENTION_KERNELS, AttentionParams};
/// // Every kernel of the table takes them.
/// let entries: Vec<gpu::kernel::EntryPoint<AttentionParams>> =
///     ATTENTION_KERNELS.iter().map(|k| k.entry).collect();
/// assert_eq!(entries.len(), ATTENTION_KERNELS.len());
/// ```
pub type AttentionParams = (
    TensorMap,
    TensorMap,
    TensorMap,
    TensorMap,
    *mut f32,
    AttentionArgs,
    AttentionSources,
);

/// The parameters of every decode kernel ([`ATTENTION_DECODE_KERNELS`]): [`AttentionParams`]
/// and the walk ([`DecodeWalk`]; Q's and O's boxes [`AttentionGeometry::q_box`] and `o_box`
/// of its `pack_gqa`).
pub type DecodeParams = (
    TensorMap,
    TensorMap,
    TensorMap,
    TensorMap,
    *mut f32,
    AttentionArgs,
    AttentionSources,
    DecodeWalk,
);

/// What a kernel does beyond the plain wgmma + TMA kernel: the techniques the ablation
/// switches off one at a time.
///
/// ```
/// use gpu_kernels::attention::{ATTENTION_KERNELS, LoadKind};
/// // The ablation: kernels that leave one technique out, beside those with every one.
/// let without_pingpong = ATTENTION_KERNELS.iter().filter(|k| !k.techniques.pingpong).count();
/// let with_cp_async = ATTENTION_KERNELS.iter().filter(|k| k.techniques.loads == LoadKind::CpAsync);
/// assert!(without_pingpong > 0 && with_cp_async.count() > 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Techniques {
    /// The consumer warpgroups take turns issuing their multiplies (ordered barriers, round a
    /// ring), so one's softmax runs while another's multiplies do.
    pub pingpong: bool,
    /// A warpgroup issues the next block's `Q K^T` with this block's `P V` and does the
    /// softmax while the latter runs.
    pub overlap: bool,
    /// How Q, K and V reach shared memory.
    pub loads: LoadKind,
}

/// How the producer warpgroup fills the Q, K and V stages.
///
/// ```
/// use gpu_kernels::attention::{AttentionKernel, LoadKind};
/// use gpu_kernels::ElementType;
/// let best = AttentionKernel::best(ElementType::Bf16, 256).expect("built");
/// assert_eq!(best.techniques.loads, LoadKind::Tma);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoadKind {
    /// Tensor copies (TMA) issued by one thread; their bytes complete the stage.
    Tma,
    /// `cp.async` of 16 bytes by each of the warpgroup's 128 threads, into the same swizzled
    /// layout; each thread's copies arrive on the stage when they land.
    CpAsync,
}

/// One kernel: its entry point, element, geometry and techniques. `P`: its parameters,
/// [`AttentionParams`] ([`ATTENTION_KERNELS`]) or [`DecodeParams`]
/// ([`ATTENTION_DECODE_KERNELS`]).
///
/// ```
/// use gpu_kernels::attention::{AttentionKernel, AttentionShape};
/// use gpu_kernels::ElementType;
/// let shape = AttentionShape {
///     batch: 8, seqlen_q: 512, seqlen_kv: 512, heads_q: 16, heads_kv: 16, head_dim: 64,
///     causal: true, scale: None,
/// };
/// // Causal at 512 query rows: the two-consumer (128-row) tiles measured faster.
/// let kernel = AttentionKernel::for_shape(ElementType::Bf16, &shape).expect("built");
/// assert_eq!(kernel.geometry.block_m(), 128);
/// assert_eq!(kernel.entry.name(), kernel.name);
/// ```
pub struct AttentionKernel<P: 'static = AttentionParams> {
    /// The entry point's name (the report's row).
    pub name: &'static str,
    /// Q, K, V and O's element.
    pub element: ElementType,
    /// Its geometry.
    pub geometry: AttentionGeometry,
    /// What it overlaps.
    pub techniques: Techniques,
    /// The entry point.
    pub entry: gpu::kernel::EntryPoint<P>,
}

// By hand: a derive would ask `P: Debug` of the parameter tuple.
impl<P> core::fmt::Debug for AttentionKernel<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AttentionKernel")
            .field("name", &self.name)
            .field("element", &self.element)
            .field("geometry", &self.geometry)
            .field("techniques", &self.techniques)
            .field("entry", &self.entry)
            .finish()
    }
}

impl AttentionKernel {
    /// The kernel of this table for `element` and head dimension `d` with every technique
    /// (what [`Attention`] runs), if there is one: the first in table order (variants that
    /// leave nothing out but differ in geometry follow it).
    pub fn best(element: ElementType, d: u32) -> Option<&'static AttentionKernel> {
        ATTENTION_KERNELS
            .iter()
            .find(|k| k.element == element && k.geometry.head_dim == d && k.is_best_kind())
    }

    /// Whether it leaves no technique out: ping-pong, overlap and TMA loads.
    pub(crate) fn is_best_kind(&self) -> bool {
        self.techniques.pingpong
            && self.techniques.overlap
            && self.techniques.loads == LoadKind::Tma
    }
}

/// A line of [`ATTENTION_KERNELS`] ([`gpu::kernel_table!`]), named fields — `element` of Q, K,
/// V and O, `d` (head dimension), `block_n` (keys per block), `stages` (of K and of V),
/// `consumers` (warpgroups), `pingpong`, `overlap` and `loads` ([`Techniques`]), `decode`
/// (whether it takes a [`DecodeWalk`]: [`DecodeParams`]): `@entry`
/// declares its entry point ([`gpu::kernel!`]), `@row` is its [`AttentionKernel`].
macro_rules! attention_row {
    (@$what:ident $name:ident {
        element: $e:ident,
        d: $d:literal,
        block_n: $bn:literal,
        stages: $stages:literal,
        consumers: $consumers:literal,
        pingpong: $pingpong:literal,
        overlap: $overlap:literal,
        loads: $loads:ident,
        decode: $decode:tt
    }) => {
        attention_row! { $what $name, $e, $d, $bn, $stages, $consumers, $pingpong, $overlap, $loads, $decode }
    };
    (entry $name:ident, $e:ident, $d:literal, $bn:literal, $stages:literal, $consumers:literal,
     $pingpong:literal, $overlap:literal, $loads:ident, false) => {
        gpu::kernel! {
            /// An attention kernel of the table (its row says what it is; module docs).
            ///
            /// # Safety
            /// 1-D grid of any size; the geometry's threads and `shared().bytes` of
            /// dynamic shared memory; `q`, `k`, `v`, `o` tensor maps of Q, K, V and O as
            /// [`AttentionParams`] says, of this element, their dimensions `args`'; `lse`
            /// holds `batch * heads_q * seqlen_q` floats; every size in `args` at least 1,
            /// `heads_q` a multiple of `heads_kv`; `sources.kv_lengths` 0 or `batch` int32
            /// lengths.
            pub fn $name(q: TensorMap, k: TensorMap, v: TensorMap, o: TensorMap, lse: *mut f32, args: AttentionArgs, sources: AttentionSources)
                [max_threads = { WARPGROUP_THREADS * (1 + $consumers) }]
                [device if target_feature = "sm_90a"]
            {
                let q = gpu::tensor_map_param!(entry, 0, q);
                let k = gpu::tensor_map_param!(entry, 1, k);
                let v = gpu::tensor_map_param!(entry, 2, v);
                let o = gpu::tensor_map_param!(entry, 3, o);
                const G: AttentionGeometry = AttentionGeometry {
                    head_dim: $d,
                    block_n: $bn,
                    stages: $stages,
                    consumers: $consumers,
                };
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::attention::<$e, loads::$loads, $d, $bn, { $bn / 2 }, { $d / 2 }, { $bn / 64 }, { $bn / 64 },
                        $stages, $consumers, $pingpong, $overlap, false>(G, [q, k, v], o, lse, args, sources, DecodeWalk::NONE)
                }
            }
        }
    };
    (entry $name:ident, $e:ident, $d:literal, $bn:literal, $stages:literal, $consumers:literal,
     $pingpong:literal, $overlap:literal, $loads:ident, true) => {
        gpu::kernel! {
            /// A decode kernel of the table (its row says what it is; module docs).
            ///
            /// # Safety
            /// 1-D grid of any size; the geometry's threads and `shared().bytes` of
            /// dynamic shared memory; `q`, `k`, `v`, `o` tensor maps of Q, K, V and O as
            /// [`AttentionParams`] says, of this element, their dimensions `args`'; `lse`
            /// holds `batch * heads_q * seqlen_q` floats; every size in `args` at least 1,
            /// `heads_q` a multiple of `heads_kv`; `sources.kv_lengths` 0 or `batch` int32
            /// lengths; `walk` as [`DecodeWalk`] says, Q's and O's boxes of its
            /// `pack_gqa`, its parts (split) of the sizes it gives.
            pub fn $name(q: TensorMap, k: TensorMap, v: TensorMap, o: TensorMap, lse: *mut f32, args: AttentionArgs, sources: AttentionSources, walk: DecodeWalk)
                [max_threads = { WARPGROUP_THREADS * (1 + $consumers) }]
                [device if target_feature = "sm_90a"]
            {
                let q = gpu::tensor_map_param!(entry, 0, q);
                let k = gpu::tensor_map_param!(entry, 1, k);
                let v = gpu::tensor_map_param!(entry, 2, v);
                let o = gpu::tensor_map_param!(entry, 3, o);
                const G: AttentionGeometry = AttentionGeometry {
                    head_dim: $d,
                    block_n: $bn,
                    stages: $stages,
                    consumers: $consumers,
                };
                // SAFETY: forwarded launch contract.
                unsafe {
                    kernels::attention::<$e, loads::$loads, $d, $bn, { $bn / 2 }, { $d / 2 }, { $bn / 64 }, { $bn / 64 },
                        $stages, $consumers, $pingpong, $overlap, true>(G, [q, k, v], o, lse, args, sources, walk)
                }
            }
        }
    };
    (row $name:ident, $e:ident, $d:literal, $bn:literal, $stages:literal, $consumers:literal,
     $pingpong:literal, $overlap:literal, $loads:ident, $decode:tt) => {
        AttentionKernel {
            name: $name.name(),
            element: ElementType::$e,
            geometry: AttentionGeometry {
                head_dim: $d,
                block_n: $bn,
                stages: $stages,
                consumers: $consumers,
            },
            techniques: Techniques { pingpong: $pingpong, overlap: $overlap, loads: LoadKind::$loads },
            entry: $name,
        }
    };
}

gpu::kernel_table! {
    /// Every attention kernel, in report order.
    pub static ATTENTION_KERNELS: [AttentionKernel] by attention_row;
    attention_bf16_d64 { element: Bf16, d: 64, block_n: 128, stages: 3, consumers: 3, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_bf16_d128 { element: Bf16, d: 128, block_n: 128, stages: 2, consumers: 2, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_bf16_d256 { element: Bf16, d: 256, block_n: 64, stages: 2, consumers: 2, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_f16_d64 { element: F16, d: 64, block_n: 128, stages: 3, consumers: 3, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_f16_d128 { element: F16, d: 128, block_n: 128, stages: 2, consumers: 2, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_f16_d256 { element: F16, d: 256, block_n: 64, stages: 2, consumers: 2, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_bf16_d128_no_pingpong { element: Bf16, d: 128, block_n: 128, stages: 2, consumers: 2, pingpong: false, overlap: true, loads: Tma, decode: false }
    attention_bf16_d128_no_overlap { element: Bf16, d: 128, block_n: 128, stages: 2, consumers: 2, pingpong: true, overlap: false, loads: Tma, decode: false }
    attention_bf16_d128_cp_async { element: Bf16, d: 128, block_n: 128, stages: 2, consumers: 2, pingpong: true, overlap: true, loads: CpAsync, decode: false }
    attention_bf16_d64_two_consumers { element: Bf16, d: 64, block_n: 128, stages: 3, consumers: 2, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_f16_d64_two_consumers { element: F16, d: 64, block_n: 128, stages: 3, consumers: 2, pingpong: true, overlap: true, loads: Tma, decode: false }
    attention_bf16_d128_one_consumer { element: Bf16, d: 128, block_n: 128, stages: 2, consumers: 1, pingpong: false, overlap: true, loads: Tma, decode: false }
}

gpu::kernel_table! {
    /// The decode kernels: one consumer warpgroup (64-row tiles), tensor copies, the walk that
    /// packs query heads and splits keys ([`DecodeWalk`], chosen by [`WalkPlan`]). Written
    /// 2026-12-07 with no GPU lent: not yet run on one, so [`Attention`]'s dispatcher does
    /// not take them (a caller runs them through [`Attention::resolve_decode`]), and no
    /// workload measures them yet.
    pub static ATTENTION_DECODE_KERNELS: [AttentionKernel<DecodeParams>] by attention_row;
    attention_bf16_d64_decode { element: Bf16, d: 64, block_n: 128, stages: 3, consumers: 1, pingpong: false, overlap: true, loads: Tma, decode: true }
    attention_bf16_d128_decode { element: Bf16, d: 128, block_n: 128, stages: 2, consumers: 1, pingpong: false, overlap: true, loads: Tma, decode: true }
    attention_bf16_d256_decode { element: Bf16, d: 256, block_n: 64, stages: 2, consumers: 1, pingpong: false, overlap: true, loads: Tma, decode: true }
    attention_f16_d64_decode { element: F16, d: 64, block_n: 128, stages: 3, consumers: 1, pingpong: false, overlap: true, loads: Tma, decode: true }
    attention_f16_d128_decode { element: F16, d: 128, block_n: 128, stages: 2, consumers: 1, pingpong: false, overlap: true, loads: Tma, decode: true }
    attention_f16_d256_decode { element: F16, d: 256, block_n: 64, stages: 2, consumers: 1, pingpong: false, overlap: true, loads: Tma, decode: true }
}
