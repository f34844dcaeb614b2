//! What every GEMM of this crate takes, [`GemmShape`], and how every kernel call of this crate
//! fails, [`KernelError`].

use gpu_runtime::GpuError;
use gpu_runtime::tensor_map::TensorMapError;

/// A GEMM's sizes: A `m x k`, C `m x n`, B `k x n` or `n x k` (the call says which), all
/// row-major and packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// Columns of A.
    pub k: u32,
}

/// Why a kernel of this crate was not run (a GEMM: [`GemmError`]; attention:
/// `attention::AttentionError`).
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The shape or a buffer does not fit the call.
    #[error("{0}")]
    Shape(String),
    /// The GPU cannot run the kernels, or the launch failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A tensor map could not be encoded.
    #[error(transparent)]
    TensorMap(#[from] TensorMapError),
}

/// Why a GEMM was not run.
pub type GemmError = KernelError;

/// The checks every GEMM makes on `m, n, k` (at least 1, at most `max`) and on the buffers'
/// lengths `[a, b, c]` in elements (A `m k`, B `k n`, C `m n`), naming `element` in messages.
pub(crate) fn check_sizes(
    shape: GemmShape,
    max: u32,
    lengths: [usize; 3],
    element: &str,
) -> Result<(), GemmError> {
    let GemmShape { m, n, k } = shape;
    let bad = |why: String| Err(GemmError::Shape(why));
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
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    for (name, need, have) in [
        ("A", m64 * k64, lengths[0]),
        ("B", n64 * k64, lengths[1]),
        ("C", m64 * n64, lengths[2]),
    ] {
        if (have as u64) < need {
            return bad(format!(
                "{name} holds {have} {element} elements; the {m} x {n} x {k} GEMM needs {need}"
            ));
        }
    }
    Ok(())
}
