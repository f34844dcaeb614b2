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
//!
//! [`selftest_tile`](tile_entry_points::selftest_tile) runs the register-tile verbs of
//! `gpu::wgmma::Accumulator` (row maxima and sums, row scaling, the softmax's exponentials,
//! the A fragments of `P V`) on one warpgroup; [`selftest_mma`](mma_entry_points::selftest_mma)
//! runs the multiply atom `gpu::wgmma::Wgmma` for each element type (BF16, FP16, E4M3, E5M2)
//! on one warpgroup. They are the kernels of the sm_90a module here.
//!
//! Every kernel is declared once, in [`entry_points`], with [`gpu::kernel!`]: its
//! [`EntryPoint`](gpu::kernel::EntryPoint) (everywhere: a [`CopyKernel`]'s `entry`,
//! [`BARRIER_OPS`], [`HANG_KERNEL`]) and its entry point (on nvptx64), so the host launches
//! exactly what the device defines, with the parameter types it declares.

// The sm_90a device build holds the register-tile and multiply-atom kernels only (see the
// crate root): the rest is left out of it.
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
mod shapes;
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub use shapes::*;

#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
mod math;
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub use math::*;
/// The host half of the math and collectives self-test.
#[cfg(not(target_arch = "nvptx64"))]
pub mod math_host;

mod tile;
pub use tile::*;
/// The host half of the register-tile self-test.
#[cfg(not(target_arch = "nvptx64"))]
pub mod tile_host;

mod mma;
pub use mma::*;
/// The host half of the multiply-atom self-test.
#[cfg(not(target_arch = "nvptx64"))]
pub mod mma_host;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90a")))]
mod kernels;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

/// A line of [`COPY_KERNELS`] ([`gpu::kernel_table!`]), named fields — `form:` and its
/// `params:` ([`CopyForm`]; on the device also `body:`'s const generics, in the order the line
/// lists them), `body:` (its function in `kernels`) and `device:` (`any`, or `sm_90`: the
/// entry point only in the sm_90 module): `@entry` declares the kernel ([`gpu::kernel!`]),
/// `@row` is its [`CopyKernel`].
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
macro_rules! copy_row {
    (@entry $name:ident {
        form: $form:ident,
        params: { $($param:ident : $value:literal),* },
        body: $body:ident,
        device: any
    }) => {
        copy_row!(declare $name $body [$($value),*]);
    };
    (@entry $name:ident {
        form: $form:ident,
        params: { $($param:ident : $value:literal),* },
        body: $body:ident,
        device: sm_90
    }) => {
        copy_row!(declare $name $body [$($value),*] [device if target_feature = "sm_90"]);
    };
    (declare $name:ident $body:ident [$($value:literal),*] $($device:tt)?) => {
        gpu::kernel! {
            /// Copy kernel of the self-test (see
            /// [`COPY_KERNELS`](crate::selftest::COPY_KERNELS)).
            ///
            /// # Safety
            /// Launched with the geometry [`CopyKernel`](crate::selftest::CopyKernel) gives
            /// for `n`, `src` holding `n` floats and `dst` `output_len(n)` floats, 16-byte
            /// aligned.
            pub fn $name(src: *const f32, dst: *mut f32, n: u32) $($device)? {
                // SAFETY: forwarded launch contract.
                unsafe { crate::selftest::kernels::$body::<$($value),*>(src, dst, n) }
            }
        }
    };
    (@row $name:ident {
        form: $form:ident,
        params: { $($param:ident : $value:literal),* },
        body: $body:ident,
        device: $device:ident
    }) => {
        CopyKernel {
            name: $name.name(),
            entry: $name,
            form: CopyForm::$form { $($param: $value),* },
        }
    };
}

