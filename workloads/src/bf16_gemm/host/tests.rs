//! The BF16 GEMM's host-side tests (of [`super`]).

use super::*;

#[test]
fn exact_inputs_keep_every_result_exact_in_bf16() {
    let size = Mnk {
        m: 37,
        n: 5,
        k: 1023,
    };
    let (a, b) = generate_inputs(size, Values::SmallIntegers, 7);
    let k = size.k as usize;
    for row in 0..size.m as usize {
        let nonzeros = a[row * k..(row + 1) * k]
            .iter()
            .filter(|&&x| x != 0)
            .count();
        assert!(nonzeros <= 4, "row {row}: {nonzeros}");
        for col in 0..size.n as usize {
            let sum: f64 = (0..k)
                .map(|i| {
                    Bf16(a[row * k + i]).to_f32() as f64 * Bf16(b[col * k + i]).to_f32() as f64
                })
                .sum();
            assert!(sum.abs() <= 256.0 && sum.fract() == 0.0);
            assert_eq!(Bf16::from_f32(sum as f32).to_f32() as f64, sum);
        }
    }
}

#[test]
fn every_geometry_fits_a_block_and_keeps_its_regions_apart() {
    use super::super::{BTile, C_STAGING_BYTES, Geometry};
    const MAX_DYNAMIC_SHARED: u32 = 227 * 1024;
    for g in [Geometry::SHARED_TILE, Geometry::TILE_PER_WARPGROUP] {
        let layout = g.layout();
        assert!(
            layout.bytes <= MAX_DYNAMIC_SHARED,
            "{g:?}: {}",
            layout.bytes
        );
        // Stages 1 KiB aligned (128-byte swizzle), then the pipeline's mbarriers, then the
        // order's two, then the staging at a 1 KiB boundary, to the end.
        let stage_bytes = g.a_tile_bytes() + BTile::BYTES;
        assert_eq!(stage_bytes % 1024, 0);
        assert_eq!(layout.stage_offset(1), stage_bytes);
        assert_eq!(layout.barriers_offset, g.stages * stage_bytes);
        assert_eq!(g.order_offset(), layout.barriers_offset + 16 * g.stages);
        assert!(g.staging_offset() >= g.order_offset() + 16);
        assert_eq!(g.staging_offset() % 1024, 0);
        assert_eq!(layout.bytes, g.staging_offset() + C_STAGING_BYTES);
        assert_eq!(g.a_box(), [64, g.tile_m]);
    }
    assert_eq!(Geometry::SHARED_TILE.tiles(4096, 4097), (32, 17));
    assert_eq!(Geometry::TILE_PER_WARPGROUP.tiles(65, 1), (2, 1));
}

#[test]
fn cluster_families_slice_the_tiles_they_share() {
    use super::super::{ASource, BTile, Bf16Style, Geometry, TileCluster};
    let g = Geometry::SHARED_TILE;
    // One block: the slices are the whole tiles, the boxes the tile types'.
    assert_eq!(TileCluster::NONE.a_box(g), g.a_box());
    assert_eq!(TileCluster::NONE.b_box(), BTile::BOX);
    let (two_by_one, one_by_two) = (TileCluster { m: 2, n: 1 }, TileCluster { m: 1, n: 2 });
    assert_eq!(two_by_one.b_box(), [64, 128]);
    assert_eq!(two_by_one.a_box(g), [64, 128]);
    assert_eq!(one_by_two.a_box(g), [64, 64]);
    assert_eq!(one_by_two.b_box(), [64, 256]);
    // 4096^2: 32 x 16 tiles, 256 patches of two; 300 x 8: 3 x 1 tiles, 2 patches of 2 x 1
    // (the second half past C), 3 of 1 x 2 (each half past C).
    assert_eq!(two_by_one.cluster_tiles(g, 4096, 4096), 256);
    assert_eq!(two_by_one.cluster_tiles(g, 300, 8), 2);
    assert_eq!(one_by_two.cluster_tiles(g, 300, 8), 3);
    let mut clustered = 0;
    for kernel in BF16_KERNELS {
        if kernel.cluster == TileCluster::NONE {
            continue;
        }
        clustered += 1;
        // What the kernels' const checks allow: the cooperative style, B n x k, A from
        // shared memory, tensor maps; the entry points declare the cluster the host sizes
        // the grid by.
        assert_eq!(kernel.style, Bf16Style::WsCooperative, "{}", kernel.name);
        assert_eq!(kernel.b_layout, BLayout::NK, "{}", kernel.name);
        assert_eq!(kernel.a_source, ASource::SharedMemory, "{}", kernel.name);
        let Bf16Entries::TensorMaps {
            tensor_store,
            direct,
        } = &kernel.entries
        else {
            panic!("{}: a clustered family takes tensor maps", kernel.name);
        };
        for entry in [tensor_store.cluster(), direct.cluster()] {
            assert_eq!(
                entry,
                Some([kernel.cluster.blocks(), 1, 1]),
                "{}",
                kernel.name
            );
        }
    }
    assert_eq!(clustered, 2);
}

#[test]
fn sizes_and_the_baseline() {
    assert_eq!(harness::experiment::baseline_of(&Bf16Gemm), CUBLAS);
    assert_eq!(Bf16Experiment::CublasLt.role(), Role::Baseline);
    assert!(
        Bf16Gemm
            .parse_size("65536x65536x1")
            .unwrap_err()
            .contains("2^31")
    );
    assert!(Bf16Gemm.parse_size("0").is_err());
    assert_eq!(Bf16Gemm.parse_size("4095x4097x1023").unwrap().k, 1023);
    // A, B, B (k x n), then padded copies where rows are not multiples of 8 (A and B for
    // K, B (k x n) for N), C and its widening and reference, cuBLASLt's workspace.
    let workspace = gpu_runtime::blaslt::WORKSPACE_BYTES as u64;
    assert_eq!(
        device_bytes(Mnk { m: 2, n: 8, k: 8 }),
        2 * (2 + 16) * 8 + 14 * 16 + workspace
    );
    assert_eq!(
        device_bytes(Mnk { m: 2, n: 3, k: 8 }),
        2 * (2 + 6) * 8 + 2 * 8 * 8 + 14 * 6 + workspace
    );
    assert_eq!(
        device_bytes(Mnk { m: 2, n: 3, k: 7 }),
        2 * (2 + 6) * 7 + 2 * 5 * 8 + 2 * 7 * 8 + 14 * 6 + workspace
    );
    for e in Bf16Gemm.experiments().iter().skip(3) {
        assert_eq!(e.archs(), [Arch::Sm90a]);
    }
}
