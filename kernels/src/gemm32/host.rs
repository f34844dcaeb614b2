//! The host API of the FP32 GEMM: [`Gemm32`] loads this crate's module for an open GPU and
//! multiplies the caller's buffers with the family [`Gemm32Family::for_shape`] chooses,
//! the shape checked first (a clear [`GemmError`], never a launch past a buffer).

use super::{GemmEntry, GemmKernel, GemmPointers, MAX_DIM, find};
use crate::KernelError;
use crate::error::check_device;
use crate::{GemmError, GemmShape};
use gpu_runtime::Address;
use gpu_runtime::cudarc::driver::{DevicePtr, DevicePtrMut};
use gpu_runtime::{Gpu, Kernel, LaunchConfig, Library};

/// The families [`Gemm32`] runs, each a row of [`GEMM_KERNELS`](super::GEMM_KERNELS).
///
/// ```
/// use gpu_kernels::GemmShape;
/// use gpu_kernels::gemm32::Gemm32Family;
/// // Large and square: the 5-stage cp.async pipeline; sm_80 never gets a split-K family.
/// let big = GemmShape { m: 4096, n: 4096, k: 4096 };
/// assert_eq!(Gemm32Family::for_shape(big, 132, true), Gemm32Family::ThreadPipeline);
/// let skinny = GemmShape { m: 128, n: 128, k: 65536 };
/// assert!(!Gemm32Family::for_shape(skinny, 108, false).needs_sm90());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gemm32Family {
    /// `gemm_thread_pipeline_5`: 128x128 tiles of 4 warps, two blocks per SM, a 5-stage
    /// `cp.async` thread pipeline (98-99% of cuBLAS SGEMM at 4096^3 and 8192^3 on an H200).
    ThreadPipeline,
    /// `gemm_thread_pipeline_4_64x64`: 64x64 tiles, for fewer 128x128 tiles than SMs without
    /// clusters (below sm_90).
    SmallTiles,
    /// `gemm_split_k_2` (sm_90): 128x128 tiles of 4 warps, K split over a cluster of 2
    /// (100-104% of cuBLAS at 2000x3000x500 and 8192x256x4096).
    SplitK2,
    /// `gemm_split_k_2x2` (sm_90): 128x128 tiles, K split over a cluster of 2 and over 2
    /// warp groups of a block (104-106% of cuBLAS at 1000^3 and 1024^3).
    SplitK2x2,
    /// `gemm_split_k_1x8_64x64` (sm_90): 64x64 tiles, K split over 8 warp groups of a block
    /// (99-104% of cuBLAS at 8192x64x8192 and 64x8192x8192, 98% at 1536^3).
    SplitK8Groups,
    /// `gemm_split_k_2x8_64x64` (sm_90): [`Gemm32Family::SplitK8Groups`] in clusters of 2
    /// (96-99% of cuBLAS at 512x512x8192 and 1024x256x16384, where the unclustered one gives
    /// half).
    SplitK2x8,
    /// `gemm_split_k_4x8_64x64` (sm_90): in clusters of 4 (256x256x16384: 62% of cuBLAS,
    /// 3.6x the unclustered one).
    SplitK4x8,
    /// `gemm_split_k_8x8_64x64` (sm_90): in clusters of 8 (128x128x65536: 7.7x the
    /// unclustered one, 38% of cuBLAS).
    SplitK8x8,
}

/// What [`Gemm32Family::for_shape`] predicts a family's time from: blocks run in waves over
/// the SMs, `slots` at a time per SM, at `rate` per SM when the SM is full and `alone` times
/// that when a block has its SM to itself; each block's k-loop costs `k_overhead` k-steps
/// more than its length (pipeline fill, epilogue, the split's reduction). Fitted to an H200
/// runs of these families at 34 shapes (2026-12-04, docs/results.md); only the ratios matter.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CostModel {
    slots: u32,
    /// TFLOP/s per SM.
    rate: f64,
    alone: f64,
    k_overhead: f64,
}

impl Gemm32Family {
    /// Every family, in [`Gemm32`]'s order.
    pub const ALL: [Gemm32Family; 8] = [
        Gemm32Family::ThreadPipeline,
        Gemm32Family::SmallTiles,
        Gemm32Family::SplitK2,
        Gemm32Family::SplitK2x2,
        Gemm32Family::SplitK8Groups,
        Gemm32Family::SplitK2x8,
        Gemm32Family::SplitK4x8,
        Gemm32Family::SplitK8x8,
    ];

