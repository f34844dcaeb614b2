//! Verification on the GPU: an output compared with its reference by a kernel, so that
//! checking a 2^31-element result takes a pass over memory instead of a download and a CPU
//! loop. Not a workload: the workloads' `check` uses it past [`GPU_CHECK_MIN_ELEMENTS`]
//! elements, and the CPU comparison of `harness::check` (the same rules) below that and as
//! this module's test (the GPU tests compare the two on outputs with faults planted in them).
//!
//! Every kernel walks its arrays grid-stride with [`VERIFY_THREADS`]-thread blocks, each thread
//! keeping its own counts and sums: counts of unwritten (still the poison), non-finite and
//! wrong elements and the first failing index go to [`COUNT_WORDS`] `u64`s by atomics (only
//! where a thread found any), the sums to [`PARTIALS_PER_THREAD`] `f64`s per thread, which the
//! host adds up.

mod shapes;
pub use shapes::*;

#[cfg(target_arch = "nvptx64")]
mod kernels;

/// The host half: a [`host::Verifier`] that launches the kernels and reads their results into a
/// `harness::check::CheckReport`.
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;

gpu::kernel! {
    /// The reference's scale: per thread, `max |ref_i|` and `sum ref_i^2` over its elements,
    /// to `partials[2 t]` and `partials[2 t + 1]`.
    ///
    /// # Safety
    /// `reference` holds `n` doubles; `partials` holds `PARTIALS_PER_THREAD` doubles per thread
    /// of the grid; blocks of `VERIFY_THREADS` threads, any 1-D grid.
    pub fn verify_reference_scale(reference: *const f64, n: u64, partials: *mut f64)
        [max_threads = VERIFY_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { crate::verify::kernels::reference_scale(reference, n, partials) }
    }
}

gpu::kernel! {
    /// `out` against `reference`, the rules of `harness::check::check` (`exact == 0`: the
    /// per-element tolerance `element` against the reference's `scale`; per thread the sum of
    /// squared errors and the largest scaled error to `partials`) or of `check_exact_against`
    /// (`exact != 0`: bit for bit against the reference rounded to f32). Counts and the first
    /// failing index to `counts` (`COUNT_WORDS` words, zeroed, the first index `u64::MAX`).
    ///
    /// # Safety
    /// `out` holds `n` floats and `reference` `n` doubles; `partials` and `counts` as above;
    /// blocks of `VERIFY_THREADS` threads, any 1-D grid.
    pub fn verify_against_reference(
        out: *const f32,
        reference: *const f64,
        n: u64,
        scale: f64,
        element: f64,
        exact: u32,
        partials: *mut f64,
        counts: *mut u64,
    ) [max_threads = VERIFY_THREADS] {
        // SAFETY: forwarded launch contract.
        unsafe {
            crate::verify::kernels::against_reference(
                out, reference, n, scale, element, exact, partials, counts,
            )
        }
    }
}

gpu::kernel! {
    /// `out` against `expected` bit for bit (the rules of `harness::check::check_exact`):
    /// counts and the first failing index to `counts`.
    ///
    /// # Safety
    /// `out` and `expected` hold `n` floats; `counts` as for `verify_against_reference`;
    /// blocks of `VERIFY_THREADS` threads, any 1-D grid.
    pub fn verify_bits(out: *const f32, expected: *const f32, n: u64, counts: *mut u64)
        [max_threads = VERIFY_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { crate::verify::kernels::bits(out, expected, n, counts) }
    }
}
