//! The body of `attention_combine_*` (device code, sm_90a with the attention kernels).

#![cfg(target_feature = "sm_90a")]

use super::{CombineArgs, CombineStrides};
use core::num::NonZeroU32;
use gpu::math;
use gpu::ptx;
use gpu::reduce::{Max, Sum, warp_reduce};
use gpu::wgmma::SixteenBit;

/// Four FP32 columns of a part's row, read in one 16-byte load.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Columns4([f32; 4]);

/// Four columns of O, written in one 8-byte store.
#[repr(C, align(8))]
struct Elements4([u32; 2]);

/// The merge (module docs of [`super`]): warp `w` of the grid takes rows `w, w + warps, ...`
/// (row `r = (b seqlen_q + s) heads_q + h`); lane `l` reads the parts' log-sum-exps `l, l +
/// 32, ...` for their maximum and weights, then columns `4 l, 4 l + 128, ...` of each part
/// with a nonzero weight.
///
/// # Safety
/// The contract of [`super::attention_combine_bf16`].
#[inline(always)]
pub(super) unsafe fn combine<E: SixteenBit>(args: CombineArgs, o_strides: CombineStrides) {
    let thread = ptx::thread_idx_x();
    let lane = thread % 32;
    let warps_per_block = ptx::block_dim_x() / 32;
    let mut row = ptx::block_idx_x() * warps_per_block + thread / 32;
    let warps = ptx::grid_dim_x() * warps_per_block;
    let rows = args.batch * args.seqlen_q * args.heads_q;
    let lse_parts = args.lse_partial as *const f32;
    let o_parts = args.o_partial as *const Columns4;
    let d = args.head_dim;
    // At least 1 where a row exists (the loop below runs only then): the divisions need no
    // check.
    let nonzero = |x: u32| NonZeroU32::new(x).unwrap_or(NonZeroU32::MIN);
    let (per_sequence, heads) = (nonzero(args.seqlen_q * args.heads_q), nonzero(args.heads_q));
    // `exp(x) = 2^(x log2 e)`: the parts' log-sum-exps are in base e.
    let log2e = core::f32::consts::LOG2_E;
    while row < rows {
        let part_lse = |j: u32| {
            // SAFETY: part j < splits of row `row`: inside the parts' log-sum-exps.
            unsafe {
                lse_parts
                    .add(j as usize * rows as usize + row as usize)
                    .read()
            }
        };
        let mut max = f32::NEG_INFINITY;
        let mut j = lane;
        while j < args.splits {
            max = max.max(part_lse(j));
            j += 32;
        }
        let max = warp_reduce::<Max, f32>(max);
        // No part saw a key: every weight is 0 (and `lse - max` would be NaN).
        let weight = |lse: f32| {
            if max == f32::NEG_INFINITY {
                0.0
            } else {
                math::exp2((lse - max) * log2e)
            }
        };
        let mut sum = 0.0;
        let mut j = lane;
        while j < args.splits {
            sum += weight(part_lse(j));
            j += 32;
        }
        let sum = warp_reduce::<Sum, f32>(sum);
        let inverse = if sum > 0.0 { math::recip(sum) } else { 0.0 };
        let (b, rest) = (row / per_sequence, row % per_sequence);
        let (s, h) = (rest / heads, rest % heads);
        let o_row =
            b as u64 * o_strides.batch + s as u64 * o_strides.token + h as u64 * o_strides.head;
        let mut col = 4 * lane;
        while col < d {
            let mut acc = [0.0f32; 4];
            for j in 0..args.splits {
                let w = weight(part_lse(j)) * inverse;
                if w != 0.0 {
                    let at = ((j as usize * rows as usize + row as usize) * d as usize
                        + col as usize)
                        / 4;
                    // SAFETY: columns `col..col + 4` of part j's row: inside the parts, 16-byte
                    // aligned (contract: d a multiple of 4, the buffer aligned).
                    let part = unsafe { o_parts.add(at).read() };
                    // Indexed: zipped with the array by value, the columns went to local
                    // memory (an 80-byte stack frame).
                    #[allow(clippy::needless_range_loop)]
                    for c in 0..4 {
                        acc[c] += w * part.0[c];
                    }
                }
            }
            let out = Elements4([E::pack2(acc[0], acc[1]), E::pack2(acc[2], acc[3])]);
            let at = (args.o + 2 * (o_row + col as u64)) as *mut Elements4;
            // SAFETY: four elements of O's row (b, s, h) at `col < d`, 8-byte aligned (O's
            // address and strides: contract); this lane's alone.
            unsafe { at.write(out) };
            col += 128;
        }
        if lane == 0 {
            let lse = if sum > 0.0 {
                max + math::log2(sum) * core::f32::consts::LN_2
            } else {
                f32::NEG_INFINITY
            };
            let at = (b * args.heads_q + h) as usize * args.seqlen_q as usize + s as usize;
            // SAFETY: inside the log-sum-exp's `batch * heads_q * seqlen_q` floats.
            unsafe { (args.lse as *mut f32).add(at).write(lse) };
        }
        row += warps;
    }
}