    /// Its row of the kernel table.
    pub fn kernel(self) -> &'static GemmKernel {
        let name = match self {
            Gemm32Family::ThreadPipeline => "gemm_thread_pipeline_5",
            Gemm32Family::SmallTiles => "gemm_thread_pipeline_4_64x64",
            Gemm32Family::SplitK2 => "gemm_split_k_2",
            Gemm32Family::SplitK2x2 => "gemm_split_k_2x2",
            Gemm32Family::SplitK8Groups => "gemm_split_k_1x8_64x64",
            Gemm32Family::SplitK2x8 => "gemm_split_k_2x8_64x64",
            Gemm32Family::SplitK4x8 => "gemm_split_k_4x8_64x64",
            Gemm32Family::SplitK8x8 => "gemm_split_k_8x8_64x64",
        };
        find(name).expect("every family is a row of GEMM_KERNELS")
    }

    /// Whether it needs compute capability 9.0 (thread block clusters).
    pub fn needs_sm90(self) -> bool {
        self.kernel().style.needs_sm90()
    }

    /// The cost model of the families [`Gemm32Family::for_shape`] weighs on sm_90.
    fn cost_model(self) -> Option<CostModel> {
        let model = |slots, rate, alone, k_overhead| CostModel {
            slots,
            rate,
            alone,
            k_overhead,
        };
        match self {
            Gemm32Family::ThreadPipeline => Some(model(2, 0.405, 0.85, 120.0)),
            Gemm32Family::SplitK2 => Some(model(2, 0.405, 0.80, 120.0)),
            Gemm32Family::SplitK2x2 => Some(model(1, 0.345, 1.0, 56.0)),
            Gemm32Family::SplitK8Groups => Some(model(1, 0.35, 1.0, 40.0)),
            Gemm32Family::SplitK2x8 => Some(model(1, 0.35, 1.0, 40.0)),
            Gemm32Family::SplitK4x8 => Some(model(1, 0.295, 1.0, 32.0)),
            Gemm32Family::SplitK8x8 => Some(model(1, 0.30, 1.0, 32.0)),
            Gemm32Family::SmallTiles => None,
        }
    }

    /// The time [`Gemm32Family::cost_model`] predicts for `shape` on `multiprocessors` SMs, in
    /// microseconds (`None` for a family without a model).
    pub fn predicted_micros(self, shape: GemmShape, multiprocessors: u32) -> Option<f64> {
        let model = self.cost_model()?;
        let kernel = self.kernel();
        let (tile, style) = (kernel.tile, kernel.style);
        let GemmShape { m, n, k } = shape;
        let blocks =
            m.div_ceil(tile.bm()) as u64 * n.div_ceil(tile.bn()) as u64 * style.split() as u64;
        // Blocks on the busiest SM, and how many of them run at once.
        let per_sm = blocks.div_ceil(multiprocessors.max(1) as u64);
        let at_once = per_sm.min(model.slots as u64);
        let block_rate = if at_once < model.slots as u64 {
            model.rate * model.alone / at_once as f64
        } else {
            model.rate / model.slots as f64
        };
        let k_per_group = k as f64 / (style.split() * style.k_groups()) as f64;
        let block_flops = 2.0 * (tile.bm() * tile.bn()) as f64 * k as f64 / style.split() as f64;
        let waves = per_sm.div_ceil(at_once) as f64;
        let overhead = (k_per_group + model.k_overhead) / k_per_group;
        Some(waves * block_flops / (block_rate * 1e6) * overhead)
    }

    /// The family `Gemm32::gemm` runs for `shape` on a GPU of `multiprocessors` SMs, with
    /// `clusters` (sm_90) or without. With clusters: the one of
    /// [`Gemm32Family::ThreadPipeline`] and the six split-K families with the least
    /// [`Gemm32Family::predicted_micros`], the first on a tie (at the 34 shapes it was fitted
    /// to: within 3% of the fastest of the seven at 29, at least 90% everywhere, 98.9% on
    /// average). Without: [`Gemm32Family::SmallTiles`]
    /// for fewer 128x128 tiles of C than SMs, else [`Gemm32Family::ThreadPipeline`].
    pub fn for_shape(shape: GemmShape, multiprocessors: u32, clusters: bool) -> Gemm32Family {
        if clusters {
            let time = |f: Gemm32Family| {
                f.predicted_micros(shape, multiprocessors)
                    .unwrap_or(f64::INFINITY)
            };
            return Gemm32Family::ALL
                .into_iter()
                .filter(|f| f.cost_model().is_some())
                .min_by(|a, b| time(*a).total_cmp(&time(*b)))
                .expect("seven candidates");
        }
        let GemmShape { m, n, .. } = shape;
        let tiles = m.div_ceil(128) as u64 * n.div_ceil(128) as u64;
        if tiles < multiprocessors as u64 {
            Gemm32Family::SmallTiles
        } else {
            Gemm32Family::ThreadPipeline
        }
    }
}

