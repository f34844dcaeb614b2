//! Bodies of the self-test's kernels ([`super::COPY_KERNELS`], `barrier_ops` and
//! `hang_missing_arrival`), which their entry points ([`super::entry_points`]) call: each copy
//! kernel streams tiles of `src` through shared memory into `dst` with one abstraction, and
//! `barrier_ops` records what the [`Barrier`] operations report.
//!
//! Every copy body's `# Safety` is the launch contract of the entry points: the geometry
//! [`super::CopyKernel`] gives for `n` (threads, blocks, dynamic shared memory), `src` holding
//! `n` floats and `dst` `output_len(n)` floats, both 16-byte aligned; `n` a multiple of
//! [`TILE_FLOATS`] unless the form accepts ragged input.

use super::shapes::{
    BARRIER_FORM_BUFFERS, BARRIER_OPS_OUTPUTS, BARRIER_OPS_POLLS, BARRIER_OPS_THREADS,
    BarrierObservation, CopyForm, HANG_THREADS, TILE_BYTES, TILE_FLOATS,
};
use gpu::barrier::{ArrivalToken, Barrier};
use gpu::group::{Block, Warp};
use gpu::layout::{Mbarrier, PipelineSharedState};
use gpu::memcpy_async::AlignedSize;
use gpu::memcpy_async::completion::{Completion, Uncounted};
use gpu::memcpy_async::cp_async::{memcpy_async, memcpy_async_group, memcpy_async_zfill};
use gpu::pipeline::{
    BlockPipeline, BlockProducer, Consumer, Producer, ProducerStage, ThreadPipeline,
};
use gpu::ptx;
use gpu::shared::Shared;

/// The tiles this block streams, `first..end`: the grid shares `tiles` out in contiguous runs
/// of `tiles / grid` (rounded up).
#[inline(always)]
fn block_tiles(tiles: u32) -> (u32, u32) {
    let per_block = tiles.div_ceil(ptx::grid_dim_x());
    let first = ptx::block_idx_x() * per_block;
    (first.min(tiles), tiles.min(first + per_block))
}

/// Stage buffer `s` of a pipeline form (the layout's buffers start dynamic shared memory).
#[inline(always)]
fn stage_buffer(form: CopyForm, s: u32) -> Shared<f32> {
    form.shared_layout().stage(s)
}

/// The pipeline mbarriers of a block-scope pipeline form, after its buffers.
#[inline(always)]
fn pipeline_barriers<const STAGES: usize>(form: CopyForm) -> Shared<PipelineSharedState<STAGES>> {
    form.shared_layout().barriers()
}

/// Writes tile `tile` from `buffer` to `dst`: thread `rank` of `threads` takes elements
/// `rank, rank + threads, ...`, which other threads copied.
///
/// # Safety
/// The tile's copies landed and are visible to this thread; `dst` holds every tile.
#[inline(always)]
unsafe fn drain(buffer: Shared<f32>, dst: *mut f32, tile: u32, rank: u32, threads: u32) {
    let mut e = rank;
    while e < TILE_FLOATS {
        // SAFETY: the tile landed (caller); dst holds every tile (launch contract).
        unsafe {
            dst.add((tile * TILE_FLOATS + e) as usize)
                .write(buffer.add(e).read())
        };
        e += threads;
    }
}

#[inline(always)]
fn tile_src(src: *const f32, tile: u32) -> *const f32 {
    src.wrapping_add((tile * TILE_FLOATS) as usize)
}

/// Per-thread form: thread `rank` of `threads` copies 16-byte chunks `rank, rank + threads,
/// ...` of the tile, one `memcpy_async` each.
///
/// # Safety
/// `src` is a whole tile of global memory and `buffer` a free tile buffer, both 16-byte
/// aligned; `completion` is open for these copies.
#[inline(always)]
unsafe fn copy_tile_by_chunks<C: Completion>(
    buffer: Shared<f32>,
    src: *const f32,
    rank: u32,
    threads: u32,
    completion: &C,
) {
    const CHUNK: AlignedSize<16> = AlignedSize::of(16);
    let mut chunk = rank;
    while chunk < TILE_BYTES / 16 {
        // SAFETY: inside the tile; 16-byte aligned (tile and buffer are).
        unsafe {
            memcpy_async(
                buffer.add(4 * chunk),
                src.add(4 * chunk as usize),
                CHUNK,
                completion,
            )
        };
        chunk += threads;
    }
}

