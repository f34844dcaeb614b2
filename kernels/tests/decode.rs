//! The decode kernels ([`ATTENTION_DECODE_KERNELS`]) on a GPU: query heads packed per tile and
//! keys split over blocks, merged by the combine kernel, against the CPU reference in f64 on
//! ragged KV caches (lengths 0, 1, partial blocks, the whole cache), for the rule's plan and
//! for plans forced to every corner (no packing, no split, odd splits, more parts than blocks).
//! CI has no GPU: run with `cargo test --release -p gpu-kernels --test decode --
//! --include-ignored`.

use gpu_kernels::ElementType;
use gpu_kernels::attention::{
    ATTENTION_DECODE_KERNELS, Attention, AttentionKernel, AttentionLayout, AttentionShape, WalkPlan,
};
use gpu_kernels::{KernelError, MODULES};
use gpu_runtime::Gpu;
use half::bf16;

mod common;
use common::{View, check, reference_with_lengths, values};

/// Inputs of one shape against caches of `shape.seqlen_kv` rows with `lengths`, and the
/// reference's O and log-sum-exp for them.
struct Case {
    shape: AttentionShape,
    lengths: Vec<i32>,
    q: Vec<bf16>,
    k: Vec<bf16>,
    v: Vec<bf16>,
    want: (Vec<f64>, Vec<f64>),
}

impl Case {
    fn new(shape: AttentionShape, lengths: &[i32]) -> Case {
        let (q, k, v) = (
            values(shape.q_elements() as usize, 33),
            values(shape.kv_elements() as usize, 31),
            values(shape.kv_elements() as usize, 32),
        );
        let layout = AttentionLayout::packed(&shape);
        let view = |data| View {
            data,
            offset: 0,
            strides: layout.k,
        };
        let q_view = View {
            data: &q,
            offset: 0,
            strides: layout.q,
        };
        let want = reference_with_lengths(&shape, &q_view, &view(&k), &view(&v), lengths);
        Case {
            shape,
            lengths: lengths.to_vec(),
            q,
            k,
            v,
            want,
        }
    }

