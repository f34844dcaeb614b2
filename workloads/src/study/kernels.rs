//! The study's kernel bodies, one generic function per [`Style`]: the same problem and the
//! same math, only the way the operands reach shared memory differs. See [`super`] for the
//! problem; the entry points are generated there.
//!
//! Every body's `# Safety` is the launch contract of the study's entry points: one block of
//! `style.threads()` threads with `shared_layout(style, STAGES).bytes` of dynamic shared
//! memory, `a` holding `32 * k` floats, `b` `k * 32`, `c` `32 * 32` (16-byte aligned),
//! `1 <= k <= MAX_K`.
//!
//! Every pipelined style fills all `STAGES` buffers up front. At step `j` a thread waits for
//! buffer `j mod STAGES`, reads its operands into registers, hands the buffer back, refills it
//! with the operands of step `j + STAGES` (async-groups: after a second `barrier.sync`;
//! mbarriers: after the `empty` phase completes) and only then does the 32 FMAs of step `j`.
//! A copy thus has almost `STAGES` steps to land, so even two stages hide most of the copy
//! latency; issuing the copy early matters more than hiding the `empty` round trip behind the
//! FMAs (docs/design.md: Study: refill before the math). Loops commit a stage every step, even
//! when nothing is left to copy, so the waits stay uniform.
//!
//! The kernels are one warp (two for [`warp_specialized`]): a thread's row of C is its lane.

#[cfg(target_feature = "sm_90")]
use super::shapes::TENSOR_STEPS;
use super::shapes::{M, N, Style, WARP_SIZE, shared_layout};
use crate::Quad;
use gpu::barrier::Barrier;
use gpu::group::Warp;
use gpu::layout::{Mbarrier, PipelineSharedState};
use gpu::memcpy_async::AlignedSize;
use gpu::memcpy_async::completion::{Completion, Unbound};
use gpu::memcpy_async::cp_async::{memcpy_async, memcpy_async_group};
use gpu::pipeline::{BlockPipeline, Consumer, Producer, ThreadPipeline};
use gpu::pipeline_state::PipelineState;
use gpu::ptx;
use gpu::shared::Shared;
#[cfg(target_feature = "sm_90")]
use gpu::{
    memcpy_async::bulk::{memcpy_async_bulk, memcpy_async_tensor},
    pipeline::BulkPipeline,
    tensor_map::TensorMapRef,
};

/// The operands as one thread sees them.
#[derive(Clone, Copy)]
struct Problem {
    a: *const f32,
    b: *const f32,
    k: u32,
}

impl Problem {
    /// `A[row][step]`.
    #[inline(always)]
    fn a_elem(self, row: u32, step: u32) -> *const f32 {
        self.a
            .wrapping_add(row as usize * self.k as usize + step as usize)
    }

    /// `B[step][col]`.
    #[inline(always)]
    fn b_elem(self, step: u32, col: u32) -> *const f32 {
        self.b
            .wrapping_add(step as usize * N as usize + col as usize)
    }
}

/// The stage buffers at the start of dynamic shared memory: stage `s` holds column `k` of A
/// (`M` floats), then row `k` of B (`N` floats).
#[inline(always)]
fn stage_buffer(stage: u32) -> Shared<f32> {
    shared_layout(Style::SyncBaseline, 1).stage(stage)
}

/// The mbarriers after the stage buffers: `full[0..S]`, then `empty[0..S]`.
#[inline(always)]
fn stage_barriers<const STAGES: usize>(style: Style) -> Shared<PipelineSharedState<STAGES>> {
    shared_layout(style, STAGES as u32).barriers()
}

/// The operands of one step for one thread: `A[row][k]` and row `k` of B.
#[derive(Clone, Copy)]
struct StepOperands {
    a: f32,
    b: [[f32; 4]; N as usize / 4],
}

/// Reads a step's operands from its stage buffer: one `LDS` for the A value, eight `LDS.128`
/// for the B row (the same for every thread: a broadcast). Once they are in registers the
/// buffer can be handed back for refilling, before the math.
///
/// # Safety
/// The stage's copies landed and are visible to this thread; nothing writes the stage
/// meanwhile.
#[inline(always)]
unsafe fn load_operands(stage: Shared<f32>, row: u32) -> StepOperands {
    // SAFETY: the caller waited for the stage's copies and made them visible.
    let a = unsafe { stage.add(row).read() };
    let mut b = [[0.0; 4]; N as usize / 4];
    for (quad, b) in (0..).zip(b.iter_mut()) {
        // SAFETY: as above; the B row starts 128 bytes into a 256-byte aligned stage.
        *b = unsafe { stage.add(M + 4 * quad).cast::<[f32; 4]>().read() };
    }
    StepOperands { a, b }
}

