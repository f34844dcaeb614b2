//! The instruction layer: one function per PTX instruction, each an `asm!` block that emits
//! exactly the instruction its docs name (plus the `selp` that turns a predicate into a
//! value, where an instruction yields one).
//!
//! Addresses follow PTX: shared memory is a 32-bit `.shared` address — typed as
//! [`Shared<T>`] (an mbarrier is a `Shared<Mbarrier>`), a bare `u32` only for the byte
//! destination of a copy — and global memory is a 64-bit pointer. As in CUTLASS, a generic
//! pointer to global memory is passed where PTX wants a `.global` address; the two are the
//! same on every GPU that has `cp.async`.
//!
//! Functions are `unsafe` where a wrong argument is undefined behaviour (a bad address, a
//! barrier that is not initialized); instructions that only wait or order are safe.

mod atomic;
#[cfg(target_feature = "sm_90")]
mod bulk;
mod cp_async;
mod global;
mod mbarrier;
mod smem;
mod sreg;
mod sync;
#[cfg(target_feature = "sm_90")]
mod tensor;

pub use atomic::*;
#[cfg(target_feature = "sm_90")]
pub use bulk::*;
pub use cp_async::*;
pub use global::*;
pub use mbarrier::*;
pub use smem::*;
pub use sreg::*;
pub use sync::*;
#[cfg(target_feature = "sm_90")]
pub use tensor::*;

use core::arch::asm;

/// `trap;` — aborts the kernel; the launch reports an error to the host.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` ends the thread's execution; nothing after it runs.
    unsafe { asm!("trap;", options(noreturn, nostack)) }
}

/// `fma.rn.f32 d, a, b, c;` — `a * b + c` with a single rounding.
#[inline(always)]
pub fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    core::f32::math::mul_add(a, b, c)
}
