//! The host half of the math and collectives self-test ([`super::math`]): inputs, the f64
//! references with the error bound `gpu::math` documents for each function, and the bit-exact
//! emulation of the shuffles and reductions.

use super::math::{
    COLLECTIVE_LEN, COLLECTIVE_OUTPUTS, COLLECTIVE_THREADS, MATH_FUNCTIONS, MATH_POINTS,
    SHUFFLE_OPERANDS,
};
use super::math::{MATH_THREADS, math_entry_points};
use anyhow::Result;
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{CheckReport, Mismatch, POISON, is_poison};
use harness::experiment::Fault;
use rand::{Rng, SeedableRng};

/// The two kernels of this self-test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathKernel {
    /// `selftest_math`.
    Math,
    /// `selftest_collectives`.
    Collectives,
}

/// Inputs, expected outputs and output buffers of both kernels on the GPU.
pub struct MathProblem {
    x: Vec<f32>,
    x_device: CudaSlice<f32>,
    math: Kernel<(*const f32, *mut f32)>,
    math_out: CudaSlice<f32>,
    words_device: CudaSlice<u32>,
    expected: Vec<u32>,
    collectives: Kernel<(*const u32, *mut u32)>,
    collectives_out: CudaSlice<u32>,
    /// What the last math check measured (each function's largest error over its bound).
    pub note: Option<String>,
}

impl MathProblem {
    /// Uploads both kernels' inputs (from `seed`) and allocates their outputs.
    pub fn new(gpu: &Gpu, seed: u64) -> Result<MathProblem> {
        let x = math_inputs(seed);
        let words = collective_inputs(seed ^ 0x5eed);
        let expected = expected_collectives(&words);
        Ok(MathProblem {
            x_device: gpu.upload(&x, "the math inputs")?,
            math_out: gpu.zeros(x.len(), "the math outputs")?,
            x,
            math: gpu.entry_point(math_entry_points::selftest_math)?,
            words_device: gpu.upload(&words, "the collectives' inputs")?,
            collectives_out: gpu.zeros(expected.len(), "the collectives' outputs")?,
            expected,
            collectives: gpu.entry_point(math_entry_points::selftest_collectives)?,
            note: None,
        })
    }

    /// Fills `kernel`'s output with the poison.
    pub fn poison(&mut self, gpu: &Gpu, kernel: MathKernel) -> Result<()> {
        match kernel {
            MathKernel::Math => gpu.fill_words(&mut self.math_out, POISON.to_bits(), "out")?,
            MathKernel::Collectives => {
                gpu.fill_words(&mut self.collectives_out, POISON.to_bits(), "out")?
            }
        }
        Ok(())
    }

    /// Queues `kernel`.
    pub fn launch(&mut self, gpu: &Gpu, kernel: MathKernel) -> Result<()> {
        match kernel {
            MathKernel::Math => {
                let blocks = (self.x.len() as u32).div_ceil(MATH_THREADS).min(1024);
                let config = LaunchConfig::linear(blocks, MATH_THREADS, 0);
                // SAFETY: selftest_math(x, out): both hold MATH_FUNCTIONS.len() * MATH_POINTS
                // floats; any 1-D grid.
                unsafe {
                    self.math
                        .launch(gpu, config, (&self.x_device, &mut self.math_out))?
                };
            }
            MathKernel::Collectives => {
                let config = LaunchConfig::linear(
                    COLLECTIVE_LEN / COLLECTIVE_THREADS,
                    COLLECTIVE_THREADS,
                    0,
                );
                // SAFETY: selftest_collectives(words, out): COLLECTIVE_BLOCKS blocks of
                // COLLECTIVE_THREADS, `words` COLLECTIVE_LEN words, `out` the expected length.
                unsafe {
                    self.collectives.launch(
                        gpu,
                        config,
                        (&self.words_device, &mut self.collectives_out),
                    )?
                };
            }
        }
        Ok(())
    }

    /// Downloads `kernel`'s output and checks it.
    pub fn check(&mut self, gpu: &Gpu, kernel: MathKernel) -> Result<CheckReport> {
        Ok(match kernel {
            MathKernel::Math => {
                let out = gpu.download(&self.math_out, "the math outputs")?;
                let (report, note) = check_math(&self.x, &out);
                self.note = Some(note);
                report
            }
            MathKernel::Collectives => {
                let out = gpu.download(&self.collectives_out, "the collectives' outputs")?;
                check_collectives(&out, &self.expected)
            }
        })
    }

