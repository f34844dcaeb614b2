//! Stage and phase bookkeeping of a multi-stage pipeline (CUTLASS's `PipelineState`), in plain
//! Rust so that it is tested on the host. The mbarriers it indexes are laid out by
//! [`PipelineSharedState`](crate::layout::PipelineSharedState).
//!
//! A pipeline of `STAGES` buffers walks them in a ring. Each buffer has mbarriers whose phase
//! flips every time the ring passes, so a side (producer or consumer) needs the index of its
//! current stage and the parity of the phase it waits for there.
//!
//! The consumer starts at stage 0 waiting for phase parity 0 ("the first fill completed").
//! The producer starts at stage 0 with parity 1, the parity of the phase before phase 0: at
//! use `n` of a stage it waits for the phase in which use `n - 1` was released. On a fresh
//! mbarrier a wait for parity 1 would return at once ("every buffer starts free"), but the
//! block pipeline skips the first pass's waits instead (see
//! [`BlockPipeline`](crate::pipeline::BlockPipeline) for why).

/// A position in a pipeline of `STAGES` stages: stage index and phase parity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineState<const STAGES: usize> {
    index: u32,
    phase: u32,
}

impl<const STAGES: usize> PipelineState<STAGES> {
    const VALID: () = assert!(STAGES >= 1 && STAGES <= 32, "a pipeline has 1..=32 stages");

    /// Stage 0, waiting for phase 0 to complete: where consumers start.
    #[inline(always)]
    pub const fn consumer_start() -> Self {
        let () = Self::VALID;
        PipelineState { index: 0, phase: 0 }
    }

    /// Stage 0 with parity 1 (the phase before phase 0, which a fresh barrier reports
    /// complete): where producers start, since every buffer is free at first.
    #[inline(always)]
    pub const fn producer_start() -> Self {
        let () = Self::VALID;
        PipelineState { index: 0, phase: 1 }
    }

    /// The stage (buffer) index, `0..STAGES`.
    #[inline(always)]
    pub const fn index(self) -> u32 {
        // SAFETY: `index` only ever takes values 0..STAGES (constructors and `advance`);
        // saying so lets the compiler fold ring arithmetic built on it.
        unsafe { core::hint::assert_unchecked(self.index < STAGES as u32) };
        self.index
    }

    /// The parity (0 or 1) of the barrier phase to wait for at this stage.
    #[inline(always)]
    pub const fn phase(self) -> u32 {
        self.phase
    }

    /// Moves to the next stage; wrapping past the last flips the phase.
    #[inline(always)]
    pub fn advance(&mut self) {
        self.index += 1;
        if self.index == STAGES as u32 {
            self.index = 0;
            self.phase ^= 1;
        }
    }

    /// The state `steps` stages further on.
    #[inline]
    pub const fn advanced_by(self, steps: u32) -> Self {
        let stages = STAGES as u32;
        let total = self.index + steps % (2 * stages);
        let phase = self.phase ^ ((total / stages) & 1);
        PipelineState {
            index: total % stages,
            phase,
        }
    }
}
