//! How a decode kernel walks one shape ([`WalkPlan`]): the query heads it packs per tile and
//! the parts it splits each tile's keys into, chosen by one rule from the shape and the SM
//! count ([`WalkPlan::for_shape`]).

use super::{AttentionGeometry, AttentionShape, DecodeWalk};
use crate::KernelError;
use crate::scratch::SCRATCH_ALIGN;

/// The most parts one tile's keys are split into (FlashAttention-3 stops at 128 too).
pub const MAX_SPLITS: u32 = 128;

/// The fewest blocks of keys the rule gives a part: a part pays once for its tile's Q, the
/// pipeline's fill and its FP32 part of O; with two blocks each it still streams more than
/// it writes (at `d = 128`: 64 KiB of K and V per block against at most 32 KiB of part).
pub const MIN_BLOCKS_PER_SPLIT: u32 = 2;

/// The walk of a decode kernel ([`super::ATTENTION_DECODE_KERNELS`]) over one shape: query
/// heads packed per tile and parts per tile's keys ([`DecodeWalk`] without the addresses).
///
/// ```
/// use gpu_kernels::attention::{ATTENTION_DECODE_KERNELS, AttentionShape, WalkPlan};
/// let g = ATTENTION_DECODE_KERNELS[1].geometry; // BF16, d = 128
/// // One sequence decoding against 8192 keys, 32 query heads on 8 KV heads, 132 SMs: the
/// // 4 query heads of a KV head in one tile (8 tiles), each tile's 64 blocks of keys split
/// // in 16 parts (128 blocks of 132 busy).
/// let shape = AttentionShape {
///     batch: 1, seqlen_q: 1, seqlen_kv: 8192, heads_q: 32, heads_kv: 8, head_dim: 128,
///     causal: true, scale: None,
/// };
/// let plan = WalkPlan::for_shape(g, &shape, 132);
/// assert_eq!(plan, WalkPlan { pack_gqa: 4, splits: 16 });
/// assert_eq!(plan.tiles(g, &shape), 128);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WalkPlan {
    /// Query heads per tile ([`DecodeWalk::pack_gqa`]).
    pub pack_gqa: u32,
    /// Parts per tile's keys ([`DecodeWalk::splits`]).
    pub splits: u32,
}

impl WalkPlan {
    /// No packing, no split.
    pub const NONE: WalkPlan = WalkPlan {
        pack_gqa: 1,
        splits: 1,
    };

    /// The rule, for a decode kernel of geometry `g` on `multiprocessors` SMs:
    ///
    /// 1. **Pack** the query heads that share a KV head: `pack_gqa = gcd(heads_q / heads_kv,
    ///    64)` (all of a group's heads where they divide a 64-row tile, which Q's and O's
    ///    boxes need), so a tile reads its KV head's keys once for all of them instead of
    ///    once per query head, and fills `seqlen_q * pack_gqa` of its 64 rows instead of
    ///    `seqlen_q`.
    /// 2. **Split** the keys where the tiles leave SMs idle: with `tiles = m_blocks(seqlen_q *
    ///    pack_gqa) * heads_q / pack_gqa * batch`, no split if `tiles >= multiprocessors`
    ///    (every SM has a tile; a split would only add the combine's traffic); else
    ///    `splits = multiprocessors / tiles` (one wave of blocks: a part more would leave the
    ///    last wave mostly empty), but at most `blocks / MIN_BLOCKS_PER_SPLIT` for the
    ///    `blocks = ceil(seqlen_kv / block_n)` of the longest sequence (`seqlen_kv`: a
    ///    cache's capacity, its lengths being on the device), at most [`MAX_SPLITS`], at
    ///    least 1.
    pub fn for_shape(
        g: AttentionGeometry,
        shape: &AttentionShape,
        multiprocessors: u32,
    ) -> WalkPlan {
        let group = shape.heads_q / shape.heads_kv.max(1);
        let mut pack_gqa = gcd(group.max(1), super::ROWS_PER_CONSUMER);
        if u64::from(shape.seqlen_q) * u64::from(pack_gqa) > i32::MAX as u64 {
            // Packed rows past 2^31 (refused by the check): rows enough to fill the SMs anyway.
            pack_gqa = 1;
        }
        let unsplit = WalkPlan {
            pack_gqa,
            splits: 1,
        };
        let tiles = unsplit.tiles(g, shape);
        let sms = u64::from(multiprocessors.max(1));
        if tiles >= sms {
            return unsplit;
        }
        let blocks = shape.seqlen_kv.div_ceil(g.block_n);
        let splits = (sms / tiles)
            .min(u64::from(blocks / MIN_BLOCKS_PER_SPLIT))
            .min(u64::from(MAX_SPLITS))
            .max(1) as u32;
        WalkPlan { pack_gqa, splits }
    }

