//! Streaming ([`super`]): copy `n` floats, far past L2, through shared memory
//! with plain loads, `cp.async` and the copy engine (1-D bulk and 2-D tensor copies), against the driver's device-to-device
//! copy (`cuMemcpyDtoDAsync`, what `cudaMemcpy` does) on the same buffers; every result is
//! checked bit for bit.

use super::{STREAM_KERNELS, StreamEntry, StreamKernel, StreamStyle, TensorView};
use crate::verify::host::Verifier;
use crate::verify::{GPU_CHECK_MIN_ELEMENTS, verify_bits};
use anyhow::Result;
use gpu::schedule::TileQueueState;
use gpu::tensor_map::TensorMap;
use gpu_runtime::cudarc::driver::{CudaSlice, sys};
use gpu_runtime::tensor_map::{Swizzle, TensorMaps};
use gpu_runtime::{Context as _, Gpu, Kernel, LaunchConfig};
use harness::check::{self, CheckReport, Mismatch, POISON};
use harness::experiment::{Experiment, Fault, Inputs, Problem, Role, Values, Work, Workload};
use ptx_builder::Arch;
use std::fmt;
use std::sync::LazyLock;

/// The streaming workload.
pub struct Stream;

/// One streaming experiment: the driver's copy, or a kernel of ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamExperiment {
    /// `cuMemcpyDtoDAsync`: the baseline.
    DriverCopy,
    /// A kernel of ours.
    Kernel(&'static StreamKernel),
}

static EXPERIMENTS: LazyLock<Vec<StreamExperiment>> = LazyLock::new(|| {
    std::iter::once(StreamExperiment::DriverCopy)
        .chain(STREAM_KERNELS.iter().map(StreamExperiment::Kernel))
        .collect()
});

impl Experiment for StreamExperiment {
    fn name(&self) -> &'static str {
        match self {
            StreamExperiment::DriverCopy => "memcpy_dtod",
            StreamExperiment::Kernel(k) => k.name,
        }
    }
    fn role(&self) -> Role {
        match self {
            StreamExperiment::DriverCopy => Role::Baseline,
            StreamExperiment::Kernel(k) if k.style == StreamStyle::Plain => Role::RawPtx,
            StreamExperiment::Kernel(_) => Role::Library,
        }
    }
    fn style(&self) -> &'static str {
        match self {
            StreamExperiment::DriverCopy => "driver",
            StreamExperiment::Kernel(k) => k.style.label(),
        }
    }
    fn stages(&self) -> Option<u32> {
        match self {
            StreamExperiment::Kernel(k) if k.style.stages() > 0 => Some(k.style.stages()),
            _ => None,
        }
    }
    fn threads(&self) -> Option<u32> {
        match self {
            StreamExperiment::DriverCopy => None,
            StreamExperiment::Kernel(k) => Some(k.threads),
        }
    }
    fn shared_bytes(&self) -> Option<u32> {
        match self {
            StreamExperiment::DriverCopy => None,
            StreamExperiment::Kernel(k) => Some(k.shared_bytes()),
        }
    }
    fn summary(&self) -> &'static str {
        match self {
            StreamExperiment::DriverCopy => "cuMemcpyDtoDAsync (cudaMemcpy device to device)",
            StreamExperiment::Kernel(k) => k.summary(),
        }
    }
    fn archs(&self) -> &'static [Arch] {
        match self {
            StreamExperiment::Kernel(k) if k.needs_sm90() => &[Arch::Sm90],
            _ => &Arch::PORTABLE,
        }
    }
}

/// The streaming problem's size: floats copied (a multiple of 4: 16-byte chunks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Floats(pub u32);

impl fmt::Display for Floats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0 as u64 * 4;
        if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
            write!(f, "{} GiB", bytes >> 30)
        } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
            write!(f, "{} MiB", bytes >> 20)
        } else {
            write!(f, "n = {}", self.0)
        }
    }
}

/// Reads a count of floats (`1000000`) or a size in bytes (`256MiB`, `2GiB`).
pub fn parse_floats(text: &str) -> Result<Floats, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], Some(t[i..].trim())),
        None => (t, None),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a count of floats or a size like 2GiB"))?;
    let floats = match unit {
        None => value,
        Some(u) => {
            let scale = match u.to_ascii_lowercase().as_str() {
                "kib" => 1u64 << 10,
                "mib" => 1 << 20,
                "gib" => 1 << 30,
                _ => return Err(format!("`{text}`: the unit is KiB, MiB or GiB")),
            };
            value * scale / 4
        }
    };
    if floats == 0 || floats % 4 != 0 {
        return Err(format!(
            "`{text}` is {floats} floats: a positive multiple of 4 (16-byte chunks) is needed"
        ));
    }
    if floats > u32::MAX as u64 - 3 {
        return Err(format!("`{text}` is too large: at most 16 GiB"));
    }
    Ok(Floats(floats as u32))
}

