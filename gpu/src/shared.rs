//! Shared memory: declarations, and arrays over the typed 32-bit `.shared` addresses
//! ([`Shared<T>`], defined with the instructions that take it in [`crate::ptx`]).
//!
//! rustc's NVPTX backend has no way to put a Rust `static` in `.shared` (a
//! `#[link_section = ".shared"]` static silently lands in global memory), so shared memory is
//! declared in PTX and reached through its address:
//!
//! - static: [`static_shared!`](crate::static_shared) declares
//!   `.shared .align 16 .b8 NAME[bytes];` and a function returning a [`SharedArray`] over it.
//!   ptxas charges it only to the kernels that use it.
//! - dynamic: [`dynamic_shared`] is the block's `.extern .shared` region, sized by the launch.

use crate::ptx;
use core::arch::{asm, global_asm};

pub use crate::ptx::Shared;

/// `N` consecutive `T`s in shared memory.
#[repr(transparent)]
pub struct SharedArray<T, const N: usize> {
    base: Shared<T>,
}

impl<T, const N: usize> Clone for SharedArray<T, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for SharedArray<T, N> {}

impl<T, const N: usize> SharedArray<T, N> {
    /// The array starting at `base`.
    ///
    /// # Safety
    /// `base` starts `N * size_of::<T>()` bytes of shared memory the caller may use as this
    /// array.
    #[inline(always)]
    pub const unsafe fn from_base(base: Shared<T>) -> Self {
        SharedArray { base }
    }

    /// Handle to element `index`; traps (the launch fails) if `index >= N`. The check folds
    /// away where the index is known in range.
    #[inline(always)]
    #[must_use]
    pub fn at(self, index: u32) -> Shared<T> {
        if index as usize >= N {
            ptx::trap();
        }
        self.base.add(index)
    }

    /// The first element.
    #[inline(always)]
    #[must_use]
    pub const fn base(self) -> Shared<T> {
        self.base
    }
}

/// Declares a static shared-memory array and a function that returns a [`SharedArray`] over
/// it:
///
/// ```ignore
/// gpu::static_shared!(fn tile() -> [f32; 256]);
/// let t = tile(); // SharedArray<f32, 256>, 16-byte aligned
/// ```
///
/// Lowers to `.shared .align 16 .b8 tile[1024];` at module scope and `mov.u32 r, tile;` where
/// the function is called. The function's name is the PTX symbol: it must be unique in the
/// crate. Every block gets its own copy; ptxas charges it only to kernels that use it.
#[macro_export]
macro_rules! static_shared {
    ($(#[$meta:meta])* $vis:vis fn $name:ident() -> [$ty:ty; $len:expr]) => {
        ::core::arch::global_asm!(
            concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
            bytes = const $len * ::core::mem::size_of::<$ty>(),
        );
        $(#[$meta])*
        #[inline(always)]
        $vis fn $name() -> $crate::shared::SharedArray<$ty, { $len }> {
            let addr: u32;
            // SAFETY: reads the address of the declaration above; touches no memory.
            unsafe {
                ::core::arch::asm!(
                    concat!("mov.u32 {0}, ", stringify!($name), ";"),
                    out(reg32) addr,
                    options(pure, nomem, nostack, preserves_flags)
                );
            }
            const { assert!(::core::mem::align_of::<$ty>() <= 16) };
            // SAFETY: the declaration reserves `$len` elements, 16-byte aligned, for this
            // function alone.
            unsafe {
                $crate::shared::SharedArray::from_base($crate::shared::Shared::from_addr(addr))
            }
        }
    };
}

// 1024-byte aligned: what a tensor copy with 128-byte swizzle needs of its shared-memory box
// (128 without swizzle), so stage buffers at multiples of 1 KiB qualify.
global_asm!(".extern .shared .align 1024 .b8 DYNAMIC_SHARED[];");

/// The start of the block's dynamic shared memory (the size given at launch), 1024-byte
/// aligned. Lowers to `mov.u32 r, DYNAMIC_SHARED;` over
/// `.extern .shared .align 1024 .b8 DYNAMIC_SHARED[];`.
///
/// Carve it up with [`Shared::add`] / [`Shared::cast`] following a layout the host also
/// knows (`gpu::layout`'s `StagedLayout` or `SharedLayout`); reading past the launch's size is
/// undefined.
#[inline(always)]
#[must_use]
pub fn dynamic_shared() -> Shared<u8> {
    let addr: u32;
    // SAFETY: reads the address of the declaration above; touches no memory.
    unsafe {
        asm!(
            "mov.u32 {0}, DYNAMIC_SHARED;",
            out(reg32) addr,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    // SAFETY: bytes have no invariants; the caller's accesses carry their own contracts.
    unsafe { Shared::from_addr(addr) }
}
