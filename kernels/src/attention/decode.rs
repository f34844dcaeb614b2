//! The decode kernels' host side: [`DecodeEntry`] (a decode kernel resolved, with its walk)
//! and [`ResolvedAttention`] (what [`Attention::run`](super::Attention::run) launches); the
//! [`Attention`](super::Attention) methods that resolve and plan them are with the others.

use super::plan::WalkPlan;
use super::{
    ATTENTION_DECODE_KERNELS, AttentionKernel, AttentionParams, DecodeParams, DecodeWalk, LoadKind,
};
use crate::ElementType;
use gpu_runtime::cudarc::driver::CudaStream;
use gpu_runtime::{Guards, Kernel, KernelArg, Param, StructArg};

impl Param for DecodeWalk {
    type Arg<'a> = DecodeWalk;
    fn kernel_arg<'g>(arg: &'g mut DecodeWalk, _: &'g CudaStream, _: &mut Guards<'g>) -> KernelArg {
        // SAFETY: `repr(C)`, two 4-byte numbers and two 8-byte addresses, the decode kernels'
        // declared parameter.
        KernelArg::Struct(unsafe { StructArg::new(arg) })
    }
}

impl AttentionKernel<DecodeParams> {
    /// The decode kernel ([`ATTENTION_DECODE_KERNELS`]) for `element` and head dimension `d`.
    ///
    /// ```
    /// use gpu_kernels::attention::AttentionKernel;
    /// use gpu_kernels::ElementType;
    /// let k = AttentionKernel::decode(ElementType::F16, 256).expect("built");
    /// assert_eq!((k.geometry.head_dim, k.geometry.block_m()), (256, 64));
    /// ```
    pub fn decode(element: ElementType, d: u32) -> Option<&'static Self> {
        ATTENTION_DECODE_KERNELS
            .iter()
            .find(|k| k.element == element && k.geometry.head_dim == d)
    }
}

/// One decode kernel ([`ATTENTION_DECODE_KERNELS`]) resolved from the module [`Attention`]
/// loaded ([`Attention::resolve_decode`]), with the walk it runs: [`WalkPlan::for_shape`]'s
/// for each call's shape, or one set with [`with_plan`](Self::with_plan).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gpu_kernels::attention::{Attention, AttentionKernel, AttentionLayout, AttentionShape};
/// use gpu_kernels::ElementType;
/// use half::bf16;
/// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
/// let attention = Attention::load(&gpu)?;
/// let kernel = AttentionKernel::decode(ElementType::Bf16, 128).expect("built");
/// let decode = attention.resolve_decode(kernel)?;
/// // One new token of each of 4 sequences against caches of up to 8192 rows.
/// let shape = AttentionShape {
///     batch: 4, seqlen_q: 1, seqlen_kv: 8192, heads_q: 32, heads_kv: 8, head_dim: 128,
///     causal: true, scale: None,
/// };
/// println!("{:?}", attention.plan(kernel, &shape)); // packs 4 heads, splits the keys in 4
/// let q = gpu.stream().alloc_zeros::<bf16>(shape.q_elements() as usize)?;
/// let k_cache = gpu.stream().alloc_zeros::<bf16>(shape.kv_elements() as usize)?;
/// let v_cache = gpu.stream().alloc_zeros::<bf16>(shape.kv_elements() as usize)?;
/// let lengths = gpu.stream().memcpy_stod(&[8192i32, 100, 5000, 0])?;
/// let mut o = gpu.stream().alloc_zeros::<bf16>(shape.q_elements() as usize)?;
/// let mut lse = gpu.stream().alloc_zeros::<f32>(shape.lse_elements() as usize)?;
/// let layout = AttentionLayout::packed(&shape);
/// attention.run_cache(
///     &gpu, &decode, &q, &k_cache, &v_cache, &lengths, &mut o, &mut lse, shape, &layout,
/// )?;
/// # Ok(())
/// # }
/// ```
pub struct DecodeEntry {
    pub(super) kernel: &'static AttentionKernel<DecodeParams>,
    pub(super) entry: Kernel<DecodeParams>,
    pub(super) plan: Option<WalkPlan>,
}

impl DecodeEntry {
    /// The table's line for it.
    pub fn kernel(&self) -> &'static AttentionKernel<DecodeParams> {
        self.kernel
    }

    /// Runs with `plan` for every shape instead of the rule's (checked against each call's
    /// shape: [`WalkPlan::check`]).
    pub fn with_plan(self, plan: WalkPlan) -> DecodeEntry {
        DecodeEntry {
            plan: Some(plan),
            ..self
        }
    }
}

/// A resolved kernel that [`Attention::run`] and [`Attention::run_cache`] launch: an
/// [`AttentionEntry`] or a [`DecodeEntry`]. Sealed.
pub trait ResolvedAttention: sealed::Sealed {}
impl ResolvedAttention for DecodeEntry {}

pub(super) mod sealed {
    use super::*;

    /// What a launch needs of a resolved kernel.
    pub struct Target<'a> {
        pub name: &'static str,
        pub element: ElementType,
        pub geometry: super::super::AttentionGeometry,
        pub loads: LoadKind,
        pub launch: Launch<'a>,
    }

    /// The entry point, by its parameters.
    pub enum Launch<'a> {
        Prefill(&'a Kernel<AttentionParams>),
        Decode(&'a Kernel<DecodeParams>, Option<WalkPlan>),
    }

    pub trait Sealed {
        fn target(&self) -> Target<'_>;
    }

    impl Sealed for DecodeEntry {
        fn target(&self) -> Target<'_> {
            let k = self.kernel;
            Target {
                name: k.name,
                element: k.element,
                geometry: k.geometry,
                loads: k.techniques.loads,
                launch: Launch::Decode(&self.entry, self.plan),
            }
        }
    }
}
