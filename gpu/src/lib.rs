//! Asynchronous global -> shared memory copies on NVIDIA GPUs (sm_80+), in `no_std` Rust.
//!
//! The library is one stack, read top-down:
//!
//! | layer | module | C++ analogue | lowers to |
//! |---|---|---|---|
//! | instructions | [`ptx`] | inline PTX | one `asm!` per instruction |
//! | shared memory | [`shared`], [`layout`] | `__shared__` | `.shared` declarations, typed 32-bit addresses |
//! | split barrier | [`barrier`] | `cuda::barrier<thread_scope_block>` | `mbarrier.*` |
//! | pipelines | [`pipeline`], [`pipeline_state`] | `cuda::pipeline<thread_scope_thread / _block>` | `cp.async.commit_group` / `wait_group`, or `cp.async.mbarrier.arrive.noinc` + parity waits |
//! | copies | [`memcpy_async`] | `cuda::memcpy_async` | `cp.async.ca` (4/8 B), `cp.async.cg` (16 B) |
//!
//! Which completion mechanism to use is discussed in [`memcpy_async`]'s module docs.
//!
//! [`layout`] and [`pipeline_state`] are plain Rust and also build for the host, so a host
//! program launches with exactly the shared memory the device code carves up; everything that
//! emits PTX is compiled only for `nvptx64-nvidia-cuda`.
//!
//! Apart from the library, [`workloads`] holds what this project runs on it — the study, the
//! library's self-test — one folder each, with kernel tables the host also reads.
#![cfg_attr(not(test), no_std)]
// The device modules exist only in the nvptx64 build, so a host `cargo doc` cannot resolve
// links to them; they resolve in the device docs.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, asm_experimental_arch, core_float_math)
)]

pub mod layout;
pub mod pipeline_state;

#[cfg(target_arch = "nvptx64")]
pub mod barrier;
#[cfg(target_arch = "nvptx64")]
pub mod memcpy_async;
#[cfg(target_arch = "nvptx64")]
pub mod pipeline;
#[cfg(target_arch = "nvptx64")]
pub mod ptx;
#[cfg(target_arch = "nvptx64")]
pub mod shared;

pub mod workloads;

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
