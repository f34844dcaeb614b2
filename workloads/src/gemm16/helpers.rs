//! The helper kernels' bodies (device code): the `f64` reference and the widening for the
//! check, generic over the element ([`SixteenBit`]), one entry point per element in
//! [`super`].

use gpu::ptx;
use gpu::wgmma::SixteenBit;

/// See `bf16_gemm_reference`.
pub(super) unsafe fn reference<E: SixteenBit>(
    a: *const E,
    b: *const E,
    c: *mut f64,
    m: u32,
    n: u32,
    k: u32,
) {
    let index = ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64;
    if index >= m as u64 * n as u64 {
        return;
    }
    // n >= 1 here (index < m n): said to the compiler, which then drops a zero check.
    let n = n.max(1);
    let (row, col) = (index / n as u64, index % n as u64);
    let mut sum = 0.0f64;
    for kk in 0..k as u64 {
        // SAFETY: row < m, col < n, kk < k: inside A and B (launch contract).
        let (x, y) = unsafe {
            (
                *a.add((row * k as u64 + kk) as usize),
                *b.add((col * k as u64 + kk) as usize),
            )
        };
        sum += x.to_f32() as f64 * y.to_f32() as f64;
    }
    // SAFETY: index < m * n.
    unsafe { *c.add(index as usize) = sum };
}

/// See `bf16_widen`.
pub(super) unsafe fn widen<E: SixteenBit>(src: *const E, dst: *mut f32, len: u64, poison: u32) {
    let step = ptx::grid_dim_x() as u64 * ptx::block_dim_x() as u64;
    let mut i = ptx::block_idx_x() as u64 * ptx::block_dim_x() as u64 + ptx::thread_idx_x() as u64;
    while i < len {
        // SAFETY: i < len (launch contract).
        let x = unsafe { *src.add(i as usize) };
        let y = if x.to_bits() == super::C_POISON {
            f32::from_bits(poison)
        } else {
            x.to_f32()
        };
        // SAFETY: as above.
        unsafe { *dst.add(i as usize) = y };
        i += step;
    }
}
