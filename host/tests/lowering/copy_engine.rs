//! Bulk and tensor copies (sm_90), and the stream kernels.

use super::*;

/// The copy engine's instructions are sm_90 only: the sm_80 PTX holds none, and the bulk
/// streaming kernels lower to the copy engine's SASS (`UBLKCP`) and transaction-count
/// mbarrier operations.
#[test]
fn bulk_copies_are_sm90_only_and_lower_to_the_copy_engine() {
    for (name, k) in &inspection(Arch::Sm80).kernels {
        assert!(
            !k.ptx.iter().any(|i| i.opcode.starts_with("cp.async.bulk")
                || i.opcode.starts_with("mbarrier.expect_tx")
                || i.opcode.starts_with("elect")),
            "{name} (sm_80) holds an sm_90 instruction"
        );
    }
    let bulk: Vec<_> = workloads::stream::STREAM_KERNELS
        .iter()
        .filter(|k| matches!(k.style, StreamStyle::Bulk { .. }))
        .map(|k| k.name)
        .collect();
    assert!(!bulk.is_empty(), "no bulk kernel in the stream table");
    for name in bulk {
        let view = kernel(Arch::Sm90, name);
        assert!(
            view.has_ptx("cp.async.bulk.shared::cluster.global"),
            "{name}"
        );
        assert!(view.has_ptx("cp.async.bulk.global.shared::cta"), "{name}");
        assert!(view.has_ptx("mbarrier.expect_tx"), "{name}");
        let sass = sass_ops(view);
        assert!(
            sass.iter().filter(|o| o.starts_with("UBLKCP")).count() >= 2,
            "{name}: {:?}",
            sass.iter()
                .filter(|o| o.starts_with("UBLKCP") || o.starts_with("SYNCS"))
                .collect::<Vec<_>>()
        );
        assert!(sass.iter().any(|o| o.starts_with("SYNCS")), "{name}");
        // No data passes through registers: no global or shared loads of the tiles.
        assert!(
            !sass
                .iter()
                .any(|o| o.starts_with("LDG") || o.starts_with("LDS")),
            "{name}"
        );
    }
}

/// Tensor copies (TMA) are sm_90 only and lower to the copy engine's tensor instructions; the
/// tensor maps are kernel parameters aligned to 64 bytes and read in place (no local-memory
/// copy, no stack frame).
#[test]
fn tensor_copies_lower_to_tma_with_maps_read_in_place() {
    let tensor: Vec<_> = workloads::stream::STREAM_KERNELS
        .iter()
        .filter(|k| matches!(k.style, StreamStyle::Tensor { .. }))
        .collect();
    assert!(!tensor.is_empty(), "no tensor kernel in the stream table");
    let text = host::device_code::module_text(Arch::Sm90);
    for k in tensor {
        assert!(
            !inspection(Arch::Sm80).kernels.contains_key(k.name),
            "{} is in the sm_80 PTX",
            k.name
        );
        let view = kernel(Arch::Sm90, k.name);
        assert!(
            view.has_ptx("cp.async.bulk.tensor.2d.shared::cluster.global"),
            "{}",
            k.name
        );
        assert!(
            view.has_ptx("cp.async.bulk.tensor.2d.global.shared::cta"),
            "{}",
            k.name
        );
        assert!(view.has_ptx("prefetch.tensormap"), "{}", k.name);
        assert!(view.has_ptx("cvta.param"), "{}", k.name);
        let sass = sass_ops(view);
        for op in ["UTMALDG.2D", "UTMASTG.2D", "UTMACCTL.PF"] {
            assert!(
                sass.iter().any(|o| o == op),
                "{}: no {op} in {sass:?}",
                k.name
            );
        }
        assert!(
            sass.iter().any(|o| o.starts_with("SYNCS.ARRIVE.TRANS64")),
            "{}",
            k.name
        );
        assert!(
            !sass
                .iter()
                .any(|o| o.starts_with("LDL") || o.starts_with("STL")),
            "{}: a tensor map was copied to local memory",
            k.name
        );
        let resources = view.resources.as_ref().expect("ptxas report");
        assert_eq!(resources.stack_frame_bytes, 0, "{}", k.name);
        for i in 0..2 {
            let decl = format!(".param .align 64 .b8 {}_param_{i}[128]", k.name);
            assert!(text.contains(&decl), "{}: no `{decl}`", k.name);
        }
    }
}

