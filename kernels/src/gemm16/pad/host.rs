//! The host side of [`gemm16_pad_rows`]: [`PadRows`] as a kernel argument and [`RowPadder`],
//! the one way it is launched — by [`Gemm16`](crate::gemm16::Gemm16) for operands a tensor map cannot
//! describe, and by the measurements of the kernel families that take padded operands too.

use super::{PAD_THREADS, PadRows, gemm16_pad_rows};
use gpu_runtime::cudarc::driver::CudaStream;
use gpu_runtime::{
    Gpu, GpuError, Guards, Kernel, KernelArg, LaunchConfig, Library, Param, StructArg,
};

impl Param for PadRows {
    type Arg<'a> = PadRows;
    fn kernel_arg<'g>(arg: &'g mut PadRows, _: &'g CudaStream, _: &mut Guards<'g>) -> KernelArg {
        // SAFETY: `repr(C)`, two 8-byte addresses and six 4-byte numbers, the kernel's
        // declared parameter.
        KernelArg::Struct(unsafe { StructArg::new(arg) })
    }
}

impl PadRows {
    /// No matrix: zero rows, never read or written.
    pub const NONE: PadRows = PadRows {
        src: 0,
        dst: 0,
        rows: 0,
        cols: 0,
        src_stride: 0,
        src_offset: 0,
        dst_stride: 0,
        reserved: 0,
    };

    /// The matrix of `rows x cols` elements, `src_stride` apart from the address `src` (any
    /// 2-byte aligned address), to be copied into rows `dst_stride` apart (at least `cols`, a
    /// multiple of 8) from `dst` (16-byte aligned).
    pub const fn new(
        src: u64,
        rows: u32,
        cols: u32,
        src_stride: u32,
        dst: u64,
        dst_stride: u32,
    ) -> PadRows {
        PadRows {
            src: src & !15,
            dst,
            rows,
            cols,
            src_stride,
            src_offset: ((src & 15) / 2) as u32,
            dst_stride,
            reserved: 0,
        }
    }

    /// The row stride [`Gemm16`](crate::gemm16::Gemm16) copies `cols` elements into: a multiple of 16
    /// elements, so that every row starts on a 32-byte sector (rows that start mid-sector
    /// cost the tensor copies 1.76x the L2 sectors: `Gemm16::gemm`).
    pub const fn sector_stride(cols: u32) -> u32 {
        cols.next_multiple_of(16)
    }

    /// Elements of the copy.
    pub const fn copy_elements(&self) -> u64 {
        self.rows as u64 * self.dst_stride as u64
    }
}

/// [`gemm16_pad_rows`], loaded for one GPU.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gpu_kernels::gemm16::{PadRows, RowPadder};
/// use half::bf16;
/// // A program whose own module links this crate's device code (the measurements).
/// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
/// let padder = RowPadder::load(&gpu)?;
/// let a = gpu.upload(&vec![bf16::ONE; 5 * 13], "A")?;
/// let copy = gpu.zeros::<bf16>(5 * 16, "A padded")?;
/// let rows = PadRows::new(gpu.address(&a), 5, 13, 13, gpu.address(&copy), 16);
/// // SAFETY: both buffers hold what `rows` describes and outlive the copy.
/// unsafe { padder.launch(&gpu, [rows, PadRows::NONE])? };
/// # Ok(())
/// # }
/// ```
pub struct RowPadder {
    kernel: Kernel<(PadRows, PadRows)>,
}

impl RowPadder {
    /// The kernel from `gpu`'s own modules (a program that links this crate's device code
    /// into its own).
    pub fn load(gpu: &Gpu) -> Result<RowPadder, GpuError> {
        Ok(RowPadder {
            kernel: gpu.entry_point(gemm16_pad_rows)?,
        })
    }

    /// The kernel from a loaded library of this crate's modules.
    pub(crate) fn from_library(library: &Library) -> Result<RowPadder, GpuError> {
        Ok(RowPadder {
            kernel: library.entry_point(gemm16_pad_rows)?,
        })
    }

    /// Queues the copies of both matrices, on `gpu`'s stream, in one launch (none when both
    /// have no rows): one warp per row, at most 8192 blocks.
    ///
    /// # Safety
    /// The contract of [`gemm16_pad_rows`]: each matrix's source readable and its copy
    /// writable as [`PadRows`] describes them, both alive until the copy has run (in stream
    /// order).
    pub unsafe fn launch(&self, gpu: &Gpu, matrices: [PadRows; 2]) -> Result<(), GpuError> {
        let rows = matrices[0].rows as u64 + matrices[1].rows as u64;
        if rows == 0 {
            return Ok(());
        }
        let blocks = rows.div_ceil(u64::from(PAD_THREADS / 32)).min(8 * 1024) as u32;
        let config = LaunchConfig::linear(blocks, PAD_THREADS, 0);
        // SAFETY: forwarded contract; a 1-D grid of PAD_THREADS-thread blocks.
        unsafe { self.kernel.launch(gpu, config, (matrices[0], matrices[1])) }
    }
}
