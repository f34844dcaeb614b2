//! The study: `C (32x32) = A (32xK) * B (Kx32)` by one block, one k per step.
//!
//! At step `k` the block needs column `k` of A and row `k` of B in shared memory: thread `t`
//! brings `A[t][k]` and `B[k][t]`, then thread `t` adds `A[t][k] * B[k][j]` to `C[t][j]` for
//! all 32 `j` (its accumulators stay in registers). The styles ([`Style`]) differ only in how
//! the two values get to shared memory and how the block learns they arrived:
//!
//! - [`Style::SyncBaseline`]: plain loads and stores, `barrier.sync` before and after the
//!   math — every step waits for a full global-memory round trip.
//! - the others copy with `cp.async` into a ring of `stages` buffers, `stages - 1` steps ahead,
//!   so the copy latency hides behind the math of the steps in between.
//!
//! [`STUDY_KERNELS`] is the single definition of every study kernel: the table below declares
//! each one with [`gpu::kernel!`], which emits its [`EntryPoint`](gpu::kernel::EntryPoint)
//! (everywhere) and its entry point (on nvptx64), so the host launches exactly what the
//! device defines, with the parameter types it declares.
//!
//! Matrices are row-major `f32`: `A[i][k]` at `a[i * K + k]`, `B[k][j]` at `b[k * 32 + j]`,
//! `C[i][j]` at `c[i * 32 + j]`. Kernel parameters: `(a, b, c, k)` (the tensor style, sm_90:
//! a tensor map of A in place of `a`).

mod shapes;
pub use shapes::*;

#[cfg(target_arch = "nvptx64")]
mod kernels;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

/// Looks a study kernel up by name.
pub fn find(name: &str) -> Option<&'static StudyKernel> {
    STUDY_KERNELS.iter().find(|k| k.name == name)
}

/// A line of [`STUDY_KERNELS`] ([`gpu::kernel_table!`]), named fields — `style:` ([`Style`]),
/// `stages:` and `body:` (its function in `kernels`): `@entry` declares the kernel
/// ([`study_entry_point!`]: on the device its entry point runs the style's body), `@row` is
/// its [`StudyKernel`].
macro_rules! study_row {
    (@entry $name:ident { style: $style:ident, stages: $stages:literal, body: $body:ident }) => {
        study_entry_point!($style $name $stages $body);
    };
    (@row $name:ident { style: $style:ident, stages: $stages:literal, body: $body:ident }) => {
        StudyKernel {
            name: $name.name(),
            entry: study_entry_point!(@entry $style $name),
            style: Style::$style,
            stages: $stages,
        }
    };
}

/// One study kernel's declaration: `(a, b, c, k)` as pointers, or for the tensor style (sm_90)
/// with a tensor map of A in place of `a`; `@entry` wraps its [`EntryPoint`]
/// (gpu::kernel::EntryPoint) in the [`StudyEntry`] of its parameters.
macro_rules! study_entry_point {
    (@entry Tensor $entry:path) => {
        StudyEntry::TensorMapA($entry)
    };
    (@entry $style:ident $entry:path) => {
        StudyEntry::Pointers($entry)
    };
    (Tensor $name:ident $stages:literal $body:ident) => {
        gpu::kernel! {
            /// Study kernel (see [`STUDY_KERNELS`](crate::study::STUDY_KERNELS)),
            /// tensor copies: `a` is a tensor map of A (`k x 32`, innermost first, box
            /// `4 x 32`, zero fill), `b` is Kx32, `c` 32x32.
            ///
            /// # Safety
            /// Launched by the host with the geometry [`StudyKernel`]
            /// (crate::study::StudyKernel) gives, on valid device buffers of those
            /// sizes, `1 <= k <= MAX_K`, `k % 4 == 0`.
            pub fn $name(a: gpu::tensor_map::TensorMap, b: *const f32, c: *mut f32, k: u32)
                [device if target_feature = "sm_90"]
            {
                let a = gpu::tensor_map_param!(entry, 0, a);
                // SAFETY: forwarded launch contract.
                unsafe { crate::study::kernels::$body::<$stages>(a, b, c, k) }
            }
        }
    };
    ($style:ident $name:ident $stages:literal $body:ident) => {
        gpu::kernel! {
            /// Study kernel (see [`STUDY_KERNELS`](crate::study::STUDY_KERNELS)):
            /// `a` is 32xK, `b` is Kx32, `c` is 32x32, all row-major f32; one block.
            ///
            /// # Safety
            /// Launched by the host with the geometry [`StudyKernel`]
            /// (crate::study::StudyKernel) gives, on valid device buffers of those
            /// sizes, `1 <= k <= MAX_K`.
            pub fn $name(a: *const f32, b: *const f32, c: *mut f32, k: u32) {
                // SAFETY: forwarded launch contract.
                unsafe { crate::study::kernels::$body::<$stages>(a, b, c, k) }
            }
        }
    };
}

