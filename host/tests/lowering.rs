//! What the device code lowers to, checked without a GPU: every PTX module is assembled by
//! NVIDIA's ptxas for its arch, every registered kernel is in it, and each abstraction emits
//! the instructions it documents — in PTX and in SASS.
//!
//! These tests need ptxas and cuobjdump (`bash .ci/run` installs them from PyPI into
//! `.tools/`); without them they fail, saying so, rather than pass without checking.

use host::inspect::{Inspection, KernelView, inspect};
use std::sync::OnceLock;
use xtask::Arch;

/// The inspection of each arch, assembled once per test binary.
fn inspection(arch: Arch) -> &'static Inspection {
    static CACHE: [OnceLock<Inspection>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = &CACHE[Arch::ALL
        .iter()
        .position(|&a| a == arch)
        .expect("a known arch")];
    slot.get_or_init(|| {
        let inspection = inspect(arch).unwrap_or_else(|e| panic!("{e:#}"));
        if let Some(why) = &inspection.sass_missing {
            panic!("the NVIDIA tools are needed for these tests: {why}");
        }
        inspection
    })
}

fn kernel(arch: Arch, name: &str) -> &'static KernelView {
    inspection(arch)
        .kernel(name)
        .unwrap_or_else(|| panic!("kernel `{name}` missing from the {arch} PTX"))
}

fn study_kernels(
    style: gpu::study::Style,
) -> impl Iterator<Item = &'static gpu::study::StudyKernel> {
    gpu::study::STUDY_KERNELS
        .iter()
        .filter(move |k| k.style == style)
}

fn sass_ops(k: &KernelView) -> Vec<String> {
    k.sass
        .as_ref()
        .expect("SASS")
        .iter()
        .map(|i| i.opcode.clone())
        .collect()
}

fn has_sass(k: &KernelView, prefix: &str) -> bool {
    k.has_sass(prefix).expect("SASS")
}

#[test]
fn ptxas_assembles_every_module_for_its_arch() {
    for arch in Arch::ALL {
        let inspection = inspection(arch);
        for (name, k) in &inspection.kernels {
            assert!(
                k.resources.is_some(),
                "ptxas reported nothing for {name} ({arch})"
            );
            assert!(
                k.sass.as_ref().is_some_and(|s| !s.is_empty()),
                "no SASS for {name} ({arch})"
            );
        }
    }
}

#[test]
fn registry_and_ptx_agree() {
    let mut registered: Vec<&str> = gpu::study::STUDY_KERNELS.iter().map(|k| k.name).collect();
    registered.extend(gpu::copy_test::COPY_TEST_KERNELS.iter().map(|k| k.name));
    registered.push(gpu::copy_test::BARRIER_OPS);
    registered.sort();
    for arch in Arch::ALL {
        let mut in_ptx: Vec<&str> = inspection(arch)
            .kernels
            .keys()
            .map(String::as_str)
            .collect();
        in_ptx.sort();
        assert_eq!(
            in_ptx, registered,
            "{arch}: kernels in the PTX vs the registry"
        );
    }
}

#[test]
fn no_kernel_spills_or_needs_a_stack() {
    for arch in Arch::ALL {
        for (name, k) in &inspection(arch).kernels {
            let r = k.resources.as_ref().expect("resources");
            assert_eq!(
                (r.stack_frame_bytes, r.spill_store_bytes, r.spill_load_bytes),
                (0, 0, 0),
                "{name} ({arch}) uses local memory"
            );
        }
    }
}

#[test]
fn study_kernels_cannot_trap() {
    // Bounds checks and the pipelines' misuse checks must fold away in the study's loops.
    for arch in Arch::ALL {
        for k in gpu::study::STUDY_KERNELS {
            let view = kernel(arch, k.name);
            assert!(!view.has_ptx("trap"), "{} ({arch}) can trap", k.name);
            assert!(!has_sass(view, "BPT"), "{} ({arch}) can trap", k.name);
        }
    }
}

#[test]
fn study_kernels_use_only_the_dynamic_shared_memory_they_register() {
    for arch in Arch::ALL {
        for k in gpu::study::STUDY_KERNELS {
            let r = kernel(arch, k.name).resources.as_ref().expect("resources");
            assert_eq!(
                r.shared_bytes, 0,
                "{} ({arch}) has static shared memory",
                k.name
            );
        }
    }
}

