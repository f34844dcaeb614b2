//! The host API's checks and the dispatcher's choices (no GPU).

use super::*;

fn shape(batch: u32, sq: u32, skv: u32, hq: u32, hkv: u32, d: u32) -> AttentionShape {
    AttentionShape {
        batch,
        seqlen_q: sq,
        seqlen_kv: skv,
        heads_q: hq,
        heads_kv: hkv,
        head_dim: d,
        causal: false,
        scale: None,
    }
}

#[test]
fn shapes_are_checked_with_errors_a_caller_can_match() {
    let k128 = AttentionKernel::best(ElementType::Bf16, 128).expect("built");
    let msg = |r: Result<(), AttentionError>| r.unwrap_err().to_string();
    let good = shape(2, 1000, 4097, 16, 4, 128);
    assert!(check_shape(k128, good).is_ok());
    let zero = shape(2, 0, 4097, 16, 4, 128);
    assert_eq!(
        msg(check_shape(k128, zero)),
        "seqlen_q must be at least 1 (got 0)"
    );
    let gqa = shape(1, 64, 64, 6, 4, 128);
    assert!(matches!(check_shape(k128, gqa), Err(KernelError::Shape(_))));
    let d96 = shape(1, 64, 64, 4, 4, 96);
    assert!(matches!(
        check_shape(k128, d96),
        Err(KernelError::Unsupported(_))
    ));
    let big = shape(1 << 31, 1, 1, 1, 1, 128);
    assert!(msg(check_shape(k128, big)).contains("below 2^31"));
    let negative = AttentionShape {
        scale: Some(-1.0),
        ..good
    };
    assert!(msg(check_shape(k128, negative)).contains("scale"));
    let tiles = shape(1 << 20, 1 << 20, 1, 1 << 10, 1, 128);
    assert!(msg(check_shape(k128, tiles)).contains("tiles"));
    // Every error displays as one line.
    for err in [zero, gqa, d96, big, negative, tiles].map(|s| msg(check_shape(k128, s))) {
        assert!(!err.contains('\n'), "{err}");
    }
}

#[test]
fn every_head_dimension_has_a_kernel_with_every_technique_that_fits() {
    for e in [ElementType::Bf16, ElementType::F16] {
        for d in [64, 128, 256] {
            let k = AttentionKernel::best(e, d).expect("built");
            assert_eq!(k.geometry.head_dim, d);
            assert!(k.geometry.shared().bytes <= super::super::MAX_SHARED_BYTES);
        }
    }
    for k in ATTENTION_KERNELS {
        let g = k.geometry;
        assert!(
            g.shared().bytes <= super::super::MAX_SHARED_BYTES,
            "{}",
            k.name
        );
        assert!(g.block_n.is_multiple_of(64) && g.head_dim.is_multiple_of(64));
        assert!(k.techniques.pingpong <= (g.consumers >= 2), "{}", k.name);
    }
}

#[test]
fn the_dispatcher_takes_the_shorter_tile_where_it_measured_faster() {
    for e in [ElementType::Bf16, ElementType::F16] {
        let consumers = |seqlen_q: u32, causal: bool, d: u32| {
            let s = AttentionShape {
                causal,
                ..shape(1, seqlen_q, 4096, 32, 32, d)
            };
            let k = AttentionKernel::for_shape(e, &s).expect("built");
            assert_eq!((k.element, k.geometry.head_dim), (e, d), "{}", k.name);
            let one = k.geometry.consumers == 1;
            assert!(
                k.techniques.pingpong != one && k.techniques.overlap,
                "{}",
                k.name
            );
            k.geometry.consumers
        };
        assert_eq!(consumers(4096, false, 64), 3);
        assert_eq!(consumers(512, false, 64), 3);
        assert_eq!(consumers(4096, true, 64), 3);
        assert_eq!(consumers(2048, true, 64), 2);
        assert_eq!(consumers(512, true, 64), 2);
        assert_eq!(consumers(17, false, 64), 2);
        for d in [128, 256] {
            for (seqlen_q, causal) in [(65, false), (512, true), (4096, false)] {
                assert_eq!(consumers(seqlen_q, causal, d), 2);
            }
        }
        // Decode (at most 64 query rows): one consumer where one is built (BF16, d =
        // 128), else the shorter of the others.
        let one = if e == ElementType::Bf16 { 1 } else { 2 };
        for (seqlen_q, causal) in [(1, false), (16, true), (64, false)] {
            assert_eq!(consumers(seqlen_q, causal, 128), one);
            assert_eq!(consumers(seqlen_q, causal, 256), 2);
            assert_eq!(consumers(seqlen_q, causal, 64), 2);
        }
    }
}

