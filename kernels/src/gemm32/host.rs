//! The host API of the FP32 GEMM: [`Gemm32`] loads this crate's module for an open GPU and
//! multiplies the caller's buffers with the family [`Gemm32Family::for_shape`] picks,
//! the shape checked first (a clear [`GemmError`], never a launch past a buffer).

use super::{GemmEntry, GemmKernel, GemmPointers, MAX_DIM, find};
use crate::{GemmError, GemmShape};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig, Library};

/// The families [`Gemm32`] runs, each a row of [`GEMM_KERNELS`](super::GEMM_KERNELS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gemm32Family {
    /// Many tiles: 128x128 tiles of 4 warps, two blocks per SM, a 4-stage `cp.async` thread
    /// pipeline (`gemm_thread_pipeline_4`: 97-98% of cuBLAS SGEMM at 4096^3 and 8192^3 on an
    /// H200).
    Wide,
    /// Fewer 128x128 tiles than SMs, without clusters (below sm_90): 64x64 tiles
    /// (`gemm_thread_pipeline_4_64x64`).
    FewTiles,
    /// Fewer 128x128 tiles than SMs on sm_90: K split over a cluster of 2 and over 2 warp
    /// groups (`gemm_split_k_2x2`: 116.6% of cuBLAS at 1024^3, 108.6% at 1000^3).
    FewTilesSm90,
    /// M or N at most 64 on sm_90: 64x64 tiles, K split over 8 warp groups
    /// (`gemm_split_k_1x8_64x64`: 107-110% of cuBLAS at 8192x64x8192, 103-104% at
    /// 64x8192x8192).
    SkinnySm90,
}

impl Gemm32Family {
    /// Every family, in [`Gemm32`]'s order.
    pub const ALL: [Gemm32Family; 4] = [
        Gemm32Family::Wide,
        Gemm32Family::FewTiles,
        Gemm32Family::FewTilesSm90,
        Gemm32Family::SkinnySm90,
    ];

