//! The library's self-test ([`super`]): every abstraction streams random
//! data through shared memory and must reproduce it bit for bit; `barrier_ops` must report
//! what the `Barrier` operations are specified to.

use super::math::{COLLECTIVE_THREADS, MATH_THREADS, math_entry_points};
use super::math_host::{MathKernel, MathProblem};
use super::mma::{MMA_SHARED_BYTES, MMA_THREADS, mma_entry_points};
use super::mma_host::MmaProblem;
use super::tile::{TILE_THREADS, tile_entry_points};
use super::tile_host::TileProblem;
use super::{
    BARRIER_OPS, BARRIER_OPS_OUTPUTS, BARRIER_OPS_THREADS, BarrierObservation, COPY_KERNELS,
    CopyForm, CopyKernel, HANG_KERNEL, HANG_THREADS, TILE_FLOATS, TILES_PER_BLOCK,
};
use crate::verify::host::Verifier;
use crate::verify::{GPU_CHECK_MIN_ELEMENTS, verify_bits};
use anyhow::{Context as _, Result};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{self, CheckReport, Mismatch, POISON};
use harness::experiment::{Experiment, Fault, Inputs, Problem, Role, Values, Work, Workload};
use ptx_builder::Arch;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::sync::LazyLock;
use std::time::Duration;

/// The self-test workload.
pub struct Selftest;

/// One self-test experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelftestExperiment {
    /// A copy kernel.
    Copy(&'static CopyKernel),
    /// `barrier_ops`.
    BarrierOps,
    /// `selftest_math` or `selftest_collectives`: `gpu::math` against f64, `gpu::reduce`
    /// against a host emulation.
    Math(MathKernel),
    /// `selftest_tile` (sm_90a): the register-tile verbs of `gpu::wgmma::Accumulator`
    /// against the host's computation from the tile in memory.
    Tile,
    /// `selftest_mma` (sm_90a): the multiply atom `gpu::wgmma::Wgmma` for each element type
    /// against `2 A B^T`, bit for bit.
    Mma,
}

static EXPERIMENTS: LazyLock<Vec<SelftestExperiment>> = LazyLock::new(|| {
    COPY_KERNELS
        .iter()
        .map(SelftestExperiment::Copy)
        .chain([
            SelftestExperiment::BarrierOps,
            SelftestExperiment::Math(MathKernel::Math),
            SelftestExperiment::Math(MathKernel::Collectives),
            SelftestExperiment::Tile,
            SelftestExperiment::Mma,
        ])
        .collect()
});

