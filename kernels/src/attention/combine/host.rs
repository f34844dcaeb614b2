//! The host side of the combine kernels: [`CombineArgs`] as a kernel argument and
//! [`Combiner`], how [`Attention`](crate::attention::Attention) launches them after a split
//! pass.

use super::{
    COMBINE_THREADS, CombineArgs, CombineStrides, attention_combine_bf16, attention_combine_f16,
};
use crate::ElementType;
use gpu_runtime::cudarc::driver::CudaStream;
use gpu_runtime::{
    Gpu, GpuError, Guards, Kernel, KernelArg, LaunchConfig, Library, Param, StructArg,
};

impl Param for CombineArgs {
    type Arg<'a> = CombineArgs;
    fn kernel_arg<'g>(
        arg: &'g mut CombineArgs,
        _: &'g CudaStream,
        _: &mut Guards<'g>,
    ) -> KernelArg {
        // SAFETY: `repr(C)`, four 8-byte addresses and six 4-byte numbers, the kernels'
        // declared first parameter.
        KernelArg::Struct(unsafe { StructArg::new(arg) })
    }
}

impl Param for CombineStrides {
    type Arg<'a> = CombineStrides;
    fn kernel_arg<'g>(
        arg: &'g mut CombineStrides,
        _: &'g CudaStream,
        _: &mut Guards<'g>,
    ) -> KernelArg {
        // SAFETY: `repr(C)`, three 8-byte numbers, the kernels' declared second parameter.
        KernelArg::Struct(unsafe { StructArg::new(arg) })
    }
}

/// Both combine kernels, loaded from this crate's library.
pub struct Combiner {
    bf16: Kernel<(CombineArgs, CombineStrides)>,
    f16: Kernel<(CombineArgs, CombineStrides)>,
}

impl Combiner {
    /// The kernels from a loaded library of this crate's modules.
    pub(crate) fn from_library(library: &Library) -> Result<Combiner, GpuError> {
        Ok(Combiner {
            bf16: library.entry_point(attention_combine_bf16)?,
            f16: library.entry_point(attention_combine_f16)?,
        })
    }

    /// Queues the merge of `args`' parts into O of `element` on `gpu`'s stream: one warp per
    /// query row, at most `8 * multiprocessors` blocks.
    ///
    /// # Safety
    /// The contract of the combine kernels ([`attention_combine_bf16`]): the buffers as
    /// `args` and `o_strides` describe them, alive until the merge has run (in stream order).
    pub(crate) unsafe fn launch(
        &self,
        gpu: &Gpu,
        element: ElementType,
        args: CombineArgs,
        o_strides: CombineStrides,
        multiprocessors: u32,
    ) -> Result<(), GpuError> {
        let rows = args.batch as u64 * args.seqlen_q as u64 * args.heads_q as u64;
        let blocks = rows
            .div_ceil(u64::from(COMBINE_THREADS / 32))
            .min(8 * u64::from(multiprocessors))
            .max(1) as u32;
        let config = LaunchConfig::linear(blocks, COMBINE_THREADS, 0);
        let kernel = match element {
            ElementType::Bf16 => &self.bf16,
            ElementType::F16 => &self.f16,
        };
        // SAFETY: forwarded contract; a 1-D grid of COMBINE_THREADS-thread blocks.
        unsafe { kernel.launch(gpu, config, (args, o_strides)) }
    }
}
