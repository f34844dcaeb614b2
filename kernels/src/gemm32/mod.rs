//! The FP32 GEMM: `C = A B` in `f32`, row-major, any `M, N, K >= 1`, on the library's copies
//! and pipelines (CUDA cores; any GPU from sm_80, the split-K and tensor-copy families sm_90),
//! every completion style as its own family ([`GEMM_KERNELS`]), and [`Gemm32`], the host API
//! that picks one per shape.
//!
//! A block computes a `bm x bn` tile of C ([`GemmTile`]) walking K in steps of [`BK`]: each
//! step's B tile (`BK x bn`) goes to a shared-memory stage with `memcpy_async_tile` (16-byte
//! `cp.async.cg` copies, or 4-byte ones when K or N is not a multiple of 4) and its A tile
//! (`bm x BK`) k-major with `memcpy_async_tile_transposed` ([`ALayout`]); tiles hanging over
//! the matrix edge are zero-filled by the copies. Every thread multiplies its
//! `thread_m x thread_n` fragment with `LDS.128` reads and FFMAs, each k's operands loaded
//! while the previous k multiplies, across k-tiles too. The styles ([`GemmStyle`]) differ only
//! in how the stages are filled and awaited (the tensor-copy style, whose boxes keep A
//! m-major, multiplies four k per load instead).
//!
//! Kernel parameters: `(a, b, c, m, n, k)`; `a` is `m x k`, `b` is `k x n`, `c` is `m x n`
//! (the tensor-copy style, sm_90: tensor maps of A and B in place of `a` and `b`).
//! Grid: [`GemmKernel::grid`], blocks of [`GemmKernel::threads`], dynamic shared memory
//! [`GemmKernel::layout`].

mod shapes;
pub use shapes::*;

#[cfg(target_arch = "nvptx64")]
mod kernels;

/// The host API: [`Gemm32`].
#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

/// Looks a GEMM kernel family up by name.
pub fn find(name: &str) -> Option<&'static GemmKernel> {
    GEMM_KERNELS.iter().find(|k| k.name == name)
}

/// A line of [`GEMM_KERNELS`] ([`gpu::kernel_table!`]), named fields — `style:` and its
/// `params:` ([`GemmStyle`]), `tile:` (`(WM x WN warps of TM x TN)`: [`GemmTile`]) and `body:`
/// (the kernel body in `kernels`): `@entry` declares the family's entry points
/// ([`gemm_entry_points!`]: a module of them per family, in [`entry_points`]), `@row` is its
/// [`GemmKernel`].
macro_rules! gemm32_row {
    (@entry $name:ident {
        style: $style:ident,
        params: { $($param:ident : $value:literal),* },
        tile: ($wm:literal x $wn:literal warps of $tm:literal x $tn:literal),
        body: $body:ident
    }) => {
        gemm_entry_points!($style $name { $($param: $value),* } ($tm, $tn, $wm, $wn) $body);
    };
    (@row $name:ident {
        style: $style:ident,
        params: { $($param:ident : $value:literal),* },
        tile: ($wm:literal x $wn:literal warps of $tm:literal x $tn:literal),
        body: $body:ident
    }) => {
        GemmKernel {
            name: stringify!($name),
            style: GemmStyle::$style { $($param: $value),* },
            tile: GemmTile { warps_m: $wm, warps_n: $wn, thread_m: $tm, thread_n: $tn },
            entry_aligned: gemm_entry_points!(@aligned $style $name),
            entry_any: gemm_entry_points!(@any $style $name),
        }
    };
}

