//! The host half of the register-tile self-test ([`super::tile`]): the input, what every
//! thread must hold after each verb (computed from the tiles in memory: the rows through
//! `Accumulator::position`, the A fragments through `AFragment::position`, the PTX ISA's
//! layout), and the check.

use super::math_host::ulps_ftz;
use super::tile::{
    TILE_ELEMENTS, TILE_FRAGMENTS, TILE_INPUT_LEN, TILE_N, TILE_OUTPUT_LEN, TILE_OUTPUTS,
    TILE_REGS, TILE_ROWS_AT, TILE_THREADS, segment_start, tile_entry_points,
};
use anyhow::Result;
use gpu::wgmma::{AFragment, Accumulator, Bf16, F16};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{CheckReport, Mismatch, POISON};
use harness::experiment::Fault;
use rand::{Rng, SeedableRng};

type Tile = Accumulator<TILE_REGS>;

/// The segment of [`TILE_OUTPUTS`] checked within a bound rather than bit for bit.
const EXP2_SEGMENT: usize = 4;
/// `exp2_scaled`'s bound in ulp: the self-test's bound of `gpu::math::exp2` (CUDA documents
/// 2 for `ex2.approx`).
const EXP2_ULPS: f64 = 3.0;

/// The kernel's input and expected output, and its buffers on the GPU.
pub struct TileProblem {
    x_device: CudaSlice<f32>,
    kernel: Kernel<(*const f32, *mut u32)>,
    out: CudaSlice<u32>,
    expected: Vec<u32>,
    /// Per word of the `exp2_scaled` segment: the f64 result and the error allowed.
    exp2: Vec<(f64, f64)>,
    /// What the last check measured: `exp2_scaled`'s largest error over its bound.
    pub note: Option<String>,
}

impl TileProblem {
    /// Uploads the input (from `seed`) and allocates the output. Only where the sm_90a
    /// module is loaded: the kernel is in no other.
    pub fn new(gpu: &Gpu, seed: u64) -> Result<TileProblem> {
        let x = tile_inputs(seed);
        let (expected, exp2) = expected_tile(&x);
        Ok(TileProblem {
            x_device: gpu.upload(&x, "the register-tile inputs")?,
            kernel: gpu.entry_point(tile_entry_points::selftest_tile)?,
            out: gpu.zeros(TILE_OUTPUT_LEN as usize, "the register-tile outputs")?,
            expected,
            exp2,
            note: None,
        })
    }

    /// Fills the output with the poison.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.fill_words(&mut self.out, POISON.to_bits(), "the register-tile outputs")?;
        Ok(())
    }

    /// Queues the kernel.
    pub fn launch(&mut self, gpu: &Gpu) -> Result<()> {
        let config = LaunchConfig::linear(1, TILE_THREADS, 0);
        // SAFETY: selftest_tile(x, out): one block of TILE_THREADS; `x` holds TILE_INPUT_LEN
        // floats, `out` TILE_OUTPUT_LEN words.
        unsafe {
            self.kernel
                .launch(gpu, config, (&self.x_device, &mut self.out))?
        };
        Ok(())
    }

    /// Downloads the output and checks it.
    pub fn check(&mut self, gpu: &Gpu) -> Result<CheckReport> {
        let out = gpu.download(&self.out, "the register-tile outputs")?;
        let (report, worst) = check_tile(&out, &self.expected, &self.exp2);
        self.note = Some(format!("exp2_scaled largest error / bound: {worst:.2}"));
        Ok(report)
    }

    /// Plants `fault` (the check runs in index order): one thread's `row_sum` off by a bit
    /// of its mantissa, or the whole last segment (`to_a_fragment::<F16>`) unwritten.
    pub fn plant(&mut self, gpu: &Gpu, fault: Fault) -> Result<usize> {
        let (start, values) = match fault {
            Fault::WrongElement => {
                let at = (segment_start(2) + 2 * 64 + 1) as usize;
                (at, vec![self.expected[at] ^ 0x0040_0000])
            }
            Fault::UnwrittenTile => {
                let start = segment_start(TILE_OUTPUTS.len() - 1) as usize;
                (start, vec![POISON.to_bits(); self.expected.len() - start])
            }
        };
        gpu.upload_into(&values, &mut self.out, start, "a fault")?;
        Ok(start)
    }
}