#[test]
fn the_flop_count_is_the_pairs_the_mask_keeps() {
    // Counted one (query, key) pair at a time from the mask's definition.
    let counted = |s: &AttentionShape| {
        let mut pairs = 0u64;
        for i in 0..s.seqlen_q as i64 {
            for j in 0..s.seqlen_kv as i64 {
                let kept = !s.causal || j <= i + s.seqlen_kv as i64 - s.seqlen_q as i64;
                pairs += u64::from(kept);
            }
        }
        // Two multiplies of 2 d FLOP per pair, for every batch and query head.
        (pairs * 2 * 2 * s.head_dim as u64 * s.batch as u64 * s.heads_q as u64) as f64
    };
    for (b, sq, skv, hq, hkv) in [
        (1, 1, 1, 1, 1),
        (2, 17, 17, 4, 2),
        (1, 1, 300, 8, 1),
        (3, 5, 129, 2, 2),
        (1, 129, 5, 2, 1),
        (2, 256, 256, 3, 3),
        (1, 64, 1000, 4, 4),
    ] {
        for causal in [false, true] {
            for d in [64, 128, 256] {
                let s = AttentionShape {
                    causal,
                    ..shape(b, sq, skv, hq, hkv, d)
                };
                assert_eq!(s.flops(), counted(&s), "{s:?}");
            }
        }
    }
    // Without a mask: 4 B H Sq Skv d, FlashAttention's count.
    let s = shape(4, 4096, 4096, 16, 16, 128);
    assert_eq!(s.flops(), 4.0 * 4.0 * 16.0 * 4096.0 * 4096.0 * 128.0);
    assert_eq!(s.softmax_scale(), 1.0 / 128f32.sqrt());
    assert_eq!(
        s.args().scale_log2,
        s.softmax_scale() * std::f32::consts::LOG2_E
    );
}

#[test]
fn every_decode_kernel_fits_and_takes_64_row_tiles_of_tensor_copies() {
    use super::super::{ATTENTION_DECODE_KERNELS, MAX_SHARED_BYTES};
    for e in [ElementType::Bf16, ElementType::F16] {
        for d in [64, 128, 256] {
            let k = AttentionKernel::decode(e, d).expect("built");
            let g = k.geometry;
            assert_eq!(
                (k.element, g.head_dim, g.block_m()),
                (e, d, 64),
                "{}",
                k.name
            );
            assert!(g.shared().bytes <= MAX_SHARED_BYTES, "{}", k.name);
            // Packed boxes need tensor copies; one consumer has no turns to take.
            assert_eq!(k.techniques.loads, LoadKind::Tma, "{}", k.name);
            assert!(!k.techniques.pingpong && k.techniques.overlap, "{}", k.name);
            // The packed Q and O boxes hold the tile's 64 rows for every packing.
            for pack in [1, 2, 4, 8, 16, 32, 64] {
                let [_, heads, rows, _] = g.q_box(pack);
                assert_eq!(heads * rows, g.block_m());
                let [_, heads, rows, _] = g.o_box(pack);
                assert_eq!(heads * rows, 64);
            }
        }
    }
    assert_eq!(ATTENTION_DECODE_KERNELS.len(), 6);
    // The prefill dispatcher never takes a decode kernel (not yet run on a GPU).
    for k in ATTENTION_DECODE_KERNELS {
        assert!(ATTENTION_KERNELS.iter().all(|p| p.name != k.name));
    }
}
