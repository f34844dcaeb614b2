//! `attention_combine_*`: the split-KV merge. Where [`Attention`](super::Attention) splits
//! each tile's keys into parts ([`AttentionArgs::splits`](super::AttentionArgs::splits)),
//! every part writes its O (divided by its own sum) and log-sum-exp in FP32; this kernel
//! merges them, per query row, into O and the log-sum-exp: `O = sum_j w_j O_j` with `w_j =
//! exp(lse_j - lse)`, `lse = log sum_j exp(lse_j)` (a row no part saw: O = 0, lse = -inf).
//! Its body is `device.rs`, its launcher ([`Combiner`]) `host.rs`.

#[cfg(target_arch = "nvptx64")]
mod device;
#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::Combiner;

// The elements are named by the device instantiations only.
#[allow(unused_imports)]
use gpu::wgmma::{Bf16, F16};

/// What [`attention_combine_bf16`] and [`attention_combine_f16`] merge, and where to.
///
/// ```
/// use gpu_kernels::attention::CombineArgs;
/// assert_eq!(std::mem::size_of::<CombineArgs>(), 56);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CombineArgs {
    /// The parts' O: `splits` blocks of `batch * seqlen_q * heads_q` rows of `head_dim`
    /// FP32, in O's order per part ([`AttentionSources::o_partial`](super::AttentionSources::o_partial)).
    pub o_partial: u64,
    /// The parts' log-sum-exps, one FP32 per row of `o_partial`.
    pub lse_partial: u64,
    /// O's first element (16-bit elements).
    pub o: u64,
    /// The log-sum-exp `(batch, heads_q, seqlen_q)`, FP32.
    pub lse: u64,
    /// Sequences.
    pub batch: u32,
    /// Query rows per sequence.
    pub seqlen_q: u32,
    /// Query heads.
    pub heads_q: u32,
    /// Columns per row: a multiple of 4 (the kernels' 64, 128 or 256).
    pub head_dim: u32,
    /// Parts per row, at least 1.
    pub splits: u32,
    /// Keeps the size a multiple of 8 bytes.
    pub reserved: u32,
}

/// O's strides in elements, each a multiple of 4: the combine kernels' second parameter
/// (apart from [`CombineArgs`]: a kernel parameter struct is at most 64 bytes here).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CombineStrides {
    /// From one sequence to the next.
    pub batch: u64,
    /// From one query row (token) to the next.
    pub token: u64,
    /// From one head to the next.
    pub head: u64,
}

/// Threads of the combine kernels' blocks: one warp per query row.
pub const COMBINE_THREADS: u32 = 128;

/// Declares the combine kernel of one element; one body ([`device::combine`]).
macro_rules! combine_kernel {
    ($name:ident, $e:ident) => {
        gpu::kernel! {
            /// Merges the split-KV parts of every query row into O (rounded to nearest-even)
            /// and the log-sum-exp (module docs): one warp per row, a grid-stride walk.
            ///
            /// # Safety
            /// Any 1-D grid of [`COMBINE_THREADS`]-thread blocks; the buffers as
            /// [`CombineArgs`] and [`CombineStrides`] describe them, the parts 16-byte
            /// aligned, O 8-byte, the parts written (stream order) and not overlapping O or
            /// the log-sum-exp.
            pub fn $name(args: CombineArgs, o_strides: CombineStrides)
                [max_threads = COMBINE_THREADS]
                [device if target_feature = "sm_90a"]
            {
                // SAFETY: forwarded launch contract.
                unsafe { device::combine::<$e>(args, o_strides) }
            }
        }
    };
}

combine_kernel!(attention_combine_bf16, Bf16);
combine_kernel!(attention_combine_f16, F16);
