//! The tensor-copy styles (sm_90): [`GemmStyle::Tma`], both tiles by the copy engine, and
//! [`GemmStyle::TmaB`], B by the copy engine and A by transposing `cp.async`.

use super::block_tile::BlockTile;
use super::fragment::FragmentPipe;
use super::problem::Geometry;
use crate::gemm32::shapes::{ALayout, BK, GemmStyle};
use gpu::group::Group;
use gpu::pipeline::{BlockPipeline, Consumer, Producer};
use gpu::ptx;
use gpu::{
    memcpy_async::{AlignedSize, bulk::memcpy_async_tensor},
    pipeline::{BulkPipeline, CpAsyncAndBulk},
    tensor_map::TensorMapRef,
};

/// [`GemmStyle::Tma`]: one elected thread of warp 0 loads each k-tile with two tensor copies
/// (A's `bm x BK` box and B's `BK x bn` box, zero-filled past the matrix by the copy engine)
/// into a `BulkPipeline` stage, whose `full` phase completes on their bytes; every thread
/// waits for the stage, multiplies, and releases it; the elected thread then refills the
/// stage released a k-tile earlier, and `__syncwarp` reconverges its warp. No block-wide
/// barrier, no copy instruction in the other threads.
///
/// # Safety
/// The GEMM launch contract (module docs) with `k % 4 == 0`, `n % 4 == 0`, and `a`, `b` tensor
/// maps of A and B with the family's boxes (`GemmKernel::a_box`, `GemmKernel::b_box`).
#[cfg(target_feature = "sm_90")]
pub unsafe fn tma<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
>(
    a: TensorMapRef,
    b: TensorMapRef,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    type Geo<const TM: usize, const TN: usize, const WM: u32, const WN: u32> =
        Geometry<TM, TN, WM, WN>;
    let style = GemmStyle::Tma {
        stages: STAGES as u32,
    };
    let no_pointer = core::ptr::null();
    let block =
        BlockTile::<TM, TN, WM, WN>::new(style, (no_pointer, no_pointer, c), (m, n, k), false);
    let (m0, n0) = (block.p.m0 as i32, block.p.n0 as i32);
    let tiles = block.p.k_tiles();
    let thread = ptx::thread_idx_x();
    let f = block.fragment(thread);
    let a_bytes = AlignedSize::<16>::of(Geo::<TM, TN, WM, WN>::TILE.a_tile_bytes(ALayout::MMajor));
    let b_bytes = AlignedSize::<16>::of(Geo::<TM, TN, WM, WN>::TILE.b_tile_bytes());
    // SAFETY: every thread calls it; one thread produces, every compute thread consumes; the
    // layout reserves the barriers.
    let mut pipeline = unsafe {
        BulkPipeline::<STAGES>::init(block.barriers(), Geo::<TM, TN, WM, WN>::COMPUTE_THREADS)
    };
    let (mut producer, mut consumer) = pipeline.split();
    // All of warp 0 votes (converged here); one lane issues every copy.
    let producing = thread < 32 && ptx::elect_one();
    if producing {
        ptx::prefetch_tensormap(a);
        ptx::prefetch_tensormap(b);
    }
    let mut produce = |t: u32| {
        if !producing {
            return;
        }
        let stage = producer.producer_acquire();
        if t < tiles {
            let (a_dst, b_dst) = block.stage(stage.index());
            let k0 = (t * BK) as i32;
            // SAFETY: the stage is free (acquired); the maps describe A and B with these
            // boxes (launch contract); its full phase expects this thread's commit below.
            unsafe {
                memcpy_async_tensor(a_dst, a, [k0, m0], a_bytes, &stage);
                memcpy_async_tensor(b_dst, b, [n0, k0], b_bytes, &stage);
            }
        }
        stage.producer_commit();
    };
    for t in 0..STAGES as u32 - 1 {
        produce(t);
    }
    let mut acc = [[0.0f32; TN]; TM];
    for t in 0..tiles {
        let ready = consumer.consumer_wait();
        // SAFETY: the stage's phase completed: both boxes landed.
        unsafe { block.multiply(ready.index(), f, &mut acc) };
        ready.consumer_release();
        produce(t + STAGES as u32 - 1);
        // The elected lane rejoins its warp: left diverged, warp 0 would run the next
        // multiply twice (once for it, once for the other 31 lanes).
        ptx::syncwarp();
    }
    // SAFETY: launch contract (n % 4 == 0).
    unsafe { block.store::<16>(f, &acc) };
}

