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

macro_rules! study_kernels {
    ($($name:ident => $style:ident < $stages:literal > by $body:ident,)*) => {
        /// Every study kernel, baseline first. A `static`, so that a reference to an entry
        /// is the same address wherever it is taken (the host compares entries by address).
        pub static STUDY_KERNELS: &[StudyKernel] = &[
            $(StudyKernel {
                name: entry_points::$name.name(),
                entry: study_entry_point!(@entry $style entry_points::$name),
                style: Style::$style,
                stages: $stages,
            },)*
        ];

        /// The kernels, each declared once ([`gpu::kernel!`]): an [`EntryPoint`]
        /// (gpu::kernel::EntryPoint) everywhere, and on the device its entry point, which
        /// runs its style's body from `kernels`.
        pub mod entry_points {
            $(study_entry_point!($style $name $stages $body);)*
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

study_kernels! {
    sync_baseline => SyncBaseline<1> by sync_baseline,
    raw_async_group_2 => RawAsyncGroup<2> by raw_async_group,
    raw_async_group_3 => RawAsyncGroup<3> by raw_async_group,
    raw_async_group_4 => RawAsyncGroup<4> by raw_async_group,
    raw_mbarrier_2 => RawMbarrier<2> by raw_mbarrier,
    raw_mbarrier_3 => RawMbarrier<3> by raw_mbarrier,
    raw_mbarrier_4 => RawMbarrier<4> by raw_mbarrier,
    barrier_2 => SplitBarrier<2> by split_barrier,
    barrier_3 => SplitBarrier<3> by split_barrier,
    barrier_4 => SplitBarrier<4> by split_barrier,
    thread_pipeline_2 => ThreadPipeline<2> by thread_pipeline,
    thread_pipeline_3 => ThreadPipeline<3> by thread_pipeline,
    thread_pipeline_4 => ThreadPipeline<4> by thread_pipeline,
    block_pipeline_2 => BlockPipeline<2> by block_pipeline,
    block_pipeline_3 => BlockPipeline<3> by block_pipeline,
    block_pipeline_4 => BlockPipeline<4> by block_pipeline,
    warp_specialized_2 => WarpSpecialized<2> by warp_specialized,
    warp_specialized_3 => WarpSpecialized<3> by warp_specialized,
    warp_specialized_4 => WarpSpecialized<4> by warp_specialized,
    tensor_2 => Tensor<2> by tensor,
    tensor_3 => Tensor<3> by tensor,
    tensor_4 => Tensor<4> by tensor,
}

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
