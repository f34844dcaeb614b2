//! The study's experiment: `C (32x32) = A (32xK) * B (Kx32)` by one block, one k per step.
//!
//! At step `k` the block needs column `k` of A and row `k` of B in shared memory: thread `t`
//! brings `A[t][k]` and `B[k][t]`, then thread `t` adds `A[t][k] * B[k][j]` to `C[t][j]` for
//! all 32 `j` (its accumulators stay in registers). The styles differ only in how the two
//! values get to shared memory and how the block learns they arrived:
//!
//! - [`Style::SyncBaseline`]: plain loads and stores, `barrier.sync` before and after the
//!   math — every step waits for a full global-memory round trip.
//! - the others copy with `cp.async` into a ring of `stages` buffers, `stages - 1` steps ahead,
//!   so the copy latency hides behind the math of the steps in between.
//!
//! This module is the single definition of every study kernel: the `study_kernels!` table
//! below generates the device entry points (on nvptx64) and [`STUDY_KERNELS`] (everywhere),
//! which the host's experiment registry is built from.
//!
//! Matrices are row-major `f32`: `A[i][k]` at `a[i * K + k]`, `B[k][j]` at `b[k * 32 + j]`,
//! `C[i][j]` at `c[i * 32 + j]`. Kernel parameters: `(a, b, c, k)`.

/// Rows of A and C.
pub const M: u32 = 32;
/// Columns of B and C.
pub const N: u32 = 32;
/// Threads in a warp.
pub const WARP_SIZE: u32 = 32;
/// One stage buffer: column k of A (32 floats), then row k of B (32 floats).
pub const STAGE_BYTES: u32 = (M + N) * 4;
/// Largest K a kernel accepts: A and B are then 512 MiB each, and `row * K + k` stays far
/// from `u32` overflow.
pub const MAX_K: u32 = 1 << 22;

/// How a study kernel moves data to shared memory and waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Style {
    /// `ld.global` + `st.shared`, `barrier.sync` before and after the math.
    SyncBaseline,
    /// Raw PTX async-groups: `cp.async.ca` + `commit_group` + `wait_group`, then `barrier.sync`.
    RawAsyncGroup,
    /// Raw PTX mbarriers: `cp.async.mbarrier.arrive.noinc` on a per-stage `full` mbarrier,
    /// parity waits, `mbarrier.arrive` on an `empty` mbarrier to free the buffer.
    RawMbarrier,
    /// [`Barrier`](crate::barrier::Barrier)s (split arrive/wait) per stage, `memcpy_async`
    /// bound to them.
    Barrier,
    /// [`ThreadPipeline`](crate::pipeline::ThreadPipeline) + `barrier.sync`.
    ThreadPipeline,
    /// [`BlockPipeline`](crate::pipeline::BlockPipeline), every thread producer and consumer:
    /// the study's double-buffered "pingpong".
    BlockPipeline,
    /// A producer warp feeds a consumer warp through a
    /// [`BlockPipeline`](crate::pipeline::BlockPipeline).
    WarpSpecialized,
}

impl Style {
    /// Threads per block.
    pub const fn threads(self) -> u32 {
        match self {
            Style::WarpSpecialized => 2 * WARP_SIZE,
            _ => WARP_SIZE,
        }
    }

    /// Mbarriers per stage (`full` and `empty`), or none.
    pub const fn mbarriers_per_stage(self) -> u32 {
        match self {
            Style::SyncBaseline | Style::RawAsyncGroup | Style::ThreadPipeline => 0,
            Style::RawMbarrier | Style::Barrier | Style::BlockPipeline | Style::WarpSpecialized => {
                2
            }
        }
    }

    /// The raw-PTX kernel style this library style must match in speed.
    pub const fn raw_counterpart(self) -> Option<Style> {
        match self {
            Style::ThreadPipeline => Some(Style::RawAsyncGroup),
            Style::BlockPipeline | Style::Barrier | Style::WarpSpecialized => {
                Some(Style::RawMbarrier)
            }
            Style::SyncBaseline | Style::RawAsyncGroup | Style::RawMbarrier => None,
        }
    }

    /// One line on what the style does.
    pub const fn summary(self) -> &'static str {
        match self {
            Style::SyncBaseline => "ld.global + st.shared, barrier.sync x2 per step",
            Style::RawAsyncGroup => "raw PTX: cp.async + commit_group / wait_group + barrier.sync",
            Style::RawMbarrier => "raw PTX: cp.async + mbarrier.arrive.noinc + parity waits",
            Style::Barrier => "Barrier (split arrive/wait) + memcpy_async bound to it",
            Style::ThreadPipeline => "ThreadPipeline (async-groups) + barrier.sync",
            Style::BlockPipeline => "BlockPipeline (mbarriers), all threads produce and consume",
            Style::WarpSpecialized => "producer warp -> consumer warp through a BlockPipeline",
        }
    }
}

