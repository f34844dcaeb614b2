//! Asynchronous global -> shared memory copies on NVIDIA GPUs (sm_80+), in `no_std` Rust.
//!
//! A kernel that streams `y = alpha * x` through shared memory with a three-stage thread-scope
//! pipeline (two tiles in flight while a third is read); the tail of `x` is zero-filled by the
//! copies themselves, none of which reads past its end:
//!
//! ```ignore
//! #![no_std]
//! #![feature(abi_ptx, asm_experimental_arch)]
//! use gpu::group::Block;
//! use gpu::memcpy_async::{AlignedSize, cp_async::memcpy_async_zfill};
//! use gpu::pipeline::{Consumer, Producer, ThreadPipeline};
//! use gpu::{ptx, shared::dynamic_shared};
//!
//! const TILE: u32 = 1024; // floats per stage; launch with 3 * 4096 bytes of dynamic shared memory
//!
//! #[unsafe(no_mangle)]
//! pub unsafe extern "ptx-kernel" fn scale(x: *const f32, y: *mut f32, n: u32, alpha: f32) {
//!     let block = Block::this_block();
//!     let tiles = n.div_ceil(TILE);
//!     let stage = |s: u32| dynamic_shared().add(s * TILE * 4).cast::<f32>();
//!     let mut pipeline = ThreadPipeline::<3>::new();
//!     let (mut producer, mut consumer) = pipeline.split();
//!     let mut fill = |t: u32| {
//!         let s = producer.producer_acquire();
//!         if t < tiles {
//!             let left = (n - t * TILE).min(TILE) * 4;
//!             let src = x.wrapping_add((t * TILE) as usize);
//!             // SAFETY: `left` bytes of x exist; the stage is free.
//!             unsafe { memcpy_async_zfill(&block, stage(s.index()), src, AlignedSize::<4>::of(TILE * 4), left, &s) };
//!         }
//!         s.producer_commit(); // cp.async.commit_group
//!     };
//!     fill(0);
//!     fill(1);
//!     for t in 0..tiles {
//!         // Refill first (the stage tile t - 1 used, released at the end of the last round):
//!         // two tiles stay in flight while this one is read. Refilling after the release
//!         // below would leave only one (none with two stages).
//!         fill(t + 2);
//!         let ready = consumer.consumer_wait(); // cp.async.wait_group 2: tile t has landed
//!         ptx::barrier_sync(); // every thread's copies are visible
//!         // ... read stage(ready.index()), write alpha * value to y ...
//!         ready.consumer_release();
//!         ptx::barrier_sync(); // everyone is done with the stage before its refill
//!     }
//! }
//! ```
//!
//! `examples/user-kernels` in the repository is a complete version of this kernel (its blocks
//! share the tiles out over the grid) as a crate of its own, built by
//! `ptx_builder::CudaBuilder` from a host crate's `build.rs` and checked on a GPU.
//!
//! The library is one stack, read top-down: a module uses only modules listed before it.
//!
//! | layer | module | C++ analogue | lowers to |
//! |---|---|---|---|
//! | instructions | [`ptx`] | inline PTX | one `asm!` per instruction |
//! | shared memory | [`layout`], [`shared`] | `__shared__` | `.shared` declarations, typed 32-bit addresses |
//! | tensor maps (sm_90) | [`tensor_map`] | `const __grid_constant__ CUtensorMap` | a kernel parameter, `cvta.param` |
//! | kernel declarations | [`kernel`](mod@kernel) | `__global__ void f(...)` + its host-side stub | an `extern "ptx-kernel"` entry point, and an [`EntryPoint`](kernel::EntryPoint) the host launches |
//! | math | [`math`] | `exp2f`, `__expf`, `__log2f`, `rsqrtf`, `tanhf` | `ex2` / `lg2` / `rcp` / `rsqrt` / `tanh.approx`, accurate forms beside them |
//! | thread groups | [`group`] | cooperative groups (`thread_block`, `tiled_partition<32>`) | `%tid.x`, `%laneid` read once |
//! | warp and block collectives | [`reduce`] | `__shfl_xor_sync`, `cg::reduce`, CUB's `BlockReduce` | `shfl.sync`, `redux.sync`, a shared partial per warp |
//! | split barrier | [`barrier`] | `cuda::barrier<thread_scope_block>` | `mbarrier.*` |
//! | clusters (sm_90) | `cluster` | cooperative groups' `cluster_group`, `cuda::ptx` cluster functions | `%cluster_ctarank`, `barrier.cluster.*`, `mapa`, `ld`/`st.shared::cluster`, `st.async`, remote `mbarrier.arrive` |
//! | pipelines | [`pipeline_state`], [`pipeline`] | `cuda::pipeline<thread_scope_thread / _block>` | `cp.async.commit_group` / `wait_group`, or `cp.async.mbarrier.arrive.noinc` + parity waits |
//! | copies | [`memcpy_async`]: [`completion`](memcpy_async::completion), [`cp_async`](memcpy_async::cp_async), `bulk` | `cuda::memcpy_async` | `cp.async.ca` (4/8 B), `cp.async.cg` (16 B); sm_90: `cp.async.bulk` (1-D) and `cp.async.bulk.tensor` (TMA) |
//! | collective mainloops | [`collective`] | CUTLASS's collective layer (`CollectiveMma`) | the k-loop written out, through `#[inline(always)]` hooks |
//! | tile order | [`schedule`] | a persistent kernel's tile scheduler (CUTLASS) | block-index arithmetic, or `atom.global.add` on a counter the grid shares |
//!
//! Which completion mechanism to use is discussed in [`memcpy_async`]'s module docs.
//!
//! [`layout`] (with [`ptx::Mbarrier`]), [`pipeline_state`] and the host-side parts of
//! [`schedule`] are plain Rust and also build for the host, so a host program launches with
//! exactly the shared memory and queue state the device code uses; everything that emits PTX
//! is compiled only for `nvptx64-nvidia-cuda`. [`max_threads!`] is this crate's
//! `__launch_bounds__`.
//!
//! Nothing in this crate mentions a workload: what the project runs on it (the study, the
//! GEMM, the stream, the library's self-test) is the `workloads` crate, one folder each, built
//! on this library exactly as a user's crate would be.
#![cfg_attr(not(test), no_std)]
// The device modules exist only in the nvptx64 build, so a host `cargo doc` cannot resolve
// links to them; they resolve in the device docs.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(asm_experimental_arch, core_float_math)
)]