/// [`CopyForm::ThreadPipeline`].
///
/// # Safety
/// The self-test's launch contract (module docs).
pub unsafe fn thread_pipeline<const STAGES: usize>(src: *const f32, dst: *mut f32, n: u32) {
    let form = CopyForm::ThreadPipeline {
        stages: STAGES as u32,
    };
    let t = ptx::thread_idx_x();
    let threads = ptx::block_dim_x();
    let (first, end) = block_tiles(n / TILE_FLOATS);
    let count = end - first;
    let mut pipeline = ThreadPipeline::<STAGES>::new();
    let (mut producer, mut consumer) = pipeline.split();
    let mut produce = |i: u32| {
        let stage = producer.producer_acquire();
        if i < count {
            // SAFETY: the buffer is free (see the barrier below), the tile exists.
            unsafe {
                copy_tile_by_chunks(
                    stage_buffer(form, stage.index()),
                    tile_src(src, first + i),
                    t,
                    threads,
                    &stage,
                )
            };
        }
        stage.producer_commit();
    };
    for i in 0..STAGES as u32 - 1 {
        produce(i);
    }
    for i in 0..count {
        let ready = consumer.consumer_wait();
        ptx::barrier_sync();
        // SAFETY: every thread waited for its copies and synced.
        unsafe {
            drain(
                stage_buffer(form, ready.index()),
                dst,
                first + i,
                t,
                threads,
            )
        };
        ready.consumer_release();
        // Everyone is done with this buffer before anyone refills it.
        ptx::barrier_sync();
        produce(i + STAGES as u32 - 1);
    }
}

/// The loop every block-pipeline form with all threads in both roles shares: copy tile
/// `i + STAGES - 1` (with `copy`, given the buffer, the tile and the open stage), then drain
/// tile `i`.
///
/// # Safety
/// The self-test's launch contract for `form`; `copy` fills the buffer with the tile, bound
/// to the stage, reading only what exists of the tile.
#[inline(always)]
unsafe fn stream_block_pipeline<const STAGES: usize>(
    form: CopyForm,
    dst: *mut f32,
    tiles: u32,
    copy: impl Fn(Shared<f32>, u32, &ProducerStage<'_, BlockProducer<'_, STAGES>>),
) {
    let t = ptx::thread_idx_x();
    let threads = ptx::block_dim_x();
    let (first, end) = block_tiles(tiles);
    let count = end - first;
    // SAFETY: every thread calls this; the slots follow the buffers in the launch's layout.
    let mut pipeline =
        unsafe { BlockPipeline::<STAGES>::init_all_threads(pipeline_barriers(form), threads) };
    let (mut producer, mut consumer) = pipeline.split();
    let mut produce = |i: u32| {
        let stage = producer.producer_acquire();
        if i < count {
            copy(stage_buffer(form, stage.index()), first + i, &stage);
        }
        stage.producer_commit();
    };
    for i in 0..STAGES as u32 - 1 {
        produce(i);
    }
    for i in 0..count {
        produce(i + STAGES as u32 - 1);
        let ready = consumer.consumer_wait();
        // SAFETY: the stage's phase completed: every thread's copies landed.
        unsafe {
            drain(
                stage_buffer(form, ready.index()),
                dst,
                first + i,
                t,
                threads,
            )
        };
        ready.consumer_release();
    }
}

/// [`CopyForm::BlockPipeline`].
///
/// # Safety
/// The self-test's launch contract (module docs).
pub unsafe fn block_pipeline<const STAGES: usize>(src: *const f32, dst: *mut f32, n: u32) {
    const TILE: AlignedSize<16> = AlignedSize::of(TILE_BYTES);
    let form = CopyForm::BlockPipeline {
        stages: STAGES as u32,
    };
    let block = Block::this_block();
    // SAFETY: launch contract; whole tiles only.
    unsafe {
        stream_block_pipeline::<STAGES>(form, dst, n / TILE_FLOATS, |buffer, tile, stage| {
            memcpy_async_group(&block, buffer, tile_src(src, tile), TILE, stage)
        })
    }
}

/// [`CopyForm::ZeroFill`].
///
/// # Safety
/// The self-test's launch contract (module docs); any `n`.
pub unsafe fn zero_fill<const STAGES: usize, const ALIGN: u32>(
    src: *const f32,
    dst: *mut f32,
    n: u32,
) {
    let form = CopyForm::ZeroFill {
        stages: STAGES as u32,
        align: ALIGN,
    };
    let size = AlignedSize::<ALIGN>::of(TILE_BYTES);
    let block = Block::this_block();
    // SAFETY: launch contract; the last tile reads only the `n` floats that exist.
    unsafe {
        stream_block_pipeline::<STAGES>(
            form,
            dst,
            n.div_ceil(TILE_FLOATS),
            |buffer, tile, stage| {
                let left = (n - tile * TILE_FLOATS).min(TILE_FLOATS);
                memcpy_async_zfill(&block, buffer, tile_src(src, tile), size, left * 4, stage)
            },
        )
    }
}

