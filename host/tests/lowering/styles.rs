//! The completion styles and copies: what each pipeline, barrier and copy size lowers to.

use super::*;

/// The operands of a PTX instruction, split at the commas outside `{ }` and `[ ]`.
pub(crate) fn operands(instr: &PtxInstr) -> Vec<&str> {
    let text = instr.operands.as_str();
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        parts.push(text[start..].trim());
    }
    parts
}

/// The shared-memory accesses of a kernel whose address is the dynamic shared memory's base
/// (`mov.u32 r, DYNAMIC_SHARED`) plus a constant: (opcode, byte offset), in program order.
/// Follows `mov` copies and `add`s of immediates; an address with a run-time part is not
/// listed.
pub(crate) fn constant_dynamic_shared_accesses(view: &KernelView) -> Vec<(String, i64)> {
    use std::collections::HashMap;
    let mut base: HashMap<String, i64> = HashMap::new();
    let mut accesses = Vec::new();
    for instr in &view.ptx {
        let ops = operands(instr);
        let op = instr.opcode.as_str();
        let offset = |o: &str| base.get(o).copied();
        let derived = match (op, ops.as_slice()) {
            ("mov.u32" | "mov.b32", [_, "DYNAMIC_SHARED"]) => Some(0),
            ("mov.u32" | "mov.b32", [_, src]) => offset(src),
            ("add.s32" | "add.u32", [_, a, b]) => match (offset(a), b.parse::<i64>()) {
                (Some(o), Ok(imm)) => Some(o + imm),
                _ => match (a.parse::<i64>(), offset(b)) {
                    (Ok(imm), Some(o)) => Some(o + imm),
                    _ => None,
                },
            },
            _ => None,
        };
        for o in &ops {
            let Some(address) = o.strip_prefix('[').and_then(|a| a.strip_suffix(']')) else {
                continue;
            };
            let (register, imm) = match address.split_once('+') {
                Some((r, imm)) => (r.trim(), imm.trim().parse::<i64>().ok()),
                None => (address.trim(), Some(0)),
            };
            if let (Some(at), Some(imm)) = (offset(register), imm) {
                accesses.push((instr.opcode.clone(), at + imm));
            }
        }
        // The destination, if the instruction writes a register, holds something else now.
        if let Some(dest) = ops.first().filter(|d| d.starts_with('%')) {
            match derived {
                Some(o) => base.insert(dest.to_string(), o),
                None => base.remove(*dest),
            };
        }
    }
    accesses
}

/// A study kernel's shared memory is only the dynamic shared memory its registry entry asks
/// the launch for: ptxas charges it no static shared memory, it names the dynamic block, every
/// access at a constant offset from the block's base lies inside the registered bytes, and the
/// kernels with stage barriers initialize exactly the `2 * stages` mbarriers of the registered
/// layout, where the layout puts them (after the stage buffers). Accesses at run-time offsets
/// (the stage buffers) are bounded by the GPU tests under compute-sanitizer, not here.
#[test]
fn study_kernels_use_only_the_dynamic_shared_memory_they_register() {
    for arch in Arch::PORTABLE {
        for k in study_kernels_of(arch) {
            let view = kernel(arch, k.name);
            let r = view.resources.as_ref().expect("resources");
            assert_eq!(
                r.shared_bytes, 0,
                "{} ({arch}) has static shared memory",
                k.name
            );
            let registered = harness::experiment::Experiment::shared_bytes(k)
                .expect("a study kernel registers its dynamic shared memory");
            let layout = k.shared();
            assert_eq!(registered, layout.bytes, "{}: registry vs layout", k.name);
            assert!(
                view.ptx
                    .iter()
                    .any(|i| i.opcode.starts_with("mov") && i.operands.ends_with("DYNAMIC_SHARED")),
                "{} ({arch}) never takes the dynamic shared memory's address",
                k.name
            );
            let accesses = constant_dynamic_shared_accesses(view);
            for (op, at) in &accesses {
                assert!(
                    (0..i64::from(registered)).contains(at),
                    "{} ({arch}): `{op}` at byte {at} of a {registered}-byte registration",
                    k.name
                );
                if op.starts_with("mbarrier") {
                    assert!(
                        *at >= i64::from(layout.barriers_offset) && at % 8 == 0,
                        "{} ({arch}): `{op}` at byte {at}, outside the barriers (from byte {})",
                        k.name,
                        layout.barriers_offset
                    );
                }
            }
            let mut inits: Vec<i64> = accesses
                .iter()
                .filter(|(op, _)| op == "mbarrier.init.shared.b64")
                .map(|&(_, at)| at)
                .collect();
            inits.sort();
            let expected: Vec<i64> = if k.style.has_stage_barriers() {
                (0..2 * k.stages)
                    .map(|i| i64::from(layout.barriers_offset + 8 * i))
                    .collect()
            } else {
                Vec::new()
            };
            assert_eq!(
                inits, expected,
                "{} ({arch}): mbarrier.init offsets",
                k.name
            );
        }
    }
}

