//! The host API of the 16-bit GEMM: [`Gemm16`] loads this crate's module for an open GPU and
//! multiplies the caller's buffers, shapes and layouts checked first (a clear
//! [`GemmError`], never a launch that reads or writes past a buffer).

use super::{
    BKnTile, BLayout, CBox, GemmParams, GemmStoreParams, Geometry, bf16_gemm_ws_cooperative,
    bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct,
    bf16_gemm_ws_cooperative_direct, f16_gemm_ws_cooperative, f16_gemm_ws_cooperative_direct,
};
use gpu::wgmma::{Bf16, F16, SixteenBit, WARPGROUP_THREADS};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::tensor_map::{ElementType, Swizzle, TensorMaps};
use gpu_runtime::{DeviceElement, Gpu, Kernel, LaunchConfig, Library};

pub use crate::{GemmError, GemmShape};

/// An element type [`Gemm16`] multiplies: BF16 or FP16, FP32 accumulation.
pub trait Gemm16Element: SixteenBit + DeviceElement<Stored = u16> {
    /// The tensor maps' element type.
    const MAP: ElementType;
    /// Its name in messages.
    const NAME: &'static str;
    /// Its kernels in a loaded [`Gemm16`].
    #[doc(hidden)]
    fn kernels(gemm: &Gemm16) -> &Kernels<Self>;
}

impl Gemm16Element for Bf16 {
    const MAP: ElementType = ElementType::BF16;
    const NAME: &'static str = "BF16";
    fn kernels(gemm: &Gemm16) -> &Kernels<Self> {
        &gemm.bf16
    }
}

impl Gemm16Element for F16 {
    const MAP: ElementType = ElementType::F16;
    const NAME: &'static str = "FP16";
    fn kernels(gemm: &Gemm16) -> &Kernels<Self> {
        &gemm.f16
    }
}

/// One element type's kernels: tensor-store epilogue (N a multiple of 8) and direct store
/// (any N), for each B layout.
#[doc(hidden)]
pub struct Kernels<E: Gemm16Element> {
    nk: (Kernel<GemmStoreParams>, Kernel<GemmParams<E>>),
    kn: Option<(Kernel<GemmStoreParams>, Kernel<GemmParams<E>>)>,
}

/// The 16-bit GEMM of this crate (the `ws_cooperative` kernel: a producer warpgroup issuing
/// tensor copies, two consumer warpgroups on a 128 x 256 tile with one `wgmma` k-tile in
/// flight, persistent blocks), loaded for one GPU. Needs compute capability 9.0 (sm_90a).
pub struct Gemm16 {
    bf16: Kernels<Bf16>,
    f16: Kernels<F16>,
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
        if let Some(why) = crate::sm90a_missing(gpu, "the 16-bit GEMM") {
            return Err(GemmError::Shape(why));
        }
        let info = gpu.info();
        let library = gpu.load_library("gpu-kernels", crate::MODULES)?;
        let bf16 = Kernels {
            nk: (
                library.entry_point(bf16_gemm_ws_cooperative)?,
                library.entry_point(bf16_gemm_ws_cooperative_direct)?,
            ),
            kn: Some((
                library.entry_point(bf16_gemm_ws_cooperative_b_kn)?,
                library.entry_point(bf16_gemm_ws_cooperative_b_kn_direct)?,
            )),
        };
        let f16 = Kernels {
            nk: (
                library.entry_point(f16_gemm_ws_cooperative)?,
                library.entry_point(f16_gemm_ws_cooperative_direct)?,
            ),
            kn: None,
        };
        Ok(Gemm16 {
            bf16,
            f16,
            maps: TensorMaps::default(),
            multiprocessors: info.multiprocessors,
            max_shared_bytes: info.max_shared_bytes_per_block,
            _library: library,
        })
    }

    /// `C = A B^T` or `C = A B` ([`BLayout`]) in BF16, FP32 accumulation: launched on `gpu`'s
    /// stream, not waited for. See [`Gemm16::gemm`].
    pub fn bf16(
        &self,
        gpu: &Gpu,
        a: &CudaSlice<u16>,
        b: &CudaSlice<u16>,
        b_layout: BLayout,
        c: &mut CudaSlice<u16>,
        shape: GemmShape,
    ) -> Result<(), GemmError> {
        self.gemm::<Bf16>(gpu, a, b, b_layout, c, shape)
    }

    /// `C = A B^T` or `C = A B` for elements `E` (BF16 or FP16, as their bits), FP32
    /// accumulation, rounded to nearest-even on the way out; launched on `gpu`'s stream, not
    /// waited for. Checked before anything runs:
    /// - `m, n, k` in `1..2^31`, and each buffer at least as long as its matrix;
    /// - rows of A and B that a tensor map can describe: `k` a multiple of 8 (16-byte rows),
    ///   and for B `k x n` also `n`;
    /// - FP16 with B `k x n` is not built (refused).
    ///
    /// Any `n` otherwise: C's rows need no alignment (the direct-store epilogue writes them
    /// when `n` is not a multiple of 8).
    pub fn gemm<E: Gemm16Element>(
        &self,
        gpu: &Gpu,
        a: &CudaSlice<u16>,
        b: &CudaSlice<u16>,
        b_layout: BLayout,
        c: &mut CudaSlice<u16>,
        shape: GemmShape,
    ) -> Result<(), GemmError> {
        let GemmShape { m, n, k } = shape;
        check_shape::<E>(shape, b_layout, [a.len(), b.len(), c.len()])?;
        let kernels = E::kernels(self);
        let (store, direct) = match b_layout {
            BLayout::NK => &kernels.nk,
            BLayout::KN => kernels.kn.as_ref().ok_or_else(|| {
                GemmError::Shape(format!(
                    "{} with B k x n is not built: store B n x k",
                    E::NAME
                ))
            })?,
        };
        let g = Geometry::SHARED_TILE;
        let bytes = g.shared().bytes;
        if bytes > self.max_shared_bytes {
            return Err(GemmError::Shape(format!(
                "the kernel needs {bytes} B of shared memory per block; the GPU allows {}",
                self.max_shared_bytes
            )));
        }
        let (tiles_m, tiles_n) = g.tiles(m, n);
        let config = LaunchConfig::linear(
            (tiles_m * tiles_n).min(self.multiprocessors),
            3 * WARPGROUP_THREADS,
            bytes,
        );
        let map = |buffer: &CudaSlice<u16>, dims: (u32, u32), [cols, rows]: [u32; 2]| {
            self.maps.matrix(
                E::MAP,
                gpu.address(buffer),
                dims,
                (cols, rows),
                Swizzle::Bytes128,
            )
        };
        let a_map = map(a, (k, m), g.a_box())?;
        let b_map = match b_layout {
            BLayout::NK => map(b, (k, n), g.b_box())?,
            BLayout::KN => map(b, (n, k), BKnTile::BOX)?,
        };
        if n.is_multiple_of(8) {
            let c_map = map(c, (n, m), CBox::BOX)?;
            // SAFETY: the maps describe A (k x m), B (k x n or n x k) and C (n x m) of `E`,
            // inside their buffers (checked), with the tiles' boxes, 128-byte swizzle and
            // zero fill; m, n, k >= 1; a 1-D grid of 384-thread blocks with the geometry's
            // shared memory: the kernels' launch contract.
            unsafe { store.launch(gpu, config, (&a_map, &b_map, &c_map, m, n, k))? };
        } else {
            // SAFETY: as above, C as a pointer to its m * n elements (checked).
            unsafe { direct.launch(gpu, config, (&a_map, &b_map, c, m, n, k))? };
        }
        Ok(())
    }
}