#[test]
fn thread_scope_lowers_to_async_groups_and_no_mbarrier() {
    use gpu::study::Style::{RawAsyncGroup, ThreadPipeline};
    for arch in Arch::ALL {
        for k in study_kernels(RawAsyncGroup).chain(study_kernels(ThreadPipeline)) {
            let view = kernel(arch, k.name);
            let waits: Vec<String> = view
                .ptx
                .iter()
                .filter(|i| i.opcode == "cp.async.wait_group")
                .map(|i| i.operands.clone())
                .collect();
            // One wait per step, for the oldest of the STAGES committed groups: an immediate
            // folded from the pipeline's run-time count.
            assert_eq!(waits, [(k.stages - 1).to_string()], "{} ({arch})", k.name);
            assert!(view.has_ptx("cp.async.commit_group"), "{} ({arch})", k.name);
            assert!(
                !view.has_ptx("mbarrier"),
                "{} ({arch}) uses an mbarrier",
                k.name
            );
            assert!(!view.has_ptx("cp.async.mbarrier"), "{} ({arch})", k.name);
            let sass = sass_ops(view);
            assert!(sass.iter().any(|o| o == "LDGDEPBAR"), "{} ({arch})", k.name);
            let depbar = format!("DEPBAR.LE SB0, 0x{:x}", k.stages - 1);
            assert!(
                view.sass.as_ref().unwrap().iter().any(|i| i.text == depbar),
                "{} ({arch}) lacks `{depbar}`",
                k.name
            );
            assert!(
                !sass
                    .iter()
                    .any(|o| o.starts_with("SYNCS") || o.starts_with("ARRIVES"))
            );
        }
    }
}

#[test]
fn block_scope_lowers_to_mbarrier_arrivals_and_parity_waits() {
    use gpu::study::Style::{Barrier, BlockPipeline, RawMbarrier, WarpSpecialized};
    for arch in Arch::ALL {
        let kernels = study_kernels(RawMbarrier)
            .chain(study_kernels(BlockPipeline))
            .chain(study_kernels(WarpSpecialized))
            .chain(study_kernels(Barrier));
        for k in kernels {
            let view = kernel(arch, k.name);
            let name = k.name;
            assert!(
                view.has_ptx("cp.async.mbarrier.arrive.noinc.shared.b64"),
                "{name} ({arch}): copies complete a phase"
            );
            assert!(
                view.has_ptx("mbarrier.arrive.shared.b64"),
                "{name} ({arch})"
            );
            assert!(!view.has_ptx("cp.async.commit_group"), "{name} ({arch})");
            assert!(!view.has_ptx("cp.async.wait_group"), "{name} ({arch})");
            match arch {
                Arch::Sm90 => {
                    assert!(view.has_ptx("mbarrier.try_wait.parity"), "{name} ({arch})");
                    assert!(!view.has_ptx("mbarrier.test_wait"), "{name} ({arch})");
                    assert!(has_sass(view, "SYNCS.PHASECHK.TRANS64.TRYWAIT"), "{name}");
                    assert!(has_sass(view, "SYNCS.ARRIVE.TRANS64"), "{name}");
                }
                Arch::Sm80 => {
                    assert!(view.has_ptx("mbarrier.test_wait.parity"), "{name} ({arch})");
                    assert!(!view.has_ptx("mbarrier.try_wait"), "{name} ({arch})");
                }
            }
            assert!(has_sass(view, "ARRIVES.LDGSTSBAR"), "{name} ({arch})");
        }
    }
}

#[test]
fn the_sync_baseline_has_no_async_copy() {
    for arch in Arch::ALL {
        let view = kernel(arch, "sync_baseline");
        assert!(!view.has_ptx("cp.async"));
        assert!(!view.has_ptx("mbarrier"));
        let bars = view
            .ptx
            .iter()
            .filter(|i| i.opcode == "barrier.sync")
            .count();
        assert_eq!(bars, 2, "two block barriers per step");
        assert!(!has_sass(view, "LDGSTS"));
    }
}

