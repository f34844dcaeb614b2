//! PTX fingerprints of the measured kernels, against the checked-in table
//! `host/tests/fingerprints.tsv`, which also says when, where and how each kernel was last
//! measured. A change that alters a measured kernel's code fails here until it is measured
//! again on the GPU and the table says so, in the same change: this is how a refactor (a new
//! kernel-declaration macro, a collective layer, moved modules) shows it cost nothing.
//!
//! # What is checked
//!
//! The kernels are those of every measured workload in the registry
//! ([`host::registry::WORKLOADS`]: each experiment's [`entry_points`] in each of its
//! [`archs`]), fingerprinted in the PTX the host embeds for that arch
//! ([`host::device_code::module_text`]); [`ptx_builder::fingerprint`] says what a fingerprint
//! covers and what it is blind to (register and label numbering, names, comments, layout).
//! Helper kernels that run inside the timed launches ([`timed_helper_kernels`]: a padding
//! copy) are in it too. Not in the table: the `selftest` workload (its kernels are tests,
//! never timed) and the other helper kernels ([`helper_kernels`]: references and hang
//! reports, launched outside the timed launches). The test fails, naming each kernel, when
//!
//! - a kernel's fingerprint differs from its row (arch, name, both fingerprints);
//! - a measured kernel has no row (new), or a row names a kernel that is no longer measured
//!   (gone) — a new kernel whose code equals a gone one's is pointed out as a likely rename;
//! - a row still says `UNMEASURED` (see below), or is malformed.
//!
//! # The table
//!
//! `#` lines are comments; every other line is one (arch, kernel), tab-separated:
//!
//! `arch  kernel  workload  fingerprint  measured_utc  device  source`
//!
//! `measured_utc` is when this code was last timed on a GPU, `YYYY-MM-DD HH:MM` in UTC, or
//! `UNMEASURED`; `device` is the GPU it ran on; `source` is the command that measured it.
//! The GPU is an H200 (sm_90): an sm_80 row records the measurement of the same source, whose
//! sm_90 module the H200 ran (`host run --ptx sm_80` runs the sm_80 PTX there when that is
//! wanted), so an sm_80-only change needs a measurement too.
//!
//! # When a kernel's code changed
//!
//! 1. Measure it on the GPU, in this same change.
//! 2. `FINGERPRINTS_WRITE=1 cargo test --release -p host --test fingerprints` rewrites the
//!    table from the current build: unchanged rows keep their measurement (so does a kernel
//!    renamed with its code unchanged, noted in its source column); changed and new rows get
//!    `UNMEASURED` in the date column, `-` as device and what changed as source; gone rows
//!    are dropped; the `#` comment lines are kept.
//! 3. Replace every `UNMEASURED` with the date, device and command of step 1 (by hand: this
//!    test cannot know them). Until then the test fails.
//!
//! `FINGERPRINTS_PTX_DIR=DIR` fingerprints `DIR/sm_80/gpu.ptx` and `DIR/sm_90/gpu.ptx`
//! instead of the embedded modules: the table was first written that way, from a copy of the
//! PTX of the measured binary. The unit tests at the end check the normaliser itself.
//!
//! [`entry_points`]: harness::experiment::Experiment::entry_points
//! [`archs`]: harness::experiment::Experiment::archs
//! [`helper_kernels`]: host::registry::AnyWorkload::helper_kernels
//! [`timed_helper_kernels`]: host::registry::AnyWorkload::timed_helper_kernels

use ptx_builder::Arch;
use ptx_builder::fingerprint::{Fingerprint, ModuleFingerprints, fnv1a64, kernel_fingerprints};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Workloads whose kernels are never timed.
const UNMEASURED_WORKLOADS: &[&str] = &["selftest"];
/// The date column of a row whose code has not been measured since it changed.
const UNMEASURED: &str = "UNMEASURED";
const COLUMNS: [&str; 7] = [
    "arch",
    "kernel",
    "workload",
    "fingerprint",
    "measured_utc",
    "device",
    "source",
];
/// The comment lines of a table written from scratch.
const DEFAULT_HEADER: &str = "\
# PTX fingerprints of the measured kernels: host/tests/fingerprints.rs checks them, and its
# module doc says what to do when one changes. Tab-separated; measured_utc is YYYY-MM-DD HH:MM
# (UTC) or UNMEASURED.
";

