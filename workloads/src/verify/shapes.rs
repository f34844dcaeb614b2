//! What the verification kernels and their host share: geometry and result layout.

/// Threads per block of every verification kernel.
pub const VERIFY_THREADS: u32 = 256;
/// Blocks per SM the host launches.
pub const VERIFY_BLOCKS_PER_SM: u32 = 4;
/// Outputs below this many elements are compared on the CPU (a download is cheap there).
pub const GPU_CHECK_MIN_ELEMENTS: usize = 1 << 20;

/// `f64`s each thread writes to `partials`.
pub const PARTIALS_PER_THREAD: usize = 2;
/// `u64` words of `counts`: unwritten, non-finite, wrong, the first failing index.
pub const COUNT_WORDS: usize = 4;
/// Index in `counts` of the elements still holding the poison.
pub const UNWRITTEN: usize = 0;
/// Index in `counts` of the non-finite elements (other than the poison).
pub const NON_FINITE: usize = 1;
/// Index in `counts` of the elements outside the tolerance (or not bit-identical).
pub const WRONG: usize = 2;
/// Index in `counts` of the first failing element's index (`u64::MAX`: none).
pub const FIRST_FAILURE: usize = 3;
/// The poison's bits (`harness::check::POISON`).
pub const POISON_BITS: u32 = 0x7fc0_0bad;
