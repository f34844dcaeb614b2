//! The library's self-test: kernels that exercise every abstraction on random data, checked
//! exactly by the host (`host selftest`, and the GPU tests).
//!
//! Each copy kernel streams `n` floats from `src` to `dst` through shared memory with one
//! abstraction ([`CopyForm`]). The input is cut into tiles of [`TILE_FLOATS`]; the blocks
//! share the tiles out in contiguous runs (about [`TILES_PER_BLOCK`] each) and push them
//! through a pipeline of `stages` buffers, so a pipeline wraps several times per block and
//! many blocks run at once. Threads read back elements that *other* threads copied, so a
//! missing wait or barrier shows up as wrong data. `dst` receives every tile: `dst[i] =
//! src[i]` for `i < n`, and zeros up to the next tile boundary for the zero-fill kernels,
//! which accept any `n`; the others need `n` to be a multiple of [`TILE_FLOATS`].
//! Parameters: `(src, dst, n)`.
//!
//! [`BARRIER_OPS`] records what the `Barrier` operations report ([`BarrierObservation`]), for
//! the host to compare with their specification.

use crate::layout::StagedLayout;

#[cfg(target_arch = "nvptx64")]
mod kernels;

/// Floats per tile (one stage buffer): 1 KiB.
pub const TILE_FLOATS: u32 = 256;
/// Bytes per tile.
pub const TILE_BYTES: u32 = TILE_FLOATS * 4;
/// Tiles per block the host launches for: the grid is `tiles / TILES_PER_BLOCK` blocks
/// (rounded up), and each block takes `tiles / grid` of them (rounded up).
pub const TILES_PER_BLOCK: u32 = 16;

/// Which abstraction a copy kernel exercises, with the parameters its body is generic over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyForm {
    /// Per-thread `memcpy_async` (16-byte `cg` chunks) into a `ThreadPipeline`, `barrier.sync`
    /// before reading and before refilling. 32 threads.
    ThreadPipeline {
        /// Pipeline depth.
        stages: u32,
    },
    /// Group `memcpy_async` (16-byte chunks) over the block into a `BlockPipeline`, all threads
    /// producer and consumer. 64 threads.
    BlockPipeline {
        /// Pipeline depth.
        stages: u32,
    },
    /// Warp 0 produces (group copy over the warp, 16-byte chunks), warp 1 consumes, through a
    /// partitioned `BlockPipeline`. 64 threads.
    WarpSpecialized {
        /// Pipeline depth.
        stages: u32,
    },
    /// Per-thread `memcpy_async` of `align`-byte chunks bound to two `Barrier`s in static
    /// shared memory (double buffering); arrive/wait with tokens. 32 threads.
    BarrierPerThread {
        /// Chunk size and alignment: 4, 8 or 16 bytes.
        align: u32,
    },
    /// Group `memcpy_async` over the warp (16-byte chunks) bound to two `Barrier`s. 32 threads.
    BarrierGroup,
    /// As [`CopyForm::BarrierGroup`], bound with `Uncounted` (the incrementing
    /// `cp.async.mbarrier.arrive`: the barriers expect the threads' own arrivals only). 32
    /// threads.
    BarrierUncounted,
    /// sm_90: one thread copies each tile with one bulk copy (`memcpy_async_bulk`) bound to
    /// two `Barrier`s — as the barrier's expected bytes (`mbarrier.expect_tx`), or with
    /// `arriving`, as one of its arrivals too (`Arriving`: `mbarrier.arrive.expect_tx`). 32
    /// threads.
    BulkBarrier {
        /// Whether the copy is bound with `Arriving`.
        arriving: bool,
    },
    /// `memcpy_async_zfill` of `align`-byte chunks over the block into a `BlockPipeline`;
    /// any `n`, the last tile padded with zeros. 64 threads.
    ZeroFill {
        /// Pipeline depth.
        stages: u32,
        /// Chunk size and alignment: 4, 8 or 16 bytes.
        align: u32,
    },
}

