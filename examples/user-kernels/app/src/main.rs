//! `user-app [N]`: scales N random floats (default 1000003) by 1.5 on the GPU with the
//! `scale` kernel of `user-kernels`, and on compute capability 9.0 and later also multiplies a
//! 1003 x min(N, 50021) matrix by a vector with `gemv_multicast` (thread block clusters,
//! multicast copies) and calls the BF16 GEMM of `gpu-kernels` on its own buffers (`gemm.rs`);
//! runs `row_softmax` on matrices with ragged rows and the FP32 GEMM of `gpu-kernels`
//! (`gemm.rs`) at three ragged shapes; checks every
//! result against the CPU. One line on stdout when it
//! verifies; one line on stderr and exit 1 when it cannot run or a value is wrong.
//!
//! The GPU side is the library's host runtime (`gpu_runtime`): it loads the driver at run
//! time, picks the module built for the GPU's arch, and launches `scale` through the
//! `EntryPoint` the kernels crate declares, so its arguments are checked against the kernel's
//! parameter types at compile time.

mod gemm;

use gpu_runtime::{Gpu, LaunchConfig, Module};
use std::process::ExitCode;
use user_kernels::{
    GEMV_CLUSTER, GEMV_ROWS, GEMV_SHARED_BYTES, GEMV_THREADS, GEMV_TILE, SHARED_BYTES,
    SOFTMAX_MAX_COLS, SOFTMAX_SHARED_BYTES, SOFTMAX_THREADS, TILE,
};

/// The modules `build.rs` built, one per arch (PTX: the driver compiles it at first load):
/// the table `ptx-builder` writes beside them, so its names always match the files.
const MODULES: &[Module] = include!(concat!(env!("OUT_DIR"), "/user_kernels_modules.rs"));

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<String, String> {
    let n: u32 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or(format!("`{arg}` is not a count of floats (at least 1)"))?,
        None => 1_000_003,
    };
    let gpu = Gpu::open(MODULES).map_err(|e| e.to_string())?;
    // The kernel as the device crate declares it: its name and parameter types come from there.
    let scale = gpu
        .entry_point(user_kernels::scale)
        .map_err(|e| e.to_string())?;

    // Deterministic values that are not all alike (a xorshift), exact under scaling by 1.5.
    let mut state = 0x9e37_79b9u32;
    let x: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state % 20001) as f32 - 10000.0
        })
        .collect();
    let alpha = 1.5f32;
    let cuda = |e: gpu_runtime::GpuError| e.to_string();
    // x exactly n floats: the tail's copies read none past its end (memcheck-clean).
    let x_dev = gpu.upload(&x, "x").map_err(cuda)?;
    let mut y_dev = gpu.zeros::<f32>(n as usize, "y").map_err(cuda)?;
    let config = LaunchConfig::linear(n.div_ceil(TILE).min(528), 256, SHARED_BYTES);
    // SAFETY: scale(x, y, n, alpha) reads n floats of x and writes n of y, which the buffers
    // hold; any grid of 1-D blocks with SHARED_BYTES of dynamic shared memory.
    unsafe { scale.launch(&gpu, config, (&x_dev, &mut y_dev, n, alpha)) }.map_err(cuda)?;
    gpu.synchronize(|| "running `scale`".into()).map_err(cuda)?;
    let y = gpu.download(&y_dev, "y").map_err(cuda)?;
    let (major, minor) = gpu.info().compute_capability;
    let wrong = x
        .iter()
        .zip(&y)
        .position(|(&x, &y)| (alpha * x).to_bits() != y.to_bits());
    if let Some(i) = wrong {
        return Err(format!(
            "FAILED at [{i}]: got {}, expected {}",
            y[i],
            alpha * x[i]
        ));
    }
    let scaled = format!(
        "ok: y = {alpha} x for n = {n} on compute capability {major}.{minor}, every value exact"
    );
    let softmax = softmax(&gpu)?;
    // Ragged shapes: 4-byte copies; one with many tiles, one with few, one skinny.
    let f32_gemm = gemm::f32_gemm(&gpu, &[(2001, 1101, 21), (300, 517, 40), (37, 3000, 100)])?;
    let scaled = format!("{scaled}; {softmax}; {f32_gemm}");
    if major < 9 {
        return Ok(format!(
            "{scaled}; gemv_multicast needs 9.0 (clusters), not run"
        ));
    }
    let (rows, cols) = (1003, n.min(50_021));
    gemv(&gpu, rows, cols)?;
    let gemm = gemm::bf16_gemm(&gpu, 300, 517, 40)?;
    Ok(format!(
        "{scaled}; y = A x ({rows} x {cols}) in clusters of {GEMV_CLUSTER} with multicast, exact; \
         {gemm}"
    ))
}

