//! The attention kernels' device code (sm_90a): one body for every element, head dimension,
//! geometry and technique (the module docs of [`super`] say what it does).

#![cfg(target_feature = "sm_90a")]

use super::loads::{Loads, Operand};
use super::{AttentionArgs, AttentionGeometry, AttentionSources, DecodeWalk, ROWS_PER_CONSUMER};
use core::num::NonZeroU32;
use gpu::collective::tensor_core::{IssueOrder, NamedTurns, warpgroup_barrier};
use gpu::math;
use gpu::memcpy_async::bulk::store_async_tensor;
use gpu::pipeline::{GroupConsumer, HeldStage, Producer};
use gpu::ptx::{self, Shared, TensorMapRef};
use gpu::schedule::{GridStride, TileSchedule};
use gpu::wgmma::{
    AFragment, Accumulator, Issued, SixteenBit, SwizzledKMajor, SwizzledMnMajor, TiedAccumulator,
    WARPGROUP_THREADS, WarpgroupMma, WarpgroupMmaRegs, Wgmma, x4_lane_row,
};

/// `ln 2`: the log-sum-exp is kept in base 2 and written in base e.
const LN_2: f32 = core::f32::consts::LN_2;

/// One tile of the walk: packed query rows `m0..m0 + block_m` (row `r` is query `r / pack`
/// of head `head + r % pack`; `pack` 1 unpacked) of sequence `batch`, its keys (`seqlen_kv`:
/// the sequence's own length where the lengths are given), and the blocks of keys it reads
/// (`first_block..key_blocks`, walked from the last: all of them, or its split's part).
#[derive(Clone, Copy)]
struct Tile {
    m0: u32,
    head: u32,
    batch: u32,
    split: u32,
    seqlen_kv: u32,
    first_block: u32,
    key_blocks: u32,
}

/// Sequence `batch`'s keys: `args.seqlen_kv`, or where `sources.kv_lengths` gives one length
/// per sequence (a KV cache of `args.seqlen_kv` rows), that length clamped to `0..=seqlen_kv`.
#[inline(always)]
fn seqlen_kv_of(args: &AttentionArgs, sources: &AttentionSources, batch: u32) -> u32 {
    if sources.kv_lengths == 0 {
        args.seqlen_kv
    } else {
        // SAFETY: `batch < args.batch` int32 lengths at `kv_lengths` (launch contract).
        let length = unsafe {
            (sources.kv_lengths as *const i32)
                .add(batch as usize)
                .read()
        };
        // (`clamp` would panic on bounds it cannot see ordered.)
        (length.max(0) as u32).min(args.seqlen_kv)
    }
}

