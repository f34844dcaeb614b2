//! The stage/phase bookkeeping of the pipelines, checked on the host against a direct model:
//! after `n` steps a side is at stage `n mod S`, and the phase it waits for has flipped once
//! per trip around the ring.

use gpu::layout::PipelineSharedState;
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

/// The property every pipeline relies on: a producer at round `r` of stage `s` waits for the
/// parity of the phase in which consumers released round `r - 1`, and a consumer waits for
/// the parity of the phase in which round `r` was filled.
#[test]
fn producer_and_consumer_parities_interlock() {
    const S: usize = 3;
    let mut producer = PipelineState::<S>::producer_start();
    let mut consumer = PipelineState::<S>::consumer_start();
    // Phases completed so far on each stage's `full` and `empty` barrier.
    let mut full_done = [0u32; S];
    let mut empty_done = [0u32; S];
    let parity_complete = |done: u32, parity: u32| {
        // An mbarrier in phase `done` reports parity p complete iff p != done % 2.
        parity != done % 2
    };
    for _ in 0..50 {
        let s = producer.index() as usize;
        assert!(
            parity_complete(empty_done[s], producer.phase()),
            "producer blocked forever"
        );
        full_done[s] += 1; // the producer's copies land
        producer.advance();
        let c = consumer.index() as usize;
        assert!(
            parity_complete(full_done[c], consumer.phase()),
            "consumer would miss data"
        );
        empty_done[c] += 1; // the consumer releases
        consumer.advance();
    }
    // A consumer must not see a stage as full before its first fill.
    let fresh = PipelineState::<S>::consumer_start();
    assert!(!parity_complete(0, fresh.phase()));
}

#[test]
fn shared_state_is_two_mbarriers_per_stage() {
    assert_eq!(PipelineSharedState::<1>::BYTES, 16);
    assert_eq!(PipelineSharedState::<4>::BYTES, 64);
    assert_eq!(std::mem::align_of::<PipelineSharedState<3>>(), 8);
}
