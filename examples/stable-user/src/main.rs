//! What a new user's crate on the stable toolchain does with the ready-made kernels: opens the
//! GPU, runs causal BF16 attention (2 x 1000 x 16 x 128) and a BF16 GEMM (1000 x 4096 x 4096)
//! on `half::bf16` buffers, and checks both against what they must give: with every value of
//! V one, every output row is one (the softmax weights sum to 1); with A and B all ones, every
//! element of C is K. Without a GPU it says why and exits 0 (CI runs it there).

use gpu_kernels::GemmShape;
use gpu_kernels::attention::{Attention, AttentionShape};
use gpu_kernels::gemm16::{BLayout, Gemm16};
use gpu_runtime::Gpu;
use half::bf16;
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let gpu = match Gpu::open(gpu_kernels::MODULES) {
        Ok(gpu) => gpu,
        Err(err) => {
            println!("could not open the GPU: {err}");
            return Ok(());
        }
    };
    let attention = Attention::load(&gpu)?;
    let shape = AttentionShape {
        batch: 2,
        seqlen_q: 1000,
        seqlen_kv: 1000,
        heads_q: 16,
        heads_kv: 16,
        head_dim: 128,
        causal: true,
        scale: None,
    };
    let (nq, nkv) = (shape.q_elements() as usize, shape.kv_elements() as usize);
    let random = |n: usize, salt: u64| -> Vec<bf16> {
        (0..n as u64)
            .map(|i| {
                bf16::from_f32(
                    ((i ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 53) as f32 / 1024.0 - 1.0,
                )
            })
            .collect()
    };
    let q = gpu.upload(&random(nq, 1), "Q")?;
    let k = gpu.upload(&random(nkv, 2), "K")?;
    let v = gpu.upload(&vec![bf16::ONE; nkv], "V")?;
    let mut o = gpu.zeros::<bf16>(nq, "O")?;
    let mut lse = gpu.zeros::<f32>(shape.lse_elements() as usize, "LSE")?;
    attention.forward(&gpu, &q, &k, &v, &mut o, &mut lse, shape)?;
    let o = gpu.download(&o, "O")?;
    let worst = o
        .iter()
        .map(|x| (x.to_f32() - 1.0).abs())
        .fold(0.0, f32::max);
    println!("attention 2 x 1000 x 16 x 128, causal, BF16: every O element within {worst:e} of 1");

    let gemm = Gemm16::load(&gpu)?;
    let (m, n, k) = (1000usize, 4096usize, 4096usize);
    let a = gpu.upload(&vec![bf16::ONE; m * k], "A")?;
    let b = gpu.upload(&vec![bf16::ONE; n * k], "B")?;
    let mut c = gpu.zeros::<bf16>(m * n, "C")?;
    let gemm_shape = GemmShape {
        m: m as u32,
        n: n as u32,
        k: k as u32,
    };
    gemm.gemm(&gpu, &a, &b, BLayout::NK, &mut c, gemm_shape)?;
    let c = gpu.download(&c, "C")?;
    let wrong = c.iter().filter(|&&x| x != bf16::from_f32(k as f32)).count();
    println!(
        "GEMM 1000 x 4096 x 4096, BF16: {wrong} of {} elements differ from {k}",
        c.len()
    );
    if worst > 1.0 / 128.0 || wrong > 0 {
        return Err("a result is wrong".into());
    }
    Ok(())
}
