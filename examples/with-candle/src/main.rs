//! gpu-kernels' fused causal attention on candle's tensors: Q, K and V made by candle on its
//! CUDA device (narrows of one fused QKV tensor) are read where they lie (a `CustomOp3` hands
//! over candle's buffers, with their offsets and strides), the kernel runs on candle's own
//! stream, and O comes back as a candle tensor. Checked against candle's own attention
//! (matmul, masked softmax, matmul in FP32).
//!
//! Needs an sm_90 GPU (H100, H200); without one it says why and exits 1.

use candle_core::{CpuStorage, CudaDevice, CudaStorage, CustomOp3, D, DType, Device, Layout};
use candle_core::{Result, Shape, Tensor, bail};
use gpu_kernels::attention::{Attention, AttentionLayout, AttentionShape, RowStrides};
use gpu_runtime::Gpu;
use gpu_runtime::cudarc::driver::CudaView;
use half::bf16;
use std::process::ExitCode;

/// The largest difference from candle's attention taken: gpu-kernels' own tolerance of a BF16
/// output element (workloads' `output_tolerance`).
const TOLERANCE: f32 = 1.0 / 32.0;

/// gpu-kernels' causal attention, loaded for candle's CUDA device: Q `(batch, seq_q, heads,
/// head_dim)`, K and V `(batch, seq_kv, heads_kv, head_dim)`, BF16, any strides with the
/// head's elements contiguous (a narrow of a fused QKV tensor, say); O packed like Q.
struct FusedAttention {
    gpu: Gpu,
    attention: Attention,
}

impl FusedAttention {
    fn new(device: &CudaDevice) -> Result<Self> {
        let gpu = Gpu::on_stream(device.cuda_stream(), &[]).map_err(cuda_error)?;
        let attention = Attention::load(&gpu).map_err(cuda_error)?;
        Ok(Self { gpu, attention })
    }

    fn forward(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
        q.apply_op3_no_bwd(k, v, self)
    }
}

/// A gpu-runtime or gpu-kernels error as candle's, kept whole (`downcast_ref` finds it).
fn cuda_error(err: impl std::error::Error + Send + Sync + 'static) -> candle_core::Error {
    candle_core::Error::Cuda(Box::new(err))
}

/// The strides of a `(batch, seq, heads, head_dim)` tensor as gpu-kernels takes them.
fn row_strides(name: &str, layout: &Layout) -> Result<RowStrides> {
    match (layout.dims(), layout.stride()) {
        (&[_, _, _, _], &[batch, token, head, 1]) => Ok(RowStrides {
            batch: batch as u64,
            token: token as u64,
            head: head as u64,
        }),
        (dims, stride) => bail!(
            "{name}: (batch, seq, heads, head_dim) with head_dim contiguous expected, got dims \
             {dims:?}, strides {stride:?}"
        ),
    }
}

impl CustomOp3 for FusedAttention {
    fn name(&self) -> &'static str {
        "gpu-kernels-causal-attention"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        bail!("gpu-kernels' attention runs on a CUDA device only")
    }

    fn cuda_fwd(
        &self,
        q: &CudaStorage,
        lq: &Layout,
        k: &CudaStorage,
        lk: &Layout,
        v: &CudaStorage,
        lv: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        let (batch, seqlen_q, heads_q, head_dim) = lq.shape().dims4()?;
        let (batch_kv, seqlen_kv, heads_kv, head_dim_kv) = lk.shape().dims4()?;
        if (batch_kv, head_dim_kv) != (batch, head_dim) || lv.shape() != lk.shape() {
            bail!(
                "Q {:?}, K {:?}, V {:?} do not agree",
                lq.shape(),
                lk.shape(),
                lv.shape()
            );
        }
        let n = |n: usize| u32::try_from(n).map_err(candle_core::Error::wrap);
        let shape = AttentionShape {
            batch: n(batch)?,
            seqlen_q: n(seqlen_q)?,
            seqlen_kv: n(seqlen_kv)?,
            heads_q: n(heads_q)?,
            heads_kv: n(heads_kv)?,
            head_dim: n(head_dim)?,
            causal: true,
            scale: None,
        };
        let layout = AttentionLayout {
            q: row_strides("Q", lq)?,
            k: row_strides("K", lk)?,
            v: row_strides("V", lv)?,
            ..AttentionLayout::packed(&shape)
        };
        // Each input from its layout's first element on: a view of candle's buffer, no copy.
        fn view<'a>(s: &'a CudaStorage, l: &Layout) -> Result<CudaView<'a, bf16>> {
            Ok(s.as_cuda_slice::<bf16>()?.slice(l.start_offset()..))
        }
        let (qv, kv, vv) = (view(q, lq)?, view(k, lk)?, view(v, lv)?);
        let device = &q.device;
        let mut o = device.alloc_zeros::<bf16>(lq.shape().elem_count())?;
        let mut lse = device.alloc_zeros::<f32>(shape.lse_elements() as usize)?;
        self.attention
            .forward_strided(&self.gpu, &qv, &kv, &vv, &mut o, &mut lse, shape, &layout)
            .map_err(cuda_error)?;
        Ok((
            CudaStorage::wrap_cuda_slice(o, device.clone()),
            lq.shape().clone(),
        ))
    }
}

