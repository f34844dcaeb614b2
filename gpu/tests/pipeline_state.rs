//! The stage/phase bookkeeping of the pipelines, checked on the host against a direct model:
//! after `n` steps a side is at stage `n mod S`, and the phase it waits for has flipped once
//! per trip around the ring.

use gpu::pipeline_state::PipelineState;
use proptest::prelude::*;

fn walk<const S: usize>(start: PipelineState<S>, steps: u32) -> PipelineState<S> {
    let mut state = start;
    for _ in 0..steps {
        state.advance();
    }
    state
}

fn check_against_model<const S: usize>(steps: u32, jump: u32) {
    let s = S as u32;
    let consumer = walk(PipelineState::<S>::consumer_start(), steps);
    assert_eq!(consumer.index(), steps % s);
    assert_eq!(consumer.phase(), (steps / s) % 2);
    let producer = walk(PipelineState::<S>::producer_start(), steps);
    assert_eq!(producer.index(), steps % s);
    assert_eq!(producer.phase(), 1 - (steps / s) % 2);
    // advanced_by agrees with stepping one at a time, from any state.
    assert_eq!(consumer.advanced_by(jump), walk(consumer, jump));
    assert_eq!(producer.advanced_by(jump), walk(producer, jump));
}

proptest! {
    #[test]
    fn advance_matches_the_model(steps in 0u32..2_000, jump in 0u32..2_000) {
        check_against_model::<1>(steps, jump);
        check_against_model::<2>(steps, jump);
        check_against_model::<3>(steps, jump);
        check_against_model::<4>(steps, jump);
        check_against_model::<7>(steps, jump);
        check_against_model::<8>(steps, jump);
    }

    #[test]
    fn advanced_by_handles_huge_jumps(jump in any::<u32>()) {
        let s = 5u32;
        let state = PipelineState::<5>::consumer_start().advanced_by(jump);
        prop_assert_eq!(state.index(), jump % s);
        prop_assert_eq!(state.phase(), (jump / s) % 2);
    }
}

/// An mbarrier that has completed `done` phases reports the phase of parity `parity` complete
/// iff `parity != done % 2` (PTX's `test_wait.parity` / `try_wait.parity`).
fn parity_complete(done: u32, parity: u32) -> bool {
    parity != done % 2
}

/// One ring of `S` stages driven by `schedule` (true: the producer tries to fill its next
/// stage; false: the consumer tries to release its next one), each stage's `full` and `empty`
/// mbarrier modelled by the phases it has completed. At every try, the side's parity wait must
/// say "go" exactly when the protocol allows it: the producer while fewer than `S` stages are
/// filled and not released, the consumer while one is.
fn run_ring<const S: usize>(schedule: &[bool]) {
    let mut producer = PipelineState::<S>::producer_start();
    let mut consumer = PipelineState::<S>::consumer_start();
    let mut full_done = [0u32; S];
    let mut empty_done = [0u32; S];
    let (mut filled, mut released) = (0u32, 0u32);
    for &producer_moves in schedule {
        if producer_moves {
            let s = producer.index() as usize;
            let free = parity_complete(empty_done[s], producer.phase());
            assert_eq!(
                free,
                filled - released < S as u32,
                "S = {S}: producer after {filled} fills, {released} releases"
            );
            if free {
                full_done[s] += 1; // the producer's copies land
                filled += 1;
                producer.advance();
            }
        } else {
            let c = consumer.index() as usize;
            let ready = parity_complete(full_done[c], consumer.phase());
            assert_eq!(
                ready,
                released < filled,
                "S = {S}: consumer after {filled} fills, {released} releases"
            );
            if ready {
                empty_done[c] += 1; // the consumer releases
                released += 1;
                consumer.advance();
            }
        }
    }
}

/// A producer `STAGES` ahead of the consumer finds every buffer still in use: its wait on the
/// next `empty` barrier blocks until the consumer releases that stage, then lets exactly one
/// more fill through.
#[test]
fn a_producer_stages_ahead_blocks() {
    const S: usize = 3;
    let mut producer = PipelineState::<S>::producer_start();
    let mut empty_done = [0u32; S];
    for _ in 0..S {
        let s = producer.index() as usize;
        assert!(
            parity_complete(empty_done[s], producer.phase()),
            "a free buffer blocked"
        );
        producer.advance();
    }
    // Back at stage 0, all S stages filled, none released.
    assert_eq!(producer.index(), 0);
    assert!(
        !parity_complete(empty_done[0], producer.phase()),
        "a producer STAGES ahead did not block"
    );
    // The consumer releases stage 0: the producer may refill it, and then blocks on stage 1.
    empty_done[0] += 1;
    assert!(parity_complete(empty_done[0], producer.phase()));
    producer.advance();
    assert!(!parity_complete(empty_done[1], producer.phase()));
}

proptest! {
    /// The property every pipeline relies on, in any interleaving of the two sides: a producer
    /// waits exactly while all stages are full (it never overwrites a stage a consumer still
    /// reads), and a consumer exactly while none is (it never reads a stage before its fill).
    #[test]
    fn producer_and_consumer_parities_interlock(
        schedule in proptest::collection::vec(any::<bool>(), 0..400),
    ) {
        run_ring::<1>(&schedule);
        run_ring::<2>(&schedule);
        run_ring::<3>(&schedule);
        run_ring::<4>(&schedule);
        run_ring::<8>(&schedule);
    }
}
