//! The self-test of `gpu::math` and `gpu::reduce`: [`selftest_math`] evaluates every math
//! function over a sweep of its domain, [`selftest_collectives`] runs every shuffle and every
//! warp and block reduction over random words; the host ([`super::math_host`]) compares each
//! result with an f64 reference against the bound `gpu::math` documents, and the collectives
//! bit for bit with a host emulation of the same combination order.
//!
//! [`selftest_math`]: math_entry_points::selftest_math
//! [`selftest_collectives`]: math_entry_points::selftest_collectives

/// The functions of `gpu::math`, in the order of the math kernel's output segments.
pub const MATH_FUNCTIONS: [&str; 10] = [
    "exp2",
    "exp",
    "exp_accurate",
    "log2",
    "recip",
    "recip_accurate",
    "rsqrt",
    "rsqrt_accurate",
    "tanh",
    "tanh_accurate",
];
/// Inputs per function (one segment of `x` and of the output each).
pub const MATH_POINTS: u32 = 1 << 16;
/// Threads per block of both kernels.
pub const MATH_THREADS: u32 = 256;

/// Threads per block of the collectives kernel: five warps, so a block reduction combines
/// fewer partials than the 32 a warp of them could hold.
pub const COLLECTIVE_THREADS: u32 = 160;
/// Blocks of the collectives kernel.
pub const COLLECTIVE_BLOCKS: u32 = 24;
/// Words each thread writes: three shuffles, then nine warp and nine block reductions
/// (`f32`, `i32`, `u32` by sum, max, min).
pub const COLLECTIVE_OUTPUTS: u32 = 21;
/// Threads of the collectives launch; its output is `COLLECTIVE_OUTPUTS` words a thread, then
/// one word: `block_dim_y + block_dim_z + grid_dim_y + grid_dim_z` (4 for a 1-D launch).
pub const COLLECTIVE_LEN: u32 = COLLECTIVE_THREADS * COLLECTIVE_BLOCKS;
/// The shuffles' operands: `shfl_xor` mask, `shfl_down` delta, `shfl_idx` source lane.
pub const SHUFFLE_OPERANDS: [u32; 3] = [5, 3, 7];

/// The math and collectives kernels, declared once for both sides.
pub mod math_entry_points {
    gpu::kernel! {
        /// `out[i] = f_k(x[i])` for segment `k = i / MATH_POINTS` of every function of
        /// [`MATH_FUNCTIONS`](super::MATH_FUNCTIONS).
        ///
        /// # Safety
        /// Any 1-D grid of blocks of any size; `x` and `out` hold
        /// `MATH_FUNCTIONS.len() * MATH_POINTS` floats.
        pub fn selftest_math(x: *const f32, out: *mut f32) {
            // SAFETY: forwarded launch contract.
            unsafe { crate::selftest::math::device::math(x, out) }
        }
    }