impl CopyForm {
    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            CopyForm::ThreadPipeline { .. }
            | CopyForm::BarrierPerThread { .. }
            | CopyForm::BarrierGroup
            | CopyForm::BarrierUncounted
            | CopyForm::BulkBarrier { .. } => 32,
            CopyForm::BlockPipeline { .. }
            | CopyForm::WarpSpecialized { .. }
            | CopyForm::ZeroFill { .. } => 64,
        }
    }

    /// Ring depth: the pipeline's stages, or the barrier forms' two buffers.
    pub const fn stages(self) -> u32 {
        match self {
            CopyForm::ThreadPipeline { stages }
            | CopyForm::BlockPipeline { stages }
            | CopyForm::WarpSpecialized { stages }
            | CopyForm::ZeroFill { stages, .. } => stages,
            CopyForm::BarrierPerThread { .. }
            | CopyForm::BarrierGroup
            | CopyForm::BarrierUncounted
            | CopyForm::BulkBarrier { .. } => BARRIER_FORM_BUFFERS,
        }
    }

    /// Chunk size of the copies (bytes).
    pub const fn align(self) -> u32 {
        match self {
            CopyForm::BarrierPerThread { align } | CopyForm::ZeroFill { align, .. } => align,
            _ => 16,
        }
    }

    /// The dynamic shared memory the kernel carves up: tile buffers then, for the block-scope
    /// pipelines, their mbarriers. The barrier forms use static shared memory (none dynamic).
    pub const fn shared_layout(self) -> StagedLayout {
        match self {
            CopyForm::BarrierPerThread { .. }
            | CopyForm::BarrierGroup
            | CopyForm::BarrierUncounted
            | CopyForm::BulkBarrier { .. } => StagedLayout::new(TILE_BYTES, 0, false),
            CopyForm::ThreadPipeline { stages } => StagedLayout::new(TILE_BYTES, stages, false),
            CopyForm::BlockPipeline { stages }
            | CopyForm::WarpSpecialized { stages }
            | CopyForm::ZeroFill { stages, .. } => StagedLayout::new(TILE_BYTES, stages, true),
        }
    }

    /// Whether it needs sm_90 (bulk copies): absent from the sm_80 PTX.
    pub const fn needs_sm90(self) -> bool {
        matches!(self, CopyForm::BulkBarrier { .. })
    }

    /// Whether `n` need not be a multiple of [`TILE_FLOATS`].
    pub const fn accepts_ragged(self) -> bool {
        matches!(self, CopyForm::ZeroFill { .. })
    }
}

/// Buffers (and barriers) of the barrier forms, in static shared memory.
pub const BARRIER_FORM_BUFFERS: u32 = 2;

/// One copy kernel of the self-test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyKernel {
    /// Entry point name.
    pub name: &'static str,
    /// The abstraction it exercises.
    pub form: CopyForm,
}

impl CopyKernel {
    /// Tiles for `n` floats (the last one partial for zero-fill kernels).
    pub const fn tiles(&self, n: u32) -> u32 {
        n.div_ceil(TILE_FLOATS)
    }

    /// Blocks to launch for `n` floats.
    pub const fn blocks(&self, n: u32) -> u32 {
        self.tiles(n).div_ceil(TILES_PER_BLOCK)
    }

    /// Floats the kernel writes to `dst`: whole tiles.
    pub const fn output_len(&self, n: u32) -> usize {
        (self.tiles(n) * TILE_FLOATS) as usize
    }
}

