//! The `.shared` state space: [`Shared<T>`], the typed 32-bit address every shared-memory
//! instruction takes, loads and stores through it (`ld.shared`, `st.shared`; SASS `LDS` /
//! `STS`), and conversion to a generic pointer.
//!
//! A load through a generic pointer compiles to a generic `LD.E`, which must first test which
//! memory the address falls in; these stay `LDS` / `LDS.128`.

use core::arch::asm;
use core::marker::PhantomData;

/// The `.shared` address of a `T` in this block's shared memory: one 32-bit register, the
/// form `cp.async`, `mbarrier` and `ld.shared` / `st.shared` take. `Copy`, and it carries no
/// lifetime: the declarations in [`crate::shared`] are what hand out valid ones.
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
    #[must_use]
    pub const fn addr(self) -> u32 {
        self.addr
    }

    /// The handle `count` elements further (pointer arithmetic: no access, no check).
    #[inline(always)]
    #[must_use]
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
    #[must_use]
    pub const fn cast<U>(self) -> Shared<U> {
        Shared {
            addr: self.addr,
            _type: PhantomData,
        }
    }

    /// The generic pointer to this memory (`cvta.shared.u64`): accesses through it compile to
    /// generic loads and stores, slower than [`Shared::read`] / [`Shared::write`].
    #[inline(always)]
    #[must_use]
    pub fn as_generic_ptr(self) -> *mut T {
        shared_to_generic(self.addr).cast()
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

/// A value that one `ld.shared` / `st.shared` moves: 4 bytes, or a vector of four `f32`
/// (`.v4`, one `LDS.128`).
///
/// # Safety
/// Implementations must access exactly `size_of::<Self>()` bytes at the address.
pub unsafe trait SharedValue: Copy {
    /// `ld.shared` of one value.
    ///
    /// # Safety
    /// `addr` is a `.shared` address of a `Self`, aligned to `size_of::<Self>()`, that no
    /// other thread or copy writes concurrently.
    unsafe fn load_shared(addr: u32) -> Self;

    /// `st.shared` of one value.
    ///
    /// # Safety
    /// As [`SharedValue::load_shared`], and no one else reads or writes it concurrently.
    unsafe fn store_shared(addr: u32, value: Self);
}

macro_rules! scalar_shared_value {
    ($($ty:ty => $ld:literal, $st:literal, $class:ident;)*) => {$(
        /// Lowers to
        #[doc = concat!("`", $ld, "` / `", $st, "`.")]
        // SAFETY: each instruction moves exactly size_of::<$ty>() bytes.
        unsafe impl SharedValue for $ty {
            #[inline(always)]
            unsafe fn load_shared(addr: u32) -> Self {
                let value: $ty;
                // SAFETY: the caller upholds the trait contract.
                unsafe {
                    asm!(
                        concat!($ld, " {v}, [{a}];"),
                        v = out($class) value,
                        a = in(reg32) addr,
                        options(pure, readonly, nostack, preserves_flags)
                    )
                }
                value
            }

            #[inline(always)]
            unsafe fn store_shared(addr: u32, value: Self) {
                // SAFETY: the caller upholds the trait contract.
                unsafe {
                    asm!(
                        concat!($st, " [{a}], {v};"),
                        a = in(reg32) addr,
                        v = in($class) value,
                        options(nostack, preserves_flags)
                    )
                }
            }
        }
    )*};
}

scalar_shared_value! {
    u32 => "ld.shared.b32", "st.shared.b32", reg32;
    i32 => "ld.shared.b32", "st.shared.b32", reg32;
    f32 => "ld.shared.b32", "st.shared.b32", reg32;
}

/// Lowers to `ld.shared.v4.b32` / `st.shared.v4.b32` (`LDS.128` / `STS.128`): the address
/// must be 16-byte aligned.
// SAFETY: one v4 access moves exactly 16 bytes.
unsafe impl SharedValue for [f32; 4] {
    #[inline(always)]
    unsafe fn load_shared(addr: u32) -> Self {
        let (x, y, z, w): (f32, f32, f32, f32);
        // SAFETY: the caller upholds the trait contract.
        unsafe {
            asm!(
                "ld.shared.v4.b32 {{{x}, {y}, {z}, {w}}}, [{a}];",
                x = out(reg32) x,
                y = out(reg32) y,
                z = out(reg32) z,
                w = out(reg32) w,
                a = in(reg32) addr,
                options(pure, readonly, nostack, preserves_flags)
            )
        }
        [x, y, z, w]
    }

    #[inline(always)]
    unsafe fn store_shared(addr: u32, [x, y, z, w]: Self) {
        // SAFETY: the caller upholds the trait contract.
        unsafe {
            asm!(
                "st.shared.v4.b32 [{a}], {{{x}, {y}, {z}, {w}}};",
                a = in(reg32) addr,
                x = in(reg32) x,
                y = in(reg32) y,
                z = in(reg32) z,
                w = in(reg32) w,
                options(nostack, preserves_flags)
            )
        }
    }
}

/// `cvta.shared.u64` — the generic pointer for a `.shared` address (for code that wants a
/// plain pointer; it will use generic loads).
#[inline(always)]
#[must_use]
pub fn shared_to_generic(addr: u32) -> *mut u8 {
    let ptr: *mut u8;
    // SAFETY: an address conversion; touches no memory.
    unsafe {
        asm!(
            "{{ .reg .u64 a; cvt.u64.u32 a, {addr}; cvta.shared.u64 {ptr}, a; }}",
            addr = in(reg32) addr,
            ptr = out(reg64) ptr,
            options(pure, nomem, nostack, preserves_flags)
        )
    }
    ptr
}
