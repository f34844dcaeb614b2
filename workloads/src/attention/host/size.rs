//! An attention problem's size on the command line: `BxSxHxD`, then `:kv=N`, `:hkv=N`,
//! `:causal` and `:ragged` in any order.

use gpu_kernels::attention::AttentionShape;
use std::fmt;
use std::str::FromStr;

/// What `--size` takes (`host list` prints it).
pub const SYNTAX: &str = "BxSxHxD (batch, seqlen, heads, head dim 64/128/256), then any of \
    :kv=N (key/value seqlen, default S), :hkv=N (key/value heads dividing H, default H), \
    :causal, :ragged (K and V as a KV cache of kv rows per sequence, sequence b holding \
    kv - b * (kv / B) of them: Attention::forward_cache); each size from 1 to 2^31 - 1 \
    (e.g. 4x4096x16x128:causal, 1x17x32x128:kv=4096:hkv=8, 4x1x32x128:kv=8192:hkv=8:ragged)";

/// One problem: batch, sequence lengths, heads, head dimension, mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionSize {
    /// Sequences.
    pub batch: u32,
    /// Query rows per sequence.
    pub seqlen_q: u32,
    /// Key rows per sequence.
    pub seqlen_kv: u32,
    /// Query heads.
    pub heads_q: u32,
    /// Key and value heads.
    pub heads_kv: u32,
    /// The head dimension.
    pub head_dim: u32,
    /// Causal mask (bottom-right aligned).
    pub causal: bool,
    /// K and V as a cache of `seqlen_kv` rows per sequence holding [`Self::kv_lengths`].
    pub ragged: bool,
}

impl AttentionSize {
    /// The host API's shape (the default scale `1 / sqrt(d)`).
    pub fn shape(self) -> AttentionShape {
        AttentionShape {
            batch: self.batch,
            seqlen_q: self.seqlen_q,
            seqlen_kv: self.seqlen_kv,
            heads_q: self.heads_q,
            heads_kv: self.heads_kv,
            head_dim: self.head_dim,
            causal: self.causal,
            scale: None,
        }
    }

    /// The keys of each sequence: `seqlen_kv` for every one, or with `ragged` `seqlen_kv - b
    /// (seqlen_kv / batch)` for sequence `b` (all of the cache down to about `1 / batch` of it).
    pub fn kv_lengths(self) -> Vec<i32> {
        let step = if self.ragged {
            self.seqlen_kv / self.batch
        } else {
            0
        };
        (0..self.batch)
            .map(|b| (self.seqlen_kv - b * step) as i32)
            .collect()
    }

    /// Multiply-adds times 2 of the problem: [`AttentionShape::flops`] over each sequence's
    /// own keys.
    pub fn flops(self) -> f64 {
        let shape = self.shape();
        self.kv_lengths()
            .iter()
            .map(|&n| {
                AttentionShape {
                    batch: 1,
                    seqlen_kv: n as u32,
                    ..shape
                }
                .flops()
            })
            .sum()
    }
}

impl fmt::Display for AttentionSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{}x{}",
            self.batch, self.seqlen_q, self.heads_q, self.head_dim
        )?;
        if self.seqlen_kv != self.seqlen_q {
            write!(f, ":kv={}", self.seqlen_kv)?;
        }
        if self.heads_kv != self.heads_q {
            write!(f, ":hkv={}", self.heads_kv)?;
        }
        if self.causal {
            f.write_str(":causal")?;
        }
        if self.ragged {
            f.write_str(":ragged")?;
        }
        Ok(())
    }
}

