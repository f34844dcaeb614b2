//! Tensor maps for the copy engine's tensor copies (sm_90, TMA): a typed builder over the
//! driver's `cuTensorMapEncodeTiled` that checks every rule the driver documents before
//! calling it, so a bad map is one clear line naming the argument, not an opaque
//! `CUDA_ERROR_INVALID_VALUE` (and a driver error still comes with the map's parameters).
//!
//! The map goes to a kernel by value ([`KernelArg::TensorMap`](crate::KernelArg)): the
//! kernel declares the parameter as `gpu::tensor_map::TensorMap` and takes its address with
//! `gpu::tensor_map_param!` (see that module for why a parameter, not global memory).

use crate::error::describe;
use cudarc::driver::{DeviceRepr, sys};
use std::fmt;

/// Element types of a tensor map.
///
/// ```
/// use gpu_runtime::tensor_map::ElementType;
/// assert_eq!(ElementType::BF16.bytes(), 2);
/// assert!(ElementType::BF16.is_float());
/// assert!(!ElementType::U32.is_float());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementType {
    U8,
    U16,
    U32,
    I32,
    U64,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl ElementType {
    /// Bytes per element.
    pub const fn bytes(self) -> u32 {
        match self {
            ElementType::U8 => 1,
            ElementType::U16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::U32 | ElementType::I32 | ElementType::F32 => 4,
            ElementType::U64 | ElementType::I64 | ElementType::F64 => 8,
        }
    }

    /// Whether it is a floating-point type (NaN fill is allowed only for those).
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64
        )
    }

    fn raw(self) -> sys::CUtensorMapDataType {
        use sys::CUtensorMapDataType as T;
        match self {
            ElementType::U8 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            ElementType::U16 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            ElementType::U32 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            ElementType::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
            ElementType::U64 => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
            ElementType::I64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
            ElementType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            ElementType::BF16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            ElementType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            ElementType::F64 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        }
    }
}

/// How the copy engine lays the box's innermost rows out in shared memory.
///
/// ```
/// use gpu_runtime::tensor_map::{ElementType, Swizzle, TensorMapBuilder};
/// assert_eq!(Swizzle::Bytes128.span(), Some(128));
/// // Boxes of 64 BF16 columns: 128-byte rows, as wide as the span allows.
/// let a = TensorMapBuilder::new(ElementType::BF16, 0x7000_0000, &[4096, 4096]);
/// assert!(a.box_dims(&[64, 128]).swizzle(Swizzle::Bytes128).validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    /// Densely, row after row.
    None,
    /// 16-byte chunks XOR-permuted within 32-, 64- or 128-byte spans (to spread a column's
    /// reads over the banks); the innermost box row must fit the span.
    Bytes32,
    Bytes64,
    Bytes128,
}

impl Swizzle {
    /// The span in bytes (`None`: no limit).
    pub const fn span(self) -> Option<u32> {
        match self {
            Swizzle::None => None,
            Swizzle::Bytes32 => Some(32),
            Swizzle::Bytes64 => Some(64),
            Swizzle::Bytes128 => Some(128),
        }
    }

    fn raw(self) -> sys::CUtensorMapSwizzle {
        use sys::CUtensorMapSwizzle as S;
        match self {
            Swizzle::None => S::CU_TENSOR_MAP_SWIZZLE_NONE,
            Swizzle::Bytes32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
            Swizzle::Bytes64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
            Swizzle::Bytes128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
        }
    }
}

/// What a load puts in the box's elements outside the tensor.
///
/// ```
/// use gpu_runtime::tensor_map::{ElementType, OutOfBounds, TensorMapBuilder, TensorMapError};
/// let f32s = TensorMapBuilder::new(ElementType::F32, 0x7000_0000, &[64, 100]);
/// assert!(f32s.fill(OutOfBounds::Nan).validate().is_ok());
/// let u32s = TensorMapBuilder::new(ElementType::U32, 0x7000_0000, &[64, 100]);
/// let refused = u32s.fill(OutOfBounds::Nan).validate();
/// assert_eq!(refused, Err(TensorMapError::NanFill(ElementType::U32)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutOfBounds {
    /// Zeros.
    Zeros,
    /// NaN (floating-point types only).
    Nan,
}