fn table_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fingerprints.tsv")
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    arch: Arch,
    kernel: String,
    workload: String,
    fingerprint: Fingerprint,
    measured_utc: String,
    device: String,
    source: String,
}

impl Row {
    fn line(&self) -> String {
        [
            self.arch.name(),
            &self.kernel,
            &self.workload,
            &self.fingerprint.to_string(),
            &self.measured_utc,
            &self.device,
            &self.source,
        ]
        .join("\t")
    }

    fn key(&self) -> (Arch, &str) {
        (self.arch, &self.kernel)
    }
}

/// `YYYY-MM-DD HH:MM`, digits where digits belong.
fn is_utc_minute(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 16
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b' ',
            13 => c == b':',
            _ => c.is_ascii_digit(),
        })
}

/// The table's comment lines and rows, or every malformed line.
fn parse_table(text: &str) -> Result<(String, Vec<Row>), Vec<String>> {
    let mut comments = String::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut errors = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        if line.starts_with('#') {
            comments.push_str(line);
            comments.push('\n');
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != COLUMNS.len() {
            errors.push(format!(
                "line {number}: {} tab-separated fields, not {} ({})",
                fields.len(),
                COLUMNS.len(),
                COLUMNS.join(", ")
            ));
            continue;
        }
        let arch = Arch::from_name(fields[0]);
        let fingerprint = fields[3].parse::<Fingerprint>();
        let measured = fields[4];
        let mut problems = Vec::new();
        if arch.is_none() {
            problems.push(format!("unknown arch `{}`", fields[0]));
        }
        if let Err(e) = &fingerprint {
            problems.push(e.clone());
        }
        if measured != UNMEASURED && !is_utc_minute(measured) {
            problems.push(format!(
                "measured_utc `{measured}` is neither YYYY-MM-DD HH:MM nor {UNMEASURED}"
            ));
        }
        for (column, value) in [
            (1, fields[1]),
            (2, fields[2]),
            (5, fields[5]),
            (6, fields[6]),
        ] {
            if value.trim().is_empty() {
                problems.push(format!("empty {}", COLUMNS[column]));
            }
        }
        if !problems.is_empty() {
            errors.push(format!("line {number}: {}", problems.join("; ")));
            continue;
        }
        let row = Row {
            arch: arch.expect("checked"),
            kernel: fields[1].to_string(),
            workload: fields[2].to_string(),
            fingerprint: fingerprint.expect("checked"),
            measured_utc: measured.to_string(),
            device: fields[5].to_string(),
            source: fields[6].to_string(),
        };
        if rows.iter().any(|r| r.key() == row.key()) {
            errors.push(format!(
                "line {number}: a second row for {} {}",
                row.arch, row.kernel
            ));
            continue;
        }
        rows.push(row);
    }
    if errors.is_empty() {
        Ok((comments, rows))
    } else {
        Err(errors)
    }
}

/// Every measured kernel, from the registry: (arch, kernel, workload), arch by arch in
/// registry order.
fn measured_kernels() -> Vec<(Arch, &'static str, &'static str)> {
    let mut kernels = Vec::new();
    for arch in Arch::ALL {
        for workload in host::registry::WORKLOADS {
            if UNMEASURED_WORKLOADS.contains(&workload.name()) {
                continue;
            }
            for experiment in workload.experiments() {
                if !experiment.archs().contains(&arch) {
                    continue;
                }
                for kernel in experiment.entry_points() {
                    let key = (arch, kernel, workload.name());
                    if !kernels.contains(&key) {
                        kernels.push(key);
                    }
                }
            }
            // Helpers launched inside the timed launches are measured with the experiments.
            for &kernel in workload.timed_helper_kernels() {
                let key = (arch, kernel, workload.name());
                if workload.helper_kernel_archs(kernel).contains(&arch) && !kernels.contains(&key) {
                    kernels.push(key);
                }
            }
        }
    }
    kernels
}