/// Where things sit in a study kernel's dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedLayout {
    /// Stage `s` starts at `s * STAGE_BYTES`.
    pub stages: u32,
    /// Byte offset of the mbarriers (`full[0..stages]`, then `empty[0..stages]`).
    pub barriers_offset: u32,
    /// Dynamic shared memory to launch with.
    pub bytes: u32,
}

impl SharedLayout {
    /// The layout of `style` with `stages` buffers.
    pub const fn of(style: Style, stages: u32) -> SharedLayout {
        let barriers_offset = stages * STAGE_BYTES;
        SharedLayout {
            stages,
            barriers_offset,
            bytes: barriers_offset + style.mbarriers_per_stage() * stages * 8,
        }
    }

    /// Byte offset of stage `s`'s buffer.
    pub const fn stage_offset(self, s: u32) -> u32 {
        s * STAGE_BYTES
    }
}

/// One study kernel: its entry-point name, style and pipeline depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StudyKernel {
    /// Entry point name.
    pub name: &'static str,
    /// How it copies and waits.
    pub style: Style,
    /// Buffers in the ring (1 for the synchronous baseline).
    pub stages: u32,
}

impl StudyKernel {
    /// Threads per block (grid: one block).
    pub const fn threads(&self) -> u32 {
        self.style.threads()
    }

    /// Its dynamic shared-memory layout.
    pub const fn shared(&self) -> SharedLayout {
        SharedLayout::of(self.style, self.stages)
    }
}

/// Looks a study kernel up by name.
pub fn find(name: &str) -> Option<&'static StudyKernel> {
    STUDY_KERNELS.iter().find(|k| k.name == name)
}

macro_rules! study_kernels {
    ($($name:ident => $style:ident < $stages:literal >,)*) => {
        /// Every study kernel, baseline first.
        pub const STUDY_KERNELS: &[StudyKernel] = &[
            $(StudyKernel { name: stringify!($name), style: Style::$style, stages: $stages },)*
        ];

        /// The kernels' entry points; each runs its style's loop from `kernels::study`.
        #[cfg(target_arch = "nvptx64")]
        mod entry_points {
            $(
                /// Study kernel (see [`crate::study::STUDY_KERNELS`]): `a` is 32xK, `b` is
                /// Kx32, `c` is 32x32, all row-major f32; one block.
                ///
                /// # Safety
                /// Launched by the host with the geometry [`crate::study::StudyKernel`]
                /// gives, on valid device buffers of those sizes, `1 <= k <= MAX_K`.
                #[unsafe(no_mangle)]
                pub unsafe extern "ptx-kernel" fn $name(a: *const f32, b: *const f32, c: *mut f32, k: u32) {
                    use crate::kernels::study::{StudyStyle, styles::$style};
                    // SAFETY: forwarded launch contract.
                    unsafe { <$style as StudyStyle>::run::<$stages>(a, b, c, k) }
                }
            )*
        }
    };
}

study_kernels! {
    sync_baseline => SyncBaseline<1>,
    raw_async_group_2 => RawAsyncGroup<2>,
    raw_async_group_3 => RawAsyncGroup<3>,
    raw_async_group_4 => RawAsyncGroup<4>,
    raw_mbarrier_2 => RawMbarrier<2>,
    raw_mbarrier_3 => RawMbarrier<3>,
    raw_mbarrier_4 => RawMbarrier<4>,
    barrier_2 => Barrier<2>,
    barrier_3 => Barrier<3>,
    barrier_4 => Barrier<4>,
    thread_pipeline_2 => ThreadPipeline<2>,
    thread_pipeline_3 => ThreadPipeline<3>,
    thread_pipeline_4 => ThreadPipeline<4>,
    block_pipeline_2 => BlockPipeline<2>,
    block_pipeline_3 => BlockPipeline<3>,
    block_pipeline_4 => BlockPipeline<4>,
    warp_specialized_2 => WarpSpecialized<2>,
    warp_specialized_3 => WarpSpecialized<3>,
    warp_specialized_4 => WarpSpecialized<4>,
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
            assert_eq!(
                layout.bytes,
                k.stages * STAGE_BYTES + k.style.mbarriers_per_stage() * k.stages * 8
            );
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