macro_rules! copy_kernels {
    ($($(#[$attr:meta])* $name:ident => $form:ident $({ $($param:ident : $value:literal),* })? by $body:ident,)*) => {
        /// Every copy kernel of the self-test (a `static`: one address per entry).
        pub static COPY_KERNELS: &[CopyKernel] = &[
            $(CopyKernel {
                name: stringify!($name),
                form: CopyForm::$form $({ $($param: $value),* })?,
            },)*
        ];

        /// The entry points: each calls its body with the form's parameters, in the order the
        /// table lists them, as its const generics.
        #[cfg(target_arch = "nvptx64")]
        mod entry_points {
            $(
                /// Copy kernel of the self-test (see [`super::COPY_KERNELS`]).
                ///
                /// # Safety
                /// Launched with the geometry [`super::CopyKernel`] gives for `n`, `src`
                /// holding `n` floats and `dst` `output_len(n)` floats, 16-byte aligned.
                $(#[$attr])*
                #[unsafe(no_mangle)]
                pub unsafe extern "ptx-kernel" fn $name(src: *const f32, dst: *mut f32, n: u32) {
                    // SAFETY: forwarded launch contract.
                    unsafe { super::kernels::$body::<$($($value),*)?>(src, dst, n) }
                }
            )*
        }
    };
}

copy_kernels! {
    copy_thread_pipeline_2 => ThreadPipeline { stages: 2 } by thread_pipeline,
    copy_thread_pipeline_3 => ThreadPipeline { stages: 3 } by thread_pipeline,
    copy_thread_pipeline_4 => ThreadPipeline { stages: 4 } by thread_pipeline,
    copy_thread_pipeline_5 => ThreadPipeline { stages: 5 } by thread_pipeline,
    copy_thread_pipeline_6 => ThreadPipeline { stages: 6 } by thread_pipeline,
    copy_thread_pipeline_7 => ThreadPipeline { stages: 7 } by thread_pipeline,
    copy_thread_pipeline_8 => ThreadPipeline { stages: 8 } by thread_pipeline,
    copy_block_pipeline_2 => BlockPipeline { stages: 2 } by block_pipeline,
    copy_block_pipeline_3 => BlockPipeline { stages: 3 } by block_pipeline,
    copy_block_pipeline_4 => BlockPipeline { stages: 4 } by block_pipeline,
    copy_block_pipeline_5 => BlockPipeline { stages: 5 } by block_pipeline,
    copy_block_pipeline_6 => BlockPipeline { stages: 6 } by block_pipeline,
    copy_block_pipeline_7 => BlockPipeline { stages: 7 } by block_pipeline,
    copy_block_pipeline_8 => BlockPipeline { stages: 8 } by block_pipeline,
    copy_warp_specialized_2 => WarpSpecialized { stages: 2 } by warp_specialized,
    copy_warp_specialized_4 => WarpSpecialized { stages: 4 } by warp_specialized,
    copy_warp_specialized_8 => WarpSpecialized { stages: 8 } by warp_specialized,
    copy_barrier_4 => BarrierPerThread { align: 4 } by barrier_per_thread,
    copy_barrier_8 => BarrierPerThread { align: 8 } by barrier_per_thread,
    copy_barrier_16 => BarrierPerThread { align: 16 } by barrier_per_thread,
    copy_barrier_group => BarrierGroup by barrier_group,
    copy_barrier_uncounted => BarrierUncounted by barrier_uncounted,
    #[cfg(target_feature = "sm_90")]
    copy_bulk_barrier => BulkBarrier { arriving: false } by bulk_barrier,
    #[cfg(target_feature = "sm_90")]
    copy_bulk_barrier_arriving => BulkBarrier { arriving: true } by bulk_barrier,
    copy_zfill_4 => ZeroFill { stages: 3, align: 4 } by zero_fill,
    copy_zfill_8 => ZeroFill { stages: 3, align: 8 } by zero_fill,
    copy_zfill_16 => ZeroFill { stages: 3, align: 16 } by zero_fill,
}

/// Looks a copy kernel up by name.
pub fn find(name: &str) -> Option<&'static CopyKernel> {
    COPY_KERNELS.iter().find(|k| k.name == name)
}

/// The `Barrier` operations test: `barrier_ops(out: *mut u32)`, one block of
/// [`BARRIER_OPS_THREADS`] threads, writing one word per [`BarrierObservation`].
pub const BARRIER_OPS: &str = "barrier_ops";
/// Threads of the barrier operations test (two warps).
pub const BARRIER_OPS_THREADS: u32 = 64;
/// Bounded waits in the barrier operations test give up after this many polls and record a
/// timeout, instead of hanging the GPU on a broken barrier.
pub const BARRIER_OPS_POLLS: u32 = 1 << 20;

/// What `barrier_ops` observes: the discriminant is the output word it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum BarrierObservation {
    /// `ArrivalToken::pending_count` of the first of 64 arrivals.
    FirstTokenPendingCount,
    /// `test_wait` on phase 0 after one of 64 arrivals.
    PhaseZeroDoneAfterOneArrival,
    /// `wait` (bounded) on phase 0 after all 64 arrivals: 1 unless it timed out.
    PhaseZeroDoneAfterAllArrivals,
    /// Phase 1: warp 0 arrives and waits (bounded), warp 1 `arrive_and_drop`s.
    PhaseOneDoneWithDrop,
    /// Phase 2: warp 0 alone completes it, the expected count having dropped to 32.
    PhaseTwoDoneByWarpZeroAlone,
    /// `test_wait_parity(0)` after three phases.
    ParityZeroAfterThreePhases,
    /// `test_wait_parity(1)` after three phases.
    ParityOneAfterThreePhases,
    /// Threads whose own wait saw phase 0 complete (read back through a generic pointer).
    ThreadsThatSawPhaseZero,
    /// After `invalidate`, the slot re-initialized for one arrival: `arrive_and_wait`
    /// returns and phase 0 then reads complete.
    ReinitializedArriveAndWait,
}

impl BarrierObservation {
    /// Every observation, in output order.
    pub const ALL: [BarrierObservation; 9] = [
        BarrierObservation::FirstTokenPendingCount,
        BarrierObservation::PhaseZeroDoneAfterOneArrival,
        BarrierObservation::PhaseZeroDoneAfterAllArrivals,
        BarrierObservation::PhaseOneDoneWithDrop,
        BarrierObservation::PhaseTwoDoneByWarpZeroAlone,
        BarrierObservation::ParityZeroAfterThreePhases,
        BarrierObservation::ParityOneAfterThreePhases,
        BarrierObservation::ThreadsThatSawPhaseZero,
        BarrierObservation::ReinitializedArriveAndWait,
    ];

    /// The output word it is written to.
    pub const fn slot(self) -> usize {
        self as usize
    }

    /// The value the specification of the `Barrier` operations says it must have.
    pub const fn expected(self) -> u32 {
        match self {
            // The token holds the state before the arrival, which is still counted.
            BarrierObservation::FirstTokenPendingCount => BARRIER_OPS_THREADS,
            BarrierObservation::PhaseZeroDoneAfterOneArrival => 0,
            BarrierObservation::PhaseZeroDoneAfterAllArrivals => 1,
            BarrierObservation::PhaseOneDoneWithDrop => 1,
            BarrierObservation::PhaseTwoDoneByWarpZeroAlone => 1,
            // Phase 3 is current: parity 0 (phases 0 and 2) completed, parity 1 (phase 3) not.
            BarrierObservation::ParityZeroAfterThreePhases => 1,
            BarrierObservation::ParityOneAfterThreePhases => 0,
            BarrierObservation::ThreadsThatSawPhaseZero => BARRIER_OPS_THREADS,
            BarrierObservation::ReinitializedArriveAndWait => 1,
        }
    }

    /// What it is, in words.
    pub const fn describe(self) -> &'static str {
        match self {
            BarrierObservation::FirstTokenPendingCount => {
                "pending count in the token of the first of 64 arrivals (state before it)"
            }
            BarrierObservation::PhaseZeroDoneAfterOneArrival => {
                "phase 0 complete after 1 of 64 arrivals (test_wait)"
            }
            BarrierObservation::PhaseZeroDoneAfterAllArrivals => {
                "phase 0 complete after 64 arrivals (bounded wait, 1 = no timeout)"
            }
            BarrierObservation::PhaseOneDoneWithDrop => {
                "phase 1 complete: warp 0 arrive + bounded wait, warp 1 arrive_and_drop"
            }
            BarrierObservation::PhaseTwoDoneByWarpZeroAlone => {
                "phase 2 complete with warp 0 alone (expected count dropped to 32)"
            }
            BarrierObservation::ParityZeroAfterThreePhases => {
                "parity 0 reads complete after three phases"
            }
            BarrierObservation::ParityOneAfterThreePhases => {
                "parity 1 reads incomplete after three phases"
            }
            BarrierObservation::ThreadsThatSawPhaseZero => {
                "threads that saw phase 0 complete after their own wait"
            }
            BarrierObservation::ReinitializedArriveAndWait => {
                "after inval, the slot re-initialized for 1 arrival: arrive_and_wait completes phase 0"
            }
        }
    }
}