/// How far the copy engine widens its L2 requests.
///
/// ```
/// use gpu_runtime::tensor_map::{ElementType, L2Promotion, TensorMapBuilder};
/// let a = TensorMapBuilder::new(ElementType::BF16, 0x7000_0000, &[4096, 4096])
///     .box_dims(&[64, 128])
///     .l2_promotion(L2Promotion::Bytes256);
/// assert!(a.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Promotion {
    None,
    Bytes64,
    Bytes128,
    Bytes256,
}

impl L2Promotion {
    fn raw(self) -> sys::CUtensorMapL2promotion {
        use sys::CUtensorMapL2promotion as P;
        match self {
            L2Promotion::None => P::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            L2Promotion::Bytes64 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            L2Promotion::Bytes128 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            L2Promotion::Bytes256 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        }
    }
}

/// The most dimensions a tensor map has.
pub const MAX_RANK: usize = 5;
/// The most elements of a box along one dimension.
pub const MAX_BOX: u32 = 256;

/// Why a tensor map cannot be built.
///
/// ```
/// use gpu_runtime::tensor_map::{ElementType, TensorMapBuilder, TensorMapError};
/// // 1023 floats a row: rows 4092 bytes apart, not a multiple of 16.
/// let ragged = TensorMapBuilder::new(ElementType::F32, 0x7000_0000, &[1023, 8]);
/// let error = ragged.validate().unwrap_err();
/// assert_eq!(error, TensorMapError::Stride { dim: 1, bytes: 4092 });
/// assert!(error.to_string().contains("the stride of dimension 1 is 4092 bytes"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TensorMapError {
    /// Rank outside 1..=5, or arrays of different ranks.
    Rank(String),
    /// The global address is not 16-byte aligned.
    UnalignedAddress(u64),
    /// A global dimension is 0 or past 2^32.
    Dimension { dim: usize, value: u64 },
    /// A global stride is not a positive multiple of 16 below 2^40.
    Stride { dim: usize, bytes: u64 },
    /// A box dimension is 0 or past 256.
    BoxDimension { dim: usize, value: u32 },
    /// The box's innermost row is not a multiple of 16 bytes.
    BoxRow { bytes: u32 },
    /// The box's innermost row is wider than the swizzle span.
    SwizzleSpan { bytes: u32, span: u32 },
    /// An element stride outside 1..=8.
    ElementStride { dim: usize, value: u32 },
    /// NaN fill for an integer type.
    NanFill(ElementType),
    /// The driver refused the map.
    Driver { error: String, map: String },
}

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorMapError::Rank(what) => write!(f, "tensor map: {what}"),
            TensorMapError::UnalignedAddress(a) => write!(
                f,
                "tensor map: the global address {a:#x} is not 16-byte aligned"
            ),
            TensorMapError::Dimension { dim, value } => write!(
                f,
                "tensor map: global dimension {dim} is {value}; it must be 1..=2^32"
            ),
            TensorMapError::Stride { dim, bytes } => write!(
                f,
                "tensor map: the stride of dimension {dim} is {bytes} bytes; it must be a \
                 positive multiple of 16 below 2^40 (rows of a 2-D f32 tensor: a multiple of 4 \
                 elements)"
            ),
            TensorMapError::BoxDimension { dim, value } => write!(
                f,
                "tensor map: box dimension {dim} is {value}; it must be 1..={MAX_BOX}"
            ),
            TensorMapError::BoxRow { bytes } => write!(
                f,
                "tensor map: the box's innermost row is {bytes} bytes; it must be a multiple \
                 of 16"
            ),
            TensorMapError::SwizzleSpan { bytes, span } => write!(
                f,
                "tensor map: the box's innermost row is {bytes} bytes, wider than the \
                 {span}-byte swizzle span"
            ),
            TensorMapError::ElementStride { dim, value } => write!(
                f,
                "tensor map: element stride {dim} is {value}; it must be 1..=8"
            ),
            TensorMapError::NanFill(t) => write!(
                f,
                "tensor map: NaN out-of-bounds fill needs a floating-point type, not {t:?}"
            ),
            TensorMapError::Driver { error, map } => {
                write!(f, "cuTensorMapEncodeTiled refused {map}: {error}")
            }
        }
    }
}