    gpu::kernel! {
        /// Every shuffle and reduction of `gpu::reduce` over `words` (see
        /// [`COLLECTIVE_OUTPUTS`](super::COLLECTIVE_OUTPUTS) for the output's layout).
        ///
        /// # Safety
        /// `COLLECTIVE_BLOCKS` blocks of `COLLECTIVE_THREADS` threads, 1-D; `words` holds
        /// `COLLECTIVE_LEN` words, `out` `COLLECTIVE_LEN * COLLECTIVE_OUTPUTS + 1`.
        pub fn selftest_collectives(words: *const u32, out: *mut u32) {
            // SAFETY: forwarded launch contract.
            unsafe { crate::selftest::math::device::collectives(words, out) }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{COLLECTIVE_OUTPUTS, MATH_FUNCTIONS, MATH_POINTS, SHUFFLE_OPERANDS};
    use gpu::math;
    use gpu::ptx;
    use gpu::reduce::{Max, Min, Reduce, ShflValue, Sum, block_reduce, shfl_down, shfl_idx};
    use gpu::reduce::{shfl_xor, warp_reduce};

    gpu::static_shared!(fn scratch_f32() -> [f32; 32]);
    gpu::static_shared!(fn scratch_i32() -> [i32; 32]);
    gpu::static_shared!(fn scratch_u32() -> [u32; 32]);

    /// The body of `selftest_math`.
    ///
    /// # Safety
    /// Its launch contract.
    #[inline(always)]
    pub(crate) unsafe fn math(x: *const f32, out: *mut f32) {
        let total = MATH_FUNCTIONS.len() as u32 * MATH_POINTS;
        let step = ptx::grid_dim_x() * ptx::block_dim_x();
        let mut i = ptx::block_idx_x() * ptx::block_dim_x() + ptx::thread_idx_x();
        while i < total {
            // SAFETY: i < total, inside both buffers.
            let v = unsafe { *x.add(i as usize) };
            let y = match i / MATH_POINTS {
                0 => math::exp2(v),
                1 => math::exp(v),
                2 => math::exp_accurate(v),
                3 => math::log2(v),
                4 => math::recip(v),
                5 => math::recip_accurate(v),
                6 => math::rsqrt(v),
                7 => math::rsqrt_accurate(v),
                8 => math::tanh(v),
                _ => math::tanh_accurate(v),
            };
            // SAFETY: as above.
            unsafe { *out.add(i as usize) = y };
            i += step;
        }
    }

    /// A value's warp and block sum, max and min, written from `out[at]` on.
    ///
    /// # Safety
    /// Every thread of the block calls it; `out[at..at + 3]` and `out[at + 9..at + 12]` are
    /// this thread's.
    #[inline(always)]
    unsafe fn reductions<T: ShflValue + gpu::ptx::SharedValue>(
        value: T,
        scratch: gpu::shared::SharedArray<T, 32>,
        out: *mut u32,
        at: usize,
    ) where
        Sum: Reduce<T>,
        Max: Reduce<T>,
        Min: Reduce<T>,
    {
        let warp = [
            warp_reduce::<Sum, T>(value),
            warp_reduce::<Max, T>(value),
            warp_reduce::<Min, T>(value),
        ];
        // SAFETY: every thread of the block, whole warps (caller); the scratch is this
        // function's alone while it runs.
        let block = unsafe {
            [
                block_reduce::<Sum, T>(value, scratch),
                block_reduce::<Max, T>(value, scratch),
                block_reduce::<Min, T>(value, scratch),
            ]
        };
        for (j, (w, b)) in warp.iter().zip(&block).enumerate() {
            // SAFETY: this thread's words (caller).
            unsafe {
                *out.add(at + j) = w.to_bits32();
                *out.add(at + 9 + j) = b.to_bits32();
            }
        }
    }

    /// The body of `selftest_collectives`.
    ///
    /// # Safety
    /// Its launch contract.
    #[inline(always)]
    pub(crate) unsafe fn collectives(words: *const u32, out: *mut u32) {
        let i = ptx::block_idx_x() * ptx::block_dim_x() + ptx::thread_idx_x();
        // SAFETY: one word per thread of the launch (contract).
        let u = unsafe { *words.add(i as usize) };
        let base = (i * COLLECTIVE_OUTPUTS) as usize;
        let [xor, down, idx] = SHUFFLE_OPERANDS;
        // SAFETY: this thread's words; every thread of the block calls `reductions`.
        unsafe {
            *out.add(base) = shfl_xor(u, xor);
            *out.add(base + 1) = shfl_down(u, down);
            *out.add(base + 2) = shfl_idx(u, idx);
            reductions(f32::from_bits(u), scratch_f32(), out, base + 3);
            reductions(u as i32, scratch_i32(), out, base + 6);
            reductions(u, scratch_u32(), out, base + 9);
        }
        if i == 0 {
            let dims =
                ptx::block_dim_y() + ptx::block_dim_z() + ptx::grid_dim_y() + ptx::grid_dim_z();
            let threads = ptx::grid_dim_x() * ptx::block_dim_x();
            // SAFETY: the word after every thread's (contract).
            unsafe { *out.add((threads * COLLECTIVE_OUTPUTS) as usize) = dims };
        }
    }
}
