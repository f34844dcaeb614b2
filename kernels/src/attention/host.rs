//! The host API of the attention forward pass: [`Attention`] loads this crate's module for an
//! open GPU and runs the caller's buffers, the shape checked first (a clear
//! [`AttentionError`], never a launch that reads or writes past a buffer).

use super::combine::{CombineArgs, CombineStrides, Combiner};
use super::decode::sealed::{Launch, Sealed, Target};
use super::decode::{DecodeEntry, ResolvedAttention};
use super::layout::{AttentionLayout, check_layout};
use super::plan::WalkPlan;
use super::shape::AttentionShape;
use super::{
    ATTENTION_KERNELS, AttentionArgs, AttentionKernel, AttentionParams, AttentionSources,
    DecodeParams, LoadKind,
};
use crate::error::{KernelError, check_device, check_len};
use crate::scratch::StreamScratch;
use crate::{Element16, ElementType};
use gpu_runtime::cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use gpu_runtime::tensor_map::{Swizzle, TensorMapBuilder, TensorMaps};
use gpu_runtime::{
    Address, Gpu, GpuError, Guards, Kernel, KernelArg, LaunchConfig, Library, Param, StructArg,
};

impl Param for AttentionArgs {
    type Arg<'a> = AttentionArgs;
    fn kernel_arg<'g>(
        arg: &'g mut AttentionArgs,
        _: &'g CudaStream,
        _: &mut Guards<'g>,
    ) -> KernelArg {
        // SAFETY: `repr(C)`, seven 4-byte numbers, the kernels' declared parameter.
        KernelArg::Struct(unsafe { StructArg::new(arg) })
    }
}

impl Param for AttentionSources {
    type Arg<'a> = AttentionSources;
    fn kernel_arg<'g>(
        arg: &'g mut AttentionSources,
        _: &'g CudaStream,
        _: &mut Guards<'g>,
    ) -> KernelArg {
        // SAFETY: `repr(C)`, three 8-byte addresses, the kernels' declared parameter.
        KernelArg::Struct(unsafe { StructArg::new(arg) })
    }
}

impl AttentionKernel {
    /// The kernel [`Attention::forward`] runs for `shape` in `element`: of the kernels with
    /// every technique for its head dimension, the first of the table
    /// ([`AttentionKernel::best`]: at `d = 64` three consumer warpgroups, 192 query rows per
    /// tile), but two consumers (128 rows) where a shorter tile measured faster: causal with
    /// at most 2048 query rows (the 192-row tiles' diagonal blocks waste more, and fewer
    /// tiles fill the SMs less evenly: 184.6 against 220.8 TFLOP/s at 32x512x32x64, 244.1
    /// against 290.7 at 1k, equal at 2k, 3-14% ahead from 4k; docs/results.md), or at most
    /// 128 query rows (one 128-row tile holds them all); and at most 64 query rows (decode),
    /// a one-consumer kernel (64-row tiles) where one is built for the element and `d`.
    pub fn for_shape(element: ElementType, shape: &AttentionShape) -> Option<&'static Self> {
        for_shape_in(ATTENTION_KERNELS, |k| k, element, shape)
    }
}

/// [`AttentionKernel::for_shape`] over `items` in table order, each with its kernel: the
/// table itself, or the entries [`Attention`] loaded from it.
fn for_shape_in<'a, T>(
    items: &'a [T],
    kernel_of: impl Fn(&T) -> &AttentionKernel,
    element: ElementType,
    shape: &AttentionShape,
) -> Option<&'a T> {
    let for_problem =
        |k: &AttentionKernel| k.element == element && k.geometry.head_dim == shape.head_dim;
    let fits = |item: &&'a T| {
        let k = kernel_of(item);
        for_problem(k) && k.is_best_kind()
    };
    let best = items.iter().find(|item| fits(item))?;
    // At most 64 query rows (decode): one consumer's 64-row tile holds them all, and ping-pong
    // has no second warpgroup to turn with. A 128-row tile multiplies twice the rows of zeros:
    // 0.087 against 0.110 ms at 4 x 1 x 32 x 128 against 8192 keys on 8 KV heads, 1.25-1.28x
    // at every decode shape measured (H100, docs/results.md).
    if shape.seqlen_q <= super::ROWS_PER_CONSUMER {
        let one = items.iter().find(|item| {
            let k = kernel_of(item);
            for_problem(k)
                && k.geometry.consumers == 1
                && k.techniques.overlap
                && k.techniques.loads == LoadKind::Tma
        });
        if let Some(one) = one {
            return Some(one);
        }
    }
    let shorter = shape.seqlen_q <= 128 || (shape.causal && shape.seqlen_q <= 2048);
    if !shorter {
        return Some(best);
    }
    items
        .iter()
        .filter(fits)
        .min_by_key(|item| kernel_of(item).geometry.consumers)
}

