//! The host API of the 16-bit GEMM: [`Gemm16`] loads this crate's module for an open GPU and
//! multiplies the caller's buffers, shapes and layouts checked first (a clear
//! [`GemmError`], never a launch that reads or writes past a buffer).

use super::pad::RowPadder;
use super::{
    BKnTile, BLayout, CBox, ElementType, GemmParams, GemmStoreParams, Geometry, PadRows,
    bf16_gemm_ws_cooperative, bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct,
    bf16_gemm_ws_cooperative_direct, bf16_gemm_ws_pingpong, bf16_gemm_ws_pingpong_b_kn,
    bf16_gemm_ws_pingpong_b_kn_direct, bf16_gemm_ws_pingpong_direct, f16_gemm_ws_cooperative,
    f16_gemm_ws_cooperative_direct, f16_gemm_ws_pingpong, f16_gemm_ws_pingpong_direct,
};
use crate::Element16;
use crate::error::{KernelError, check_device};
use crate::scratch::{SCRATCH_ALIGN, StreamScratch};
use gpu::wgmma::{Bf16, F16, SixteenBit, WARPGROUP_THREADS};
use gpu_runtime::cudarc::driver::{DevicePtr, DevicePtrMut};
use gpu_runtime::tensor_map::{Swizzle, TensorMapBuilder, TensorMaps};
use gpu_runtime::{Address, Gpu, Kernel, LaunchConfig, Library};

pub use crate::{GemmError, GemmShape};

/// The kernels of one device element type in a loaded [`Gemm16`].
#[doc(hidden)]
pub trait Gemm16Device: SixteenBit + 'static {
    /// Its kernels in `gemm`.
    fn kernels(gemm: &Gemm16) -> &Kernels<Self>;
}

impl Gemm16Device for Bf16 {
    fn kernels(gemm: &Gemm16) -> &Kernels<Self> {
        &gemm.bf16
    }
}

impl Gemm16Device for F16 {
    fn kernels(gemm: &Gemm16) -> &Kernels<Self> {
        &gemm.f16
    }
}

/// How the two consumer warpgroups of a [`Gemm16`] block share the work: the kernel it runs.
///
/// ```
/// use gpu_kernels::GemmShape;
/// use gpu_kernels::gemm16::Gemm16Schedule;
/// // 1024^3 makes 32 cooperative tiles for 132 SMs: ping-pong's 64 fill more of them.
/// let small = GemmShape { m: 1024, n: 1024, k: 1024 };
/// assert_eq!(Gemm16Schedule::for_shape(small, 132), Gemm16Schedule::PingPong);
/// let large = GemmShape { m: 8192, n: 8192, k: 8192 };
/// assert_eq!(Gemm16Schedule::for_shape(large, 132), Gemm16Schedule::Cooperative);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gemm16Schedule {
    /// Both on each 128 x 256 tile (`ws_cooperative`): the fewest bytes per multiply.
    Cooperative,
    /// Each on 128 x 128 tiles of its own, one's epilogue beside the other's mainloop
    /// (`ws_pingpong`): twice the tiles, and no exposed epilogue.
    PingPong,
}

impl Gemm16Schedule {
    /// Both.
    pub const ALL: [Gemm16Schedule; 2] = [Gemm16Schedule::Cooperative, Gemm16Schedule::PingPong];

    /// Its block geometry.
    pub const fn geometry(self) -> Geometry {
        match self {
            Gemm16Schedule::Cooperative => Geometry::SHARED_TILE,
            Gemm16Schedule::PingPong => Geometry::TILE_PER_WARPGROUP,
        }
    }