impl Workload for Stream {
    type Experiment = StreamExperiment;
    type Size = Floats;
    type Problem = StreamProblem;

    fn name(&self) -> &'static str {
        "stream"
    }
    fn summary(&self) -> &'static str {
        "y = x far past L2 through shared memory: plain, cp.async, sm_90 bulk and tensor copies vs cudaMemcpy"
    }
    fn experiments(&self) -> &'static [StreamExperiment] {
        &EXPERIMENTS
    }
    fn helper_kernels(&self) -> &'static [&'static str] {
        const HELPERS: &[&str] = &[verify_bits.name()];
        HELPERS
    }
    fn device_bytes(&self, size: Floats) -> u64 {
        8 * size.0 as u64
    }
    fn size_syntax(&self) -> &'static str {
        "floats (a multiple of 4) or bytes with KiB/MiB/GiB, up to 16 GiB"
    }
    fn parse_size(&self, text: &str) -> Result<Floats, String> {
        parse_floats(text)
    }
    fn default_sizes(&self) -> Vec<Floats> {
        vec![Floats(1 << 29)]
    }
    fn test_cases(&self) -> Vec<(Values, Floats)> {
        // One chunk; less than a tile; whole tiles and a ragged last one; several MiB.
        [4, 1000, 8192 * 5 + 4, (3 << 20) + 12]
            .map(|n| (Values::Random, Floats(n)))
            .into_iter()
            .chain([(Values::SmallIntegers, Floats(65540))])
            .collect()
    }
    fn prepare(&self, gpu: &Gpu, size: Floats, inputs: Inputs) -> Result<StreamProblem> {
        let x = random_bits(size.0 as usize, inputs);
        Ok(StreamProblem {
            n: size.0,
            x_device: gpu.upload(&x, "x")?,
            y: gpu.zeros(size.0 as usize, "y")?,
            queue: gpu.zeros(TileQueueState::WORDS, "the tile queue")?,
            x,
            maps: TensorMaps::default(),
            verifier: if size.0 as usize >= GPU_CHECK_MIN_ELEMENTS {
                Some(Verifier::new(gpu)?)
            } else {
                None
            },
        })
    }
}

/// A stream kernel resolved once, with its parameter types.
pub enum LoadedEntry {
    /// Source and destination by address.
    Pointers(Kernel<(*const f32, *mut f32, u32)>),
    /// By address, tiles from a queue.
    PointersQueued(Kernel<(*const f32, *mut f32, u32, *mut TileQueueState)>),
    /// By tensor map, tiles from a queue.
    TensorMapsQueued(Kernel<(TensorMap, TensorMap, u32, *mut TileQueueState)>),
}

impl LoadedEntry {
    fn resolve(gpu: &Gpu, kernel: &StreamKernel) -> Result<LoadedEntry> {
        Ok(match kernel.entry {
            StreamEntry::Pointers(entry) => LoadedEntry::Pointers(gpu.entry_point(entry)?),
            StreamEntry::PointersQueued(entry) => {
                LoadedEntry::PointersQueued(gpu.entry_point(entry)?)
            }
            StreamEntry::TensorMapsQueued(entry) => {
                LoadedEntry::TensorMapsQueued(gpu.entry_point(entry)?)
            }
        })
    }
}

/// `len` finite floats from `inputs.seed` (a xorshift: gigabytes of input in a second), or
/// small integers.
fn random_bits(len: usize, inputs: Inputs) -> Vec<f32> {
    if inputs.values == Values::SmallIntegers {
        return inputs.values.generate(len, inputs.seed);
    }
    let mut state = inputs.seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Sign and mantissa random, exponent in [2^-63, 2^64): finite, never the poison.
            let bits = (state as u32 & 0x807f_ffff) | (((state >> 40) as u32 & 0x7f) + 64) << 23;
            f32::from_bits(bits)
        })
        .collect()
}

/// `report`, failed if the tile queue's state (`[next, retired]`) is not back at zero after a
/// launch: the next launch would find no tiles.
fn queue_left_zeroed(mut report: CheckReport, state: &[u32]) -> CheckReport {
    if let Some((index, &word)) = state.iter().enumerate().find(|(_, w)| **w != 0) {
        report.passed = false;
        report.wrong += 1;
        report.first_failure.get_or_insert(Mismatch {
            index,
            got: word as f64,
            expected: 0.0,
            what: Some("tile queue state, not reset by the launch"),
        });
    }
    report
}

