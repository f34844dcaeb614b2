//! `user-app [N]`: scales N random floats (default 1000003) by 1.5 on the GPU with the
//! `scale` kernel of `user-kernels`, and checks every result against the CPU. One line on
//! stdout when it verifies; one line on stderr and exit 1 when it cannot run or a value is
//! wrong.

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use std::process::ExitCode;
use user_kernels::{SHARED_BYTES, TILE};

const PTX_SM_80: &str = include_str!(concat!(env!("OUT_DIR"), "/user_kernels_sm_80.ptx"));
const PTX_SM_90: &str = include_str!(concat!(env!("OUT_DIR"), "/user_kernels_sm_90.ptx"));

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
    // SAFETY: only tries to load the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver (libcuda.so): this needs an NVIDIA GPU, sm_80 or newer".into());
    }
    let gpu = |e: cudarc::driver::DriverError| format!("no usable CUDA GPU: {e}");
    let ctx = CudaContext::new(0).map_err(gpu)?;
    let (major, minor) = ctx.compute_capability().map_err(gpu)?;
    let ptx = match major {
        ..8 => {
            return Err(format!(
                "compute capability {major}.{minor}: cp.async needs 8.0"
            ));
        }
        8 => PTX_SM_80,
        _ => PTX_SM_90,
    };
    let cuda = |what: &'static str| move |e: cudarc::driver::DriverError| format!("{what}: {e}");
    let module = ctx
        .load_module(ptx.into())
        .map_err(cuda("loading the PTX"))?;
    let scale = module
        .load_function("scale")
        .map_err(cuda("finding `scale`"))?;
    let stream = ctx.default_stream();

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
    let x_dev = stream.clone_htod(&x).map_err(cuda("copying x"))?;
    let mut y_dev = stream
        .alloc_zeros::<f32>(n as usize)
        .map_err(cuda("allocating y"))?;
    let blocks = n.div_ceil(TILE).min(528);
    let config = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: SHARED_BYTES,
    };
    let mut launch = stream.launch_builder(&scale);
    launch.arg(&x_dev).arg(&mut y_dev).arg(&n).arg(&alpha);
    // SAFETY: scale(x, y, n, alpha) reads n floats of x and writes n of y, which the buffers
    // hold; any grid of 1-D blocks with SHARED_BYTES of dynamic shared memory.
    unsafe { launch.launch(config) }.map_err(cuda("launching `scale`"))?;
    let y = stream.clone_dtoh(&y_dev).map_err(cuda("running `scale`"))?;
    let wrong = x
        .iter()
        .zip(&y)
        .position(|(&x, &y)| (alpha * x).to_bits() != y.to_bits());
    match wrong {
        None => Ok(format!(
            "ok: y = {alpha} x for n = {n} on compute capability {major}.{minor}, every value exact"
        )),
        Some(i) => Err(format!(
            "FAILED at [{i}]: got {}, expected {}",
            y[i],
            alpha * x[i]
        )),
    }
}