    /// Plants `fault` in `kernel`'s output (the checks run in index order): a wrong value
    /// in the middle, or the last function's segment (the last block's words) unwritten.
    pub fn plant(&mut self, gpu: &Gpu, kernel: MathKernel, fault: Fault) -> Result<usize> {
        match kernel {
            MathKernel::Math => {
                let len = self.x.len();
                let (start, values) = match fault {
                    Fault::WrongElement => {
                        let at = len / 2 + 7;
                        let got = gpu.download_range(&self.math_out, at..at + 1, "out")?[0];
                        (at, vec![got * 2.0 + 1.0])
                    }
                    Fault::UnwrittenTile => {
                        let start = len - MATH_POINTS as usize;
                        (start, vec![POISON; MATH_POINTS as usize])
                    }
                };
                gpu.upload_into(&values, &mut self.math_out, start, "a fault")?;
                Ok(start)
            }
            MathKernel::Collectives => {
                let per = COLLECTIVE_OUTPUTS as usize;
                let (start, values) = match fault {
                    Fault::WrongElement => {
                        let at = self.expected.len() / 2;
                        (at, vec![self.expected[at] ^ 0x10])
                    }
                    Fault::UnwrittenTile => {
                        let start = (COLLECTIVE_LEN - COLLECTIVE_THREADS) as usize * per;
                        (start, vec![POISON.to_bits(); self.expected.len() - start])
                    }
                };
                gpu.upload_into(&values, &mut self.collectives_out, start, "a fault")?;
                Ok(start)
            }
        }
    }
}

/// One function of `gpu::math` as the self-test checks it.
struct MathCase {
    /// Its exact value, in f64.
    reference: fn(f64) -> f64,
    /// The inputs swept: uniform over `[lo, hi)`, or, for `log_uniform`, magnitudes
    /// log-uniform over `[2^lo, 2^hi)` with random signs where `signed`.
    lo: f64,
    hi: f64,
    log_uniform: bool,
    signed: bool,
    /// The largest error allowed at input `x` with exact result `r`, absolute.
    allowed: fn(f64, f64) -> f64,
}

/// The spacing of f32 values at `r` (the subnormal spacing below 2^-126).
fn ulp(r: f64) -> f64 {
    let r = r.abs();
    if r < f64::from(f32::MIN_POSITIVE) {
        2f64.powi(-149)
    } else {
        2f64.powi(r.log2().floor() as i32 - 23)
    }
}

/// `n` ulp at `r`; a result `gpu::math` flushes to zero (below 2^-126) may also be 0.
pub(super) fn ulps_ftz(n: f64, r: f64) -> f64 {
    let bound = n * ulp(r);
    if r.abs() < f64::from(f32::MIN_POSITIVE) {
        bound.max(r.abs())
    } else {
        bound
    }
}