/// x on the host and the GPU, y, and the queue the kernels take tiles from.
pub struct StreamProblem {
    n: u32,
    x: Vec<f32>,
    x_device: CudaSlice<f32>,
    y: CudaSlice<f32>,
    /// A `TileQueueState`: zeroed once here, and left zeroed by every launch.
    queue: CudaSlice<u32>,
    /// The tensor kernels' maps of x and y, encoded at their first launch.
    maps: TensorMaps,
    /// Compares y with x on the GPU, past `GPU_CHECK_MIN_ELEMENTS` floats.
    verifier: Option<Verifier>,
}

impl Problem<StreamExperiment> for StreamProblem {
    fn poison(&mut self, gpu: &Gpu, _: &StreamExperiment) -> Result<()> {
        // The queue too: one kernel that leaves it set must not fail the next ones.
        gpu.fill_words(&mut self.queue, 0, "the tile queue")?;
        Ok(gpu.fill_words(&mut self.y, POISON.to_bits(), "y")?)
    }

    /// A kernel's entry point (none for the driver's copy).
    type Resolved = Option<LoadedEntry>;

    fn resolve(&self, gpu: &Gpu, experiment: &StreamExperiment) -> Result<Option<LoadedEntry>> {
        Ok(match experiment {
            StreamExperiment::DriverCopy => None,
            StreamExperiment::Kernel(kernel) => Some(LoadedEntry::resolve(gpu, kernel)?),
        })
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        experiment: &StreamExperiment,
        entry: &Option<LoadedEntry>,
    ) -> Result<()> {
        match experiment {
            StreamExperiment::DriverCopy => {
                let (x, y) = (gpu.address(&self.x_device), gpu.address(&self.y));
                // SAFETY: both buffers hold n floats; the copy is queued on the GPU's stream.
                unsafe {
                    sys::cuMemcpyDtoDAsync_v2(y, x, self.n as usize * 4, gpu.stream().cu_stream())
                }
                .result()
                .during(|| "copying x to y (cuMemcpyDtoDAsync)".into())?;
            }
            StreamExperiment::Kernel(kernel) => {
                let config = LaunchConfig::linear(
                    gpu.info().multiprocessors * kernel.blocks_per_sm,
                    kernel.threads,
                    kernel.shared_bytes(),
                );
                let Some(entry) = entry else {
                    anyhow::bail!("`{}` launched without its entry point", kernel.name);
                };
                let (x, y, n, queue) = (&self.x_device, &mut self.y, self.n, &mut self.queue);
                // SAFETY (each launch): stream kernels take (x, y, n) with n floats in each
                // buffer (16-byte aligned, n % 4 == 0 by parse_floats) — as pointers, or
                // (tensor kernels) as maps of the view and box `TensorView::of` gives for
                // their tile — then, where the table says so, the queue's state (zeroed at
                // allocation, left zeroed by each launch, used by one launch at a time on the
                // one stream); any 1-D grid; the table's block and shared memory; sm_90
                // kernels are resolved only on the sm_90 module (`measure` resolves a kernel only
                // on a module of its archs).
                match entry {
                    LoadedEntry::Pointers(k) => unsafe { k.launch(gpu, config, (x, y, n))? },
                    LoadedEntry::PointersQueued(k) => unsafe {
                        k.launch(gpu, config, (x, y, n, queue))?
                    },
                    LoadedEntry::TensorMapsQueued(k) => {
                        // Rows of `row_floats`, boxes of `box_rows` rows.
                        let view = TensorView::of(n, kernel.tile_floats());
                        let map = |address| {
                            self.maps.f32_matrix(
                                address,
                                (view.row_floats, view.rows),
                                (view.row_floats, view.box_rows),
                                Swizzle::None,
                            )
                        };
                        let (x_map, y_map) = (map(gpu.address(x))?, map(gpu.address(y))?);
                        unsafe { k.launch(gpu, config, (&x_map, &y_map, n, queue))? }
                    }
                }
            }
        }
        Ok(())
    }

    fn check(&mut self, gpu: &Gpu, experiment: &StreamExperiment) -> Result<CheckReport> {
        let report = match &mut self.verifier {
            Some(verifier) => verifier.bits(gpu, &self.y, &self.x_device)?,
            None => check::check_exact(&gpu.download(&self.y, "y")?, &self.x),
        };
        match experiment {
            StreamExperiment::Kernel(k) if k.takes_queue() => Ok(queue_left_zeroed(
                report,
                &gpu.download(&self.queue, "the tile queue")?,
            )),
            _ => Ok(report),
        }
    }