/// The PTX module of `arch` to fingerprint: the embedded one, or `FINGERPRINTS_PTX_DIR`'s.
fn module_text(arch: Arch) -> String {
    match std::env::var_os("FINGERPRINTS_PTX_DIR") {
        Some(dir) => {
            let path = PathBuf::from(dir).join(arch.name()).join("gpu.ptx");
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("FINGERPRINTS_PTX_DIR: {}: {e}", path.display()))
        }
        None => host::device_code::module_text(arch).to_string(),
    }
}

/// A measured kernel as the build has it: (arch, kernel, workload, fingerprint).
type Current = (Arch, &'static str, &'static str, Fingerprint);

/// The current fingerprint of every measured kernel, and the registered kernels the PTX
/// lacks (`arch kernel`).
fn current_fingerprints() -> (Vec<Current>, Vec<String>) {
    let texts: Vec<String> = Arch::ALL.iter().map(|&a| module_text(a)).collect();
    let modules: Vec<ModuleFingerprints> =
        texts.iter().map(|t| ModuleFingerprints::new(t)).collect();
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for (arch, kernel, workload) in measured_kernels() {
        let index = Arch::ALL.iter().position(|&a| a == arch).expect("an arch");
        match modules[index].fingerprint(kernel) {
            Some(fp) => found.push((arch, kernel, workload, fp)),
            None => missing.push(format!("  {arch} {kernel} ({workload})")),
        }
    }
    (found, missing)
}

/// The table `FINGERPRINTS_WRITE=1` writes: `current` in registry order, each with the
/// measurement of its old row where its code is unchanged.
fn regenerate(old: &[Row], current: &[Current]) -> Vec<Row> {
    let is_current = |r: &Row| current.iter().any(|c| (c.0, c.1) == r.key());
    current
        .iter()
        .map(|&(arch, kernel, workload, fingerprint)| {
            let unmeasured = |source: String| Row {
                arch,
                kernel: kernel.to_string(),
                workload: workload.to_string(),
                fingerprint,
                measured_utc: UNMEASURED.to_string(),
                device: "-".to_string(),
                source,
            };
            match old.iter().find(|r| r.key() == (arch, kernel)) {
                Some(row) if row.fingerprint == fingerprint => Row {
                    workload: workload.to_string(),
                    ..row.clone()
                },
                Some(row) => unmeasured(format!(
                    "code changed from {} (measured {} on {})",
                    row.fingerprint, row.measured_utc, row.device
                )),
                None => {
                    let renamed: Vec<&Row> = old
                        .iter()
                        .filter(|r| {
                            r.arch == arch && r.fingerprint == fingerprint && !is_current(r)
                        })
                        .collect();
                    match renamed[..] {
                        [row] if row.measured_utc != UNMEASURED => Row {
                            kernel: kernel.to_string(),
                            workload: workload.to_string(),
                            source: format!("{} (measured as {})", row.source, row.kernel),
                            ..row.clone()
                        },
                        _ => unmeasured("new kernel".to_string()),
                    }
                }
            }
        })
        .collect()
}

