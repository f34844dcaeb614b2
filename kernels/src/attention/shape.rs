//! The size of one attention problem ([`AttentionShape`]), shared by the host API and the
//! layout checks.

use super::AttentionArgs;

/// One attention problem: Q `(batch, seqlen_q, heads_q, head_dim)`, K and V `(batch,
/// seqlen_kv, heads_kv, head_dim)`, O like Q, all row-major and packed; the log-sum-exp
/// `(batch, heads_q, seqlen_q)` FP32.
///
/// ```
/// use gpu_kernels::attention::AttentionShape;
/// // One decode-sized problem: 8 query rows against 4096 keys, grouped-query 32:8.
/// let shape = AttentionShape {
///     batch: 4, seqlen_q: 8, seqlen_kv: 4096, heads_q: 32, heads_kv: 8, head_dim: 128,
///     causal: true, scale: None,
/// };
/// assert_eq!(shape.q_elements(), 4 * 8 * 32 * 128);
/// assert_eq!(shape.kv_elements(), 4 * 4096 * 8 * 128);
/// assert_eq!(shape.lse_elements(), 4 * 32 * 8);
/// assert_eq!(shape.softmax_scale(), 1.0 / 128f32.sqrt());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionShape {
    /// Sequences.
    pub batch: u32,
    /// Query rows per sequence.
    pub seqlen_q: u32,
    /// Key and value rows per sequence.
    pub seqlen_kv: u32,
    /// Query and output heads.
    pub heads_q: u32,
    /// Key and value heads: `heads_q` a multiple of it (grouped-query; 1: multi-query).
    pub heads_kv: u32,
    /// 64, 128 or 256.
    pub head_dim: u32,
    /// Causal mask, aligned to the bottom right: query `i` sees keys `j <= i + seqlen_kv -
    /// seqlen_q` (FlashAttention's convention); a query that sees none gets O = 0 and a
    /// log-sum-exp of `-inf`.
    pub causal: bool,
    /// The softmax scale; `None`: `1 / sqrt(head_dim)`.
    pub scale: Option<f32>,
}

impl AttentionShape {
    /// Elements of Q (and O).
    pub fn q_elements(&self) -> u64 {
        self.batch as u64 * self.seqlen_q as u64 * self.heads_q as u64 * self.head_dim as u64
    }

    /// Elements of K (and of V).
    pub fn kv_elements(&self) -> u64 {
        self.batch as u64 * self.seqlen_kv as u64 * self.heads_kv as u64 * self.head_dim as u64
    }

    /// Floats of the log-sum-exp.
    pub fn lse_elements(&self) -> u64 {
        self.batch as u64 * self.heads_q as u64 * self.seqlen_q as u64
    }

    /// The softmax scale.
    pub fn softmax_scale(&self) -> f32 {
        self.scale
            .unwrap_or_else(|| 1.0 / (self.head_dim as f32).sqrt())
    }

    /// The FLOP of the forward pass: two multiplies (`S = Q K^T`, `O = P V`), `2 d` each per
    /// (query, key) pair the mask leaves, over every batch and query head. Without a mask
    /// that is `4 batch heads_q seqlen_q seqlen_kv d`; with the causal mask (bottom right,
    /// query `i` sees keys `j <= i + seqlen_kv - seqlen_q`) it counts the pairs kept.
    /// FlashAttention's benchmarks halve the full count instead: `(S + 1) / S` less for
    /// square problems (0.2% at 512), and half of the work for one query row against many
    /// keys, where nothing is masked but the row's own future (none).
    pub fn flops(&self) -> f64 {
        let (sq, skv) = (self.seqlen_q as f64, self.seqlen_kv as f64);
        let pairs = if self.causal {
            // Row i keeps i + skv - sq + 1 keys when positive: the row counts run up to skv
            // (the last row), one less each row above, none below 1.
            let lowest = (skv - sq + 1.0).max(1.0);
            (skv + lowest) * (skv - lowest + 1.0) / 2.0
        } else {
            sq * skv
        };
        4.0 * self.batch as f64 * self.heads_q as f64 * pairs * self.head_dim as f64
    }

    /// The kernels' view of it.
    pub fn args(&self) -> AttentionArgs {
        AttentionArgs {
            batch: self.batch,
            seqlen_q: self.seqlen_q,
            seqlen_kv: self.seqlen_kv,
            heads_q: self.heads_q,
            heads_kv: self.heads_kv,
            causal: u32::from(self.causal),
            scale_log2: self.softmax_scale() * std::f32::consts::LOG2_E,
        }
    }
}