/// Why an attention pass was not run.
///
/// ```
/// use gpu_kernels::KernelError;
/// use gpu_kernels::attention::AttentionError;
/// fn fall_back(e: &AttentionError) -> bool {
///     matches!(e, KernelError::UnsupportedGpu { .. } | KernelError::UnsupportedHeadDim { .. })
/// }
/// let e: AttentionError = KernelError::UnsupportedHeadDim { head_dim: 96, built: &[64, 128, 256] };
/// assert!(fall_back(&e));
/// ```
pub type AttentionError = crate::KernelError;

/// The attention kernels of this crate, loaded for one GPU. Needs compute capability 9.0
/// (sm_90a).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gpu_kernels::attention::{Attention, AttentionShape};
/// use half::bf16;
/// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
/// let attention = Attention::load(&gpu)?;
/// let shape = AttentionShape {
///     batch: 2, seqlen_q: 1000, seqlen_kv: 1000, heads_q: 16, heads_kv: 16, head_dim: 128,
///     causal: true, scale: None,
/// };
/// let q = gpu.zeros::<bf16>(shape.q_elements() as usize, "Q")?;
/// let k = gpu.zeros::<bf16>(shape.kv_elements() as usize, "K")?;
/// let v = gpu.zeros::<bf16>(shape.kv_elements() as usize, "V")?;
/// let mut o = gpu.zeros::<bf16>(shape.q_elements() as usize, "O")?;
/// let mut lse = gpu.zeros::<f32>(shape.lse_elements() as usize, "LSE")?;
/// attention.forward(&gpu, &q, &k, &v, &mut o, &mut lse, shape)?;
/// # Ok(())
/// # }
/// ```
pub struct Attention {
    /// Every kernel of [`ATTENTION_KERNELS`], in table order.
    pub(super) entries: Vec<AttentionEntry>,
    pub(super) maps: TensorMaps,
    pub(super) multiprocessors: u32,
    pub(super) max_shared_bytes: u32,
    pub(super) library: Library,
    /// The merge of split parts ([`super::attention_combine_bf16`] and `_f16`).
    pub(super) combiner: Combiner,
    /// Per stream, the split parts of the last split pass, kept until
    /// [`Attention::release_scratch`] or the drop.
    pub(super) scratch: StreamScratch,
}

/// One kernel of [`ATTENTION_KERNELS`] resolved from the module [`Attention`] loaded: what
/// [`Attention::run`] launches.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gpu_kernels::attention::{ATTENTION_KERNELS, Attention, AttentionShape, LoadKind};
/// use half::bf16;
/// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
/// let attention = Attention::load(&gpu)?;
/// // The ablation's variant without the producer's tensor copies, resolved once.
/// let variant = ATTENTION_KERNELS
///     .iter()
///     .find(|k| k.geometry.head_dim == 128 && k.techniques.loads == LoadKind::CpAsync)
///     .expect("in the table");
/// let entry = attention.resolve(variant)?;
/// assert_eq!(entry.kernel().name, variant.name);
/// let shape = AttentionShape {
///     batch: 1, seqlen_q: 256, seqlen_kv: 256, heads_q: 4, heads_kv: 4, head_dim: 128,
///     causal: false, scale: None,
/// };
/// let q = gpu.zeros::<bf16>(shape.q_elements() as usize, "Q")?;
/// let mut o = gpu.zeros::<bf16>(shape.q_elements() as usize, "O")?;
/// let mut lse = gpu.zeros::<f32>(shape.lse_elements() as usize, "LSE")?;
/// let packed = gpu_kernels::attention::AttentionLayout::packed(&shape);
/// attention.run(&gpu, &entry, &q, &q, &q, &mut o, &mut lse, shape, &packed)?;
/// # Ok(())
/// # }
/// ```
pub struct AttentionEntry {
    pub(super) kernel: &'static AttentionKernel,
    pub(super) entry: Kernel<AttentionParams>,
}