/// The cases, in [`MATH_FUNCTIONS`] order.
fn cases() -> [MathCase; 10] {
    let exp = |x: f64| x.exp();
    let recip = |x: f64| 1.0 / x;
    let rsqrt = |x: f64| 1.0 / x.sqrt();
    [
        // exp2: 3 ulp (CUDA documents 2; 1.96 measured), flushed below 2^-126.
        MathCase {
            reference: f64::exp2,
            lo: -125.0,
            hi: 127.5,
            log_uniform: false,
            signed: false,
            allowed: |_, r| ulps_ftz(3.0, r),
        },
        // exp: 3 + 1.2 |x| ulp (CUDA documents 2 + floor(1.173 |x|) for __expf; 2.1 ulp
        // was measured near x = -0.7 on an H200).
        MathCase {
            reference: exp,
            lo: -87.0,
            hi: 88.5,
            log_uniform: false,
            signed: false,
            allowed: |x, r| ulps_ftz(3.0 + 1.2 * x.abs(), r),
        },
        // exp_accurate: 4 ulp over the whole range, subnormal results included.
        MathCase {
            reference: exp,
            lo: -103.0,
            hi: 88.7,
            log_uniform: false,
            signed: false,
            allowed: |_, r| 4.0 * ulp(r),
        },
        // log2: absolute 2^-21 on [0.5, 2], 3 ulp elsewhere (CUDA documents 2^-22 and 2 ulp
        // for __log2f; 2.06 ulp was measured on an H200).
        MathCase {
            reference: f64::log2,
            lo: -126.0,
            hi: 127.9,
            log_uniform: true,
            signed: false,
            allowed: |x, r| {
                if (0.5..=2.0).contains(&x) {
                    2f64.powi(-21)
                } else {
                    3.0 * ulp(r)
                }
            },
        },
        // recip: 1.5 ulp (documented 1; 0.94 measured).
        MathCase {
            reference: recip,
            lo: -125.0,
            hi: 125.0,
            log_uniform: true,
            signed: true,
            allowed: |_, r| 1.5 * ulp(r),
        },
        // recip_accurate: correctly rounded.
        MathCase {
            reference: recip,
            lo: -126.0,
            hi: 126.0,
            log_uniform: true,
            signed: true,
            allowed: |_, r| 0.5 * ulp(r),
        },
        // rsqrt: 3 ulp (documented 2; 1.46 measured).
        MathCase {
            reference: rsqrt,
            lo: -125.0,
            hi: 125.0,
            log_uniform: true,
            signed: false,
            allowed: |_, r| 3.0 * ulp(r),
        },
        // rsqrt_accurate: 2 ulp (two correct roundings: 2^-23 relative at most).
        MathCase {
            reference: rsqrt,
            lo: -126.0,
            hi: 126.0,
            log_uniform: true,
            signed: false,
            allowed: |_, r| 2.0 * ulp(r),
        },
        // tanh: relative 2^-10.987.
        MathCase {
            reference: f64::tanh,
            lo: -10.0,
            hi: 10.0,
            log_uniform: false,
            signed: false,
            allowed: |_, r| 2f64.powf(-10.987) * r.abs(),
        },
        // tanh_accurate: 8 ulp.
        MathCase {
            reference: f64::tanh,
            lo: -6.0,
            hi: 6.0,
            log_uniform: false,
            signed: false,
            allowed: |_, r| 8.0 * ulp(r),
        },
    ]
}

/// The math kernel's input: [`MATH_POINTS`] values of each function's domain (a tenth of them
/// in the part near zero or one where the forms switch or are most exact), from `seed`.
pub fn math_inputs(seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut x = Vec::with_capacity(MATH_FUNCTIONS.len() * MATH_POINTS as usize);
    for case in cases() {
        for i in 0..MATH_POINTS {
            let v = if case.log_uniform {
                let m = 2f64.powf(rng.gen_range(case.lo..case.hi));
                if case.signed && rng.gen_bool(0.5) {
                    -m
                } else {
                    m
                }
            } else if i % 10 == 0 {
                rng.gen_range(-1.0..1.0)
            } else {
                rng.gen_range(case.lo..case.hi)
            };
            x.push(v as f32);
        }
    }
    x
}

/// Checks the math kernel's output `out` for input `x`: each value within its function's
/// bound of the f64 result. The first failure names its function; the note gives, per
/// function, the largest error as a fraction of its bound.
pub fn check_math(x: &[f32], out: &[f32]) -> (CheckReport, String) {
    let mut report = CheckReport::default();
    let mut note = Vec::new();
    for (k, case) in cases().iter().enumerate() {
        let mut worst = 0f64;
        for i in k * MATH_POINTS as usize..(k + 1) * MATH_POINTS as usize {
            let (v, got) = (f64::from(x[i]), out[i]);
            let r = (case.reference)(v);
            let err = (f64::from(got) - r).abs();
            let allowed = (case.allowed)(v, r);
            let ok = got.is_finite() && err <= allowed || (r.is_infinite() && f64::from(got) == r);
            if r.is_finite() {
                worst = worst.max(err / allowed);
            }
            if ok {
                continue;
            }
            if is_poison(got) {
                report.unwritten += 1;
            } else if !got.is_finite() {
                report.non_finite += 1;
            } else {
                report.wrong += 1;
            }
            report.first_failure.get_or_insert(Mismatch {
                index: i,
                got: f64::from(got),
                expected: r,
                what: Some(MATH_FUNCTIONS[k]),
            });
        }
        note.push(format!("{} {:.2}", MATH_FUNCTIONS[k], worst));
    }
    report.passed = report.first_failure.is_none();
    (
        report,
        format!("largest error / bound: {}", note.join(", ")),
    )
}