/// `acc[j] += A[row][k] * B[k][j]`: 32 FMAs.
#[inline(always)]
fn accumulate(acc: &mut [f32; N as usize], ops: &StepOperands) {
    for quad in 0..N as usize / 4 {
        for i in 0..4 {
            let j = 4 * quad + i;
            acc[j] = ptx::fma_f32(ops.a, ops.b[quad][i], acc[j]);
        }
    }
}

/// `C[row][..] = acc`.
///
/// # Safety
/// `c` holds 32x32 floats, 16-byte aligned; `row < 32`.
#[inline(always)]
unsafe fn store_row(c: *mut f32, row: u32, acc: &[f32; N as usize]) {
    for quad in 0..N / 4 {
        let j = 4 * quad as usize;
        let value = Quad([acc[j], acc[j + 1], acc[j + 2], acc[j + 3]]);
        // SAFETY: `c` holds 32x32 floats and is 16-byte aligned (launch contract).
        unsafe {
            c.add(row as usize * N as usize + j)
                .cast::<Quad>()
                .write(value)
        };
    }
}

/// Raw PTX: this lane's two copies for `step` into `stage` (`A[lane][step]` to slot `lane`,
/// `B[step][lane]` to slot `M + lane`), 4 bytes each.
///
/// # Safety
/// `step < k`; the stage buffer is free (no one reads or writes it until the copies are
/// known complete).
#[inline(always)]
unsafe fn copy_step_raw(p: Problem, stage: Shared<f32>, lane: u32, step: u32) {
    // SAFETY: in-range operands (step < k), 4-byte aligned; the stage is free (caller).
    unsafe {
        ptx::cp_async_ca::<4>(stage.add(lane).addr(), p.a_elem(lane, step).cast());
        ptx::cp_async_ca::<4>(stage.add(M + lane).addr(), p.b_elem(step, lane).cast());
    }
}

/// One A element per thread.
const A_ELEMENT: AlignedSize<4> = AlignedSize::of(4);
/// A B row, split over a warp: one 4-byte chunk per lane.
const B_ROW: AlignedSize<4> = AlignedSize::of(N * 4);

/// Bound `memcpy_async` calls per thread in [`copy_step`]: bound to a `Barrier`, each is an
/// arrival.
const BOUND_COPIES_PER_STEP: u32 = 1;

/// Library: the same copies as [`copy_step_raw`] through `memcpy_async` — the A element by
/// this thread, the B row by its warp (lane `i` takes chunk `i`). The A copy is left
/// [`Unbound`]: binding the B row to `completion` covers both (one arrival per thread, not
/// two, on a `Barrier`).
///
/// # Safety
/// As [`copy_step_raw`]; `completion` is open for this thread's binding.
#[inline(always)]
unsafe fn copy_step<C: Completion>(
    p: Problem,
    stage: Shared<f32>,
    warp: &Warp,
    step: u32,
    completion: &C,
) {
    let lane = warp.lane();
    // SAFETY: as for `copy_step_raw`; the completion is open (caller).
    unsafe {
        memcpy_async(stage.add(lane), p.a_elem(lane, step), A_ELEMENT, &Unbound);
        memcpy_async_group(warp, stage.add(M), p.b_elem(step, 0), B_ROW, completion);
    }
}

/// Runs `step(s)` for every `s` in `0..k`, two per loop iteration (then the odd one out), as
/// nvcc does for the C++ twins of the synchronous and async-group kernels: the two steps'
/// independent instructions interleave, and the loop's bookkeeping is paid once per pair; a
/// loop of single steps is slower (docs/design.md: Study: two steps per loop iteration).
#[inline(always)]
fn for_each_step(k: u32, mut step: impl FnMut(u32)) {
    let mut s = 0;
    while s + 1 < k {
        step(s);
        step(s + 1);
        s += 2;
    }
    if s < k {
        step(s);
    }
}

/// The ring index after `index`.
#[inline(always)]
fn next_stage<const STAGES: usize>(index: u32) -> u32 {
    if index + 1 == STAGES as u32 {
        0
    } else {
        index + 1
    }
}

