//! The host half of verification on the GPU: [`Verifier`] launches the kernels of
//! [`super`] and reads their counts and sums into a [`CheckReport`] by the rules of
//! `harness::check` (the same counts, first failure and pass/fail; the norm summed in another
//! order, so equal to rounding).

use super::{
    COUNT_WORDS, FIRST_FAILURE, NON_FINITE, PARTIALS_PER_THREAD, UNWRITTEN, VERIFY_BLOCKS_PER_SM,
    VERIFY_THREADS, WRONG, verify_against_reference, verify_bits, verify_reference_scale,
};
use anyhow::Result;
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{self, CheckReport, Mismatch, Tolerance};
use harness::experiment::Values;

/// An `f64` reference output, kept where it is compared: downloaded for small outputs (the
/// CPU rules of `harness::check`), on the GPU with its scale past
/// [`GPU_CHECK_MIN_ELEMENTS`](super::GPU_CHECK_MIN_ELEMENTS) elements ([`Verifier`]).
pub enum Reference {
    /// On the host.
    Host(Vec<f64>),
    /// On the GPU.
    Device {
        /// The reference.
        values: CudaSlice<f64>,
        /// Its scale (for the tolerance and the norm).
        scale: ReferenceScale,
        /// The kernels that compare with it.
        verifier: Box<Verifier>,
    },
}

impl Reference {
    /// The reference `values` (computed on the GPU), kept where its outputs will be compared.
    pub fn new(gpu: &Gpu, values: CudaSlice<f64>, what: &str) -> Result<Reference> {
        if values.len() >= super::GPU_CHECK_MIN_ELEMENTS {
            let mut verifier = Verifier::new(gpu)?;
            let scale = verifier.reference_scale(gpu, &values)?;
            Ok(Reference::Device {
                values,
                scale,
                verifier: Box::new(verifier),
            })
        } else {
            Ok(Reference::Host(gpu.download(&values, what)?))
        }
    }

    /// `out` against the reference: within `tolerance` for random inputs, bit for bit with the
    /// reference rounded to f32 for small integers.
    pub fn check(
        &mut self,
        gpu: &Gpu,
        out: &CudaSlice<f32>,
        values: Values,
        tolerance: Tolerance,
    ) -> Result<CheckReport> {
        match self {
            Reference::Host(reference) => {
                let out = gpu.download(out, "the output")?;
                Ok(match values {
                    Values::Random => check::check(&out, reference, tolerance),
                    Values::SmallIntegers => check::check_exact_against(&out, reference),
                })
            }
            Reference::Device {
                values: reference,
                scale,
                verifier,
            } => {
                let rule = match values {
                    Values::Random => Rule::Tolerance(tolerance),
                    Values::SmallIntegers => Rule::Exact,
                };
                verifier.against_reference(gpu, out, reference, *scale, rule)
            }
        }
    }
}

/// What a reference's elements add up to, for the tolerance and the norm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceScale {
    /// `max |ref_i|`.
    pub max_abs: f64,
    /// `sum ref_i^2`.
    pub sum_sq: f64,
}

/// How an output is compared with an `f64` reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// Within a tolerance (`harness::check::check`).
    Tolerance(Tolerance),
    /// Bit for bit with the reference rounded to f32 (`harness::check::check_exact_against`).
    Exact,
}

/// `verify_against_reference`'s parameters.
type AgainstReference = (
    *const f32,
    *const f64,
    u64,
    f64,
    f64,
    u32,
    *mut f64,
    *mut u64,
);

/// The verification kernels, resolved, and their result buffers.
pub struct Verifier {
    scale: Kernel<(*const f64, u64, *mut f64)>,
    against: Kernel<AgainstReference>,
    bits: Kernel<(*const f32, *const f32, u64, *mut u64)>,
    config: LaunchConfig,
    partials: CudaSlice<f64>,
}

impl Verifier {
    /// The kernels of the GPU's module, and a grid of `VERIFY_BLOCKS_PER_SM` blocks per SM.
    pub fn new(gpu: &Gpu) -> Result<Verifier> {
        let blocks = gpu.info().multiprocessors * VERIFY_BLOCKS_PER_SM;
        let threads = (blocks * VERIFY_THREADS) as usize;
        Ok(Verifier {
            scale: gpu.entry_point(verify_reference_scale)?,
            against: gpu.entry_point(verify_against_reference)?,
            bits: gpu.entry_point(verify_bits)?,
            config: LaunchConfig::linear(blocks, VERIFY_THREADS, 0),
            partials: gpu.zeros(threads * PARTIALS_PER_THREAD, "the verification sums")?,
        })
    }

    /// The scale of `reference` (once per problem: a reference does not change).
    pub fn reference_scale(
        &mut self,
        gpu: &Gpu,
        reference: &CudaSlice<f64>,
    ) -> Result<ReferenceScale> {
        let n = reference.len() as u64;
        // SAFETY: `reference` holds n doubles, `partials` two per thread of `config`'s grid.
        unsafe {
            self.scale
                .launch(gpu, self.config, (reference, n, &mut self.partials))?
        };
        gpu.synchronize(|| "measuring a reference on the GPU".into())?;
        let partials = gpu.download(&self.partials, "the verification sums")?;
        let (max_abs, sum_sq) = partials
            .chunks_exact(PARTIALS_PER_THREAD)
            .fold((0.0f64, 0.0f64), |(m, s), p| (m.max(p[0]), s + p[1]));
        Ok(ReferenceScale { max_abs, sum_sq })
    }

