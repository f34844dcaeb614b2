//! Test kernels for the library: each streams `n` floats from `src` to `dst` through shared
//! memory with one abstraction, so the host can check every form on random data.
//!
//! Every kernel has the parameters `(src, dst, n)`. The input is cut into tiles of
//! [`TILE_FLOATS`]; block `b` handles tiles `b * TILES_PER_BLOCK ..` through a pipeline of
//! `stages` buffers (so a pipeline wraps several times per block and many blocks run at once).
//! Threads read back elements that *other* threads copied, so a missing wait or barrier shows
//! up as wrong data. `dst` receives every tile: `dst[i] = src[i]` for `i < n`, and zeros up to
//! the next tile boundary for the zero-fill kernels, which accept any `n`; the others need
//! `n` to be a multiple of [`TILE_FLOATS`].
//!
//! Also here: [`BARRIER_OPS`], a kernel that records what the `Barrier` operations report,
//! for the host to compare with the expected sequence.

/// Floats per tile (one stage buffer): 1 KiB.
pub const TILE_FLOATS: u32 = 256;
/// Bytes per tile.
pub const TILE_BYTES: u32 = TILE_FLOATS * 4;
/// Tiles each block streams.
pub const TILES_PER_BLOCK: u32 = 16;

/// Which abstraction a copy test exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyForm {
    /// Per-thread `memcpy_async` (16-byte `cg` chunks) into a `ThreadPipeline`, `barrier.sync`
    /// before reading and before refilling. 32 threads.
    ThreadPipeline,
    /// Group `memcpy_async` over the block into a `BlockPipeline`, all threads producer and
    /// consumer. 64 threads.
    BlockPipeline,
    /// Warp 0 produces (group copy over the warp), warp 1 consumes, through a partitioned
    /// `BlockPipeline`. 64 threads.
    WarpSpecialized,
    /// Per-thread `memcpy_async` of `align`-byte chunks bound to two `Barrier`s in static
    /// shared memory; arrive/wait with tokens. 32 threads.
    Barrier,
    /// Group `memcpy_async` over the warp bound to two `Barrier`s. 32 threads.
    BarrierGroup,
    /// `memcpy_async_zfill` of `align`-byte chunks over the block into a `BlockPipeline`;
    /// any `n`, the last tile padded with zeros. 64 threads.
    ZeroFill,
}

/// One copy test kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyTestKernel {
    /// Entry point name.
    pub name: &'static str,
    /// The abstraction it exercises.
    pub form: CopyForm,
    /// Pipeline depth (the barrier forms double-buffer: 2).
    pub stages: u32,
    /// Chunk size and alignment of the copies: 4, 8 or 16 bytes.
    pub align: u32,
}

impl CopyTestKernel {
    /// Threads per block.
    pub const fn threads(&self) -> u32 {
        match self.form {
            CopyForm::ThreadPipeline | CopyForm::Barrier | CopyForm::BarrierGroup => 32,
            CopyForm::BlockPipeline | CopyForm::WarpSpecialized | CopyForm::ZeroFill => 64,
        }
    }

    /// Dynamic shared memory per block: the stage buffers, then `full` and `empty` mbarriers
    /// for the pipeline forms. The barrier forms use static shared memory.
    pub const fn dynamic_shared_bytes(&self) -> u32 {
        match self.form {
            CopyForm::Barrier | CopyForm::BarrierGroup => 0,
            CopyForm::ThreadPipeline => self.stages * TILE_BYTES,
            _ => self.stages * TILE_BYTES + self.stages * 16,
        }
    }

