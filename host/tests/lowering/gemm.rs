//! The FP32 GEMM families: tile copies, waits, split K, the unrolled mainloop.

use super::*;

/// The `cp.async` and sync GEMM families (both archs): both entry points of each, with the
/// family and the copy size.
pub(crate) fn gemm_entries()
-> impl Iterator<Item = (&'static workloads::gemm::GemmKernel, &'static str, u32)> {
    workloads::gemm::GEMM_KERNELS
        .iter()
        .filter(|k| !k.style.needs_sm90())
        .flat_map(|k| {
            let (aligned, any) = k.entry_names();
            let any = any.expect("copy styles have a 4-byte entry point");
            [(k, aligned, 16), (k, any, 4)]
        })
}

/// GEMM tiles are copied with `cp.async`, plain inside the matrix and zero-filling at its
/// edges: B (and A in the TMA-less m-major layout, none today) with 16-byte `cp.async.cg`
/// in the aligned entry points and 4-byte copies in the any-size ones; A, stored k-major,
/// always with 4-byte transposing copies. The synchronous style copies nothing
/// asynchronously.
#[test]
fn gemm_tiles_are_copied_with_the_documented_instructions() {
    use workloads::gemm::{ALayout, GemmStyle};
    for arch in Arch::PORTABLE {
        for (family, entry, align) in gemm_entries() {
            let view = kernel(arch, entry);
            let ldgsts: Vec<String> = sass_ops(view)
                .into_iter()
                .filter(|o| o.starts_with("LDGSTS"))
                .collect();
            if family.style == GemmStyle::Sync {
                assert!(ldgsts.is_empty(), "{entry} ({arch}): {ldgsts:?}");
                continue;
            }
            let b_copies: &[&str] = match align {
                16 => &["LDGSTS.E.BYPASS.128", "LDGSTS.E.BYPASS.128.ZFILL"],
                _ => &["LDGSTS.E", "LDGSTS.E.ZFILL"],
            };
            // A transposing copy zero-fills whole elements: ptxas writes that as LDGSTS.E
            // with an ignore-source predicate operand, not as .ZFILL.
            let a_copies: &[&str] = match family.style.a_layout() {
                ALayout::KMajor => &["LDGSTS.E"],
                ALayout::MMajor => b_copies,
            };
            for expected in a_copies.iter().chain(b_copies) {
                assert!(
                    ldgsts.iter().any(|o| o == expected),
                    "{entry} ({arch}) lacks {expected}: {ldgsts:?}"
                );
            }
            assert!(
                ldgsts
                    .iter()
                    .all(|o| a_copies.contains(&o.as_str()) || b_copies.contains(&o.as_str())),
                "{entry} ({arch}): {ldgsts:?}"
            );
        }
    }
}

/// Each GEMM style waits the way its library type documents: the thread pipeline with
/// `cp.async.wait_group STAGES - 2` (once before the loop and once in it, in each of the
/// interior and edge bodies) and a block barrier, the block-scope
/// pipelines with `.noinc` arrivals and parity waits and no async-group, the synchronous
/// kernel with block barriers only.
#[test]
fn gemm_styles_wait_as_documented() {
    use workloads::gemm::GemmStyle;
    for arch in Arch::PORTABLE {
        for (family, entry, _) in gemm_entries() {
            let view = kernel(arch, entry);
            let waits: Vec<&str> = view
                .ptx
                .iter()
                .filter(|i| i.opcode == "cp.async.wait_group")
                .map(|i| i.operands.as_str())
                .collect();
            match family.style {
                GemmStyle::ThreadPipeline { stages } => {
                    let expected = (stages - 2).to_string();
                    assert!(
                        !waits.is_empty() && waits.iter().all(|w| *w == expected),
                        "{entry} ({arch}): {waits:?}, expected {expected}"
                    );
                    assert!(view.has_ptx("cp.async.commit_group"), "{entry}");
                    assert!(!view.has_ptx("mbarrier"), "{entry} ({arch})");
                    assert!(has_sass(view, "BAR.SYNC"), "{entry} ({arch})");
                }
                GemmStyle::BlockPipeline { .. } | GemmStyle::WarpSpecialized { .. } => {
                    assert!(waits.is_empty(), "{entry} ({arch}): {waits:?}");
                    assert!(!view.has_ptx("cp.async.commit_group"), "{entry} ({arch})");
                    assert!(has_sass(view, "ARRIVES.LDGSTSBAR"), "{entry} ({arch})");
                    let wait = match arch {
                        Arch::Sm90 | Arch::Sm90a => "mbarrier.try_wait.parity",
                        Arch::Sm80 => "mbarrier.test_wait.parity",
                    };
                    assert!(view.has_ptx(wait), "{entry} ({arch}) lacks {wait}");
                }
                GemmStyle::Sync => {
                    assert!(!view.has_ptx("cp.async"), "{entry} ({arch})");
                    assert!(!view.has_ptx("mbarrier"), "{entry} ({arch})");
                    assert!(has_sass(view, "BAR.SYNC"), "{entry} ({arch})");
                }
                GemmStyle::Tma { .. } | GemmStyle::TmaB { .. } | GemmStyle::SplitK { .. } => {
                    unreachable!("not in gemm_entries")
                }
            }
        }
    }
}

