//! The BF16 GEMM's host-side tests (of [`super`]).

use super::operands::has_b_kn;
use super::*;

#[test]
fn exact_inputs_keep_every_result_exact_in_either_element() {
    let size = Mnk {
        m: 37,
        n: 5,
        k: 1023,
    };
    for e in ElementType::ALL {
        let (a, b) = generate_inputs(size, Values::SmallIntegers, 7, e);
        let k = size.k as usize;
        for row in 0..size.m as usize {
            let nonzeros = a[row * k..(row + 1) * k]
                .iter()
                .filter(|&&x| x != 0)
                .count();
            assert!(nonzeros <= 4, "{e:?} row {row}: {nonzeros}");
            for col in 0..size.n as usize {
                let sum: f64 = (0..k)
                    .map(|i| e.value(a[row * k + i]) as f64 * e.value(b[col * k + i]) as f64)
                    .sum();
                assert!(sum.abs() <= 256.0 && sum.fract() == 0.0);
                assert_eq!(e.value(e.round(sum as f32)) as f64, sum, "{e:?}");
            }
        }
    }
}

/// The FP16 problem multiplies the values of the BF16 one, each as its type rounds them:
/// integers the same, random values within both roundings (`2^-8` and `2^-11` of their size:
/// 8 and 11 significant bits; or FP16's subnormal half-step) of each other.
#[test]
fn both_elements_draw_the_same_values() {
    let size = Mnk {
        m: 33,
        n: 17,
        k: 65,
    };
    for values in [Values::Random, Values::SmallIntegers] {
        let bf16 = generate_inputs(size, values, 11, ElementType::Bf16);
        let f16 = generate_inputs(size, values, 11, ElementType::F16);
        let pairs = bf16.0.iter().zip(&f16.0).chain(bf16.1.iter().zip(&f16.1));
        for (&x, &y) in pairs {
            let (x, y) = (Bf16(x).to_f32(), F16(y).to_f32());
            match values {
                Values::SmallIntegers => assert_eq!(x, y),
                Values::Random => assert!(
                    (x - y).abs()
                        <= (2f32.powi(-8) + 2f32.powi(-11)) * x.abs().max(y.abs()) + 2f32.powi(-25),
                    "{x} {y}"
                ),
            }
        }
    }
}

/// The poison is a NaN in both types (so an unwritten element never passes as a value), and
/// no host conversion produces it.
#[test]
fn the_poison_is_a_nan_of_either_element() {
    for e in ElementType::ALL {
        assert!(e.value(C_POISON).is_nan(), "{e:?}");
        assert_ne!(e.round(f32::NAN), C_POISON, "{e:?}");
        assert_ne!(e.round(-f32::NAN), C_POISON, "{e:?}");
    }
}

/// FP16's tolerance: at least four times as strict as BF16's at any realistic scale, its
/// subnormal allowance nothing there, and enough for FP16's rounding of a tiny 1 x 1 product.
#[test]
fn the_fp16_tolerance_is_stricter_and_covers_its_subnormals() {
    let bf16 = output_tolerance(ElementType::Bf16, 1 << 20, 30.0, 3e4);
    assert_eq!((bf16.norm, bf16.element), (1.0 / 256.0, 1.0 / 256.0));
    let f16 = output_tolerance(ElementType::F16, 1 << 20, 30.0, 3e4);
    assert!(f16.norm <= bf16.norm / 4.0 * 1.001 && f16.element <= bf16.element / 4.0 * 1.001);
    // A 1 x 1 x 1 product of 1e-6: FP16 holds it to within half a subnormal step, 2^-25.
    let x = 1e-6f32;
    let rounded = F16::from_f32(x).to_f32();
    let t = output_tolerance(ElementType::F16, 1, x as f64, x as f64);
    let err = (rounded - x).abs() as f64;
    assert!(err > x as f64 / 1024.0, "the case needs the allowance");
    assert!(err <= t.element * x as f64 && err <= t.norm * x as f64);
}

/// A planted wrong element is finite and far outside the tolerance in either type, FP16's
/// large values included (where `far_off` alone would overflow to infinity).
#[test]
fn planted_wrong_elements_are_finite_and_far_off() {
    for e in ElementType::ALL {
        for x in [0.0f32, 0.5, -3.0, 100.0, -256.0, 60000.0] {
            let bits = e.round(x);
            let x = e.value(bits);
            let wrong = e.value(far_off_bits(e, bits));
            assert!(wrong.is_finite(), "{e:?} {x}");
            let far = (1000.0 * x.abs().max(1.0)).min(65504.0);
            assert!((wrong - x).abs() >= 0.99 * far, "{e:?} {x}: {wrong}");
        }
    }
}