/// Tile `index` of the walk, the splits of one tile's keys adjacent. No mask: head-major
/// (the tiles of one head, whose K and V they share, run together and keep them in L2).
/// Causal: the query blocks with the most keys first, across all heads and sequences
/// (block-major, from the last query block), so that each round of the persistent walk (one
/// tile per block) takes tiles of about one length and the short ones fill the end.
/// Head-major with each head's blocks reversed measured 73% of cuDNN at 16k tokens in one
/// sequence: with 128 query blocks per head over 132 blocks, block `b` took blocks `b, b + 4,
/// ...` of the heads in turn, the first 28 blocks the longest ones.
#[inline(always)]
fn tile_of<const DECODE: bool>(
    g: AttentionGeometry,
    args: &AttentionArgs,
    sources: &AttentionSources,
    walk: &DecodeWalk,
    index: u32,
) -> Tile {
    // At least 1 (the launch contract): the divisions need no check.
    let (pack, splits) = walk_of::<DECODE>(walk);
    let (split, index) = (index % splits, index / splits);
    let rows = args.seqlen_q * pack.get();
    let m_blocks = nonzero(g.m_blocks(rows));
    let causal = args.causal != 0;
    let (mb, group_of_batch) = if causal {
        // (`heads_q / pack`, not `groups`: with `pack` 1 it folds to the prefill's product.)
        let groups_of_batch = nonzero(args.heads_q / pack * args.batch);
        (
            m_blocks.get() - 1 - index / groups_of_batch,
            index % groups_of_batch,
        )
    } else {
        (index % m_blocks, index / m_blocks)
    };
    let m0 = mb * g.block_m();
    let groups = nonzero(args.heads_q / pack);
    let batch = group_of_batch / groups;
    let seqlen_kv = seqlen_kv_of(args, sources, batch);
    let all = seqlen_kv.div_ceil(g.block_n);
    let key_blocks = if causal {
        // The tile's last query sees keys up to `last + seqlen_kv - seqlen_q`.
        let last = ((m0 + g.block_m()).min(rows) - 1) / pack;
        let max_key = last as i32 + seqlen_kv as i32 - args.seqlen_q as i32;
        if max_key < 0 {
            0
        } else {
            (max_key as u32 / g.block_n + 1).min(all)
        }
    } else {
        all
    };
    // The split's part of the blocks, as even as whole blocks allow (empty past the end).
    let part = key_blocks.div_ceil(splits.get());
    let first_block = (split * part).min(key_blocks);
    Tile {
        m0,
        head: group_of_batch % groups * pack.get(),
        batch,
        split,
        seqlen_kv,
        first_block,
        key_blocks: (first_block + part).min(key_blocks),
    }
}

/// A row's log-sum-exp in base e from its running maximum (of unscaled scores) and sum (of
/// `2^(scale (s - max))`); -inf for a row that saw no key.
#[inline(always)]
fn log_sum_exp(max: f32, sum: f32, scale: f32) -> f32 {
    if sum > 0.0 {
        (max * scale + math::log2(sum)) * LN_2
    } else {
        f32::NEG_INFINITY
    }
}

/// Two FP32 columns of a row of O's parts, written in one 8-byte store.
#[repr(C, align(8))]
struct ColumnPair([f32; 2]);

/// The consumer's next stage, once filled, fenced for `wgmma`'s reads (the async proxy)
/// where the copies wrote it through the generic proxy (`cp.async`).
#[inline(always)]
fn wait_filled<L: Loads, C: GroupConsumer>(consumer: &mut C) -> HeldStage {
    let stage = consumer.consumer_wait_held();
    if L::GENERIC_PROXY {
        ptx::fence_proxy_async_shared();
    }
    stage
}

/// `x` as a divisor: at least 1.
#[inline(always)]
fn nonzero(x: u32) -> NonZeroU32 {
    NonZeroU32::new(x).unwrap_or(NonZeroU32::MIN)
}

/// The walk's query heads per tile and splits of the keys: `walk`'s in the decode kernels,
/// else 1 and 1 as constants, which fold away (the prefill kernels' code is unchanged: their
/// PTX fingerprints say so).
#[inline(always)]
fn walk_of<const DECODE: bool>(walk: &DecodeWalk) -> (NonZeroU32, NonZeroU32) {
    if DECODE {
        (nonzero(walk.pack_gqa), nonzero(walk.splits))
    } else {
        (NonZeroU32::MIN, NonZeroU32::MIN)
    }
}

/// The running softmax of a warpgroup's two rows per thread: the maximum score so far and the
/// sum of the exponentials (of the scores minus that maximum) so far.
#[derive(Clone, Copy)]
struct RowState {
    max: [f32; 2],
    sum: [f32; 2],
}