impl AttentionEntry {
    /// The table's line for it.
    pub fn kernel(&self) -> &'static AttentionKernel {
        self.kernel
    }
}

impl ResolvedAttention for AttentionEntry {}

impl Sealed for AttentionEntry {
    fn target(&self) -> Target<'_> {
        let k = self.kernel;
        Target {
            name: k.name,
            element: k.element,
            geometry: k.geometry,
            loads: k.techniques.loads,
            launch: Launch::Prefill(&self.entry),
        }
    }
}

/// The largest sequence length, head count or batch: tensor-map coordinates are 32-bit
/// signed, and the tile walk counts in 32 bits.
const MAX_DIM: u32 = i32::MAX as u32;

impl Attention {
    /// Loads every kernel of [`ATTENTION_KERNELS`] for `gpu` (this crate's embedded sm_90a
    /// module, in `gpu`'s context).
    pub fn load(gpu: &Gpu) -> Result<Attention, AttentionError> {
        crate::check_sm90a(gpu, "the attention kernels")?;
        let info = gpu.info();
        let library = gpu.load_library("gpu-kernels", crate::MODULES)?;
        let entries = ATTENTION_KERNELS
            .iter()
            .map(|kernel| {
                Ok(AttentionEntry {
                    kernel,
                    entry: library.entry_point(kernel.entry)?,
                })
            })
            .collect::<Result<_, GpuError>>()?;
        Ok(Attention {
            entries,
            maps: TensorMaps::default(),
            multiprocessors: info.multiprocessors,
            max_shared_bytes: info.max_shared_bytes_per_block,
            combiner: Combiner::from_library(&library)?,
            library,
            scratch: StreamScratch::default(),
        })
    }

    /// `kernel` (any of [`ATTENTION_KERNELS`]: the ablation's variants, say) resolved from the
    /// loaded module, for [`run`](Self::run): resolve once, run many times.
    pub fn resolve(
        &self,
        kernel: &'static AttentionKernel,
    ) -> Result<AttentionEntry, AttentionError> {
        Ok(AttentionEntry {
            kernel,
            entry: self.library.entry_point(kernel.entry)?,
        })
    }

    /// The forward pass over packed tensors: [`forward_strided`](Self::forward_strided) with
    /// [`AttentionLayout::packed`].
    #[allow(clippy::too_many_arguments)]
    pub fn forward<E: Element16>(
        &self,
        gpu: &Gpu,
        q: &(impl DevicePtr<E> + ?Sized),
        k: &(impl DevicePtr<E> + ?Sized),
        v: &(impl DevicePtr<E> + ?Sized),
        o: &mut (impl DevicePtrMut<E> + ?Sized),
        lse: &mut (impl DevicePtrMut<f32> + ?Sized),
        shape: AttentionShape,
    ) -> Result<(), AttentionError> {
        self.forward_strided(
            gpu,
            q,
            k,
            v,
            o,
            lse,
            shape,
            &AttentionLayout::packed(&shape),
        )
    }