/// [`Style::SyncBaseline`]: plain loads and stores, a block barrier before and after the math.
///
/// # Safety
/// The study's launch contract (module docs).
pub unsafe fn sync_baseline<const STAGES: usize>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    k: u32,
) {
    const { assert!(STAGES == 1, "the synchronous baseline has one buffer") };
    let p = Problem { a, b, k };
    let lane = ptx::lane_id();
    let stage = stage_buffer(0);
    let mut acc = [0.0; N as usize];
    for_each_step(k, |step| {
        // SAFETY: in-range reads (launch contract); the trailing barrier of the previous
        // step ordered every read of the stage before these writes.
        unsafe {
            let a = p.a_elem(lane, step).read();
            let b = p.b_elem(step, lane).read();
            stage.add(lane).write(a);
            stage.add(M + lane).write(b);
        }
        ptx::barrier_sync();
        // SAFETY: the barrier made every thread's stores visible.
        let ops = unsafe { load_operands(stage, lane) };
        accumulate(&mut acc, &ops);
        ptx::barrier_sync();
    });
    // SAFETY: launch contract.
    unsafe { store_row(c, lane, &acc) };
}

/// [`Style::RawAsyncGroup`]: raw `cp.async` + `commit_group` / `wait_group` + `barrier.sync`.
///
/// # Safety
/// The study's launch contract (module docs).
pub unsafe fn raw_async_group<const STAGES: usize>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    let stages = STAGES as u32;
    let p = Problem { a, b, k };
    let lane = ptx::lane_id();
    for s in 0..stages {
        if s < k {
            // SAFETY: fresh buffers; s < k.
            unsafe { copy_step_raw(p, stage_buffer(s), lane, s) };
        }
        ptx::commit_group();
    }
    let mut acc = [0.0; N as usize];
    let mut current = 0;
    for_each_step(k, |step| {
        // Committed: STAGES + step groups; the one of `step` is complete once at most
        // STAGES - 1 newer ones are pending.
        ptx::wait_group(stages - 1);
        // Everyone's copies of `step` are visible.
        ptx::barrier_sync();
        // SAFETY: waited and synced above.
        let ops = unsafe { load_operands(stage_buffer(current), lane) };
        // Everyone has its operands: the buffer may be refilled.
        ptx::barrier_sync();
        if step + stages < k {
            // SAFETY: freed by the barrier above.
            unsafe { copy_step_raw(p, stage_buffer(current), lane, step + stages) };
        }
        ptx::commit_group();
        accumulate(&mut acc, &ops);
        current = next_stage::<STAGES>(current);
    });
    // SAFETY: launch contract.
    unsafe { store_row(c, lane, &acc) };
}

/// [`Style::RawMbarrier`]: raw `cp.async`, a `full` and an `empty` mbarrier per stage.
///
/// # Safety
/// The study's launch contract (module docs).
pub unsafe fn raw_mbarrier<const STAGES: usize>(a: *const f32, b: *const f32, c: *mut f32, k: u32) {
    const { assert!(STAGES >= 2) };
    let stages = STAGES as u32;
    let p = Problem { a, b, k };
    let lane = ptx::lane_id();
    let barriers = stage_barriers::<STAGES>(Style::RawMbarrier).cast::<Mbarrier>();
    let full = |s: u32| barriers.add(s);
    let empty = |s: u32| barriers.add(stages + s);
    if ptx::thread_idx_x() == 0 {
        for s in 0..stages {
            // SAFETY: reserved, aligned slots; the barrier below publishes the init.
            unsafe {
                ptx::mbarrier_init(full(s), WARP_SIZE);
                ptx::mbarrier_init(empty(s), WARP_SIZE);
            }
        }
    }
    ptx::barrier_sync();

    // The first fill of every stage: the buffers start free, nothing to wait for (and no
    // wait for the phase before phase 0, which racecheck mis-tracks: see `BlockPipeline`).
    for s in 0..stages {
        // SAFETY: fresh buffers, s < k; the mbarriers are initialized.
        unsafe {
            if s < k {
                copy_step_raw(p, stage_buffer(s), lane, s);
            }
            ptx::cp_async_mbarrier_arrive_noinc(full(s));
        }
    }
    // Use `n >= 1` of a stage waits for the `empty` phase in which use `n - 1` was
    // released: phase 0 first, like a consumer's first wait.
    let mut refill = PipelineState::<STAGES>::consumer_start();
    let mut drain = PipelineState::<STAGES>::consumer_start();
    // SAFETY (both closures): the mbarriers are initialized; every thread arrives once per
    // phase on each; a buffer is written only after its `empty` phase completed and read
    // only after its `full` phase completed.
    let mut produce = |step: u32| unsafe {
        ptx::mbarrier_wait_parity(empty(refill.index()), refill.phase());
        if step < k {
            copy_step_raw(p, stage_buffer(refill.index()), lane, step);
        }
        ptx::cp_async_mbarrier_arrive_noinc(full(refill.index()));
        refill.advance();
    };
    let mut consume = || unsafe {
        ptx::mbarrier_wait_parity(full(drain.index()), drain.phase());
        let ops = load_operands(stage_buffer(drain.index()), lane);
        let _ = ptx::mbarrier_arrive(empty(drain.index()));
        drain.advance();
        ops
    };
    let mut acc = [0.0; N as usize];
    for step in 0..k {
        let ops = consume();
        produce(step + stages);
        accumulate(&mut acc, &ops);
    }
    // SAFETY: launch contract.
    unsafe { store_row(c, lane, &acc) };
}

