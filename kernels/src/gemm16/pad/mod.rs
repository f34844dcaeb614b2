//! `gemm16_pad_rows`: operands a tensor map cannot describe copied into rows it can
//! ([`PadRows`]), declared once for both sides; its body is `device.rs`, its launcher
//! ([`RowPadder`]) `host.rs`.

#[cfg(target_arch = "nvptx64")]
mod device;
#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::RowPadder;

/// One matrix of 16-bit elements for [`gemm16_pad_rows`] to copy into rows a tensor map can
/// describe: `rows` rows of `cols` elements, `src_stride` apart from the element
/// `src_offset` (0..8) past the 16-byte aligned address `src`, into rows `dst_stride` apart
/// (a multiple of 8) from the 16-byte aligned `dst`, zeros past `cols`.
///
/// ```
/// use gpu_kernels::gemm16::PadRows;
/// // 3 rows of 13 elements, 13 apart, starting 6 bytes past a 16-byte boundary.
/// let pad = PadRows::new(0x1000 + 6, 3, 13, 13, 0x2000, PadRows::sector_stride(13));
/// assert_eq!((pad.src, pad.src_offset), (0x1000, 3));
/// assert_eq!(pad.dst_stride, 16);
/// assert_eq!(pad.copy_elements(), 48);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PadRows {
    /// The source, aligned down to 16 bytes.
    pub src: u64,
    /// The copy.
    pub dst: u64,
    /// Rows (0: nothing read or written).
    pub rows: u32,
    /// Elements per row.
    pub cols: u32,
    /// Elements from one source row to the next.
    pub src_stride: u32,
    /// Elements from `src` to the matrix's first (below 8).
    pub src_offset: u32,
    /// Elements from one row of the copy to the next: at least `cols`, a multiple of 8.
    pub dst_stride: u32,
    /// Keeps the size a multiple of 8 bytes.
    pub reserved: u32,
}

/// Threads of [`gemm16_pad_rows`]' blocks.
pub const PAD_THREADS: u32 = 256;

gpu::kernel! {
    /// Copies two matrices ([`PadRows`]) into rows a tensor map can describe: what
    /// [`Gemm16`](crate::gemm16::Gemm16) runs first for an A or B whose rows are not 16-byte
    /// multiples or start off 16 bytes (any K, any view). One warp per row, 16-byte loads and
    /// stores.
    ///
    /// # Safety
    /// Any 1-D grid of [`PAD_THREADS`]-thread blocks; for each matrix with `rows > 0`: the
    /// source's elements from `src` up to its last row's end readable (those before the
    /// matrix's own first are in the same 16-byte granule), `dst` holding `rows *
    /// dst_stride` elements, neither overlapping the other's.
    pub fn gemm16_pad_rows(first: PadRows, second: PadRows)
        [max_threads = PAD_THREADS]
    {
        // SAFETY: forwarded launch contract.
        unsafe { device::pad_rows([first, second]) }
    }
}