    /// The forward pass for elements `E` (`half::bf16` or `half::f16`), FP32 softmax and
    /// accumulation, O rounded to nearest-even, Q, K, V and O where `layout` says they lie
    /// in their buffers (a fused QKV projection or a preallocated KV cache in place): launched
    /// on `gpu`'s stream (the caller's, for a [`Gpu::on_stream`]), not waited for. The buffers
    /// are any cudarc buffers in `gpu`'s context, recorded by cudarc's event tracking as read
    /// (Q, K, V) and written (O, the log-sum-exp `(batch, heads_q, seqlen_q)`, packed).
    /// Runs the kernel with every technique that suits the shape
    /// ([`AttentionKernel::for_shape`]). Checked first ([`check_shape`], the strides, the
    /// buffers' devices), launching nothing on an error.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use gpu_kernels::attention::{Attention, AttentionLayout, AttentionShape, RowStrides};
    /// use half::bf16;
    /// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
    /// let attention = Attention::load(&gpu)?;
    /// // A fused QKV projection (2, 1000, 3, 16, 128), attended in place.
    /// let shape = AttentionShape {
    ///     batch: 2, seqlen_q: 1000, seqlen_kv: 1000, heads_q: 16, heads_kv: 16,
    ///     head_dim: 128, causal: true, scale: None,
    /// };
    /// let qkv = gpu.zeros::<bf16>(2 * 1000 * 3 * 16 * 128, "QKV")?;
    /// let mut o = gpu.zeros::<bf16>(shape.q_elements() as usize, "O")?;
    /// let mut lse = gpu.zeros::<f32>(shape.lse_elements() as usize, "LSE")?;
    /// let fused = RowStrides::packed(1000, 3 * 16, 128);
    /// let layout = AttentionLayout { q: fused, k: fused, v: fused, ..AttentionLayout::packed(&shape) };
    /// let (q, k, v) = (qkv.slice(..), qkv.slice(16 * 128..), qkv.slice(2 * 16 * 128..));
    /// attention.forward_strided(&gpu, &q, &k, &v, &mut o, &mut lse, shape, &layout)?;
    /// gpu.synchronize(|| "attention".into())?;
    /// # Ok(())
    /// # }
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn forward_strided<E: Element16>(
        &self,
        gpu: &Gpu,
        q: &(impl DevicePtr<E> + ?Sized),
        k: &(impl DevicePtr<E> + ?Sized),
        v: &(impl DevicePtr<E> + ?Sized),
        o: &mut (impl DevicePtrMut<E> + ?Sized),
        lse: &mut (impl DevicePtrMut<f32> + ?Sized),
        shape: AttentionShape,
        layout: &AttentionLayout,
    ) -> Result<(), AttentionError> {
        let entry = self.entry_for::<E>(&shape)?;
        self.run(gpu, entry, q, k, v, o, lse, shape, layout)
    }

    /// Attention against a KV cache holding a different number of keys per sequence
    /// (FlashAttention's `flash_attn_with_kvcache` without appends): K and V are caches of
    /// `shape.seqlen_kv` rows per sequence (`(batch, max_len, heads_kv, d)`, any
    /// [`AttentionLayout`]), of which sequence `b` attends to its first `cache_seqlens[b]`
    /// (int32 on the device, clamped to `0..=seqlen_kv`); causal aligns each sequence's
    /// queries to the end of its own keys. A sequence of no keys (or a causal row that sees
    /// none) gets O = 0 and a log-sum-exp of -inf.
    ///
    /// The cache rows past a sequence's length are read and given weight 0, so they must hold
    /// finite values (zeros, or earlier tokens: a cache from `alloc_zeros` or written in
    /// order does), as with any kernel that multiplies whole blocks of keys.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use gpu_kernels::attention::{Attention, AttentionLayout, AttentionShape};
    /// use half::bf16;
    /// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
    /// let attention = Attention::load(&gpu)?;
    /// // Decode: one new query row per sequence, caches of 4096 rows, lengths 17, 4000, 1.
    /// let shape = AttentionShape {
    ///     batch: 3, seqlen_q: 1, seqlen_kv: 4096, heads_q: 32, heads_kv: 8, head_dim: 128,
    ///     causal: true, scale: None,
    /// };
    /// let q = gpu.stream().alloc_zeros::<bf16>(shape.q_elements() as usize)?;
    /// let k_cache = gpu.stream().alloc_zeros::<bf16>(shape.kv_elements() as usize)?;
    /// let v_cache = gpu.stream().alloc_zeros::<bf16>(shape.kv_elements() as usize)?;
    /// let lengths = gpu.stream().memcpy_stod(&[17i32, 4000, 1])?;
    /// let mut o = gpu.stream().alloc_zeros::<bf16>(shape.q_elements() as usize)?;
    /// let mut lse = gpu.stream().alloc_zeros::<f32>(shape.lse_elements() as usize)?;
    /// let layout = AttentionLayout::packed(&shape);
    /// attention.forward_cache(
    ///     &gpu, &q, &k_cache, &v_cache, &lengths, &mut o, &mut lse, shape, &layout,
    /// )?;
    /// # Ok(())
    /// # }
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn forward_cache<E: Element16>(
        &self,
        gpu: &Gpu,
        q: &(impl DevicePtr<E> + ?Sized),
        k_cache: &(impl DevicePtr<E> + ?Sized),
        v_cache: &(impl DevicePtr<E> + ?Sized),
        cache_seqlens: &(impl DevicePtr<i32> + ?Sized),
        o: &mut (impl DevicePtrMut<E> + ?Sized),
        lse: &mut (impl DevicePtrMut<f32> + ?Sized),
        shape: AttentionShape,
        layout: &AttentionLayout,
    ) -> Result<(), AttentionError> {
        let entry = self.entry_for::<E>(&shape)?;
        self.run_cache(
            gpu,
            entry,
            q,
            k_cache,
            v_cache,
            cache_seqlens,
            o,
            lse,
            shape,
            layout,
        )
    }