/// The tensor-copy GEMM (sm_90 only): two 2-D tensor loads per k-tile from one thread, the
/// maps read in place, no `cp.async` and no block-wide barrier in the mainloop, whole k-tiles
/// of FFMA.
#[test]
fn the_tma_gemm_loads_tiles_with_tensor_copies() {
    use workloads::gemm::{BK, GEMM_KERNELS, GemmStyle};
    let families: Vec<_> = GEMM_KERNELS
        .iter()
        .filter(|k| matches!(k.style, GemmStyle::Tma { .. }))
        .collect();
    assert!(!families.is_empty(), "no tensor-copy GEMM in the table");
    for family in families {
        let entry = family.entry_aligned.name();
        assert!(family.entry_any.is_none(), "{entry}");
        assert!(
            inspection(Arch::Sm80).kernel(entry).is_none(),
            "{entry} in the sm_80 PTX"
        );
        let view = kernel(Arch::Sm90, entry);
        let loads = view
            .ptx
            .iter()
            .filter(|i| {
                i.opcode
                    .starts_with("cp.async.bulk.tensor.2d.shared::cluster.global")
            })
            .count();
        // One A box and one B box per k-tile (the prologue's copies may be inlined apart).
        assert!(
            loads >= 2 && loads % 2 == 0,
            "{entry}: {loads} tensor loads"
        );
        assert!(
            !view.has_ptx("cp.async.cg") && !view.has_ptx("cp.async.ca"),
            "{entry}"
        );
        assert!(view.has_ptx("mbarrier.try_wait.parity"), "{entry}");
        let sass = sass_ops(view);
        let utmaldg = sass.iter().filter(|o| *o == "UTMALDG.2D").count();
        assert!(utmaldg >= 2 && utmaldg % 2 == 0, "{entry}: {utmaldg}");
        assert!(!sass.iter().any(|o| o.starts_with("LDGSTS")), "{entry}");
        // One block barrier: the one after the pipeline's mbarrier initialization.
        let barriers = sass.iter().filter(|o| o.starts_with("BAR.SYNC")).count();
        assert_eq!(barriers, 1, "{entry}: {barriers} BAR.SYNC");
        let per_tile = (family.tile.thread_m * family.tile.thread_n * BK) as usize;
        let ffma = sass.iter().filter(|o| *o == "FFMA").count();
        assert!(ffma > 0 && ffma % per_tile == 0, "{entry}: {ffma} FFMA");
        let resources = view.resources.as_ref().expect("ptxas report");
        assert_eq!(resources.stack_frame_bytes, 0, "{entry}");
    }
}

/// The tensor-copy-B GEMM (sm_90 only): per k-tile one tensor copy of B's box from one thread,
/// its bytes expected on the stage's `full` barrier, and A by every thread's 4-byte
/// transposing `cp.async` bound with `.noinc` arrivals on the same barrier; the barriers fenced
/// for the copy engine; the B map read in place; whole k-tiles of FFMA, no local memory.
#[test]
fn the_tma_b_gemm_mixes_a_tensor_copy_and_cp_async_in_one_stage() {
    use workloads::gemm::{BK, GEMM_KERNELS, GemmStyle};
    let families: Vec<_> = GEMM_KERNELS
        .iter()
        .filter(|k| matches!(k.style, GemmStyle::TmaB { .. }))
        .collect();
    assert!(!families.is_empty(), "no tensor-copy-B GEMM in the table");
    let text = host::device_code::module_text(Arch::Sm90);
    for family in families {
        let entry = family.entry_aligned.name();
        assert!(family.entry_any.is_none(), "{entry}");
        assert!(
            inspection(Arch::Sm80).kernel(entry).is_none(),
            "{entry} in the sm_80 PTX"
        );
        let view = kernel(Arch::Sm90, entry);
        for ptx in [
            "cp.async.bulk.tensor.2d.shared::cluster.global",
            "mbarrier.expect_tx",
            "cp.async.ca.shared.global",
            "cp.async.mbarrier.arrive.noinc",
            "fence.mbarrier_init",
            "prefetch.tensormap",
            "mbarrier.try_wait.parity",
        ] {
            assert!(view.has_ptx(ptx), "{entry}: no {ptx}");
        }
        assert!(!view.has_ptx("cp.async.cg"), "{entry}: B by cp.async");
        assert!(!view.has_ptx("cp.async.commit_group"), "{entry}");
        let sass = sass_ops(view);
        assert!(sass.iter().any(|o| o == "UTMALDG.2D"), "{entry}: {sass:?}");
        assert!(sass.iter().any(|o| o.starts_with("LDGSTS.E")), "{entry}");
        assert!(has_sass(view, "ARRIVES.LDGSTSBAR"), "{entry}");
        // Block barriers: only the one after the pipeline's initialization, in each of the
        // interior and edge bodies.
        let barriers = sass.iter().filter(|o| o.starts_with("BAR.SYNC")).count();
        assert_eq!(barriers, 2, "{entry}: {barriers} BAR.SYNC");
        let per_tile = (family.tile.thread_m * family.tile.thread_n * BK) as usize;
        let ffma = sass.iter().filter(|o| *o == "FFMA").count();
        assert!(ffma >= per_tile, "{entry}: {ffma} FFMA");
        assert!(
            !sass
                .iter()
                .any(|o| o.starts_with("LDL") || o.starts_with("STL")),
            "{entry}"
        );
        let resources = view.resources.as_ref().expect("ptxas report");
        assert_eq!(resources.stack_frame_bytes, 0, "{entry}");
        let decl = format!(".param .align 64 .b8 {entry}_param_1[128]");
        assert!(text.contains(&decl), "{entry}: no `{decl}`");
    }
}