    /// Runs the case on the decode kernel for its `d` with `plan` (the rule's where `None`)
    /// and checks O and the log-sum-exp; returns O.
    fn run_and_check(
        &self,
        gpu: &Gpu,
        attention: &Attention,
        plan: Option<WalkPlan>,
        lengths: &[i32],
    ) -> Vec<bf16> {
        let shape = self.shape;
        let kernel = AttentionKernel::decode(ElementType::Bf16, shape.head_dim).expect("built");
        let entry = attention.resolve_decode(kernel).expect("resolves");
        let entry = match plan {
            Some(plan) => entry.with_plan(plan),
            None => entry,
        };
        let (k, v, q) = (
            gpu.upload(&self.k, "K cache").unwrap(),
            gpu.upload(&self.v, "V cache").unwrap(),
            gpu.upload(&self.q, "Q").unwrap(),
        );
        let layout = AttentionLayout::packed(&shape);
        let cache_seqlens = gpu.upload(lengths, "cache_seqlens").unwrap();
        // Poisoned outputs: a row the kernels leave unwritten shows.
        let mut o = gpu
            .upload(&vec![bf16::from_f32(7.0); shape.q_elements() as usize], "O")
            .unwrap();
        let mut lse = gpu
            .upload(&vec![7.0f32; shape.lse_elements() as usize], "LSE")
            .unwrap();
        attention
            .run_cache(
                gpu,
                &entry,
                &q,
                &k,
                &v,
                &cache_seqlens,
                &mut o,
                &mut lse,
                shape,
                &layout,
            )
            .unwrap_or_else(|e| panic!("{shape:?} {plan:?}: {e}"));
        let o_host = gpu.download(&o, "O").unwrap();
        let lse_host = gpu.download(&lse, "LSE").unwrap();
        if lengths == self.lengths {
            check(&shape, &o_host, layout.o, &lse_host, &self.want);
        }
        o_host
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn decode_packs_query_heads_and_splits_keys_as_the_reference_says() {
    let gpu = Gpu::open(MODULES).expect("a GPU");
    let attention = Attention::load(&gpu).expect("sm_90a");
    // Caches of 1000 rows (8 blocks of 128 keys, the last partial); lengths of the whole
    // cache, none, one key, a partial block and a block's end.
    let lengths = [1000i32, 0, 1, 777, 256];
    for kernel in ATTENTION_DECODE_KERNELS
        .iter()
        .filter(|k| k.element == ElementType::Bf16)
    {
        let d = kernel.geometry.head_dim;
        for (seqlen_q, heads, causal) in [
            (1, (32, 8), true),
            (1, (8, 1), false),
            (4, (32, 8), true),
            (16, (32, 8), true),
            (16, (12, 2), false),
            (5, (4, 4), true),
        ] {
            let shape = AttentionShape {
                batch: lengths.len() as u32,
                seqlen_q,
                seqlen_kv: 1000,
                heads_q: heads.0,
                heads_kv: heads.1,
                head_dim: d,
                causal,
                scale: None,
            };
            let rule = attention.plan(kernel, &shape);
            let group = heads.0 / heads.1;
            let pack = rule.pack_gqa;
            assert_eq!(group % pack, 0);
            // The rule's plan, and plans forced to every corner.
            let mut plans = vec![None];
            for (pack, splits) in [(1, 1), (pack, 1), (1, 3), (pack, 7), (group.min(64), 2)] {
                if group % pack == 0 && 64 % pack == 0 {
                    plans.push(Some(WalkPlan {
                        pack_gqa: pack,
                        splits,
                    }));
                }
            }
            // More parts than blocks: the last parts walk no key.
            plans.push(Some(WalkPlan {
                pack_gqa: pack,
                splits: 20,
            }));
            let case = Case::new(shape, &lengths);
            for plan in plans {
                case.run_and_check(&gpu, &attention, plan, &lengths);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_long_cache_split_over_the_sms_matches_and_a_wrong_length_shows() {
    let gpu = Gpu::open(MODULES).expect("a GPU");
    let attention = Attention::load(&gpu).expect("sm_90a");
    // Batch 1 against 8192 keys: the rule splits the keys (16 parts on 132 SMs).
    let shape = AttentionShape {
        batch: 1,
        seqlen_q: 1,
        seqlen_kv: 8192,
        heads_q: 32,
        heads_kv: 8,
        head_dim: 128,
        causal: true,
        scale: None,
    };
    let kernel = AttentionKernel::decode(ElementType::Bf16, 128).expect("built");
    assert!(attention.plan(kernel, &shape).splits > 1);
    let case = Case::new(shape, &[8192]);
    let full = case.run_and_check(&gpu, &attention, None, &[8192]);
    // Planted fault: one key fewer must change O (checked against the reference only with
    // the case's own lengths).
    let shorter = case.run_and_check(&gpu, &attention, None, &[8191]);
    assert_ne!(full, shorter);
    // A plan the shape cannot take is refused before anything runs.
    let bad = attention
        .resolve_decode(kernel)
        .unwrap()
        .with_plan(WalkPlan {
            pack_gqa: 3,
            splits: 1,
        });
    let buffer = |n: u64| gpu.zeros::<bf16>(n as usize, "buffer").unwrap();
    let (q, k, v) = (
        buffer(shape.q_elements()),
        buffer(shape.kv_elements()),
        buffer(shape.kv_elements()),
    );
    let mut o = buffer(shape.q_elements());
    let mut lse = gpu
        .zeros::<f32>(shape.lse_elements() as usize, "LSE")
        .unwrap();
    let layout = AttentionLayout::packed(&shape);
    let err = attention
        .run(&gpu, &bad, &q, &k, &v, &mut o, &mut lse, shape, &layout)
        .unwrap_err();
    assert!(
        matches!(err, KernelError::Shape(ref s) if s.contains("pack_gqa")),
        "{err}"
    );
    assert!(attention.release_scratch() > 0);
}