/// [`Style::SplitBarrier`]: per stage a `full` barrier (copies bound to it by `memcpy_async`, one arrival per
/// thread; every thread also arrives when it is ready to read) and an `empty` barrier
/// (every thread arrives once it has its operands). The split: a thread arrives on the
/// next step's `full` barrier *before* the math of this step and waits for it only at the
/// next step, so the phase completes while it computes. Waits go by phase parity: a
/// token-returning `arrive` makes the thread wait for the token's round trip to shared
/// memory (docs/design.md: Split barrier: waits by parity, not by token).
///
/// # Safety
/// The study's launch contract (module docs).
pub unsafe fn split_barrier<const STAGES: usize>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    let stages = STAGES as u32;
    let p = Problem { a, b, k };
    let warp = Warp::this_warp();
    let slots = stage_barriers::<STAGES>(Style::SplitBarrier).cast::<Mbarrier>();
    if ptx::thread_idx_x() == 0 {
        for s in 0..stages {
            // SAFETY: reserved, aligned slots; the barrier below publishes the init.
            unsafe {
                // full: per thread, the arrivals of its bound copies and its own.
                let _ = Barrier::init(slots.add(s), WARP_SIZE * (BOUND_COPIES_PER_STEP + 1));
                let _ = Barrier::init(slots.add(stages + s), WARP_SIZE);
            }
        }
    }
    ptx::barrier_sync();
    // SAFETY: initialized above, ordered by the barrier, never invalidated.
    let full = |s: u32| unsafe { Barrier::from_initialized(slots.add(s)) };
    // SAFETY: as above.
    let empty = |s: u32| unsafe { Barrier::from_initialized(slots.add(stages + s)) };

    for s in 0..stages.min(k) {
        // SAFETY: fresh buffers, s < k; full[s] is in its first phase.
        unsafe { copy_step(p, stage_buffer(s), &warp, s, &full(s)) };
    }
    // Both barriers of a stage complete one phase per use of the stage, so one stage
    // index and phase parity serve both.
    let mut stage = PipelineState::<STAGES>::consumer_start();
    if k > 0 {
        full(0).arrive_no_token();
    }
    let mut acc = [0.0; N as usize];
    for step in 0..k {
        let (current, phase) = (stage.index(), stage.phase());
        full(current).wait_parity(phase);
        // SAFETY: the phase completed: every thread arrived and every bound copy landed.
        let ops = unsafe { load_operands(stage_buffer(current), warp.lane()) };
        // Everyone has its operands: the buffer may be refilled.
        empty(current).arrive_no_token();
        empty(current).wait_parity(phase);
        if step + stages < k {
            // SAFETY: `full[current]`'s phase for `step` completed for everyone (they all
            // waited on it before arriving on `empty`), so these copies join the next one.
            unsafe {
                copy_step(
                    p,
                    stage_buffer(current),
                    &warp,
                    step + stages,
                    &full(current),
                )
            };
        }
        stage.advance();
        // Split arrive/wait: arrive on the next stage now, wait for it after the math.
        if step + 1 < k {
            full(stage.index()).arrive_no_token();
        }
        accumulate(&mut acc, &ops);
    }
    // SAFETY: launch contract.
    unsafe { store_row(c, warp.lane(), &acc) };
}