    /// As [`forward_cache`](Self::forward_cache), with the kernel `entry` holds (as
    /// [`run`](Self::run) is to [`forward_strided`](Self::forward_strided)).
    #[allow(clippy::too_many_arguments)]
    pub fn run_cache<E: Element16>(
        &self,
        gpu: &Gpu,
        entry: &(impl ResolvedAttention + ?Sized),
        q: &(impl DevicePtr<E> + ?Sized),
        k_cache: &(impl DevicePtr<E> + ?Sized),
        v_cache: &(impl DevicePtr<E> + ?Sized),
        cache_seqlens: &(impl DevicePtr<i32> + ?Sized),
        o: &mut (impl DevicePtrMut<E> + ?Sized),
        lse: &mut (impl DevicePtrMut<f32> + ?Sized),
        shape: AttentionShape,
        layout: &AttentionLayout,
    ) -> Result<(), AttentionError> {
        check_len("cache_seqlens", cache_seqlens.len(), shape.batch as u64)?;
        check_device(gpu, "cache_seqlens", cache_seqlens.stream())?;
        // Recorded as read once the kernel is queued (the guard drops after the launch).
        let (lengths, _lengths_read) = cache_seqlens.device_ptr(gpu.stream());
        self.launch(
            gpu, entry, q, k_cache, v_cache, o, lse, shape, layout, lengths,
        )
    }

    /// The kernel of the shape's head dimension for `E`.
    fn entry_for<E: Element16>(
        &self,
        shape: &AttentionShape,
    ) -> Result<&AttentionEntry, AttentionError> {
        for_shape_in(&self.entries, |e| e.kernel, E::TYPE, shape).ok_or(
            KernelError::UnsupportedHeadDim {
                head_dim: shape.head_dim,
                built: &[64, 128, 256],
            },
        )
    }

    /// As [`forward_strided`](Self::forward_strided), with the kernel `entry` holds
    /// ([`resolve`](Self::resolve): any of [`ATTENTION_KERNELS`] for the shape's head
    /// dimension and `E`, the `cp.async` variant taking packed tensors only; or
    /// [`resolve_decode`](Self::resolve_decode)).
    #[allow(clippy::too_many_arguments)]
    pub fn run<E: Element16>(
        &self,
        gpu: &Gpu,
        entry: &(impl ResolvedAttention + ?Sized),
        q: &(impl DevicePtr<E> + ?Sized),
        k: &(impl DevicePtr<E> + ?Sized),
        v: &(impl DevicePtr<E> + ?Sized),
        o: &mut (impl DevicePtrMut<E> + ?Sized),
        lse: &mut (impl DevicePtrMut<f32> + ?Sized),
        shape: AttentionShape,
        layout: &AttentionLayout,
    ) -> Result<(), AttentionError> {
        self.launch(gpu, entry, q, k, v, o, lse, shape, layout, 0)
    }