    /// Its row of the kernel table.
    pub fn kernel(self) -> &'static GemmKernel {
        let name = match self {
            Gemm32Family::Wide => "gemm_thread_pipeline_4",
            Gemm32Family::FewTiles => "gemm_thread_pipeline_4_64x64",
            Gemm32Family::FewTilesSm90 => "gemm_split_k_2x2",
            Gemm32Family::SkinnySm90 => "gemm_split_k_1x8_64x64",
        };
        find(name).expect("every family is a row of GEMM_KERNELS")
    }

    /// Whether it needs compute capability 9.0 (thread block clusters).
    pub fn needs_sm90(self) -> bool {
        self.kernel().style.needs_sm90()
    }

    /// The family `Gemm32::gemm` runs for `shape` on a GPU of `multiprocessors` SMs, with
    /// `clusters` (sm_90) or without: on sm_90, M or N at most 64 takes
    /// [`Gemm32Family::SkinnySm90`]; fewer 128x128 tiles of C than SMs take
    /// [`Gemm32Family::FewTilesSm90`] ([`Gemm32Family::FewTiles`] without clusters); the rest
    /// [`Gemm32Family::Wide`].
    pub fn for_shape(shape: GemmShape, multiprocessors: u32, clusters: bool) -> Gemm32Family {
        let GemmShape { m, n, .. } = shape;
        let tiles = m.div_ceil(128) as u64 * n.div_ceil(128) as u64;
        if clusters && m.min(n) <= 64 {
            Gemm32Family::SkinnySm90
        } else if tiles < multiprocessors as u64 {
            if clusters {
                Gemm32Family::FewTilesSm90
            } else {
                Gemm32Family::FewTiles
            }
        } else {
            Gemm32Family::Wide
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
pub struct Gemm32 {
    /// By [`Gemm32Family::ALL`]'s order; `None` for a family this GPU cannot run.
    loaded: [Option<Loaded>; 4],
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
        let mut loaded = [None, None, None, None];
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
    /// 16-byte copies where K and N are multiples of 4, 4-byte copies otherwise.
    pub fn gemm(
        &self,
        gpu: &Gpu,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
        shape: GemmShape,
    ) -> Result<(), GemmError> {
        crate::gemm_call::check_sizes(shape, MAX_DIM, [a.len(), b.len(), c.len()], "FP32")?;
        let family = Gemm32Family::for_shape(shape, self.multiprocessors, self.clusters);
        let kernel = family.kernel();
        let loaded = self.loaded[family as usize]
            .as_ref()
            .expect("load loads every family for_shape picks on this GPU");
        let GemmShape { m, n, k } = shape;
        let config = check_launch(kernel, shape, self.max_shared_bytes)?;
        let entry = if n.is_multiple_of(4) && k.is_multiple_of(4) {
            &loaded.aligned
        } else {
            &loaded.any
        };
        // SAFETY: the kernels take (a, b, c, m, n, k), A m x k, B k x n, C m x n floats, which
        // the buffers hold (checked), 16-byte aligned (driver allocations); the 16-byte entry
        // point only for K and N multiples of 4; 1 <= m, n, k <= MAX_DIM; the family's grid,
        // threads, shared memory and cluster: its launch contract.
        unsafe { entry.launch(gpu, config, (a, b, c, m, n, k))? };
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
        return Err(GemmError::Shape(format!(
            "M = {} needs {} rows of {}-row tiles; a grid holds at most 65535",
            shape.m,
            grid.1,
            kernel.tile.bm()
        )));
    }
    let shared_bytes = kernel.shared_bytes();
    if shared_bytes > max_shared_bytes {
        return Err(GemmError::Shape(format!(
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
        assert_eq!(pick(shape(4096, 4096, 4096), true), Wide);
        assert_eq!(pick(shape(2048, 2048, 2048), true), Wide);
        assert_eq!(pick(shape(1024, 1024, 1024), true), FewTilesSm90);
        assert_eq!(pick(shape(1000, 1000, 1000), true), FewTilesSm90);
        assert_eq!(pick(shape(8192, 64, 8192), true), SkinnySm90);
        assert_eq!(pick(shape(64, 8192, 8192), true), SkinnySm90);
        assert_eq!(pick(shape(1, 8192, 8192), true), SkinnySm90);
        // Without clusters: no split K.
        assert_eq!(pick(shape(1024, 1024, 1024), false), FewTiles);
        assert_eq!(pick(shape(8192, 64, 8192), false), FewTiles);
        assert_eq!(pick(shape(4096, 4096, 4096), false), Wide);
        // Every family has both pointer entry points (what `load` relies on), and needs
        // sm_90 exactly when `for_shape` gives it only with clusters.
        for family in Gemm32Family::ALL {
            let k = family.kernel();
            assert!(
                matches!(k.entry_aligned, GemmEntry::Pointers(_)),
                "{family:?}"
            );
            assert!(k.entry_any.is_some(), "{family:?}");
            let sm90 = matches!(family, FewTilesSm90 | SkinnySm90);
            assert_eq!(family.needs_sm90(), sm90, "{family:?}");
        }
    }

    #[test]
    fn shapes_buffers_and_grids_are_checked_with_clear_errors() {
        let sizes = |s: GemmShape, len: [usize; 3]| {
            crate::gemm_call::check_sizes(s, MAX_DIM, len, "FP32").map_err(|e| e.to_string())
        };
        assert!(sizes(shape(3, 5, 7), [21, 35, 15]).is_ok());
        assert!(
            sizes(shape(0, 5, 7), [0, 35, 0])
                .unwrap_err()
                .contains("at least 1")
        );
        assert!(
            sizes(shape(3, 5, 7), [20, 35, 15])
                .unwrap_err()
                .contains("A holds 20 FP32")
        );
        assert!(
            sizes(shape(3, 5, 7), [21, 34, 15])
                .unwrap_err()
                .contains("B holds 34")
        );
        assert!(
            sizes(shape(3, 5, 7), [21, 35, 14])
                .unwrap_err()
                .contains("C holds 14")
        );
        let huge = shape(MAX_DIM + 1, 8, 8);
        assert!(
            sizes(huge, [usize::MAX; 3])
                .unwrap_err()
                .contains("at most")
        );
        let wide = Gemm32Family::Wide.kernel();
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
        let split = Gemm32Family::FewTilesSm90.kernel();
        let ok = check_launch(split, shape(1024, 1024, 8), 227 * 1024).unwrap();
        assert_eq!((ok.grid, ok.cluster), ((16, 8), [2, 1, 1]));
    }
}
