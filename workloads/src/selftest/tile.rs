//! The self-test of the register-tile verbs on `gpu::wgmma::Accumulator` (sm_90a):
//! [`selftest_tile`] fills two 64 x [`TILE_N`] accumulators of one warpgroup from its input,
//! each element where `Accumulator::position` says, runs every verb and writes what each
//! thread holds; the host ([`super::tile_host`]) computes the same from the tile in memory
//! and compares bit for bit (the exponentials within the bound `gpu::math` documents).
//!
//! Input `x` (floats): tile `a` (64 x `TILE_N`, row-major; small integers, so that every
//! sum is exact), tile `b` (the same shape; floats across many binades and a few rounding
//! ties, for the conversions), then per row of the tile the running maximum given to
//! `row_max_with`, the factor of `scale_rows` (signed powers of two: exact) and the offset of
//! `exp2_scaled`, then its `scale`. Output (words): segment `k` of [`TILE_OUTPUTS`] holds, for
//! thread `t`, its `width` words from `segment_start(k) + t * width` on.
//!
//! The kernel lives in the sm_90a module (`to_a_fragment` packs with the sm_90a build's
//! conversions), the only part of the self-test that does.
//!
//! [`selftest_tile`]: tile_entry_points::selftest_tile

/// Columns of the test's accumulators (`REGS = TILE_N / 2` registers a thread): two 64-column
/// A fragments each.
pub const TILE_N: u32 = 128;
/// Registers of each accumulator per thread.
pub const TILE_REGS: usize = TILE_N as usize / 2;
/// One warpgroup.
pub const TILE_THREADS: u32 = 128;
/// Elements of one 64 x [`TILE_N`] tile.
pub const TILE_ELEMENTS: u32 = 64 * TILE_N;
/// Where the per-row inputs start in `x`: `init`, `s`, `offset` (64 each), then `scale`.
pub const TILE_ROWS_AT: u32 = 2 * TILE_ELEMENTS;
/// Floats of the input.
pub const TILE_INPUT_LEN: u32 = TILE_ROWS_AT + 3 * 64 + 1;
/// The 64-column A fragments of one accumulator.
pub const TILE_FRAGMENTS: usize = TILE_REGS / 32;

/// What the kernel writes, in order: each verb's name and its words per thread.
pub const TILE_OUTPUTS: [(&str, u32); 7] = [
    ("row_max", 2),
    ("row_max_with", 2),
    ("row_sum", 2),
    ("scale_rows", TILE_REGS as u32),
    ("exp2_scaled", TILE_REGS as u32),
    ("to_a_fragment::<Bf16>", 16 * TILE_FRAGMENTS as u32),
    ("to_a_fragment::<F16>", 16 * TILE_FRAGMENTS as u32),
];

/// The first word of segment `k` of the output (`k == TILE_OUTPUTS.len()`: its length).
pub const fn segment_start(k: usize) -> u32 {
    let mut start = 0;
    let mut i = 0;
    while i < k {
        start += TILE_THREADS * TILE_OUTPUTS[i].1;
        i += 1;
    }
    start
}

/// Words of the output.
pub const TILE_OUTPUT_LEN: u32 = segment_start(TILE_OUTPUTS.len());