impl Experiment for SelftestExperiment {
    fn name(&self) -> &'static str {
        match self {
            SelftestExperiment::Copy(k) => k.name,
            SelftestExperiment::BarrierOps => BARRIER_OPS.name(),
            SelftestExperiment::Math(MathKernel::Math) => math_entry_points::selftest_math.name(),
            SelftestExperiment::Math(MathKernel::Collectives) => {
                math_entry_points::selftest_collectives.name()
            }
            SelftestExperiment::Tile => tile_entry_points::selftest_tile.name(),
            SelftestExperiment::Mma => mma_entry_points::selftest_mma.name(),
        }
    }
    fn role(&self) -> Role {
        Role::Library
    }
    fn style(&self) -> &'static str {
        match self {
            SelftestExperiment::Copy(k) => match k.form {
                CopyForm::ThreadPipeline { .. } => "thread_pipeline",
                CopyForm::BlockPipeline { .. } => "block_pipeline",
                CopyForm::WarpSpecialized { .. } => "warp_specialized",
                CopyForm::BarrierPerThread { .. } => "barrier",
                CopyForm::BarrierGroup => "barrier_group",
                CopyForm::BarrierUncounted => "barrier_uncounted",
                CopyForm::BulkBarrier { arriving: false } => "bulk_barrier",
                CopyForm::BulkBarrier { arriving: true } => "bulk_barrier_arriving",
                CopyForm::ZeroFill { .. } => "zero_fill",
            },
            SelftestExperiment::BarrierOps => "barrier_ops",
            SelftestExperiment::Math(MathKernel::Math) => "math",
            SelftestExperiment::Math(MathKernel::Collectives) => "collectives",
            SelftestExperiment::Tile => "tile",
            SelftestExperiment::Mma => "mma",
        }
    }
    fn stages(&self) -> Option<u32> {
        match self {
            SelftestExperiment::Copy(k) => Some(k.form.stages()),
            SelftestExperiment::BarrierOps
            | SelftestExperiment::Math(_)
            | SelftestExperiment::Tile
            | SelftestExperiment::Mma => None,
        }
    }
    fn threads(&self) -> Option<u32> {
        Some(match self {
            SelftestExperiment::Copy(k) => k.form.threads(),
            SelftestExperiment::BarrierOps => BARRIER_OPS_THREADS,
            SelftestExperiment::Math(MathKernel::Math) => MATH_THREADS,
            SelftestExperiment::Math(MathKernel::Collectives) => COLLECTIVE_THREADS,
            SelftestExperiment::Tile => TILE_THREADS,
            SelftestExperiment::Mma => MMA_THREADS,
        })
    }
    fn shared_bytes(&self) -> Option<u32> {
        Some(match self {
            SelftestExperiment::Copy(k) => k.form.shared_layout().bytes,
            SelftestExperiment::BarrierOps
            | SelftestExperiment::Math(_)
            | SelftestExperiment::Tile => 0,
            SelftestExperiment::Mma => MMA_SHARED_BYTES,
        })
    }
    fn archs(&self) -> &'static [Arch] {
        match self {
            SelftestExperiment::Copy(k) if k.form.needs_sm90() => &[Arch::Sm90],
            SelftestExperiment::Tile | SelftestExperiment::Mma => &[Arch::Sm90a],
            _ => &Arch::PORTABLE,
        }
    }
    fn summary(&self) -> &'static str {
        match self {
            SelftestExperiment::Copy(k) => match k.form {
                CopyForm::ThreadPipeline { .. } => "memcpy_async per thread into a ThreadPipeline",
                CopyForm::BlockPipeline { .. } => {
                    "memcpy_async over the block into a BlockPipeline"
                }
                CopyForm::WarpSpecialized { .. } => "producer warp -> consumer warp, BlockPipeline",
                CopyForm::BarrierPerThread { .. } => {
                    "memcpy_async per thread bound to Barriers (.noinc)"
                }
                CopyForm::BarrierGroup => "memcpy_async over the warp bound to Barriers (.noinc)",
                CopyForm::BarrierUncounted => {
                    "memcpy_async over the warp bound Uncounted (incrementing arrive)"
                }
                CopyForm::BulkBarrier { arriving: false } => {
                    "sm_90: one bulk copy per tile bound to Barriers (expect_tx)"
                }
                CopyForm::BulkBarrier { arriving: true } => {
                    "sm_90: one bulk copy per tile bound Arriving (arrive.expect_tx)"
                }
                CopyForm::ZeroFill { .. } => "memcpy_async_zfill into a BlockPipeline, any n",
            },
            SelftestExperiment::BarrierOps => "Barrier operations against their specification",
            SelftestExperiment::Math(MathKernel::Math) => {
                "gpu::math over its domains against f64, within each documented bound"
            }
            SelftestExperiment::Math(MathKernel::Collectives) => {
                "gpu::reduce shuffles, warp and block reductions, bit for bit"
            }
            SelftestExperiment::Tile => {
                "sm_90a: Accumulator row max/sum, scale_rows, exp2_scaled, to_a_fragment vs the host"
            }
            SelftestExperiment::Mma => {
                "sm_90a: Wgmma<E, 64> for BF16, FP16, E4M3, E5M2 (two k-tiles) vs 2 A B^T, exactly"
            }
        }
    }
}

/// The self-test's problem size: floats each copy kernel streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Floats(pub u32);

impl fmt::Display for Floats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n = {}", self.0)
    }
}

/// The most floats `--size` accepts for the self-test (1 GiB of input).
pub const MAX_FLOATS: u32 = 1 << 28;

impl Workload for Selftest {
    type Experiment = SelftestExperiment;
    type Size = Floats;
    type Problem = SelftestProblem;