impl RowState {
    /// One block's step on its scores `s` (masked already): the new maximum, `s` turned into
    /// `P = 2^(s scale - max scale)`, the sum rescaled and grown; returns the factor O must be
    /// rescaled by (`2^((old max - new max) scale)`, 0 while no key was seen).
    #[inline(always)]
    fn step<const SREGS: usize>(&mut self, s: &mut Accumulator<SREGS>, scale: f32) -> [f32; 2] {
        let max = s.row_max_with(self.max);
        // A row that has seen only masked keys keeps a maximum of -inf: offset 0, so its
        // exponentials are 2^-inf = 0 rather than NaN.
        let offset = max.map(|m| {
            if m == f32::NEG_INFINITY {
                0.0
            } else {
                m * scale
            }
        });
        let alpha = [0, 1].map(|h| math::exp2(self.max[h] * scale - offset[h]));
        s.exp2_scaled(scale, offset);
        let sum = s.row_sum();
        self.sum = [0, 1].map(|h| self.sum[h] * alpha[h] + sum[h]);
        self.max = max;
        alpha
    }
}

/// A warpgroup's 64 rows of the Q tile: its part of the first 64-column box at `at`, box `j`
/// `box_stride` bytes on, `boxes` of them (`d / 64`).
#[derive(Clone, Copy)]
struct QRows {
    at: Shared<u8>,
    box_stride: u32,
    boxes: u32,
}

/// Issues `S = Q K^T` for one block of keys: this warpgroup's rows of Q by the stage's
/// `block_n` keys (`k_stage`, `d / 64` boxes of `BN` rows), one k-tile per 64 columns of the
/// head.
///
/// # Safety
/// The whole warpgroup, converged; Q's and the stage's copies have completed (their waits
/// observed) and nothing writes them until the returned multiplies are waited for.
#[inline(always)]
unsafe fn issue_scores<'a, E, const BN: u32, const SREGS: usize>(
    s: &'a mut Accumulator<SREGS>,
    q: QRows,
    k_stage: Shared<u8>,
) -> Issued<'a, Accumulator<SREGS>, ()>
where
    E: SixteenBit,
    Accumulator<SREGS>: TiedAccumulator,
    Wgmma<E, BN>: WarpgroupMma<SwizzledKMajor<BN, E>, Acc = Accumulator<SREGS>>,
{
    let mut issued = Issued::new(s, ());
    let mut j = 0;
    while j < q.boxes {
        // SAFETY: 64 rows of a 128-byte swizzled box, 1 KiB aligned (the Q tile is, and a
        // consumer's rows start 8 KiB in), and the stage's box j; filled (contract).
        unsafe {
            let a = SwizzledKMajor::<64, E>::descriptor(q.at.add(j * q.box_stride), 0);
            let b = SwizzledKMajor::<BN, E>::descriptor(k_stage.add(j * BN * 128), 0);
            issued.mma::<Wgmma<E, BN>, _>(a, b, j > 0);
        }
        j += 1;
    }
    issued
}

/// Issues `O += P V` for one block of keys: P from registers (`p`, one fragment per 64 keys)
/// by the stage's V (`BN / 64` k-tiles of 64 keys, each `d / 64` MN-major boxes).
///
/// # Safety
/// The whole warpgroup, converged; the stage's copies have completed and nothing writes it
/// until the returned multiplies are waited for.
#[inline(always)]
unsafe fn issue_values<'a, E, const D: u32, const OREGS: usize, const PF: usize, H>(
    o: &'a mut Accumulator<OREGS>,
    p: &'a [AFragment; PF],
    held: H,
    v_stage: Shared<u8>,
) -> Issued<'a, Accumulator<OREGS>, (&'a [AFragment; PF], H)>
where
    E: SixteenBit,
    Accumulator<OREGS>: TiedAccumulator,
    Wgmma<E, D>: WarpgroupMma<SwizzledMnMajor<D, E>, Acc = Accumulator<OREGS>>
        + WarpgroupMmaRegs<SwizzledMnMajor<D, E>>,
{
    let mut issued = Issued::new(o, (p, held));
    let mut kt = 0;
    while kt < PF {
        // SAFETY: k-tile kt of the stage: `d / 64` boxes of 64 keys, 1 KiB aligned; filled
        // (contract); the fragments are held by the token until the wait.
        unsafe {
            let b = SwizzledMnMajor::<D, E>::descriptor(v_stage.add(kt as u32 * D * 128));
            issued.mma_a_regs::<Wgmma<E, D>, _>(&p[kt], b, true);
        }
        kt += 1;
    }
    issued
}

