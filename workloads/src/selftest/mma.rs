//! The self-test of the multiply atom `gpu::wgmma::Wgmma` for each of its four element types
//! (sm_90a): [`selftest_mma`] runs, on one warpgroup, one generic body over the element type
//! `E` four times — BF16, FP16, E4M3, E5M2, in the order of [`MMA_ELEMENTS`] — and the host
//! ([`super::mma_host`]) compares what it wrote with `2 A B^T`, bit for bit.
//!
//! For each type the body copies a 64 x `E::K_PER_ROW` A tile and a 64 x `E::K_PER_ROW` B tile
//! (B stored `n x k`, K-major, N = 64: one 128-byte row of K per row of either) from `x` into
//! dynamic shared memory, each word where `SwizzledKMajor::<64, E>::byte_offset` puts it (so
//! as a tensor copy with 128-byte swizzle would), A at the start of the region (1024-byte
//! aligned), B 8 KiB after it. Then `fence.proxy.async.shared::cta` and a block barrier (the
//! multiplies read shared memory through the async proxy), and through `InFlight` (one group
//! kept in flight across the next issue) two k-tiles of `Wgmma<E, 64>` on the same two tiles:
//! the first with `accumulate = false` on accumulators holding [`MMA_STALE`] (which it must
//! discard), the second with `accumulate = true`; `finish` (the tied `wait_group 0`), then each
//! thread stores its 32 accumulators at the `(row, column)` `Accumulator::position` gives, a
//! 64 x 64 row-major FP32 tile per type; a block barrier before the next type overwrites the
//! tiles.
//!
//! Input `x` (words): per type, in [`MMA_ELEMENTS`]' order, A's 64 rows of 128 bytes, then
//! B's (`E`'s bits packed little-endian: element `k` of a row at byte `k * E::BITS / 8`), each
//! tile [`MMA_TILE_WORDS`] words. Output `out` (floats): per type `C = 2 A B^T` (64 x 64,
//! row-major, [`MMA_C_ELEMENTS`] floats). The host's inputs are small integers (-4 to 4,
//! exact in all four formats; every partial sum is an integer of magnitude at most
//! 2 * 128 * 16, exact in FP32), so whatever order the tensor cores add in, the result is
//! exact.
//!
//! What it proves, each type on its own (a wrong type or shape in the instruction, a K-step
//! that skips or repeats 32 bytes, a wrong swizzle or stride in the descriptor, a dropped
//! scale-d predicate would each change many elements):
//! - the four atoms' encoding: `wgmma.mma_async.m64n64k16.f32.bf16.bf16` and `.f16.f16`,
//!   `m64n64k32.f32.e4m3.e4m3` and `.e5m2.e5m2`, with their immediates (scale-a/b, and the
//!   transpose operand for 16-bit types only), read as the element types they name;
//! - the K-major descriptors per element size: one 128-byte swizzled row is 64 elements of K
//!   at 16 bits and 128 at 8 bits, the four instructions of a k-tile step 32 bytes each (k16
//!   and k32), and the 1024-byte stride over eight rows — the layout `byte_offset` describes;
//! - the scale-d predicate: `accumulate = false` overwrites (the stale accumulators vanish),
//!   `accumulate = true` adds (the factor 2);
//! - `InFlight`'s issue / wait / finish sequence, chained on one accumulator tile, with the
//!   accumulators read only after the tied wait; and `Accumulator::position` for N = 64.
//!
//! Lowering (seen with `cuobjdump -sass` on the sm_90a cubin; `host inspect --arch sm_90a
//! --only selftest_mma` lists the PTX, and of the SASS the `HGMMA`s, not the `QGMMA`s): per
//! type, 32 `LDG.E` and 32 `STS` (the fills),
//! `MEMBAR.ALL.CTA` + `FENCE.VIEW.ASYNC.S` (the proxy fence), `BAR.SYNC.DEFER_BLOCKING`, then
//! two `WARPGROUP.ARRIVE` regions of four `HGMMA.64x64x16.F32.BF16` / `HGMMA.64x64x16.F32`
//! (FP16: no type suffix) / `QGMMA.64x64x32.F32.E4M3.E4M3` / `QGMMA.64x64x32.F32.E5M2.E5M2`,
//! the last of each with `gsb0`, and `WARPGROUP.DEPBAR.LE gsb0, 0x1` / `0x1` / `0x0` for the
//! waits; 64 registers, no local memory. ptxas folds the constant predicate: the first
//! k-tile's first multiply reads `RZ, !UPT` (the stale accumulators are not even loaded),
//! the second's reads the accumulators — both scale-d forms of each instruction. The
//! kernel is in the sm_90a module only; on other GPUs the experiment is reported missing.
//!
//! [`selftest_mma`]: mma_entry_points::selftest_mma

