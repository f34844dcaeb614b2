//! Where attention's tensors lie in their buffers: [`RowStrides`] per tensor (FlashAttention's
//! convention — a stride per sequence, per token and per head, the head's `d` elements
//! contiguous), so that a fused QKV projection `(B, S, 3, H, D)` and a preallocated cache
//! `(B, max_len, H, D)` are read in place, and O written into a wider buffer.

use super::shape::AttentionShape;
use crate::error::{KernelError, check_len};

/// The strides, in elements, of one `(batch, seqlen, heads, head_dim)` tensor: from one
/// sequence, token and head to the next. The `head_dim` elements of a row are contiguous.
/// Tensor copies need each stride a multiple of 8 elements (16 bytes) and the tensor's first
/// element on 16 bytes.
///
/// ```
/// use gpu_kernels::attention::RowStrides;
/// // Q of a fused QKV projection (B, S, 3, H, D) with H = 16, D = 128, S = 1000: K starts
/// // H * D elements further, V 2 H D; each steps 3 H D per token.
/// let q = RowStrides::packed(1000, 3 * 16, 128);
/// assert_eq!(q, RowStrides { batch: 1000 * 3 * 16 * 128, token: 3 * 16 * 128, head: 128 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowStrides {
    /// From one sequence to the next.
    pub batch: u64,
    /// From one token (row) to the next.
    pub token: u64,
    /// From one head to the next.
    pub head: u64,
}

impl RowStrides {
    /// A packed `(batch, seqlen, heads, head_dim)` tensor.
    pub const fn packed(seqlen: u32, heads: u32, head_dim: u32) -> RowStrides {
        let head = head_dim as u64;
        let token = heads as u64 * head;
        RowStrides {
            batch: seqlen as u64 * token,
            token,
            head,
        }
    }

    /// The elements a tensor of `[batch, seqlen, heads]` rows of `head_dim` reaches from its
    /// first: one past its last element.
    pub fn span(&self, [batch, seqlen, heads]: [u32; 3], head_dim: u32) -> u64 {
        let last = |n: u32, stride: u64| (n as u64).saturating_sub(1).saturating_mul(stride);
        last(batch, self.batch)
            .saturating_add(last(seqlen, self.token))
            .saturating_add(last(heads, self.head))
            .saturating_add(head_dim as u64)
    }

    /// The byte strides of the tensor map's dimensions 1-3 (heads, tokens, sequences).
    pub(crate) fn bytes(&self, element_bytes: u64) -> [u64; 3] {
        [self.head, self.token, self.batch].map(|s| s.saturating_mul(element_bytes))
    }
}

/// The strides of attention's Q, K, V and O.
///
/// ```
/// use gpu_kernels::attention::{AttentionLayout, AttentionShape, RowStrides};
/// // A KV cache of (2, 4096, 8, 128) holding 1000 tokens of each sequence so far.
/// let shape = AttentionShape {
///     batch: 2, seqlen_q: 1000, seqlen_kv: 1000, heads_q: 32, heads_kv: 8, head_dim: 128,
///     causal: true, scale: None,
/// };
/// let cache = RowStrides::packed(4096, 8, 128);
/// let layout = AttentionLayout { k: cache, v: cache, ..AttentionLayout::packed(&shape) };
/// assert_eq!(layout.k.batch, 4096 * 8 * 128);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttentionLayout {
    /// Q's strides.
    pub q: RowStrides,
    /// K's strides.
    pub k: RowStrides,
    /// V's strides.
    pub v: RowStrides,
    /// O's strides.
    pub o: RowStrides,
}

impl AttentionLayout {
    /// Every tensor packed: Q and O `(batch, seqlen_q, heads_q, d)`, K and V `(batch,
    /// seqlen_kv, heads_kv, d)`.
    pub const fn packed(shape: &AttentionShape) -> AttentionLayout {
        let q = RowStrides::packed(shape.seqlen_q, shape.heads_q, shape.head_dim);
        let kv = RowStrides::packed(shape.seqlen_kv, shape.heads_kv, shape.head_dim);
        AttentionLayout {
            q,
            k: kv,
            v: kv,
            o: q,
        }
    }

