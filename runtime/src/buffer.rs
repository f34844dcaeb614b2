//! What a kernel's pointer parameter takes: any cudarc buffer ([`CudaSlice`], [`CudaView`],
//! [`CudaViewMut`]) whose host element holds the device element bit for bit ([`StoredAs`]:
//! `half::bf16` or `u16` for a `Bf16`), read through [`DeviceBuffer`] or written through
//! [`DeviceBufferMut`], each handing out the address with cudarc's [`SyncOnDrop`] guard.
//! A launch keeps the guards until the kernel is queued, so cudarc's event tracking learns
//! that the kernel read its inputs and wrote its outputs, as it does for its own launches: a
//! buffer used next on another stream waits for the kernel.

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice,
    SyncOnDrop,
};
use std::marker::PhantomData;

/// A host element type whose values are the device element `D` bit for bit, so a buffer of
/// `Self` may be passed where a kernel takes a pointer to `D`.
///
/// # Safety
/// `Self` and `D` have the same size and alignment, and every bit pattern of one is a value
/// of the other.
pub unsafe trait StoredAs<D>: DeviceRepr {}

macro_rules! stored_as_itself {
    ($($t:ty),*) => {$(
        // SAFETY: the same type on both sides.
        unsafe impl StoredAs<$t> for $t {}
    )*};
}

stored_as_itself!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

// SAFETY: `Bf16` is `repr(transparent)` over its 16 bits; `half::bf16` is the same 16 bits.
unsafe impl StoredAs<gpu::wgmma::Bf16> for half::bf16 {}
// SAFETY: as above, the bits of a `Bf16` held in a `u16`.
unsafe impl StoredAs<gpu::wgmma::Bf16> for u16 {}
// SAFETY: `F16` is `repr(transparent)` over its 16 bits; `half::f16` is the same 16 bits.
unsafe impl StoredAs<gpu::wgmma::F16> for half::f16 {}
// SAFETY: as above, the bits of an `F16` held in a `u16`.
unsafe impl StoredAs<gpu::wgmma::F16> for u16 {}
// SAFETY: a `TileQueueState` is `TileQueueState::WORDS` consecutive `u32`s, each any value.
unsafe impl StoredAs<gpu::schedule::TileQueueState> for u32 {}

/// A device buffer a kernel reads as elements of `D`.
pub trait DeviceBuffer<D> {
    /// Its length in host elements.
    fn len(&self) -> usize;

    /// Whether it holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its address for a read on `stream`, which first waits for the buffer's last write
    /// (under event tracking); the guard records the read when dropped, after the launch.
    fn read_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>);

    /// The stream cudarc tracks it on (whose context holds it); `None` for an [`Address`].
    fn home_stream(&self) -> Option<&std::sync::Arc<CudaStream>>;
}

/// A device buffer a kernel writes as elements of `D`.
pub trait DeviceBufferMut<D>: DeviceBuffer<D> {
    /// Its address for a write on `stream`, which first waits for the buffer's last reads and
    /// write (under event tracking); the guard records the write when dropped, after the
    /// launch.
    fn write_ptr<'a>(&'a mut self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>);
}

macro_rules! buffers {
    ($($buffer:ty),*) => {$(
        impl<D, S: StoredAs<D>> DeviceBuffer<D> for $buffer {
            fn len(&self) -> usize {
                DeviceSlice::len(self)
            }
            fn read_ptr<'a>(&'a self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
                self.device_ptr(stream)
            }
            fn home_stream(&self) -> Option<&std::sync::Arc<CudaStream>> {
                Some(DeviceSlice::stream(self))
            }
        }
    )*};
}

buffers!(CudaSlice<S>, CudaView<'_, S>, CudaViewMut<'_, S>);

impl<D, S: StoredAs<D>> DeviceBufferMut<D> for CudaSlice<S> {
    fn write_ptr<'a>(&'a mut self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        self.device_ptr_mut(stream)
    }
}

impl<D, S: StoredAs<D>> DeviceBufferMut<D> for CudaViewMut<'_, S> {
    fn write_ptr<'a>(&'a mut self, stream: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        self.device_ptr_mut(stream)
    }
}

/// A bare device address of `len` elements of `D`, which no event tracking follows: for a
/// caller that holds the buffer's guards itself across the launch (a library that took the
/// address from a cudarc buffer to encode a tensor map beside it).
#[derive(Clone, Copy, Debug)]
pub struct Address<D> {
    ptr: CUdeviceptr,
    len: usize,
    element: PhantomData<fn() -> D>,
}

impl<D> Address<D> {
    /// The `len` elements from `ptr`.
    ///
    /// # Safety
    /// `ptr` is the device address of `len` elements of `D`, in the context of the stream the
    /// kernel runs on, alive and ordered (by the caller's own guards or synchronization) for
    /// every launch it is passed to.
    pub unsafe fn new(ptr: CUdeviceptr, len: usize) -> Address<D> {
        Address {
            ptr,
            len,
            element: PhantomData,
        }
    }
}

impl<D> DeviceBuffer<D> for Address<D> {
    fn len(&self) -> usize {
        self.len
    }
    fn read_ptr<'a>(&'a self, _: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, SyncOnDrop::Record(None))
    }
    fn home_stream(&self) -> Option<&std::sync::Arc<CudaStream>> {
        None
    }
}

impl<D> DeviceBufferMut<D> for Address<D> {
    fn write_ptr<'a>(&'a mut self, _: &'a CudaStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, SyncOnDrop::Record(None))
    }
}

/// The guards of one launch's buffers, held until the kernel is queued (a fixed array: no
/// allocation on the launch path).
pub struct Guards<'g> {
    guards: [Option<SyncOnDrop<'g>>; crate::args::MAX_PARAMS],
    len: usize,
}

impl<'g> Guards<'g> {
    /// None yet.
    pub fn new() -> Guards<'g> {
        Guards {
            guards: [const { None }; crate::args::MAX_PARAMS],
            len: 0,
        }
    }

    /// Keeps `guard` until these guards are dropped.
    ///
    /// # Panics
    /// Past [`MAX_PARAMS`](crate::args::MAX_PARAMS) guards (one per parameter at most).
    pub fn hold(&mut self, guard: SyncOnDrop<'g>) {
        assert!(self.len < self.guards.len(), "one guard per parameter");
        self.guards[self.len] = Some(guard);
        self.len += 1;
    }
}

impl Default for Guards<'_> {
    fn default() -> Self {
        Guards::new()
    }
}