/// A family's two entry points: 16-byte copies (K and N multiples of 4) and 4-byte ones.
struct Loaded {
    aligned: Kernel<GemmPointers>,
    any: Kernel<GemmPointers>,
}

/// The FP32 GEMM of this crate, loaded for one GPU: `C = A B`, A `m x k`, B `k x n`, C
/// `m x n`, row-major and packed, FP32 FFMA math (no TF32), any `M, N, K >= 1`. Runs on
/// compute capability 8.0 and later; the split-K families need 9.0 (clusters).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use gpu_kernels::GemmShape;
/// use gpu_kernels::gemm32::Gemm32;
/// let gpu = gpu_runtime::Gpu::open(gpu_kernels::MODULES)?;
/// let gemm = Gemm32::load(&gpu)?;
/// let (m, n, k) = (100, 300, 50);
/// let a = gpu.upload(&vec![1.0f32; m * k], "A")?;
/// let b = gpu.upload(&vec![2.0f32; k * n], "B")?;
/// let mut c = gpu.zeros::<f32>(m * n, "C")?;
/// gemm.gemm(&gpu, &a, &b, &mut c, GemmShape { m: m as u32, n: n as u32, k: k as u32 })?;
/// assert_eq!(gpu.download(&c, "C")?[0], 100.0);
/// # Ok(())
/// # }
/// ```
pub struct Gemm32 {
    /// By [`Gemm32Family::ALL`]'s order; `None` for a family this GPU cannot run.
    loaded: [Option<Loaded>; 8],
    multiprocessors: u32,
    max_shared_bytes: u32,
    clusters: bool,
    _library: Library,
}

impl Gemm32 {
    /// Loads the kernels for `gpu` (this crate's embedded module for its arch, in `gpu`'s
    /// context).
    pub fn load(gpu: &Gpu) -> Result<Gemm32, GemmError> {
        let info = gpu.info();
        let clusters = info.compute_capability.0 >= 9;
        let library = gpu.load_library("gpu-kernels", crate::MODULES)?;
        let mut loaded = [const { None }; 8];
        for (slot, family) in loaded.iter_mut().zip(Gemm32Family::ALL) {
            if family.needs_sm90() && !clusters {
                continue;
            }
            let kernel = family.kernel();
            let (GemmEntry::Pointers(aligned), Some(any)) =
                (kernel.entry_aligned, kernel.entry_any)
            else {
                unreachable!("every family copies with cp.async: two pointer entry points");
            };
            *slot = Some(Loaded {
                aligned: library.entry_point(aligned)?,
                any: library.entry_point(any)?,
            });
        }
        Ok(Gemm32 {
            loaded,
            multiprocessors: info.multiprocessors,
            max_shared_bytes: info.max_shared_bytes_per_block,
            clusters,
            _library: library,
        })
    }