impl FromStr for AttentionSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut parts = text.split(':');
        let dims = parts.next().unwrap_or_default();
        let number = |what: &str, s: &str| -> Result<u32, String> {
            let n: u32 = s
                .trim()
                .parse()
                .map_err(|_| format!("`{s}` is not a number for {what} in `{text}`"))?;
            if n == 0 || n > i32::MAX as u32 {
                return Err(format!("{what} = {n} in `{text}`: from 1 to 2^31 - 1"));
            }
            Ok(n)
        };
        let fields: Vec<&str> = dims.split('x').collect();
        let [b, s, h, d] = fields[..] else {
            return Err(format!("`{dims}` is not BxSxHxD"));
        };
        let mut size = AttentionSize {
            batch: number("batch", b)?,
            seqlen_q: number("seqlen", s)?,
            seqlen_kv: 0,
            heads_q: number("heads", h)?,
            heads_kv: 0,
            head_dim: number("the head dimension", d)?,
            causal: false,
            ragged: false,
        };
        size.seqlen_kv = size.seqlen_q;
        size.heads_kv = size.heads_q;
        for part in parts {
            match part.split_once('=') {
                Some(("kv", n)) => size.seqlen_kv = number("kv", n)?,
                Some(("hkv", n)) => size.heads_kv = number("hkv", n)?,
                None if part == "causal" => size.causal = true,
                None if part == "ragged" => size.ragged = true,
                _ => {
                    return Err(format!(
                        "`{part}` in `{text}`: expected kv=N, hkv=N, causal or ragged"
                    ));
                }
            }
        }
        if ![64, 128, 256].contains(&size.head_dim) {
            return Err(format!(
                "head dimension {} in `{text}`: the kernels take 64, 128 or 256",
                size.head_dim
            ));
        }
        if !size.heads_q.is_multiple_of(size.heads_kv) {
            return Err(format!(
                "{} query heads in `{text}` are not a multiple of {} key/value heads",
                size.heads_q, size.heads_kv
            ));
        }
        let elements = [
            size.seqlen_q.max(size.seqlen_kv),
            size.heads_q,
            size.head_dim,
        ]
        .iter()
        .fold(size.batch as u64, |n, &x| n.saturating_mul(x as u64));
        if elements >= 1 << 40 {
            return Err(format!("`{text}` has more than 2^40 elements per tensor"));
        }
        Ok(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_print_and_refuse_with_clear_errors() {
        let s: AttentionSize = "1x17x32x128:kv=4096:hkv=8:causal".parse().unwrap();
        assert_eq!(
            (
                s.batch,
                s.seqlen_q,
                s.seqlen_kv,
                s.heads_q,
                s.heads_kv,
                s.head_dim,
                s.causal
            ),
            (1, 17, 4096, 32, 8, 128, true)
        );
        assert_eq!(s.to_string(), "1x17x32x128:kv=4096:hkv=8:causal");
        let cache: AttentionSize = "4x1x32x128:kv=8192:hkv=8:ragged".parse().unwrap();
        assert_eq!(cache.kv_lengths(), [8192, 6144, 4096, 2048]);
        assert_eq!(cache.to_string(), "4x1x32x128:kv=8192:hkv=8:ragged");
        // 4 x 32 heads x 128 x (8192 + 6144 + 4096 + 2048) keys.
        assert_eq!(cache.flops(), 4.0 * 32.0 * 128.0 * 20480.0);
        let plain: AttentionSize = "4x4096x16x64".parse().unwrap();
        assert_eq!(plain.kv_lengths(), [4096; 4]);
        assert_eq!(plain.to_string(), "4x4096x16x64");
        let err = |t: &str| t.parse::<AttentionSize>().unwrap_err();
        assert!(err("4x4096x16x96").contains("64, 128 or 256"));
        assert!(err("4x4096x6x128:hkv=4").contains("not a multiple"));
        assert!(err("4x0x16x128").contains("from 1"));
        assert!(err("4x4096x16").contains("BxSxHxD"));
        assert!(err("4x4096x16x128:window=3").contains("expected kv=N"));
        assert!(err("4xfourx16x128").contains("not a number for seqlen"));
        assert!(err("1x2147483647x2147483647x256").contains("more than 2^40"));
    }
}
