//! The 16-bit element types the tensor-core kernels take, as a caller holds them:
//! `half::bf16` and `half::f16` (what cudarc's `f16` feature and candle store). A buffer of
//! `u16` bits is taken only through cudarc's explicit `transmute`:
//! `unsafe { bits.transmute::<half::bf16>(bits.len()) }`.

use crate::gemm16::ElementType;
use gpu_runtime::StoredAs;
use gpu_runtime::cudarc::driver::DeviceRepr;
use gpu_runtime::tensor_map;

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// `half::bf16` or `half::f16`: an element of the tensor-core GEMM's and attention's inputs
/// and outputs (FP32 accumulation inside either way).
///
/// ```
/// use gpu_kernels::{Element16, ElementType};
/// assert_eq!(<half::bf16 as Element16>::TYPE, ElementType::Bf16);
/// assert_eq!(<half::f16 as Element16>::TYPE, ElementType::F16);
/// ```
pub trait Element16: DeviceRepr + StoredAs<Self::Device> + sealed::Sealed + 'static {
    /// The device code's type for it (`gpu::wgmma::Bf16` or `F16`).
    type Device: gpu::wgmma::SixteenBit + 'static;
    /// Which one it is.
    const TYPE: ElementType;
}

impl Element16 for half::bf16 {
    type Device = gpu::wgmma::Bf16;
    const TYPE: ElementType = ElementType::Bf16;
}

impl Element16 for half::f16 {
    type Device = gpu::wgmma::F16;
    const TYPE: ElementType = ElementType::F16;
}

impl ElementType {
    /// Its name in messages (`BF16`, `FP16`).
    pub const fn name(self) -> &'static str {
        match self {
            ElementType::Bf16 => "BF16",
            ElementType::F16 => "FP16",
        }
    }

    /// The tensor maps' element type for it.
    pub const fn tensor_map(self) -> tensor_map::ElementType {
        match self {
            ElementType::Bf16 => tensor_map::ElementType::BF16,
            ElementType::F16 => tensor_map::ElementType::F16,
        }
    }
}