#[test]
fn aligned_sizes_select_the_copy_instruction() {
    for arch in Arch::ALL {
        let cases = [
            ("copy_barrier_4", "cp.async.ca.shared.global 4", "LDGSTS.E"),
            (
                "copy_barrier_8",
                "cp.async.ca.shared.global 8",
                "LDGSTS.E.64",
            ),
            (
                "copy_barrier_16",
                "cp.async.cg.shared.global 16",
                "LDGSTS.E.BYPASS.128",
            ),
            (
                "copy_zfill_4",
                "cp.async.ca.shared.global 4, src-size",
                "LDGSTS.E.ZFILL",
            ),
            (
                "copy_zfill_8",
                "cp.async.ca.shared.global 8, src-size",
                "LDGSTS.E.64.ZFILL",
            ),
            (
                "copy_zfill_16",
                "cp.async.cg.shared.global 16, src-size",
                "LDGSTS.E.BYPASS.128.ZFILL",
            ),
        ];
        for (name, ptx, sass) in cases {
            let view = kernel(arch, name);
            let copies: Vec<String> = view
                .ptx
                .iter()
                .filter(|i| i.opcode.starts_with("cp.async.c"))
                .map(host::inspect::ptx_key)
                .collect();
            assert!(!copies.is_empty(), "{name} ({arch}) copies nothing");
            assert!(
                copies.iter().all(|c| c == ptx),
                "{name} ({arch}): {copies:?}"
            );
            let ldgsts: Vec<String> = sass_ops(view)
                .into_iter()
                .filter(|o| o.starts_with("LDGSTS"))
                .collect();
            assert!(!ldgsts.is_empty(), "{name} ({arch})");
            assert!(
                ldgsts.iter().all(|o| o == sass),
                "{name} ({arch}): {ldgsts:?}"
            );
        }
    }
}

#[test]
fn barrier_copies_bind_with_noinc_and_wait_on_tokens() {
    for arch in Arch::ALL {
        for name in ["copy_barrier_4", "copy_barrier_group"] {
            let view = kernel(arch, name);
            assert!(
                view.has_ptx("cp.async.mbarrier.arrive.noinc"),
                "{name} ({arch})"
            );
            let wait = match arch {
                Arch::Sm90 => "mbarrier.try_wait.shared.b64",
                Arch::Sm80 => "mbarrier.test_wait.shared.b64",
            };
            assert!(
                view.ptx.iter().any(|i| i.opcode == wait),
                "{name} ({arch}) lacks {wait}"
            );
        }
    }
}

/// The library styles must compile to what their raw-PTX counterparts compile to: the same
/// async-copy and synchronization instructions, and about as many instructions in all.
#[test]
fn library_styles_lower_like_their_raw_counterparts() {
    use gpu::study::Style::{BlockPipeline, ThreadPipeline};
    for arch in Arch::ALL {
        for k in study_kernels(ThreadPipeline).chain(study_kernels(BlockPipeline)) {
            let raw = host::study::raw_counterpart(k).expect("a raw counterpart");
            let (lib_view, raw_view) = (kernel(arch, k.name), kernel(arch, raw.name));
            assert_eq!(
                lib_view.sass_async_ops(),
                raw_view.sass_async_ops(),
                "{} vs {} ({arch})",
                k.name,
                raw.name
            );
            let (lib_len, raw_len) = (sass_ops(lib_view).len(), sass_ops(raw_view).len());
            assert!(
                lib_len.abs_diff(raw_len) * 100 <= raw_len * 8,
                "{} has {lib_len} SASS instructions, {} has {raw_len} ({arch})",
                k.name,
                raw.name
            );
        }
    }
}

/// Block-scope pipelines fill their first pass without waiting: a fresh buffer is free, and a
/// parity wait for the phase before phase 0 (correct on the hardware) makes racecheck report
/// every later refill as a race (see `gpu::pipeline::BlockPipeline`). In kernels where every
/// thread produces, no mbarrier wait comes before the first copy is committed.
#[test]
fn block_pipelines_commit_copies_before_any_wait() {
    use gpu::copy_test::{COPY_TEST_KERNELS, CopyForm};
    use gpu::study::Style::{BlockPipeline, RawMbarrier};
    let names = study_kernels(RawMbarrier)
        .chain(study_kernels(BlockPipeline))
        .map(|k| k.name)
        .chain(
            COPY_TEST_KERNELS
                .iter()
                .filter(|k| matches!(k.form, CopyForm::BlockPipeline | CopyForm::ZeroFill))
                .map(|k| k.name),
        );
    for name in names {
        for arch in Arch::ALL {
            let ptx = &kernel(arch, name).ptx;
            let first = |prefix: &str| ptx.iter().position(|i| i.opcode.starts_with(prefix));
            let commit = first("cp.async.mbarrier.arrive").expect("a copy commit");
            let wait = first("mbarrier.try_wait")
                .or_else(|| first("mbarrier.test_wait"))
                .expect("a wait");
            assert!(
                commit < wait,
                "{name} ({arch}) waits (instruction {wait}) before its first commit ({commit})"
            );
        }
    }
}
