//! Fused attention forward (`gpu_kernels::attention`, sm_90a): `O = softmax(scale Q K^T +
//! mask) V` and the row log-sum-exp, BF16 and FP16, `d` 64 / 128 / 256, no mask or causal,
//! grouped-query heads, any sequence lengths; every kernel of the table (the ablation's
//! variants too) checked against a reference kernel of our own (FP32 softmax and products over
//! the same 16-bit inputs). The speed reference is PyTorch's SDPA (cuDNN and FlashAttention-2
//! backends) on the same shapes, run by `scripts/attention_sdpa.py` on the same GPU.

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90a")))]
mod reference;

/// The host half: sizes, inputs, reference, launch, check.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

use gpu::wgmma::{Bf16, F16};
pub use gpu_kernels::attention::*;

/// Threads of the reference kernel's blocks (one warp per query row).
pub const REFERENCE_THREADS: u32 = 256;

gpu::kernel! {
    /// The reference: each query row's scores against its visible keys in FP32 (`scale q .
    /// k`, the products of the BF16 inputs summed in FP32), their maximum, the exponentials
    /// (`e^(s - max)`, accurate to 4 ulp) and their sum in FP32, O the weighted sum of V in
    /// FP32 over the sum, to `o` (like Q, as doubles) and the log-sum-exp (`max + ln sum`;
    /// `-inf` and O = 0 for a row that sees no key) to `lse`. One warp per row, the lanes
    /// splitting `d`.
    ///
    /// # Safety
    /// Any 1-D grid of [`REFERENCE_THREADS`]-thread blocks; `q`, `k`, `v` hold the tensors
    /// `args` and `d` describe (Q `batch x seqlen_q x heads_q x d`, K and V `batch x seqlen_kv
    /// x heads_kv x d`), `kv_lengths` `batch` lengths (sequence `b` sees its first
    /// `kv_lengths[b]` keys, clamped to `0..=seqlen_kv`, causal aligned to that end), `o` as
    /// many doubles as Q, `lse` `batch x heads_q x seqlen_q`; `d` 64, 128 or 256; every size
    /// at least 1, `heads_q` a multiple of `heads_kv`.
    pub fn bf16_attention_reference(q: *const Bf16, k: *const Bf16, v: *const Bf16, kv_lengths: *const i32, o: *mut f64, lse: *mut f64, args: AttentionArgs, d: u32)
        [max_threads = REFERENCE_THREADS]
        [device if not(target_feature = "sm_90a")]
    {
        // SAFETY: forwarded launch contract.
        unsafe { reference::reference(q, k, v, kv_lengths, o, lse, args, d) }
    }
}

gpu::kernel! {
    /// As [`bf16_attention_reference`], from FP16 inputs.
    ///
    /// # Safety
    /// As [`bf16_attention_reference`].
    pub fn f16_attention_reference(q: *const F16, k: *const F16, v: *const F16, kv_lengths: *const i32, o: *mut f64, lse: *mut f64, args: AttentionArgs, d: u32)
        [max_threads = REFERENCE_THREADS]
        [device if not(target_feature = "sm_90a")]
    {
        // SAFETY: forwarded launch contract.
        unsafe { reference::reference(q, k, v, kv_lengths, o, lse, args, d) }
    }
}

/// The bits O is poisoned with before a checked launch (a NaN in BF16 and FP16 alike, which
/// no kernel writes from finite inputs): as the GEMM's C.
pub const O_POISON: u16 = crate::gemm16::C_POISON;