    /// [`run`](Self::run) with `kv_lengths` (0, or the address of `batch` int32 lengths whose
    /// guard the caller holds across this call: [`AttentionSources::kv_lengths`]).
    #[allow(clippy::too_many_arguments)]
    fn launch<E: Element16>(
        &self,
        gpu: &Gpu,
        entry: &(impl ResolvedAttention + ?Sized),
        q: &(impl DevicePtr<E> + ?Sized),
        k: &(impl DevicePtr<E> + ?Sized),
        v: &(impl DevicePtr<E> + ?Sized),
        o: &mut (impl DevicePtrMut<E> + ?Sized),
        lse: &mut (impl DevicePtrMut<f32> + ?Sized),
        shape: AttentionShape,
        layout: &AttentionLayout,
        kv_lengths: u64,
    ) -> Result<(), AttentionError> {
        let kernel = entry.target();
        if kernel.element != E::TYPE {
            return Err(KernelError::Unsupported(format!(
                "{} takes {}; the buffers hold {}",
                kernel.name,
                kernel.element.name(),
                E::TYPE.name()
            )));
        }
        check_shape_of(kernel.name, kernel.geometry, shape)?;
        let g = kernel.geometry;
        let plan = match kernel.launch {
            Launch::Prefill(_) => WalkPlan::NONE,
            Launch::Decode(_, plan) => {
                plan.unwrap_or_else(|| WalkPlan::for_shape(g, &shape, self.multiprocessors))
            }
        };
        plan.check(g, &shape)?;
        let lengths = [q.len(), k.len(), v.len(), o.len()];
        check_layout(layout, &shape, lengths)?;
        check_len("the log-sum-exp", lse.len(), shape.lse_elements())?;
        if kernel.loads == LoadKind::CpAsync && *layout != AttentionLayout::packed(&shape) {
            return Err(KernelError::Unsupported(format!(
                "{} copies packed tensors only (cp.async from computed rows): use the kernel \
                 with tensor copies",
                kernel.name
            )));
        }
        for (name, device) in [("Q", q.stream()), ("K", k.stream()), ("V", v.stream())]
            .into_iter()
            .chain([("O", o.stream()), ("the log-sum-exp", lse.stream())])
        {
            check_device(gpu, name, device)?;
        }
        let bytes = g.shared().bytes;
        if bytes > self.max_shared_bytes {
            return Err(KernelError::Unsupported(format!(
                "{} needs {bytes} B of shared memory per block; the GPU allows {}",
                kernel.name, self.max_shared_bytes
            )));
        }
        let tiles = plan.tiles(g, &shape);
        let config = LaunchConfig::linear(
            tiles.min(self.multiprocessors as u64) as u32,
            g.threads(),
            bytes,
        );
        // The guards record Q, K, V as read and O, the log-sum-exp as written once the kernel
        // is queued (they drop at the end of this function, after the launch).
        let stream = gpu.stream();
        let (q_ptr, _q_read) = q.device_ptr(stream);
        let (k_ptr, _k_read) = k.device_ptr(stream);
        let (v_ptr, _v_read) = v.device_ptr(stream);
        let (o_ptr, _o_written) = o.device_ptr_mut(stream);
        let lse_len = lse.len();
        let (lse_ptr, _lse_written) = lse.device_ptr_mut(stream);
        let d = shape.head_dim as u64;
        let map = |address: u64,
                   strides: &super::RowStrides,
                   seqlen: u32,
                   heads: u32,
                   box_dims: [u32; 4]| {
            self.maps.get(
                TensorMapBuilder::new(
                    kernel.element.tensor_map(),
                    address,
                    &[d, heads as u64, seqlen as u64, shape.batch as u64],
                )
                .strides(&strides.bytes(2))
                .box_dims(&box_dims)
                .swizzle(Swizzle::Bytes128),
            )
        };
        let pack = plan.pack_gqa;
        let q_map = map(
            q_ptr,
            &layout.q,
            shape.seqlen_q,
            shape.heads_q,
            g.q_box(pack),
        )?;
        let k_map = map(k_ptr, &layout.k, shape.seqlen_kv, shape.heads_kv, g.k_box())?;
        let v_map = map(v_ptr, &layout.v, shape.seqlen_kv, shape.heads_kv, g.v_box())?;
        let o_map = map(
            o_ptr,
            &layout.o,
            shape.seqlen_q,
            shape.heads_q,
            g.o_box(pack),
        )?;
        let sources = AttentionSources {
            q: q_ptr,
            k: k_ptr,
            v: v_ptr,
            kv_lengths,
        };
        // A split pass writes FP32 parts to this stream's scratch buffer (kept: the next call
        // reuses it), which the combine kernel reads after it.
        let (_, lse_offset, parts_bytes) = plan.parts_bytes(&shape);
        let mut scratch = self.scratch.lock();
        let (parts, _parts_written) = match parts_bytes {
            0 => (0, None),
            bytes => {
                // SAFETY: the split pass writes every row of the parts (each split of each
                // query row of each head) before the combine kernel reads them, both queued
                // after this on this stream.
                let buffer = unsafe { scratch.for_stream(stream, bytes, "split-KV parts")? };
                // Waits for the buffer's earlier use on another stream (event tracking) and
                // records this one as a write.
                let (base, written) = buffer.device_ptr_mut(stream);
                (base, Some(written))
            }
        };
        // SAFETY: the log-sum-exp's address from its buffer, whose guard is held across the
        // launch.
        let mut lse_out = unsafe { Address::<f32>::new(lse_ptr, lse_len) };
        // SAFETY (both launches): the maps describe Q, K, V and O of the kernel's element,
        // inside their buffers at their strides (checked: 16-byte multiples, each buffer as
        // long as its strides reach, O's rows apart), with the geometry's boxes (Q's and O's
        // of the plan's packing), 128-byte swizzle and zero fill, and `sources` where the
        // first three start (packed, for the kernel that reads them: checked); the
        // log-sum-exp holds batch * heads_q * seqlen_q floats (checked); every size is at
        // least 1 and heads_q a multiple of heads_kv (checked); `kv_lengths` 0 or `batch`
        // int32 lengths (checked by `run_cache`, held); the plan checked against the shape,
        // its parts in the scratch buffer of `parts_bytes` (held); a 1-D grid of the
        // geometry's threads and shared memory: the kernels' launch contract.
        match kernel.launch {
            Launch::Prefill(entry) => unsafe {
                entry.launch(
                    gpu,
                    config,
                    (
                        &q_map,
                        &k_map,
                        &v_map,
                        &o_map,
                        &mut lse_out,
                        shape.args(),
                        sources,
                    ),
                )?
            },
            Launch::Decode(entry, _) => {
                let walk = plan.walk(parts, parts + lse_offset);
                unsafe {
                    entry.launch(
                        gpu,
                        config,
                        (
                            &q_map,
                            &k_map,
                            &v_map,
                            &o_map,
                            &mut lse_out,
                            shape.args(),
                            sources,
                            walk,
                        ),
                    )?
                };
                if plan.splits > 1 {
                    let merge = CombineArgs {
                        o_partial: walk.o_partial,
                        lse_partial: walk.lse_partial,
                        o: o_ptr,
                        lse: lse_ptr,
                        batch: shape.batch,
                        seqlen_q: shape.seqlen_q,
                        heads_q: shape.heads_q,
                        head_dim: shape.head_dim,
                        splits: plan.splits,
                        reserved: 0,
                    };
                    // SAFETY: the parts the pass above writes (in stream order), O at its
                    // checked strides (16-byte multiples, the address 16-byte aligned as its
                    // tensor map's), the log-sum-exp's floats; guards held.
                    let o_strides = CombineStrides {
                        batch: layout.o.batch,
                        token: layout.o.token,
                        head: layout.o.head,
                    };
                    unsafe {
                        self.combiner.launch(
                            gpu,
                            kernel.element,
                            merge,
                            o_strides,
                            self.multiprocessors,
                        )?
                    };
                }
            }
        }
        Ok(())
    }
}