    /// The tiles of the walk (every split's): what the grid walks.
    pub fn tiles(self, g: AttentionGeometry, shape: &AttentionShape) -> u64 {
        g.tiles(&shape.args(), &self.walk(0, 0))
    }

    /// The kernels' parameter: this plan, the parts at `o_partial` and `lse_partial`.
    pub fn walk(self, o_partial: u64, lse_partial: u64) -> DecodeWalk {
        DecodeWalk {
            pack_gqa: self.pack_gqa,
            splits: self.splits,
            o_partial,
            lse_partial,
        }
    }

    /// Bytes of the split parts (O's, then the log-sum-exps 256-byte aligned after them): `(o_offset, lse_offset, total)`, all 0 without a split.
    pub fn parts_bytes(self, shape: &AttentionShape) -> (u64, u64, u64) {
        if self.splits <= 1 {
            return (0, 0, 0);
        }
        let rows = u64::from(self.splits) * shape.lse_elements();
        let lse_offset = (rows * u64::from(shape.head_dim) * 4).next_multiple_of(SCRATCH_ALIGN);
        (0, lse_offset, lse_offset + rows * 4)
    }

    /// The checks of a launch with this plan: `pack_gqa` at least 1 and a divisor of both
    /// `heads_q / heads_kv` and 64; `splits` in `1..=MAX_SPLITS`; the packed query rows per
    /// sequence, the walk's tiles and the query rows of a split pass below 2^31. (The shape's own checks come first: [`super::check_shape`].)
    pub fn check(self, g: AttentionGeometry, shape: &AttentionShape) -> Result<(), KernelError> {
        let bad = |why: String| Err(KernelError::Shape(why));
        let group = shape.heads_q / shape.heads_kv.max(1);
        let pack = self.pack_gqa;
        if pack == 0
            || !group.is_multiple_of(pack)
            || !super::ROWS_PER_CONSUMER.is_multiple_of(pack)
        {
            return bad(format!(
                "pack_gqa = {pack} must divide both heads_q / heads_kv = {group} and 64"
            ));
        }
        // The walk counts packed rows in 32 bits (host and device alike).
        let packed_rows = u64::from(shape.seqlen_q) * u64::from(pack);
        if packed_rows > i32::MAX as u64 {
            return bad(format!(
                "{packed_rows} packed query rows (seqlen_q x pack_gqa): at most 2^31 - 1"
            ));
        }
        if !(1..=MAX_SPLITS).contains(&self.splits) {
            return bad(format!(
                "splits = {} must be in 1..={MAX_SPLITS}",
                self.splits
            ));
        }
        let tiles = self.tiles(g, shape);
        if tiles > i32::MAX as u64 {
            return bad(format!("{tiles} tiles of the walk: at most 2^31 - 1"));
        }
        // The combine kernel counts query rows in 32 bits.
        let rows = shape.lse_elements();
        if self.splits > 1 && rows > i32::MAX as u64 {
            return bad(format!(
                "{rows} query rows split: at most 2^31 - 1 (split fewer or none)"
            ));
        }
        Ok(())
    }
}