/// Candle's own causal attention in FP32 (the mask aligned to the bottom right, as
/// gpu-kernels'), `(batch, seq, heads, head_dim)` in and out.
fn reference(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
    let bhsd = |t: &Tensor| t.to_dtype(DType::F32)?.transpose(1, 2)?.contiguous();
    let (q, k, v) = (bhsd(q)?, bhsd(k)?, bhsd(v)?);
    let (_, _, sq, d) = q.dims4()?;
    let skv = k.dim(2)?;
    let scores = (q.matmul(&k.t()?)? / (d as f64).sqrt())?;
    let keep: Vec<u8> = (0..sq)
        .flat_map(|i| (0..skv).map(move |j| u8::from(j + sq <= i + skv)))
        .collect();
    let keep = Tensor::from_vec(keep, (sq, skv), q.device())?.broadcast_as(scores.shape())?;
    let masked = Tensor::new(f32::NEG_INFINITY, q.device())?.broadcast_as(scores.shape())?;
    let scores = keep.where_cond(&scores, &masked)?;
    let exp = scores
        .broadcast_sub(&scores.max_keepdim(D::Minus1)?)?
        .exp()?;
    let p = exp.broadcast_div(&exp.sum_keepdim(D::Minus1)?)?;
    p.matmul(&v)?.transpose(1, 2)
}

/// The largest difference of the fused attention's O from candle's for Q, K, V `(batch, seq,
/// heads, head_dim)` on `device`: narrows of one random fused QKV tensor `(batch, seq, 3,
/// heads, head_dim)`, read in place (an offset and strides each).
fn compare(device: &Device, (batch, seq, heads, d): (usize, usize, usize, usize)) -> Result<f32> {
    let Device::Cuda(cuda) = device else {
        bail!("not a CUDA device: {device:?}")
    };
    let fused = FusedAttention::new(cuda)?;
    let qkv = Tensor::randn(0f32, 1.0, (batch, seq, 3, heads, d), device)?.to_dtype(DType::BF16)?;
    let part = |i| qkv.narrow(2, i, 1)?.squeeze(2);
    let (q, k, v) = (part(0)?, part(1)?, part(2)?);
    let o = fused.forward(&q, &k, &v)?;
    let diff = (o.to_dtype(DType::F32)? - reference(&q, &k, &v)?)?.abs()?;
    diff.flatten_all()?.max(0)?.to_scalar::<f32>()
}

/// Candle's error in one line: without the backtrace it adds under `RUST_BACKTRACE`.
fn one_line(err: candle_core::Error) -> candle_core::Error {
    match err {
        candle_core::Error::WithBacktrace { inner, .. } => *inner,
        err => err,
    }
}

fn main() -> ExitCode {
    let device = match Device::new_cuda(0) {
        Ok(device) => device,
        Err(err) => {
            println!("no CUDA GPU for candle: {}", one_line(err));
            return ExitCode::FAILURE;
        }
    };
    let (batch, seq, heads, d) = (2, 1000, 16, 128);
    match compare(&device, (batch, seq, heads, d)) {
        Ok(err) => {
            let ok = err <= TOLERANCE;
            println!(
                "causal attention {batch} x {seq} x {heads} x {d} (BF16) on candle's tensors: max \
                 abs error {err:.3e} against candle's (tolerance {TOLERANCE:.3e}) {}",
                if ok { "OK" } else { "FAILED" }
            );
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(err) => {
            println!(
                "gpu-kernels' attention on candle's device failed: {}",
                one_line(err)
            );
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn fused_attention_matches_candle() {
        let device = Device::new_cuda(0).expect("a CUDA GPU");
        let err = compare(&device, (2, 300, 4, 128)).expect("the comparison");
        assert!(err <= TOLERANCE, "max abs error {err}");
    }

    #[test]
    fn a_narrow_of_a_fused_qkv_is_read_in_place() {
        // (B, S, 3, H, D): Q, K, V narrowed out of one projection, never copied.
        let (b, s, h, d) = (2, 1000, 16, 128);
        let qkv = Tensor::zeros((b, s, 3, h, d), DType::BF16, &Device::Cpu).unwrap();
        let fused = RowStrides::packed(s as u32, 3 * h as u32, d as u32);
        for (i, name) in ["Q", "K", "V"].into_iter().enumerate() {
            let t = qkv.narrow(2, i, 1).unwrap().squeeze(2).unwrap();
            let layout = t.layout();
            assert_eq!(row_strides(name, layout).unwrap(), fused);
            assert_eq!(layout.start_offset(), i * h * d);
        }
        // A transposed (B, H, S, D) tensor steps heads by S D and tokens by D.
        let bhsd = Tensor::zeros((b, h, s, d), DType::BF16, &Device::Cpu).unwrap();
        let t = bhsd.transpose(1, 2).unwrap();
        let strides = row_strides("Q", t.layout()).unwrap();
        assert_eq!(
            strides,
            RowStrides {
                batch: (h * s * d) as u64,
                token: d as u64,
                head: (s * d) as u64
            }
        );
        // Elements of a head not contiguous: refused with a candle error, not launched.
        let t = bhsd.transpose(2, 3).unwrap();
        assert!(
            row_strides("K", t.layout())
                .unwrap_err()
                .to_string()
                .contains("contiguous")
        );
    }
}