/// A few values whose rounding to BF16 or FP16 is a tie or a subnormal: each format's ties
/// to even either way, an FP16 subnormal rounded up and one rounded to zero, and the largest
/// FP16 reached by rounding down.
const ROUNDING_CASES: [f32; 10] = [
    1.0 + 1.0 / 256.0,
    -(1.0 + 3.0 / 256.0),
    1.0 + 1.0 / 2048.0,
    1.0 + 3.0 / 2048.0,
    1.5 / 33_554_432.0,
    -1.0 / 33_554_432.0,
    65519.0,
    3.0 / 65536.0,
    0.5,
    -0.0,
];

/// The kernel's input from `seed` (see [`super::tile`] for its layout): tile `a` small
/// integers, tile `b` signed floats of magnitude 2^-20 to 2^15 with [`ROUNDING_CASES`] at
/// the start of rows 0 and 37 (so in both A fragments' columns), per-row inputs derived from
/// `a`'s row maxima: `init` above the maximum, below it, or `-inf`; `s` a signed power of
/// two; the offset `max * scale` (FlashAttention's); `scale = log2(e) / 8`.
pub fn tile_inputs(seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let elements = TILE_ELEMENTS as usize;
    let mut x = Vec::with_capacity(TILE_INPUT_LEN as usize);
    x.extend((0..elements).map(|_| rng.gen_range(-64i32..=64) as f32));
    x.extend((0..elements).map(|_| {
        let m = 2f32.powf(rng.gen_range(-20.0..15.0));
        if rng.gen_bool(0.5) { -m } else { m }
    }));
    let n = TILE_N as usize;
    for (at, row) in [(0, 0), (64 + 8, 37)] {
        let start = elements + row * n + at;
        x[start..start + ROUNDING_CASES.len()].copy_from_slice(&ROUNDING_CASES);
    }
    let scale = std::f32::consts::LOG2_E / 8.0;
    let max = row_maxima(&x[..elements]);
    x.extend((0..64).map(|r| match r % 3 {
        0 => max[r] + 5.0,
        1 => max[r] - 3.0,
        _ => f32::NEG_INFINITY,
    }));
    x.extend((0..64).map(|_| {
        let p = 2f32.powi(rng.gen_range(-3..=3));
        if rng.gen_bool(0.5) { -p } else { p }
    }));
    x.extend(max.iter().map(|&m| m * scale));
    x.push(scale);
    debug_assert_eq!(x.len(), TILE_INPUT_LEN as usize);
    x
}

/// Each row's largest element of a 64 x `TILE_N` tile.
fn row_maxima(tile: &[f32]) -> Vec<f32> {
    tile.chunks(TILE_N as usize)
        .map(|row| row.iter().copied().fold(f32::NEG_INFINITY, f32::max))
        .collect()
}