/// [`Style::ThreadPipeline`]: the library's [`ThreadPipeline`] + `barrier.sync`.
///
/// # Safety
/// The study's launch contract (module docs).
pub unsafe fn thread_pipeline<const STAGES: usize>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    let stages = STAGES as u32;
    let p = Problem { a, b, k };
    let warp = Warp::this_warp();
    let mut pipeline = ThreadPipeline::<STAGES>::new();
    let (mut producer, mut consumer) = pipeline.split();
    let mut produce = |step: u32| {
        let stage = producer.producer_acquire();
        if step < k {
            // SAFETY: the buffer is free (fresh, or released after the barrier below).
            unsafe { copy_step(p, stage_buffer(stage.index()), &warp, step, &stage) };
        }
        stage.producer_commit();
    };
    for s in 0..stages {
        produce(s);
    }
    let mut acc = [0.0; N as usize];
    for_each_step(k, |step| {
        let ready = consumer.consumer_wait();
        // Everyone's copies of `step` are visible.
        ptx::barrier_sync();
        // SAFETY: waited and synced above.
        let ops = unsafe { load_operands(stage_buffer(ready.index()), warp.lane()) };
        ready.consumer_release();
        // Everyone has its operands: the buffer may be refilled.
        ptx::barrier_sync();
        produce(step + stages);
        accumulate(&mut acc, &ops);
    });
    // SAFETY: launch contract.
    unsafe { store_row(c, warp.lane(), &acc) };
}

/// [`Style::BlockPipeline`]: the library's [`BlockPipeline`], every thread both roles.
///
/// # Safety
/// The study's launch contract (module docs).
pub unsafe fn block_pipeline<const STAGES: usize>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    k: u32,
) {
    const { assert!(STAGES >= 2) };
    let stages = STAGES as u32;
    let p = Problem { a, b, k };
    let warp = Warp::this_warp();
    // SAFETY: every thread calls this; the slots are reserved by the layout.
    let mut pipeline = unsafe {
        BlockPipeline::<STAGES>::init_all_threads(stage_barriers(Style::BlockPipeline), WARP_SIZE)
    };
    let (mut producer, mut consumer) = pipeline.split();
    let mut produce = |step: u32| {
        let stage = producer.producer_acquire();
        if step < k {
            // SAFETY: the stage's buffer is free (acquired), step < k.
            unsafe { copy_step(p, stage_buffer(stage.index()), &warp, step, &stage) };
        }
        stage.producer_commit();
    };
    for s in 0..stages {
        produce(s);
    }
    let mut acc = [0.0; N as usize];
    for step in 0..k {
        let ready = consumer.consumer_wait();
        // SAFETY: the stage's phase completed: every producer's copies landed.
        let ops = unsafe { load_operands(stage_buffer(ready.index()), warp.lane()) };
        ready.consumer_release();
        produce(step + stages);
        accumulate(&mut acc, &ops);
    }
    // SAFETY: launch contract.
    unsafe { store_row(c, warp.lane(), &acc) };
}

/// [`Style::WarpSpecialized`]: warp 0 only copies, warp 1 only computes: lane `i` of the producer warp brings the
/// operands that lane `i` of the consumer warp (row `i` of C) and its neighbours read.
///
/// # Safety
/// The study's launch contract (module docs).
pub unsafe fn warp_specialized<const STAGES: usize>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    k: u32,
) {
    let p = Problem { a, b, k };
    let warp = Warp::this_warp();
    // SAFETY: every thread calls this; one warp produces, one consumes, every stage.
    let mut pipeline = unsafe {
        BlockPipeline::<STAGES>::init_partitioned(
            stage_barriers(Style::WarpSpecialized),
            WARP_SIZE,
            WARP_SIZE,
        )
    };
    let (mut producer, mut consumer) = pipeline.split();
    if warp.index_in_block() == 0 {
        for step in 0..k {
            let stage = producer.producer_acquire();
            // SAFETY: the stage's buffer is free (acquired), step < k.
            unsafe { copy_step(p, stage_buffer(stage.index()), &warp, step, &stage) };
            stage.producer_commit();
        }
        // No copy may outlive the thread that issued it.
        ptx::wait_all();
    } else {
        let mut acc = [0.0; N as usize];
        for _ in 0..k {
            let ready = consumer.consumer_wait();
            // SAFETY: the stage's phase completed: the producer warp's copies landed.
            let ops = unsafe { load_operands(stage_buffer(ready.index()), warp.lane()) };
            ready.consumer_release();
            accumulate(&mut acc, &ops);
        }
        // SAFETY: launch contract.
        unsafe { store_row(c, warp.lane(), &acc) };
    }
}