/// `y = A x` with `gemv_multicast`, `A` `rows x cols` of small integers (so that every sum is
/// exact in f32, whatever its order), checked bit for bit against the CPU.
fn gemv(gpu: &Gpu, rows: u32, cols: u32) -> Result<(), String> {
    let cuda = |e: gpu_runtime::GpuError| e.to_string();
    let kernel = gpu
        .entry_point(user_kernels::gemv_multicast)
        .map_err(cuda)?;
    let small = |i: u64| ((i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as f32) - 16.0;
    let a: Vec<f32> = (0..rows as u64 * cols as u64).map(small).collect();
    // x padded with zeros to whole tiles, as the kernel reads it.
    let padded = cols.next_multiple_of(GEMV_TILE) as usize;
    let mut x: Vec<f32> = (0..cols as u64).map(|i| small(i ^ 0x5555)).collect();
    x.resize(padded, 0.0);
    let a_dev = gpu.upload(&a, "A").map_err(cuda)?;
    let x_dev = gpu.upload(&x, "x").map_err(cuda)?;
    let mut y_dev = gpu.zeros::<f32>(rows as usize, "y").map_err(cuda)?;
    // Clusters take pairs of GEMV_ROWS-row batches: at most one cluster per pair, and no more
    // than one per SM.
    let pairs = rows.div_ceil(GEMV_ROWS).div_ceil(GEMV_CLUSTER);
    let clusters = pairs.min(gpu.info().multiprocessors);
    let config = LaunchConfig::linear(clusters * GEMV_CLUSTER, GEMV_THREADS, GEMV_SHARED_BYTES);
    // SAFETY: gemv_multicast(a, x, y, rows, n) reads rows * cols floats of A and cols rounded
    // up to GEMV_TILE of x (zeros past cols, 16-byte aligned: a driver allocation) and writes
    // rows of y, which the buffers hold; whole clusters of GEMV_THREADS threads with
    // GEMV_SHARED_BYTES; compute capability 9.0 (checked by the caller).
    unsafe { kernel.launch(gpu, config, (&a_dev, &x_dev, &mut y_dev, rows, cols)) }
        .map_err(cuda)?;
    gpu.synchronize(|| "running `gemv_multicast`".into())
        .map_err(cuda)?;
    let y = gpu.download(&y_dev, "y").map_err(cuda)?;
    for (r, &got) in y.iter().enumerate() {
        let row = &a[r * cols as usize..(r + 1) * cols as usize];
        let expected: f32 = row.iter().zip(&x).map(|(a, x)| a * x).sum();
        if got.to_bits() != expected.to_bits() {
            return Err(format!(
                "gemv_multicast FAILED at y[{r}]: got {got}, expected {expected}"
            ));
        }
    }
    Ok(())
}

/// The relative error `row_softmax` may have per element against an f64 softmax: the f32
/// subtraction `x - max` (up to 16 here) and the fast `exp` (`gpu::math::exp`: 2 ulp plus
/// 1.2 ulp per unit of its argument) each give about 1e-6; the sum and the reciprocal far less.
const SOFTMAX_TOLERANCE: f64 = 1e-5;

/// `row_softmax` at shapes with ragged rows (columns not a multiple of 4, so rows are not
/// 16-byte aligned), one row, one column and the longest row, each element checked against
/// the CPU's f64 softmax within [`SOFTMAX_TOLERANCE`].
fn softmax(gpu: &Gpu) -> Result<String, String> {
    let cuda = |e: gpu_runtime::GpuError| e.to_string();
    let kernel = gpu.entry_point(user_kernels::row_softmax).map_err(cuda)?;
    let mut worst = 0f64;
    let shapes = [
        (1000, 1003),
        (4097, 8),
        (3, SOFTMAX_MAX_COLS),
        (1, 1),
        (300, 1),
    ];
    for (rows, cols) in shapes {
        let mut state = 0x1234_5678u32 ^ rows ^ (cols << 16);
        let x: Vec<f32> = (0..rows * cols)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state % 16_001) as f32 / 1000.0 - 8.0
            })
            .collect();
        let x_dev = gpu.upload(&x, "x").map_err(cuda)?;
        let mut y_dev = gpu.zeros::<f32>(x.len(), "y").map_err(cuda)?;
        let blocks = rows.min(2 * gpu.info().multiprocessors);
        let config = LaunchConfig::linear(blocks, SOFTMAX_THREADS, SOFTMAX_SHARED_BYTES);
        // SAFETY: row_softmax(x, y, rows, cols): x and y hold rows * cols floats, 1 <= cols <=
        // SOFTMAX_MAX_COLS; blocks of SOFTMAX_THREADS with SOFTMAX_SHARED_BYTES.
        unsafe { kernel.launch(gpu, config, (&x_dev, &mut y_dev, rows, cols)) }.map_err(cuda)?;
        gpu.synchronize(|| "running `row_softmax`".into())
            .map_err(cuda)?;
        let y = gpu.download(&y_dev, "y").map_err(cuda)?;
        for (r, (xr, yr)) in x
            .chunks(cols as usize)
            .zip(y.chunks(cols as usize))
            .enumerate()
        {
            let max = xr
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
            let sum: f64 = xr.iter().map(|&v| (f64::from(v) - max).exp()).sum();
            for (c, (&v, &got)) in xr.iter().zip(yr).enumerate() {
                let want = (f64::from(v) - max).exp() / sum;
                let err = (f64::from(got) - want).abs() / want;
                if err.is_nan() || err > SOFTMAX_TOLERANCE {
                    return Err(format!(
                        "row_softmax FAILED at {rows} x {cols}, [{r}][{c}]: got {got}, \
                         expected {want}"
                    ));
                }
                worst = worst.max(err);
            }
        }
    }
    Ok(format!(
        "row_softmax at {} shapes (ragged columns) within {worst:.1e} of f64",
        shapes.len()
    ))
}
