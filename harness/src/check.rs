//! Checking GPU output against a reference.
//!
//! Outputs are filled with [`POISON`] before a launch, so an element the kernel never wrote is
//! told apart from one it wrote wrong (a NaN the kernel computed has another bit pattern).

use serde::Serialize;

/// A quiet NaN with a recognisable payload, written to outputs before every launch.
pub const POISON: f32 = f32::from_bits(0x7fc0_0bad);

/// Whether `x` is still the poison written before the launch.
pub fn is_poison(x: f32) -> bool {
    x.to_bits() == POISON.to_bits()
}

/// How far a float result may be from its f64 reference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    /// Bound on `||out - ref||_2 / ||ref||_2`.
    pub norm: f64,
    /// Per element: `|out - ref| <= element * max(|ref|, max_i |ref_i|)` (approx's
    /// `relative_eq` with `max_relative = element` and `epsilon = element * max|ref|`), so that
    /// elements near zero are judged on the output's scale.
    pub element: f64,
}

impl Tolerance {
    /// For f32 dot products of length K accumulated with FMA: the rounding error grows like
    /// `sqrt(K) * 2^-24` relative to the result (about 1e-5 at K = 65536); 1e-4 leaves a
    /// tenfold margin and still fails any wrong element, NaN or stale buffer.
    pub const F32_DOT: Tolerance = Tolerance {
        norm: 1e-4,
        element: 1e-4,
    };

    /// For f32 dot products of length `k` summed in any order (tiles, split-K): the
    /// rounding error of such a sum grows like `sqrt(k)` units of f32 roundoff (2^-24) on
    /// random data, so the norm bound is `16 sqrt(k) 2^-24` (6.1e-5 at K = 4096, 8.6e-5 at
    /// K = 8192) and the per-element bound, against `max |ref|`, four times that.
    /// A missing, repeated or stale k-tile moves the result by about `1 / sqrt(k)` of its
    /// scale — hundreds of times more.
    pub fn f32_dot(k: u32) -> Tolerance {
        let norm = 16.0 * (k.max(1) as f64).sqrt() * f64::from(f32::EPSILON) / 2.0;
        Tolerance {
            norm,
            element: 4.0 * norm,
        }
    }
}

/// The first element that failed, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mismatch {
    pub index: usize,
    pub got: f64,
    pub expected: f64,
    /// What the element means, where it has a name of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what: Option<&'static str>,
}

/// Outcome of comparing an output with its reference.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CheckReport {
    /// `||out - ref||_2 / ||ref||_2` over written, finite elements.
    pub norm_rel_err: f64,
    /// Largest `|out - ref| / max|ref|` over written, finite elements.
    pub max_scaled_err: f64,
    /// Elements still holding the poison.
    pub unwritten: usize,
    /// Elements that are NaN or infinite (other than the poison).
    pub non_finite: usize,
    /// Elements outside the per-element tolerance.
    pub wrong: usize,
    pub first_failure: Option<Mismatch>,
    pub passed: bool,
}

impl CheckReport {
    /// One line on what went wrong (or "ok").
    pub fn summary(&self) -> String {
        if self.passed {
            return format!("ok (rel. error {:.1e})", self.norm_rel_err);
        }
        let mut parts = Vec::new();
        if self.unwritten > 0 {
            parts.push(format!("{} unwritten", self.unwritten));
        }
        if self.non_finite > 0 {
            parts.push(format!("{} NaN/inf", self.non_finite));
        }
        if self.wrong > 0 {
            parts.push(format!("{} wrong", self.wrong));
        }
        parts.push(format!("rel. error {:.1e}", self.norm_rel_err));
        if let Some(m) = &self.first_failure {
            let place = match m.what {
                Some(what) => format!("[{}] ({what})", m.index),
                None => format!("[{}]", m.index),
            };
            parts.push(format!(
                "first at {place}: got {}, expected {}",
                m.got, m.expected
            ));
        }
        format!("FAILED: {}", parts.join(", "))
    }
}