    /// `C = A B` in FP32: launched on `gpu`'s stream, not waited for. Checked before anything
    /// runs: `m, n, k` in `1..=2^30`, each buffer at least as long as its matrix, M within
    /// the grid's reach (65535 rows of tiles) and the kernel's shared memory within the GPU's.
    /// 16-byte copies where K and N are multiples of 4 and the buffers start on 16 bytes,
    /// 4-byte copies otherwise. A, B and C are any cudarc buffers of `f32` in `gpu`'s
    /// context, recorded as read (A, B) and written (C) by cudarc's event tracking.
    pub fn gemm(
        &self,
        gpu: &Gpu,
        a: &(impl DevicePtr<f32> + ?Sized),
        b: &(impl DevicePtr<f32> + ?Sized),
        c: &mut (impl DevicePtrMut<f32> + ?Sized),
        shape: GemmShape,
    ) -> Result<(), GemmError> {
        check_device(gpu, "A", a.stream())?;
        check_device(gpu, "B", b.stream())?;
        check_device(gpu, "C", c.stream())?;
        let lengths = [a.len(), b.len(), c.len()];
        crate::gemm_call::check_sizes(shape, MAX_DIM, lengths)?;
        let family = Gemm32Family::for_shape(shape, self.multiprocessors, self.clusters);
        let kernel = family.kernel();
        let loaded = self.loaded[family as usize]
            .as_ref()
            .expect("load loads every family for_shape picks on this GPU");
        let GemmShape { m, n, k } = shape;
        let config = check_launch(kernel, shape, self.max_shared_bytes)?;
        // The guards record A and B as read and C as written once the kernel is queued.
        let stream = gpu.stream();
        let (a_ptr, _a_read) = a.device_ptr(stream);
        let (b_ptr, _b_read) = b.device_ptr(stream);
        let (c_ptr, _c_written) = c.device_ptr_mut(stream);
        // 16-byte copies need 16-byte rows and starts (a view may start anywhere).
        let aligned = n.is_multiple_of(4)
            && k.is_multiple_of(4)
            && [a_ptr, b_ptr, c_ptr].iter().all(|p| p.is_multiple_of(16));
        let entry = if aligned {
            &loaded.aligned
        } else {
            &loaded.any
        };
        // SAFETY: each address is its buffer's, whose guard is held across the launch.
        let (a, b, mut c) = unsafe {
            (
                Address::<f32>::new(a_ptr, lengths[0]),
                Address::<f32>::new(b_ptr, lengths[1]),
                Address::<f32>::new(c_ptr, lengths[2]),
            )
        };
        // SAFETY: the kernels take (a, b, c, m, n, k), A m x k, B k x n, C m x n floats, which
        // the buffers hold (checked); the 16-byte entry point only where K and N are multiples
        // of 4 and every buffer starts on 16 bytes; 1 <= m, n, k <= MAX_DIM; the family's
        // grid, threads, shared memory and cluster: its launch contract.
        unsafe { entry.launch(gpu, config, (&a, &b, &mut c, m, n, k))? };
        Ok(())
    }
}