pub mod kernel;
pub mod layout;
pub mod pipeline_state;
pub mod ptx;
pub mod schedule;

#[cfg(target_arch = "nvptx64")]
pub mod barrier;
#[cfg(target_feature = "sm_90")]
pub mod cluster;
#[cfg(target_arch = "nvptx64")]
pub mod collective;
#[cfg(target_arch = "nvptx64")]
pub mod group;
#[cfg(target_arch = "nvptx64")]
pub mod math;
#[cfg(target_arch = "nvptx64")]
pub mod memcpy_async;
#[cfg(target_arch = "nvptx64")]
pub mod pipeline;
#[cfg(target_arch = "nvptx64")]
pub mod reduce;
#[cfg(target_arch = "nvptx64")]
pub mod shared;
pub mod tensor_map;
pub mod wgmma;

/// Declares the most threads a block of `kernel` is launched with, so that ptxas keeps the
/// kernel's registers within what that many threads may share (65536 per block on sm_80 and
/// sm_90): CUDA C++'s `__launch_bounds__(threads)`.
///
/// ```ignore
/// gpu::max_threads!(my_kernel, 288);
/// ```
///
/// Lowers to `.maxntid threads, 1, 1` on the kernel's `.entry`. rustc has no such attribute:
/// the macro leaves a `// max-threads KERNEL N` line in the PTX (module-level asm with the
/// kernel's symbol), and `ptx-builder` turns it into the directive after `llc`.
#[macro_export]
macro_rules! max_threads {
    ($kernel:path, $threads:expr) => {
        #[cfg(target_arch = "nvptx64")]
        ::core::arch::global_asm!("// max-threads {} {}", sym $kernel, const $threads);
    };
}

/// A panic on the GPU traps: the launch fails and the host reports the error.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    ptx::trap()
}
