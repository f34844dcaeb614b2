//! What the GPU tests share: inputs, strided views and the attention reference on the CPU
//! (f64), and the comparison of a result with it.

#![allow(dead_code)] // each test binary uses its part

use gpu_kernels::attention::{AttentionShape, RowStrides};
use half::bf16;

/// Values in [-1, 1), different per `salt`, rounded to BF16.
pub fn values(n: usize, salt: u64) -> Vec<bf16> {
    (0..n as u64)
        .map(|i| {
            let x = (i ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
            bf16::from_f32((x % 2048) as f32 / 1024.0 - 1.0)
        })
        .collect()
}

/// One tensor `(batch, seqlen, heads, d)` read from `data` at `offset` with `strides`.
pub struct View<'a> {
    pub data: &'a [bf16],
    pub offset: usize,
    pub strides: RowStrides,
}

impl View<'_> {
    pub fn at(&self, b: u32, t: u32, h: u32, e: u32) -> f64 {
        let s = self.strides;
        let i = self.offset as u64 + b as u64 * s.batch + t as u64 * s.token + h as u64 * s.head;
        self.data[(i + e as u64) as usize].to_f64()
    }
}

/// The attention forward pass on the CPU in f64: O `(batch, seqlen_q, heads_q, d)` packed,
/// and the log-sum-exp `(batch, heads_q, seqlen_q)`.
pub fn reference(shape: &AttentionShape, q: &View, k: &View, v: &View) -> (Vec<f64>, Vec<f64>) {
    let lengths = vec![shape.seqlen_kv as i32; shape.batch as usize];
    reference_with_lengths(shape, q, k, v, &lengths)
}

/// [`reference`] with sequence `b` attending to the first `lengths[b]` keys (clamped to
/// `0..=seqlen_kv`), causal aligned to that end: `Attention::forward_cache`'s contract.
pub fn reference_with_lengths(
    shape: &AttentionShape,
    q: &View,
    k: &View,
    v: &View,
    lengths: &[i32],
) -> (Vec<f64>, Vec<f64>) {
    let (sq, d) = (shape.seqlen_q, shape.head_dim);
    let group = shape.heads_q / shape.heads_kv;
    let scale = shape.softmax_scale() as f64;
    let mut o = vec![0.0; shape.q_elements() as usize];
    let mut lse = vec![f64::NEG_INFINITY; shape.lse_elements() as usize];
    for b in 0..shape.batch {
        let skv = lengths[b as usize].clamp(0, shape.seqlen_kv as i32) as u32;
        for h in 0..shape.heads_q {
            for i in 0..sq {
                let seen = |j: u32| !shape.causal || j as i64 <= i as i64 + skv as i64 - sq as i64;
                let scores: Vec<(u32, f64)> = (0..skv)
                    .filter(|&j| seen(j))
                    .map(|j| {
                        let dot: f64 = (0..d)
                            .map(|e| q.at(b, i, h, e) * k.at(b, j, h / group, e))
                            .sum();
                        (j, dot * scale)
                    })
                    .collect();
                let row = ((b * sq + i) * shape.heads_q + h) as usize * d as usize;
                if scores.is_empty() {
                    continue;
                }
                let max = scores.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|s| (s.1 - max).exp()).sum();
                lse[((b * shape.heads_q + h) * sq + i) as usize] = max + sum.ln();
                for e in 0..d {
                    o[row + e as usize] = scores
                        .iter()
                        .map(|&(j, s)| (s - max).exp() / sum * v.at(b, j, h / group, e))
                        .sum();
                }
            }
        }
    }
    (o, lse)
}

/// Compares O (read from `got` at `strides`) and the log-sum-exp with the reference.
pub fn check(
    shape: &AttentionShape,
    got: &[bf16],
    strides: RowStrides,
    lse: &[f32],
    want: &(Vec<f64>, Vec<f64>),
) {
    let o = View {
        data: got,
        offset: 0,
        strides,
    };
    let d = shape.head_dim;
    let mut worst = 0f64;
    for b in 0..shape.batch {
        for i in 0..shape.seqlen_q {
            for h in 0..shape.heads_q {
                let row = ((b * shape.seqlen_q + i) * shape.heads_q + h) as usize * d as usize;
                for e in 0..d {
                    let err = (o.at(b, i, h, e) - want.0[row + e as usize]).abs();
                    worst = worst.max(err);
                }
            }
        }
    }
    // BF16 O: 8 bits of mantissa, values below 1.
    assert!(worst < 1.0 / 64.0, "O off by {worst} ({shape:?})");
    for (i, (&got, &want)) in lse.iter().zip(&want.1).enumerate() {
        // A row that saw no key: -inf.
        let close = (got as f64 == want) || (got as f64 - want).abs() < 1e-3 * want.abs().max(1.0);
        assert!(close, "LSE[{i}] = {got}, expected {want} ({shape:?})");
    }
}