    /// `out` against `reference` (of scale `scale`) by `rule`.
    pub fn against_reference(
        &mut self,
        gpu: &Gpu,
        out: &CudaSlice<f32>,
        reference: &CudaSlice<f64>,
        scale: ReferenceScale,
        rule: Rule,
    ) -> Result<CheckReport> {
        anyhow::ensure!(
            out.len() == reference.len(),
            "output and reference sizes differ"
        );
        let mut counts = fresh_counts(gpu)?;
        let (element, exact) = match rule {
            Rule::Tolerance(tol) => (tol.element, 0),
            Rule::Exact => (0.0, 1),
        };
        let n = out.len() as u64;
        // SAFETY: `out` holds n floats and `reference` n doubles; `partials` two doubles per
        // thread of `config`'s grid; `counts` COUNT_WORDS words, zeroed but the first index.
        unsafe {
            self.against.launch(
                gpu,
                self.config,
                (
                    out,
                    reference,
                    n,
                    scale.max_abs,
                    element,
                    exact,
                    &mut self.partials,
                    &mut counts,
                ),
            )?
        };
        gpu.synchronize(|| "comparing an output with its reference on the GPU".into())?;
        let counts = gpu.download(&counts, "the verification counts")?;
        let mut report = counted(&counts);
        if let Rule::Tolerance(tol) = rule {
            let partials = gpu.download(&self.partials, "the verification sums")?;
            let (err2, max_scaled) = partials
                .chunks_exact(PARTIALS_PER_THREAD)
                .fold((0.0f64, 0.0f64), |(e, m), p| (e + p[0], m.max(p[1])));
            report.max_scaled_err = max_scaled;
            report.norm_rel_err = if scale.sum_sq > 0.0 {
                (err2 / scale.sum_sq).sqrt()
            } else {
                err2.sqrt()
            };
            report.passed = report.passed && report.norm_rel_err <= tol.norm;
        }
        if let Some(m) = &mut report.first_failure {
            m.got = gpu.download_range(out, m.index..m.index + 1, "the first failing element")?[0]
                as f64;
            let expected = gpu.download_range(reference, m.index..m.index + 1, "its reference")?[0];
            m.expected = match rule {
                Rule::Exact => expected as f32 as f64,
                Rule::Tolerance(_) => expected,
            };
        }
        Ok(report)
    }

    /// `out` against the first `out.len()` elements of `expected`, bit for bit.
    pub fn bits(
        &mut self,
        gpu: &Gpu,
        out: &CudaSlice<f32>,
        expected: &CudaSlice<f32>,
    ) -> Result<CheckReport> {
        anyhow::ensure!(
            out.len() <= expected.len(),
            "the output is longer than what it is compared with"
        );
        let mut counts = fresh_counts(gpu)?;
        let n = out.len() as u64;
        // SAFETY: both hold at least n floats; `counts` COUNT_WORDS words, zeroed but the first
        // index.
        unsafe {
            self.bits
                .launch(gpu, self.config, (out, expected, n, &mut counts))?
        };
        gpu.synchronize(|| "comparing an output bit for bit on the GPU".into())?;
        let mut report = counted(&gpu.download(&counts, "the verification counts")?);
        if let Some(m) = &mut report.first_failure {
            m.got = gpu.download_range(out, m.index..m.index + 1, "the first failing element")?[0]
                as f64;
            m.expected =
                gpu.download_range(expected, m.index..m.index + 1, "its expected value")?[0] as f64;
        }
        Ok(report)
    }
}

/// The counts the kernels add to: zero, and no first failure yet.
fn fresh_counts(gpu: &Gpu) -> Result<CudaSlice<u64>> {
    let mut words = [0u64; COUNT_WORDS];
    words[FIRST_FAILURE] = u64::MAX;
    Ok(gpu.upload(&words, "the verification counts")?)
}

/// The report the counts give (first failure's values still to fill in): passed when nothing
/// failed.
pub fn counted(counts: &[u64]) -> CheckReport {
    let first = counts[FIRST_FAILURE];
    CheckReport {
        unwritten: counts[UNWRITTEN] as usize,
        non_finite: counts[NON_FINITE] as usize,
        wrong: counts[WRONG] as usize,
        first_failure: (first != u64::MAX).then_some(Mismatch {
            index: first as usize,
            got: f64::NAN,
            expected: f64::NAN,
            what: None,
        }),
        passed: first == u64::MAX,
        ..CheckReport::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_become_a_report_that_fails_exactly_when_something_failed() {
        let mut words = [0u64; COUNT_WORDS];
        words[FIRST_FAILURE] = u64::MAX;
        let clean = counted(&words);
        assert!(clean.passed);
        assert!(clean.first_failure.is_none());
        words[UNWRITTEN] = 2;
        words[WRONG] = 1;
        words[FIRST_FAILURE] = 17;
        let failed = counted(&words);
        assert!(!failed.passed);
        assert_eq!(
            (failed.unwritten, failed.non_finite, failed.wrong),
            (2, 0, 1)
        );
        assert_eq!(failed.first_failure.map(|m| m.index), Some(17));
    }
}
