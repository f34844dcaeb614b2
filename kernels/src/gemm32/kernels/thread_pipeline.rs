//! The thread-pipeline styles: [`GemmStyle::ThreadPipeline`] and, on the same mainloop,
//! [`GemmStyle::SplitK`] (sm_90), whose epilogue sums the k groups' partial tiles through
//! shared memory and the cluster's through distributed shared memory.

// `split_k` stays between `thread_pipeline` and `thread_pipeline_mainloop`, where it was in the
// one file this came from: with one codegen unit rustc hands LLVM the functions in definition
// order, and the split-K kernels' PTX changed when `split_k` followed the mainloop.

use super::block_tile::BlockTile;
use super::fragment::FragmentPipe;
#[cfg(target_feature = "sm_90")]
use super::fragment::{Fragment, store_quad};
use super::problem::Geometry;
#[cfg(target_feature = "sm_90")]
use super::problem::Problem;
use crate::gemm32::shapes::GemmStyle;
#[cfg(target_feature = "sm_90")]
use crate::gemm32::shapes::partial_offset;
use gpu::pipeline::{Consumer, Producer, ThreadPipeline};
use gpu::ptx;
#[cfg(target_feature = "sm_90")]
use gpu::shared::Shared;

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
/// [`GemmKernel::grid`](crate::gemm32::GemmKernel::grid) gives), with
/// [`GemmKernel::threads`](crate::gemm32::GemmKernel::threads) threads and
/// [`GemmKernel::shared_bytes`](crate::gemm32::GemmKernel::shared_bytes) of dynamic shared memory.
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
/// shared memory ([`partial_offset`](crate::gemm32::partial_offset)); after a cluster barrier, block
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
        .add(partial_offset(style, G::<TM, TN, WM, WN>::TILE))
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