/// The FP16 families are their BF16 twins instantiated for FP16: the same style, B layout,
/// A source and cluster, the entry points named `f16_` for `bf16_`, the direct-store one
/// typed by its element; and every element's experiments have their cuBLAS baseline.
#[test]
fn fp16_families_are_twins_of_bf16_ones() {
    let mut twins = 0;
    for f in GEMM16_KERNELS {
        let [store, direct] = f.entries.names();
        let prefix = format!("{}_gemm_", f.element.label());
        assert!(
            store.starts_with(&prefix) && direct.starts_with(&prefix),
            "{store}"
        );
        assert_eq!(f.name, store);
        if let Gemm16Entries::TensorMaps { direct, .. } = &f.entries {
            assert_eq!(direct.element(), f.element, "{}", f.name);
        } else {
            assert_eq!(f.element, ElementType::Bf16, "{}: cp_async is BF16", f.name);
        }
        if f.element == ElementType::F16 {
            let twin = GEMM16_KERNELS
                .iter()
                .find(|t| t.name == format!("b{}", f.name))
                .unwrap_or_else(|| panic!("{}: no BF16 twin", f.name));
            assert_eq!(
                (
                    twin.element,
                    twin.style,
                    twin.b_layout,
                    twin.a_source,
                    twin.cluster
                ),
                (
                    ElementType::Bf16,
                    f.style,
                    f.b_layout,
                    f.a_source,
                    f.cluster
                )
            );
            assert_ne!(twin.style_label(), f.style_label());
            twins += 1;
        }
        if f.b_layout == BLayout::KN {
            assert!(has_b_kn(f.element), "{}", f.name);
        }
    }
    assert_eq!(twins, 2);
    assert!(!has_b_kn(ElementType::F16), "no FP16 family reads B k x n");
    let names: Vec<&str> = Gemm16Workload
        .experiments()
        .iter()
        .map(|e| e.name())
        .collect();
    for (i, name) in names.iter().enumerate() {
        assert!(!names[..i].contains(name), "{name} twice");
    }
    for e in Gemm16Workload.experiments() {
        let baseline = match e.element() {
            ElementType::Bf16 => CUBLAS,
            ElementType::F16 => CUBLAS_F16,
        };
        assert!(names.contains(&baseline), "{}", e.name());
    }
}

#[test]
fn every_geometry_fits_a_block_and_keeps_its_regions_apart() {
    use super::super::{BTile, C_STAGING_BYTES, Geometry};
    const MAX_DYNAMIC_SHARED: u32 = 227 * 1024;
    for g in [Geometry::SHARED_TILE, Geometry::TILE_PER_WARPGROUP] {
        let shared = g.shared();
        assert!(
            shared.bytes <= MAX_DYNAMIC_SHARED,
            "{g:?}: {}",
            shared.bytes
        );
        // Stages 1 KiB aligned (128-byte swizzle), then the pipeline's mbarriers, then the
        // order's two, then the staging at a 1 KiB boundary, to the end.
        let stage_bytes = g.a_tile_bytes() + g.b_tile_bytes();
        assert_eq!(stage_bytes % 1024, 0);
        assert_eq!(shared.stages.item_offset(1), stage_bytes);
        assert_eq!(shared.barriers.offset(), g.stages * stage_bytes);
        assert_eq!(shared.barriers.count(), 2 * g.stages);
        assert_eq!(
            shared.order.offset(),
            shared.barriers.offset() + 16 * g.stages
        );
        assert!(shared.staging.offset() >= shared.order.offset() + 16);
        assert_eq!(shared.staging.offset() % 1024, 0);
        assert_eq!(shared.bytes, shared.staging.offset() + C_STAGING_BYTES);
        assert_eq!(g.a_box(), [64, g.tile_m]);
        assert_eq!(g.b_box(), [64, g.tile_n]);
    }
    assert_eq!(Geometry::SHARED_TILE.b_box(), BTile::BOX);
    assert_eq!(Geometry::SHARED_TILE.tiles(4096, 4097), (32, 17));
    assert_eq!(Geometry::TILE_PER_WARPGROUP.tiles(129, 129), (2, 2));
    // Ping-pong's five 32 KiB stages take what the 64 x 256 tile's four 40 KiB ones did.
    assert_eq!(
        Geometry::TILE_PER_WARPGROUP.shared().bytes,
        MAX_DYNAMIC_SHARED
    );
}