/// The collectives kernel's input: the bits of finite floats of every magnitude and sign, so
/// that the `f32` sums are finite and the integer views are spread over their range.
pub fn collective_inputs(seed: u64) -> Vec<u32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..COLLECTIVE_LEN)
        .map(|_| {
            let m = 2f32.powf(rng.gen_range(-20.0..20.0));
            (if rng.gen_bool(0.5) { -m } else { m }).to_bits()
        })
        .collect()
}

/// A value type of the reductions, on the host: combine by sum, max and min.
trait Word: Copy {
    fn of(bits: u32) -> Self;
    fn bits(self) -> u32;
    fn combine(op: usize, a: Self, b: Self) -> Self;
    fn identity(op: usize) -> Self;
}

impl Word for f32 {
    fn of(bits: u32) -> Self {
        f32::from_bits(bits)
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
    fn combine(op: usize, a: Self, b: Self) -> Self {
        [a + b, a.max(b), a.min(b)][op]
    }
    fn identity(op: usize) -> Self {
        [0.0, f32::NEG_INFINITY, f32::INFINITY][op]
    }
}

impl Word for i32 {
    fn of(bits: u32) -> Self {
        bits as i32
    }
    fn bits(self) -> u32 {
        self as u32
    }
    fn combine(op: usize, a: Self, b: Self) -> Self {
        [a.wrapping_add(b), a.max(b), a.min(b)][op]
    }
    fn identity(op: usize) -> Self {
        [0, i32::MIN, i32::MAX][op]
    }
}

impl Word for u32 {
    fn of(bits: u32) -> Self {
        bits
    }
    fn bits(self) -> u32 {
        self
    }
    fn combine(op: usize, a: Self, b: Self) -> Self {
        [a.wrapping_add(b), a.max(b), a.min(b)][op]
    }
    fn identity(op: usize) -> Self {
        [0, u32::MIN, u32::MAX][op]
    }
}

/// The butterfly over 32 lanes (`shfl_xor` by 16, 8, 4, 2, 1): every lane's result is the
/// same, in this combination order.
fn butterfly<T: Word>(op: usize, lanes: &[T; 32]) -> T {
    let mut v = *lanes;
    for mask in [16, 8, 4, 2, 1] {
        let before = v;
        for (lane, x) in v.iter_mut().enumerate() {
            *x = T::combine(op, before[lane], before[lane ^ mask]);
        }
    }
    v[0]
}

/// Writes `T`'s warp and block results (sum, max, min) for one block's threads.
fn reductions<T: Word>(block: &[u32], out: &mut [u32], at: usize) {
    let warps = block.len().div_ceil(32);
    for op in 0..3 {
        let mut partials = [T::identity(op); 32];
        for (w, partial) in partials.iter_mut().enumerate().take(warps) {
            let mut lanes = [T::identity(op); 32];
            for (lane, x) in lanes.iter_mut().enumerate() {
                *x = T::of(block[w * 32 + lane]);
            }
            *partial = butterfly(op, &lanes);
        }
        let all = butterfly(op, &partials);
        for t in 0..block.len() {
            let o = &mut out[t * COLLECTIVE_OUTPUTS as usize..];
            o[at + op] = partials[t / 32].bits();
            o[at + 9 + op] = all.bits();
        }
    }
}

/// What the collectives kernel must write for `words` (see
/// [`COLLECTIVE_OUTPUTS`]), the dimension word last.
pub fn expected_collectives(words: &[u32]) -> Vec<u32> {
    let per = COLLECTIVE_OUTPUTS as usize;
    let mut out = vec![0u32; words.len() * per + 1];
    let [xor, down, idx] = SHUFFLE_OPERANDS.map(|s| s as usize);
    for (b, block) in words.chunks(COLLECTIVE_THREADS as usize).enumerate() {
        let first = b * COLLECTIVE_THREADS as usize;
        let mut mine = vec![0u32; block.len() * per];
        for (t, _) in block.iter().enumerate() {
            let (warp, lane) = (t / 32 * 32, t % 32);
            let o = &mut mine[t * per..];
            o[0] = block[warp + (lane ^ xor)];
            o[1] = block[warp + if lane + down < 32 { lane + down } else { lane }];
            o[2] = block[warp + idx];
        }
        reductions::<f32>(block, &mut mine, 3);
        reductions::<i32>(block, &mut mine, 6);
        reductions::<u32>(block, &mut mine, 9);
        out[first * per..(first + block.len()) * per].copy_from_slice(&mine);
    }
    *out.last_mut().expect("one word past the threads'") = 4;
    out
}

/// Compares the collectives kernel's output with [`expected_collectives`] bit for bit; the
/// first failure names the shuffle or reduction.
pub fn check_collectives(out: &[u32], expected: &[u32]) -> CheckReport {
    const WHAT: [&str; 22] = [
        "shfl_xor",
        "shfl_down",
        "shfl_idx",
        "warp sum f32",
        "warp max f32",
        "warp min f32",
        "warp sum i32",
        "warp max i32",
        "warp min i32",
        "warp sum u32",
        "warp max u32",
        "warp min u32",
        "block sum f32",
        "block max f32",
        "block min f32",
        "block sum i32",
        "block max i32",
        "block min i32",
        "block sum u32",
        "block max u32",
        "block min u32",
        "block_dim_y + block_dim_z + grid_dim_y + grid_dim_z",
    ];
    let mut report = CheckReport::default();
    for (index, (&got, &want)) in out.iter().zip(expected).enumerate() {
        if got == want {
            continue;
        }
        if got == harness::check::POISON.to_bits() {
            report.unwritten += 1;
        } else {
            report.wrong += 1;
        }
        let what = if index + 1 == expected.len() {
            WHAT[21]
        } else {
            WHAT[index % COLLECTIVE_OUTPUTS as usize]
        };
        report.first_failure.get_or_insert(Mismatch {
            index,
            got: f64::from(got),
            expected: f64::from(want),
            what: Some(what),
        });
    }
    report.passed = report.first_failure.is_none();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's own results pass, and a planted error names its function.
    #[test]
    fn the_math_check_passes_exact_results_and_names_a_wrong_one() {
        let x = math_inputs(7);
        let cases = cases();
        let exact: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| (cases[i / MATH_POINTS as usize].reference)(f64::from(v)) as f32)
            .collect();
        let (report, note) = check_math(&x, &exact);
        assert!(report.passed, "{} {note}", report.summary());
        let mut wrong = exact.clone();
        let i = 3 * MATH_POINTS as usize + 17;
        wrong[i] *= 1.001;
        let (report, _) = check_math(&x, &wrong);
        let first = report.first_failure.unwrap();
        assert_eq!((first.index, first.what), (i, Some("log2")));
    }