/// The study's tensor style (sm_90 only): per stage one tensor copy of A's box and one bulk
/// copy of B's rows, no `cp.async`, the map read in place.
#[test]
fn the_study_tensor_style_uses_the_copy_engine() {
    use workloads::study::Style;
    let kernels: Vec<_> = study_kernels(Style::Tensor).collect();
    assert!(!kernels.is_empty());
    for k in kernels {
        assert!(
            !inspection(Arch::Sm80).kernels.contains_key(k.name),
            "{}",
            k.name
        );
        let view = kernel(Arch::Sm90, k.name);
        let sass = sass_ops(view);
        assert!(
            sass.iter().any(|o| o == "UTMALDG.2D"),
            "{}: {sass:?}",
            k.name
        );
        assert!(
            sass.iter().any(|o| o.starts_with("UBLKCP.S.G")),
            "{}",
            k.name
        );
        assert!(!sass.iter().any(|o| o.starts_with("LDGSTS")), "{}", k.name);
        assert!(view.has_ptx("cvta.param"), "{}", k.name);
        let resources = view.resources.as_ref().expect("ptxas report");
        assert_eq!(resources.stack_frame_bytes, 0, "{}", k.name);
    }
}

/// The streaming kernels that take tiles from a `TileQueue` do it with global atomics (one
/// relaxed add per tile, one acquire-release add when a block retires); the grid-strided ones
/// touch no atomics.
#[test]
fn queued_stream_kernels_take_tiles_with_atomics() {
    for k in workloads::stream::STREAM_KERNELS {
        let arch = if k.needs_sm90() {
            Arch::Sm90
        } else {
            Arch::Sm80
        };
        let view = kernel(arch, k.name);
        if k.takes_queue() {
            assert!(
                view.has_ptx("atom.relaxed.gpu.global.add.u32"),
                "{}",
                k.name
            );
            assert!(
                view.has_ptx("atom.acq_rel.gpu.global.add.u32"),
                "{}",
                k.name
            );
            let sass = sass_ops(view);
            assert!(
                sass.iter().filter(|o| o.starts_with("ATOMG")).count() >= 2,
                "{}: {sass:?}",
                k.name
            );
        } else {
            assert!(
                !view.ptx.iter().any(|i| i.opcode.starts_with("atom")),
                "{}",
                k.name
            );
        }
    }
}

/// The plain streaming kernel moves 16 bytes per access, four loads in flight per thread
/// before their stores (a plain copy of a 16-byte value would be two 8-byte accesses), all in
/// registers.
#[test]
fn plain_streaming_keeps_four_16_byte_loads_in_flight() {
    let loads = workloads::stream::PLAIN_QUADS_PER_THREAD as usize;
    for arch in Arch::PORTABLE {
        let sass = sass_ops(kernel(arch, "stream_plain"));
        let first_store = sass
            .iter()
            .position(|o| o.starts_with("STG"))
            .expect("a store");
        let loads_before = sass[..first_store]
            .iter()
            .filter(|o| o.starts_with("LDG.E.128"))
            .count();
        assert_eq!(loads_before, loads, "{arch}: {sass:?}");
        assert!(
            sass.iter()
                .all(|o| !o.starts_with("LDG") || o.starts_with("LDG.E.128")),
            "{arch}: {sass:?}"
        );
        assert!(
            sass.iter().filter(|o| o.starts_with("STG.E.128")).count() > loads,
            "{arch}: {sass:?}"
        );
        assert!(
            !sass
                .iter()
                .any(|o| o.starts_with("LDL") || o.starts_with("STL")),
            "{arch}: {sass:?}"
        );
    }
}
