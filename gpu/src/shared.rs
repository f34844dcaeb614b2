//! Shared memory: declarations and typed handles over 32-bit `.shared` addresses.
//!
//! rustc's NVPTX backend has no way to put a Rust `static` in `.shared` (a
//! `#[link_section = ".shared"]` static silently lands in global memory), so shared memory is
//! declared in PTX and reached through its address:
//!
//! - static: [`static_shared!`](crate::static_shared) declares
//!   `.shared .align 16 .b8 NAME[bytes];` and a function returning a [`SharedArray`] over it.
//!   ptxas charges it only to the kernels that use it.
//! - dynamic: [`dynamic_shared`] is the block's `.extern .shared` region, sized by the launch.
//!
//! A [`Shared<T>`] is a typed 32-bit address, the form `cp.async`, `mbarrier` and
//! `ld.shared` / `st.shared` take; it is `Copy` and costs one register.

use crate::ptx::{self, SharedValue};
use core::arch::{asm, global_asm};
use core::marker::PhantomData;

/// The `.shared` address of a `T` in this block's shared memory.
#[repr(transparent)]
pub struct Shared<T> {
    addr: u32,
    _type: PhantomData<*mut T>,
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shared<T> {}

impl<T> Shared<T> {
    /// A handle for the `.shared` address `addr`.
    ///
    /// # Safety
    /// `addr` is a `.shared` address of this block, aligned for `T`, whose memory the caller
    /// may use as a `T` (for as long as the handle, and copies of it, are used).
    #[inline(always)]
    pub const unsafe fn from_addr(addr: u32) -> Self {
        Shared {
            addr,
            _type: PhantomData,
        }
    }

    /// The 32-bit `.shared` address.
    #[inline(always)]
    pub const fn addr(self) -> u32 {
        self.addr
    }

    /// The handle `count` elements further (pointer arithmetic: no access, no check).
    #[inline(always)]
    pub const fn add(self, count: u32) -> Self {
        Shared {
            addr: self
                .addr
                .wrapping_add(count.wrapping_mul(size_of::<T>() as u32)),
            _type: PhantomData,
        }
    }

    /// The same address, viewed as a `U`.
    #[inline(always)]
    pub const fn cast<U>(self) -> Shared<U> {
        Shared {
            addr: self.addr,
            _type: PhantomData,
        }
    }

    /// The generic pointer to this memory (`cvta.shared.u64`): accesses through it compile to
    /// generic loads and stores, slower than [`Shared::read`] / [`Shared::write`].
    #[inline(always)]
    pub fn as_generic_ptr(self) -> *mut T {
        ptx::shared_to_generic(self.addr).cast()
    }
}

impl<T: SharedValue> Shared<T> {
    /// `ld.shared` of the value.
    ///
    /// # Safety
    /// The memory holds an initialized `T` that no thread or copy writes concurrently (any
    /// async copy into it has been waited for and the wait made visible to this thread).
    #[inline(always)]
    pub unsafe fn read(self) -> T {
        // SAFETY: forwarded contract; alignment is the handle's invariant.
        unsafe { T::load_shared(self.addr) }
    }

    /// `st.shared` of `value`.
    ///
    /// # Safety
    /// No other thread or copy reads or writes the memory concurrently.
    #[inline(always)]
    pub unsafe fn write(self, value: T) {
        // SAFETY: forwarded contract; alignment is the handle's invariant.
        unsafe { T::store_shared(self.addr, value) }
    }
}

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
    pub fn at(self, index: u32) -> Shared<T> {
        if index as usize >= N {
            ptx::trap();
        }
        self.base.add(index)
    }

    /// The first element.
    #[inline(always)]
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

global_asm!(".extern .shared .align 16 .b8 DYNAMIC_SHARED[];");

/// The start of the block's dynamic shared memory (the size given at launch), 16-byte
/// aligned. Lowers to `mov.u32 r, DYNAMIC_SHARED;` over
/// `.extern .shared .align 16 .b8 DYNAMIC_SHARED[];`.
///
/// Carve it up with [`Shared::add`] / [`Shared::cast`] following a layout the host also
/// knows (see [`crate::study::SharedLayout`]); reading past the launch's size is undefined.
#[inline(always)]
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