/// A kernel that waits forever on purpose — `hang_missing_arrival()`, one block of
/// [`HANG_THREADS`] threads and no parameters: its mbarrier expects one arrival more than the
/// block makes, the classic protocol bug. It exists to test the host's watchdog; the
/// self-test never runs it.
pub const HANG_KERNEL: &str = "hang_missing_arrival";
/// Threads of [`HANG_KERNEL`].
pub const HANG_THREADS: u32 = 32;

/// Words `barrier_ops` writes.
pub const BARRIER_OPS_OUTPUTS: usize = BarrierObservation::ALL.len();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        let k = find("copy_zfill_16").unwrap();
        assert_eq!(k.tiles(1), 1);
        assert_eq!(k.tiles(TILE_FLOATS), 1);
        assert_eq!(k.tiles(TILE_FLOATS + 1), 2);
        assert_eq!(k.output_len(TILE_FLOATS + 1), 2 * TILE_FLOATS as usize);
        assert_eq!(k.blocks(TILES_PER_BLOCK * TILE_FLOATS), 1);
        assert_eq!(k.blocks(TILES_PER_BLOCK * TILE_FLOATS + 1), 2);
        assert!(k.form.accepts_ragged());
        assert!(!find("copy_block_pipeline_2").unwrap().form.accepts_ragged());
    }

    #[test]
    fn pipeline_depths_two_to_eight() {
        for form in [
            |stages| CopyForm::ThreadPipeline { stages },
            |stages| CopyForm::BlockPipeline { stages },
        ] {
            let depths: Vec<u32> = (2..=8)
                .filter(|&s| COPY_KERNELS.iter().any(|k| k.form == form(s)))
                .collect();
            assert_eq!(depths, (2..=8).collect::<Vec<_>>(), "{:?}", form(0));
        }
    }

    #[test]
    fn every_alignment_is_covered() {
        for align in [4, 8, 16] {
            assert!(
                COPY_KERNELS
                    .iter()
                    .any(|k| k.form == CopyForm::BarrierPerThread { align })
            );
            assert!(
                COPY_KERNELS
                    .iter()
                    .any(|k| matches!(k.form, CopyForm::ZeroFill { align: a, .. } if a == align))
            );
        }
    }

    #[test]
    fn shared_memory_comes_from_the_layout() {
        let k = find("copy_block_pipeline_3").unwrap();
        assert_eq!(k.form.shared_layout().bytes, 3 * TILE_BYTES + 3 * 16);
        let k = find("copy_thread_pipeline_3").unwrap();
        assert_eq!(k.form.shared_layout().bytes, 3 * TILE_BYTES);
        assert_eq!(
            find("copy_barrier_4").unwrap().form.shared_layout().bytes,
            0
        );
    }

    #[test]
    fn observations_fill_their_slots_in_order() {
        for (i, o) in BarrierObservation::ALL.iter().enumerate() {
            assert_eq!(o.slot(), i);
        }
    }
}