impl Attention {
    /// `kernel` (one of [`ATTENTION_DECODE_KERNELS`](super::ATTENTION_DECODE_KERNELS))
    /// resolved from the loaded module, for [`run`](Self::run) and
    /// [`run_cache`](Self::run_cache): each call walks its shape by [`plan`](Self::plan) (or
    /// the entry's [`DecodeEntry::with_plan`]), a split pass followed by the combine kernel
    /// on the same stream, its FP32 parts in a buffer kept for the stream
    /// ([`release_scratch`](Self::release_scratch)).
    pub fn resolve_decode(
        &self,
        kernel: &'static AttentionKernel<DecodeParams>,
    ) -> Result<DecodeEntry, AttentionError> {
        Ok(DecodeEntry {
            kernel,
            entry: self.library.entry_point(kernel.entry)?,
            plan: None,
        })
    }

    /// The walk a decode kernel runs `shape` with on this GPU ([`WalkPlan::for_shape`] with
    /// its SM count).
    pub fn plan(&self, kernel: &AttentionKernel<DecodeParams>, shape: &AttentionShape) -> WalkPlan {
        WalkPlan::for_shape(kernel.geometry, shape, self.multiprocessors)
    }

    /// Frees the buffers kept for split parts (one per stream that ran a split pass), in
    /// stream order, and returns their bytes; the next split pass allocates again.
    pub fn release_scratch(&self) -> usize {
        self.scratch.release()
    }
}