/// What the kernel must write for input `x`, word by word, and for the `exp2_scaled`
/// segment each word's f64 result and allowed error (its expected word is the result
/// rounded to f32, for the report).
pub fn expected_tile(x: &[f32]) -> (Vec<u32>, Vec<(f64, f64)>) {
    let (n, elements) = (TILE_N as usize, TILE_ELEMENTS as usize);
    let (a, b) = (&x[..elements], &x[elements..2 * elements]);
    let per_row = |k: usize| &x[TILE_ROWS_AT as usize + 64 * k..][..64];
    let (init, s, offset) = (per_row(0), per_row(1), per_row(2));
    let scale = x[TILE_ROWS_AT as usize + 3 * 64];
    let max = row_maxima(a);
    // Small integers: every order of addition gives the same, exact, sum.
    let sum: Vec<f32> = a.chunks(n).map(|row| row.iter().sum()).collect();
    let pack = |lo: u16, hi: u16| u32::from(lo) | u32::from(hi) << 16;
    let mut expected = Vec::with_capacity(TILE_OUTPUT_LEN as usize);
    let mut exp2 = Vec::new();
    for (k, &(_, width)) in TILE_OUTPUTS.iter().enumerate() {
        for t in 0..TILE_THREADS {
            let (r, _) = Tile::position(t, 0);
            let rows = [r as usize, r as usize + 8];
            let mut words: Vec<u32> = match k {
                0 => rows.map(|r| max[r].to_bits()).to_vec(),
                1 => rows.map(|r| max[r].max(init[r]).to_bits()).to_vec(),
                2 => rows.map(|r| sum[r].to_bits()).to_vec(),
                3 | 4 => (0..TILE_REGS as u32)
                    .map(|i| {
                        let (row, col) = Tile::position(t, i);
                        let (row, v) = (row as usize, a[row as usize * n + col as usize]);
                        if k == 3 {
                            (v * s[row]).to_bits()
                        } else {
                            let exact = f64::from(v.mul_add(scale, -offset[row])).exp2();
                            exp2.push((exact, ulps_ftz(EXP2_ULPS, exact)));
                            (exact as f32).to_bits()
                        }
                    })
                    .collect(),
                _ => (0..TILE_FRAGMENTS as u32)
                    .flat_map(|j| (0..16).map(move |reg| (j, reg)))
                    .map(|(j, reg)| {
                        let (row, k16) = AFragment::position(t, reg);
                        let at = row as usize * n + (64 * j + k16) as usize;
                        let (lo, hi) = (b[at], b[at + 1]);
                        if k == 5 {
                            pack(Bf16::from_f32(lo).0, Bf16::from_f32(hi).0)
                        } else {
                            pack(F16::from_f32(lo).0, F16::from_f32(hi).0)
                        }
                    })
                    .collect(),
            };
            debug_assert_eq!(words.len(), width as usize);
            expected.append(&mut words);
        }
    }
    debug_assert_eq!(expected.len(), TILE_OUTPUT_LEN as usize);
    (expected, exp2)
}