/// One warpgroup.
pub const MMA_THREADS: u32 = 128;
/// Columns of the accumulator tile (N of `m64nNk*`): B's rows.
pub const MMA_N: u32 = 64;
/// Accumulator registers per thread.
pub const MMA_REGS: usize = MMA_N as usize / 2;
/// Rows of each operand tile: A's (M) and B's (N).
pub const MMA_ROWS: u32 = 64;
/// Words of one operand tile: 64 rows of 128 bytes.
pub const MMA_TILE_WORDS: u32 = MMA_ROWS * 128 / 4;
/// Floats of one type's result (64 x [`MMA_N`]).
pub const MMA_C_ELEMENTS: u32 = MMA_ROWS * MMA_N;
/// The element types, in the order of the input and output segments, as the report names
/// them.
pub const MMA_ELEMENTS: [&str; 4] = [
    "Wgmma<Bf16, 64> (m64n64k16 bf16)",
    "Wgmma<F16, 64> (m64n64k16 f16)",
    "Wgmma<E4M3, 64> (m64n64k32 e4m3)",
    "Wgmma<E5M2, 64> (m64n64k32 e5m2)",
];
/// Words of the input: A and B per type.
pub const MMA_INPUT_WORDS: u32 = MMA_ELEMENTS.len() as u32 * 2 * MMA_TILE_WORDS;
/// Floats of the output: one C per type.
pub const MMA_OUTPUT_LEN: u32 = MMA_ELEMENTS.len() as u32 * MMA_C_ELEMENTS;
/// Dynamic shared memory: the A and B tiles (8 KiB each), reused by every type.
pub const MMA_SHARED_BYTES: u32 = 2 * MMA_TILE_WORDS * 4;
/// What the accumulators hold before the first k-tile, which overwrites them
/// (`accumulate = false`): a multiply that added instead would leave a half in every element.
pub const MMA_STALE: f32 = 0.5;

