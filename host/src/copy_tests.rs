//! Running the library's test kernels (`gpu::copy_test`) and knowing what they must produce.

use crate::check::{self, CheckReport, POISON};
use crate::device::{CudaContext, Gpu};
use anyhow::{Result, ensure};
use cust::launch;
use cust::memory::{CopyDestination, DeviceBuffer};
use gpu::copy_test::{
    BARRIER_OPS, BARRIER_OPS_OUTPUTS, BARRIER_OPS_THREADS, CopyTestKernel, TILE_FLOATS,
};

pub use gpu::copy_test::{BARRIER_OPS_EXPECTED, COPY_TEST_KERNELS};

/// `n` random floats spanning many binades, signs included, from `seed`.
pub fn random_input(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-1e6f32..1e6)).collect()
}

/// What `kernel` must write for input `src`: `src`, then zeros to the end of the last tile.
pub fn expected(kernel: &CopyTestKernel, src: &[f32]) -> Vec<f32> {
    let mut out = src.to_vec();
    out.resize(kernel.output_len(src.len() as u32), 0.0);
    out
}

/// Streams `src` through `kernel` into a poisoned output and returns the output.
pub fn run(gpu: &Gpu, kernel: &CopyTestKernel, src: &[f32]) -> Result<Vec<f32>> {
    let n = u32::try_from(src.len())?;
    ensure!(n > 0, "nothing to copy");
    ensure!(
        kernel.accepts_ragged() || n % TILE_FLOATS == 0,
        "`{}` copies whole tiles: n must be a multiple of {TILE_FLOATS}",
        kernel.name
    );
    let src_dev = DeviceBuffer::from_slice(src).during(|| "copying the input".into())?;
    let dst_dev = DeviceBuffer::from_slice(&vec![POISON; kernel.output_len(n)])
        .during(|| "allocating the output".into())?;
    let function = gpu.function(kernel.name)?;
    let stream = gpu.stream();
    let (s, d) = (src_dev.as_device_ptr(), dst_dev.as_device_ptr());
    // SAFETY: the kernel takes (src: *const f32, dst: *mut f32, n: u32); the buffers hold n and
    // output_len(n) floats; geometry from the kernel's table entry.
    unsafe {
        launch!(function<<<kernel.blocks(n), kernel.threads(), kernel.dynamic_shared_bytes(), stream>>>(s, d, n))
    }
    .during(|| format!("launching `{}`", kernel.name))?;
    gpu.synchronize(|| format!("running `{}`", kernel.name))?;
    let mut out = vec![0.0f32; kernel.output_len(n)];
    dst_dev
        .copy_to(&mut out[..])
        .during(|| "copying the output back".into())?;
    Ok(out)
}

/// Runs `kernel` on `src` and compares bit for bit with [`expected`].
pub fn run_and_check(gpu: &Gpu, kernel: &CopyTestKernel, src: &[f32]) -> Result<CheckReport> {
    let out = run(gpu, kernel, src)?;
    Ok(check::check_exact(&out, &expected(kernel, src)))
}

/// Runs `barrier_ops` and returns its observations, in the order of
/// [`BARRIER_OPS_EXPECTED`].
pub fn run_barrier_ops(gpu: &Gpu) -> Result<Vec<u32>> {
    const UNWRITTEN: u32 = 0xdead_beef;
    let out = DeviceBuffer::from_slice(&[UNWRITTEN; BARRIER_OPS_OUTPUTS])
        .during(|| "allocating the output".into())?;
    let function = gpu.function(BARRIER_OPS)?;
    let stream = gpu.stream();
    let o = out.as_device_ptr();
    // SAFETY: barrier_ops(out: *mut u32) writes BARRIER_OPS_OUTPUTS words; one block.
    unsafe { launch!(function<<<1, BARRIER_OPS_THREADS, 0, stream>>>(o)) }
        .during(|| format!("launching `{BARRIER_OPS}`"))?;
    gpu.synchronize(|| format!("running `{BARRIER_OPS}`"))?;
    let mut words = vec![0u32; BARRIER_OPS_OUTPUTS];
    out.copy_to(&mut words[..])
        .during(|| "copying the output back".into())?;
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_pads_the_last_tile_with_zeros() {
        let kernel = gpu::copy_test::find("copy_zfill_4").unwrap();
        let src: Vec<f32> = (1..=300).map(|x| x as f32).collect();
        let want = expected(kernel, &src);
        assert_eq!(want.len(), 512);
        assert_eq!(&want[..300], &src[..]);
        assert!(want[300..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn expected_of_whole_tiles_is_the_input() {
        let kernel = gpu::copy_test::find("copy_block_pipeline_2").unwrap();
        let src: Vec<f32> = (0..512).map(|x| x as f32).collect();
        assert_eq!(expected(kernel, &src), src);
    }
}
