//! The attention reference's device code (any arch): one warp per query row, FP32.

use super::AttentionArgs;
use gpu::math;
use gpu::ptx;
use gpu::reduce::shfl_xor;
use gpu::wgmma::SixteenBit;

/// The sum of `x` over the warp, in every lane.
#[inline(always)]
fn warp_sum(mut x: f32) -> f32 {
    let mut mask = 16;
    while mask > 0 {
        x += shfl_xor(x, mask);
        mask /= 2;
    }
    x
}

/// See `bf16_attention_reference`: the body for `d` 64, 128 or 256 (`d / 32` elements per
/// lane, a constant so that each lane's slices of Q and O stay in registers).
///
/// # Safety
/// Its launch contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn reference<E: SixteenBit>(
    q: *const E,
    k: *const E,
    v: *const E,
    kv_lengths: *const i32,
    o: *mut f64,
    lse: *mut f64,
    args: AttentionArgs,
    d: u32,
) {
    // SAFETY (all three): forwarded launch contract.
    unsafe {
        match d {
            64 => reference_for::<E, 2>(q, k, v, kv_lengths, o, lse, args),
            128 => reference_for::<E, 4>(q, k, v, kv_lengths, o, lse, args),
            _ => reference_for::<E, 8>(q, k, v, kv_lengths, o, lse, args),
        }
    }
}

/// [`reference`] for `d = 32 PER_LANE`.
///
/// # Safety
/// As [`reference`].
#[inline(always)]
unsafe fn reference_for<E: SixteenBit, const PER_LANE: usize>(
    q: *const E,
    k: *const E,
    v: *const E,
    kv_lengths: *const i32,
    o: *mut f64,
    lse: *mut f64,
    args: AttentionArgs,
) {
    let d = 32 * PER_LANE as u32;
    let AttentionArgs {
        batch,
        seqlen_q,
        seqlen_kv,
        heads_q,
        heads_kv,
        causal,
        scale_log2,
    } = args;
    let scale = scale_log2 / core::f32::consts::LOG2_E;
    let lane = ptx::thread_idx_x() % 32;
    let warps_per_block = super::REFERENCE_THREADS / 32;
    let warps = ptx::grid_dim_x() * warps_per_block;
    // Every size is at least 1 (contract): the divisions need no check.
    let (seqlen_q, heads_q) = (seqlen_q.max(1), heads_q.max(1));
    let group = (heads_q / heads_kv.max(1)).max(1);
    let rows = batch as u64 * heads_q as u64 * seqlen_q as u64;
    let mut row = (ptx::block_idx_x() * warps_per_block + ptx::thread_idx_x() / 32) as u64;
    while row < rows {
        // The log-sum-exp's order: (batch, head, query).
        let i = row % seqlen_q as u64;
        let head = (row / seqlen_q as u64) % heads_q as u64;
        let b = row / (seqlen_q as u64 * heads_q as u64);
        let kv_head = head / group as u64;
        let q_at = ((b * seqlen_q as u64 + i) * heads_q as u64 + head) * d as u64;
        let kv_row = |j: u64| ((b * seqlen_kv as u64 + j) * heads_kv as u64 + kv_head) * d as u64;
        // SAFETY: `batch` lengths (launch contract), b < batch.
        let keys = unsafe { kv_lengths.add(b as usize).read() }
            .max(0)
            .min(seqlen_kv as i32) as i64;
        let limit = if causal != 0 {
            (i as i64 + keys - seqlen_q as i64 + 1).max(0).min(keys) as u64
        } else {
            keys as u64
        };
        // Element `lane + 32 c` of a row starting at `at`.
        let element = move |at: u64, c: usize| (at + lane as u64 + 32 * c as u64) as usize;
        // SAFETY: elements of Q's row (launch contract).
        let qv: [f32; PER_LANE] =
            core::array::from_fn(|c| unsafe { (*q.add(element(q_at, c))).to_f32() });
        let score = |j: u64| {
            let at = kv_row(j);
            let mut partial = 0f32;
            for (c, &qx) in qv.iter().enumerate() {
                // SAFETY: an element of K's row j < seqlen_kv.
                let kx = unsafe { (*k.add(element(at, c))).to_f32() };
                partial = ptx::fma_f32(qx, kx, partial);
            }
            warp_sum(partial) * scale
        };
        let mut max = f32::NEG_INFINITY;
        for j in 0..limit {
            max = max.max(score(j));
        }
        let mut sum = 0f32;
        let mut acc = [0f32; PER_LANE];
        for j in 0..limit {
            let p = math::exp_accurate(score(j) - max);
            sum += p;
            let at = kv_row(j);
            for (c, a) in acc.iter_mut().enumerate() {
                // SAFETY: an element of V's row j.
                let vx = unsafe { (*v.add(element(at, c))).to_f32() };
                *a = ptx::fma_f32(p, vx, *a);
            }
        }
        for (c, &a) in acc.iter().enumerate() {
            let value = if sum > 0.0 { a / sum } else { 0.0 };
            // SAFETY: an element of O's row (as many doubles as Q).
            unsafe { o.add(element(q_at, c)).write(value as f64) };
        }
        if lane == 0 {
            let value = if sum > 0.0 {
                (max + math::log2(sum) * core::f32::consts::LN_2) as f64
            } else {
                f64::NEG_INFINITY
            };
            // SAFETY: the row's log-sum-exp.
            unsafe { lse.add(row as usize).write(value) };
        }
        row += warps as u64;
    }
}
