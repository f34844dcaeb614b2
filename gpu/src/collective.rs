//! Collective mainloops: the k-loop of a block that multiplies tile after tile from a
//! pipeline, written once over any [`Consumer`](crate::pipeline::Consumer) and any k-pipelined
//! multiply ([`StageMma`]), with the style's own code between the steps. CUTLASS's collective
//! layer, between the pipelines and a kernel.
//!
//! [`consume_k_tiles!`](crate::consume_k_tiles) is the consumer's loop of the `cp.async` GEMM styles: wait for a stage,
//! start the multiply on it, then per k-tile multiply all but its last k (every read of the
//! stage is then issued), release the stage, wait for the next one and advance the multiply
//! onto it (its first k's operands load while the previous k-tile's last k multiplies).
//! It expands to the loop written out by hand, so the kernels built on it compile as before:
//! the PTX fingerprints of the measured kernels show it.

/// A multiply that walks a stage's k, its operands one k ahead of the math (a fragment
/// pipeline): started on the first stage, then per k-tile [`multiply_all_but_last`]
/// (after which every read of that stage is issued), [`advance`] onto the next stage, and
/// [`finish`] after the last.
///
/// [`multiply_all_but_last`]: StageMma::multiply_all_but_last
/// [`advance`]: StageMma::advance
/// [`finish`]: StageMma::finish
pub trait StageMma<Ctx> {
    /// The accumulators.
    type Acc;

    /// Multiplies all but the last k of stage `s`, and holds the last k's operands; `ctx` is
    /// what the multiply reads the stage through (the block's tile, its layout).
    ///
    /// # Safety
    /// Stage `s` is the one started or advanced onto; its copies landed and are visible to
    /// this thread; nothing writes it until it is released.
    unsafe fn multiply_all_but_last(&mut self, ctx: &Ctx, s: u32, acc: &mut Self::Acc);

    /// Loads stage `s`'s first k, then multiplies the held last k of the previous stage.
    ///
    /// # Safety
    /// As [`StageMma::multiply_all_but_last`], for the next stage `s`.
    unsafe fn advance(&mut self, ctx: &Ctx, s: u32, acc: &mut Self::Acc);

    /// Multiplies the held last k of the last k-tile.
    fn finish(self, ctx: &Ctx, acc: &mut Self::Acc);
}

/// Runs the consumer's side of `tiles >= 1` k-tiles: waits for each stage in turn,
/// multiplies it with the [`StageMma`] that `start` begins on the first stage, and releases
/// it, with the style's own code between the steps (see the module docs for the order):
///
/// ```ignore
/// // SAFETY: every stage is read after its wait; `tiles >= 1` stages are committed.
/// unsafe { gpu::consume_k_tiles! {
///     consumer: consumer,           // a `Consumer` (`&mut`-able place)
///     tiles: tiles,                 // k-tiles, at least 1
///     context: &block,              // what the multiply reads stages through
///     start(s): FragmentPipe::start(&block, f, s),
///     acc: &mut acc,
///     after_wait: { ptx::barrier_sync(); },
///     before_multiply(t): { produce(t + STAGES - 1); },
///     after_release(t): {},
/// } }
/// ```
///
/// The loop it writes is token for token the one the GEMM styles wrote out by hand, so their
/// PTX is unchanged; two other forms moved their code (docs/design.md: "One mainloop, proven
/// free").
///
/// # Safety
/// Expands to `unsafe` calls of [`StageMma`], so it is written inside an `unsafe` block, by
/// which the caller promises that every stage the
/// consumer waits for holds its k-tile once its wait returns and `after_wait` ran (its copies
/// landed and are visible to this thread), that `start(s)` may read stage `s` then, and that
/// the producer side commits `tiles >= 1` stages.
#[macro_export]
macro_rules! consume_k_tiles {
    (
        consumer: $consumer:expr,
        tiles: $tiles:expr,
        context: $ctx:expr,
        start($s:ident): $start:expr,
        acc: $acc:expr,
        after_wait: $after_wait:block,
        before_multiply($t_before:ident): $before:block,
        after_release($t_after:ident): $after:block $(,)?
    ) => {{
        use $crate::collective::StageMma as _;
        let (ctx, acc) = ($ctx, $acc);
        let mut ready = $consumer.consumer_wait();
        $after_wait
        let $s = ready.index();
        let mut mma = $start;
        let mut t = 0;
        loop {
            {
                let $t_before = t;
                $before
            }
            mma.multiply_all_but_last(ctx, ready.index(), acc);
            // Every read of the stage is issued; the release orders them before its refill.
            ready.consumer_release();
            {
                let $t_after = t;
                $after
            }
            t += 1;
            if t == $tiles {
                break;
            }
            ready = $consumer.consumer_wait();
            $after_wait
            mma.advance(ctx, ready.index(), acc);
        }
        mma.finish(ctx, acc);
    }};
}

#[cfg(target_feature = "sm_90a")]
pub mod tensor_core;
#[cfg(target_feature = "sm_90a")]
pub mod turns;
