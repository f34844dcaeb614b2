//! Warp-wide 8 x 8 matrix moves between registers and shared memory: `ldmatrix` (sm_75+) and
//! `stmatrix` (sm_90), four matrices of 16-bit elements at a time.
//!
//! Each of the four 8 x 8 matrices is eight rows of 16 bytes anywhere in shared memory (each
//! row 16-byte aligned): lane `l` gives the address of row `l % 8` of matrix `l / 8`. In
//! registers, matrix `i` is the `i`-th 32-bit register of every lane, lane `l` holding row
//! `l / 4`, elements `2 (l % 4)` and `2 (l % 4) + 1` (the low half first) — the fragment layout
//! of the tensor cores' operands and accumulators (`mma.sync`, `wgmma`'s A from registers and
//! its accumulators rounded to 16 bits), which is what makes these the way to move them: one
//! instruction per lane for 16 bytes, where plain `ld.shared`/`st.shared` of the fragment take
//! four.

use super::Shared;
use core::arch::asm;

/// One 16-byte row of an 8 x 8 matrix of 16-bit elements in shared memory.
pub type MatrixRow = [u32; 4];

/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0, r1, r2, r3}, [row];` — loads four 8 x 8
/// matrices, lane `l` giving `row`, the address of row `l % 8` of matrix `l / 8`; returns this
/// lane's fragment of each (module docs). SASS: `LDSM.16.M88.4`.
///
/// # Safety
/// All 32 lanes of the warp execute it together, converged (`.sync.aligned`); every lane's
/// `row` is 16 initialized bytes of this block's shared memory, 16-byte aligned, that nothing
/// writes meanwhile (an async copy into them waited for and made visible).
#[inline(always)]
pub unsafe fn ldmatrix_x4(row: Shared<MatrixRow>) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: forwarded contract.
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{a}, {b}, {c}, {d}}}, [{row}];",
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
            row = in(reg32) row.addr(),
            options(readonly, nostack, preserves_flags)
        )
    }
    [a, b, c, d]
}

/// `stmatrix.sync.aligned.m8n8.x4.shared.b16 [row], {r0, r1, r2, r3};` — stores four 8 x 8
/// matrices (sm_90), this lane's fragment of matrix `i` in `regs[i]`, lane `l` giving `row`,
/// the address of row `l % 8` of matrix `l / 8` (module docs). SASS: `STSM.16.M88.4`.
///
/// # Safety
/// All 32 lanes of the warp execute it together, converged (`.sync.aligned`); every lane's
/// `row` is 16 bytes of this block's shared memory, 16-byte aligned, that no other thread or
/// copy reads or writes meanwhile, and no two lanes give the same row.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub unsafe fn stmatrix_x4(row: Shared<MatrixRow>, regs: [u32; 4]) {
    // SAFETY: forwarded contract.
    unsafe {
        asm!(
            "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{row}], {{{a}, {b}, {c}, {d}}};",
            row = in(reg32) row.addr(),
            a = in(reg32) regs[0],
            b = in(reg32) regs[1],
            c = in(reg32) regs[2],
            d = in(reg32) regs[3],
            options(nostack, preserves_flags)
        )
    }
}