/// The greatest common divisor (Euclid's).
fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::ATTENTION_DECODE_KERNELS;

    fn decode(batch: u32, seqlen_q: u32, seqlen_kv: u32, heads: (u32, u32)) -> AttentionShape {
        AttentionShape {
            batch,
            seqlen_q,
            seqlen_kv,
            heads_q: heads.0,
            heads_kv: heads.1,
            head_dim: 128,
            causal: true,
            scale: None,
        }
    }

    fn d128() -> AttentionGeometry {
        ATTENTION_DECODE_KERNELS
            .iter()
            .find(|k| k.geometry.head_dim == 128)
            .expect("built")
            .geometry
    }

    #[test]
    fn the_rule_packs_each_kv_heads_query_heads() {
        let g = d128();
        for (heads, pack) in [
            ((32, 8), 4),
            ((32, 32), 1),
            ((64, 8), 8),
            ((48, 8), 2), // 6 per group: 2 divides both 6 and 64
            ((128, 1), 64),
            ((256, 2), 64), // 128 per group: at most a tile's 64 rows
            ((28, 4), 1),   // 7 per group
        ] {
            let plan = WalkPlan::for_shape(g, &decode(64, 1, 4096, heads), 132);
            assert_eq!(plan.pack_gqa, pack, "{heads:?}");
            assert!(plan.check(g, &decode(64, 1, 4096, heads)).is_ok());
        }
    }

    #[test]
    fn the_rule_splits_keys_only_where_sms_are_idle() {
        let g = d128();
        let plan = |batch, seqlen_q, seqlen_kv| {
            WalkPlan::for_shape(g, &decode(batch, seqlen_q, seqlen_kv, (32, 8)), 132)
        };
        // Batch 1: 8 tiles, 16 parts of the 64 blocks of 8192 keys (128 blocks of 132).
        assert_eq!(plan(1, 1, 8192).splits, 16);
        // Batch 4: 32 tiles, 4 parts (128 blocks); batch 16: 128 tiles, none.
        assert_eq!(plan(4, 1, 8192).splits, 4);
        assert_eq!(plan(16, 1, 8192).splits, 1);
        assert_eq!(plan(64, 1, 131072).splits, 1);
        // Short caches: no part under two blocks of keys.
        assert_eq!(plan(1, 1, 1024).splits, 4);
        assert_eq!(plan(1, 1, 256).splits, 1);
        assert_eq!(plan(1, 1, 100).splits, 1);
        // 16 query rows packed 4 heads: 64 rows, one tile per KV head still.
        assert_eq!(
            plan(1, 16, 8192),
            WalkPlan {
                pack_gqa: 4,
                splits: 16
            }
        );
        // 17 rows: two tiles per KV head, 8 parts each.
        assert_eq!(plan(1, 17, 8192).splits, 8);
        // Never more than MAX_SPLITS, however many SMs.
        let many = WalkPlan::for_shape(g, &decode(1, 1, 1 << 20, (1, 1)), 100_000);
        assert_eq!(many.splits, MAX_SPLITS);
        // Whatever the shape, the walk fills at most one wave where it splits.
        for batch in [1, 2, 3, 5, 8, 13] {
            for seqlen_kv in [1, 128, 1000, 8192, 32768, 131072] {
                for heads in [(32, 8), (32, 32), (8, 1), (64, 8)] {
                    for sms in [1, 78, 114, 132] {
                        let shape = decode(batch, 1, seqlen_kv, heads);
                        let p = WalkPlan::for_shape(g, &shape, sms);
                        assert!(p.check(g, &shape).is_ok(), "{shape:?} {p:?}");
                        if p.splits > 1 {
                            assert!(p.tiles(g, &shape) <= u64::from(sms), "{shape:?} {p:?}");
                            let blocks = seqlen_kv.div_ceil(g.block_n);
                            assert!(blocks / p.splits >= MIN_BLOCKS_PER_SPLIT, "{shape:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn plans_are_checked_against_the_shape() {
        let g = d128();
        let shape = decode(2, 1, 4096, (32, 8));
        let msg = |p: WalkPlan| p.check(g, &shape).unwrap_err().to_string();
        assert!(
            msg(WalkPlan {
                pack_gqa: 8,
                splits: 1
            })
            .contains("pack_gqa = 8")
        );
        assert!(
            msg(WalkPlan {
                pack_gqa: 0,
                splits: 1
            })
            .contains("pack_gqa = 0")
        );
        assert!(
            msg(WalkPlan {
                pack_gqa: 3,
                splits: 1
            })
            .contains("divide")
        );
        assert!(
            msg(WalkPlan {
                pack_gqa: 1,
                splits: 0
            })
            .contains("splits = 0")
        );
        assert!(
            msg(WalkPlan {
                pack_gqa: 1,
                splits: 129
            })
            .contains("1..=128")
        );
        // 2^26 query rows packed 64 heads: 2^32 packed rows, refused (they would wrap).
        let long = decode(1, 1 << 26, 64, (64, 1));
        let e = WalkPlan {
            pack_gqa: 64,
            splits: 1,
        }
        .check(g, &long)
        .unwrap_err();
        assert!(e.to_string().contains("packed query rows"), "{e}");
        assert!(WalkPlan::NONE.check(g, &long).is_ok());
        assert_eq!(WalkPlan::for_shape(g, &long, 132), WalkPlan::NONE);
        let huge = decode(1 << 24, 64, 64, (1 << 10, 1 << 10));
        let e = WalkPlan {
            pack_gqa: 1,
            splits: 2,
        }
        .check(g, &huge)
        .unwrap_err();
        assert!(
            matches!(e, KernelError::Shape(ref s) if s.contains("tiles")),
            "{e}"
        );
    }

    #[test]
    fn the_parts_hold_every_split_row() {
        let shape = decode(3, 2, 4096, (32, 8));
        assert_eq!(WalkPlan::NONE.parts_bytes(&shape), (0, 0, 0));
        let (o, lse, total) = WalkPlan {
            pack_gqa: 4,
            splits: 5,
        }
        .parts_bytes(&shape);
        let rows = 5 * 3 * 2 * 32;
        assert_eq!(o, 0);
        assert!(lse >= rows * 128 * 4 && lse.is_multiple_of(SCRATCH_ALIGN));
        assert_eq!(total, lse + rows * 4);
    }
}