/// A family's entry points, each declared with [`gpu::kernel!`] and calling its style's body
/// with the tile, the style's parameters in table order (and, for the copy styles, the copy
/// size) as const generics: `NAME::aligned` (exported `NAME_a16`: 16-byte copies) and
/// `NAME::any` (`NAME_a4`: 4-byte copies), each choosing per block the body with `INTERIOR`
/// true or false (`@body`), or for tensor copies (sm_90) `NAME::entry` (exported `NAME`), which
/// takes tensor maps. `@aligned` / `@any` name a family's [`GemmEntry`] and 4-byte entry point.
macro_rules! gemm_entry_points {
    (@aligned Tma $family:ident) => { GemmEntry::TensorMaps($family::entry) };
    (@aligned TmaB $family:ident) => { GemmEntry::TensorMapB($family::entry) };
    (@aligned $style:ident $family:ident) => { GemmEntry::Pointers($family::aligned) };
    (@any Tma $family:ident) => { None };
    (@any TmaB $family:ident) => { None };
    (@any $style:ident $family:ident) => { Some($family::any) };
    (@threads $style:ident { $($param:ident : $value:literal),* } ($tm:literal, $tn:literal, $wm:literal, $wn:literal)) => {
        crate::gemm32::block_threads(
            crate::gemm32::GemmStyle::$style { $($param: $value),* },
            crate::gemm32::GemmTile {
                warps_m: $wm, warps_n: $wn, thread_m: $tm, thread_n: $tn,
            },
        )
    };
    (@body $body:ident ($tm:literal, $tn:literal, $wm:literal, $wn:literal) [$($value:literal),*]
        $align:literal ($a:ident, $b:ident, $c:ident, $m:ident, $n:ident, $k:ident)) => {{
        use crate::gemm32::kernels::{block_is_interior, $body as body};
        // SAFETY (caller's): the launch contract; INTERIOR only for an interior block.
        if block_is_interior::<$tm, $tn, $wm, $wn>($m, $n, $k) {
            body::<$tm, $tn, $wm, $wn, $($value,)* $align, true>($a, $b, $c, $m, $n, $k)
        } else {
            body::<$tm, $tn, $wm, $wn, $($value,)* $align, false>($a, $b, $c, $m, $n, $k)
        }
    }};
    (@copies $name:ident :: $entry:ident, $suffix:literal, $align:literal, $body:ident
        ($tm:literal, $tn:literal, $wm:literal, $wn:literal) [$($value:literal),*], $doc:literal) => {
        gpu::kernel! {
            #[doc = $doc]
            ///
            /// # Safety
            /// The GEMM launch contract (module docs) and the conditions above; see
            /// [`GEMM_KERNELS`](crate::gemm32::GEMM_KERNELS).
            pub fn $entry(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32)
                [export = concat!(stringify!($name), $suffix)]
                [max_threads = THREADS]
            {
                // SAFETY: forwarded launch contract.
                unsafe {
                    gemm_entry_points!(
                        @body $body ($tm, $tn, $wm, $wn) [$($value),*] $align (a, b, c, m, n, k)
                    )
                }
            }
        }
    };
    (Tma $name:ident { $($param:ident : $value:literal),* } ($tm:literal, $tn:literal, $wm:literal, $wn:literal) $body:ident) => {
        #[allow(non_snake_case)]
        #[doc = concat!("The entry points of the family `", stringify!($name), "`.")]
        pub mod $name {
            use gpu::tensor_map::TensorMap;
            #[cfg_attr(
                not(all(target_arch = "nvptx64", target_feature = "sm_90")),
                allow(dead_code)
            )]
            const THREADS: u32 = gemm_entry_points!(
                @threads Tma { $($param: $value),* } ($tm, $tn, $wm, $wn)
            );

            gpu::kernel! {
                /// GEMM kernel, tensor copies (see [`GEMM_KERNELS`]
                /// (crate::gemm32::GEMM_KERNELS)).
                ///
                /// # Safety
                /// The GEMM launch contract (module docs) with `k % 4 == 0` and `n % 4 == 0`,
                /// and `a`, `b` tensor maps of A (`k x m`, innermost first) and B (`n x k`)
                /// with the family's `a_box` / `b_box`, zero fill, no swizzle.
                pub fn entry(a: TensorMap, b: TensorMap, c: *mut f32, m: u32, n: u32, k: u32)
                    [export = stringify!($name)]
                    [max_threads = THREADS]
                    [device if target_feature = "sm_90"]
                {
                    let a = gpu::tensor_map_param!(entry, 0, a);
                    let b = gpu::tensor_map_param!(entry, 1, b);
                    // SAFETY: forwarded launch contract.
                    unsafe {
                        crate::gemm32::kernels::$body::<$tm, $tn, $wm, $wn, $($value,)*>(
                            a, b, c, m, n, k,
                        )
                    }
                }
            }
        }
    };
    (TmaB $name:ident { $($param:ident : $value:literal),* } ($tm:literal, $tn:literal, $wm:literal, $wn:literal) $body:ident) => {
        #[allow(non_snake_case)]
        #[doc = concat!("The entry points of the family `", stringify!($name), "`.")]
        pub mod $name {
            use gpu::tensor_map::TensorMap;
            #[cfg_attr(
                not(all(target_arch = "nvptx64", target_feature = "sm_90")),
                allow(dead_code)
            )]
            const THREADS: u32 = gemm_entry_points!(
                @threads TmaB { $($param: $value),* } ($tm, $tn, $wm, $wn)
            );

            gpu::kernel! {
                /// GEMM kernel, B by tensor copies (see [`GEMM_KERNELS`]
                /// (crate::gemm32::GEMM_KERNELS)).
                ///
                /// # Safety
                /// The GEMM launch contract (module docs) with `n % 4 == 0`, and `b` a tensor
                /// map of B (`n x k`, innermost first) with the family's `b_box`, zero fill, no
                /// swizzle.
                pub fn entry(a: *const f32, b: TensorMap, c: *mut f32, m: u32, n: u32, k: u32)
                    [export = stringify!($name)]
                    [max_threads = THREADS]
                    [device if target_feature = "sm_90"]
                {
                    use crate::gemm32::kernels::{block_is_interior, $body as body};
                    let b = gpu::tensor_map_param!(entry, 1, b);
                    // SAFETY: forwarded launch contract; INTERIOR only for an interior block.
                    unsafe {
                        if block_is_interior::<$tm, $tn, $wm, $wn>(m, n, k) {
                            body::<$tm, $tn, $wm, $wn, $($value,)* true>(a, b, c, m, n, k)
                        } else {
                            body::<$tm, $tn, $wm, $wn, $($value,)* false>(a, b, c, m, n, k)
                        }
                    }
                }
            }
        }
    };
    (@split_copies $name:ident :: $entry:ident, $suffix:literal, $align:literal, $body:ident
        ($tm:literal, $tn:literal, $wm:literal, $wn:literal) [$stages:literal, $split:literal, $groups:literal], $doc:literal) => {
        gpu::kernel! {
            #[doc = $doc]
            ///
            /// # Safety
            /// The GEMM launch contract (module docs) and the conditions above, in clusters of
            /// the family's split along x; see [`GEMM_KERNELS`](crate::gemm32::GEMM_KERNELS).
            pub fn $entry(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32)
                [export = concat!(stringify!($name), $suffix)]
                [max_threads = THREADS]
                [device if target_feature = "sm_90"]
            {
                use crate::gemm32::kernels::{split_block_is_interior, $body as body};
                // SAFETY: forwarded launch contract; INTERIOR only for an interior block.
                unsafe {
                    if split_block_is_interior::<$tm, $tn, $wm, $wn, $split>(m, n, k) {
                        body::<$tm, $tn, $wm, $wn, $stages, $split, $groups, $align, true>(a, b, c, m, n, k)
                    } else {
                        body::<$tm, $tn, $wm, $wn, $stages, $split, $groups, $align, false>(a, b, c, m, n, k)
                    }
                }
            }
        }
    };
    (SplitK $name:ident { stages: $stages:literal, split: $split:literal, k_groups: $groups:literal } ($tm:literal, $tn:literal, $wm:literal, $wn:literal) $body:ident) => {
        #[allow(non_snake_case)]
        #[doc = concat!("The entry points of the family `", stringify!($name), "`.")]
        pub mod $name {
            #[cfg_attr(
                not(all(target_arch = "nvptx64", target_feature = "sm_90")),
                allow(dead_code)
            )]
            const THREADS: u32 = gemm_entry_points!(
                @threads SplitK { stages: $stages, split: $split, k_groups: $groups } ($tm, $tn, $wm, $wn)
            );

            gemm_entry_points!(@split_copies $name::aligned, "_a16", 16, $body ($tm, $tn, $wm, $wn) [$stages, $split, $groups],
                "GEMM kernel, split K, 16-byte copies: `k % 4 == 0` and `n % 4 == 0`, every buffer 16-byte aligned.");
            gemm_entry_points!(@split_copies $name::any, "_a4", 4, $body ($tm, $tn, $wm, $wn) [$stages, $split, $groups],
                "GEMM kernel, split K, 4-byte copies: any size.");
        }
    };
    ($style:ident $name:ident { $($param:ident : $value:literal),* } ($tm:literal, $tn:literal, $wm:literal, $wn:literal) $body:ident) => {
        #[allow(non_snake_case)]
        #[doc = concat!("The entry points of the family `", stringify!($name), "`.")]
        pub mod $name {
            #[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
            const THREADS: u32 = gemm_entry_points!(
                @threads $style { $($param: $value),* } ($tm, $tn, $wm, $wn)
            );

            gemm_entry_points!(@copies $name::aligned, "_a16", 16, $body ($tm, $tn, $wm, $wn) [$($value),*],
                "GEMM kernel, 16-byte copies: `k % 4 == 0` and `n % 4 == 0`, every buffer 16-byte aligned.");
            gemm_entry_points!(@copies $name::any, "_a4", 4, $body ($tm, $tn, $wm, $wn) [$($value),*],
                "GEMM kernel, 4-byte copies: any size.");
        }
    };
}