    /// The time the cost model predicts for `shape` on `multiprocessors` SMs, in k-steps of a
    /// 128 x 128 tile at the cooperative kernel's rate (compare, do not read as time):
    /// - the waves: tiles over SMs, rounded up (a block runs its tiles one after another; a
    ///   ping-pong block's two warpgroups take turns on the tensor cores);
    /// - cooperative: a 128 x 256 tile is two units per k-tile, plus half a k-tile for its
    ///   epilogue, which nothing overlaps;
    /// - ping-pong: one unit per k-tile at 96% of the cooperative rate (its 1.33x bytes per
    ///   multiply, a lower clock under the power limit: ncu, docs/design.md), 80% when K is
    ///   not a multiple of 64 (82-95% of the cooperative kernel at seven such shapes with
    ///   tiles to spare; the cause is not isolated — a partial last k-tile, rows off 128
    ///   bytes — and the rule is coarse: at 3072 x 3072 x 3040 ping-pong was 5% faster).
    ///
    /// Fitted to 104 (shape, element) pairs from three H200 runs (2026-12-04, docs/results.md):
    /// choosing by it loses 0.2% on
    /// average to the faster of the two, at worst 6.6%; always cooperative lost 7.7%, at worst
    /// 45%.
    pub fn predicted_cost(self, shape: GemmShape, multiprocessors: u32) -> f64 {
        let GemmShape { m, n, k } = shape;
        let (tiles_m, tiles_n) = self.geometry().tiles(m, n);
        let tiles = tiles_m as u64 * tiles_n as u64;
        let waves = tiles.div_ceil(multiprocessors.max(1) as u64) as f64;
        let k_tiles = k.div_ceil(super::BK) as f64;
        match self {
            Gemm16Schedule::Cooperative => waves * 2.0 * (k_tiles + 0.5),
            Gemm16Schedule::PingPong => {
                let rate = if k.is_multiple_of(super::BK) {
                    0.96
                } else {
                    0.8
                };
                waves * k_tiles / rate
            }
        }
    }

    /// The schedule [`Gemm16::gemm`] runs `shape` with on `multiprocessors` SMs: the one
    /// [`predicted_cost`](Self::predicted_cost) says is faster (cooperative on a tie).
    pub fn for_shape(shape: GemmShape, multiprocessors: u32) -> Gemm16Schedule {
        let cost = |s: Gemm16Schedule| s.predicted_cost(shape, multiprocessors);
        if cost(Gemm16Schedule::PingPong) < cost(Gemm16Schedule::Cooperative) {
            Gemm16Schedule::PingPong
        } else {
            Gemm16Schedule::Cooperative
        }
    }
}

/// A schedule's two kernels: tensor-store epilogue (N a multiple of 8) and direct store (any
/// N).
type EntryPair<E> = (Kernel<GemmStoreParams>, Kernel<GemmParams<E>>);

/// One element type's kernels, for each B layout, cooperative then ping-pong.
#[doc(hidden)]
pub struct Kernels<E: Gemm16Device> {
    nk: [EntryPair<E>; 2],
    kn: Option<[EntryPair<E>; 2]>,
}

/// The 16-bit GEMM of this crate, loaded for one GPU: a producer warpgroup issuing tensor
/// copies and two consumer warpgroups with one `wgmma` k-tile in flight, persistent blocks,
/// on 128 x 256 tiles shared by both (`ws_cooperative`) or 128 x 128 tiles each
/// (`ws_pingpong`), whichever a cost model says is faster for the shape
/// ([`Gemm16Schedule::for_shape`]). Needs compute capability 9.0 (sm_90a).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gpu_kernels::GemmShape;
/// use gpu_kernels::gemm16::{BLayout, Gemm16};
/// use half::f16;
/// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
/// let gemm = Gemm16::load(&gpu)?;
/// // A Linear layer: 77 tokens of 1000 features times weights 3000 x 1000, in FP16.
/// let shape = GemmShape { m: 77, n: 3000, k: 1000 };
/// let x = gpu.zeros::<f16>(77 * 1000, "x")?;
/// let w = gpu.zeros::<f16>(3000 * 1000, "W")?;
/// let mut y = gpu.zeros::<f16>(77 * 3000, "y")?;
/// println!("{:?}", gemm.schedule_for(shape));
/// gemm.gemm(&gpu, &x, &w, BLayout::NK, &mut y, shape)?;
/// # Ok(())
/// # }
/// ```
pub struct Gemm16 {
    bf16: Kernels<Bf16>,
    f16: Kernels<F16>,
    padder: RowPadder,
    /// Per stream, the buffer that padded copies of A and B go to, kept until
    /// [`Gemm16::release_scratch`] or the drop.
    scratch: StreamScratch,
    maps: TensorMaps,
    multiprocessors: u32,
    max_shared_bytes: u32,
    _library: Library,
}