    /// Each tensor's name, strides, rows `[batch, seqlen, heads]` and whether the kernel
    /// writes it.
    pub(crate) fn tensors(
        &self,
        shape: &AttentionShape,
    ) -> [(&'static str, RowStrides, [u32; 3], bool); 4] {
        let q = [shape.batch, shape.seqlen_q, shape.heads_q];
        let kv = [shape.batch, shape.seqlen_kv, shape.heads_kv];
        [
            ("Q", self.q, q, false),
            ("K", self.k, kv, false),
            ("V", self.v, kv, false),
            ("O", self.o, q, true),
        ]
    }
}

/// The checks of the strides of `layout` for `shape` against the buffers' lengths `[q, k, v,
/// o]`: every stride a multiple of 8 elements and below 2^39 (tensor copies take 16-byte
/// strides below 2^40 bytes); each buffer long enough for every row its strides reach; O's
/// rows apart (no two of its `(sequence, token, head)` rows overlap, or the kernel's writes
/// would race).
pub(crate) fn check_layout(
    layout: &AttentionLayout,
    shape: &AttentionShape,
    lengths: [usize; 4],
) -> Result<(), KernelError> {
    let d = shape.head_dim;
    for ((name, strides, rows, written), have) in layout.tensors(shape).into_iter().zip(lengths) {
        let stride = |why: String| Err(KernelError::Stride { name, why });
        for (which, value, count) in [
            ("sequence", strides.batch, rows[0]),
            ("token", strides.token, rows[1]),
            ("head", strides.head, rows[2]),
        ] {
            // A dimension of one row never steps: its stride is not used.
            if count > 1 && (value == 0 || !value.is_multiple_of(8) || value >= 1 << 39) {
                return stride(format!(
                    "the {which} stride is {value} elements; tensor copies need a positive \
                     multiple of 8 (16 bytes) below 2^39"
                ));
            }
        }
        if written && overlaps(strides, rows, d) {
            return stride(format!(
                "rows overlap (strides {} per sequence, {} per token, {} per head for {} x {} \
                 x {} rows of {d}): the kernel's writes would race",
                strides.batch, strides.token, strides.head, rows[0], rows[1], rows[2]
            ));
        }
        check_len(name, have, strides.span(rows, d))?;
    }
    Ok(())
}

/// Whether two rows of `d` elements of a `rows` tensor with `strides` can overlap: sorted by
/// stride, each dimension's stride must clear everything the smaller ones span.
fn overlaps(strides: RowStrides, rows: [u32; 3], d: u32) -> bool {
    let mut dims = [
        (strides.batch, rows[0]),
        (strides.token, rows[1]),
        (strides.head, rows[2]),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 1)
    .collect::<Vec<_>>();
    dims.sort_unstable();
    let mut span = d as u64;
    for (stride, n) in dims {
        if stride < span {
            return true;
        }
        span = stride.saturating_mul(n as u64 - 1).saturating_add(span);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(batch: u32, sq: u32, skv: u32, hq: u32, hkv: u32) -> AttentionShape {
        AttentionShape {
            batch,
            seqlen_q: sq,
            seqlen_kv: skv,
            heads_q: hq,
            heads_kv: hkv,
            head_dim: 128,
            causal: false,
            scale: None,
        }
    }

    #[test]
    fn packed_layouts_span_exactly_their_tensors() {
        let s = shape(2, 100, 300, 16, 4);
        let layout = AttentionLayout::packed(&s);
        let q = s.q_elements() as usize;
        let kv = s.kv_elements() as usize;
        assert!(check_layout(&layout, &s, [q, kv, kv, q]).is_ok());
        let err = check_layout(&layout, &s, [q, kv - 1, kv, q]).unwrap_err();
        assert!(
            matches!(err, KernelError::BufferTooSmall { name: "K", .. }),
            "{err}"
        );
    }

    #[test]
    fn a_fused_qkv_and_a_cache_are_read_in_place() {
        // QKV (B, S, 3, H, D): each of Q, K, V steps 3 H D per token; V's buffer (a view from
        // 2 H D on) ends at the last row's end.
        let s = shape(2, 1000, 1000, 16, 16);
        let fused = RowStrides::packed(1000, 3 * 16, 128);
        let total = 2 * 1000 * 3 * 16 * 128;
        let layout = AttentionLayout {
            q: fused,
            k: fused,
            v: fused,
            ..AttentionLayout::packed(&s)
        };
        let v_view = total - 2 * 16 * 128;
        let o = s.q_elements() as usize;
        assert!(check_layout(&layout, &s, [total, total - 16 * 128, v_view, o]).is_ok());
        // A cache (B, max_len, H, D) holding seqlen_kv rows: its sequences max_len apart.
        let s = shape(4, 1, 1000, 32, 8);
        let cache = RowStrides::packed(4096, 8, 128);
        let layout = AttentionLayout {
            k: cache,
            v: cache,
            ..AttentionLayout::packed(&s)
        };
        let cache_len = 4 * 4096 * 8 * 128;
        let q = s.q_elements() as usize;
        assert!(check_layout(&layout, &s, [q, cache_len, cache_len, q]).is_ok());
        // The last sequence needs rows up to 3 * 4096 + 999: a cache one sequence short fails.
        let short = 3 * 4096 * 8 * 128;
        assert!(check_layout(&layout, &s, [q, short, short, q]).is_err());
    }

    #[test]
    fn strides_the_tensor_copies_cannot_take_and_overlapping_outputs_are_refused() {
        let s = shape(2, 64, 64, 8, 8);
        let big = usize::MAX;
        let mut layout = AttentionLayout::packed(&s);
        layout.q.head = 132; // 264 bytes: not a 16-byte multiple
        let err = check_layout(&layout, &s, [big; 4]).unwrap_err();
        assert!(
            matches!(err, KernelError::Stride { name: "Q", .. }),
            "{err}"
        );
        let mut layout = AttentionLayout::packed(&s);
        layout.o.token = 128; // heads of a token overlap the next token's
        let err = check_layout(&layout, &s, [big; 4]).unwrap_err();
        assert!(
            matches!(err, KernelError::Stride { name: "O", .. }),
            "{err}"
        );
        // Inputs may overlap (read only): every query head reading one K head is GQA's own case.
        let mut layout = AttentionLayout::packed(&s);
        layout.k.head = 0;
        assert!(
            check_layout(&layout, &s, [big; 4]).is_err(),
            "a zero stride cannot be copied"
        );
        // (B, H, S, D) output: heads outermost but one, rows apart.
        let mut layout = AttentionLayout::packed(&s);
        layout.o = RowStrides {
            batch: 8 * 64 * 128,
            token: 128,
            head: 64 * 128,
        };
        assert!(check_layout(&layout, &s, [big; 4]).is_ok());
    }
}
