//! The GEMMs of `gpu-kernels` on this program's own buffers, inputs small integers (every
//! product and sum exact in FP32, and the BF16 results exact in BF16), checked bit for bit
//! against the CPU: the FP32 one (`C = A B`, any GPU from 8.0) at shapes that take each of
//! its families, and the BF16 one (`C = A B^T`, 9.0) at a ragged shape.

use gpu_kernels::gemm16::{BLayout, Gemm16};
use gpu_kernels::gemm32::{Gemm32, Gemm32Family};
use gpu_kernels::{GemmShape, KernelError};
use gpu_runtime::Gpu;
use half::bf16;

/// Values -2..=2, a different stream per `salt`.
fn small(i: u64, salt: u64) -> f32 {
    (((i ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 61) as i32 % 5 - 2) as f32
}

/// Runs and checks `C = A B` in FP32 at each `m x n x k` of `shapes`; `Ok` with a line
/// saying what ran (and which family each shape took).
pub fn f32_gemm(gpu: &Gpu, shapes: &[(u32, u32, u32)]) -> Result<String, String> {
    let gemm = Gemm32::load(gpu).map_err(|e| e.to_string())?;
    let cuda = |e: gpu_runtime::GpuError| e.to_string();
    let info = gpu.info();
    let mut ran = Vec::new();
    for &(m, n, k) in shapes {
        let a: Vec<f32> = (0..m as u64 * k as u64).map(|i| small(i, 3)).collect();
        let b: Vec<f32> = (0..k as u64 * n as u64).map(|i| small(i, 4)).collect();
        let a_dev = gpu.upload(&a, "A").map_err(cuda)?;
        let b_dev = gpu.upload(&b, "B").map_err(cuda)?;
        let mut c_dev = gpu
            .zeros::<f32>(m as usize * n as usize, "C")
            .map_err(cuda)?;
        let shape = GemmShape { m, n, k };
        gemm.gemm(gpu, &a_dev, &b_dev, &mut c_dev, shape)
            .map_err(|e| e.to_string())?;
        gpu.synchronize(|| "running the FP32 GEMM".into())
            .map_err(cuda)?;
        let c = gpu.download(&c_dev, "C").map_err(cuda)?;
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        for i in 0..mu {
            let row = &a[i * ku..(i + 1) * ku];
            for j in 0..nu {
                let want: f32 = (0..ku).map(|l| row[l] * b[l * nu + j]).sum();
                let got = c[i * nu + j];
                if got.to_bits() != want.to_bits() {
                    return Err(format!(
                        "FP32 GEMM {m} x {n} x {k} FAILED at C[{i}][{j}]: got {got}, expected \
                         {want}"
                    ));
                }
            }
        }
        let clusters = info.compute_capability.0 >= 9;
        let family = Gemm32Family::for_shape(shape, info.multiprocessors, clusters);
        ran.push(format!("{m} x {n} x {k} ({})", family.kernel().name));
    }
    Ok(format!(
        "C = A B (FP32, gpu-kernels) exact at {}",
        ran.join(", ")
    ))
}

/// Runs and checks one `m x n x k` GEMM; `Ok` with a line saying what ran.
pub fn bf16_gemm(gpu: &Gpu, m: u32, n: u32, k: u32) -> Result<String, String> {
    let gemm = Gemm16::load(gpu).map_err(|e| e.to_string())?;
    let cuda = |e: gpu_runtime::GpuError| e.to_string();
    // Values -2..=2: a sum of k products is at most 4 k in size, exact in FP32 and, below 256,
    // in BF16 (checked below).
    let a: Vec<f32> = (0..m as u64 * k as u64).map(|i| small(i, 1)).collect();
    let b: Vec<f32> = (0..n as u64 * k as u64).map(|i| small(i, 2)).collect();
    let halves = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<bf16>>();
    let a_dev = gpu.upload(&halves(&a), "A").map_err(cuda)?;
    let b_dev = gpu.upload(&halves(&b), "B").map_err(cuda)?;
    let mut c_dev = gpu
        .zeros::<bf16>(m as usize * n as usize, "C")
        .map_err(cuda)?;
    let shape = GemmShape { m, n, k };
    gemm.gemm(gpu, &a_dev, &b_dev, BLayout::NK, &mut c_dev, shape)
        .map_err(|e| e.to_string())?;
    gpu.synchronize(|| "running the BF16 GEMM".into())
        .map_err(cuda)?;
    let c = gpu.download(&c_dev, "C").map_err(cuda)?;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|l| a[i * k + l] * b[j * k + l]).sum();
            if want.abs() > 256.0 {
                return Err(format!(
                    "C[{i}][{j}] = {want} is not exact in BF16: a smaller K"
                ));
            }
            let got = c[i * n + j].to_f32();
            if got.to_bits() != want.to_bits() {
                return Err(format!(
                    "GEMM FAILED at C[{i}][{j}]: got {got}, expected {want}"
                ));
            }
        }
    }
    // A bad call is refused with a clear error, before anything runs.
    let short = GemmShape {
        m: m as u32 + 1,
        ..shape
    };
    match gemm.gemm(gpu, &a_dev, &b_dev, BLayout::NK, &mut c_dev, short) {
        Err(KernelError::BufferTooSmall { name: "A", .. }) => {}
        other => {
            return Err(format!(
                "a GEMM larger than its buffers was not refused: {other:?}"
            ));
        }
    }
    Ok(format!(
        "C = A B^T ({m} x {n} x {k}, BF16, gpu-kernels) exact"
    ))
}