/// The checks of [`Gemm16::gemm`], on the shape and the buffers' lengths `[a, b, c]`.
pub fn check_shape<E: Gemm16Element>(
    shape: GemmShape,
    b_layout: BLayout,
    lengths: [usize; 3],
) -> Result<(), GemmError> {
    let GemmShape { n, k, .. } = shape;
    let bad = |why: String| Err(GemmError::Shape(why));
    crate::gemm_call::check_sizes(shape, MAX_DIM, lengths, E::NAME)?;
    if !k.is_multiple_of(8) {
        return bad(format!(
            "K = {k} is not a multiple of 8: the rows of A and B must be 16-byte multiples for \
             their tensor maps (pad K with zeros)"
        ));
    }
    if b_layout == BLayout::KN && !n.is_multiple_of(8) {
        return bad(format!(
            "N = {n} is not a multiple of 8: with B k x n its rows must be 16-byte multiples \
             (pad N with zeros, or store B n x k)"
        ));
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
    fn shapes_and_buffers_are_checked_with_clear_errors() {
        let ok = |s: GemmShape, l: BLayout, len: [usize; 3]| check_shape::<Bf16>(s, l, len);
        let msg = |r: Result<(), GemmError>| r.unwrap_err().to_string();
        assert!(
            ok(
                shape(128, 256, 64),
                BLayout::NK,
                [128 * 64, 256 * 64, 128 * 256]
            )
            .is_ok()
        );
        // Any N with B n x k; N % 8 needed with B k x n.
        assert!(ok(shape(3, 5, 8), BLayout::NK, [24, 40, 15]).is_ok());
        assert!(msg(ok(shape(3, 5, 8), BLayout::KN, [24, 40, 15])).contains("N = 5"));
        assert!(msg(ok(shape(0, 5, 8), BLayout::NK, [0, 40, 0])).contains("at least 1"));
        assert!(msg(ok(shape(4, 4, 12), BLayout::NK, [48, 48, 16])).contains("K = 12"));
        assert!(msg(ok(shape(4, 4, 8), BLayout::NK, [31, 32, 16])).contains("A holds 31"));
        assert!(msg(ok(shape(4, 4, 8), BLayout::NK, [32, 32, 15])).contains("C holds 15"));
        assert!(
            msg(ok(shape(1 << 31, 8, 8), BLayout::NK, [usize::MAX; 3]))
                .contains("at most 2147483647")
        );
        // FP16's message names FP16.
        assert!(
            check_shape::<F16>(shape(4, 4, 8), BLayout::NK, [32, 31, 16])
                .unwrap_err()
                .to_string()
                .contains("B holds 31 FP16")
        );
    }
}
