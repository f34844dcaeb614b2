//! The verification kernels' bodies (see [`super`]).

use super::shapes::{FIRST_FAILURE, NON_FINITE, POISON_BITS, UNWRITTEN, WRONG};
use core::sync::atomic::{AtomicU64, Ordering};
use gpu::ptx;

/// This thread's index in the grid and the grid's size, in elements of a grid-stride walk.
#[inline(always)]
fn grid_position() -> (u64, u64) {
    let threads = ptx::block_dim_x() as u64;
    let index = ptx::block_idx_x() as u64 * threads + ptx::thread_idx_x() as u64;
    (index, ptx::grid_dim_x() as u64 * threads)
}

/// One thread's tally of failures.
#[derive(Default)]
struct Tally {
    unwritten: u64,
    non_finite: u64,
    wrong: u64,
    first: Option<u64>,
}

impl Tally {
    /// Counts element `i` (`got`) as failed unless `ok`; poison and non-finite values are
    /// classed first, as `harness::check` does.
    #[inline(always)]
    fn fail(&mut self, i: u64, got: f32) {
        if got.to_bits() == POISON_BITS {
            self.unwritten += 1;
        } else if !got.is_finite() {
            self.non_finite += 1;
        } else {
            self.wrong += 1;
        }
        if self.first.is_none() {
            self.first = Some(i);
        }
    }

    /// Adds this thread's tally to the grid's `counts` (only the words it has something for).
    ///
    /// # Safety
    /// `counts` holds `COUNT_WORDS` 8-byte aligned words only atomics touch during the launch.
    #[inline(always)]
    unsafe fn publish(&self, counts: *mut u64) {
        // SAFETY: the caller's contract; AtomicU64 has u64's layout.
        let word = |w: usize| unsafe { &*counts.add(w).cast::<AtomicU64>() };
        for (w, count) in [
            (UNWRITTEN, self.unwritten),
            (NON_FINITE, self.non_finite),
            (WRONG, self.wrong),
        ] {
            if count > 0 {
                word(w).fetch_add(count, Ordering::Relaxed);
            }
        }
        if let Some(first) = self.first {
            word(FIRST_FAILURE).fetch_min(first, Ordering::Relaxed);
        }
    }
}

/// See `verify_reference_scale`.
///
/// # Safety
/// Its launch contract.
#[inline(always)]
pub(super) unsafe fn reference_scale(reference: *const f64, n: u64, partials: *mut f64) {
    let (t, stride) = grid_position();
    let (mut max_abs, mut sum_sq) = (0.0f64, 0.0f64);
    let mut i = t;
    while i < n {
        // SAFETY: i < n elements of `reference`.
        let r = unsafe { reference.add(i as usize).read() };
        max_abs = max_abs.max(r.abs());
        sum_sq += r * r;
        i += stride;
    }
    // SAFETY: two doubles per thread of the grid.
    unsafe {
        partials.add(2 * t as usize).write(max_abs);
        partials.add(2 * t as usize + 1).write(sum_sq);
    }
}

/// See `verify_against_reference`.
///
/// # Safety
/// Its launch contract.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn against_reference(
    out: *const f32,
    reference: *const f64,
    n: u64,
    scale: f64,
    element: f64,
    exact: u32,
    partials: *mut f64,
    counts: *mut u64,
) {
    let (t, stride) = grid_position();
    let (mut err2, mut max_scaled) = (0.0f64, 0.0f64);
    let mut tally = Tally::default();
    let mut i = t;
    while i < n {
        // SAFETY: i < n elements of both.
        let (got, expected) =
            unsafe { (out.add(i as usize).read(), reference.add(i as usize).read()) };
        let ok = if exact != 0 {
            // Bits first, as check_exact does (a poison or non-finite value is classed when
            // the tally counts it).
            got.to_bits() == (expected as f32).to_bits()
        } else if got.to_bits() == POISON_BITS || !got.is_finite() {
            false
        } else {
            let diff = got as f64 - expected;
            err2 += diff * diff;
            if scale > 0.0 {
                max_scaled = max_scaled.max(diff.abs() / scale);
            }
            // approx's relative_eq with epsilon = element * scale, max_relative = element:
            // equal values pass, an infinite one never does.
            let largest = (got as f64).abs().max(expected.abs());
            got as f64 == expected
                || (!expected.is_infinite()
                    && (diff.abs() <= element * scale || diff.abs() <= largest * element))
        };
        if !ok {
            tally.fail(i, got);
        }
        i += stride;
    }
    // SAFETY: two doubles per thread of the grid; the counts as the contract says.
    unsafe {
        partials.add(2 * t as usize).write(err2);
        partials.add(2 * t as usize + 1).write(max_scaled);
        tally.publish(counts);
    }
}

/// See `verify_bits`.
///
/// # Safety
/// Its launch contract.
#[inline(always)]
pub(super) unsafe fn bits(out: *const f32, expected: *const f32, n: u64, counts: *mut u64) {
    let (t, stride) = grid_position();
    let mut tally = Tally::default();
    let mut i = t;
    while i < n {
        // SAFETY: i < n elements of both.
        let (got, want) = unsafe { (out.add(i as usize).read(), expected.add(i as usize).read()) };
        if got.to_bits() != want.to_bits() {
            tally.fail(i, got);
        }
        i += stride;
    }
    // SAFETY: the counts as the contract says.
    unsafe { tally.publish(counts) };
}