/// [`Style::Tensor`] (sm_90): the copy engine brings [`TENSOR_STEPS`] steps per stage — A's
/// `32 x 4` box (rows of 4 floats: a tensor copy, since A's columns are strided) and B's 4
/// rows (512 contiguous bytes: a 1-D bulk copy) — both completing the stage's `full` phase
/// on their bytes. One elected lane issues every copy; every lane reads a stage's operands
/// (one `LDS.128` of A, 32 of B), releases it, lets the elected lane refill it, then does the
/// 128 FMAs.
///
/// # Safety
/// The study's launch contract (module docs) with `k % 4 == 0` and `a` a tensor map of A
/// (dimensions `(k, 32)`, box `(4, 32)`).
#[cfg(target_feature = "sm_90")]
pub unsafe fn tensor<const STAGES: usize>(a: TensorMapRef, b: *const f32, c: *mut f32, k: u32) {
    const STEPS: usize = TENSOR_STEPS as usize;
    const A_BOX: AlignedSize<16> = AlignedSize::of(M * TENSOR_STEPS * 4);
    const B_ROWS: AlignedSize<16> = AlignedSize::of(TENSOR_STEPS * N * 4);
    let layout = shared_layout(Style::Tensor, STAGES as u32);
    let groups = k / TENSOR_STEPS;
    let lane = ptx::thread_idx_x();
    // SAFETY: every thread calls it; one lane produces, every lane consumes, every stage.
    let mut pipeline = unsafe { BulkPipeline::<STAGES>::init(layout.barriers(), WARP_SIZE) };
    let (mut producer, mut consumer) = pipeline.split();
    let producing = ptx::elect_one();
    if producing {
        ptx::prefetch_tensormap(a);
    }
    let mut produce = |group: u32| {
        if !producing {
            return;
        }
        let stage = producer.producer_acquire();
        if group < groups {
            let buffer = layout.stage::<f32>(stage.index());
            let step = group * TENSOR_STEPS;
            // SAFETY: the stage is free (acquired) and holds A's box then B's rows; the map
            // describes A with this box, and B has rows `step..step + 4` (k % 4 == 0); the
            // full phase expects this lane's commit below.
            unsafe {
                memcpy_async_tensor(buffer, a, [step as i32, 0], A_BOX, &stage);
                let rows = b.wrapping_add((step * N) as usize);
                memcpy_async_bulk(buffer.add(M * TENSOR_STEPS), rows, B_ROWS, &stage, None);
            }
        }
        stage.producer_commit();
    };
    for group in 0..STAGES as u32 {
        produce(group);
    }
    let mut acc = [0.0; N as usize];
    for group in 0..groups {
        let ready = consumer.consumer_wait();
        let buffer = layout.stage::<f32>(ready.index());
        // SAFETY: the stage's phase completed: both copies landed. A's box is row-major
        // (row `lane` holds its 4 steps, 16-byte aligned), B's 4 rows follow it.
        let (a_quad, b_rows) = unsafe {
            let a_quad = buffer.add(lane * TENSOR_STEPS).cast::<[f32; 4]>().read();
            let mut b_rows = [[[0.0f32; 4]; N as usize / 4]; STEPS];
            for (s, row) in (0..).zip(b_rows.iter_mut()) {
                for (quad, b) in (0..).zip(row.iter_mut()) {
                    let at = M * TENSOR_STEPS + s * N + 4 * quad;
                    *b = buffer.add(at).cast::<[f32; 4]>().read();
                }
            }
            (a_quad, b_rows)
        };
        ready.consumer_release();
        produce(group + STAGES as u32);
        // The elected lane rejoins the warp before the math (else it runs it apart).
        ptx::syncwarp();
        for s in 0..STEPS {
            accumulate(
                &mut acc,
                &StepOperands {
                    a: a_quad[s],
                    b: b_rows[s],
                },
            );
        }
    }
    // SAFETY: launch contract.
    unsafe { store_row(c, lane, &acc) };
}
