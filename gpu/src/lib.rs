//! Asynchronous global -> shared memory copies on NVIDIA GPUs (sm_80+), in `no_std` Rust.
//!
//! The crate is one stack, read top-down:
//!
//! | layer | module | C++ analogue | lowers to |
//! |---|---|---|---|
//! | instructions | [`ptx`] | inline PTX | one `asm!` per instruction |
//! | shared memory | [`shared`] | `__shared__` | `.shared` declarations, 32-bit addresses |
//! | split barrier | [`barrier`] | `cuda::barrier<thread_scope_block>` | `mbarrier.*` |
//! | pipelines | [`pipeline`] | `cuda::pipeline<thread_scope_thread / _block>` | `cp.async.commit_group` / `wait_group`, or `cp.async.mbarrier.arrive.noinc` + parity waits |
//! | copies | [`memcpy_async`] | `cuda::memcpy_async` | `cp.async.ca` (4/8 B), `cp.async.cg` (16 B) |
//! | kernels | `kernels` (device only) | | the study's experiments and the library's test kernels |
//!
//! Modules that describe shapes and bookkeeping — [`study`], [`copy_test`],
//! [`pipeline_state`] — are plain Rust and also build for the host, so the host launches
//! exactly what the device defines (kernel names, tile shapes, launch geometry, shared memory
//! sizes). Everything that emits PTX is compiled only for `nvptx64-nvidia-cuda`.
//!
//! Which completion mechanism to use is discussed in [`memcpy_async`]'s module docs.
#![cfg_attr(not(test), no_std)]
// The device modules exist only in the nvptx64 build, so a host `cargo doc` cannot resolve
// links to them; they resolve in the device docs.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, asm_experimental_arch, core_float_math)
)]

pub mod copy_test;
pub mod pipeline_state;
pub mod study;

#[cfg(target_arch = "nvptx64")]
pub mod barrier;
#[cfg(target_arch = "nvptx64")]
mod kernels;
#[cfg(target_arch = "nvptx64")]
pub mod memcpy_async;
#[cfg(target_arch = "nvptx64")]
pub mod pipeline;
#[cfg(target_arch = "nvptx64")]
pub mod ptx;
#[cfg(target_arch = "nvptx64")]
pub mod shared;

/// A panic on the GPU traps: the launch fails and the host reports the error.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    ptx::trap()
}