/// `kernel`'s launch for `shape`, if the GPU can take it: its grid's y (rows of tiles) at most
/// 65535, its shared memory at most `max_shared_bytes`.
fn check_launch(
    kernel: &GemmKernel,
    shape: GemmShape,
    max_shared_bytes: u32,
) -> Result<LaunchConfig, GemmError> {
    let grid = kernel.grid(shape.m, shape.n);
    if grid.1 > 65535 {
        return Err(KernelError::Shape(format!(
            "M = {} needs {} rows of {}-row tiles; a grid holds at most 65535",
            shape.m,
            grid.1,
            kernel.tile.bm()
        )));
    }
    let shared_bytes = kernel.shared_bytes();
    if shared_bytes > max_shared_bytes {
        return Err(KernelError::Unsupported(format!(
            "{} needs {shared_bytes} B of shared memory per block; the GPU allows \
             {max_shared_bytes}",
            kernel.name
        )));
    }
    Ok(LaunchConfig {
        grid,
        threads: kernel.threads(),
        shared_bytes,
        cluster: kernel.cluster(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(m: u32, n: u32, k: u32) -> GemmShape {
        GemmShape { m, n, k }
    }

    #[test]
    fn each_shape_gets_the_family_measured_best_there() {
        use Gemm32Family::*;
        let pick = |s, clusters| Gemm32Family::for_shape(s, 132, clusters);
        // The measured winners (docs/results.md, 2026-12-04), where the model picks them.
        for (m, n, k, winner) in [
            (4096, 4096, 4096, ThreadPipeline),
            (8192, 8192, 8192, ThreadPipeline),
            (2048, 2048, 2048, ThreadPipeline),
            (4095, 4097, 1023, ThreadPipeline),
            (1024, 1024, 1024, SplitK2x2),
            (1000, 1000, 1000, SplitK2x2),
            (1536, 1536, 1536, SplitK8Groups),
            (8192, 64, 8192, SplitK8Groups),
            (64, 8192, 8192, SplitK8Groups),
            (128, 8192, 8192, SplitK8Groups),
            (32, 4096, 4096, SplitK2x8),
            (2000, 3000, 500, SplitK2),
            (8192, 256, 4096, SplitK2),
            (512, 512, 8192, SplitK2x8),
            (1024, 256, 16384, SplitK2x8),
            (128, 128, 65536, SplitK8x8),
        ] {
            assert_eq!(pick(shape(m, n, k), true), winner, "{m}x{n}x{k}");
        }
        // Without clusters: no split K.
        assert_eq!(pick(shape(1024, 1024, 1024), false), SmallTiles);
        assert_eq!(pick(shape(8192, 64, 8192), false), SmallTiles);
        assert_eq!(pick(shape(4096, 4096, 4096), false), ThreadPipeline);
        // Every family has both pointer entry points (what `load` relies on), and needs
        // sm_90 exactly when `for_shape` gives it only with clusters.
        for family in Gemm32Family::ALL {
            let k = family.kernel();
            assert!(
                matches!(k.entry_aligned, GemmEntry::Pointers(_)),
                "{family:?}"
            );
            assert!(k.entry_any.is_some(), "{family:?}");
            let sm90 = !matches!(family, ThreadPipeline | SmallTiles);
            assert_eq!(family.needs_sm90(), sm90, "{family:?}");
        }
    }

    #[test]
    fn the_cost_model_sees_waves_and_short_k() {
        let time = |f: Gemm32Family, m, n, k| f.predicted_micros(shape(m, n, k), 132).unwrap();
        let tp = Gemm32Family::ThreadPipeline;
        // 144 tiles: 12 SMs hold two blocks, so the launch takes as long as 264 tiles.
        assert_eq!(time(tp, 1536, 1536, 1536), time(tp, 1536, 2816, 1536));
        // A block alone on its SM runs at 85% of the SM's rate, two sharing it at 50% each:
        // 64 tiles take 0.59 of the time of 256.
        let ratio = time(tp, 1024, 1024, 1024) / time(tp, 2048, 2048, 1024);
        assert!((ratio - 0.5 / 0.85).abs() < 1e-9, "{ratio}");
        // Twice the K, less than twice the time (the fixed cost per block is spread).
        let split = Gemm32Family::SplitK8Groups;
        assert!(time(split, 64, 8192, 2048) < 2.0 * time(split, 64, 8192, 1024));
        assert_eq!(
            Gemm32Family::SmallTiles.predicted_micros(shape(8, 8, 8), 132),
            None
        );
    }

    #[test]
    fn shapes_buffers_and_grids_are_checked_with_clear_errors() {
        let sizes = |s: GemmShape, len: [usize; 3]| {
            crate::gemm_call::check_sizes(s, MAX_DIM, len).map_err(|e| e.to_string())
        };
        assert!(sizes(shape(3, 5, 7), [21, 35, 15]).is_ok());
        for (s, lengths, says) in [
            (shape(0, 5, 7), [0, 35, 0], "at least 1"),
            (
                shape(3, 5, 7),
                [20, 35, 15],
                "A holds 20 elements; 21 are needed",
            ),
            (shape(3, 5, 7), [21, 34, 15], "B holds 34"),
            (shape(3, 5, 7), [21, 35, 14], "C holds 14"),
        ] {
            let err = sizes(s, lengths).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
        let huge = shape(MAX_DIM + 1, 8, 8);
        assert!(
            sizes(huge, [usize::MAX; 3])
                .unwrap_err()
                .contains("at most")
        );
        let wide = Gemm32Family::ThreadPipeline.kernel();
        let tall = shape(65536 * 128, 256, 8);
        let err = check_launch(wide, tall, 227 * 1024)
            .unwrap_err()
            .to_string();
        assert!(err.contains("65535"), "{err}");
        let err = check_launch(wide, shape(256, 256, 8), 1024)
            .unwrap_err()
            .to_string();
        assert!(err.contains("shared memory"), "{err}");
        let ok = check_launch(wide, shape(4096, 4096, 8), 227 * 1024).unwrap();
        assert_eq!(ok.grid, (32, 32));
        let split = Gemm32Family::SplitK2x2.kernel();
        let ok = check_launch(split, shape(1024, 1024, 8), 227 * 1024).unwrap();
        assert_eq!((ok.grid, ok.cluster), ((16, 8), [2, 1, 1]));
    }
}