    fn name(&self) -> &'static str {
        "selftest"
    }
    fn summary(&self) -> &'static str {
        "every library abstraction streams random data (checked bit for bit); Barrier ops vs spec"
    }
    fn experiments(&self) -> &'static [SelftestExperiment] {
        &EXPERIMENTS
    }
    fn helper_kernels(&self) -> &'static [&'static str] {
        const HELPERS: &[&str] = &[HANG_KERNEL.name(), verify_bits.name()];
        HELPERS
    }
    fn device_bytes(&self, size: Floats) -> u64 {
        // The input (at least one tile) and the largest output (whole tiles).
        let n = size.0.max(TILE_FLOATS) as u64;
        4 * n + 4 * n.div_ceil(TILE_FLOATS as u64) * TILE_FLOATS as u64
    }
    fn size_syntax(&self) -> &'static str {
        "floats each kernel copies: 1 to 268435456 (whole-tile kernels take it rounded down to \
         a multiple of 256, at least 256)"
    }
    fn parse_size(&self, text: &str) -> Result<Floats, String> {
        match text.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_FLOATS).contains(&n) => Ok(Floats(n)),
            _ => Err(format!(
                "`{text}` is not a count of floats from 1 to {MAX_FLOATS}"
            )),
        }
    }
    fn default_sizes(&self) -> Vec<Floats> {
        vec![Floats(20_000)]
    }
    fn test_cases(&self) -> Vec<(Values, Floats)> {
        let tile = TILE_FLOATS;
        let per_block = tile * TILES_PER_BLOCK;
        // 37 full blocks and a partial one; one tile; 600 blocks, more than the GPU runs at
        // once; and ragged sizes, which whole-tile kernels round (the last past
        // GPU_CHECK_MIN_ELEMENTS: compared on the GPU, zero tail included).
        let whole = 37 * per_block + 5 * tile;
        [whole, tile, 600 * per_block]
            .map(|n| (Values::Random, Floats(n)))
            .into_iter()
            .chain(
                [
                    whole - 37,
                    1,
                    tile - 1,
                    tile + 1,
                    3 * per_block + 7,
                    600 * per_block + 77,
                ]
                .map(|n| (Values::SmallIntegers, Floats(n))),
            )
            .collect()
    }
    fn prepare(&self, gpu: &Gpu, size: Floats, inputs: Inputs) -> Result<SelftestProblem> {
        // Whole-tile kernels may round a small n up to one tile: keep that much input.
        let len = size.0.max(TILE_FLOATS) as usize;
        let src = input_values(len, inputs);
        let on_gpu = if size.0 as usize >= GPU_CHECK_MIN_ELEMENTS {
            let longest = COPY_KERNELS
                .iter()
                .map(|k| k.output_len(floats_for(k, size.0)))
                .max()
                .unwrap_or(0);
            let mut expected = src[..size.0 as usize].to_vec();
            expected.resize(longest.max(expected.len()), 0.0);
            Some((
                gpu.upload(&expected, "the expected output")?,
                Verifier::new(gpu)?,
            ))
        } else {
            None
        };
        Ok(SelftestProblem {
            n: size.0,
            src_device: gpu.upload(&src, "the input")?,
            src,
            barrier_ops: gpu.entry_point(BARRIER_OPS)?,
            math: MathProblem::new(gpu, inputs.seed)?,
            // The kernel is in the sm_90a module only: elsewhere the experiment reports it
            // missing before it asks for this.
            tile: match gpu.info().specific {
                Some((Arch::Sm90a, _)) => Some(TileProblem::new(gpu, inputs.seed)?),
                _ => None,
            },
            mma: match gpu.info().specific {
                Some((Arch::Sm90a, _)) => Some(MmaProblem::new(gpu, inputs.seed)?),
                _ => None,
            },
            copied: None,
            observed: None,
            on_gpu,
        })
    }
}

/// The floats a copy kernel is given: random across many binades (signs included), or small
/// integers.
fn input_values(len: usize, inputs: Inputs) -> Vec<f32> {
    match inputs.values {
        Values::Random => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(inputs.seed);
            (0..len).map(|_| rng.gen_range(-1e6f32..1e6)).collect()
        }
        Values::SmallIntegers => inputs.values.generate(len, inputs.seed),
    }
}

/// The floats `kernel` copies when asked for `n`: all of them if it takes a ragged input,
/// else `n` rounded down to whole tiles (at least one).
pub fn floats_for(kernel: &CopyKernel, n: u32) -> u32 {
    if kernel.form.accepts_ragged() {
        n
    } else {
        (n / TILE_FLOATS).max(1) * TILE_FLOATS
    }
}

/// What `kernel` must write for `src`: `src`, then zeros to the end of the last tile.
pub fn expected(kernel: &CopyKernel, src: &[f32]) -> Vec<f32> {
    let mut out = src.to_vec();
    out.resize(kernel.output_len(src.len() as u32), 0.0);
    out
}