/// [`CopyForm::WarpSpecialized`].
///
/// # Safety
/// The self-test's launch contract (module docs).
pub unsafe fn warp_specialized<const STAGES: usize>(src: *const f32, dst: *mut f32, n: u32) {
    const TILE: AlignedSize<16> = AlignedSize::of(TILE_BYTES);
    let form = CopyForm::WarpSpecialized {
        stages: STAGES as u32,
    };
    let warp = Warp::this_warp();
    let (first, end) = block_tiles(n / TILE_FLOATS);
    // SAFETY: every thread calls this; warp 0 produces, warp 1 consumes, every stage.
    let mut pipeline =
        unsafe { BlockPipeline::<STAGES>::init_partitioned(pipeline_barriers(form), 32, 32) };
    let (mut producer, mut consumer) = pipeline.split();
    if warp.index_in_block() == 0 {
        for tile in first..end {
            let stage = producer.producer_acquire();
            // SAFETY: the buffer is free (acquired); the tile exists.
            unsafe {
                memcpy_async_group(
                    &warp,
                    stage_buffer(form, stage.index()),
                    tile_src(src, tile),
                    TILE,
                    &stage,
                )
            };
            stage.producer_commit();
        }
        ptx::wait_all();
    } else {
        for tile in first..end {
            let ready = consumer.consumer_wait();
            // SAFETY: the producer warp's copies landed.
            unsafe {
                drain(
                    stage_buffer(form, ready.index()),
                    dst,
                    tile,
                    warp.lane(),
                    32,
                )
            };
            ready.consumer_release();
        }
    }
}

gpu::static_shared!(
    /// The tile buffers of the barrier forms (static shared memory).
    fn barrier_copy_buffers() -> [f32; (BARRIER_FORM_BUFFERS * TILE_FLOATS) as usize]
);
gpu::static_shared!(
    /// Their barriers, one per buffer.
    fn barrier_copy_slots() -> [Mbarrier; BARRIER_FORM_BUFFERS as usize]
);

/// Double buffering with two [`Barrier`]s: copy tile `i + 1` (with `copy`) and arrive, then
/// wait for tile `i`'s token and drain it. `bound_arrivals` is the arrivals each thread's
/// `copy` adds to a phase (one per `.noinc` binding, none for [`Uncounted`]); every thread
/// also arrives itself.
///
/// # Safety
/// The self-test's launch contract; `copy` fills the buffer with the tile, reading only the
/// tile, bound to the barrier so that `expected_arrivals(threads)` arrivals (the bound ones and
/// every thread's own) complete a phase.
#[inline(always)]
unsafe fn stream_barriers(
    dst: *mut f32,
    tiles: u32,
    expected_arrivals: impl Fn(u32) -> u32,
    copy: impl Fn(Shared<f32>, u32, &Barrier),
) {
    let t = ptx::thread_idx_x();
    let threads = ptx::block_dim_x();
    let (first, end) = block_tiles(tiles);
    let buffers = barrier_copy_buffers();
    let slots = barrier_copy_slots();
    if t == 0 {
        for s in 0..BARRIER_FORM_BUFFERS {
            // SAFETY: reserved static slots; published by the sync below.
            let _ = unsafe { Barrier::init(slots.at(s), expected_arrivals(threads)) };
        }
        // Bulk copies complete on these barriers: the copy engine must see them initialized.
        #[cfg(target_feature = "sm_90")]
        ptx::fence_mbarrier_init();
    }
    ptx::barrier_sync();
    // SAFETY: initialized above and ordered by the sync.
    let barrier = |s: u32| unsafe { Barrier::from_initialized(slots.at(s)) };
    let buffer = |s: u32| buffers.at(s * TILE_FLOATS);

    let mut pending: Option<ArrivalToken> = None;
    if first < end {
        copy(buffer(0), first, &barrier(0));
        pending = Some(barrier(0).arrive());
    }
    for tile in first..end {
        let current = (tile - first) % 2;
        let next = 1 - current;
        let next_token = (tile + 1 < end).then(|| {
            // Buffer `next` was drained last iteration, before the trailing sync.
            copy(buffer(next), tile + 1, &barrier(next));
            barrier(next).arrive()
        });
        if let Some(token) = pending.take() {
            barrier(current).wait(token);
        }
        // SAFETY: the barrier phase completed: every thread's copies landed.
        unsafe { drain(buffer(current), dst, tile, t, threads) };
        ptx::barrier_sync();
        pending = next_token;
    }
}

