//! How every call of this crate fails: [`KernelError`], one enum a caller can match (to fall
//! back to another path on an unsupported GPU or head dimension, say), each variant one line
//! when displayed. A call that fails has launched nothing and written nothing.

use gpu_runtime::GpuError;
use gpu_runtime::tensor_map::TensorMapError;

/// Why a kernel of this crate was not run.
///
/// ```
/// use gpu_kernels::KernelError;
/// // What a caller matches on to fall back to another path, and what it prints.
/// let e = KernelError::UnsupportedGpu {
///     what: "the attention kernels",
///     gpu: "NVIDIA A100".into(),
///     compute_capability: (8, 0),
///     needs: (9, 0),
///     why: "wgmma and tensor copies",
/// };
/// assert!(matches!(e, KernelError::UnsupportedGpu { compute_capability: (8, _), .. }));
/// assert_eq!(
///     e.to_string(),
///     "the attention kernels need compute capability 9.0 (wgmma and tensor copies); \
///      NVIDIA A100 has 8.0"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// The GPU's compute capability cannot run the kernels (`needs`: the least it must be;
    /// the tensor-core kernels need exactly 9.0, sm_90a).
    #[error(
        "{what} need compute capability {}.{} ({why}); {gpu} has {}.{}",
        needs.0, needs.1, compute_capability.0, compute_capability.1
    )]
    UnsupportedGpu {
        /// The kernels asked for.
        what: &'static str,
        /// The GPU's name.
        gpu: String,
        /// The GPU's compute capability.
        compute_capability: (u32, u32),
        /// The compute capability the kernels are built for.
        needs: (u32, u32),
        /// What they use that needs it.
        why: &'static str,
    },
    /// No kernel is built for this head dimension.
    #[error("head dimension {head_dim} is not built (built: {built:?})")]
    UnsupportedHeadDim {
        /// The head dimension asked for.
        head_dim: u32,
        /// The head dimensions built.
        built: &'static [u32],
    },
    /// A combination the kernels do not take (FP16 with B `k x n`, strides with the
    /// `cp.async` attention variant), with what to do instead.
    #[error("{0}")]
    Unsupported(String),
    /// A size is out of range, or sizes do not agree (heads_q not a multiple of heads_kv).
    #[error("{0}")]
    Shape(String),
    /// A buffer is shorter than its tensor needs, in its elements.
    #[error("{name} holds {have} elements; {need} are needed")]
    BufferTooSmall {
        /// The buffer (`Q`, `A`, `the log-sum-exp`).
        name: &'static str,
        /// Its length.
        have: usize,
        /// The elements its shape and strides reach.
        need: u64,
    },
    /// A stride or address the kernels cannot take (tensor copies need 16-byte multiples; an
    /// output's rows may not overlap).
    #[error("{name}: {why}")]
    Stride {
        /// The tensor.
        name: &'static str,
        /// What is wrong, with the value.
        why: String,
    },
    /// A buffer lives in another context (another GPU) than the stream the call runs on.
    #[error("{name} belongs to GPU {buffer_gpu}; the call runs on GPU {gpu}")]
    WrongDevice {
        /// The buffer.
        name: &'static str,
        /// Its device's ordinal.
        buffer_gpu: usize,
        /// The call's device ordinal.
        gpu: usize,
    },
    /// The driver refused or failed (loading, launching).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A tensor map could not be encoded.
    #[error(transparent)]
    TensorMap(#[from] TensorMapError),
}

/// `Err(Shape)` with `why`.
pub(crate) fn shape<T>(why: String) -> Result<T, KernelError> {
    Err(KernelError::Shape(why))
}

/// Refuses a buffer (named `name`) that cudarc tracks on `stream` unless that stream's
/// context is `gpu`'s: a buffer of another GPU cannot be read by its kernels.
pub(crate) fn check_device(
    gpu: &gpu_runtime::Gpu,
    name: &'static str,
    stream: &std::sync::Arc<gpu_runtime::cudarc::driver::CudaStream>,
) -> Result<(), KernelError> {
    let context = stream.context();
    if context.cu_ctx() == gpu.context().cu_ctx() {
        return Ok(());
    }
    Err(KernelError::WrongDevice {
        name,
        buffer_gpu: context.ordinal(),
        gpu: gpu.context().ordinal(),
    })
}

/// Refuses a buffer of `have` elements where `need` are needed.
pub(crate) fn check_len(name: &'static str, have: usize, need: u64) -> Result<(), KernelError> {
    if (have as u64) < need {
        return Err(KernelError::BufferTooSmall { name, have, need });
    }
    Ok(())
}