/// Split K (sm_90): each entry point runs the thread pipeline's mainloop (its
/// `cp.async.wait_group STAGES - 2`) with no local memory, and the sm_80 PTX has none of them.
/// Over a cluster it reduces through it — cluster barriers, `mapa` and DSMEM loads, in SASS
/// `UCGABAR_*`; a kernel that splits K within the block alone has none of them. K groups of
/// one warp wait on a warp barrier, larger ones on a named barrier each, and only a block
/// whose K is not split within it waits on the block's barrier in its mainloop (k groups
/// meet there twice, to sum their partials).
#[test]
fn split_k_reduces_through_the_cluster() {
    use workloads::gemm::{GEMM_KERNELS, GemmStyle};
    let mut families = 0;
    let mut in_block = 0;
    for family in GEMM_KERNELS {
        let GemmStyle::SplitK {
            stages,
            split,
            k_groups,
        } = family.style
        else {
            continue;
        };
        families += 1;
        if k_groups > 1 {
            in_block += 1;
        }
        let (aligned, any) = family.entry_names();
        for entry in [aligned, any.expect("a 4-byte entry point")] {
            assert!(
                !inspection(Arch::Sm80).kernels.contains_key(entry),
                "{entry} in the sm_80 PTX"
            );
            let view = kernel(Arch::Sm90, entry);
            let cluster_ops = [
                "barrier.cluster.arrive.release.aligned",
                "barrier.cluster.wait.acquire.aligned",
                "mapa.shared::cluster.u32",
                "ld.shared::cluster.v4.b32",
            ];
            for op in cluster_ops {
                assert_eq!(view.has_ptx(op), split > 1, "{entry}: {op}");
            }
            assert_eq!(has_sass(view, "UCGABAR_ARV"), split > 1, "{entry}");
            assert!(view.has_ptx("cp.async.commit_group"), "{entry}");
            let expected = (stages - 2).to_string();
            assert!(
                view.ptx
                    .iter()
                    .filter(|i| i.opcode == "cp.async.wait_group")
                    .all(|i| i.operands == expected),
                "{entry}: waits other than {expected}"
            );
            let group_warps = family.tile.warps_m * family.tile.warps_n;
            let named = view
                .ptx
                .iter()
                .filter(|i| i.opcode == "barrier.sync" && i.operands.contains(','))
                .count();
            let block_barriers = view
                .ptx
                .iter()
                .filter(|i| i.opcode == "barrier.sync" && i.operands == "0")
                .count();
            let warp_barrier = view.has_ptx("bar.warp.sync");
            if k_groups == 1 {
                assert!(named == 0 && !warp_barrier && block_barriers > 0, "{entry}");
            } else {
                // Two block barriers around the groups' partial tiles, per body (interior
                // and edge).
                assert_eq!(block_barriers, 4, "{entry}");
                assert_eq!(warp_barrier, group_warps == 1, "{entry}");
                assert_eq!(named > 0, group_warps > 1, "{entry}");
            }
            assert!(
                !view.has_ptx("ld.local") && !view.has_ptx("st.local"),
                "{entry}"
            );
        }
    }
    assert_eq!((families, in_block), (7, 6));
}

/// The multiply is unrolled into registers: the kernel's FFMAs are whole rank-1 updates
/// (`thread_m * thread_n` each), at least one k-tile's worth (`BK` of them) per body — the
/// interior and the edge body each hold a k-tile's loop plus the last k multiplied after it
/// — and no local memory (checked above).
#[test]
fn gemm_mainloops_are_unrolled_rank1_updates() {
    use workloads::gemm::BK;
    for arch in Arch::PORTABLE {
        for (family, entry, _) in gemm_entries() {
            let per_k = (family.tile.thread_m * family.tile.thread_n) as usize;
            let ffma = sass_ops(kernel(arch, entry))
                .iter()
                .filter(|o| o.as_str() == "FFMA")
                .count();
            assert!(
                ffma % per_k == 0 && ffma >= 2 * BK as usize * per_k,
                "{entry} ({arch}): {ffma} FFMA, not whole rank-1 updates of {per_k}, or under \
                 a k-tile per body"
            );
        }
    }
}