/// The kernels, each declared once ([`gpu::kernel!`]): an [`EntryPoint`]
/// (gpu::kernel::EntryPoint) everywhere, and on the device its entry point; and their table.
pub mod entry_points {
    use super::*;

    gpu::kernel_table! {
        /// Every study kernel, baseline first (a `static`: one address per entry).
        pub static STUDY_KERNELS: [StudyKernel] by study_row;
        sync_baseline { style: SyncBaseline, stages: 1, body: sync_baseline }
        raw_async_group_2 { style: RawAsyncGroup, stages: 2, body: raw_async_group }
        raw_async_group_3 { style: RawAsyncGroup, stages: 3, body: raw_async_group }
        raw_async_group_4 { style: RawAsyncGroup, stages: 4, body: raw_async_group }
        raw_mbarrier_2 { style: RawMbarrier, stages: 2, body: raw_mbarrier }
        raw_mbarrier_3 { style: RawMbarrier, stages: 3, body: raw_mbarrier }
        raw_mbarrier_4 { style: RawMbarrier, stages: 4, body: raw_mbarrier }
        barrier_2 { style: SplitBarrier, stages: 2, body: split_barrier }
        barrier_3 { style: SplitBarrier, stages: 3, body: split_barrier }
        barrier_4 { style: SplitBarrier, stages: 4, body: split_barrier }
        thread_pipeline_2 { style: ThreadPipeline, stages: 2, body: thread_pipeline }
        thread_pipeline_3 { style: ThreadPipeline, stages: 3, body: thread_pipeline }
        thread_pipeline_4 { style: ThreadPipeline, stages: 4, body: thread_pipeline }
        block_pipeline_2 { style: BlockPipeline, stages: 2, body: block_pipeline }
        block_pipeline_3 { style: BlockPipeline, stages: 3, body: block_pipeline }
        block_pipeline_4 { style: BlockPipeline, stages: 4, body: block_pipeline }
        warp_specialized_2 { style: WarpSpecialized, stages: 2, body: warp_specialized }
        warp_specialized_3 { style: WarpSpecialized, stages: 3, body: warp_specialized }
        warp_specialized_4 { style: WarpSpecialized, stages: 4, body: warp_specialized }
        tensor_2 { style: Tensor, stages: 2, body: tensor }
        tensor_3 { style: Tensor, stages: 3, body: tensor }
        tensor_4 { style: Tensor, stages: 4, body: tensor }
    }
}
pub use entry_points::STUDY_KERNELS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in STUDY_KERNELS.iter().enumerate() {
            for b in &STUDY_KERNELS[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }

    #[test]
    fn layout_fits_and_aligns_barriers() {
        for k in STUDY_KERNELS {
            let layout = k.shared();
            assert_eq!(layout.barriers_offset % 8, 0, "{}", k.name);
            assert!(layout.bytes <= 48 * 1024, "{}", k.name);
            let barriers = if k.style.has_stage_barriers() {
                16 * k.stages
            } else {
                0
            };
            assert_eq!(layout.bytes, k.stages * k.style.stage_bytes() + barriers);
        }
    }

    #[test]
    fn every_library_style_has_a_raw_counterpart_in_the_table() {
        for k in STUDY_KERNELS {
            if let Some(raw) = k.style.raw_counterpart() {
                assert!(
                    STUDY_KERNELS
                        .iter()
                        .any(|r| r.style == raw && r.stages == k.stages),
                    "{} has no {:?} kernel with {} stages",
                    k.name,
                    raw,
                    k.stages
                );
            }
        }
    }
}