    /// In y: an element in the middle, or the last tile the kernel copies (for the plain
    /// kernel one block's pass of 16-byte chunks, for the driver's copy 256 floats).
    fn plant(&mut self, gpu: &Gpu, experiment: &StreamExperiment, fault: Fault) -> Result<usize> {
        let n = self.n as usize;
        let (start, values) = match fault {
            Fault::WrongElement => {
                let (index, x) = (n / 2, self.x[n / 2]);
                // Any other bits fail the check; these are finite too.
                (index, vec![x + 1000.0 * x.abs().max(1.0)])
            }
            Fault::UnwrittenTile => {
                let tile = match experiment {
                    StreamExperiment::DriverCopy => 256,
                    StreamExperiment::Kernel(k) => match k.style {
                        StreamStyle::Plain => k.threads * k.tile_floats(),
                        StreamStyle::Tensor { .. } => {
                            TensorView::of(self.n, k.tile_floats()).box_floats()
                        }
                        _ => k.tile_floats(),
                    },
                } as usize;
                let start = (n - 1) / tile * tile;
                (start, vec![POISON; n - start])
            }
        };
        gpu.upload_into(&values, &mut self.y, start, "a fault in y")?;
        Ok(start)
    }

    fn work(&self) -> Work {
        Work::Bytes(8 * self.n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_or_say_why_not() {
        assert_eq!(parse_floats("2GiB").unwrap(), Floats(1 << 29));
        assert_eq!(parse_floats("256MiB").unwrap(), Floats(1 << 26));
        assert_eq!(parse_floats("1000").unwrap(), Floats(1000));
        assert!(parse_floats("1001").unwrap_err().contains("multiple of 4"));
        assert!(parse_floats("0").unwrap_err().contains("positive"));
        assert!(parse_floats("2TB").unwrap_err().contains("KiB, MiB or GiB"));
        assert!(parse_floats("17GiB").unwrap_err().contains("too large"));
        assert!(parse_floats("-4").unwrap_err().contains("not a count"));
        assert_eq!(Floats(1 << 29).to_string(), "2 GiB");
        assert_eq!(Floats(1000).to_string(), "n = 1000");
    }

    #[test]
    fn random_bits_are_finite_and_seeded() {
        let inputs = Inputs {
            seed: 9,
            values: Values::Random,
        };
        let x = random_bits(100_000, inputs);
        assert!(x.iter().all(|v| v.is_finite() && !check::is_poison(*v)));
        assert_eq!(x, random_bits(100_000, inputs));
        assert!(x.iter().any(|v| v.is_sign_negative()));
    }

    #[test]
    fn a_queue_not_reset_fails_the_check() {
        let exact = check::check_exact(&[1.0, 2.0], &[1.0, 2.0]);
        assert!(queue_left_zeroed(exact.clone(), &[0, 0]).passed);
        let left = queue_left_zeroed(exact.clone(), &[0, 264]);
        assert!(!left.passed);
        let first = left.first_failure.as_ref().unwrap();
        assert_eq!((first.index, first.got), (1, 264.0));
        assert!(left.summary().contains("tile queue"), "{}", left.summary());
        // A wrong y stays the first failure reported.
        let wrong = check::check_exact(&[1.0, 3.0], &[1.0, 2.0]);
        let both = queue_left_zeroed(wrong, &[7, 0]);
        assert_eq!(both.first_failure.unwrap().index, 1);
        assert_eq!(both.wrong, 2);
    }

    #[test]
    fn queued_kernels_have_a_strided_twin() {
        let strided: Vec<_> = STREAM_KERNELS
            .iter()
            .filter(|k| !k.takes_queue() && k.style != StreamStyle::Plain)
            .collect();
        assert!(!strided.is_empty());
        for s in strided {
            let twin = s.name.strip_suffix("_strided").expect(s.name);
            let q = STREAM_KERNELS.iter().find(|k| k.name == twin).expect(twin);
            assert!(q.takes_queue());
            assert_eq!(
                (q.style, q.threads, q.blocks_per_sm, q.tile_bytes),
                (s.style, s.threads, s.blocks_per_sm, s.tile_bytes)
            );
        }
    }

    #[test]
    fn the_driver_copy_is_the_baseline_and_bulk_kernels_need_sm90() {
        assert_eq!(harness::experiment::baseline_of(&Stream), "memcpy_dtod");
        for e in Workload::experiments(&Stream) {
            if e.name().starts_with("stream_bulk") || e.name().starts_with("stream_tensor") {
                assert_eq!(e.archs(), [Arch::Sm90]);
            } else {
                assert_eq!(e.archs(), Arch::PORTABLE);
            }
        }
    }
}