impl std::error::Error for TensorMapError {}

/// The parameters of a tiled tensor map. Dimensions go innermost first (for a row-major
/// matrix: columns, then rows); strides are in bytes, for dimensions 1 and up (dimension 0 is
/// contiguous).
///
/// ```
/// use gpu_runtime::tensor_map::{ElementType, Swizzle, TensorMapBuilder};
/// // A row-major 100 x 64 f32 matrix (64 columns, 100 rows), copied in boxes of 8 x 32.
/// let a = TensorMapBuilder::new(ElementType::F32, 0x7000_0000, &[64, 100])
///     .box_dims(&[8, 32])
///     .swizzle(Swizzle::Bytes32);
/// assert_eq!(a.validate(), Ok(()));
/// assert_eq!(a.box_bytes(), 8 * 32 * 4); // what a load's barrier expects
/// // `a.encode()` then makes the map (with the driver: a GPU is open).
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapBuilder {
    element: ElementType,
    address: u64,
    dims: Vec<u64>,
    strides: Vec<u64>,
    box_dims: Vec<u32>,
    element_strides: Vec<u32>,
    swizzle: Swizzle,
    fill: OutOfBounds,
    l2: L2Promotion,
}

impl TensorMapBuilder {
    /// A packed tensor of `element`s at device address `address` with dimensions `dims`
    /// (innermost first), a box of the whole tensor clipped to 256 per dimension, no swizzle,
    /// zero fill, 128-byte L2 promotion.
    pub fn new(element: ElementType, address: u64, dims: &[u64]) -> TensorMapBuilder {
        let mut stride = element.bytes() as u64;
        let strides = dims
            .iter()
            .take(dims.len().saturating_sub(1))
            .map(|d| {
                stride = stride.saturating_mul(*d);
                stride
            })
            .collect();
        TensorMapBuilder {
            element,
            address,
            dims: dims.to_vec(),
            strides,
            box_dims: dims
                .iter()
                .map(|d| (*d).min(MAX_BOX as u64) as u32)
                .collect(),
            element_strides: vec![1; dims.len()],
            swizzle: Swizzle::None,
            fill: OutOfBounds::Zeros,
            l2: L2Promotion::Bytes128,
        }
    }

    /// Byte strides of dimensions 1 and up (rank - 1 of them).
    pub fn strides(mut self, bytes: &[u64]) -> Self {
        self.strides = bytes.to_vec();
        self
    }

    /// The box one copy moves (rank of them, innermost first).
    pub fn box_dims(mut self, dims: &[u32]) -> Self {
        self.box_dims = dims.to_vec();
        self
    }

    /// Take every `n`-th element per dimension (rank of them; 1 = every element).
    pub fn element_strides(mut self, strides: &[u32]) -> Self {
        self.element_strides = strides.to_vec();
        self
    }

    /// Shared-memory swizzle.
    pub fn swizzle(mut self, swizzle: Swizzle) -> Self {
        self.swizzle = swizzle;
        self
    }

    /// Out-of-bounds fill of loads.
    pub fn fill(mut self, fill: OutOfBounds) -> Self {
        self.fill = fill;
        self
    }

    /// L2 promotion.
    pub fn l2_promotion(mut self, l2: L2Promotion) -> Self {
        self.l2 = l2;
        self
    }

    /// Bytes of one box in shared memory (what a load's barrier expects).
    pub fn box_bytes(&self) -> u64 {
        self.box_dims.iter().map(|d| *d as u64).product::<u64>() * self.element.bytes() as u64
    }