// Four tiles:
// - 128x128 cut into 4 warps of 64x64 (16x8 outputs per thread, 255 registers): two blocks
//   fit an SM, so one block's barrier leaves the other running. The fastest on an H200, so
//   every style and depth is built at this tile (no suffix).
// - 128x256 cut into 8 warps of 64x64 (`_128x256`): CUTLASS's best SIMT tile, one block per SM.
// - 128x128 cut into 8 warps of 32x64 (`_8w`, 8x8 outputs per thread): the tile warp
//   specialization needs. On sm_90 the register file is split among the four SM
//   sub-partitions, so a block of 8 compute warps and 1 producer warp puts 3 warps on some
//   sub-partition and ptxas caps every thread at 168 registers; 64x64 warp tiles need 255
//   (the 128x256 tile with one producer warp: 168 registers and 292 bytes of spills).
//   `setmaxnreg`, which would hand the producers' registers to the compute warps, needs sm_90a.
// - 64x64 (`_64x64`, 4 warps of 32x32): small and skinny problems, where bigger tiles leave SMs
//   idle.
// Split K (sm_90), for problems only a few tiles wide (8192x64, 64x8192, 1024^3): the
// 128x128 tile's 16x8 outputs per thread, with K split over a cluster of blocks, over groups
// of a block's warps (a block of 8 warps, all 255 registers, one per SM: two warps per
// scheduler with no block barrier in the mainloop), or both. `_2`: the 128x128 tile in
// clusters of 2 (4 warps); `_2x2`: the same with two k groups of 4 warps; `_1x8_64x64`: 64x64
// tiles of one warp, 8 k groups, no cluster (N = 64 or M = 64 in one tile, 128 blocks for
// 132 SMs); `_2x4_64x128`: 64x128 tiles of two warps, 4 k groups, clusters of 2. Smaller
// thread tiles (8x4, 8x8: 64x64 and 128x64 blocks in clusters of 2 to 8), one-warp-per-block
// splits, and the 128x64 mirror of `_2x4_64x128` were built, verified and timed, and lost to
// these at every size (results.md): not built. `_{2,4,8}x8_64x64`: `_1x8_64x64` in clusters
// of 2, 4 and 8, for few tiles and a long K (256x256x16384: 16 tiles).
/// The entry points of every family, one module per family, and the table that lists them.
pub mod entry_points {
    use super::*;

