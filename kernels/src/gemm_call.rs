//! What every GEMM of this crate takes, [`GemmShape`], and the checks every GEMM makes.

use crate::error::{KernelError, check_len, shape as bad};

/// A GEMM's sizes: A `m x k`, C `m x n`, B `k x n` or `n x k` (the call says which), all
/// row-major and packed.
///
/// ```
/// use gpu_kernels::GemmShape;
/// let shape = GemmShape { m: 1000, n: 4096, k: 4096 };
/// assert_eq!(2 * shape.m as u64 * shape.n as u64 * shape.k as u64, 33_554_432_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// Columns of A.
    pub k: u32,
}

/// Why a GEMM was not run.
///
/// ```
/// use gpu_kernels::{GemmError, KernelError};
/// let e: GemmError = KernelError::BufferTooSmall { name: "A", have: 10, need: 12 };
/// assert_eq!(e.to_string(), "A holds 10 elements; 12 are needed");
/// ```
pub type GemmError = KernelError;

/// The checks every GEMM makes on `m, n, k` ([`check_dims`]) and on the buffers' lengths
/// `[a, b, c]` in elements (A `m k`, B `k n`, C `m n`, packed).
pub(crate) fn check_sizes(
    shape: GemmShape,
    max: u32,
    lengths: [usize; 3],
) -> Result<(), GemmError> {
    check_dims(shape, max)?;
    let GemmShape { m, n, k } = shape;
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    check_len("A", lengths[0], m64 * k64)?;
    check_len("B", lengths[1], n64 * k64)?;
    check_len("C", lengths[2], m64 * n64)
}

/// `m, n, k` at least 1 and at most `max`.
pub(crate) fn check_dims(shape: GemmShape, max: u32) -> Result<(), GemmError> {
    let GemmShape { m, n, k } = shape;
    if m == 0 || n == 0 || k == 0 {
        return bad(format!(
            "M, N and K must be at least 1 (got {m} x {n} x {k})"
        ));
    }
    if m > max || n > max || k > max {
        return bad(format!(
            "M, N and K must be at most {max} (got {m} x {n} x {k})"
        ));
    }
    Ok(())
}