/// The copy kernels' parameters: `(src, dst, n)` (what their entries say, or
/// `gpu.entry_point` does not compile).
type CopyParams = (*const f32, *mut f32, u32);

/// The input on host and GPU, the kernels, and the output of the experiment being run.
pub struct SelftestProblem {
    n: u32,
    src: Vec<f32>,
    src_device: CudaSlice<f32>,
    barrier_ops: Kernel<(*mut u32,)>,
    /// A copy kernel's output.
    copied: Option<CudaSlice<f32>>,
    /// `barrier_ops`'s output.
    observed: Option<CudaSlice<u32>>,
    /// The math and collectives kernels, their inputs and outputs.
    math: MathProblem,
    /// The register-tile kernel, its input and output, where the sm_90a module is loaded.
    tile: Option<TileProblem>,
    /// The multiply-atom kernel, its input and output, where the sm_90a module is loaded.
    mma: Option<MmaProblem>,
    /// Past `GPU_CHECK_MIN_ELEMENTS` floats: what every copy kernel must write (the input,
    /// then zeros to the end of the last tile; a kernel's output is a prefix of it at such
    /// sizes) on the GPU, and the kernels that compare with it there.
    on_gpu: Option<(CudaSlice<f32>, Verifier)>,
}

impl SelftestProblem {
    /// The register-tile kernel's problem, which only a GPU with the sm_90a module has.
    fn tile(&mut self) -> Result<&mut TileProblem> {
        self.tile
            .as_mut()
            .context("`selftest_tile` is in the sm_90a module, which is not loaded")
    }

    /// The multiply-atom kernel's problem, which only a GPU with the sm_90a module has.
    fn mma(&mut self) -> Result<&mut MmaProblem> {
        self.mma
            .as_mut()
            .context("`selftest_mma` is in the sm_90a module, which is not loaded")
    }
}

/// What `barrier_ops` leaves in a word it did not write.
const UNWRITTEN: u32 = 0xdead_beef;

/// `buffer`, reallocated as `words` zeros unless it has that length, filled with `word`.
fn poisoned<'a, T: gpu_runtime::Word + gpu_runtime::cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    buffer: &'a mut Option<CudaSlice<T>>,
    words: usize,
    word: u32,
) -> Result<&'a mut CudaSlice<T>> {
    if buffer.as_ref().is_none_or(|d| d.len() != words) {
        *buffer = Some(gpu.zeros::<T>(words, "the output")?);
    }
    let dst = buffer.as_mut().expect("allocated above");
    gpu.fill_words(dst, word, "the output")?;
    Ok(dst)
}

/// The output of the last poisoned experiment of its kind.
fn prepared<T>(buffer: &mut Option<CudaSlice<T>>) -> Result<&mut CudaSlice<T>> {
    buffer
        .as_mut()
        .ok_or_else(|| anyhow::anyhow!("the output was not prepared (poison first)"))
}

impl Problem<SelftestExperiment> for SelftestProblem {
    fn poison(&mut self, gpu: &Gpu, experiment: &SelftestExperiment) -> Result<()> {
        match experiment {
            SelftestExperiment::Copy(k) => {
                let words = k.output_len(floats_for(k, self.n));
                poisoned(gpu, &mut self.copied, words, POISON.to_bits())?;
            }
            SelftestExperiment::BarrierOps => {
                poisoned(gpu, &mut self.observed, BARRIER_OPS_OUTPUTS, UNWRITTEN)?;
            }
            SelftestExperiment::Math(kernel) => self.math.poison(gpu, *kernel)?,
            SelftestExperiment::Tile => self.tile()?.poison(gpu)?,
            SelftestExperiment::Mma => self.mma()?.poison(gpu)?,
        }
        Ok(())
    }

    /// A copy kernel's entry point (the other experiments' kernels are their parts').
    type Resolved = Option<Kernel<CopyParams>>;