/// P for `P V`: the score tile rounded to `E`, 64 keys per fragment.
#[inline(always)]
fn to_fragments<E: SixteenBit, const SREGS: usize, const PF: usize>(
    s: &Accumulator<SREGS>,
) -> [AFragment; PF] {
    let mut p = [AFragment { regs: [0; 16] }; PF];
    let mut j = 0;
    while j < PF {
        p[j] = s.to_a_fragment::<E>(j);
        j += 1;
    }
    p
}

/// A decode tile's epilogue rows, for the thread's two rows from packed row `row`: with one
/// part per tile, the log-sum-exp of each that is a query (packed rows past `seqlen_q *
/// pack` are not; its O goes out through the staging as the prefill's does); split, the
/// part's log-sum-exp and O in FP32 instead. Returns whether the tile was a part.
///
/// # Safety
/// The launch contract ([`super::DecodeParams`]); `out` divided by the row sums.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn decode_rows<const D: u32, const OREGS: usize>(
    args: &AttentionArgs,
    decode: &DecodeWalk,
    tile: Tile,
    row: u32,
    rows: &RowState,
    out: &Accumulator<OREGS>,
    lse: *mut f32,
    scale: f32,
    pack: NonZeroU32,
    t: u32,
) -> bool {
    let split = decode.splits > 1;
    for h in 0..2 {
        let row = row + 8 * h;
        let (query, head) = (row / pack, tile.head + row % pack);
        if query >= args.seqlen_q {
            continue;
        }
        let value = log_sum_exp(rows.max[h as usize], rows.sum[h as usize], scale);
        if !split {
            if t.is_multiple_of(4) {
                let at = ((tile.batch * args.heads_q + head) as u64) * args.seqlen_q as u64
                    + query as u64;
                // SAFETY: inside the log-sum-exp's `batch * heads_q * seqlen_q` floats
                // (query < seqlen_q, head < heads_q); this thread's row alone.
                unsafe { lse.add(at as usize).write(value) };
            }
            continue;
        }
        let part_row = ((tile.split * args.batch + tile.batch) as u64 * args.seqlen_q as u64
            + query as u64)
            * args.heads_q as u64
            + head as u64;
        if t.is_multiple_of(4) {
            // SAFETY: inside the parts' `splits * batch * seqlen_q * heads_q` floats (split <
            // splits, query < seqlen_q, head < heads_q); this row's alone.
            unsafe {
                (decode.lse_partial as *mut f32)
                    .add(part_row as usize)
                    .write(value)
            };
        }
        // Columns `8 q + 2 (t % 4)` and the next of each 8: registers `4 q + 2 h` and the
        // next ([`Accumulator::position`]).
        let parts = decode.o_partial as *mut ColumnPair;
        let at = part_row as usize * (D / 2) as usize + (t % 4) as usize;
        for q in 0..OREGS / 4 {
            let r = 4 * q + 2 * h as usize;
            let pair = ColumnPair([out.regs[r], out.regs[r + 1]]);
            // SAFETY: inside row `part_row` of the parts' `d` floats per row, 8-byte aligned
            // (the buffer is, d is even); this thread's columns alone.
            unsafe { parts.add(at + 4 * q).write(pair) };
        }
    }
    split
}

