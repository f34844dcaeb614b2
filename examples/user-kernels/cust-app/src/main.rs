//! `cust-app [N]`: the same program as `user-app`, on Rust-CUDA's `cust` instead of the
//! library's runtime. It scales N random floats (default 1000003) by 1.5 on the GPU with the
//! `scale` kernel of `user-kernels`, and checks every result against the CPU. One line on
//! stdout when it verifies; one line on stderr and exit 1 when it cannot run or a value is
//! wrong.
//!
//! `cust` links libcuda at build time (`../.cargo/config.toml`): on a machine without the
//! driver library the program does not start (the dynamic loader says `libcuda.so.1` is
//! missing); with the library but no GPU it says so in one line.

use cust::device::DeviceAttribute;
use cust::error::CudaError;
use cust::prelude::*;
use std::fmt::Write;
use std::process::ExitCode;
use user_kernels::{SHARED_BYTES, TILE};

/// The PTX `build.rs` built for sm_80 and sm_90 (the driver compiles it at load).
const PTX_SM_80: &str = include_str!(concat!(env!("OUT_DIR"), "/user_kernels_sm_80.ptx"));
const PTX_SM_90: &str = include_str!(concat!(env!("OUT_DIR"), "/user_kernels_sm_90.ptx"));

/// The kernel as the device crate declares it, with the parameter types the launch below
/// passes (`DevicePointer<f32>` for the two pointers): if the kernel's signature changes, this
/// no longer compiles.
const SCALE: gpu::kernel::EntryPoint<(*const f32, *mut f32, u32, f32)> = user_kernels::scale;

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

/// `NAME (the driver's description)`; the name alone when the driver has no description
/// (cust's `Display` asks the driver, and fails rather than panics through `write!`).
fn describe(error: CudaError) -> String {
    let mut text = String::new();
    match write!(text, "{error}") {
        Ok(()) => format!("{error:?} ({})", text.trim_matches('"')),
        Err(_) => format!("{error:?}"),
    }
}

/// Attaches what was being done to a driver error.
fn during(what: &str) -> impl FnOnce(CudaError) -> String + '_ {
    move |e| format!("{what}: {}", describe(e))
}

fn unavailable(why: String) -> String {
    format!(
        "no usable CUDA GPU ({why}): this needs an NVIDIA GPU of compute capability 8.0 or newer \
         and its driver"
    )
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
    // GPU 0 and its primary context (kept alive, and dropped last, by `_context`).
    let no_gpu = |e: CudaError| unavailable(describe(e));
    cust::init(CudaFlags::empty()).map_err(no_gpu)?;
    if Device::num_devices().map_err(no_gpu)? == 0 {
        return Err(unavailable("the driver sees no GPU".into()));
    }
    let device = Device::get_device(0).map_err(no_gpu)?;
    let _context = Context::new(device).map_err(no_gpu)?;
    let name = device.name().map_err(during("reading the GPU's name"))?;
    let attribute = |attr: DeviceAttribute| {
        device
            .get_attribute(attr)
            .map(|v| v.max(0) as u32)
            .map_err(|e| format!("reading {attr:?}: {}", describe(e)))
    };
    let major = attribute(DeviceAttribute::ComputeCapabilityMajor)?;
    let minor = attribute(DeviceAttribute::ComputeCapabilityMinor)?;
    // The module for the GPU's arch: 8.x runs the sm_80 PTX, 9.0 and newer the sm_90 PTX.
    let (arch, ptx) = match major {
        0..=7 => {
            return Err(format!(
                "{name} has compute capability {major}.{minor}; cp.async and mbarrier need 8.0 \
                 (sm_80, Ampere) or newer"
            ));
        }
        8 => ("sm_80", PTX_SM_80),
        _ => ("sm_90", PTX_SM_90),
    };
    let module =
        Module::from_ptx(ptx, &[]).map_err(during(&format!("loading the {arch} PTX on {name}")))?;
    let scale = module
        .get_function(SCALE.name())
        .map_err(during(&format!("finding `{}` in the PTX", SCALE.name())))?;
    let stream =
        Stream::new(StreamFlags::NON_BLOCKING, None).map_err(during("creating a stream"))?;

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
    let x_dev = DeviceBuffer::from_slice(&x).map_err(during("copying x to the GPU"))?;
    let y_dev =
        DeviceBuffer::<f32>::zeroed(n as usize).map_err(during("allocating y on the GPU"))?;
    let (x_ptr, y_ptr) = (x_dev.as_device_ptr(), y_dev.as_device_ptr());
    let blocks = n.div_ceil(TILE).min(528);
    // SAFETY: scale(x, y, n, alpha) reads n floats of x and writes n of y, which the buffers
    // hold (cuMemAlloc memory: 16-byte aligned); any grid of 1-D blocks with SHARED_BYTES of
    // dynamic shared memory. The arguments have the kernel's types (see `SCALE`).
    unsafe { launch!(scale<<<blocks, 256, SHARED_BYTES, stream>>>(x_ptr, y_ptr, n, alpha)) }
        .map_err(during("launching `scale`"))?;
    stream.synchronize().map_err(during("running `scale`"))?;
    let mut y = vec![0f32; n as usize];
    y_dev
        .copy_to(&mut y[..])
        .map_err(during("copying y back"))?;
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
