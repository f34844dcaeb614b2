//! The host API of the 16-bit GEMM: [`Gemm16`] loads this crate's module for an open GPU and
//! multiplies the caller's buffers, shapes and layouts checked first (a clear
//! [`GemmError`], never a launch that reads or writes past a buffer).

use super::{
    BKnTile, BLayout, CBox, GemmParams, GemmStoreParams, Geometry, bf16_gemm_ws_cooperative,
    bf16_gemm_ws_cooperative_b_kn, bf16_gemm_ws_cooperative_b_kn_direct,
    bf16_gemm_ws_cooperative_direct, bf16_gemm_ws_pingpong, bf16_gemm_ws_pingpong_b_kn,
    bf16_gemm_ws_pingpong_b_kn_direct, bf16_gemm_ws_pingpong_direct, f16_gemm_ws_cooperative,
    f16_gemm_ws_cooperative_direct, f16_gemm_ws_pingpong, f16_gemm_ws_pingpong_direct,
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

/// How the two consumer warpgroups of a [`Gemm16`] block share the work: the kernel it runs.
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
pub struct Kernels<E: Gemm16Element> {
    nk: [EntryPair<E>; 2],
    kn: Option<[EntryPair<E>; 2]>,
}

/// The 16-bit GEMM of this crate, loaded for one GPU: a producer warpgroup issuing tensor
/// copies and two consumer warpgroups with one `wgmma` k-tile in flight, persistent blocks,
/// on 128 x 256 tiles shared by both (`ws_cooperative`) or 128 x 128 tiles each
/// (`ws_pingpong`), whichever a cost model says is faster for the shape
/// ([`Gemm16Schedule::for_shape`]). Needs compute capability 9.0 (sm_90a).
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
    ///
    /// Fastest with `k` a multiple of 16: rows of A and B that start mid-sector (not a
    /// multiple of 32 bytes) cost the tensor copies 1.76x the L2 sectors (H200: 3072 x 3072 x
    /// 3008 runs 18% faster than 3072 x 3072 x 3000); padding K with zeros to a multiple of 16 gives
    /// the same product faster.
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
        let schedules = match b_layout {
            BLayout::NK => &kernels.nk,
            BLayout::KN => kernels.kn.as_ref().ok_or_else(|| {
                GemmError::Shape(format!(
                    "{} with B k x n is not built: store B n x k",
                    E::NAME
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
            return Err(GemmError::Shape(format!(
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