/// The multiply-atom kernel, declared once for both sides.
pub mod mma_entry_points {
    gpu::kernel! {
        /// Two k-tiles of each element type's `Wgmma<E, 64>` on the tiles in `x`, the
        /// accumulators in `out` (see [`super`]).
        ///
        /// # Safety
        /// One block of `MMA_THREADS` threads (one warpgroup), 1-D, with `MMA_SHARED_BYTES`
        /// of dynamic shared memory; `x` holds `MMA_INPUT_WORDS` words, `out`
        /// `MMA_OUTPUT_LEN` floats.
        pub fn selftest_mma(x: *const u32, out: *mut f32) [max_threads = 128]
            [device if target_feature = "sm_90a"] {
            // SAFETY: forwarded launch contract.
            unsafe { crate::selftest::mma::device::mma(x, out) }
        }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod device {
    use super::{
        MMA_C_ELEMENTS, MMA_N, MMA_REGS, MMA_ROWS, MMA_STALE, MMA_THREADS, MMA_TILE_WORDS,
    };
    use gpu::ptx;
    use gpu::shared::{Shared, dynamic_shared};
    use gpu::wgmma::{
        Accumulator, Bf16, E4M3, E5M2, Element, F16, InFlight, SwizzledKMajor, WarpgroupMma, Wgmma,
    };

    type Acc = Accumulator<MMA_REGS>;
    type Tile<E> = SwizzledKMajor<MMA_ROWS, E>;

    /// Thread `t`'s share of one operand tile: words `t + 128 s` of `src` (row-major, 32 words
    /// a row) stored where the swizzled layout puts their first element.
    ///
    /// # Safety
    /// `src` holds `MMA_TILE_WORDS` words; `base` is 1024-byte aligned and starts
    /// `Tile::<E>::BYTES` of shared memory that nothing else reads or writes meanwhile.
    #[inline(always)]
    unsafe fn fill<E: Element>(src: *const u32, base: Shared<u8>, t: u32) {
        let mut s = 0;
        while s < MMA_TILE_WORDS / MMA_THREADS {
            let j = t + MMA_THREADS * s;
            let (row, word) = (j / 32, j % 32);
            // The word's first element: 32 bits hold 32 / E::BITS of them, contiguous in
            // the row's 16-byte chunk.
            let at = base.add(Tile::<E>::byte_offset(row, word * 32 / E::BITS));
            // SAFETY: word j of the tile (contract); a 4-byte aligned word inside the tile.
            unsafe { at.cast::<u32>().write(*src.add(j as usize)) };
            s += 1;
        }
    }

    /// One element type: fill both tiles from `x` (A then B, the type's segment), two k-tiles
    /// into one accumulator tile (overwrite, then add), store it at `out`.
    ///
    /// # Safety
    /// The whole warpgroup (every thread of the block), converged; `x` holds
    /// `2 * MMA_TILE_WORDS` words, `out` `MMA_C_ELEMENTS` floats; the dynamic shared memory
    /// holds both tiles and nothing else uses it.
    #[inline(always)]
    unsafe fn multiply<E: Element>(x: *const u32, out: *mut f32, t: u32)
    where
        Wgmma<E, MMA_N>: WarpgroupMma<Tile<E>, Acc = Acc>,
    {
        let a = dynamic_shared();
        let b = a.add(Tile::<E>::BYTES);
        // SAFETY: both tiles inside `x` and the region (contract); this block's threads alone
        // write them, each its own words.
        unsafe {
            fill::<E>(x, a, t);
            fill::<E>(x.add(MMA_TILE_WORDS as usize), b, t);
        }
        // Make the stores visible to the multiplies (the async proxy), then to the warpgroup.
        ptx::fence_proxy_async_shared();
        ptx::barrier_sync();
        let mut acc = Acc {
            regs: [MMA_STALE; MMA_REGS],
        };
        // SAFETY: both tiles are 1024-byte aligned (dynamic shared memory and 8 KiB after it)
        // and laid out as SwizzledKMajor<64, E> (filled above); 64 rows each.
        let (da, db) = unsafe { (Tile::<E>::descriptor(a, 0), Tile::<E>::descriptor(b, 0)) };
        let mut flight = InFlight::<Acc, (), 1>::new(&mut acc);
        // SAFETY: the whole warpgroup with the same arguments; the tiles are filled, fenced
        // and not written until `finish` (below) and the barrier after it.
        unsafe {
            let _ = flight.mma::<Wgmma<E, MMA_N>, Tile<E>>((), da, db, false);
            let _ = flight.mma::<Wgmma<E, MMA_N>, Tile<E>>((), da, db, true);
            let _ = flight.finish();
        }
        let mut i = 0;
        while i < MMA_REGS {
            let (row, col) = Acc::position(t, i as u32);
            // SAFETY: row < 64, col < MMA_N: inside the type's C (contract).
            unsafe { *out.add((row * MMA_N + col) as usize) = acc.regs[i] };
            i += 1;
        }
        // Every thread's wait has returned (so every multiply has read the tiles) before the
        // next type rewrites them.
        ptx::barrier_sync();
    }

    /// The body of `selftest_mma`.
    ///
    /// # Safety
    /// Its launch contract.
    #[inline(always)]
    pub(crate) unsafe fn mma(x: *const u32, out: *mut f32) {
        let t = ptx::thread_idx_x();
        let segment = |k: usize| (2 * MMA_TILE_WORDS as usize * k, MMA_C_ELEMENTS as usize * k);
        // SAFETY: segment k of the input and output for the k-th type (contract: both hold
        // four); the whole block runs each call, converged.
        unsafe {
            let (i, o) = segment(0);
            multiply::<Bf16>(x.add(i), out.add(o), t);
            let (i, o) = segment(1);
            multiply::<F16>(x.add(i), out.add(o), t);
            let (i, o) = segment(2);
            multiply::<E4M3>(x.add(i), out.add(o), t);
            let (i, o) = segment(3);
            multiply::<E5M2>(x.add(i), out.add(o), t);
        }
    }
}