/// Compares `out` with `reference` element by element and as a whole.
pub fn check(out: &[f32], reference: &[f64], tol: Tolerance) -> CheckReport {
    assert_eq!(
        out.len(),
        reference.len(),
        "output and reference sizes differ"
    );
    let scale = reference.iter().fold(0.0f64, |m, r| m.max(r.abs()));
    let (mut err2, mut ref2) = (0.0f64, 0.0f64);
    let mut report = CheckReport::default();
    for (index, (&got, &expected)) in out.iter().zip(reference).enumerate() {
        ref2 += expected * expected;
        let ok = if is_poison(got) {
            report.unwritten += 1;
            false
        } else if !got.is_finite() {
            report.non_finite += 1;
            false
        } else {
            let diff = got as f64 - expected;
            err2 += diff * diff;
            if scale > 0.0 {
                report.max_scaled_err = report.max_scaled_err.max(diff.abs() / scale);
            }
            let close = approx::relative_eq!(
                got as f64,
                expected,
                epsilon = tol.element * scale,
                max_relative = tol.element
            );
            if !close {
                report.wrong += 1;
            }
            close
        };
        if !ok && report.first_failure.is_none() {
            report.first_failure = Some(Mismatch {
                index,
                got: got as f64,
                expected,
                what: None,
            });
        }
    }
    report.norm_rel_err = if ref2 > 0.0 {
        (err2 / ref2).sqrt()
    } else {
        err2.sqrt()
    };
    report.passed = report.unwritten == 0
        && report.non_finite == 0
        && report.wrong == 0
        && report.norm_rel_err <= tol.norm;
    report
}

/// Compares `out` with `expected` bit for bit (copies must be exact).
pub fn check_exact(out: &[f32], expected: &[f32]) -> CheckReport {
    assert_eq!(
        out.len(),
        expected.len(),
        "output and expected sizes differ"
    );
    let mut report = CheckReport::default();
    for (index, (&got, &want)) in out.iter().zip(expected).enumerate() {
        if got.to_bits() == want.to_bits() {
            continue;
        }
        if is_poison(got) {
            report.unwritten += 1;
        } else if !got.is_finite() {
            report.non_finite += 1;
        } else {
            report.wrong += 1;
        }
        if report.first_failure.is_none() {
            report.first_failure = Some(Mismatch {
                index,
                got: got as f64,
                expected: want as f64,
                what: None,
            });
        }
    }
    report.passed = report.first_failure.is_none();
    report
}

/// Compares 32-bit words exactly (sums, indices): [`check_exact`] on their bits, the first
/// failure reported as the words themselves. A word equal to the poison's bits counts as
/// unwritten.
pub fn check_words(out: &[u32], expected: &[u32]) -> CheckReport {
    let as_floats = |w: &[u32]| w.iter().map(|&x| f32::from_bits(x)).collect::<Vec<_>>();
    let mut report = check_exact(&as_floats(out), &as_floats(expected));
    if let Some(first) = &mut report.first_failure {
        first.got = out[first.index] as f64;
        first.expected = expected[first.index] as f64;
    }
    // NaN and infinity bit patterns are just words here.
    report.wrong += report.non_finite;
    report.non_finite = 0;
    report
}