    /// Checks every rule the driver documents for `cuTensorMapEncodeTiled` (no interleave).
    pub fn validate(&self) -> Result<(), TensorMapError> {
        let rank = self.dims.len();
        if !(1..=MAX_RANK).contains(&rank) {
            return Err(TensorMapError::Rank(format!(
                "rank {rank}; it must be 1..={MAX_RANK}"
            )));
        }
        let counts = [
            ("strides", self.strides.len(), rank - 1),
            ("box dimensions", self.box_dims.len(), rank),
            ("element strides", self.element_strides.len(), rank),
        ];
        for (what, got, want) in counts {
            if got != want {
                return Err(TensorMapError::Rank(format!(
                    "rank {rank} needs {want} {what}, got {got}"
                )));
            }
        }
        if !self.address.is_multiple_of(16) {
            return Err(TensorMapError::UnalignedAddress(self.address));
        }
        for (dim, &value) in self.dims.iter().enumerate() {
            if value == 0 || value > 1 << 32 {
                return Err(TensorMapError::Dimension { dim, value });
            }
        }
        for (i, &bytes) in self.strides.iter().enumerate() {
            if bytes == 0 || !bytes.is_multiple_of(16) || bytes >= 1 << 40 {
                return Err(TensorMapError::Stride { dim: i + 1, bytes });
            }
        }
        for (dim, &value) in self.box_dims.iter().enumerate() {
            if value == 0 || value > MAX_BOX {
                return Err(TensorMapError::BoxDimension { dim, value });
            }
        }
        let row = self.box_dims[0] * self.element.bytes();
        if !row.is_multiple_of(16) {
            return Err(TensorMapError::BoxRow { bytes: row });
        }
        if let Some(span) = self.swizzle.span()
            && row > span
        {
            return Err(TensorMapError::SwizzleSpan { bytes: row, span });
        }
        for (dim, &value) in self.element_strides.iter().enumerate() {
            if !(1..=8).contains(&value) {
                return Err(TensorMapError::ElementStride { dim, value });
            }
        }
        if self.fill == OutOfBounds::Nan && !self.element.is_float() {
            return Err(TensorMapError::NanFill(self.element));
        }
        Ok(())
    }

    /// Validates, then encodes the map with the driver (which must be loaded: a GPU is open).
    pub fn encode(&self) -> Result<TensorMap, TensorMapError> {
        self.validate()?;
        let mut raw = sys::CUtensorMap { opaque: [0; 16] };
        let fill = match self.fill {
            OutOfBounds::Zeros => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            OutOfBounds::Nan => {
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
            }
        };
        // SAFETY: every array holds the rank's entries (validated); the driver only writes
        // `raw`. The address is not dereferenced here.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut raw,
                self.element.raw(),
                self.dims.len() as u32,
                self.address as *mut std::ffi::c_void,
                self.dims.as_ptr(),
                self.strides.as_ptr(),
                self.box_dims.as_ptr(),
                self.element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                self.swizzle.raw(),
                self.l2.raw(),
                fill,
            )
        }
        .result()
        .map_err(|e| TensorMapError::Driver {
            error: describe(&e),
            map: self.to_string(),
        })?;
        Ok(TensorMap {
            raw,
            summary: self.summary(),
        })
    }

    fn summary(&self) -> Summary {
        let mut s = Summary {
            address: self.address,
            rank: self.dims.len() as u8,
            dims: [0; MAX_RANK],
            box_dims: [0; MAX_RANK],
        };
        for (i, (d, b)) in self.dims.iter().zip(&self.box_dims).enumerate() {
            s.dims[i] = *d;
            s.box_dims[i] = *b;
        }
        s
    }
}

impl fmt::Display for TensorMapBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {:?} tensor at {:#x}, dimensions {:?}, strides {:?} B, box {:?}, element \
             strides {:?}, swizzle {:?}, fill {:?}",
            self.element,
            self.address,
            self.dims,
            self.strides,
            self.box_dims,
            self.element_strides,
            self.swizzle,
            self.fill
        )
    }
}

/// The most maps a [`TensorMaps`] keeps.
pub const MAX_CACHED: usize = 64;