/// What differs between the table and the build, as the failure message; `None` if nothing.
fn differences(rows: &[Row], current: &[Current], missing: &[String]) -> Option<String> {
    let mut changed = Vec::new();
    let mut new = Vec::new();
    let mut workload = Vec::new();
    for &(arch, kernel, w, fp) in current {
        match rows.iter().find(|r| r.key() == (arch, kernel)) {
            Some(row) if row.fingerprint != fp => changed.push(format!(
                "  {arch} {kernel}: table {}, now {fp} (measured {} on {})",
                row.fingerprint, row.measured_utc, row.device
            )),
            Some(row) if row.workload != w => workload.push(format!(
                "  {arch} {kernel}: the table says workload `{}`, the registry `{w}`",
                row.workload
            )),
            Some(_) => {}
            None => {
                let same: Vec<&str> = rows
                    .iter()
                    .filter(|r| {
                        r.arch == arch
                            && r.fingerprint == fp
                            && !current.iter().any(|c| (c.0, c.1) == r.key())
                    })
                    .map(|r| r.kernel.as_str())
                    .collect();
                let hint = match same[..] {
                    [] => String::new(),
                    _ => format!(" (same code as the gone {}: a rename?)", same.join(", ")),
                };
                new.push(format!("  {arch} {kernel} ({w}): {fp}{hint}"));
            }
        }
    }
    let gone: Vec<String> = rows
        .iter()
        .filter(|r| !current.iter().any(|c| (c.0, c.1) == r.key()))
        .map(|r| {
            format!(
                "  {} {} ({}): {}",
                r.arch, r.kernel, r.workload, r.fingerprint
            )
        })
        .collect();
    let unmeasured: Vec<String> = rows
        .iter()
        .filter(|r| r.measured_utc == UNMEASURED)
        .map(|r| format!("  {} {}: {}", r.arch, r.kernel, r.source))
        .collect();
    if missing.is_empty()
        && changed.is_empty()
        && new.is_empty()
        && gone.is_empty()
        && unmeasured.is_empty()
        && workload.is_empty()
    {
        return None;
    }
    let mut message = format!(
        "the measured kernels' PTX does not match {}\n",
        table_path().display()
    );
    for (title, lines) in [
        (
            "registered kernels missing from the PTX (see the lowering test \
             registry_and_ptx_agree)",
            missing,
        ),
        (
            "changed (arch kernel: fingerprint in the table, now)",
            &changed[..],
        ),
        ("new: measured kernels without a row", &new[..]),
        ("gone: rows of kernels no longer measured", &gone[..]),
        (
            "not measured since their code changed (UNMEASURED)",
            &unmeasured[..],
        ),
        ("rows under the wrong workload", &workload[..]),
    ] {
        if !lines.is_empty() {
            writeln!(message, "{title}:\n{}", lines.join("\n")).unwrap();
        }
    }
    message.push_str(
        "What to do: a change meant to leave these kernels' code alone did not (compare \
         ptx_builder::fingerprint::ModuleFingerprints::normal_form of the two builds). A change \
         meant to alter them must measure each changed or new kernel again on the GPU, in the \
         same change: then `FINGERPRINTS_WRITE=1 cargo test --release -p host --test \
         fingerprints` rewrites the table (unchanged rows keep their measurement, changed and \
         new ones say UNMEASURED), and each UNMEASURED row gets the date (YYYY-MM-DD HH:MM, \
         UTC), device and command of that measurement by hand.",
    );
    Some(message)
}