    #[test]
    fn ulps_are_spacings() {
        assert_eq!(ulp(1.0), 2f64.powi(-23));
        assert_eq!(ulp(1.5), 2f64.powi(-23));
        assert_eq!(ulp(0.75), 2f64.powi(-24));
        assert_eq!(ulp(1e-40), 2f64.powi(-149));
    }

    /// The emulation on words whose every sum is exact equals plain sums; a wrong word fails
    /// naming its reduction.
    #[test]
    fn the_collectives_emulation_agrees_with_plain_reductions() {
        let words: Vec<u32> = (0..COLLECTIVE_LEN)
            .map(|i| (i % 97) as f32)
            .map(f32::to_bits)
            .collect();
        let expected = expected_collectives(&words);
        let per = COLLECTIVE_OUTPUTS as usize;
        let block: f32 = (0..COLLECTIVE_THREADS).map(|i| (i % 97) as f32).sum();
        let warp0: f32 = (0..32).map(|i| (i % 97) as f32).sum();
        assert_eq!(f32::from_bits(expected[3]), warp0);
        assert_eq!(f32::from_bits(expected[12]), block);
        assert_eq!(f32::from_bits(expected[13]), 96.0);
        // Thread 1: shfl_xor 5 reads lane 4, shfl_down 3 lane 4, shfl_idx lane 7.
        assert_eq!(&expected[per..per + 3], &[words[4], words[4], words[7]]);
        // Lane 30: shfl_down by 3 is past lane 31, so its own.
        assert_eq!(expected[30 * per + 1], words[30]);
        assert!(check_collectives(&expected, &expected).passed);
        let mut out = expected.clone();
        out[5 * per + 15] ^= 1;
        let report = check_collectives(&out, &expected);
        assert_eq!(report.first_failure.unwrap().what, Some("block sum i32"));
    }
}