#[test]
fn thread_scope_lowers_to_async_groups_and_no_mbarrier() {
    use workloads::study::Style::{RawAsyncGroup, ThreadPipeline};
    for arch in Arch::PORTABLE {
        for k in study_kernels(RawAsyncGroup).chain(study_kernels(ThreadPipeline)) {
            let view = kernel(arch, k.name);
            let waits: Vec<String> = view
                .ptx
                .iter()
                .filter(|i| i.opcode == "cp.async.wait_group")
                .map(|i| i.operands.clone())
                .collect();
            // One wait per step, for the oldest of the STAGES committed groups: an immediate
            // folded from the pipeline's run-time count. Three step bodies: the loop runs
            // steps in pairs, then the odd one out.
            let immediate = (k.stages - 1).to_string();
            assert_eq!(waits, vec![immediate; 3], "{} ({arch})", k.name);
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
    use workloads::study::Style::{BlockPipeline, RawMbarrier, SplitBarrier, WarpSpecialized};
    for arch in Arch::PORTABLE {
        let kernels = study_kernels(RawMbarrier)
            .chain(study_kernels(BlockPipeline))
            .chain(study_kernels(WarpSpecialized))
            .chain(study_kernels(SplitBarrier));
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
                Arch::Sm90 | Arch::Sm90a => {
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
    for arch in Arch::PORTABLE {
        let view = kernel(arch, "sync_baseline");
        assert!(!view.has_ptx("cp.async"));
        assert!(!view.has_ptx("mbarrier"));
        let bars = view
            .ptx
            .iter()
            .filter(|i| i.opcode == "barrier.sync")
            .count();
        // Two per step, in three step bodies (the unrolled pair, then the odd one out).
        assert_eq!(bars, 2 * 3, "two block barriers per step");
        assert!(!has_sass(view, "LDGSTS"));
    }
}

#[test]
fn aligned_sizes_select_the_copy_instruction() {
    for arch in Arch::PORTABLE {
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
    // The zero-filling copies: whole chunks plain (from the source, or from the zero chunk
    // past its end), and the chunk the source ends in one 4-byte word at a time, the last
    // word with `src-size` — so no copy reads past the source (memcheck-clean).
    for arch in Arch::PORTABLE {
        for (name, whole) in [
            ("copy_zfill_4", "cp.async.ca.shared.global 4"),
            ("copy_zfill_8", "cp.async.ca.shared.global 8"),
            ("copy_zfill_16", "cp.async.cg.shared.global 16"),
        ] {
            let view = kernel(arch, name);
            let copies: Vec<String> = view
                .ptx
                .iter()
                .filter(|i| i.opcode.starts_with("cp.async.c"))
                .map(host::inspect::ptx_key)
                .collect();
            let word = "cp.async.ca.shared.global 4, src-size";
            // 4-byte chunks of whole floats never end inside the source: no word copies.
            let words_expected = whole != "cp.async.ca.shared.global 4";
            assert!(
                copies.iter().any(|c| c == whole)
                    && copies.iter().any(|c| c == word) == words_expected,
                "{name} ({arch}): {copies:?}"
            );
            assert!(
                copies.iter().all(|c| c == whole || c == word),
                "{name} ({arch}): {copies:?}"
            );
            assert!(
                view.ptx
                    .iter()
                    .any(|i| i.opcode == "cvta.global.u64" && i.operands.contains("GPU_ZERO_CHUNK")),
                "{name} ({arch}) never reads the zero chunk"
            );
        }
    }
}

#[test]
fn barrier_copies_bind_with_noinc_and_wait_on_tokens() {
    for arch in Arch::PORTABLE {
        for name in ["copy_barrier_4", "copy_barrier_group"] {
            let view = kernel(arch, name);
            assert!(
                view.has_ptx("cp.async.mbarrier.arrive.noinc"),
                "{name} ({arch})"
            );
            let wait = match arch {
                Arch::Sm90 | Arch::Sm90a => "mbarrier.try_wait.shared.b64",
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
    use workloads::study::Style::{BlockPipeline, ThreadPipeline};
    for arch in Arch::PORTABLE {
        for k in study_kernels(ThreadPipeline).chain(study_kernels(BlockPipeline)) {
            let raw = harness::experiment::Experiment::counterpart(k).expect("a raw counterpart");
            let (lib_view, raw_view) = (kernel(arch, k.name), kernel(arch, raw.name()));
            assert_eq!(
                lib_view.sass_async_ops(),
                raw_view.sass_async_ops(),
                "{} vs {} ({arch})",
                k.name,
                raw.name()
            );
            let (lib_len, raw_len) = (sass_ops(lib_view).len(), sass_ops(raw_view).len());
            assert!(
                lib_len.abs_diff(raw_len) * 100 <= raw_len * 8,
                "{} has {lib_len} SASS instructions, {} has {raw_len} ({arch})",
                k.name,
                raw.name()
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
    use workloads::selftest::{COPY_KERNELS, CopyForm};
    use workloads::study::Style::{BlockPipeline, RawMbarrier};
    let names = study_kernels(RawMbarrier)
        .chain(study_kernels(BlockPipeline))
        .map(|k| k.name)
        .chain(
            COPY_KERNELS
                .iter()
                .filter(|k| {
                    matches!(
                        k.form,
                        CopyForm::BlockPipeline { .. } | CopyForm::ZeroFill { .. }
                    )
                })
                .map(|k| k.name),
        );
    for name in names {
        for arch in Arch::PORTABLE {
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
