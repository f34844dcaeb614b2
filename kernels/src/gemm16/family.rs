//! What the families of [`GEMM16_KERNELS`](super::GEMM16_KERNELS) are made of, beside their
//! style and geometry: the element of A, B and C, where `wgmma` reads A, and how C is written.

use gpu::wgmma::{Bf16, F16};

/// The element type of a family's A, B and C (FP32 accumulation either way).
///
/// ```
/// use gpu_kernels::{Element16, ElementType};
/// assert_eq!(<half::bf16 as Element16>::TYPE, ElementType::Bf16);
/// assert_eq!(ElementType::F16.name(), "FP16");
/// // 1/3 rounded to each type, to nearest even.
/// assert_eq!(ElementType::Bf16.round(1.0 / 3.0), half::bf16::from_f32(1.0 / 3.0).to_bits());
/// assert_eq!(ElementType::F16.value(0x3c00), 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// bfloat16 ([`Bf16`]: 8 exponent bits, 7 mantissa bits).
    Bf16,
    /// IEEE binary16 ([`F16`]: 5 exponent bits, 10 mantissa bits).
    F16,
}

impl ElementType {
    /// Both, BF16 first.
    pub const ALL: [ElementType; 2] = [ElementType::Bf16, ElementType::F16];

    /// Its name in entry points and rows (`bf16`, `f16`).
    pub const fn label(self) -> &'static str {
        match self {
            ElementType::Bf16 => "bf16",
            ElementType::F16 => "f16",
        }
    }

    /// The bits of `x` rounded to this type (to nearest, ties to even).
    pub const fn round(self, x: f32) -> u16 {
        match self {
            ElementType::Bf16 => Bf16::from_f32(x).0,
            ElementType::F16 => F16::from_f32(x).0,
        }
    }

    /// The value of `bits` of this type, exactly.
    pub const fn value(self, bits: u16) -> f32 {
        match self {
            ElementType::Bf16 => Bf16(bits).to_f32(),
            ElementType::F16 => F16(bits).to_f32(),
        }
    }
}

/// Where the consumers' `wgmma` takes A from.
///
/// ```
/// use gpu_kernels::gemm16::{ASource, GEMM16_KERNELS};
/// let rs = GEMM16_KERNELS.iter().find(|k| k.a_source == ASource::Registers).expect("the RS family");
/// assert_eq!(rs.name, "bf16_gemm_ws_cooperative_rs");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ASource {
    /// Shared memory, through a descriptor, as B.
    SharedMemory,
    /// Registers, loaded from the stage with `ldmatrix` (CUTLASS's "RS" form, what a kernel
    /// that transforms A on its way to the tensor cores needs).
    Registers,
}

/// How a kernel writes C. Both round the accumulators to C's element into shared memory first,
/// one consumer warpgroup's tile at a time, in 64-row parts.
///
/// ```
/// use gpu_kernels::gemm16::{Epilogue, GEMM16_KERNELS};
/// let kernel = &GEMM16_KERNELS[0];
/// assert_eq!(kernel.epilogue_for(4096), Epilogue::TensorStore);
/// assert_eq!(kernel.epilogue_for(4097), Epilogue::Direct);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Tensor stores (`UTMASTG`) that the next tile's math overlaps; C's rows must be 16-byte
    /// multiples (N a multiple of 8).
    TensorStore,
    /// The warpgroup stores the rows itself, staged shifted to where C's 16-byte chunks fall:
    /// 16-byte stores, the elements at each end of a row's part one by one; any N.
    Direct,
}
