//! `user-app [N]`: scales N random floats (default 1000003) by 1.5 on the GPU with the
//! `scale` kernel of `user-kernels`, and checks every result against the CPU. One line on
//! stdout when it verifies; one line on stderr and exit 1 when it cannot run or a value is
//! wrong.
//!
//! The GPU side is the library's host runtime (`gpu_runtime`): it loads the driver at run
//! time, picks the module built for the GPU's arch, and launches `scale` through the
//! `EntryPoint` the kernels crate declares, so its arguments are checked against the kernel's
//! parameter types at compile time.

use gpu_runtime::{Gpu, LaunchConfig, Module};
use ptx_builder::Arch;
use std::process::ExitCode;
use user_kernels::{SHARED_BYTES, TILE};

/// The modules `build.rs` built, one per arch (PTX: the driver compiles it at first load).
const MODULES: &[Module] = &[
    Module {
        arch: Arch::Sm80,
        ptx: include_str!(concat!(env!("OUT_DIR"), "/user_kernels_sm_80.ptx")),
        cubin: None,
    },
    Module {
        arch: Arch::Sm90,
        ptx: include_str!(concat!(env!("OUT_DIR"), "/user_kernels_sm_90.ptx")),
        cubin: None,
    },
];

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