/// [`CopyForm::BarrierPerThread`]: thread `t` copies bytes `32 t .. 32 t + 32` of each tile in
/// `ALIGN`-byte chunks, one bound `memcpy_async` call.
///
/// # Safety
/// The self-test's launch contract (module docs).
pub unsafe fn barrier_per_thread<const ALIGN: u32>(src: *const f32, dst: *mut f32, n: u32) {
    let t = ptx::thread_idx_x();
    let share = AlignedSize::<ALIGN>::of(32);
    // SAFETY: launch contract (32 threads x 32 bytes = one tile); whole tiles only.
    unsafe {
        stream_barriers(
            dst,
            n / TILE_FLOATS,
            |threads| 2 * threads,
            |buffer, tile, barrier| {
                memcpy_async(
                    buffer.add(8 * t),
                    tile_src(src, tile).add(8 * t as usize),
                    share,
                    barrier,
                )
            },
        )
    }
}

/// [`CopyForm::BarrierGroup`].
///
/// # Safety
/// The self-test's launch contract (module docs).
pub unsafe fn barrier_group(src: *const f32, dst: *mut f32, n: u32) {
    const TILE: AlignedSize<16> = AlignedSize::of(TILE_BYTES);
    let warp = Warp::this_warp();
    // SAFETY: launch contract; whole tiles only.
    unsafe {
        stream_barriers(
            dst,
            n / TILE_FLOATS,
            |threads| 2 * threads,
            |buffer, tile, barrier| {
                memcpy_async_group(&warp, buffer, tile_src(src, tile), TILE, barrier)
            },
        )
    }
}

/// [`CopyForm::BarrierUncounted`].
///
/// # Safety
/// The self-test's launch contract (module docs).
pub unsafe fn barrier_uncounted(src: *const f32, dst: *mut f32, n: u32) {
    const TILE: AlignedSize<16> = AlignedSize::of(TILE_BYTES);
    let warp = Warp::this_warp();
    // SAFETY: launch contract; whole tiles only. The incrementing binding adds no arrival.
    unsafe {
        stream_barriers(
            dst,
            n / TILE_FLOATS,
            |threads| threads,
            |buffer, tile, barrier| {
                memcpy_async_group(
                    &warp,
                    buffer,
                    tile_src(src, tile),
                    TILE,
                    &Uncounted(barrier),
                )
            },
        )
    }
}

/// [`CopyForm::BulkBarrier`] (sm_90): thread 0 copies each tile with one bulk copy bound to
/// the tile's barrier — expecting its bytes, or with `ARRIVING` also arriving
/// ([`Arriving`](gpu::memcpy_async::completion::Arriving)), so the barrier then expects one
/// arrival more.
///
/// # Safety
/// The self-test's launch contract (module docs).
#[cfg(target_feature = "sm_90")]
pub unsafe fn bulk_barrier<const ARRIVING: bool>(src: *const f32, dst: *mut f32, n: u32) {
    use gpu::memcpy_async::{bulk::memcpy_async_bulk, completion::Arriving};
    const TILE: AlignedSize<16> = AlignedSize::of(TILE_BYTES);
    let t = ptx::thread_idx_x();
    let expected = |threads: u32| if ARRIVING { threads + 1 } else { threads };
    // SAFETY: launch contract; whole tiles only. Thread 0 expects the bytes (or arrives with
    // them) before its own arrival, so no phase completes before its copy lands.
    unsafe {
        stream_barriers(dst, n / TILE_FLOATS, expected, |buffer, tile, barrier| {
            if t == 0 {
                if ARRIVING {
                    memcpy_async_bulk(buffer, tile_src(src, tile), TILE, &Arriving(barrier), None);
                } else {
                    memcpy_async_bulk(buffer, tile_src(src, tile), TILE, barrier, None);
                }
            }
        })
    }
}

gpu::static_shared!(
    /// The barrier of `barrier_ops`.
    fn barrier_ops_slot() -> [Mbarrier; 1]
);
gpu::static_shared!(
    /// Per-thread flags of `barrier_ops`.
    fn barrier_ops_flags() -> [u32; BARRIER_OPS_THREADS as usize]
);