/// The self-test's kernels, each declared once ([`gpu::kernel!`]): an
/// [`EntryPoint`](gpu::kernel::EntryPoint) everywhere, and on the device its entry point,
/// which runs its body from `kernels`; and the copy kernels' table.
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub mod entry_points {
    use super::*;

    gpu::kernel_table! {
        /// Every copy kernel of the self-test (a `static`: one address per entry).
        pub static COPY_KERNELS: [CopyKernel] by copy_row;
        copy_thread_pipeline_2 { form: ThreadPipeline, params: { stages: 2 }, body: thread_pipeline, device: any }
        copy_thread_pipeline_3 { form: ThreadPipeline, params: { stages: 3 }, body: thread_pipeline, device: any }
        copy_thread_pipeline_4 { form: ThreadPipeline, params: { stages: 4 }, body: thread_pipeline, device: any }
        copy_thread_pipeline_5 { form: ThreadPipeline, params: { stages: 5 }, body: thread_pipeline, device: any }
        copy_thread_pipeline_6 { form: ThreadPipeline, params: { stages: 6 }, body: thread_pipeline, device: any }
        copy_thread_pipeline_7 { form: ThreadPipeline, params: { stages: 7 }, body: thread_pipeline, device: any }
        copy_thread_pipeline_8 { form: ThreadPipeline, params: { stages: 8 }, body: thread_pipeline, device: any }
        copy_block_pipeline_2 { form: BlockPipeline, params: { stages: 2 }, body: block_pipeline, device: any }
        copy_block_pipeline_3 { form: BlockPipeline, params: { stages: 3 }, body: block_pipeline, device: any }
        copy_block_pipeline_4 { form: BlockPipeline, params: { stages: 4 }, body: block_pipeline, device: any }
        copy_block_pipeline_5 { form: BlockPipeline, params: { stages: 5 }, body: block_pipeline, device: any }
        copy_block_pipeline_6 { form: BlockPipeline, params: { stages: 6 }, body: block_pipeline, device: any }
        copy_block_pipeline_7 { form: BlockPipeline, params: { stages: 7 }, body: block_pipeline, device: any }
        copy_block_pipeline_8 { form: BlockPipeline, params: { stages: 8 }, body: block_pipeline, device: any }
        copy_warp_specialized_2 { form: WarpSpecialized, params: { stages: 2 }, body: warp_specialized, device: any }
        copy_warp_specialized_4 { form: WarpSpecialized, params: { stages: 4 }, body: warp_specialized, device: any }
        copy_warp_specialized_8 { form: WarpSpecialized, params: { stages: 8 }, body: warp_specialized, device: any }
        copy_barrier_4 { form: BarrierPerThread, params: { align: 4 }, body: barrier_per_thread, device: any }
        copy_barrier_8 { form: BarrierPerThread, params: { align: 8 }, body: barrier_per_thread, device: any }
        copy_barrier_16 { form: BarrierPerThread, params: { align: 16 }, body: barrier_per_thread, device: any }
        copy_barrier_group { form: BarrierGroup, params: {}, body: barrier_group, device: any }
        copy_barrier_uncounted { form: BarrierUncounted, params: {}, body: barrier_uncounted, device: any }
        copy_bulk_barrier { form: BulkBarrier, params: { arriving: false }, body: bulk_barrier, device: sm_90 }
        copy_bulk_barrier_arriving { form: BulkBarrier, params: { arriving: true }, body: bulk_barrier, device: sm_90 }
        copy_zfill_4 { form: ZeroFill, params: { stages: 3, align: 4 }, body: zero_fill, device: any }
        copy_zfill_8 { form: ZeroFill, params: { stages: 3, align: 8 }, body: zero_fill, device: any }
        copy_zfill_16 { form: ZeroFill, params: { stages: 3, align: 16 }, body: zero_fill, device: any }
    }

    gpu::kernel! {
        /// Records every [`BarrierObservation`](crate::selftest::BarrierObservation)
        /// in its slot of `out` (see [`BARRIER_OPS`](crate::selftest::BARRIER_OPS)).
        ///
        /// # Safety
        /// One block of [`BARRIER_OPS_THREADS`](crate::selftest::BARRIER_OPS_THREADS)
        /// threads; `out` holds `BARRIER_OPS_OUTPUTS` words.
        pub fn barrier_ops(out: *mut u32) {
            // SAFETY: forwarded launch contract.
            unsafe { crate::selftest::kernels::barrier_ops(out) }
        }
    }

    gpu::kernel! {
        /// Waits forever on purpose: every thread arrives once on a barrier that expects one
        /// arrival more, then waits for the phase (see
        /// [`HANG_KERNEL`](crate::selftest::HANG_KERNEL)).
        ///
        /// # Safety
        /// One block of [`HANG_THREADS`](crate::selftest::HANG_THREADS) threads. It
        /// never returns: the host's watchdog must end the program.
        pub fn hang_missing_arrival() {
            // SAFETY: forwarded launch contract.
            unsafe { crate::selftest::kernels::hang_missing_arrival() }
        }
    }
}
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub use entry_points::COPY_KERNELS;

/// Looks a copy kernel up by name.
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub fn find(name: &str) -> Option<&'static CopyKernel> {
    COPY_KERNELS.iter().find(|k| k.name == name)
}

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
    fn entries_name_their_kernels() {
        for (i, k) in COPY_KERNELS.iter().enumerate() {
            assert_eq!(k.name, k.entry.name());
            assert!(
                COPY_KERNELS[..i].iter().all(|o| o.name != k.name),
                "{}",
                k.name
            );
        }
        assert_eq!(BARRIER_OPS.name(), "barrier_ops");
        assert_eq!(HANG_KERNEL.name(), "hang_missing_arrival");
    }

    #[test]
    fn observations_fill_their_slots_in_order() {
        for (i, o) in BarrierObservation::ALL.iter().enumerate() {
            assert_eq!(o.slot(), i);
        }
    }
}