/// [`GemmStyle::TmaB`]: the block pipeline's loop, with B by the copy engine. Per k-tile one
/// elected thread of warp 0 expects B's box bytes on the stage's `full` barrier and issues its
/// tensor copy (zero-filled past the matrix), while every thread copies its share of A
/// k-major with transposing `cp.async` and commits (`cp.async.mbarrier.arrive.noinc`): the
/// phase completes when both have landed. The multiply is the `cp.async` styles' fragment
/// pipeline.
///
/// # Safety
/// The GEMM launch contract (module docs) with `n % 4 == 0`, `a` a pointer to A, and `b` a
/// tensor map of B with the family's `b_box`.
#[cfg(target_feature = "sm_90")]
pub unsafe fn tma_b<
    const TM: usize,
    const TN: usize,
    const WM: u32,
    const WN: u32,
    const STAGES: usize,
    const INTERIOR: bool,
>(
    a: *const f32,
    b: TensorMapRef,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    let style = GemmStyle::TmaB {
        stages: STAGES as u32,
    };
    let block =
        BlockTile::<TM, TN, WM, WN>::new(style, (a, core::ptr::null(), c), (m, n, k), INTERIOR);
    let (n0, tiles) = (block.p.n0 as i32, block.p.k_tiles());
    let thread = ptx::thread_idx_x();
    let group = BlockTile::<TM, TN, WM, WN>::compute_group(thread);
    let f = block.fragment(thread);
    let b_bytes = AlignedSize::<16>::of(Geometry::<TM, TN, WM, WN>::TILE.b_tile_bytes());
    // SAFETY: every thread calls it; every thread produces and consumes; the elected thread's
    // tensor copies complete on `full` too (fenced for the copy engine); the layout reserves
    // the barriers.
    let mut pipeline = unsafe {
        BlockPipeline::<STAGES, CpAsyncAndBulk>::init_all_threads_with_bulk(
            block.barriers(),
            group.size(),
        )
    };
    let (mut producer, mut consumer) = pipeline.split();
    // All of warp 0 votes (converged here); one lane issues every tensor copy.
    let producing = thread < 32 && ptx::elect_one();
    if producing {
        ptx::prefetch_tensormap(b);
    }
    let mut produce = |t: u32| {
        let stage = producer.producer_acquire();
        if t < tiles {
            if producing {
                let k0 = (t * BK) as i32;
                // SAFETY: the stage is free (acquired); the map describes B with this box
                // (launch contract); the bytes are expected before this thread's commit below.
                unsafe {
                    memcpy_async_tensor(block.stage(stage.index()).1, b, [n0, k0], b_bytes, &stage)
                };
            }
            // SAFETY: the stage is free (acquired); the commit below binds the copies.
            unsafe { block.copy_a_k_major(&group, t, stage.index(), &stage) };
        }
        stage.producer_commit();
    };
    for t in 0..STAGES as u32 - 1 {
        produce(t);
        ptx::syncwarp();
    }
    let mut acc = [[0.0f32; TN]; TM];
    // SAFETY: a stage's phase completes when every thread's copies and B's box landed;
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
            after_release(t): {
                produce(t + STAGES as u32 - 1);
                // The elected lane rejoins its warp before the next multiply.
                ptx::syncwarp();
            },
        }
    }
    // SAFETY: launch contract (n % 4 == 0).
    unsafe { block.store::<16>(f, &acc) };
}