#[test]
fn measured_kernels_match_their_fingerprints_in_the_table() {
    let (current, missing) = current_fingerprints();
    let path = table_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if std::env::var_os("FINGERPRINTS_WRITE").is_some() => {
            eprintln!("{}: {e}; writing it from scratch", path.display());
            String::new()
        }
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let (comments, mut rows) = parse_table(&text)
        .unwrap_or_else(|errors| panic!("{} is malformed:\n{}", path.display(), errors.join("\n")));
    if std::env::var_os("FINGERPRINTS_WRITE").is_some() {
        rows = regenerate(&rows, &current);
        let mut out = if comments.is_empty() {
            DEFAULT_HEADER.to_string()
        } else {
            comments
        };
        for row in &rows {
            out.push_str(&row.line());
            out.push('\n');
        }
        std::fs::write(&path, out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        eprintln!("wrote {} ({} rows)", path.display(), rows.len());
    }
    if let Some(message) = differences(&rows, &current, &missing) {
        panic!("{message}");
    }
}

/// The registry's measured kernels are the ones the table must cover: a registry that lost
/// its experiments would make the comparison above vacuous. Every measured workload has
/// kernels in each module its experiments name.
#[test]
fn every_measured_workload_has_kernels_on_its_archs() {
    let kernels = measured_kernels();
    for workload in host::registry::WORKLOADS {
        if UNMEASURED_WORKLOADS.contains(&workload.name()) {
            continue;
        }
        let mut archs: Vec<Arch> = workload
            .experiments()
            .iter()
            .filter(|e| !e.entry_points().is_empty())
            .flat_map(|e| e.archs().iter().copied())
            .collect();
        archs.sort();
        archs.dedup();
        assert!(
            !archs.is_empty(),
            "workload {} has no kernel",
            workload.name()
        );
        for arch in archs {
            assert!(
                kernels
                    .iter()
                    .any(|k| k.0 == arch && k.2 == workload.name()),
                "workload {} has no kernel in the {arch} PTX",
                workload.name()
            );
        }
    }
}

// The normaliser (ptx_builder::fingerprint), on small modules.

/// A kernel that reads a parameter and a special register, names shared memory, branches,
/// waits in an inline-asm scope and calls a function.
const BASE: &str = r#"
//
// Generated by LLVM NVPTX Back-End
//
.version 8.0
.target sm_90
.address_size 64

.shared .align 16 .b8 buf[256];
.shared .align 16 .b8 unused[64];
.func helper()
.noreturn
{
	trap;
}
.visible .entry k
(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u32 k_param_1
)
;
	// .globl	k
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u32 k_param_1
)
.maxntid 128, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<7>;
	.reg .b64 	%rd<4>;

// %bb.0:
	ld.param.b32 	%r1, [k_param_1];
	ld.param.b64 	%rd1, [k_param_0];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, buf;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__BB3_2;
	// begin inline asm
	{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%r3], %r2; selp.u32 %r4, 1, 0, p; }
	// end inline asm
	add.s32 	%r5, %r4, 7;
	st.global.u32 	[%rd1], %r5;
$L__BB3_2:
	mov.u32 	%r6, %envreg3;
	{ // callseq 0, 0
	call.uni helper, ();
	} // callseq 0
	ret;
}
"#;

/// [`BASE`] with every register, label and name numbered or spelled differently (one-to-one),
/// other register counts, comments and line breaks: the same code.
const RENUMBERED: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.shared .align 16 .b8 other[8];
.shared .align 16 .b8 tile[256];
.func _RNvCs1234_helper_v2()
.noreturn
{
	// begin inline asm
	trap;
	// end inline asm
}
.visible .entry renamed(
	.param .u64 .ptr .align 1 renamed_param_0,
	.param .u32 renamed_param_1
)
.maxntid 128, 1, 1
{
	.reg .pred %p<9>; .reg .b32 %r<40>;
	.reg .b64 %rd<12>;
	ld.param.b32 %r17, [renamed_param_1]; ld.param.b64 %rd9, [renamed_param_0];
	mov.u32 %r3, %tid.x;
	mov.u32 %r30, tile; /* the tile's address */
	setp.ge.u32 %p7,%r3,%r17;
	@%p7 bra $L__BB12_5;
	{ .reg .pred p;
	  mbarrier.try_wait.parity.shared.b64 p, [%r30], %r3;
	  selp.u32 %r8, 1, 0, p; }
	add.s32 %r2, %r8, 7;
	st.global.u32 [%rd9], %r2;
$L__BB12_5:
	mov.u32 %r11, %envreg3;
	{ call.uni _RNvCs1234_helper_v2, (); }
	ret;
}
"#;

fn fingerprint_of(ptx: &str) -> Fingerprint {
    let all = kernel_fingerprints(ptx);
    assert_eq!(all.len(), 1, "one kernel expected: {all:?}");
    *all.values().next().expect("a kernel")
}