    /// Whether `n` need not be a multiple of [`TILE_FLOATS`].
    pub const fn accepts_ragged(&self) -> bool {
        matches!(self.form, CopyForm::ZeroFill)
    }

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

macro_rules! copy_test_kernels {
    ($($name:ident => $form:ident < stages = $stages:literal, align = $align:literal >,)*) => {
        /// Every copy test kernel.
        pub const COPY_TEST_KERNELS: &[CopyTestKernel] = &[
            $(CopyTestKernel {
                name: stringify!($name),
                form: CopyForm::$form,
                stages: $stages,
                align: $align,
            },)*
        ];

        #[cfg(target_arch = "nvptx64")]
        mod entry_points {
            $(
                /// Copy test kernel (see [`crate::copy_test::COPY_TEST_KERNELS`]).
                ///
                /// # Safety
                /// Launched with the geometry [`crate::copy_test::CopyTestKernel`] gives for
                /// `n`, `src` holding `n` floats and `dst` `output_len(n)` floats, 16-byte
                /// aligned.
                #[unsafe(no_mangle)]
                pub unsafe extern "ptx-kernel" fn $name(src: *const f32, dst: *mut f32, n: u32) {
                    use crate::kernels::copy_test::{CopyTest, forms::$form};
                    // SAFETY: forwarded launch contract.
                    unsafe { <$form as CopyTest>::run::<$stages, $align>(src, dst, n) }
                }
            )*
        }
    };
}

copy_test_kernels! {
    copy_thread_pipeline_2 => ThreadPipeline<stages = 2, align = 16>,
    copy_thread_pipeline_3 => ThreadPipeline<stages = 3, align = 16>,
    copy_thread_pipeline_4 => ThreadPipeline<stages = 4, align = 16>,
    copy_thread_pipeline_5 => ThreadPipeline<stages = 5, align = 16>,
    copy_thread_pipeline_6 => ThreadPipeline<stages = 6, align = 16>,
    copy_thread_pipeline_7 => ThreadPipeline<stages = 7, align = 16>,
    copy_thread_pipeline_8 => ThreadPipeline<stages = 8, align = 16>,
    copy_block_pipeline_2 => BlockPipeline<stages = 2, align = 16>,
    copy_block_pipeline_3 => BlockPipeline<stages = 3, align = 16>,
    copy_block_pipeline_4 => BlockPipeline<stages = 4, align = 16>,
    copy_block_pipeline_5 => BlockPipeline<stages = 5, align = 16>,
    copy_block_pipeline_6 => BlockPipeline<stages = 6, align = 16>,
    copy_block_pipeline_7 => BlockPipeline<stages = 7, align = 16>,
    copy_block_pipeline_8 => BlockPipeline<stages = 8, align = 16>,
    copy_warp_specialized_2 => WarpSpecialized<stages = 2, align = 16>,
    copy_warp_specialized_4 => WarpSpecialized<stages = 4, align = 16>,
    copy_warp_specialized_8 => WarpSpecialized<stages = 8, align = 16>,
    copy_barrier_4 => Barrier<stages = 2, align = 4>,
    copy_barrier_8 => Barrier<stages = 2, align = 8>,
    copy_barrier_16 => Barrier<stages = 2, align = 16>,
    copy_barrier_group => BarrierGroup<stages = 2, align = 16>,
    copy_zfill_4 => ZeroFill<stages = 3, align = 4>,
    copy_zfill_8 => ZeroFill<stages = 3, align = 8>,
    copy_zfill_16 => ZeroFill<stages = 3, align = 16>,
}

/// Looks a copy test kernel up by name.
pub fn find(name: &str) -> Option<&'static CopyTestKernel> {
    COPY_TEST_KERNELS.iter().find(|k| k.name == name)
}

/// The `Barrier` operations test: `barrier_ops(out: *mut u32)`, one block of
/// [`BARRIER_OPS_THREADS`] threads, writing [`BARRIER_OPS_OUTPUTS`] words. Each word is an
/// observation whose expected value is in [`BARRIER_OPS_EXPECTED`].
pub const BARRIER_OPS: &str = "barrier_ops";
/// Threads of the barrier operations test (two warps).
pub const BARRIER_OPS_THREADS: u32 = 64;
/// Bounded waits in the barrier operations test give up after this many polls and record a
/// timeout, instead of hanging the GPU on a broken barrier.
pub const BARRIER_OPS_POLLS: u32 = 1 << 20;

/// What `barrier_ops` observes, in output order, with the value each must have.
pub const BARRIER_OPS_EXPECTED: &[(&str, u32)] = &[
    (
        "pending count in the token of the first of 64 arrivals (state before it)",
        64,
    ),
    ("phase 0 complete after 1 of 64 arrivals (test_wait)", 0),
    (
        "phase 0 complete after 64 arrivals (wait, 1 = no timeout)",
        1,
    ),
    (
        "phase 1 complete: warp 0 arrive_and_wait + warp 1 arrive_and_drop",
        1,
    ),
    (
        "phase 2 complete with warp 0 alone (expected count dropped to 32)",
        1,
    ),
    ("parity 0 reads complete after three phases", 1),
    ("parity 1 reads incomplete after three phases", 0),
    ("threads that saw phase 0 complete after their own wait", 64),
    (
        "after inval, the slot re-initialized for 1 arrival completes a phase",
        1,
    ),
];

/// Words `barrier_ops` writes.
pub const BARRIER_OPS_OUTPUTS: usize = BARRIER_OPS_EXPECTED.len();

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
        assert!(k.accepts_ragged());
        assert!(!find("copy_block_pipeline_2").unwrap().accepts_ragged());
    }

    #[test]
    fn pipeline_depths_two_to_eight() {
        for form in [CopyForm::ThreadPipeline, CopyForm::BlockPipeline] {
            let depths: Vec<u32> = COPY_TEST_KERNELS
                .iter()
                .filter(|k| k.form == form)
                .map(|k| k.stages)
                .collect();
            assert_eq!(depths, (2..=8).collect::<Vec<_>>(), "{form:?}");
        }
    }

    #[test]
    fn every_alignment_is_covered() {
        for form in [CopyForm::Barrier, CopyForm::ZeroFill] {
            for align in [4, 8, 16] {
                assert!(
                    COPY_TEST_KERNELS
                        .iter()
                        .any(|k| k.form == form && k.align == align),
                    "{form:?} {align}"
                );
            }
        }
    }
}