/// The maps of one problem, each encoded once and reused by every later launch that asks
/// for the same parameters (a map depends on nothing else), so the launch path does not call
/// the driver's encoder again.
///
/// ```no_run
/// use gpu_runtime::tensor_map::{Swizzle, TensorMaps};
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpu = gpu_runtime::Gpu::open(MODULES)?;
/// let a = gpu.zeros::<f32>(128 * 64, "A")?;
/// let maps = TensorMaps::default();
/// // A: 128 rows of 64 floats, in boxes of 32 x 64, 128-byte swizzle.
/// let map = maps.f32_matrix(gpu.address(&a), (64, 128), (32, 64), Swizzle::Bytes128)?;
/// // The same parameters again: the cached map, no call to the driver.
/// let again = maps.f32_matrix(gpu.address(&a), (64, 128), (32, 64), Swizzle::Bytes128)?;
/// assert_eq!(again, map);
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct TensorMaps {
    encoded: std::sync::Mutex<Vec<(TensorMapBuilder, TensorMap)>>,
}

impl TensorMaps {
    /// The map `builder` describes: encoded the first time, then from the cache.
    pub fn get(&self, builder: TensorMapBuilder) -> Result<TensorMap, TensorMapError> {
        let mut encoded = self.encoded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, map)) = encoded.iter().find(|(b, _)| *b == builder) {
            return Ok(*map);
        }
        let map = builder.encode()?;
        // A caller whose buffers move (a model's activations) would grow the cache without
        // end: the oldest map goes first past `MAX_CACHED`.
        if encoded.len() >= MAX_CACHED {
            encoded.remove(0);
        }
        encoded.push((builder, map));
        Ok(map)
    }

    /// The map of a row-major matrix of `element`s at `address`, `rows` rows of `cols`
    /// elements (packed), in boxes of `box_cols x box_rows`, with `swizzle`, zero fill.
    pub fn matrix(
        &self,
        element: ElementType,
        address: u64,
        (cols, rows): (u32, u32),
        (box_cols, box_rows): (u32, u32),
        swizzle: Swizzle,
    ) -> Result<TensorMap, TensorMapError> {
        self.get(
            TensorMapBuilder::new(element, address, &[cols as u64, rows as u64])
                .box_dims(&[box_cols, box_rows])
                .swizzle(swizzle),
        )
    }

    /// The map of a row-major `f32` matrix at `address`, `rows` rows of `cols` floats (packed),
    /// in boxes of `box_cols x box_rows`, with `swizzle`.
    pub fn f32_matrix(
        &self,
        address: u64,
        (cols, rows): (u32, u32),
        (box_cols, box_rows): (u32, u32),
        swizzle: Swizzle,
    ) -> Result<TensorMap, TensorMapError> {
        self.matrix(
            ElementType::F32,
            address,
            (cols, rows),
            (box_cols, box_rows),
            swizzle,
        )
    }
}

/// What a watchdog report says about a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Summary {
    address: u64,
    rank: u8,
    dims: [u64; MAX_RANK],
    box_dims: [u32; MAX_RANK],
}

/// An encoded tensor map, passed to a kernel by value.
///
/// ```no_run
/// use gpu_runtime::tensor_map::{ElementType, TensorMapBuilder};
/// use gpu_runtime::{Gpu, LaunchConfig};
/// # const MODULES: &[gpu_runtime::Module] = &[];
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let gpu = Gpu::open(MODULES)?;
/// let (a, mut out) = (gpu.zeros::<f32>(128 * 64, "A")?, gpu.zeros::<f32>(128 * 64, "out")?);
/// let map = TensorMapBuilder::new(ElementType::F32, gpu.address(&a), &[64, 128])
///     .box_dims(&[64, 32])
///     .encode()?;
/// let copy = gpu.kernel::<(gpu::tensor_map::TensorMap, *mut f32)>("tma_copy")?;
/// // SAFETY: tma_copy(map, out) copies one 64 x 32 box a block into `out` (8 KiB shared).
/// unsafe { copy.launch(&gpu, LaunchConfig::linear(4, 128, 64 * 32 * 4), (&map, &mut out))? };
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy)]
#[repr(C)]
pub struct TensorMap {
    raw: sys::CUtensorMap,
    summary: Summary,
}

// SAFETY: the launch copies `raw` (the first field, at offset 0) into the 128-byte,
// 64-byte aligned parameter the kernel declares; the driver reads only the parameter's size.
unsafe impl DeviceRepr for TensorMap {}

