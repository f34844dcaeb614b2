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
//!
//! The bottom of the library: nothing here uses a module above it. The instructions exist only
//! in the device build; the objects they work on whose size the host needs ([`Mbarrier`])
//! build for the host too.

/// A special register's reader (`sreg.rs`, `cluster.rs`): `mov.u32 r, %reg;`, its bound told
/// to LLVM.
#[cfg(target_arch = "nvptx64")]
macro_rules! special_register {
    ($(#[$doc:meta])* $name:ident => $reg:literal, below $bound:expr) => {
        special_register!($(#[$doc])* $name => $reg, in 0..$bound);
    };
    ($(#[$doc:meta])* $name:ident => $reg:literal, in $low:literal..$bound:expr) => {
        $(#[$doc])*
        #[doc = concat!("\n\nLowers to `mov.u32 r, ", $reg, ";`.")]
        #[inline(always)]
        pub fn $name() -> u32 {
            let value: u32;
            // SAFETY: reading a special register has no side effects.
            unsafe {
                ::core::arch::asm!(
                    concat!("mov.u32 {0}, ", $reg, ";"),
                    out(reg32) value,
                    options(pure, nomem, nostack, preserves_flags)
                );
            }
            // SAFETY: the hardware bounds this register; telling LLVM lets it drop range
            // checks (e.g. a warp's loop over 32 chunks with one lane per chunk).
            // A size is at least 1: a division by it needs no zero check (and no panic path).
            // (`value - low < bound - low`: `low <= value < bound` in one unsigned compare.)
            unsafe { core::hint::assert_unchecked(value.wrapping_sub($low) < $bound - $low) };
            value
        }
    };
}

mod objects;
pub use objects::*;

#[cfg(target_arch = "nvptx64")]
mod atomic;
#[cfg(target_feature = "sm_90")]
mod bulk;
#[cfg(target_feature = "sm_90")]
mod cluster;
#[cfg(target_arch = "nvptx64")]
mod cp_async;
#[cfg(target_arch = "nvptx64")]
mod global;
#[cfg(target_arch = "nvptx64")]
mod math;
#[cfg(target_arch = "nvptx64")]
mod matrix;
#[cfg(target_arch = "nvptx64")]
mod mbarrier;
#[cfg(target_arch = "nvptx64")]
mod smem;
#[cfg(target_arch = "nvptx64")]
mod sreg;
#[cfg(target_arch = "nvptx64")]
mod sync;
#[cfg(target_feature = "sm_90")]
mod tensor;
#[cfg(target_arch = "nvptx64")]
mod warp;
#[cfg(target_feature = "sm_90a")]
mod wgmma;

#[cfg(target_arch = "nvptx64")]
pub use atomic::*;
#[cfg(target_feature = "sm_90")]
pub use bulk::*;
#[cfg(target_feature = "sm_90")]
pub use cluster::*;
#[cfg(target_arch = "nvptx64")]
pub use cp_async::*;
#[cfg(target_arch = "nvptx64")]
pub use global::*;
#[cfg(target_arch = "nvptx64")]
pub use math::*;
#[cfg(target_arch = "nvptx64")]
pub use matrix::*;
#[cfg(target_arch = "nvptx64")]
pub use mbarrier::*;
#[cfg(target_arch = "nvptx64")]
pub use smem::*;
#[cfg(target_arch = "nvptx64")]
pub use sreg::*;
#[cfg(target_arch = "nvptx64")]
pub use sync::*;
#[cfg(target_feature = "sm_90")]
pub use tensor::*;
#[cfg(target_arch = "nvptx64")]
pub use warp::*;
#[cfg(target_feature = "sm_90a")]
pub use wgmma::*;

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// `trap;` — aborts the kernel; the launch reports an error to the host.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` ends the thread's execution; nothing after it runs.
    unsafe { asm!("trap;", options(noreturn, nostack)) }
}

/// `fma.rn.f32 d, a, b, c;` — `a * b + c` with a single rounding.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    core::f32::math::mul_add(a, b, c)
}