/// The largest M, N or K: tensor-map coordinates are 32-bit signed.
const MAX_DIM: u32 = i32::MAX as u32;

impl Gemm16 {
    /// Loads the kernels for `gpu` (this crate's embedded sm_90a module, in `gpu`'s context).
    pub fn load(gpu: &Gpu) -> Result<Gemm16, GemmError> {
        crate::check_sm90a(gpu, "the 16-bit GEMM kernels")?;
        let info = gpu.info();
        let library = gpu.load_library("gpu-kernels", crate::MODULES)?;
        let bf16 = Kernels {
            nk: [
                (
                    library.entry_point(bf16_gemm_ws_cooperative)?,
                    library.entry_point(bf16_gemm_ws_cooperative_direct)?,
                ),
                (
                    library.entry_point(bf16_gemm_ws_pingpong)?,
                    library.entry_point(bf16_gemm_ws_pingpong_direct)?,
                ),
            ],
            kn: Some([
                (
                    library.entry_point(bf16_gemm_ws_cooperative_b_kn)?,
                    library.entry_point(bf16_gemm_ws_cooperative_b_kn_direct)?,
                ),
                (
                    library.entry_point(bf16_gemm_ws_pingpong_b_kn)?,
                    library.entry_point(bf16_gemm_ws_pingpong_b_kn_direct)?,
                ),
            ]),
        };
        let f16 = Kernels {
            nk: [
                (
                    library.entry_point(f16_gemm_ws_cooperative)?,
                    library.entry_point(f16_gemm_ws_cooperative_direct)?,
                ),
                (
                    library.entry_point(f16_gemm_ws_pingpong)?,
                    library.entry_point(f16_gemm_ws_pingpong_direct)?,
                ),
            ],
            kn: None,
        };
        Ok(Gemm16 {
            bf16,
            f16,
            padder: RowPadder::from_library(&library)?,
            scratch: StreamScratch::default(),
            maps: TensorMaps::default(),
            multiprocessors: info.multiprocessors,
            max_shared_bytes: info.max_shared_bytes_per_block,
            _library: library,
        })
    }

    /// The schedule [`gemm`](Self::gemm) runs `shape` with on this GPU
    /// ([`Gemm16Schedule::for_shape`]).
    pub fn schedule_for(&self, shape: GemmShape) -> Gemm16Schedule {
        Gemm16Schedule::for_shape(shape, self.multiprocessors)
    }

    /// Frees the scratch buffers kept for padded copies of A and B (one per stream that
    /// needed copies, as large as its largest call's) and returns their bytes; the next call
    /// that copies allocates again. Safe with calls in flight: each buffer is freed in its
    /// stream's order, after the work that uses it (cudarc's event tracking).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use gpu_kernels::gemm16::Gemm16;
    /// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
    /// let gemm = Gemm16::load(&gpu)?;
    /// // ... calls with K not a multiple of 8 keep a buffer for their copies ...
    /// let freed = gemm.release_scratch();
    /// println!("{freed} bytes of scratch freed");
    /// # Ok(())
    /// # }
    /// ```
    pub fn release_scratch(&self) -> usize {
        self.scratch.release()
    }