/// Polls `test_wait` until the token's phase completes: 1, or 0 after
/// [`BARRIER_OPS_POLLS`] polls (so a broken barrier fails the test instead of hanging).
#[inline(always)]
fn wait_bounded(barrier: &Barrier, token: &ArrivalToken) -> u32 {
    for _ in 0..BARRIER_OPS_POLLS {
        if barrier.test_wait(token) {
            return 1;
        }
    }
    0
}

/// Records every [`BarrierObservation`] in its slot of `out`.
///
/// # Safety
/// One block of [`BARRIER_OPS_THREADS`] threads; `out` holds `BARRIER_OPS_OUTPUTS` words.
#[inline(always)]
pub(super) unsafe fn barrier_ops(out: *mut u32) {
    use BarrierObservation as Seen;
    let t = ptx::thread_idx_x();
    let record = |what: Seen, value: u32| {
        const { assert!(BarrierObservation::ALL.len() == BARRIER_OPS_OUTPUTS) };
        // SAFETY: launch contract: `out` holds one word per observation.
        unsafe { out.add(what.slot()).write(value) }
    };
    let slot = barrier_ops_slot().base();
    let flags = barrier_ops_flags();
    // SAFETY: every thread calls it; the slot is reserved.
    let barrier = unsafe { Barrier::init_by_first_thread(slot, BARRIER_OPS_THREADS) };

    // Phase 0: thread 0 arrives alone first, then the others.
    let mut first = None;
    if t == 0 {
        let token = barrier.arrive();
        record(Seen::FirstTokenPendingCount, token.pending_count());
        record(
            Seen::PhaseZeroDoneAfterOneArrival,
            barrier.test_wait(&token) as u32,
        );
        first = Some(token);
    }
    ptx::barrier_sync();
    let token = match first {
        Some(token) => token,
        None => barrier.arrive(),
    };
    let done = wait_bounded(&barrier, &token);
    // SAFETY: one flag per thread; read after the sync below.
    unsafe { flags.at(t).write(done) };
    ptx::barrier_sync();
    if t == 0 {
        record(Seen::PhaseZeroDoneAfterAllArrivals, done);
        // Read back through a generic pointer, the way code that wants `*const T` sees it.
        let generic = flags.base().as_generic_ptr();
        // SAFETY: the flags were written before the sync above; BARRIER_OPS_THREADS of them.
        let seen = (0..BARRIER_OPS_THREADS as usize)
            .map(|i| unsafe { generic.add(i).read_volatile() })
            .sum();
        record(Seen::ThreadsThatSawPhaseZero, seen);
    }

    // Phase 1: warp 1 leaves; phase 2: warp 0 alone.
    if t >= 32 {
        barrier.arrive_and_drop();
        return;
    }
    let token = barrier.arrive();
    let done1 = wait_bounded(&barrier, &token);
    let token = barrier.arrive();
    let done2 = wait_bounded(&barrier, &token);
    // Warp 0 has finished with the barrier before thread 0 invalidates it.
    ptx::barrier_sync_threads::<1>(32);
    if t == 0 {
        record(Seen::PhaseOneDoneWithDrop, done1);
        record(Seen::PhaseTwoDoneByWarpZeroAlone, done2);
        record(
            Seen::ParityZeroAfterThreePhases,
            barrier.test_wait_parity(0) as u32,
        );
        record(
            Seen::ParityOneAfterThreePhases,
            barrier.test_wait_parity(1) as u32,
        );
        // SAFETY: nobody uses it any more (named barrier above); nothing bound to it.
        unsafe { barrier.invalidate() };
        // SAFETY: the slot is free again; only this thread uses the new barrier. One
        // expected arrival: its own, so `arrive_and_wait` cannot block.
        let alone = unsafe { Barrier::init(slot, 1) };
        alone.arrive_and_wait();
        record(
            Seen::ReinitializedArriveAndWait,
            alone.test_wait_parity(0) as u32,
        );
    }
}

gpu::static_shared!(
    /// The barrier of `hang_missing_arrival`.
    fn hang_slot() -> [Mbarrier; 1]
);

/// Waits forever on purpose: every thread arrives once on a barrier that expects one arrival
/// more, then waits for the phase (see [`super::HANG_KERNEL`]).
///
/// # Safety
/// One block of [`HANG_THREADS`] threads. It never returns: the host's watchdog must end the
/// program.
#[inline(always)]
pub(super) unsafe fn hang_missing_arrival() {
    // SAFETY: every thread calls it; the slot is reserved.
    let barrier = unsafe { Barrier::init_by_first_thread(hang_slot().base(), HANG_THREADS + 1) };
    let token = barrier.arrive();
    barrier.wait(token);
}
