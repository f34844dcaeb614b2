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
///
/// ```
/// use gpu_runtime::StoredAs;
/// use gpu_runtime::cudarc::driver::DeviceRepr;
/// // The bits of an f32, kept as a number of their own on the host.
/// #[derive(Clone, Copy)]
/// #[repr(transparent)]
/// struct F32Bits(u32);
/// // SAFETY: a plain 4-byte value, any bits valid.
/// unsafe impl DeviceRepr for F32Bits {}
/// // SAFETY: 4 bytes aligned to 4, as an f32, and every bit pattern is a value of both.
/// unsafe impl StoredAs<f32> for F32Bits {}
/// // A `CudaSlice<F32Bits>` now passes where a kernel takes `*const f32` or `*mut f32`.
/// ```
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
///
/// ```no_run
/// use gpu::wgmma::Bf16;
/// use gpu_runtime::DeviceBuffer;
/// // Takes any buffer whose elements hold BF16: `half::bf16`s or their bits as `u16`s.
/// fn elements(buffer: &dyn DeviceBuffer<Bf16>) -> usize {
///     buffer.len()
/// }
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// let x = gpu.upload(&[half::bf16::ONE; 1024], "x")?;
/// let bits = gpu.zeros::<u16>(1024, "bits")?;
/// assert_eq!(elements(&x), 1024);
/// assert_eq!(elements(&bits.slice(..256)), 256);
/// # Ok(())
/// # }
/// ```
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
///
/// ```no_run
/// use gpu_runtime::{DeviceBufferMut, Gpu, GpuError, LaunchConfig};
/// // Zeros `n` floats at `out`: written through `*mut f32`, so any `DeviceBufferMut<f32>`.
/// fn clear(gpu: &Gpu, out: &mut dyn DeviceBufferMut<f32>) -> Result<(), GpuError> {
///     let n = out.len() as u32;
///     let kernel = gpu.kernel::<(*mut f32, u32)>("clear")?;
///     // SAFETY: clear(out, n) writes n floats of out, one a thread.
///     unsafe { kernel.launch(gpu, LaunchConfig::linear(n.div_ceil(256), 256, 0), (out, n)) }
/// }
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), GpuError> {
/// let gpu = Gpu::open(MODULES)?;
/// let mut y = gpu.upload(&[1.0f32; 1024], "y")?;
/// clear(&gpu, &mut y.slice_mut(512..))?; // the second half only
/// # Ok(())
/// # }
/// ```
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
///
/// ```no_run
/// use gpu_runtime::cudarc::driver::DevicePtr;
/// use gpu_runtime::{Address, Gpu, LaunchConfig};
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = Gpu::open(MODULES)?;
/// let sum = gpu.kernel::<(*const f32, *mut f32, u32)>("sum")?;
/// let (x, mut total) = (gpu.upload(&[1.0f32; 1024], "x")?, gpu.zeros::<f32>(1, "total")?);
/// // The caller takes the address, and holds its guard across the launch.
/// let (ptr, _guard) = x.device_ptr(gpu.stream());
/// // SAFETY: 1024 floats at `ptr`, alive and ordered by `_guard` until the launch is queued.
/// let x_at = unsafe { Address::<f32>::new(ptr, 1024) };
/// // SAFETY: sum(x, total, n) reads n floats of x and writes one float of total.
/// unsafe { sum.launch(&gpu, LaunchConfig::linear(1, 256, 0), (&x_at, &mut total, 1024))? };
/// # Ok(())
/// # }
/// ```
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
///
/// ```no_run
/// use gpu_runtime::{DeviceBuffer, Gpu, Guards};
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = Gpu::open(MODULES)?;
/// let x = gpu.upload(&[1.0f32; 256], "x")?;
/// let mut guards = Guards::new();
/// let (ptr, guard) = DeviceBuffer::<f32>::read_ptr(&x, gpu.stream());
/// guards.hold(guard);
/// // ... queue work that reads `ptr` on the GPU's stream ...
/// drop(guards); // records the read, as a launch does once its kernel is queued
/// # Ok(())
/// # }
/// ```
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