    /// `C = A B^T` or `C = A B` ([`BLayout`]) for elements `E` (`half::bf16` or
    /// `half::f16`), FP32 accumulation, rounded to nearest-even on the way out; launched on
    /// `gpu`'s stream (the caller's, for a [`Gpu::on_stream`]), not waited for. A, B and C are
    /// any cudarc buffers of `E` (`CudaSlice`, `CudaView`, `CudaViewMut`) in `gpu`'s context,
    /// recorded by cudarc's event tracking as read (A, B) and written (C), as its own
    /// launches are. Checked before anything runs ([`KernelError`]):
    /// - `m, n, k` in `1..2^31`, and each buffer at least as long as its matrix;
    /// - FP16 with B `k x n` is not built (refused).
    ///
    /// Any `m`, `n` and `k`. The tensor copies that feed the kernels need rows that are
    /// 16-byte multiples from a 16-byte aligned start: an A or B that is not (`k`, or for B
    /// `k x n` `n`, not a multiple of 8; a view that starts off 16 bytes) is first copied
    /// with padded rows (`gemm16_pad_rows`, one launch for both) into a scratch buffer that
    /// this `Gemm16` keeps per stream and grows to the largest copies asked for (freed with
    /// it), then multiplied; the time includes the copies. C's rows need no alignment: the direct-store epilogue writes them when `n` is
    /// not a multiple of 8 or C starts off 16 bytes.
    ///
    /// Fastest with `k` a multiple of 16: rows of A and B that start mid-sector (not a
    /// multiple of 32 bytes) cost the tensor copies 1.76x the L2 sectors (H200: 3072 x 3072 x
    /// 3008 runs 18% faster than 3072 x 3072 x 3000); padding K with zeros to a multiple of 16 gives
    /// the same product faster.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use gpu_kernels::gemm16::{BLayout, Gemm16, GemmShape};
    /// use half::bf16;
    /// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
    /// let gemm = Gemm16::load(&gpu)?;
    /// let (m, n, k) = (1000, 4096, 4096);
    /// let a = gpu.upload(&vec![bf16::ONE; m * k], "A")?;
    /// let b = gpu.upload(&vec![bf16::ONE; n * k], "B")?;
    /// let mut c = gpu.zeros::<bf16>(m * n, "C")?;
    /// let shape = GemmShape { m: m as u32, n: n as u32, k: k as u32 };
    /// gemm.gemm(&gpu, &a, &b, BLayout::NK, &mut c, shape)?;
    /// assert_eq!(gpu.download(&c, "C")?[0], bf16::from_f32(4096.0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn gemm<E: Element16>(
        &self,
        gpu: &Gpu,
        a: &(impl DevicePtr<E> + ?Sized),
        b: &(impl DevicePtr<E> + ?Sized),
        b_layout: BLayout,
        c: &mut (impl DevicePtrMut<E> + ?Sized),
        shape: GemmShape,
    ) -> Result<(), GemmError>
    where
        E::Device: Gemm16Device,
    {
        let strides = GemmStrides::packed(shape, b_layout);
        self.gemm_strided(gpu, a, b, b_layout, c, shape, strides)
    }

    /// [`gemm`](Self::gemm) with rows `strides` apart (leading dimensions, in elements): A and
    /// B inside wider buffers, C written into one. Each stride at least its row's length. A
    /// and B with strides that are multiples of 8 from a 16-byte aligned start are read in
    /// place; others are copied with padded rows first, as [`gemm`](Self::gemm) says. C's
    /// stride other than `n` needs `n` a multiple of 8 and C 16-byte aligned (the
    /// direct-store epilogue, for other `n`, writes packed rows).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use gpu_kernels::gemm16::{BLayout, Gemm16, GemmShape, GemmStrides};
    /// use half::bf16;
    /// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
    /// let gemm = Gemm16::load(&gpu)?;
    /// // K = 100, each row of A and B padded to 104 elements.
    /// let shape = GemmShape { m: 64, n: 64, k: 100 };
    /// let strides = GemmStrides { a: 104, b: 104, c: 64 };
    /// let a = gpu.zeros::<bf16>(64 * 104, "A")?;
    /// let b = gpu.zeros::<bf16>(64 * 104, "B")?;
    /// let mut c = gpu.zeros::<bf16>(64 * 64, "C")?;
    /// gemm.gemm_strided(&gpu, &a, &b, BLayout::NK, &mut c, shape, strides)?;
    /// # Ok(())
    /// # }
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_strided<E: Element16>(
        &self,
        gpu: &Gpu,
        a: &(impl DevicePtr<E> + ?Sized),
        b: &(impl DevicePtr<E> + ?Sized),
        b_layout: BLayout,
        c: &mut (impl DevicePtrMut<E> + ?Sized),
        shape: GemmShape,
        strides: GemmStrides,
    ) -> Result<(), GemmError>
    where
        E::Device: Gemm16Device,
    {
        check_device(gpu, "A", a.stream())?;
        check_device(gpu, "B", b.stream())?;
        check_device(gpu, "C", c.stream())?;
        let GemmShape { m, n, k } = shape;
        let lengths = [a.len(), b.len(), c.len()];
        check_shape(E::TYPE, shape, b_layout, strides, lengths)?;
        let kernels = E::Device::kernels(self);
        let schedules = match b_layout {
            BLayout::NK => &kernels.nk,
            BLayout::KN => kernels.kn.as_ref().ok_or_else(|| {
                KernelError::Unsupported(format!(
                    "{} with B k x n is not built: store B n x k",
                    E::TYPE.name()
                ))
            })?,
        };
        // Ping-pong's five stages take all 227 KiB; a GPU with less runs the cooperative kernel.
        let fits = |s: Gemm16Schedule| s.geometry().shared().bytes <= self.max_shared_bytes;
        let schedule = match self.schedule_for(shape) {
            Gemm16Schedule::PingPong if !fits(Gemm16Schedule::PingPong) => {
                Gemm16Schedule::Cooperative
            }
            s => s,
        };
        let g = schedule.geometry();
        let bytes = g.shared().bytes;
        if !fits(schedule) {
            return Err(KernelError::Unsupported(format!(
                "the kernel needs {bytes} B of shared memory per block; the GPU allows {}",
                self.max_shared_bytes
            )));
        }
        let (store, direct) = match schedule {
            Gemm16Schedule::Cooperative => &schedules[0],
            Gemm16Schedule::PingPong => &schedules[1],
        };
        let (tiles_m, tiles_n) = g.tiles(m, n);
        let config = LaunchConfig::linear(
            (tiles_m * tiles_n).min(self.multiprocessors),
            3 * WARPGROUP_THREADS,
            bytes,
        );
        // The guards record A and B as read and C as written once the kernel is queued (they
        // drop at the end of this function, after the launch).
        let stream = gpu.stream();
        let c_len = c.len();
        let (a_ptr, _a_read) = a.device_ptr(stream);
        let (b_ptr, _b_read) = b.device_ptr(stream);
        let (c_ptr, _c_written) = c.device_ptr_mut(stream);
        // C leaves through tensor stores where its rows can (16-byte multiples from a 16-byte
        // aligned start), else through the direct-store epilogue, which writes packed rows.
        let tensor_store = n.is_multiple_of(8) && c_ptr.is_multiple_of(16);
        if !tensor_store && strides.c != n {
            return Err(KernelError::Stride {
                name: "C",
                why: format!(
                    "rows {} elements apart from an address off 16 bytes: strided C needs a \
                     16-byte aligned start",
                    strides.c
                ),
            });
        }
        let (b_rows, b_cols) = match b_layout {
            BLayout::NK => (n, k),
            BLayout::KN => (k, n),
        };
        // A and B where a tensor map can describe them, else copies with padded rows in
        // this stream's scratch buffer (kept, so that the next call reuses it and its tensor
        // maps: a buffer allocated and freed per call cost up to 2x the GEMM's time).
        let mut pads = [PadRows::NONE; 2];
        let operands = [(a_ptr, m, k, strides.a), (b_ptr, b_rows, b_cols, strides.b)];
        let mut scratch_bytes = 0u64;
        for (pad, (address, rows, cols, stride)) in pads.iter_mut().zip(operands) {
            if !(address.is_multiple_of(16) && stride.is_multiple_of(8)) {
                // `dst` is an offset into the scratch buffer until it is known.
                let dst_stride = PadRows::sector_stride(cols);
                *pad = PadRows::new(address, rows, cols, stride, scratch_bytes, dst_stride);
                scratch_bytes += (pad.copy_elements() * 2).next_multiple_of(SCRATCH_ALIGN);
            }
        }
        let mut scratch = self.scratch.lock();
        let (_scratch_written, scratch_base) = match scratch_bytes {
            0 => (None, 0),
            bytes => {
                // SAFETY: every byte of a padded copy is written by the padding kernel before
                // the GEMM reads it, both queued after this on this stream.
                let buffer =
                    unsafe { scratch.for_stream(stream, bytes, "padded copies of A and B")? };
                // Waits for the buffer's earlier use on another stream (event tracking) and
                // records this one as a write.
                let (base, written) = buffer.device_ptr_mut(stream);
                (Some(written), base)
            }
        };
        let mut placed = [(a_ptr, strides.a), (b_ptr, strides.b)];
        for (pad, place) in pads.iter_mut().zip(&mut placed) {
            if pad.rows > 0 {
                pad.dst += scratch_base;
                *place = (pad.dst, pad.dst_stride);
            }
        }
        let [(a_address, a_stride), (b_address, b_stride)] = placed;
        // Both operands copied along K (B n x k): their rows end in zeros, so the GEMM runs
        // over the padded K. The tensor maps then end on whole 16-element sectors instead of
        // mid-sector (K = 1023: 2.5-3.3% slower on an H100, docs/results.md).
        let k = match (b_layout, pads[0].rows > 0 && pads[1].rows > 0) {
            (BLayout::NK, true) => pads[0].dst_stride.min(pads[1].dst_stride),
            _ => k,
        };
        let map = |address: u64, (cols, rows): (u32, u32), stride: u32, [bc, br]: [u32; 2]| {
            self.maps.get(
                TensorMapBuilder::new(E::TYPE.tensor_map(), address, &[cols.into(), rows.into()])
                    .strides(&[u64::from(stride) * 2])
                    .box_dims(&[bc, br])
                    .swizzle(Swizzle::Bytes128),
            )
        };
        let a_map = map(a_address, (k, m), a_stride, g.a_box())?;
        let b_map = match b_layout {
            BLayout::NK => map(b_address, (k, n), b_stride, g.b_box())?,
            BLayout::KN => map(b_address, (n, k), b_stride, BKnTile::BOX)?,
        };
        let c_map = match tensor_store {
            true => Some(map(c_ptr, (n, m), strides.c, CBox::BOX)?),
            false => None,
        };
        // SAFETY: each source is its caller's buffer (guards held), readable over its rows
        // (checked) and the granule before its first element (same allocation); each copy
        // holds rows * dst_stride elements; nothing overlaps.
        unsafe { self.padder.launch(gpu, pads)? };
        if let Some(c_map) = c_map {
            // SAFETY: the maps describe A (k x m), B (k x n or n x k) and C (n x m) of `E`,
            // inside their buffers (checked), with the tiles' boxes, 128-byte swizzle and
            // zero fill; m, n, k >= 1; a 1-D grid of 384-thread blocks with the geometry's
            // shared memory: the kernels' launch contract.
            unsafe { store.launch(gpu, config, (&a_map, &b_map, &c_map, m, n, k))? };
        } else {
            // SAFETY: C's address from its buffer, whose guard this function holds across the
            // launch.
            let mut c_out = unsafe { Address::<E::Device>::new(c_ptr, c_len) };
            // SAFETY: as above, C as a pointer to its m * n elements (checked).
            unsafe { direct.launch(gpu, config, (&a_map, &b_map, &mut c_out, m, n, k))? };
        }
        Ok(())
    }
}