#[test]
fn cluster_families_slice_the_tiles_they_share() {
    use super::super::{ASource, BTile, Gemm16Style, Geometry, TileCluster};
    let g = Geometry::SHARED_TILE;
    // One block: the slices are the whole tiles, the boxes the tile types'.
    assert_eq!(TileCluster::NONE.a_box(g), g.a_box());
    assert_eq!(TileCluster::NONE.b_box(g), BTile::BOX);
    let (two_by_one, one_by_two) = (TileCluster { m: 2, n: 1 }, TileCluster { m: 1, n: 2 });
    assert_eq!(two_by_one.b_box(g), [64, 128]);
    assert_eq!(two_by_one.b_box(Geometry::TILE_PER_WARPGROUP), [64, 64]);
    assert_eq!(two_by_one.a_box(g), [64, 128]);
    assert_eq!(one_by_two.a_box(g), [64, 64]);
    assert_eq!(one_by_two.b_box(g), [64, 256]);
    // 4096^2: 32 x 16 tiles, 256 patches of two; 300 x 8: 3 x 1 tiles, 2 patches of 2 x 1
    // (the second half past C), 3 of 1 x 2 (each half past C).
    assert_eq!(two_by_one.cluster_tiles(g, 4096, 4096), 256);
    assert_eq!(two_by_one.cluster_tiles(g, 300, 8), 2);
    assert_eq!(one_by_two.cluster_tiles(g, 300, 8), 3);
    let mut clustered = 0;
    for kernel in GEMM16_KERNELS {
        if kernel.cluster == TileCluster::NONE {
            continue;
        }
        clustered += 1;
        // What the kernels' const checks allow: a warp-specialized style, B n x k, A from
        // shared memory, tensor maps; the entry points declare the cluster the host sizes
        // the grid by.
        assert!(
            matches!(
                kernel.style,
                Gemm16Style::WsCooperative | Gemm16Style::WsPingpong
            ),
            "{}",
            kernel.name
        );
        assert_eq!(kernel.b_layout, BLayout::NK, "{}", kernel.name);
        assert_eq!(kernel.a_source, ASource::SharedMemory, "{}", kernel.name);
        let Gemm16Entries::TensorMaps {
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
    // ws_cooperative_2x1 and _1x2, ws_pingpong_2x1.
    assert_eq!(clustered, 3);
}

#[test]
fn sizes_and_the_baseline() {
    assert_eq!(harness::experiment::baseline_of(&Gemm16Workload), CUBLAS);
    assert_eq!(Gemm16Experiment::CublasLt.role(), Role::Baseline);
    assert!(
        Gemm16Workload
            .parse_size("65536x65536x1")
            .unwrap_err()
            .contains("2^31")
    );
    assert!(Gemm16Workload.parse_size("0").is_err());
    assert_eq!(Gemm16Workload.parse_size("4095x4097x1023").unwrap().k, 1023);
    // Per element: A, B, (BF16 only) B (k x n), then padded copies where rows are not
    // multiples of 8 (A and B for K, B (k x n) for N), and the reference; then C and its
    // widening, cuBLASLt's workspace.
    let workspace = gpu_runtime::blaslt::WORKSPACE_BYTES as u64;
    assert_eq!(
        device_bytes(Mnk { m: 2, n: 8, k: 8 }),
        2 * (2 + 16) * 8 + 2 * (2 + 8) * 8 + 2 * 8 * 16 + 6 * 16 + workspace
    );
    assert_eq!(
        device_bytes(Mnk { m: 2, n: 3, k: 8 }),
        (2 * (2 + 6) * 8 + 2 * 8 * 8) + 2 * (2 + 3) * 8 + 2 * 8 * 6 + 6 * 6 + workspace
    );
    assert_eq!(
        device_bytes(Mnk { m: 2, n: 3, k: 7 }),
        (2 * (2 + 6) * 7 + 2 * 5 * 8 + 2 * 7 * 8)
            + (2 * (2 + 3) * 7 + 2 * 5 * 8)
            + 2 * 8 * 6
            + 6 * 6
            + workspace
    );
    let (baselines, kernels): (Vec<&Gemm16Experiment>, Vec<_>) = Gemm16Workload
        .experiments()
        .iter()
        .partition(|e| e.role() == Role::Baseline);
    assert_eq!(baselines.len(), 4);
    assert!(baselines.iter().all(|e| e.threads().is_none()));
    for e in kernels {
        assert_eq!(e.archs(), [Arch::Sm90a]);
    }
    // Report order: the baselines first.
    assert_eq!(Gemm16Workload.experiments()[3].name(), CUBLAS_F16);
}
