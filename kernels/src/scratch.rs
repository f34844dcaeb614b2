//! Scratch buffers kept per stream: what [`Gemm16`](crate::gemm16::Gemm16) copies padded
//! operands into and [`Attention`](crate::attention::Attention) writes split parts into.
//! Calls on one stream are ordered, so each reuses its stream's buffer (and the tensor maps
//! made of it); another stream gets its own. A buffer allocated and freed per call cost up
//! to 2x a GEMM's time.

use crate::error::KernelError;
use gpu_runtime::Context as _;
use gpu_runtime::cudarc::driver::{CudaSlice, CudaStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Alignment of each region carved from a scratch buffer (tensor maps need 16 bytes; 256 is
/// what the driver's own allocations have).
pub(crate) const SCRATCH_ALIGN: u64 = 256;

/// One buffer per stream (keyed by its handle), kept until [`StreamScratch::release`] or the
/// drop.
#[derive(Default)]
pub(crate) struct StreamScratch {
    buffers: Mutex<Vec<(usize, CudaSlice<u8>)>>,
}

/// The buffers, locked for one call.
pub(crate) struct ScratchLock<'a>(MutexGuard<'a, Vec<(usize, CudaSlice<u8>)>>);

impl StreamScratch {
    /// The buffers, locked (a poisoned lock's buffers are still whole: taken as they are).
    pub(crate) fn lock(&self) -> ScratchLock<'_> {
        ScratchLock(self.buffers.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Frees every buffer (in stream order, by cudarc's event tracking) and returns their
    /// bytes.
    pub(crate) fn release(&self) -> usize {
        self.lock()
            .0
            .drain(..)
            .map(|(_, buffer)| buffer.len())
            .sum()
    }
}

impl ScratchLock<'_> {
    /// `stream`'s buffer, at least `bytes` long: the one kept for it, or a new one (allocated
    /// on `stream`; one it replaces is freed in stream order after its last use). `purpose`
    /// names it in an allocation error.
    ///
    /// # Safety
    /// The buffer's bytes are whatever an earlier call left, or uninitialized: the caller
    /// writes every byte it reads (in stream order) before reading it.
    pub(crate) unsafe fn for_stream(
        &mut self,
        stream: &Arc<CudaStream>,
        bytes: u64,
        purpose: &str,
    ) -> Result<&mut CudaSlice<u8>, KernelError> {
        let scratch = &mut self.0;
        let key = stream.cu_stream() as usize;
        let slot = match scratch.iter().position(|(s, _)| *s == key) {
            Some(i) if scratch[i].1.len() as u64 >= bytes => return Ok(&mut scratch[i].1),
            Some(i) => i,
            None => {
                scratch.push((
                    key,
                    stream.null::<u8>().during(|| "a scratch handle".into())?,
                ));
                scratch.len() - 1
            }
        };
        // SAFETY: the caller writes before it reads (contract).
        let buffer = unsafe { stream.alloc::<u8>(bytes as usize) }
            .during(|| format!("allocating {bytes} B for {purpose}"))?;
        scratch[slot].1 = buffer;
        Ok(&mut scratch[slot].1)
    }
}