/// The attention forward pass (module docs). `D`: head dimension; `BN`: keys per block;
/// `SREGS = BN / 2`, `OREGS = D / 2`, `PF = PV_GROUPS = BN / 64` (the register tiles' sizes,
/// and the commit groups of one block's `P V`);
/// `STAGES` of each of the K and V pipelines; `CONSUMERS` warpgroups of 64 query rows;
/// `PINGPONG`, `OVERLAP`: the techniques ([`super::Techniques`]); `DECODE`: the walk packs
/// `args.pack_gqa` query heads per tile and splits the keys in `args.splits` (else neither).
///
/// # Safety
/// The kernels' launch contract ([`super::AttentionParams`]), `g` the geometry these
/// parameters make, with `g.threads()` threads and `g.shared().bytes` of dynamic shared memory.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn attention<
    E,
    L: Loads,
    const D: u32,
    const BN: u32,
    const SREGS: usize,
    const OREGS: usize,
    const PF: usize,
    const PV_GROUPS: u32,
    const STAGES: usize,
    const CONSUMERS: u32,
    const PINGPONG: bool,
    const OVERLAP: bool,
    const DECODE: bool,
>(
    g: AttentionGeometry,
    maps: [TensorMapRef; 3],
    o: TensorMapRef,
    lse: *mut f32,
    args: AttentionArgs,
    sources: AttentionSources,
    decode: DecodeWalk,
) where
    E: SixteenBit,
    Accumulator<SREGS>: TiedAccumulator,
    Accumulator<OREGS>: TiedAccumulator,
    Wgmma<E, BN>: WarpgroupMma<SwizzledKMajor<BN, E>, Acc = Accumulator<SREGS>>,
    Wgmma<E, D>: WarpgroupMma<SwizzledMnMajor<D, E>, Acc = Accumulator<OREGS>>
        + WarpgroupMmaRegs<SwizzledMnMajor<D, E>>,
{
    const {
        assert!(SREGS as u32 * 2 == BN && OREGS as u32 * 2 == D && PF as u32 * 64 == BN);
        assert!(PV_GROUPS as usize == PF);
        assert!(CONSUMERS >= 1 && CONSUMERS <= 3);
        assert!(CONSUMERS >= 2 || !PINGPONG);
    };
    let thread = ptx::thread_idx_x();
    let warpgroup = thread / WARPGROUP_THREADS;
    let shared = g.shared();
    let q_tile = shared.q.at(0);
    let block_m = g.block_m();
    let d_boxes = g.d_boxes();
    // Below 2^31 (the launch contract).
    let tiles = if DECODE {
        g.tiles(&args, &decode) as u32
    } else {
        g.m_blocks(args.seqlen_q) * args.heads_q * args.batch
    };
    let (pack, _) = walk_of::<DECODE>(&decode);

    // SAFETY (all three): every thread calls them; one thread produces; every consumer
    // warpgroup waits for and releases each fill once (all read the same Q and keys); the
    // layout reserves the barriers.
    let mut q_pipeline = unsafe { L::pipeline::<1>(shared.q_barriers, CONSUMERS) };
    let mut k_pipeline = unsafe { L::pipeline::<STAGES>(shared.k_barriers, CONSUMERS) };
    let mut v_pipeline = unsafe { L::pipeline::<STAGES>(shared.v_barriers, CONSUMERS) };
    let (mut q_producer, mut q_consumer) = q_pipeline.split();
    let (mut k_producer, mut k_consumer) = k_pipeline.split();
    let (mut v_producer, mut v_consumer) = v_pipeline.split();

    if warpgroup == 0 {
        // SAFETY: the whole warpgroup, converged; its copies need few registers.
        unsafe { L::producer_registers() };
        let Some(loads) = L::for_thread(thread, g, maps, sources, &args) else {
            return;
        };
        let group = nonzero(args.heads_q / nonzero(args.heads_kv));
        let mut walk = GridStride::this_block(tiles);
        while let Some(index) = walk.next() {
            let tile = tile_of::<DECODE>(g, &args, &sources, &decode, index);
            let kv_head = tile.head / group;
            // SAFETY (all copies): the stage is free (acquired); every destination is a 1 KiB
            // aligned box of the stage's buffer; the coordinates are inside the tensors but
            // for rows past a sequence's end (launch contract); the stage's full phase expects
            // these copies and this thread's commit.
            let stage = q_producer.producer_acquire();
            for j in 0..d_boxes {
                let dst = q_tile.add(j * block_m * 128);
                // Packed: the box is `pack` heads by `block_m / pack` queries.
                let (col, m0) = (64 * j, tile.m0 / pack);
                unsafe {
                    loads.copy_box(
                        Operand::Q,
                        dst,
                        col,
                        tile.head,
                        m0,
                        tile.batch,
                        block_m,
                        &stage,
                    )
                };
            }
            stage.producer_commit();
            for block in (tile.first_block..tile.key_blocks).rev() {
                let kv0 = block * BN;
                let stage = k_producer.producer_acquire();
                let k_stage = shared.k.at(stage.index());
                for j in 0..d_boxes {
                    let dst = k_stage.add(j * BN * 128);
                    unsafe {
                        loads.copy_box(
                            Operand::K,
                            dst,
                            64 * j,
                            kv_head,
                            kv0,
                            tile.batch,
                            BN,
                            &stage,
                        )
                    };
                }
                stage.producer_commit();
                let stage = v_producer.producer_acquire();
                let v_stage = shared.v.at(stage.index());
                for kt in 0..BN / 64 {
                    for j in 0..d_boxes {
                        let dst =
                            v_stage.add(kt * D * 128 + j * SwizzledMnMajor::<D, E>::BOX_BYTES);
                        let row = kv0 + 64 * kt;
                        unsafe {
                            loads.copy_box(
                                Operand::V,
                                dst,
                                64 * j,
                                kv_head,
                                row,
                                tile.batch,
                                64,
                                &stage,
                            )
                        };
                    }
                }
                stage.producer_commit();
            }
        }
        return;
    }

    // SAFETY: the whole warpgroup, converged; the producer gave these registers back.
    unsafe { L::consumer_registers::<CONSUMERS>() };
    let consumer = warpgroup - 1;
    let t = thread % WARPGROUP_THREADS;
    let row0 = ROWS_PER_CONSUMER * consumer;
    // This consumer's rows of each Q box (its O staging too: a swizzled 64-row box).
    let q_rows = q_tile.add(row0 * 128);
    let q_box_stride = block_m * 128;
    let q_part = QRows {
        at: q_rows,
        box_stride: q_box_stride,
        boxes: d_boxes,
    };
    // Its O staging (laid out as Q), apart from Q or Q itself.
    let separate_o = g.separate_o();
    // Boxes of O staged per round: all of them in Q's buffer.
    let o_boxes = if separate_o {
        g.o_staging_boxes()
    } else {
        d_boxes
    };
    let o_rows = shared.o.at(0).add(row0 * 128);
    let (top, _) = Accumulator::<SREGS>::position(t, 0);
    let scale = args.scale_log2;
    let causal = args.causal != 0;
    // Ping-pong's turns through named barriers (measured 2-4% faster than mbarriers here,
    // docs/design.md); no-ops without ping-pong.
    let mut turns = NamedTurns::<CONSUMERS, PINGPONG>::new(consumer);

    let mut walk = GridStride::this_block(tiles);
    while let Some(index) = walk.next() {
        let tile = tile_of::<DECODE>(g, &args, &sources, &decode, index);
        let diagonal = tile.seqlen_kv as i32 - args.seqlen_q as i32;
        let mut q_stage = Some(wait_filled::<L, _>(&mut q_consumer));
        // Q is free for the next tile's once the last scores (block 0's) are complete, when
        // O is staged apart; else once O's stores have read it.
        let mut q_read = |block: u32| {
            if separate_o
                && block == tile.first_block
                && let Some(stage) = q_stage.take()
            {
                q_consumer.consumer_release_held(stage, t);
            }
        };
        // The keys this thread's two rows see (exclusive), and the fewest any row of the
        // warpgroup sees: blocks reaching past that are masked. A packed row `r` is query
        // `r / pack`.
        let first_row = tile.m0 + row0;
        let key_limit = |row: u32| {
            let query = (row / pack) as i32;
            if causal {
                (query + diagonal + 1).min(tile.seqlen_kv as i32)
            } else {
                tile.seqlen_kv as i32
            }
        };
        let row_limit = [key_limit(first_row + top), key_limit(first_row + top + 8)];
        let fewest = key_limit(first_row);
        let mask = |s: &mut Accumulator<SREGS>, block: u32| {
            let kv0 = (block * BN) as i32;
            if kv0 + BN as i32 > fewest {
                s.mask_columns_from(t, [row_limit[0] - kv0, row_limit[1] - kv0]);
            }
        };

        let mut out = Accumulator::<OREGS>::zeros();
        let mut rows = RowState {
            max: [f32::NEG_INFINITY; 2],
            sum: [0.0; 2],
        };
        if tile.key_blocks > tile.first_block {
            let mut s = Accumulator::<SREGS>::zeros();
            // The last block first: its scores, its softmax, its P.
            // SAFETY (all issues and waits below): the whole warpgroup; Q and each stage
            // were waited for and are released only after the wait that covers their
            // multiplies; `N` counts the groups issued after the waited tile's (the P V
            // k-tiles for the scores); every warpgroup takes `key_blocks + 1` turns.
            let block = tile.key_blocks - 1;
            unsafe { turns.wait() };
            let k_stage = wait_filled::<L, _>(&mut k_consumer);
            let issued = unsafe {
                issue_scores::<E, BN, SREGS>(&mut s, q_part, shared.k.at(k_stage.index()))
            };
            unsafe { turns.done() };
            unsafe { issued.wait::<0>() };
            k_consumer.consumer_release_held(k_stage, t);
            q_read(block);
            mask(&mut s, block);
            let mut alpha = rows.step(&mut s, scale);
            let mut p = to_fragments::<E, SREGS, PF>(&s);
            // Each earlier block: its scores issued with the later block's P V.
            for block in (tile.first_block..tile.key_blocks - 1).rev() {
                unsafe { turns.wait() };
                let k_stage = wait_filled::<L, _>(&mut k_consumer);
                let scores = unsafe {
                    issue_scores::<E, BN, SREGS>(&mut s, q_part, shared.k.at(k_stage.index()))
                };
                out.scale_rows(alpha);
                let v_stage = wait_filled::<L, _>(&mut v_consumer);
                let values = unsafe {
                    issue_values::<E, D, OREGS, PF, _>(
                        &mut out,
                        &p,
                        (),
                        shared.v.at(v_stage.index()),
                    )
                };
                unsafe { turns.done() };
                if OVERLAP {
                    // The softmax runs while P V does.
                    unsafe { scores.wait::<PV_GROUPS>() };
                    k_consumer.consumer_release_held(k_stage, t);
                    q_read(block);
                    mask(&mut s, block);
                    alpha = rows.step(&mut s, scale);
                    let _ = unsafe { values.wait::<0>() };
                    v_consumer.consumer_release_held(v_stage, t);
                } else {
                    let _ = unsafe { values.wait::<0>() };
                    unsafe { scores.wait::<0>() };
                    k_consumer.consumer_release_held(k_stage, t);
                    v_consumer.consumer_release_held(v_stage, t);
                    q_read(block);
                    mask(&mut s, block);
                    alpha = rows.step(&mut s, scale);
                }
                p = to_fragments::<E, SREGS, PF>(&s);
            }
            // The first block's P V.
            out.scale_rows(alpha);
            unsafe { turns.wait() };
            let v_stage = wait_filled::<L, _>(&mut v_consumer);
            let values = unsafe {
                issue_values::<E, D, OREGS, PF, _>(&mut out, &p, (), shared.v.at(v_stage.index()))
            };
            unsafe { turns.done() };
            let _ = unsafe { values.wait::<0>() };
            v_consumer.consumer_release_held(v_stage, t);
        }

        // O / sum (0 for a row that saw no key) and the log-sum-exp (-inf there).
        let inverse = rows.sum.map(|l| if l > 0.0 { math::recip(l) } else { 0.0 });
        out.scale_rows(inverse);
        if DECODE {
            // SAFETY: forwarded (the launch contract, `decode`'s buffers included).
            let split = unsafe {
                decode_rows::<D, OREGS>(
                    &args,
                    &decode,
                    tile,
                    tile.m0 + row0 + top,
                    &rows,
                    &out,
                    lse,
                    scale,
                    pack,
                    t,
                )
            };
            if split {
                if let Some(stage) = q_stage.take() {
                    q_consumer.consumer_release_held(stage, t);
                }
                continue;
            }
        } else if t.is_multiple_of(4) {
            // (Written out, not `log_sum_exp`: through the function LLVM orders the
            // comparisons otherwise, and the prefill kernels' fingerprints would change.)
            for h in 0..2 {
                let row = tile.m0 + row0 + top + 8 * h;
                if row < args.seqlen_q {
                    let l = rows.sum[h as usize];
                    let value = if l > 0.0 {
                        (rows.max[h as usize] * scale + math::log2(l)) * LN_2
                    } else {
                        f32::NEG_INFINITY
                    };
                    let at = ((tile.batch * args.heads_q + tile.head) as u64)
                        * args.seqlen_q as u64
                        + row as u64;
                    // SAFETY: inside the log-sum-exp's `batch * heads_q * seqlen_q` floats
                    // (row < seqlen_q); this thread's row alone.
                    unsafe { lse.add(at as usize).write(value) };
                }
            }
        }
        // Stage O in this warpgroup's rows of the staging (in Q's buffer: its multiplies are
        // complete, none reads Q any more; apart: once the last round's stores have read it),
        // one swizzled 64 x 64 box per 64 columns, `o_boxes` boxes a round, and store them.
        let (lane_row, lane_col) = x4_lane_row(t % 32);
        let row = 16 * (t / 32) + lane_row;
        // 16 columns per `stmatrix`.
        let per_round = 4 * o_boxes;
        for round in 0..d_boxes / o_boxes {
            if separate_o {
                if t == 0 {
                    ptx::bulk_wait_group_read::<0>();
                }
                warpgroup_barrier(consumer);
            }
            for c in per_round * round..per_round * (round + 1) {
                let col = 16 * c + lane_col;
                let staged_box = col / 64 - o_boxes * round;
                let at = o_rows.add(
                    staged_box * q_box_stride + SwizzledKMajor::<64, E>::byte_offset(row, col % 64),
                );
                // SAFETY: a 16-byte row of one 8 x 8 matrix inside this warpgroup's rows of a
                // staged box, each lane's its own; converged.
                unsafe { ptx::stmatrix_x4(at.cast(), out.pack_x4::<E>(c as usize)) };
            }
            ptx::fence_proxy_async_shared();
            warpgroup_barrier(consumer);
            if t == 0 {
                for j in 0..o_boxes {
                    let at = [
                        64 * (o_boxes * round + j) as i32,
                        tile.head as i32,
                        (first_row / pack) as i32,
                        tile.batch as i32,
                    ];
                    // SAFETY: the box is staged (barrier above, fenced for the copy engine);
                    // the map is O's (contract); the copy engine clips it at the sequence's
                    // end.
                    unsafe { store_async_tensor(o, at, o_rows.add(j * q_box_stride)) };
                }
                ptx::bulk_commit_group();
                if !separate_o {
                    // The next tile's Q may land here only once the stores have read it.
                    ptx::bulk_wait_group_read::<0>();
                }
            }
        }
        if let Some(stage) = q_stage.take() {
            q_consumer.consumer_release_held(stage, t);
        }
    }
    // The last stores must have read the staging before the block's shared memory goes away.
    if t == 0 {
        ptx::bulk_wait_group_read::<0>();
    }
}