    fn resolve(
        &self,
        gpu: &Gpu,
        experiment: &SelftestExperiment,
    ) -> Result<Option<Kernel<CopyParams>>> {
        Ok(match experiment {
            SelftestExperiment::Copy(kernel) => Some(gpu.entry_point(kernel.entry)?),
            _ => None,
        })
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        experiment: &SelftestExperiment,
        resolved: &Option<Kernel<CopyParams>>,
    ) -> Result<()> {
        match experiment {
            SelftestExperiment::Copy(kernel) => {
                let function = resolved.as_ref().with_context(|| {
                    format!("`{}` launched without its entry point", kernel.name)
                })?;
                let n = floats_for(kernel, self.n);
                let form = kernel.form;
                let config = LaunchConfig::linear(
                    kernel.blocks(n),
                    form.threads(),
                    form.shared_layout().bytes,
                );
                let dst = prepared(&mut self.copied)?;
                // SAFETY: copy kernels take (src, dst, n); src holds max(n, 256) >= n floats
                // and dst output_len(n) (sized by `poison`), both 16-byte aligned; n is whole
                // tiles unless the form takes ragged input; the geometry is the table's for n.
                unsafe { function.launch(gpu, config, (&self.src_device, dst, n))? };
            }
            SelftestExperiment::BarrierOps => {
                let config = LaunchConfig::linear(1, BARRIER_OPS_THREADS, 0);
                let out = prepared(&mut self.observed)?;
                // SAFETY: barrier_ops(out) writes BARRIER_OPS_OUTPUTS words, which `out`
                // holds (sized by `poison`); one block of BARRIER_OPS_THREADS.
                unsafe { self.barrier_ops.launch(gpu, config, (out,))? };
            }
            SelftestExperiment::Math(kernel) => self.math.launch(gpu, *kernel)?,
            SelftestExperiment::Tile => self.tile()?.launch(gpu)?,
            SelftestExperiment::Mma => self.mma()?.launch(gpu)?,
        }
        Ok(())
    }

    fn check(&mut self, gpu: &Gpu, experiment: &SelftestExperiment) -> Result<CheckReport> {
        Ok(match experiment {
            SelftestExperiment::Copy(kernel) => match &mut self.on_gpu {
                Some((expected, verifier)) => {
                    verifier.bits(gpu, prepared(&mut self.copied)?, expected)?
                }
                None => {
                    let out = gpu.download(prepared(&mut self.copied)?, "the output")?;
                    let n = floats_for(kernel, self.n) as usize;
                    check::check_exact(&out, &expected(kernel, &self.src[..n]))
                }
            },
            SelftestExperiment::BarrierOps => {
                check_observations(&gpu.download(prepared(&mut self.observed)?, "the output")?)
            }
            SelftestExperiment::Math(kernel) => self.math.check(gpu, *kernel)?,
            SelftestExperiment::Tile => self.tile()?.check(gpu)?,
            SelftestExperiment::Mma => self.mma()?.check(gpu)?,
        })
    }

    /// A copy's output: the element in the middle, or the last tile. `barrier_ops`'s (one
    /// block writes every observation, checked in slot order): the observation in the
    /// middle, or every one from there on left unwritten.
    fn plant(&mut self, gpu: &Gpu, experiment: &SelftestExperiment, fault: Fault) -> Result<usize> {
        match experiment {
            SelftestExperiment::Copy(_) => {
                let dst = prepared(&mut self.copied)?;
                let len = dst.len();
                let (start, values) = match fault {
                    Fault::WrongElement => {
                        let got = gpu.download_range(dst, len / 2..len / 2 + 1, "the output")?[0];
                        (len / 2, vec![got + 1000.0 * got.abs().max(1.0)])
                    }
                    Fault::UnwrittenTile => {
                        let start = (len - 1) / TILE_FLOATS as usize * TILE_FLOATS as usize;
                        (start, vec![POISON; len - start])
                    }
                };
                gpu.upload_into(&values, dst, start, "a fault in the output")?;
                Ok(start)
            }
            SelftestExperiment::BarrierOps => {
                let middle = BarrierObservation::ALL[BARRIER_OPS_OUTPUTS / 2];
                let values = match fault {
                    Fault::WrongElement => vec![middle.expected().wrapping_add(1000)],
                    Fault::UnwrittenTile => vec![UNWRITTEN; BARRIER_OPS_OUTPUTS - middle.slot()],
                };
                let out = prepared(&mut self.observed)?;
                gpu.upload_into(&values, out, middle.slot(), "a fault in the output")?;
                Ok(middle.slot())
            }
            SelftestExperiment::Math(kernel) => self.math.plant(gpu, *kernel, fault),
            SelftestExperiment::Tile => self.tile()?.plant(gpu, fault),
            SelftestExperiment::Mma => self.mma()?.plant(gpu, fault),
        }
    }