/// The register-tile kernel, declared once for both sides.
pub mod tile_entry_points {
    gpu::kernel! {
        /// Every register-tile verb on two accumulators loaded from `x`, each thread's
        /// results in `out` (see [`TILE_OUTPUTS`](super::TILE_OUTPUTS)).
        ///
        /// # Safety
        /// One block of `TILE_THREADS` threads (one warpgroup), 1-D; `x` holds
        /// `TILE_INPUT_LEN` floats, `out` `TILE_OUTPUT_LEN` words.
        pub fn selftest_tile(x: *const f32, out: *mut u32) [max_threads = 128]
            [device if target_feature = "sm_90a"] {
            // SAFETY: forwarded launch contract.
            unsafe { crate::selftest::tile::device::tile(x, out) }
        }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod device {
    use super::segment_start;
    use super::{TILE_ELEMENTS, TILE_FRAGMENTS, TILE_N, TILE_OUTPUTS, TILE_REGS, TILE_ROWS_AT};
    use gpu::ptx;
    use gpu::wgmma::{Accumulator, Bf16, F16};

    type Tile = Accumulator<TILE_REGS>;

    /// The tile at `x` (64 x `TILE_N`, row-major) as thread `t`'s accumulator registers.
    ///
    /// # Safety
    /// `x` holds `TILE_ELEMENTS` floats.
    #[inline(always)]
    unsafe fn load(x: *const f32, t: u32) -> Tile {
        let mut tile = Tile::zeros();
        let mut i = 0;
        while i < TILE_REGS {
            let (row, col) = Tile::position(t, i as u32);
            // SAFETY: row < 64, col < TILE_N: inside the tile (contract).
            tile.regs[i] = unsafe { *x.add((row * TILE_N + col) as usize) };
            i += 1;
        }
        tile
    }

    /// Thread `t`'s words of segment `k`.
    ///
    /// # Safety
    /// `out` holds the whole output; `W` is segment `k`'s width.
    #[inline(always)]
    unsafe fn write<const W: usize>(out: *mut u32, k: usize, t: u32, words: [u32; W]) {
        let start = segment_start(k) + t * TILE_OUTPUTS[k].1;
        let mut i = 0;
        while i < W {
            // SAFETY: thread t's words of segment k, inside the output (contract).
            unsafe { *out.add(start as usize + i) = words[i] };
            i += 1;
        }
    }

    /// The body of `selftest_tile`.
    ///
    /// # Safety
    /// Its launch contract.
    #[inline(always)]
    pub(crate) unsafe fn tile(x: *const f32, out: *mut u32) {
        let t = ptx::thread_idx_x();
        // SAFETY: both tiles and the per-row inputs are inside `x` (contract).
        let (mut a, b, rows) = unsafe {
            (
                load(x, t),
                load(x.add(TILE_ELEMENTS as usize), t),
                x.add(TILE_ROWS_AT as usize),
            )
        };
        let (row, _) = Tile::position(t, 0);
        // SAFETY: segment `k` of the per-row inputs, rows `row` and `row + 8` (< 64), and
        // the scale after them.
        let per_row = |k: u32| unsafe {
            [
                *rows.add((64 * k + row) as usize),
                *rows.add((64 * k + row + 8) as usize),
            ]
        };
        let (init, s, offset) = (per_row(0), per_row(1), per_row(2));
        // SAFETY: the word after the per-row inputs.
        let scale = unsafe { *rows.add(3 * 64) };
        let bits = |v: [f32; 2]| v.map(f32::to_bits);
        // SAFETY: every segment's width is what its `write` is given; every lane of each warp
        // runs the reductions together (no branch before them).
        unsafe {
            write(out, 0, t, bits(a.row_max()));
            write(out, 1, t, bits(a.row_max_with(init)));
            write(out, 2, t, bits(a.row_sum()));
            let mut scaled = a;
            scaled.scale_rows(s);
            write(out, 3, t, scaled.regs.map(f32::to_bits));
            a.exp2_scaled(scale, offset);
            write(out, 4, t, a.regs.map(f32::to_bits));
            let mut bf16 = [0u32; 16 * TILE_FRAGMENTS];
            let mut f16 = [0u32; 16 * TILE_FRAGMENTS];
            let mut j = 0;
            while j < TILE_FRAGMENTS {
                bf16[16 * j..16 * j + 16].copy_from_slice(&b.to_a_fragment::<Bf16>(j).regs);
                f16[16 * j..16 * j + 16].copy_from_slice(&b.to_a_fragment::<F16>(j).regs);
                j += 1;
            }
            write(out, 5, t, bf16);
            write(out, 6, t, f16);
        }
    }
}