impl fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.summary;
        let rank = s.rank as usize;
        write!(
            f,
            "tensor map of {:#x} {:?} box {:?}",
            s.address,
            &s.dims[..rank],
            &s.box_dims[..rank]
        )
    }
}

impl PartialEq for TensorMap {
    fn eq(&self, other: &Self) -> bool {
        self.raw.opaque == other.raw.opaque
    }
}

impl Eq for TensorMap {}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> TensorMapBuilder {
        // A 100 x 64 row-major f32 matrix, 8 x 32 boxes.
        TensorMapBuilder::new(ElementType::F32, 0x7000_0000, &[64, 100]).box_dims(&[8, 32])
    }

    #[test]
    fn a_packed_matrix_is_valid_and_its_strides_are_derived() {
        let m = matrix();
        assert_eq!(m.validate(), Ok(()));
        assert_eq!(m.strides, vec![256]);
        assert_eq!(m.box_bytes(), 8 * 32 * 4);
        let full = TensorMapBuilder::new(ElementType::F32, 0x1000, &[1000, 3]);
        assert_eq!(full.box_dims, vec![256, 3]);
    }

    #[test]
    fn a_refused_map_is_not_cached_and_the_error_repeats() {
        let maps = TensorMaps::default();
        // Refused before the driver is called: no driver is needed for this test.
        let err = maps.f32_matrix(0x1000, (1023, 8), (8, 8), Swizzle::None);
        assert!(matches!(
            err,
            Err(TensorMapError::Stride {
                dim: 1,
                bytes: 4092
            })
        ));
        assert!(
            maps.f32_matrix(0x1000, (1023, 8), (8, 8), Swizzle::None)
                .is_err()
        );
        assert!(maps.encoded.lock().unwrap().is_empty());
    }

    #[test]
    fn every_broken_rule_is_named() {
        let cases: Vec<(TensorMapBuilder, &str)> = vec![
            (
                TensorMapBuilder::new(ElementType::F32, 0x1000, &[]),
                "rank 0",
            ),
            (
                TensorMapBuilder::new(ElementType::F32, 0x1000, &[4; 6]),
                "rank 6",
            ),
            (matrix().box_dims(&[8]), "needs 2 box dimensions"),
            (matrix().strides(&[256, 512]), "needs 1 strides"),
            (
                TensorMapBuilder::new(ElementType::F32, 0x1004, &[64, 100]),
                "not 16-byte aligned",
            ),
            (
                TensorMapBuilder::new(ElementType::F32, 0x1000, &[0, 100]),
                "dimension 0 is 0",
            ),
            (matrix().strides(&[260]), "stride of dimension 1 is 260"),
            (matrix().strides(&[1 << 40]), "below 2^40"),
            (matrix().box_dims(&[8, 257]), "box dimension 1 is 257"),
            (
                matrix().box_dims(&[3, 32]),
                "12 bytes; it must be a multiple of 16",
            ),
            (
                matrix().box_dims(&[64, 4]).swizzle(Swizzle::Bytes128),
                "wider than the 128-byte swizzle",
            ),
            (matrix().element_strides(&[1, 9]), "element stride 1 is 9"),
            (
                TensorMapBuilder::new(ElementType::I32, 0x1000, &[64]).fill(OutOfBounds::Nan),
                "needs a floating-point type",
            ),
        ];
        for (builder, expected) in cases {
            let err = builder.validate().unwrap_err().to_string();
            assert!(err.contains(expected), "`{err}` lacks `{expected}`");
        }
        // Ragged N (not a multiple of 4 floats) cannot have 16-byte row strides.
        let ragged = TensorMapBuilder::new(ElementType::F32, 0x1000, &[1023, 8]);
        assert!(matches!(
            ragged.validate(),
            Err(TensorMapError::Stride {
                dim: 1,
                bytes: 4092
            })
        ));
        assert!(
            matrix()
                .box_dims(&[32, 4])
                .swizzle(Swizzle::Bytes128)
                .validate()
                .is_ok()
        );
    }
}