/// Compares the kernel's output with [`expected_tile`]'s: every word bit for bit, but
/// `exp2_scaled`'s within its bound. The first failure names its verb. Also returns
/// `exp2_scaled`'s largest error as a fraction of its bound.
pub fn check_tile(out: &[u32], expected: &[u32], exp2: &[(f64, f64)]) -> (CheckReport, f64) {
    let mut report = CheckReport::default();
    let mut worst = 0f64;
    let exp2_start = segment_start(EXP2_SEGMENT) as usize;
    for (index, (&got, &want)) in out.iter().zip(expected).enumerate() {
        let k = (0..TILE_OUTPUTS.len())
            .rfind(|&k| segment_start(k) as usize <= index)
            .expect("segment 0 starts at 0");
        let floats = k <= EXP2_SEGMENT;
        let ok = if k == EXP2_SEGMENT {
            let (exact, allowed) = exp2[index - exp2_start];
            let g = f64::from(f32::from_bits(got));
            if g.is_finite() {
                worst = worst.max((g - exact).abs() / allowed);
            }
            g.is_finite() && (g - exact).abs() <= allowed
        } else {
            got == want
        };
        if ok {
            continue;
        }
        if got == POISON.to_bits() {
            report.unwritten += 1;
        } else if floats && !f32::from_bits(got).is_finite() {
            report.non_finite += 1;
        } else {
            report.wrong += 1;
        }
        let value = |w: u32| {
            if floats {
                f64::from(f32::from_bits(w))
            } else {
                f64::from(w)
            }
        };
        report.first_failure.get_or_insert(Mismatch {
            index,
            got: value(got),
            expected: value(want),
            what: Some(TILE_OUTPUTS[k].0),
        });
    }
    report.passed = report.first_failure.is_none();
    (report, worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_tile_the_output() {
        assert_eq!(segment_start(0), 0);
        assert_eq!(segment_start(3), 128 * 6);
        assert_eq!(TILE_OUTPUT_LEN, 128 * (2 + 2 + 2 + 64 + 64 + 32 + 32));
    }

    /// The expectation on a known input: thread 5 (rows 1 and 9) sees its rows' maxima and
    /// sums; register 0 of fragment 1 of thread 0 packs row 0's columns 64 and 65.
    #[test]
    fn the_expectation_follows_the_layouts() {
        let x = tile_inputs(11);
        let (expected, exp2) = expected_tile(&x);
        let n = TILE_N as usize;
        let row = |r: usize| &x[r * n..(r + 1) * n];
        let max = |r: usize| row(r).iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let w = |k: usize, t: usize, i: usize| {
            expected[segment_start(k) as usize + t * TILE_OUTPUTS[k].1 as usize + i]
        };
        assert_eq!(f32::from_bits(w(0, 5, 0)), max(1));
        assert_eq!(f32::from_bits(w(0, 5, 1)), max(9));
        // Row 9 % 3 == 0: init is above the maximum; row 1's is below it.
        assert_eq!(f32::from_bits(w(1, 5, 1)), max(9) + 5.0);
        assert_eq!(f32::from_bits(w(1, 5, 0)), max(1));
        assert_eq!(f32::from_bits(w(2, 5, 1)), row(9).iter().sum::<f32>());
        let b = |r: usize, c: usize| x[TILE_ELEMENTS as usize + r * n + c];
        let want =
            u32::from(Bf16::from_f32(b(0, 64)).0) | u32::from(Bf16::from_f32(b(0, 65)).0) << 16;
        assert_eq!(w(5, 0, 16), want);
        // Thread 0's register 0 is row 0, column 0: the maximum of row 0 gives 2^0.
        let (exact, allowed) = exp2[0];
        let arg = row(0)[0].mul_add(
            std::f32::consts::LOG2_E / 8.0,
            -(max(0) * x[TILE_INPUT_LEN as usize - 1]),
        );
        assert_eq!(exact, f64::from(arg).exp2());
        assert!(allowed > 0.0 && exact <= 1.0 + 1e-6);
        // Ties: row 0 starts with 1 + 2^-8 and 1 + 3 * 2^-8 negated: BF16 1 and -(1 + 2^-6).
        assert_eq!(w(5, 0, 0), 0x3F80 | 0xBF82 << 16);
    }

    #[test]
    fn the_check_passes_the_expectation_and_names_a_wrong_word() {
        let x = tile_inputs(3);
        let (expected, exp2) = expected_tile(&x);
        let (report, worst) = check_tile(&expected, &expected, &exp2);
        assert!(report.passed && worst < 0.2, "{worst}");
        // An exponential one ulp off passes; one far off fails, named.
        let mut out = expected.clone();
        let at = segment_start(EXP2_SEGMENT) as usize + 77;
        out[at] += 1;
        assert!(check_tile(&out, &expected, &exp2).0.passed);
        out[at] ^= 0x0040_0000;
        let (report, _) = check_tile(&out, &expected, &exp2);
        let first = report.first_failure.unwrap();
        assert_eq!((first.index, first.what), (at, Some("exp2_scaled")));
        let mut out = expected.clone();
        let at = segment_start(6) as usize + 3;
        out[at] = POISON.to_bits();
        let (report, _) = check_tile(&out, &expected, &exp2);
        assert_eq!(report.unwritten, 1);
        assert_eq!(
            report.first_failure.unwrap().what,
            Some("to_a_fragment::<F16>")
        );
    }
}