/// `BASE` with `from` replaced by `to` once (which must change the text).
fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "`{from}` is not in BASE");
    BASE.replacen(from, to, 1)
}

#[test]
fn fnv1a_matches_its_published_test_vectors() {
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn fingerprints_print_and_parse_as_16_hex_digits() {
    let fp = Fingerprint(0x00ab_cdef_0123_4567);
    assert_eq!(fp.to_string(), "00abcdef01234567");
    assert_eq!("00abcdef01234567".parse::<Fingerprint>(), Ok(fp));
    assert!("abcdef01234567".parse::<Fingerprint>().is_err());
    assert!("00abcdef0123456g".parse::<Fingerprint>().is_err());
}

#[test]
fn numbering_names_comments_and_layout_do_not_change_the_fingerprint() {
    assert_eq!(fingerprint_of(BASE), fingerprint_of(RENUMBERED));
}

#[test]
fn forward_declarations_are_not_kernels() {
    let module = ModuleFingerprints::new(BASE);
    assert_eq!(module.kernels().collect::<Vec<_>>(), ["k"]);
    let without = BASE.replacen(
        ".visible .entry k\n(\n\t.param .u64 .ptr .align 1 k_param_0,\n\t.param .u32 k_param_1\n)\n;",
        "",
        1,
    );
    assert_ne!(without, BASE);
    assert_eq!(fingerprint_of(&without), fingerprint_of(BASE));
}

#[test]
fn one_opcode_changes_the_fingerprint() {
    let other = base_with("add.s32", "sub.s32");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn one_immediate_changes_the_fingerprint() {
    let other = base_with("%r4, 7;", "%r4, 8;");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn one_modifier_changes_the_fingerprint() {
    let other = base_with("st.global.u32", "st.global.cs.u32");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn registers_are_renamed_one_to_one() {
    // Comparing the thread index with itself instead of with the parameter: numbering
    // registers by first appearance must not make the two equal.
    let other = base_with("%p1, %r2, %r1;", "%p1, %r2, %r2;");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn a_register_read_inside_an_asm_scope_counts() {
    let other = base_with("[%r3], %r2;", "[%r3], %r1;");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn numbered_special_registers_are_not_renumbered() {
    // %envreg3 looks like register 3 of a class `envreg`, which no `.reg` declares.
    let other = base_with("%envreg3", "%envreg5");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn special_registers_count() {
    let other = base_with("%tid.x", "%ctaid.x");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn a_called_function_s_body_counts() {
    let other = base_with("\ttrap;", "\texit;");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn a_referenced_shared_declaration_counts_and_others_do_not() {
    let bigger = base_with("buf[256]", "buf[512]");
    assert_ne!(fingerprint_of(&bigger), fingerprint_of(BASE));
    let realigned = base_with(".align 16 .b8 buf", ".align 128 .b8 buf");
    assert_ne!(fingerprint_of(&realigned), fingerprint_of(BASE));
    let unused = base_with("unused[64]", "unused[4096]");
    assert_eq!(fingerprint_of(&unused), fingerprint_of(BASE));
}

#[test]
fn launch_bounds_and_parameters_count() {
    let bounds = base_with(".maxntid 128, 1, 1", ".maxntid 256, 1, 1");
    assert_ne!(fingerprint_of(&bounds), fingerprint_of(BASE));
    let align = BASE.replace(".ptr .align 1 k_param_0", ".ptr .align 16 k_param_0");
    assert_ne!(fingerprint_of(&align), fingerprint_of(BASE));
}

#[test]
fn the_ptx_isa_version_counts() {
    let other = base_with(".version 8.0", ".version 8.3");
    assert_ne!(fingerprint_of(&other), fingerprint_of(BASE));
}

#[test]
fn the_normal_form_renumbers_registers_labels_and_names() {
    let text = ModuleFingerprints::new(RENUMBERED)
        .normal_form("renamed")
        .expect("a kernel");
    for expected in [
        "ld.param.b32 %r0 , [ param_1 ] ;",
        "mov.u32 %r2 , @var0 ;",
        "@ %p0 bra $L0 ;",
        "$L0 :",
        "mov.u32 %r5 , %envreg3 ;",
        "call.uni @func0 , ( ) ;",
        ".reg .b32 %r < > ;",
        ".shared .align 16 .b8 @var0 [ 256 ] ;",
    ] {
        assert!(
            text.lines().any(|l| l == expected),
            "no line `{expected}` in\n{text}"
        );
    }
    assert!(!text.contains("other"), "an unused variable in\n{text}");
}

#[test]
fn the_table_format_is_checked() {
    let good = "# c\nsm_90\tk\tgemm\t0123456789abcdef\t2026-11-29 21:49\tNVIDIA H200\thost run\n";
    let (comments, rows) = parse_table(good).expect("a good table");
    assert_eq!(comments, "# c\n");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].line(), good.lines().nth(1).unwrap());
    for bad in [
        good.replace("2026-11-29 21:49", "yesterday"),
        good.replace("sm_90", "sm_75"),
        good.replace("0123456789abcdef", "0123"),
        good.replace("\thost run", ""),
        good.replace("NVIDIA H200", " "),
        format!("{good}{}", good.lines().nth(1).unwrap()),
    ] {
        assert!(parse_table(&bad).is_err(), "accepted:\n{bad}");
    }
    let unmeasured = good.replace("2026-11-29 21:49", UNMEASURED);
    assert!(parse_table(&unmeasured).is_ok());
}

#[test]
fn regenerating_keeps_measurements_of_unchanged_code_only() {
    let row = |kernel: &str, fp: u64, measured: &str| Row {
        arch: Arch::Sm90,
        kernel: kernel.to_string(),
        workload: "gemm".to_string(),
        fingerprint: Fingerprint(fp),
        measured_utc: measured.to_string(),
        device: "NVIDIA H200".to_string(),
        source: "host run".to_string(),
    };
    let old = [
        row("same", 1, "2026-11-29 21:49"),
        row("changed", 2, "2026-11-29 21:49"),
        row("old_name", 3, "2026-11-30 00:50"),
        row("gone", 4, "2026-11-30 00:50"),
    ];
    let current = [
        (Arch::Sm90, "same", "gemm", Fingerprint(1)),
        (Arch::Sm90, "changed", "gemm", Fingerprint(20)),
        (Arch::Sm90, "new_name", "gemm", Fingerprint(3)),
        (Arch::Sm90, "brand_new", "gemm", Fingerprint(5)),
    ];
    let rows = regenerate(&old, &current);
    let by_name: BTreeMap<&str, &Row> = rows.iter().map(|r| (r.kernel.as_str(), r)).collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(*by_name["same"], old[0]);
    assert_eq!(by_name["changed"].measured_utc, UNMEASURED);
    assert_eq!(by_name["changed"].fingerprint, Fingerprint(20));
    assert_eq!(by_name["new_name"].measured_utc, "2026-11-30 00:50");
    assert!(by_name["new_name"].source.contains("old_name"));
    assert_eq!(by_name["brand_new"].measured_utc, UNMEASURED);
    // The check then fails on exactly the two UNMEASURED rows, naming them.
    let message = differences(&rows, &current, &[]).expect("UNMEASURED rows fail");
    assert!(message.contains("sm_90 changed") && message.contains("sm_90 brand_new"));
    assert!(!message.contains("sm_90 same"), "{message}");
    // And the old table against the new build names each kind of difference.
    let message = differences(&old, &current, &[]).expect("differences");
    for expected in [
        "sm_90 changed: table 0000000000000002, now 0000000000000014",
        "sm_90 new_name (gemm): 0000000000000003 (same code as the gone old_name: a rename?)",
        "sm_90 brand_new (gemm)",
        "sm_90 gone (gemm)",
    ] {
        assert!(message.contains(expected), "no `{expected}` in\n{message}");
    }
}