/// The row strides (leading dimensions), in elements, of a [`Gemm16`] call's A (`m` rows of
/// `k`), B (`n` rows of `k`, or `k` rows of `n`: [`BLayout`]) and C (`m` rows of `n`).
///
/// ```
/// use gpu_kernels::GemmShape;
/// use gpu_kernels::gemm16::{BLayout, GemmStrides};
/// let shape = GemmShape { m: 64, n: 96, k: 40 };
/// assert_eq!(GemmStrides::packed(shape, BLayout::NK), GemmStrides { a: 40, b: 40, c: 96 });
/// assert_eq!(GemmStrides::packed(shape, BLayout::KN), GemmStrides { a: 40, b: 96, c: 96 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmStrides {
    /// From one row of A to the next.
    pub a: u32,
    /// From one row of B to the next.
    pub b: u32,
    /// From one row of C to the next.
    pub c: u32,
}

impl GemmStrides {
    /// Packed rows.
    pub const fn packed(shape: GemmShape, b_layout: BLayout) -> GemmStrides {
        GemmStrides {
            a: shape.k,
            b: match b_layout {
                BLayout::NK => shape.k,
                BLayout::KN => shape.n,
            },
            c: shape.n,
        }
    }
}

/// The checks of [`Gemm16::gemm_strided`] for `element`, on the shape, the strides and the
/// buffers' lengths `[a, b, c]`: sizes in `1..2^31`; FP16 with B `k x n` not built; each
/// stride at least its row (A's and B's any such: rows a tensor map cannot describe are
/// copied); C's other than `n` only with `n` a multiple of 8, and a multiple of 8 (C's rows
/// leave through tensor stores); each buffer as long as its rows reach.
pub fn check_shape(
    element: ElementType,
    shape: GemmShape,
    b_layout: BLayout,
    strides: GemmStrides,
    lengths: [usize; 3],
) -> Result<(), GemmError> {
    let GemmShape { m, n, k } = shape;
    crate::gemm_call::check_dims(shape, MAX_DIM)?;
    if b_layout == BLayout::KN && element == ElementType::F16 {
        return Err(KernelError::Unsupported(
            "FP16 with B k x n is not built: store B n x k".into(),
        ));
    }
    let (b_rows, b_cols) = match b_layout {
        BLayout::NK => (n, k),
        BLayout::KN => (k, n),
    };
    for (name, stride, rows, cols, have) in [
        ("A", strides.a, m, k, lengths[0]),
        ("B", strides.b, b_rows, b_cols, lengths[1]),
        ("C", strides.c, m, n, lengths[2]),
    ] {
        let bad = |why: String| Err(KernelError::Stride { name, why });
        if stride < cols {
            return bad(format!(
                "rows {stride} elements apart are shorter than their {cols}"
            ));
        }
        // A and B: any stride (copied when no tensor map can describe it). C: strided rows
        // leave through tensor stores, so only with N a multiple of 8, 16-byte rows.
        let strided_c = name == "C" && stride != n;
        if strided_c && n.is_multiple_of(8) && !stride.is_multiple_of(8) {
            return bad(format!(
                "rows {stride} elements apart: tensor stores need a multiple of 8 (16 bytes)"
            ));
        }
        if strided_c && !n.is_multiple_of(8) {
            return Err(KernelError::Unsupported(format!(
                "C with rows {stride} elements apart needs N a multiple of 8 (N = {n}: the \
                 direct-store epilogue writes packed rows)"
            )));
        }
        let need = (rows as u64 - 1) * stride as u64 + cols as u64;
        crate::error::check_len(name, have, need)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(m: u32, n: u32, k: u32) -> GemmShape {
        GemmShape { m, n, k }
    }

    #[test]
    fn the_cost_model_picks_the_schedule_measured_faster() {
        let pick = |m, n, k| Gemm16Schedule::for_shape(shape(m, n, k), 132);
        use Gemm16Schedule::{Cooperative, PingPong};
        // H200, 2026-12-04: long K over many tiles, the cooperative kernel (4096^3: 2% faster;
        // 8192x8192x8192 5%, 6144^3 6%); K not a multiple of 64 (3000^3: 15%).
        for (m, n, k) in [
            (4096, 4096, 4096),
            (8192, 8192, 8192),
            (6144, 6144, 6144),
            (4096, 4096, 8192),
            (3000, 3000, 3000),
            (4096, 4096, 4000),
            (2048, 2048, 2000),
        ] {
            assert_eq!(pick(m, n, k), Cooperative, "{m}x{n}x{k}");
        }
        // Few tiles (1024^3: 32 cooperative tiles for 132 SMs, ping-pong 1.4x), short K
        // (8192x8192x512: 4%), tile counts that ping-pong's halves divide better (3072^3: 14%).
        for (m, n, k) in [
            (1024, 1024, 1024),
            (512, 4096, 4096),
            (128, 8192, 4096),
            (8192, 8192, 512),
            (3072, 3072, 3072),
            (3000, 3000, 3072),
        ] {
            assert_eq!(pick(m, n, k), PingPong, "{m}x{n}x{k}");
        }
        // The waves: 2048 cooperative tiles are 16 of them on 132 SMs, 8 on 264.
        let s = shape(8192, 8192, 64);
        assert_eq!(Cooperative.predicted_cost(s, 132), 16.0 * 2.0 * 1.5);
        assert_eq!(Cooperative.predicted_cost(s, 264), 8.0 * 2.0 * 1.5);
        assert_eq!(PingPong.predicted_cost(s, 132), 32.0 / 0.96);
    }

    #[test]
    fn shapes_strides_and_buffers_are_checked_with_errors_a_caller_can_match() {
        let packed = |s: GemmShape, l: BLayout, len: [usize; 3]| {
            check_shape(ElementType::Bf16, s, l, GemmStrides::packed(s, l), len)
        };
        let msg = |r: Result<(), GemmError>| r.unwrap_err().to_string();
        let (m, n, k) = (128, 256, 64);
        assert!(
            packed(
                shape(m, n, k),
                BLayout::NK,
                [m * k, n * k, m * n].map(|x| x as usize)
            )
            .is_ok()
        );
        // Any N, either B layout (C's rows written directly; B k x n copied with padded rows).
        assert!(packed(shape(3, 5, 8), BLayout::NK, [24, 40, 15]).is_ok());
        assert!(packed(shape(3, 5, 8), BLayout::KN, [24, 40, 15]).is_ok());
        assert!(msg(packed(shape(0, 5, 8), BLayout::NK, [0, 40, 0])).contains("at least 1"));
        // Any K: K = 12 packed (rows of 24 bytes, copied with padded rows), or in rows padded
        // to 16 (read in place), or strided by an odd 13.
        let k12 = shape(4, 4, 12);
        assert!(packed(k12, BLayout::NK, [48, 48, 16]).is_ok());
        let odd = GemmStrides { a: 13, b: 13, c: 4 };
        assert!(check_shape(ElementType::Bf16, k12, BLayout::NK, odd, [51, 51, 16]).is_ok());
        let err = check_shape(ElementType::Bf16, k12, BLayout::NK, odd, [50, 51, 16]);
        assert!(
            matches!(
                err,
                Err(KernelError::BufferTooSmall {
                    name: "A",
                    have: 50,
                    need: 51
                })
            ),
            "{err:?}"
        );
        let err = check_shape(
            ElementType::Bf16,
            k12,
            BLayout::NK,
            GemmStrides { a: 11, ..odd },
            [51, 51, 16],
        );
        assert!(
            matches!(err, Err(KernelError::Stride { name: "A", .. })),
            "{err:?}"
        );
        let padded = GemmStrides { a: 16, b: 16, c: 4 };
        assert!(check_shape(ElementType::Bf16, k12, BLayout::NK, padded, [60, 60, 16]).is_ok());
        // The last row of A ends at 3 * 16 + 12 = 60.
        let err = check_shape(ElementType::Bf16, k12, BLayout::NK, padded, [59, 60, 16]);
        assert!(
            matches!(
                err,
                Err(KernelError::BufferTooSmall {
                    name: "A",
                    have: 59,
                    need: 60
                })
            ),
            "{err:?}"
        );
        assert_eq!(
            msg(packed(shape(4, 4, 8), BLayout::NK, [32, 32, 15])),
            "C holds 15 elements; 16 are needed"
        );
        // C wider than N: through its tensor map when N is a multiple of 8, refused otherwise.
        let wide_c = GemmStrides { a: 8, b: 8, c: 24 };
        assert!(
            check_shape(
                ElementType::Bf16,
                shape(4, 16, 8),
                BLayout::NK,
                wide_c,
                [32, 128, 88]
            )
            .is_ok()
        );
        let err = check_shape(
            ElementType::Bf16,
            shape(4, 5, 8),
            BLayout::NK,
            wide_c,
            [32, 40, 77],
        );
        assert!(matches!(err, Err(KernelError::Unsupported(_))), "{err:?}");
        let err = check_shape(
            ElementType::Bf16,
            shape(4, 16, 8),
            BLayout::NK,
            GemmStrides { c: 8, ..wide_c },
            [usize::MAX; 3],
        );
        assert!(
            matches!(err, Err(KernelError::Stride { name: "C", .. })),
            "{err:?}"
        );
        assert!(
            msg(packed(shape(1 << 31, 8, 8), BLayout::NK, [usize::MAX; 3]))
                .contains("at most 2147483647")
        );
        // FP16 with B k x n is not built: refused as unsupported, naming what to do.
        let s = shape(8, 8, 8);
        let err = check_shape(
            ElementType::F16,
            s,
            BLayout::KN,
            GemmStrides::packed(s, BLayout::KN),
            [64; 3],
        );
        assert!(
            matches!(&err, Err(KernelError::Unsupported(why)) if why.contains("store B n x k")),
            "{err:?}"
        );
    }
}