    gpu::kernel_table! {
        /// Every GEMM kernel family (a `static`: one address per entry).
        pub static GEMM_KERNELS: [GemmKernel] by gemm32_row;
        gemm_sync { style: Sync, params: {}, tile: (2 x 2 warps of 16 x 8), body: sync }
        gemm_thread_pipeline_2 { style: ThreadPipeline, params: { stages: 2 }, tile: (2 x 2 warps of 16 x 8), body: thread_pipeline }
        gemm_thread_pipeline_3 { style: ThreadPipeline, params: { stages: 3 }, tile: (2 x 2 warps of 16 x 8), body: thread_pipeline }
        gemm_thread_pipeline_4 { style: ThreadPipeline, params: { stages: 4 }, tile: (2 x 2 warps of 16 x 8), body: thread_pipeline }
        gemm_thread_pipeline_5 { style: ThreadPipeline, params: { stages: 5 }, tile: (2 x 2 warps of 16 x 8), body: thread_pipeline }
        gemm_block_pipeline_2 { style: BlockPipeline, params: { stages: 2 }, tile: (2 x 2 warps of 16 x 8), body: block_pipeline }
        gemm_block_pipeline_3 { style: BlockPipeline, params: { stages: 3 }, tile: (2 x 2 warps of 16 x 8), body: block_pipeline }
        gemm_block_pipeline_4 { style: BlockPipeline, params: { stages: 4 }, tile: (2 x 2 warps of 16 x 8), body: block_pipeline }
        gemm_block_pipeline_5 { style: BlockPipeline, params: { stages: 5 }, tile: (2 x 2 warps of 16 x 8), body: block_pipeline }
        gemm_sync_128x256 { style: Sync, params: {}, tile: (2 x 4 warps of 16 x 8), body: sync }
        gemm_thread_pipeline_4_128x256 { style: ThreadPipeline, params: { stages: 4 }, tile: (2 x 4 warps of 16 x 8), body: thread_pipeline }
        gemm_block_pipeline_4_128x256 { style: BlockPipeline, params: { stages: 4 }, tile: (2 x 4 warps of 16 x 8), body: block_pipeline }
        gemm_sync_8w { style: Sync, params: {}, tile: (4 x 2 warps of 8 x 8), body: sync }
        gemm_thread_pipeline_4_8w { style: ThreadPipeline, params: { stages: 4 }, tile: (4 x 2 warps of 8 x 8), body: thread_pipeline }
        gemm_block_pipeline_4_8w { style: BlockPipeline, params: { stages: 4 }, tile: (4 x 2 warps of 8 x 8), body: block_pipeline }
        gemm_warp_specialized_3_1p { style: WarpSpecialized, params: { stages: 3, producer_warps: 1 }, tile: (4 x 2 warps of 8 x 8), body: warp_specialized }
        gemm_warp_specialized_4_1p { style: WarpSpecialized, params: { stages: 4, producer_warps: 1 }, tile: (4 x 2 warps of 8 x 8), body: warp_specialized }
        gemm_warp_specialized_5_1p { style: WarpSpecialized, params: { stages: 5, producer_warps: 1 }, tile: (4 x 2 warps of 8 x 8), body: warp_specialized }
        gemm_warp_specialized_4_2p { style: WarpSpecialized, params: { stages: 4, producer_warps: 2 }, tile: (4 x 2 warps of 8 x 8), body: warp_specialized }
        gemm_thread_pipeline_4_64x64 { style: ThreadPipeline, params: { stages: 4 }, tile: (2 x 2 warps of 8 x 4), body: thread_pipeline }
        gemm_tma_2 { style: Tma, params: { stages: 2 }, tile: (2 x 2 warps of 16 x 8), body: tma }
        gemm_tma_3 { style: Tma, params: { stages: 3 }, tile: (2 x 2 warps of 16 x 8), body: tma }
        gemm_tma_4 { style: Tma, params: { stages: 4 }, tile: (2 x 2 warps of 16 x 8), body: tma }
        gemm_tma_b_3 { style: TmaB, params: { stages: 3 }, tile: (2 x 2 warps of 16 x 8), body: tma_b }
        gemm_tma_b_4 { style: TmaB, params: { stages: 4 }, tile: (2 x 2 warps of 16 x 8), body: tma_b }
        gemm_split_k_2 { style: SplitK, params: { stages: 4, split: 2, k_groups: 1 }, tile: (2 x 2 warps of 16 x 8), body: split_k }
        gemm_split_k_2x2 { style: SplitK, params: { stages: 4, split: 2, k_groups: 2 }, tile: (2 x 2 warps of 16 x 8), body: split_k }
        gemm_split_k_1x8_64x64 { style: SplitK, params: { stages: 4, split: 1, k_groups: 8 }, tile: (1 x 1 warps of 16 x 8), body: split_k }
        gemm_split_k_2x4_64x128 { style: SplitK, params: { stages: 4, split: 2, k_groups: 4 }, tile: (1 x 2 warps of 16 x 8), body: split_k }
        gemm_split_k_2x8_64x64 { style: SplitK, params: { stages: 4, split: 2, k_groups: 8 }, tile: (1 x 1 warps of 16 x 8), body: split_k }
        gemm_split_k_4x8_64x64 { style: SplitK, params: { stages: 4, split: 4, k_groups: 8 }, tile: (1 x 1 warps of 16 x 8), body: split_k }
        gemm_split_k_8x8_64x64 { style: SplitK, params: { stages: 4, split: 8, k_groups: 8 }, tile: (1 x 1 warps of 16 x 8), body: split_k }
    }
}
pub use entry_points::GEMM_KERNELS;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_and_layouts() {
        let k = find("gemm_thread_pipeline_4").unwrap();
        assert_eq!((k.tile.bm(), k.tile.bn(), k.threads()), (128, 128, 128));
        assert_eq!(
            k.tile.stage_bytes(ALayout::MMajor),
            128 * 8 * 4 + 8 * 128 * 4
        );
        // A k-major: 8 rows of 128 + 4 floats, then B's 8 rows of 128.
        let stage = (128 + A_K_MAJOR_PAD) * 8 * 4 + 8 * 128 * 4;
        assert_eq!(k.tile.stage_bytes(ALayout::KMajor), stage);
        assert_eq!(k.layout().bytes, 4 * stage);
        let wide = find("gemm_thread_pipeline_4_128x256").unwrap();
        assert_eq!(
            (wide.tile.bm(), wide.tile.bn(), wide.threads()),
            (128, 256, 256)
        );
        let ws = find("gemm_warp_specialized_4_2p").unwrap();
        assert_eq!(ws.threads(), 320);
        assert_eq!(ws.layout().bytes, 4 * stage + 4 * 16);
        let small = find("gemm_thread_pipeline_4_64x64").unwrap();
        assert_eq!(
            (small.tile.bm(), small.tile.bn(), small.threads()),
            (64, 64, 128)
        );
        assert_eq!(wide.grid(4095, 4097), (17, 32));
        let entry = |k: &GemmKernel, n, kk| k.entry_for(n, kk).map(|e| e.name());
        assert_eq!(entry(k, 4096, 4096), Some("gemm_thread_pipeline_4_a16"));
        assert_eq!(entry(k, 4097, 4096), Some("gemm_thread_pipeline_4_a4"));
        assert_eq!(entry(k, 4096, 1023), Some("gemm_thread_pipeline_4_a4"));
        let tma = find("gemm_tma_3").unwrap();
        assert_eq!(entry(tma, 4096, 4096), Some("gemm_tma_3"));
        assert!(matches!(
            tma.entry_for(4096, 4096),
            Some(GemmEntry::TensorMaps(_))
        ));
        assert_eq!(entry(tma, 4096, 1023), None);
        let tma_b = find("gemm_tma_b_3").unwrap();
        assert!(matches!(
            tma_b.entry_for(4096, 4096),
            Some(GemmEntry::TensorMapB(_))
        ));
        assert_eq!((tma.a_box(), tma.b_box()), ((8, 128), (128, 8)));
        assert_eq!(tma.layout().bytes, 3 * 8192 + 3 * 16);
    }

    #[test]
    fn every_kernel_fits_a_block() {
        for k in GEMM_KERNELS {
            assert!(k.threads() <= 1024, "{}", k.name);
            assert!(k.shared_bytes() <= 227 * 1024, "{}", k.name);
            assert_eq!(k.tile.thread_n % 4, 0, "{}", k.name);
        }
    }
}
