//! gpu-kernels as a caller uses it, on a GPU (sm_90 for the tensor-core kernels): launched on
//! the caller's own stream with cudarc's event tracking on, on views, on strided tensors (a
//! fused QKV projection, a preallocated KV cache with batch > 1, O in `(B, H, S, D)`), each
//! checked against the CPU. CI has no GPU: run with `cargo test --release -p gpu-kernels --
//! --include-ignored`.

use gpu_kernels::KernelError;
use gpu_kernels::attention::{Attention, AttentionLayout, AttentionShape, RowStrides};
use gpu_kernels::gemm16::{BLayout, Gemm16, GemmStrides};
use gpu_kernels::gemm32::Gemm32;
use gpu_kernels::{GemmShape, MODULES};
use gpu_runtime::Gpu;
use gpu_runtime::cudarc::driver::{CudaContext, CudaStream};
use half::bf16;
use std::sync::Arc;

mod common;
use common::{View, check, reference, reference_with_lengths, values};

/// A context with event tracking on (cudarc's default, as candle has it) and two streams of
/// it: one the caller uploads and downloads on, one the kernels run on.
fn two_streams() -> (Arc<CudaStream>, Arc<CudaStream>) {
    let context = CudaContext::new(0).expect("a CUDA GPU");
    assert!(context.is_event_tracking());
    let copies = context.new_stream().expect("a stream");
    let kernels = context.new_stream().expect("a second stream");
    (copies, kernels)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn attention_on_the_callers_stream_is_ordered_by_event_tracking() {
    let (copies, kernels) = two_streams();
    let gpu = Gpu::on_stream(kernels, &[]).expect("the GPU of the caller's stream");
    let attention = Attention::load(&gpu).expect("sm_90a");
    let shape = AttentionShape {
        batch: 2,
        seqlen_q: 512,
        seqlen_kv: 640,
        heads_q: 8,
        heads_kv: 2,
        head_dim: 128,
        causal: true,
        scale: None,
    };
    let (q_host, kv_host) = (
        values(shape.q_elements() as usize, 1),
        values(shape.kv_elements() as usize, 2),
    );
    let v_host = values(shape.kv_elements() as usize, 3);
    // Uploaded and downloaded on one stream, run on another: cudarc's events order them.
    let q = copies.clone_htod(&q_host).unwrap();
    let k = copies.clone_htod(&kv_host).unwrap();
    let v = copies.clone_htod(&v_host).unwrap();
    let mut o = copies.alloc_zeros::<bf16>(q_host.len()).unwrap();
    let mut lse = copies
        .alloc_zeros::<f32>(shape.lse_elements() as usize)
        .unwrap();
    attention
        .forward(&gpu, &q, &k, &v, &mut o, &mut lse, shape)
        .expect("runs");
    let (o_host, lse_host) = (
        copies.clone_dtoh(&o).unwrap(),
        copies.clone_dtoh(&lse).unwrap(),
    );
    let packed = AttentionLayout::packed(&shape);
    let view = |data, strides| View {
        data,
        offset: 0,
        strides,
    };
    let want = reference(
        &shape,
        &view(&q_host, packed.q),
        &view(&kv_host, packed.k),
        &view(&v_host, packed.v),
    );
    check(&shape, &o_host, packed.o, &lse_host, &want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_fused_qkv_projection_is_attended_in_place() {
    let gpu = Gpu::open(MODULES).expect("a GPU");
    let attention = Attention::load(&gpu).expect("sm_90a");
    let (batch, seqlen, heads, d) = (2u32, 300u32, 4u32, 64u32);
    let shape = AttentionShape {
        batch,
        seqlen_q: seqlen,
        seqlen_kv: seqlen,
        heads_q: heads,
        heads_kv: heads,
        head_dim: d,
        causal: false,
        scale: Some(0.1),
    };
    // (B, S, 3, H, D): Q, K and V are views H D and 2 H D elements in.
    let qkv_host = values((batch * seqlen * 3 * heads * d) as usize, 7);
    let qkv = gpu.upload(&qkv_host, "QKV").unwrap();
    let fused = RowStrides::packed(seqlen, 3 * heads, d);
    // O as (B, H, S, D): heads outermost but one.
    let o_strides = RowStrides {
        batch: (heads * seqlen * d) as u64,
        token: d as u64,
        head: (seqlen * d) as u64,
    };
    let layout = AttentionLayout {
        q: fused,
        k: fused,
        v: fused,
        o: o_strides,
    };
    let hd = (heads * d) as usize;
    let (q, k, v) = (qkv.slice(..), qkv.slice(hd..), qkv.slice(2 * hd..));
    let mut o = gpu.zeros::<bf16>(shape.q_elements() as usize, "O").unwrap();
    let mut lse = gpu
        .zeros::<f32>(shape.lse_elements() as usize, "LSE")
        .unwrap();
    attention
        .forward_strided(&gpu, &q, &k, &v, &mut o, &mut lse, shape, &layout)
        .expect("runs");
    let (o_host, lse_host) = (
        gpu.download(&o, "O").unwrap(),
        gpu.download(&lse, "LSE").unwrap(),
    );
    let at = |offset| View {
        data: &qkv_host,
        offset,
        strides: fused,
    };
    let want = reference(&shape, &at(0), &at(hd), &at(2 * hd));
    check(&shape, &o_host, o_strides, &lse_host, &want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_preallocated_kv_cache_is_read_in_place_for_every_sequence() {
    let gpu = Gpu::open(MODULES).expect("a GPU");
    let attention = Attention::load(&gpu).expect("sm_90a");
    // A cache (B, max_len, H_kv, D) holding 200 tokens of each of 3 sequences; 77 new
    // queries per sequence, causal (the queries are the last 77 tokens).
    let (batch, max_len, heads_kv, d) = (3u32, 512u32, 2u32, 128u32);
    let shape = AttentionShape {
        batch,
        seqlen_q: 77,
        seqlen_kv: 200,
        heads_q: 8,
        heads_kv,
        head_dim: d,
        causal: true,
        scale: None,
    };
    let cache_len = (batch * max_len * heads_kv * d) as usize;
    let (k_host, v_host) = (values(cache_len, 11), values(cache_len, 12));
    let q_host = values(shape.q_elements() as usize, 13);
    let (k, v, q) = (
        gpu.upload(&k_host, "K cache").unwrap(),
        gpu.upload(&v_host, "V cache").unwrap(),
        gpu.upload(&q_host, "Q").unwrap(),
    );
    let cache = RowStrides::packed(max_len, heads_kv, d);
    let layout = AttentionLayout {
        k: cache,
        v: cache,
        ..AttentionLayout::packed(&shape)
    };
    let mut o = gpu.zeros::<bf16>(shape.q_elements() as usize, "O").unwrap();
    let mut lse = gpu
        .zeros::<f32>(shape.lse_elements() as usize, "LSE")
        .unwrap();
    attention
        .forward_strided(&gpu, &q, &k, &v, &mut o, &mut lse, shape, &layout)
        .expect("runs");
    let (o_host, lse_host) = (
        gpu.download(&o, "O").unwrap(),
        gpu.download(&lse, "LSE").unwrap(),
    );
    let view = |data, strides| View {
        data,
        offset: 0,
        strides,
    };
    let want = reference(
        &shape,
        &view(&q_host, layout.q),
        &view(&k_host, cache),
        &view(&v_host, cache),
    );
    check(&shape, &o_host, layout.o, &lse_host, &want);
    // Read as packed (the trap: seqlen_kv rows per sequence, one after another), the same
    // buffers give other rows for every sequence past the first: the strides are what make
    // it right.
    let packed = AttentionLayout::packed(&shape);
    attention
        .forward_strided(&gpu, &q, &k, &v, &mut o, &mut lse, shape, &packed)
        .expect("runs");
    let wrong = gpu.download(&o, "O").unwrap();
    assert_ne!(wrong, o_host);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kv_cache_of_different_lengths_per_sequence_is_attended_to_each_length() {
    let gpu = Gpu::open(MODULES).expect("a GPU");
    let attention = Attention::load(&gpu).expect("sm_90a");
    // Caches of 640 rows; sequences of 640 (all), 1, 0 (none: O = 0, LSE = -inf), 300 and
    // -5 (clamped to 0) keys; the rows past each length hold other, finite values, which
    // change the answer if read.
    let lengths = [640i32, 1, 0, 300, -5];
    for d in [64u32, 128, 256] {
        for causal in [false, true] {
            let shape = AttentionShape {
                batch: lengths.len() as u32,
                seqlen_q: 3,
                seqlen_kv: 640,
                heads_q: 8,
                heads_kv: 2,
                head_dim: d,
                causal,
                scale: None,
            };
            let (k_host, v_host, q_host) = (
                values(shape.kv_elements() as usize, 21),
                values(shape.kv_elements() as usize, 22),
                values(shape.q_elements() as usize, 23),
            );
            let (k, v, q) = (
                gpu.upload(&k_host, "K cache").unwrap(),
                gpu.upload(&v_host, "V cache").unwrap(),
                gpu.upload(&q_host, "Q").unwrap(),
            );
            let layout = AttentionLayout::packed(&shape);
            let run = |lengths: &[i32]| {
                let lengths = gpu.upload(lengths, "cache_seqlens").unwrap();
                let mut o = gpu.zeros::<bf16>(shape.q_elements() as usize, "O").unwrap();
                let mut lse = gpu
                    .zeros::<f32>(shape.lse_elements() as usize, "LSE")
                    .unwrap();
                attention
                    .forward_cache(&gpu, &q, &k, &v, &lengths, &mut o, &mut lse, shape, &layout)
                    .expect("runs");
                (
                    gpu.download(&o, "O").unwrap(),
                    gpu.download(&lse, "LSE").unwrap(),
                )
            };
            let (o_host, lse_host) = run(&lengths);
            let view = |data| View {
                data,
                offset: 0,
                strides: layout.k,
            };
            let q_view = View {
                data: &q_host,
                offset: 0,
                strides: layout.q,
            };
            let want =
                reference_with_lengths(&shape, &q_view, &view(&k_host), &view(&v_host), &lengths);
            check(&shape, &o_host, layout.o, &lse_host, &want);
            // Planted fault: one sequence's length off by one must show in its rows.
            let mut off_by_one = lengths;
            off_by_one[3] += 1;
            let (wrong, _) = run(&off_by_one);
            let row = (3 * shape.seqlen_q * shape.heads_q * d) as usize;
            assert_ne!(wrong[row..], o_host[row..], "d = {d}, causal {causal}");
            assert_eq!(wrong[..row], o_host[..row], "d = {d}, causal {causal}");
        }
    }
    // Fewer lengths than sequences: refused before anything runs.
    let shape = AttentionShape {
        batch: 2,
        seqlen_q: 1,
        seqlen_kv: 64,
        heads_q: 1,
        heads_kv: 1,
        head_dim: 64,
        causal: false,
        scale: None,
    };
    let buffer = |n: u64| gpu.zeros::<bf16>(n as usize, "buffer").unwrap();
    let (q, k, v) = (
        buffer(shape.q_elements()),
        buffer(shape.kv_elements()),
        buffer(shape.kv_elements()),
    );
    let mut o = buffer(shape.q_elements());
    let mut lse = gpu.zeros::<f32>(2, "LSE").unwrap();
    let one = gpu.upload(&[64i32], "cache_seqlens").unwrap();
    let err = attention
        .forward_cache(
            &gpu,
            &q,
            &k,
            &v,
            &one,
            &mut o,
            &mut lse,
            shape,
            &AttentionLayout::packed(&shape),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            KernelError::BufferTooSmall {
                name: "cache_seqlens",
                have: 1,
                need: 2
            }
        ),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_refused_call_writes_nothing_and_says_why() {
    let gpu = Gpu::open(MODULES).expect("a GPU");
    let attention = Attention::load(&gpu).expect("sm_90a");
    let shape = AttentionShape {
        batch: 2,
        seqlen_q: 64,
        seqlen_kv: 64,
        heads_q: 4,
        heads_kv: 4,
        head_dim: 64,
        causal: false,
        scale: None,
    };
    let n = shape.q_elements() as usize;
    let poison = bf16::from_bits(0x7fc1);
    let q = gpu.upload(&values(n, 1), "Q").unwrap();
    let short = gpu.upload(&values(n - 1, 2), "K").unwrap();
    let mut o = gpu.upload(&vec![poison; n], "O").unwrap();
    let mut lse = gpu
        .zeros::<f32>(shape.lse_elements() as usize, "LSE")
        .unwrap();
    let err = attention
        .forward(&gpu, &q, &short, &q, &mut o, &mut lse, shape)
        .unwrap_err();
    assert!(
        matches!(err, KernelError::BufferTooSmall { name: "K", .. }),
        "{err}"
    );
    let d96 = AttentionShape {
        head_dim: 96,
        ..shape
    };
    let err = attention
        .forward(&gpu, &q, &q, &q, &mut o, &mut lse, d96)
        .unwrap_err();
    assert!(
        matches!(err, KernelError::UnsupportedHeadDim { head_dim: 96, .. }),
        "{err}"
    );
    gpu.synchronize(|| "nothing".into()).unwrap();
    assert!(
        gpu.download(&o, "O")
            .unwrap()
            .iter()
            .all(|x| x.to_bits() == poison.to_bits())
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemms_take_views_on_the_callers_stream() {
    let (copies, kernels) = two_streams();
    let gpu = Gpu::on_stream(kernels, &[]).expect("the GPU of the caller's stream");
    // BF16: A and B views 64 elements into larger buffers, C a view of a larger buffer
    // whose other elements must stay as they were.
    let gemm = Gemm16::load(&gpu).expect("sm_90a");
    let (m, n, k) = (300u32, 200u32, 96u32);
    let a_host = values(64 + (m * k) as usize, 21);
    let b_host = values(64 + (n * k) as usize, 22);
    let a = copies.clone_htod(&a_host).unwrap();
    let b = copies.clone_htod(&b_host).unwrap();
    let guard = bf16::from_f32(-7.0);
    let c_len = (m * n) as usize;
    let mut c = copies.clone_htod(&vec![guard; c_len + 128]).unwrap();
    let shape = GemmShape { m, n, k };
    gemm.gemm(
        &gpu,
        &a.slice(64..),
        &b.slice(64..),
        BLayout::NK,
        &mut c.slice_mut(64..64 + c_len),
        shape,
    )
    .expect("runs");
    let c_host = copies.clone_dtoh(&c).unwrap();
    assert!(
        c_host[..64]
            .iter()
            .chain(&c_host[64 + c_len..])
            .all(|&x| x == guard)
    );
    let c_host = widen(&c_host);
    let want = gemm_reference(
        &widen(&a_host[64..]),
        k,
        &widen(&b_host[64..]),
        k,
        BLayout::NK,
        shape,
    );
    assert_gemm_close(&c_host[64..], n, &want, shape);
    // K = 100 (rows of 200 bytes, which tensor copies cannot step) held in rows padded to
    // 104, C written 8 elements apart past its N = 64 columns.
    let (m, n, k) = (70u32, 64u32, 100u32);
    let strides = GemmStrides {
        a: 104,
        b: 104,
        c: 72,
    };
    let a_host = values((m * 104) as usize, 23);
    let b_host = values((n * 104) as usize, 24);
    let a = copies.clone_htod(&a_host).unwrap();
    let b = copies.clone_htod(&b_host).unwrap();
    let mut c = copies.clone_htod(&vec![guard; (m * 72) as usize]).unwrap();
    gemm.gemm_strided(
        &gpu,
        &a,
        &b,
        BLayout::NK,
        &mut c,
        GemmShape { m, n, k },
        strides,
    )
    .expect("runs");
    let c_host = copies.clone_dtoh(&c).unwrap();
    let shape = GemmShape { m, n, k };
    let want = gemm_reference(
        &widen(&a_host),
        104,
        &widen(&b_host),
        104,
        BLayout::NK,
        shape,
    );
    assert_gemm_close(&widen(&c_host), 72, &want, shape);
    for (i, row) in c_host.chunks(72).enumerate() {
        assert!(
            row[n as usize..].iter().all(|&x| x == guard),
            "C[{i}] past N was written"
        );
    }
    // FP32: a view one float in (not 16-byte aligned) takes the 4-byte copies.
    let gemm = Gemm32::load(&gpu).expect("sm_80+");
    let (m, n, k) = (129u32, 65u32, 33u32);
    let a_host: Vec<f32> = values(1 + (m * k) as usize, 31)
        .iter()
        .map(|x| x.to_f32())
        .collect();
    let b_host: Vec<f32> = values((k * n) as usize, 32)
        .iter()
        .map(|x| x.to_f32())
        .collect();
    let a = copies.clone_htod(&a_host).unwrap();
    let b = copies.clone_htod(&b_host).unwrap();
    let mut c = copies.alloc_zeros::<f32>((m * n) as usize).unwrap();
    gemm.gemm(&gpu, &a.slice(1..), &b, &mut c, GemmShape { m, n, k })
        .expect("runs");
    let c_host = copies.clone_dtoh(&c).unwrap();
    for i in 0..m as usize {
        for j in 0..n as usize {
            let want: f64 = (0..k as usize)
                .map(|l| a_host[1 + i * k as usize + l] as f64 * b_host[l * n as usize + j] as f64)
                .sum();
            let got = c_host[i * n as usize + j] as f64;
            assert!(
                (got - want).abs() < 1e-4,
                "C[{i}][{j}] = {got}, expected {want}"
            );
        }
    }
}

/// 16-bit values as f64.
fn widen<E: Into<f64> + Copy>(x: &[E]) -> Vec<f64> {
    x.iter().map(|&v| v.into()).collect()
}

/// `C = A B^T` (B `n x k`) or `C = A B` (B `k x n`) on the CPU in f64, from rows `lda` and
/// `ldb` apart; C packed.
fn gemm_reference(
    a: &[f64],
    lda: u32,
    b: &[f64],
    ldb: u32,
    b_layout: BLayout,
    shape: GemmShape,
) -> Vec<f64> {
    let GemmShape { m, n, k } = shape;
    let (lda, ldb) = (lda as usize, ldb as usize);
    let mut c = vec![0.0; (m * n) as usize];
    for i in 0..m as usize {
        for j in 0..n as usize {
            c[i * n as usize + j] = (0..k as usize)
                .map(|l| {
                    let b = match b_layout {
                        BLayout::NK => b[j * ldb + l],
                        BLayout::KN => b[l * ldb + j],
                    };
                    a[i * lda + l] * b
                })
                .sum();
        }
    }
    c
}

/// C (rows `ldc` apart) against the reference, to BF16's rounding of C (FP32 accumulation).
fn assert_gemm_close(c: &[f64], ldc: u32, want: &[f64], shape: GemmShape) {
    let GemmShape { m, n, .. } = shape;
    for i in 0..m as usize {
        for j in 0..n as usize {
            let (got, want) = (c[i * ldc as usize + j], want[i * n as usize + j]);
            assert!(
                (got - want).abs() <= 1e-2 * want.abs().max(1.0),
                "C[{i}][{j}] = {got}, expected {want} ({shape:?})"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm16_takes_any_k_any_stride_and_any_view() {
    let gpu = Gpu::open(MODULES).expect("a GPU");
    let gemm = Gemm16::load(&gpu).expect("sm_90a");
    // (shape, A's stride and offset, B's layout, stride and offset): rows a tensor map
    // cannot describe (K or B's N not a multiple of 8, odd strides, views off 16 bytes) are
    // copied with padded rows first; the others read in place.
    let cases = [
        (
            GemmShape {
                m: 70,
                n: 64,
                k: 100,
            },
            (100, 0),
            (BLayout::NK, 100, 0),
        ),
        (
            GemmShape {
                m: 130,
                n: 60,
                k: 97,
            },
            (101, 3),
            (BLayout::KN, 60, 0),
        ),
        (
            GemmShape {
                m: 33,
                n: 257,
                k: 64,
            },
            (64, 1),
            (BLayout::NK, 72, 5),
        ),
        (
            GemmShape {
                m: 129,
                n: 96,
                k: 8,
            },
            (8, 0),
            (BLayout::KN, 99, 7),
        ),
        (GemmShape { m: 1, n: 1, k: 1 }, (1, 1), (BLayout::NK, 1, 1)),
    ];
    // Twice: the second round after the scratch buffer was released, so allocated again.
    for (salt, (shape, (lda, a_off), (b_layout, ldb, b_off))) in
        cases.into_iter().chain(cases).enumerate()
    {
        if salt == cases.len() {
            assert!(
                gemm.release_scratch() > 0,
                "the copies kept a scratch buffer"
            );
            assert_eq!(gemm.release_scratch(), 0);
        }
        let GemmShape { m, n, k } = shape;
        let b_rows = match b_layout {
            BLayout::NK => n,
            BLayout::KN => k,
        };
        let a_host = values(a_off + (m * lda) as usize, 40 + salt as u64);
        let b_host = values(b_off + (b_rows * ldb) as usize, 50 + salt as u64);
        let a = gpu.upload(&a_host, "A").unwrap();
        let b = gpu.upload(&b_host, "B").unwrap();
        let mut c = gpu.zeros::<bf16>((m * n) as usize, "C").unwrap();
        let strides = GemmStrides {
            a: lda,
            b: ldb,
            c: n,
        };
        gemm.gemm_strided(
            &gpu,
            &a.slice(a_off..),
            &b.slice(b_off..),
            b_layout,
            &mut c,
            shape,
            strides,
        )
        .unwrap_or_else(|e| panic!("{shape:?}: {e}"));
        let got = widen(&gpu.download(&c, "C").unwrap());
        let want = gemm_reference(
            &widen(&a_host[a_off..]),
            lda,
            &widen(&b_host[b_off..]),
            ldb,
            b_layout,
            shape,
        );
        assert_gemm_close(&got, n, &want, shape);
    }
    // FP16, K = 37 packed: the same path for the other element.
    let shape = GemmShape {
        m: 200,
        n: 45,
        k: 37,
    };
    let to_f16 = |v: Vec<bf16>| {
        v.iter()
            .map(|x| half::f16::from_f32(x.to_f32()))
            .collect::<Vec<_>>()
    };
    let a_host = to_f16(values((shape.m * shape.k) as usize, 61));
    let b_host = to_f16(values((shape.n * shape.k) as usize, 62));
    let a = gpu.upload(&a_host, "A").unwrap();
    let b = gpu.upload(&b_host, "B").unwrap();
    let mut c = gpu
        .zeros::<half::f16>((shape.m * shape.n) as usize, "C")
        .unwrap();
    gemm.gemm(&gpu, &a, &b, BLayout::NK, &mut c, shape)
        .expect("runs");
    let want = gemm_reference(
        &widen(&a_host),
        shape.k,
        &widen(&b_host),
        shape.k,
        BLayout::NK,
        shape,
    );
    assert_gemm_close(
        &widen(&gpu.download(&c, "C").unwrap()),
        shape.n,
        &want,
        shape,
    );
    // Strided C from an address off 16 bytes: refused before anything runs, C untouched.
    let shape = GemmShape { m: 4, n: 8, k: 8 };
    let ones = gpu.upload(&[bf16::ONE; 64], "A").unwrap();
    let guard = bf16::from_f32(-3.0);
    let mut c = gpu.upload(&[guard; 64], "C").unwrap();
    let strides = GemmStrides { a: 8, b: 8, c: 16 };
    let err = gemm
        .gemm_strided(
            &gpu,
            &ones,
            &ones,
            BLayout::NK,
            &mut c.slice_mut(1..),
            shape,
            strides,
        )
        .unwrap_err();
    assert!(
        matches!(err, KernelError::Stride { name: "C", .. }),
        "{err}"
    );
    assert!(gpu.download(&c, "C").unwrap().iter().all(|&x| x == guard));
}
