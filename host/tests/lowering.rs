//! What the device code lowers to, checked without a GPU: every PTX module is assembled by
//! NVIDIA's ptxas for its arch, every registered kernel is in it, and each abstraction emits
//! the instructions it documents — in PTX and in SASS.
//!
//! These tests need ptxas and cuobjdump (`bash .ci/run` installs them from PyPI into
//! `.tools/`); without them they fail, saying so, rather than pass without checking.

use host::inspect::{Inspection, KernelView, inspect};
use ptx_builder::Arch;
use ptx_builder::ptx_text::PtxInstr;
use std::sync::OnceLock;
use workloads::stream::StreamStyle;

/// The inspection of each arch, assembled once per test binary.
fn inspection(arch: Arch) -> &'static Inspection {
    static CACHE: [OnceLock<Inspection>; Arch::ALL.len()] =
        [const { OnceLock::new() }; Arch::ALL.len()];
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
    style: workloads::study::Style,
) -> impl Iterator<Item = &'static workloads::study::StudyKernel> {
    workloads::study::STUDY_KERNELS
        .iter()
        .filter(move |k| k.style == style)
}

/// The study kernels an arch's PTX holds (the tensor style is sm_90 only).
fn study_kernels_of(arch: Arch) -> impl Iterator<Item = &'static workloads::study::StudyKernel> {
    workloads::study::STUDY_KERNELS
        .iter()
        .filter(move |k| arch == Arch::Sm90 || !k.style.needs_sm90())
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
    for arch in Arch::PORTABLE {
        // Every kernel of ours in the registry that this arch's PTX holds (library calls such
        // as cuBLAS have none), and the helper kernels workloads launch besides (references,
        // the GPU-side checks, which several workloads share: listed once).
        let mut registered: Vec<&str> = host::registry::all_experiments()
            .filter(|(_, e)| e.archs().contains(&arch))
            .flat_map(|(_, e)| e.entry_points())
            .chain(host::registry::WORKLOADS.iter().flat_map(|w| {
                w.helper_kernels()
                    .iter()
                    .copied()
                    .filter(move |&h| w.helper_kernel_archs(h).contains(&arch))
            }))
            .collect();
        registered.sort();
        registered.dedup();
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

/// Kernels allowed to use local memory, and why: ptxas output on one arch only. None today
/// (the sync GEMM's 44 / 56 spilled bytes went with A's k-major layout); a new spill anywhere
/// fails the test below until it is understood and recorded here.
const KNOWN_SPILLS: &[(&str, Arch, &str)] = &[];

#[test]
fn no_kernel_spills_or_needs_a_stack() {
    for arch in Arch::PORTABLE {
        for (name, k) in &inspection(arch).kernels {
            if KNOWN_SPILLS.iter().any(|(n, a, _)| n == name && *a == arch) {
                continue;
            }
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
    for arch in Arch::PORTABLE {
        for k in study_kernels_of(arch) {
            let view = kernel(arch, k.name);
            assert!(!view.has_ptx("trap"), "{} ({arch}) can trap", k.name);
            assert!(!has_sass(view, "BPT"), "{} ({arch}) can trap", k.name);
        }
    }
}

/// The operands of a PTX instruction, split at the commas outside `{ }` and `[ ]`.
fn operands(instr: &PtxInstr) -> Vec<&str> {
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
fn constant_dynamic_shared_accesses(view: &KernelView) -> Vec<(String, i64)> {
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

/// What an instruction wrapper leaves in the PTX, told apart from what every other wrapper
/// leaves, so that a row of the table below fails when its own wrapper's uses go. Every form
/// but [`Emits::Intrinsic`] is looked for among the instructions that came from inline asm
/// (LLVM's `// begin inline asm` ... `// end inline asm`), so code that LLVM generates with
/// the same instruction (a plain 16-byte store is `st.global.v4.b32` too) does not count.
#[derive(Clone, Copy, Debug)]
enum Emits {
    /// An instruction with exactly this opcode.
    Op(&'static str),
    /// An instruction with exactly this opcode and this many operands: for wrappers that share
    /// an opcode (the zero-filling copies' extra source-size operand, the named barrier's
    /// thread count).
    OpWith(&'static str, usize),
    /// Any of these opcodes: a wrapper generic over the value it moves.
    AnyOf(&'static [&'static str]),
    /// `mov.u32 r, REG;` of this special register.
    Reads(&'static str),
    /// A loop whose whole body is this wait (its result branching back to it): the blocking
    /// waits, `while !wait() {}`, apart from a single non-blocking test of the same
    /// instruction.
    SpinLoop(&'static str),
    /// An instruction with exactly this opcode, from an LLVM intrinsic rather than inline asm.
    Intrinsic(&'static str),
}

/// The instructions of each kernel of `arch`'s PTX that came from inline asm.
fn asm_instructions(arch: Arch) -> &'static std::collections::BTreeMap<String, Vec<PtxInstr>> {
    static CACHE: [OnceLock<std::collections::BTreeMap<String, Vec<PtxInstr>>>; Arch::ALL.len()] =
        [const { OnceLock::new() }; Arch::ALL.len()];
    let slot = &CACHE[Arch::ALL.iter().position(|&a| a == arch).expect("an arch")];
    slot.get_or_init(|| {
        // Each kernel's inline-asm lines, as the body of a kernel of their own, for the PTX
        // reader to split into instructions.
        let mut only_asm = String::new();
        let (mut in_kernel, mut in_asm) = (false, false);
        for line in host::device_code::module_text(arch).lines() {
            let code = line.trim();
            if let Some(rest) = code
                .strip_prefix(".visible .entry ")
                .or_else(|| code.strip_prefix(".entry "))
            {
                if in_kernel {
                    only_asm.push_str("}\n");
                }
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                only_asm.push_str(&format!(".entry {name}()\n{{\n"));
                in_kernel = true;
            } else if code.contains(".func ") && in_kernel {
                only_asm.push_str("}\n");
                in_kernel = false;
            } else if code == "// begin inline asm" {
                in_asm = true;
            } else if code == "// end inline asm" {
                in_asm = false;
            } else if in_asm && in_kernel {
                only_asm.push_str(line);
                only_asm.push('\n');
            }
        }
        if in_kernel {
            only_asm.push_str("}\n");
        }
        ptx_builder::ptx_text::kernel_instructions(&only_asm)
    })
}

/// The wait instructions that are the whole body of a loop in any kernel of `arch`'s PTX:
/// a label, the wait's inline-asm scope, a `setp` on its result and a branch back to the
/// label, with no other branch and no other label in between.
fn spin_loop_waits(arch: Arch) -> &'static std::collections::BTreeSet<String> {
    static CACHE: [OnceLock<std::collections::BTreeSet<String>>; Arch::ALL.len()] =
        [const { OnceLock::new() }; Arch::ALL.len()];
    let slot = &CACHE[Arch::ALL.iter().position(|&a| a == arch).expect("an arch")];
    slot.get_or_init(|| {
        let module =
            ptx_builder::fingerprint::ModuleFingerprints::new(host::device_code::module_text(arch));
        let mut waits = std::collections::BTreeSet::new();
        for name in module.kernels() {
            let text = module.normal_form(name).expect("a kernel");
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let Some(label) = line.strip_suffix(" :") else {
                    continue;
                };
                let branch = |l: &str| l.split(' ').any(|t| t == "bra" || t.starts_with("bra."));
                let back = format!(" {label} ;");
                let Some(len) = lines[i + 1..]
                    .iter()
                    .take(8)
                    .position(|l| branch(l) && l.ends_with(&back))
                else {
                    continue;
                };
                let body = &lines[i + 1..i + 1 + len];
                let wait: Vec<&str> = body
                    .iter()
                    .filter(|l| l.starts_with("mbarrier.") && l.contains("wait"))
                    .map(|l| l.split(' ').next().unwrap_or(""))
                    .collect();
                let exits = body.iter().any(|l| branch(l) || l.ends_with(" :"));
                if let ([wait], false) = (wait.as_slice(), exits) {
                    waits.insert(wait.to_string());
                }
            }
        }
        waits
    })
}

/// Whether some kernel of `arch`'s PTX holds what `emits` describes.
fn emitted(arch: Arch, emits: Emits) -> bool {
    let kernels = || asm_instructions(arch).values().flatten();
    match emits {
        Emits::Intrinsic(op) => inspection(arch)
            .kernels
            .values()
            .any(|k| k.ptx.iter().any(|i| i.opcode == op)),
        Emits::Op(op) => kernels().any(|i| i.opcode == op),
        Emits::OpWith(op, n) => kernels().any(|i| i.opcode == op && operands(i).len() == n),
        Emits::AnyOf(ops) => kernels().any(|i| ops.contains(&i.opcode.as_str())),
        Emits::Reads(reg) => {
            kernels().any(|i| i.opcode == "mov.u32" && operands(i).last() == Some(&reg))
        }
        Emits::SpinLoop(op) => spin_loop_waits(arch).contains(op),
    }
}

/// Every wrapper of the instruction layer (`gpu/src/ptx/`) is used by some kernel, so ptxas
/// assembles each one in CI: for each wrapper, what it must leave in the PTX of some kernel
/// ([`Emits`]: the full instruction form, precise enough that no other wrapper's use leaves
/// it). A wrapper missing from this table fails the test: a new instruction comes with a use.
///
/// Wrappers built on another one and its only caller (`read` on `load_shared`,
/// `as_generic_ptr` on `shared_to_generic`, the blocking waits on the sm_90 `try_wait`s) leave
/// the same instructions and fail together. On sm_80 the blocking waits are loops around the
/// same `test_wait`s that the non-blocking wrappers emit, so those are checked on sm_90,
/// where only a direct use emits them.
#[test]
fn every_instruction_wrapper_is_assembled_in_some_kernel() {
    use Emits::{AnyOf, Intrinsic, Op, OpWith, Reads, SpinLoop};
    // (wrapper, what it emits, archs whose PTX must contain it)
    const BOTH: &[Arch] = &[Arch::Sm80, Arch::Sm90];
    const SM90: &[Arch] = &[Arch::Sm90];
    const SM80: &[Arch] = &[Arch::Sm80];
    const SM90A: &[Arch] = &[Arch::Sm90a];
    let table: &[(&str, Emits, &[Arch])] = &[
        ("cp_async_ca", OpWith("cp.async.ca.shared.global", 3), BOTH),
        ("cp_async_cg", OpWith("cp.async.cg.shared.global", 3), BOTH),
        (
            "cp_async_ca_zfill",
            OpWith("cp.async.ca.shared.global", 4),
            BOTH,
        ),
        (
            "cp_async_cg_zfill",
            OpWith("cp.async.cg.shared.global", 4),
            BOTH,
        ),
        ("commit_group", Op("cp.async.commit_group"), BOTH),
        ("wait_group", Op("cp.async.wait_group"), BOTH),
        ("wait_all", Op("cp.async.wait_all"), BOTH),
        (
            "cp_async_mbarrier_arrive",
            Op("cp.async.mbarrier.arrive.shared.b64"),
            BOTH,
        ),
        (
            "cp_async_mbarrier_arrive_noinc",
            Op("cp.async.mbarrier.arrive.noinc.shared.b64"),
            BOTH,
        ),
        ("mbarrier_init", Op("mbarrier.init.shared.b64"), BOTH),
        ("mbarrier_inval", Op("mbarrier.inval.shared.b64"), BOTH),
        ("mbarrier_arrive", Op("mbarrier.arrive.shared.b64"), BOTH),
        (
            "mbarrier_arrive_drop",
            Op("mbarrier.arrive_drop.shared.b64"),
            BOTH,
        ),
        (
            "mbarrier_pending_count",
            Op("mbarrier.pending_count.b64"),
            BOTH,
        ),
        (
            "mbarrier_test_wait",
            Op("mbarrier.test_wait.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_test_wait_parity",
            Op("mbarrier.test_wait.parity.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_try_wait",
            Op("mbarrier.try_wait.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_try_wait_parity",
            Op("mbarrier.try_wait.parity.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_wait",
            SpinLoop("mbarrier.test_wait.shared.b64"),
            SM80,
        ),
        (
            "mbarrier_wait",
            SpinLoop("mbarrier.try_wait.shared.b64"),
            SM90,
        ),
        (
            "mbarrier_wait_parity",
            SpinLoop("mbarrier.test_wait.parity.shared.b64"),
            SM80,
        ),
        (
            "mbarrier_wait_parity",
            SpinLoop("mbarrier.try_wait.parity.shared.b64"),
            SM90,
        ),
        ("trap", Op("trap"), BOTH),
        ("fma_f32", Intrinsic("fma.rn.f32"), BOTH),
        (
            "atom_add_relaxed_gpu",
            Op("atom.relaxed.gpu.global.add.u32"),
            BOTH,
        ),
        (
            "atom_add_acq_rel_gpu",
            Op("atom.acq_rel.gpu.global.add.u32"),
            BOTH,
        ),
        ("st_relaxed_gpu", Op("st.relaxed.gpu.global.u32"), BOTH),
        ("ld_global_v4", Op("ld.global.v4.b32"), BOTH),
        ("st_global_v4", Op("st.global.v4.b32"), BOTH),
        ("as_generic_ptr", Op("cvta.shared.u64"), BOTH),
        ("shared_to_generic", Op("cvta.shared.u64"), BOTH),
        ("read", AnyOf(&["ld.shared.b32", "ld.shared.v4.b32"]), BOTH),
        ("write", AnyOf(&["st.shared.b32", "st.shared.v4.b32"]), BOTH),
        // One row per `SharedValue` implementation: 4-byte scalars and `[f32; 4]`.
        ("load_shared", Op("ld.shared.b32"), BOTH),
        ("load_shared", Op("ld.shared.v4.b32"), BOTH),
        ("store_shared", Op("st.shared.b32"), BOTH),
        ("store_shared", Op("st.shared.v4.b32"), BOTH),
        ("thread_idx_x", Reads("%tid.x"), BOTH),
        ("block_dim_x", Reads("%ntid.x"), BOTH),
        ("block_idx_x", Reads("%ctaid.x"), BOTH),
        ("block_idx_y", Reads("%ctaid.y"), BOTH),
        ("grid_dim_x", Reads("%nctaid.x"), BOTH),
        ("block_dim_y", Reads("%ntid.y"), BOTH),
        ("block_dim_z", Reads("%ntid.z"), BOTH),
        ("grid_dim_y", Reads("%nctaid.y"), BOTH),
        ("grid_dim_z", Reads("%nctaid.z"), BOTH),
        // gpu::math's instructions and gpu::reduce's, in the self-test's kernels.
        ("ex2_approx_ftz_f32", Op("ex2.approx.ftz.f32"), BOTH),
        ("ex2_approx_f32", Op("ex2.approx.f32"), BOTH),
        ("lg2_approx_ftz_f32", Op("lg2.approx.ftz.f32"), BOTH),
        ("rcp_approx_ftz_f32", Op("rcp.approx.ftz.f32"), BOTH),
        ("rcp_rn_f32", Op("rcp.rn.f32"), BOTH),
        ("rsqrt_approx_ftz_f32", Op("rsqrt.approx.ftz.f32"), BOTH),
        ("sqrt_rn_f32", Op("sqrt.rn.f32"), BOTH),
        ("tanh_approx_f32", Op("tanh.approx.f32"), BOTH),
        ("div_rn_f32", Op("div.rn.f32"), BOTH),
        ("shfl_sync_bfly_b32", Op("shfl.sync.bfly.b32"), BOTH),
        ("shfl_sync_down_b32", Op("shfl.sync.down.b32"), BOTH),
        ("redux_sync_add_u32", Op("redux.sync.add.u32"), BOTH),
        ("redux_sync_min_u32", Op("redux.sync.min.u32"), BOTH),
        ("redux_sync_max_u32", Op("redux.sync.max.u32"), BOTH),
        ("redux_sync_add_s32", Op("redux.sync.add.s32"), BOTH),
        ("redux_sync_min_s32", Op("redux.sync.min.s32"), BOTH),
        ("redux_sync_max_s32", Op("redux.sync.max.s32"), BOTH),
        ("zero_chunk", Op("cvta.global.u64"), BOTH),
        ("lane_id", Reads("%laneid"), BOTH),
        ("barrier_sync", OpWith("barrier.sync", 1), BOTH),
        ("barrier_sync_threads", OpWith("barrier.sync", 2), BOTH),
        ("barrier_sync_named", OpWith("barrier.sync", 2), SM90),
        ("shfl_sync_idx", Op("shfl.sync.idx.b32"), BOTH),
        ("syncwarp", Op("bar.warp.sync"), SM90),
        (
            "cp_async_bulk_global_to_shared",
            Op("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
            SM90,
        ),
        (
            "cp_async_bulk_shared_to_global",
            Op("cp.async.bulk.global.shared::cta.bulk_group"),
            SM90,
        ),
        ("bulk_commit_group", Op("cp.async.bulk.commit_group"), SM90),
        (
            "bulk_wait_group_read",
            Op("cp.async.bulk.wait_group.read"),
            SM90,
        ),
        ("bulk_wait_group", Op("cp.async.bulk.wait_group"), SM90),
        (
            "mbarrier_expect_tx",
            Op("mbarrier.expect_tx.relaxed.cta.shared::cta.b64"),
            SM90,
        ),
        (
            "mbarrier_arrive_expect_tx",
            Op("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64"),
            SM90,
        ),
        (
            "fence_proxy_async_shared",
            Op("fence.proxy.async.shared::cta"),
            SM90,
        ),
        (
            "fence_mbarrier_init",
            Op("fence.mbarrier_init.release.cluster"),
            SM90,
        ),
        ("elect_one", Op("elect.sync"), SM90),
        (
            "cp_async_bulk_tensor_global_to_shared",
            Op("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"),
            SM90,
        ),
        (
            "cp_async_bulk_tensor_global_to_shared_multicast",
            Op(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
            ),
            SM90A,
        ),
        (
            "cp_async_bulk_tensor_shared_to_global",
            Op("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"),
            SM90,
        ),
        ("prefetch_tensormap", Op("prefetch.tensormap"), SM90),
        (
            "l2_policy_evict_first",
            Op("createpolicy.fractional.L2::evict_first.b64"),
            SM90,
        ),
        (
            "cp_async_bulk_global_to_shared_l2_hint",
            Op("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"),
            SM90,
        ),
        (
            "cp_async_bulk_shared_to_global_l2_hint",
            Op("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint"),
            SM90,
        ),
        (
            "setmaxnreg_inc",
            Op("setmaxnreg.inc.sync.aligned.u32"),
            SM90A,
        ),
        (
            "setmaxnreg_dec",
            Op("setmaxnreg.dec.sync.aligned.u32"),
            SM90A,
        ),
        ("pack_bf16x2", Op("cvt.rn.bf16x2.f32"), SM90A),
        (
            "ldmatrix_x4",
            Op("ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
            SM90A,
        ),
        (
            "stmatrix_x4",
            Op("stmatrix.sync.aligned.m8n8.x4.shared.b16"),
            SM90A,
        ),
        // Thread block clusters (sm_90: the DSMEM workload uses every one).
        ("cluster_ctarank", Reads("%cluster_ctarank"), SM90),
        ("cluster_nctarank", Reads("%cluster_nctarank"), SM90),
        ("cluster_id_x", Reads("%clusterid.x"), SM90),
        ("cluster_ctaid_x", Reads("%cluster_ctaid.x"), SM90),
        ("is_explicit_cluster", Op("mov.pred"), SM90),
        (
            "barrier_cluster_arrive_release",
            Op("barrier.cluster.arrive.release.aligned"),
            SM90,
        ),
        (
            "barrier_cluster_arrive_relaxed",
            Op("barrier.cluster.arrive.relaxed.aligned"),
            SM90,
        ),
        (
            "barrier_cluster_wait",
            Op("barrier.cluster.wait.acquire.aligned"),
            SM90,
        ),
        ("mapa", Op("mapa.shared::cluster.u32"), SM90),
        ("load_cluster", Op("ld.shared::cluster.b32"), SM90),
        ("load_cluster", Op("ld.shared::cluster.v4.b32"), SM90),
        ("store_cluster", Op("st.shared::cluster.v4.b32"), SM90),
        (
            "st_async_v4_b32",
            Op("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32"),
            SM90,
        ),
        (
            "red_async_add_u32",
            Op("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32"),
            SM90,
        ),
        (
            "mbarrier_arrive_cluster",
            Op("mbarrier.arrive.release.cluster.shared::cluster.b64"),
            SM90,
        ),
        (
            "mbarrier_arrive_cluster_cta",
            Op("mbarrier.arrive.release.cta.shared::cluster.b64"),
            SM90A,
        ),
        (
            "mbarrier_try_wait_parity_acquire_cluster",
            SpinLoop("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64"),
            SM90,
        ),
        ("fence_acq_rel_cluster", Op("fence.acq_rel.cluster"), SM90),
        (
            "cp_async_bulk_shared_to_cluster",
            Op("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"),
            SM90,
        ),
        (
            "cp_async_bulk_global_to_shared_multicast",
            Op(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
            ),
            SM90,
        ),
        ("clock64", Op("mov.u64"), SM90),
        ("ld_global_cg_u32", Op("ld.global.cg.b32"), SM90),
        ("ld_global_cg_v4", Op("ld.global.cg.v4.b32"), SM90),
        // The fused k-tile multiplies are macro-made (one per shape and type); the shape the
        // GEMM uses is checked here, its fence/commit/wait by the accumulator-rule test.
        (
            "wgmma_m64n256k64_bf16",
            Op("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"),
            SM90A,
        ),
    ];
    // The wrappers defined in the instruction layer's sources.
    let dir = ptx_builder::workspace_root().join("gpu/src/ptx");
    let mut defined = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("gpu/src/ptx") {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            let line = line.trim_start();
            let name = if let Some(rest) = line
                .strip_prefix("pub fn ")
                .or_else(|| line.strip_prefix("pub unsafe fn "))
                .or_else(|| line.strip_prefix("pub const unsafe fn "))
                .or_else(|| line.strip_prefix("pub const fn "))
                .or_else(|| line.strip_prefix("unsafe fn "))
            {
                rest
            } else if line.contains(" => \"") {
                line // special_register! / wait_instruction! / unary_f32! / shfl! / redux!
            } else {
                continue;
            };
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `scalar_shared_value!`'s rows name types, not wrappers.
            if matches!(name.as_str(), "u32" | "i32" | "f32") {
                continue;
            }
            // Constructors and plain address arithmetic emit nothing of their own; `load` /
            // `store` / `load_multicast` are the per-rank halves of the tensor-copy wrappers.
            if ![
                "from_addr",
                "from_generic_address",
                "from_bits",
                "bits",
                "addr",
                "add",
                "cast",
                "load",
                "store",
                "load_multicast",
                "",
            ]
            .contains(&name.as_str())
            {
                defined.push(name);
            }
        }
    }
    for name in &defined {
        assert!(
            table.iter().any(|(w, _, _)| w == name),
            "ptx wrapper `{name}` has no entry here: add what it emits, and a kernel using it"
        );
    }
    for &(wrapper, emits, archs) in table {
        for &arch in archs {
            assert!(
                emitted(arch, emits),
                "`{wrapper}` ({emits:?}) is in no kernel of the {arch} PTX"
            );
        }
    }
}

/// The `cp.async` and sync GEMM families (both archs): both entry points of each, with the
/// family and the copy size.
fn gemm_entries() -> impl Iterator<Item = (&'static workloads::gemm::GemmKernel, &'static str, u32)>
{
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
    assert_eq!((families, in_block), (4, 3));
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

/// Every BF16 GEMM entry point, with its family, whether it stores C by tensor copies and
/// whether it is warp-specialized (a producer warpgroup).
fn bf16_entries() -> Vec<(
    &'static workloads::bf16_gemm::Bf16Kernel,
    &'static str,
    bool,
    bool,
)> {
    use workloads::bf16_gemm::Bf16Style;
    workloads::bf16_gemm::BF16_KERNELS
        .iter()
        .flat_map(|k| {
            let specialized = matches!(k.style, Bf16Style::WsCooperative | Bf16Style::WsPingpong);
            let [tensor_store, direct] = k.entries.names();
            [
                (k, tensor_store, true, specialized),
                (k, direct, false, specialized),
            ]
        })
        .collect()
}

/// The tensor-core kernels are in the sm_90a module only, and lower to what they document:
/// `HGMMA.64x256x16.F32.BF16` fed by `UTMALDG` (by 16-byte `LDGSTS` in the `cp_async` style),
/// A through `LDSM` where it is multiplied from registers, C staged by `STSM` and stored by
/// `UTMASTG` (tensor-store entry points) or stored by 16-byte `STG` (direct), `setmaxnreg` in the
/// warp-specialized ones (40 for the producer, 232 for the consumers), and no local memory —
/// the 128 accumulators stay in registers.
#[test]
fn tensor_core_kernels_lower_to_hgmma_fed_by_tma() {
    use workloads::bf16_gemm::{ASource, Bf16Style};
    for (family, entry, tensor_store, specialized) in bf16_entries() {
        for arch in Arch::PORTABLE {
            assert!(
                inspection(arch).kernel(entry).is_none(),
                "{entry} is in the {arch} PTX"
            );
        }
        let view = kernel(Arch::Sm90a, entry);
        let sass = sass_ops(view);
        assert!(
            sass.iter().any(|o| o == "HGMMA.64x256x16.F32.BF16"),
            "{entry}: {sass:?}"
        );
        let cp_async = family.style == Bf16Style::CpAsync;
        // Plain, or multicast in a cluster (a cluster sharing both tiles would have no plain one).
        assert_eq!(
            sass.iter().any(|o| o.starts_with("UTMALDG.2D")),
            !cp_async,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o == "LDGSTS.E.BYPASS.128"),
            cp_async,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o.starts_with("LDSM.16.M88.4")),
            family.a_source == ASource::Registers,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o.starts_with("STSM.16.M88.4")),
            tensor_store,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o == "UTMASTG.2D"),
            tensor_store,
            "{entry}"
        );
        assert_eq!(
            sass.iter().any(|o| o.starts_with("STG.E.128")),
            !tensor_store,
            "{entry}"
        );
        assert!(
            sass.iter().any(|o| o.starts_with("WARPGROUP.ARRIVE")),
            "{entry}"
        );
        let resources = view.resources.as_ref().expect("ptxas resources");
        if specialized {
            // The register split adds up only from 168 per thread at 384 threads:
            // (40 + 2 * 232) * 128 = 64512 = 384 * 168, so the consumers take exactly what the
            // producer gives back. Assembled with fewer, the block would be launched with fewer
            // and `setmaxnreg.inc` would wait for registers it never gets.
            assert_eq!(resources.registers, 168, "{entry}");
        }
        assert_eq!(
            (
                resources.stack_frame_bytes,
                resources.spill_store_bytes,
                resources.spill_load_bytes
            ),
            (0, 0, 0),
            "{entry}: local memory"
        );
        assert!(
            !sass
                .iter()
                .any(|o| o.starts_with("LDL") || o.starts_with("STL")),
            "{entry}: local memory"
        );
        let mut setmaxnreg: Vec<String> = view
            .ptx
            .iter()
            .filter(|i| i.opcode.starts_with("setmaxnreg"))
            .map(|i| format!("{} {}", i.opcode, i.operands))
            .collect();
        setmaxnreg.sort();
        if specialized {
            assert_eq!(
                setmaxnreg,
                [
                    "setmaxnreg.dec.sync.aligned.u32 40",
                    "setmaxnreg.inc.sync.aligned.u32 232"
                ],
                "{entry}"
            );
        } else {
            assert!(setmaxnreg.is_empty(), "{entry}: {setmaxnreg:?}");
        }
    }
}

/// The BF16 families that run in clusters share their tiles as documented: the kernel
/// declares its cluster (`.reqnctapercluster`, recorded in the entry point), copies its slice
/// of the shared tile with multicast tensor copies (`UTMALDG.2D.MULTICAST`), releases stages
/// to every block of its group with the CTA-scope remote arrival, and syncs the cluster at
/// the start and the end — so exactly two `MEMBAR.ALL.GPU`, those of the two cluster
/// barriers' release, none per stage. The single-block families have none of it.
#[test]
fn cluster_bf16_kernels_multicast_their_shared_tile() {
    use workloads::bf16_gemm::{Bf16Entries, TileCluster};
    let mut clustered = 0;
    for (family, entry, _, _) in bf16_entries() {
        let in_cluster = family.cluster != TileCluster::NONE;
        let view = kernel(Arch::Sm90a, entry);
        let sass = sass_ops(view);
        let declared = match &family.entries {
            Bf16Entries::TensorMaps {
                tensor_store,
                direct,
            } => [tensor_store.cluster(), direct.cluster()],
            Bf16Entries::Pointers {
                tensor_store,
                direct,
            } => [tensor_store.cluster(), direct.cluster()],
        };
        let expected = in_cluster.then_some([family.cluster.blocks(), 1, 1]);
        assert_eq!(declared, [expected, expected], "{entry}");
        assert_eq!(
            sass.iter().any(|o| o == "UTMALDG.2D.MULTICAST"),
            in_cluster,
            "{entry}"
        );
        for op in [
            "mbarrier.arrive.release.cta.shared::cluster.b64",
            "barrier.cluster.arrive.release.aligned",
            "barrier.cluster.wait.acquire.aligned",
            "mapa.shared::cluster.u32",
        ] {
            assert_eq!(view.has_ptx(op), in_cluster, "{entry}: {op}");
        }
        // The remote release must not be the cluster-scope one (a GPU-wide fence per stage).
        assert!(
            !view.has_ptx("mbarrier.arrive.release.cluster.shared::cluster.b64"),
            "{entry}"
        );
        let gpu_fences = sass.iter().filter(|o| *o == "MEMBAR.ALL.GPU").count();
        assert_eq!(gpu_fences, if in_cluster { 2 } else { 0 }, "{entry}");
        clustered += usize::from(in_cluster);
    }
    assert_eq!(clustered, 4);
}

/// Every tensor load of the cooperative `n x k` families is preceded by the `expect_tx` of the
/// bytes it brings this block: a whole tile for a plain copy, every receiver's slice for a
/// multicast one — so each stage expects its A tile (16 KiB) and its B tile (32 KiB) whichever
/// block copies them. 2 x 1: A local (16 KiB), B multicast (2 x 16 KiB); 1 x 2: A multicast
/// (2 x 8 KiB), B local; one block: both local.
#[test]
fn multicast_copies_expect_every_receivers_bytes() {
    use workloads::bf16_gemm::{ASource, BLayout, Bf16Style, TileCluster};
    let mut checked = 0;
    for (family, entry, _, _) in bf16_entries() {
        if family.style != Bf16Style::WsCooperative
            || family.b_layout != BLayout::NK
            || family.a_source != ASource::SharedMemory
        {
            continue;
        }
        let view = kernel(Arch::Sm90a, entry);
        // Constants moved into registers, for the expect_tx operand.
        let mut constants = std::collections::BTreeMap::new();
        let mut expected: Option<u64> = None;
        let mut loads = std::collections::BTreeSet::new();
        for i in &view.ptx {
            let ops = operands(i);
            if i.opcode == "mov.b32" && ops.len() == 2 {
                if let Ok(v) = ops[1].parse::<u64>() {
                    constants.insert(ops[0].to_string(), v);
                }
            } else if i.opcode == "mbarrier.expect_tx.relaxed.cta.shared::cta.b64" {
                let bytes = ops.last().expect("an operand");
                expected = Some(
                    bytes
                        .parse()
                        .ok()
                        .or_else(|| constants.get(*bytes).copied())
                        .unwrap_or_else(|| panic!("{entry}: expect_tx of {bytes}")),
                );
            } else if i
                .opcode
                .starts_with("cp.async.bulk.tensor.2d.shared::cluster.global")
            {
                let multicast = i.opcode.ends_with(".multicast::cluster");
                let bytes = expected
                    .take()
                    .unwrap_or_else(|| panic!("{entry}: a tensor load without its expect_tx"));
                loads.insert((multicast, bytes));
            }
        }
        let want: std::collections::BTreeSet<(bool, u64)> = match family.cluster {
            TileCluster { m: 2, n: 1 } => [(false, 16384), (true, 32768)].into(),
            TileCluster { m: 1, n: 2 } => [(true, 16384), (false, 32768)].into(),
            _ => [(false, 16384), (false, 32768)].into(),
        };
        assert_eq!(loads, want, "{entry}");
        checked += 1;
    }
    // ws_cooperative, _2x1 and _1x2, two entry points each.
    assert_eq!(checked, 6);
}

/// The accumulator rule (PTX ISA: no access to a `wgmma.mma_async`'s accumulator registers
/// until a `wgmma.wait_group` covers it): in every sm_90a kernel, from each `wgmma.fence` to
/// the `wgmma.wait_group 0` after it there is nothing but the four `wgmma.mma_async` of a
/// k-tile and their `wgmma.commit_group` — so no instruction of any kind, let alone one on an
/// accumulator, runs while a multiply is in flight — and the four multiplies name one and the
/// same accumulator registers (tied, not copied between them).
#[test]
fn no_instruction_touches_an_accumulator_while_a_wgmma_is_in_flight() {
    let (mut checked, mut register_a) = (0, 0);
    for (name, view) in &inspection(Arch::Sm90a).kernels {
        let ptx = &view.ptx;
        let mut i = 0;
        while i < ptx.len() {
            if ptx[i].opcode.starts_with("wgmma.mma_async") {
                panic!("{name}: a wgmma.mma_async outside a fence..wait region at {i}");
            }
            if ptx[i].opcode != "wgmma.fence.sync.aligned" {
                i += 1;
                continue;
            }
            let region: Vec<&PtxInstr> = ptx[i + 1..].iter().take(6).collect();
            let opcodes: Vec<&str> = region.iter().map(|r| r.opcode.as_str()).collect();
            assert_eq!(opcodes.len(), 6, "{name}: a fence at the end");
            assert!(
                opcodes[..4]
                    .iter()
                    .all(|o| o.starts_with("wgmma.mma_async.sync.aligned.m64n")),
                "{name}: {opcodes:?}"
            );
            assert_eq!(opcodes[4], "wgmma.commit_group.sync.aligned", "{name}");
            assert_eq!(opcodes[5], "wgmma.wait_group.sync.aligned", "{name}");
            assert_eq!(region[5].operands.trim(), "0", "{name}");
            let accumulators = |instr: &PtxInstr| {
                let ops = &instr.operands;
                ops[ops.find('{').expect("a register list")..=ops.find('}').expect("its end")]
                    .to_string()
            };
            let first = accumulators(region[0]);
            assert!(first.matches("%r").count() >= 32, "{name}: {first}");
            for mma in &region[1..4] {
                assert_eq!(accumulators(mma), first, "{name}: accumulators differ");
            }
            // A from registers: a second register list (four registers) before B's descriptor.
            let after = &region[0].operands[region[0].operands.find('}').unwrap() + 1..];
            if after.trim_start_matches([',', ' ']).starts_with('{') {
                register_a += 1;
            }
            checked += 1;
            i += 7;
        }
    }
    assert!(checked >= 4, "found {checked} wgmma regions");
    assert!(register_a >= 1, "no wgmma takes A from registers");
}

/// ptxas assembles the sm_90a module without a warning: in particular none saying that it
/// serialized `wgmma.mma_async` instructions (what it does when it cannot prove the
/// accumulators untouched between a multiply and its wait).
#[test]
fn ptxas_does_not_serialize_any_wgmma() {
    let ptxas = ptx_builder::nvtools::require(ptx_builder::nvtools::Tool::Ptxas)
        .unwrap_or_else(|e| panic!("ptxas is needed for this test: {e}"));
    let dir = std::env::temp_dir().join(format!("wgmma-warnings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("sm_90a.ptx");
    std::fs::write(&ptx, host::device_code::module_text(Arch::Sm90a)).unwrap();
    let output = std::process::Command::new(ptxas)
        .args(["-v", "-arch=sm_90a"])
        .arg(&ptx)
        .arg("-o")
        .arg(dir.join("sm_90a.cubin"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{report}");
    let warnings: Vec<&str> = report
        .lines()
        .filter(|l| l.to_lowercase().contains("warn"))
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(report.contains("bf16_gemm_ws_cooperative"), "{report}");
}

/// The cluster instructions (DSMEM, cluster barriers, remote arrivals, multicast) are in the
/// sm_90 PTX only: the sm_80 module has none, and none of the DSMEM kernels.
#[test]
fn cluster_instructions_are_in_the_sm90_ptx_only() {
    let marks = [
        "%cluster_",
        "%clusterid",
        "%is_explicit_cluster",
        "barrier.cluster.",
        "mapa.",
        "shared::cluster",
        "st.async",
        "red.async",
        "multicast::cluster",
        "fence.acq_rel.cluster",
    ];
    let sm80 = host::device_code::module_text(Arch::Sm80);
    for mark in marks {
        assert!(!sm80.contains(mark), "`{mark}` in the sm_80 PTX");
    }
    assert!(!sm80.contains("dsmem_"), "a DSMEM kernel in the sm_80 PTX");
    let sm90 = host::device_code::module_text(Arch::Sm90);
    for mark in marks {
        assert!(sm90.contains(mark), "`{mark}` missing from the sm_90 PTX");
    }
}
