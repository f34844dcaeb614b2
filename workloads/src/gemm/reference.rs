//! The reference kernel's body: what the fast kernels are checked against.

use super::REFERENCE_TILE;
use gpu::ptx;

gpu::static_shared!(
    /// The reference kernel's A tile.
    fn reference_a() -> [f32; (REFERENCE_TILE * REFERENCE_TILE) as usize]
);
gpu::static_shared!(
    /// The reference kernel's B tile.
    fn reference_b() -> [f32; (REFERENCE_TILE * REFERENCE_TILE) as usize]
);

/// `C = A B` with f64 accumulation: thread `(tx, ty)` of a block of `REFERENCE_TILE^2`
/// threads computes `C[m0 + ty][n0 + tx]`, the block walking K in `REFERENCE_TILE` steps
/// through two shared tiles. Deliberately simple: it is what the fast kernels are checked
/// against.
///
/// # Safety
/// Grid `(ceil(n / 16), ceil(m / 16))` of 256-thread blocks; `a` holds `m * k` floats, `b`
/// `k * n`, `c` `m * n` doubles.
#[inline(always)]
pub unsafe fn reference(a: *const f32, b: *const f32, c: *mut f64, m: u32, n: u32, k: u32) {
    let t = ptx::thread_idx_x();
    let (tx, ty) = (t % REFERENCE_TILE, t / REFERENCE_TILE);
    let row = ptx::block_idx_y() * REFERENCE_TILE + ty;
    let col = ptx::block_idx_x() * REFERENCE_TILE + tx;
    let (sa, sb) = (reference_a(), reference_b());
    let mut sum = 0.0f64;
    let mut k0 = 0;
    while k0 < k {
        // SAFETY: reads inside the matrices only; each thread writes its own slot.
        unsafe {
            let ak = k0 + tx;
            let a_value = if row < m && ak < k {
                a.add(row as usize * k as usize + ak as usize).read()
            } else {
                0.0
            };
            let bk = k0 + ty;
            let b_value = if bk < k && col < n {
                b.add(bk as usize * n as usize + col as usize).read()
            } else {
                0.0
            };
            sa.at(t).write(a_value);
            sb.at(t).write(b_value);
        }
        ptx::barrier_sync();
        for kk in 0..REFERENCE_TILE {
            // SAFETY: written before the barrier above.
            let (x, y) = unsafe {
                (
                    sa.at(ty * REFERENCE_TILE + kk).read(),
                    sb.at(kk * REFERENCE_TILE + tx).read(),
                )
            };
            sum += x as f64 * y as f64;
        }
        ptx::barrier_sync();
        k0 += REFERENCE_TILE;
    }
    if row < m && col < n {
        // SAFETY: inside C.
        unsafe { c.add(row as usize * n as usize + col as usize).write(sum) };
    }
}