/// The checks of [`Attention::run`] for `kernel` on the shape: every size at least 1 and
/// below 2^31; the kernel's head dimension; `heads_q` a multiple of `heads_kv`; a finite
/// positive scale; the tile walk countable in 32 bits. (The buffers and strides:
/// [`AttentionLayout`]'s checks.)
pub fn check_shape<P>(
    kernel: &AttentionKernel<P>,
    shape: AttentionShape,
) -> Result<(), AttentionError> {
    check_shape_of(kernel.name, kernel.geometry, shape)?;
    let tiles =
        kernel.geometry.m_blocks(shape.seqlen_q) as u64 * shape.heads_q as u64 * shape.batch as u64;
    if tiles > MAX_DIM as u64 {
        return Err(KernelError::Shape(format!(
            "{tiles} tiles of {} query rows: at most 2^31 - 1",
            kernel.geometry.block_m()
        )));
    }
    Ok(())
}

/// [`check_shape`] but the count of the unpacked, unsplit walk's tiles (a plan's own check
/// counts its walk's).
fn check_shape_of(
    name: &str,
    geometry: super::AttentionGeometry,
    shape: AttentionShape,
) -> Result<(), AttentionError> {
    let bad = |why: String| Err(KernelError::Shape(why));
    let AttentionShape {
        batch,
        seqlen_q,
        seqlen_kv,
        heads_q,
        heads_kv,
        head_dim,
        ..
    } = shape;
    for (name, value) in [
        ("batch", batch),
        ("seqlen_q", seqlen_q),
        ("seqlen_kv", seqlen_kv),
        ("heads_q", heads_q),
        ("heads_kv", heads_kv),
    ] {
        if value == 0 {
            return bad(format!("{name} must be at least 1 (got 0)"));
        }
        if value > MAX_DIM {
            return bad(format!("{name} = {value} must be below 2^31"));
        }
    }
    if head_dim != geometry.head_dim {
        return Err(KernelError::Unsupported(format!(
            "head dimension {head_dim}: {} takes {} (the kernels take 64, 128 or 256)",
            name, geometry.head_dim
        )));
    }
    if !heads_q.is_multiple_of(heads_kv) {
        return bad(format!(
            "heads_q = {heads_q} is not a multiple of heads_kv = {heads_kv}"
        ));
    }
    let scale = shape.softmax_scale();
    if !(scale.is_finite() && scale > 0.0) {
        return bad(format!(
            "the softmax scale must be finite and positive (got {scale})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
