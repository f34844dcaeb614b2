//! The styles on a [`BlockPipeline`] (stages completing mbarrier phases): the block pipeline,
//! where every thread copies and multiplies, and warp specialization, where producer warps
//! copy and compute warps multiply.

use super::block_tile::BlockTile;
use super::fragment::FragmentPipe;
use super::problem::Geometry;
use crate::gemm32::shapes::GemmStyle;
use gpu::group::{Group, Threads, Warp};
use gpu::pipeline::{BlockPipeline, Consumer, Producer};
use gpu::ptx;

/// [`GemmStyle::BlockPipeline`]: as the thread pipeline, with stages completing mbarrier
/// phases (`cp.async.mbarrier.arrive.noinc`) instead of async-groups and a block barrier;
/// a thread refills after its multiply, waiting (on `empty`) only for the stage everyone
/// released a k-tile earlier.
///
/// # Safety
/// The GEMM launch contract (module docs).
pub unsafe fn block_pipeline<
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
    const { assert!(STAGES >= 2) };
    let style = GemmStyle::BlockPipeline {
        stages: STAGES as u32,
    };
    let block = BlockTile::<TM, TN, WM, WN>::new(style, (a, b, c), (m, n, k), INTERIOR);
    let tiles = block.p.k_tiles();
    let thread = ptx::thread_idx_x();
    let group = BlockTile::<TM, TN, WM, WN>::compute_group(thread);
    let f = block.fragment(thread);
    // SAFETY: every thread calls it; the layout reserves the barriers after the stages.
    let mut pipeline =
        unsafe { BlockPipeline::<STAGES>::init_all_threads(block.barriers(), group.size()) };
    let (mut producer, mut consumer) = pipeline.split();
    let mut produce = |t: u32| {
        let stage = producer.producer_acquire();
        if t < tiles {
            // SAFETY: the stage is free (acquired).
            unsafe { block.copy::<_, _, ALIGN>(&group, t, stage.index(), &stage) };
        }
        stage.producer_commit();
    };
    for t in 0..STAGES as u32 - 1 {
        produce(t);
    }
    let mut acc = [[0.0f32; TN]; TM];
    // SAFETY: a stage's phase completes when every thread's copies into it landed;
    // `tiles >= 1` stages are committed.
    unsafe {
        gpu::consume_k_tiles! {
            consumer: consumer,
            tiles: tiles,
            context: &block,
            start(s): FragmentPipe::start(&block, f, s),
            acc: &mut acc,
            after_wait: {},
            before_multiply(_t): {},
            // Refill the stage everyone released a k-tile earlier.
            after_release(t): { produce(t + STAGES as u32 - 1); },
        }
    }
    // SAFETY: launch contract.
    unsafe { block.store::<ALIGN>(f, &acc) };
}

/// [`GemmStyle::WarpSpecialized`]: the `WM x WN` compute warps only wait, multiply and
/// release; the `PRODUCER_WARPS` warps after them only acquire, copy and commit, so no
/// compute warp ever issues a copy.
///
/// # Safety
/// The GEMM launch contract (module docs).
pub unsafe fn warp_specialized<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
    const PRODUCER_WARPS: u32,
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
    let style = GemmStyle::WarpSpecialized {
        stages: STAGES as u32,
        producer_warps: PRODUCER_WARPS,
    };
    let block = BlockTile::<TM, TN, WM, WN>::new(style, (a, b, c), (m, n, k), INTERIOR);
    let tiles = block.p.k_tiles();
    let compute_threads = Geometry::<TM, TN, WM, WN>::COMPUTE_THREADS;
    // SAFETY: every thread calls it; the producer warps fill every stage, the compute
    // warps release every stage; the layout reserves the barriers.
    let mut pipeline = unsafe {
        BlockPipeline::<STAGES>::init_partitioned(
            block.barriers(),
            32 * PRODUCER_WARPS,
            compute_threads,
        )
    };
    let (mut producer, mut consumer) = pipeline.split();
    let thread = ptx::thread_idx_x();
    let warp = Warp::this_warp().index_in_block();
    if warp >= WM * WN {
        let group = Threads::new(thread - compute_threads, 32 * PRODUCER_WARPS);
        for t in 0..tiles {
            let stage = producer.producer_acquire();
            // SAFETY: the stage is free (acquired).
            unsafe { block.copy::<_, _, ALIGN>(&group, t, stage.index(), &stage) };
            stage.producer_commit();
        }
        // No copy may outlive the thread that issued it.
        ptx::wait_all();
    } else {
        let f = block.fragment(thread);
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY: a stage's phase completes when the producers' copies into it landed; the
        // producer warps commit `tiles >= 1` stages.
        unsafe {
            gpu::consume_k_tiles! {
                consumer: consumer,
                tiles: tiles,
                context: &block,
            start(s): FragmentPipe::start(&block, f, s),
                acc: &mut acc,
                after_wait: {},
                before_multiply(_t): {},
                after_release(_t): {},
            }
        }
        // SAFETY: launch contract.
        unsafe { block.store::<ALIGN>(f, &acc) };
    }
}