    fn note(
        &mut self,
        _: &Gpu,
        experiment: &SelftestExperiment,
        _: &Option<Kernel<CopyParams>>,
    ) -> Result<Option<String>> {
        Ok(match experiment {
            SelftestExperiment::Math(MathKernel::Math) => self.math.note.clone(),
            SelftestExperiment::Tile => self.tile.as_ref().and_then(|t| t.note.clone()),
            _ => None,
        })
    }

    fn work(&self) -> Work {
        Work::Bytes(2 * 4 * self.n as u64)
    }
}

/// Launches the kernel that waits forever ([`HANG_KERNEL`]) and waits for it under the
/// watchdog with `limit`: the result is the watchdog's error (or, if the GPU somehow finished
/// it, an error saying so).
pub fn run_hang(gpu: &Gpu, limit: Duration) -> Result<()> {
    let _limit = gpu.time_limit_for(limit);
    let kernel = gpu.entry_point(HANG_KERNEL)?;
    // SAFETY: hang_missing_arrival() takes no parameters and uses only its static shared
    // memory; one block of HANG_THREADS threads.
    unsafe { kernel.launch(gpu, LaunchConfig::linear(1, HANG_THREADS, 0), ())? };
    let name = HANG_KERNEL.name();
    gpu.synchronize(|| format!("running `{name}`, which waits forever on purpose"))?;
    anyhow::bail!("`{name}` finished, but it waits for an arrival that never comes")
}

/// Compares what `barrier_ops` wrote with each observation's specified value.
pub fn check_observations(words: &[u32]) -> CheckReport {
    let mut report = CheckReport::default();
    for what in BarrierObservation::ALL {
        let got = words.get(what.slot()).copied().unwrap_or(UNWRITTEN);
        if got == what.expected() {
            continue;
        }
        if got == UNWRITTEN {
            report.unwritten += 1;
        } else {
            report.wrong += 1;
        }
        report.first_failure.get_or_insert(Mismatch {
            index: what.slot(),
            got: got as f64,
            expected: what.expected() as f64,
            what: Some(what.describe()),
        });
    }
    report.passed = report.first_failure.is_none();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_pads_the_last_tile_with_zeros() {
        let kernel = crate::selftest::find("copy_zfill_4").unwrap();
        let src: Vec<f32> = (1..=300).map(|x| x as f32).collect();
        let want = expected(kernel, &src);
        assert_eq!(want.len(), 512);
        assert_eq!(&want[..300], &src[..]);
        assert!(want[300..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn whole_tile_kernels_round_n() {
        let whole = crate::selftest::find("copy_block_pipeline_2").unwrap();
        let ragged = crate::selftest::find("copy_zfill_16").unwrap();
        assert_eq!(floats_for(whole, 1), 256);
        assert_eq!(floats_for(whole, 20_000), 19_968);
        assert_eq!(floats_for(ragged, 20_000), 20_000);
        let src: Vec<f32> = (0..512).map(|x| x as f32).collect();
        assert_eq!(expected(whole, &src), src);
    }

    #[test]
    fn observations_are_checked_one_by_one() {
        let mut words: Vec<u32> = BarrierObservation::ALL
            .iter()
            .map(|o| o.expected())
            .collect();
        assert!(check_observations(&words).passed);
        words[BarrierObservation::ParityOneAfterThreePhases.slot()] = 1;
        words[BarrierObservation::ReinitializedArriveAndWait.slot()] = UNWRITTEN;
        let report = check_observations(&words);
        assert!(!report.passed);
        assert_eq!((report.wrong, report.unwritten), (1, 1));
        assert!(
            report.summary().contains("parity 1 reads incomplete"),
            "{}",
            report.summary()
        );
    }

    #[test]
    fn every_kernel_and_barrier_ops_are_experiments() {
        let names: Vec<&str> = Selftest.experiments().iter().map(|e| e.name()).collect();
        assert_eq!(names.len(), COPY_KERNELS.len() + 5);
        assert!(names.contains(&"selftest_math") && names.contains(&"selftest_collectives"));
        assert!(names.contains(&"selftest_tile"));
        let tile = Selftest
            .experiments()
            .iter()
            .find(|e| e.name() == "selftest_tile");
        assert_eq!(tile.unwrap().archs(), [Arch::Sm90a]);
        let mma = Selftest
            .experiments()
            .iter()
            .find(|e| e.name() == "selftest_mma");
        assert_eq!(mma.unwrap().archs(), [Arch::Sm90a]);
        assert_eq!(mma.unwrap().shared_bytes(), Some(16384));
        assert!(names.contains(&BARRIER_OPS.name()));
    }
}