/// Compares `out` bit for bit with `reference` rounded to `f32`: for inputs whose every sum
/// is exact (small integers), where the rounding is exact too.
pub fn check_exact_against(out: &[f32], reference: &[f64]) -> CheckReport {
    let expected: Vec<f32> = reference.iter().map(|&x| x as f32).collect();
    check_exact(out, &expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Vec<f64> {
        (0..64).map(|i| (i as f64 - 20.0) * 1.5).collect()
    }

    fn as_f32(r: &[f64]) -> Vec<f32> {
        r.iter().map(|&x| x as f32).collect()
    }

    #[test]
    fn accepts_rounding() {
        let r = reference();
        let report = check(&as_f32(&r), &r, Tolerance::F32_DOT);
        assert!(report.passed, "{}", report.summary());
        assert_eq!(report.summary().split(' ').next(), Some("ok"));
    }

    #[test]
    fn catches_one_wrong_element() {
        let r = reference();
        let mut out = as_f32(&r);
        out[17] += 0.05;
        let report = check(&out, &r, Tolerance::F32_DOT);
        assert!(!report.passed);
        assert_eq!(report.wrong, 1);
        assert_eq!(report.first_failure.as_ref().unwrap().index, 17);
        assert!(report.summary().contains("1 wrong"), "{}", report.summary());
    }

    #[test]
    fn catches_a_wrong_element_near_zero() {
        let r = reference();
        let mut out = as_f32(&r);
        // r[20] is exactly 0: judged on the output's scale, a 1e-3 error there is wrong.
        out[20] = 0.01;
        assert!(!check(&out, &r, Tolerance::F32_DOT).passed);
    }

    #[test]
    fn catches_nan() {
        let r = reference();
        let mut out = as_f32(&r);
        out[3] = f32::NAN;
        let report = check(&out, &r, Tolerance::F32_DOT);
        assert!(!report.passed);
        assert_eq!((report.non_finite, report.unwritten), (1, 0));
        assert!(report.summary().contains("NaN"), "{}", report.summary());
    }

    #[test]
    fn catches_unwritten() {
        let r = reference();
        let mut out = as_f32(&r);
        out[63] = POISON;
        let report = check(&out, &r, Tolerance::F32_DOT);
        assert!(!report.passed);
        assert_eq!((report.unwritten, report.non_finite), (1, 0));
        assert!(
            report.summary().contains("unwritten"),
            "{}",
            report.summary()
        );
    }

    /// `outputs` dot products of length `k` of values in [-1, 1) from a fixed xorshift
    /// sequence: the f64 reference, and the f32 result accumulated with FMA in k order (what a
    /// kernel computes), leaving out term `skip` where one is given.
    fn dot_products(k: usize, outputs: usize, skip: Option<usize>) -> (Vec<f32>, Vec<f64>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        };
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for _ in 0..outputs {
            let (mut acc, mut exact) = (0.0f32, 0.0f64);
            for i in 0..k {
                let (a, b) = (next(), next());
                exact += f64::from(a) * f64::from(b);
                if skip != Some(i) {
                    acc = a.mul_add(b, acc);
                }
            }
            got.push(acc);
            want.push(exact);
        }
        (got, want)
    }

    const DOT_LENGTHS: [usize; 5] = [16, 256, 4096, 8192, 65536];

    #[test]
    fn dot_tolerance_accepts_f32_dot_products_of_length_k() {
        for k in DOT_LENGTHS {
            let (got, want) = dot_products(k, 64, None);
            let report = check(&got, &want, Tolerance::f32_dot(k as u32));
            assert!(report.passed, "K = {k}: {}", report.summary());
            // The f32 sums carry real rounding error, so passing says the bound covers it.
            assert!(report.norm_rel_err > 0.0, "K = {k}: exact in f32");
        }
    }

    #[test]
    fn dot_tolerance_rejects_a_dot_product_missing_one_term() {
        for k in DOT_LENGTHS {
            for skip in [0, k / 2, k - 1] {
                let (got, want) = dot_products(k, 64, Some(skip));
                let report = check(&got, &want, Tolerance::f32_dot(k as u32));
                assert!(
                    !report.passed,
                    "K = {k}, term {skip} missing: {}",
                    report.summary()
                );
            }
        }
    }

    #[test]
    fn dot_tolerance_grows_with_k() {
        let bounds: Vec<Tolerance> = DOT_LENGTHS
            .iter()
            .map(|&k| Tolerance::f32_dot(k as u32))
            .collect();
        for (pair, ks) in bounds.windows(2).zip(DOT_LENGTHS.windows(2)) {
            assert!(pair[0].norm < pair[1].norm, "K = {ks:?}: {pair:?}");
            assert!(pair[0].element < pair[1].element, "K = {ks:?}: {pair:?}");
        }
        // So an error that a long sum's rounding may reach passes at that K and fails at a
        // short one: a correct K = 16 result scaled by 1 + 3 * (the K = 16 norm bound).
        let (got, want) = dot_products(16, 64, None);
        let scale = 1.0 + 3.0 * Tolerance::f32_dot(16).norm as f32;
        let off: Vec<f32> = got.iter().map(|x| x * scale).collect();
        assert!(!check(&off, &want, Tolerance::f32_dot(16)).passed);
        assert!(check(&off, &want, Tolerance::f32_dot(65536)).passed);
    }

    #[test]
    fn poison_is_a_distinct_nan() {
        assert!(POISON.is_nan());
        assert!(!is_poison(f32::NAN));
        assert!(is_poison(POISON));
    }

    #[test]
    fn exact_check_distinguishes_failures() {
        let want = vec![1.0f32, 2.0, 3.0, 4.0];
        assert!(check_exact(&want, &want).passed);
        let report = check_exact(&[1.0, POISON, f32::NAN, 4.5], &want);
        assert!(!report.passed);
        assert_eq!(
            (report.unwritten, report.non_finite, report.wrong),
            (1, 1, 1)
        );
        assert_eq!(report.first_failure.unwrap().index, 1);
        // -0.0 and 0.0 differ bitwise: a copy must preserve bits.
        assert!(!check_exact(&[-0.0], &[0.0]).passed);
    }

    #[test]
    fn words_compare_exactly_and_report_themselves() {
        assert!(check_words(&[1, u32::MAX, 0x7FC0_0000], &[1, u32::MAX, 0x7FC0_0000]).passed);
        let report = check_words(&[1, 7, 0x7F80_0000, POISON.to_bits()], &[1, 8, 0, 5]);
        assert!(!report.passed);
        assert_eq!(
            (report.wrong, report.unwritten, report.non_finite),
            (2, 1, 0)
        );
        let first = report.first_failure.unwrap();
        assert_eq!((first.index, first.got, first.expected), (1, 7.0, 8.0));
    }
}
