//! compute-sanitizer's record of every kernel, against the kernels as built.
//!
//! `docs/runs/sanitizer.tsv` holds one row per kernel and tool (memcheck, racecheck,
//! synccheck, initcheck): how many errors (and, for racecheck, warnings) the tool reported
//! in it, the kernel's PTX fingerprint when it ran, when, and the log. `scripts/sanitize.sh`
//! runs the tools on a GPU machine; this test, with `SANITIZER_WRITE=DIR` (the folder the
//! script filled), stores the logs under `docs/runs/sanitizer-DATE/` and rewrites the table:
//!
//! ```sh
//! scripts/sanitize.sh target/release/host OUT           # on the GPU machine
//! SANITIZER_WRITE=OUT cargo test --release -p host --test sanitizer
//! ```
//!
//! A kernel is credited to a run when an experiment that launches it ran and passed its
//! checks under the tool (the run's `--json`); a workload's helper kernels (its references
//! and checks) when any of its experiments did. Errors are attributed to the kernel the
//! tool's report names. Without `SANITIZER_WRITE` (CI) the test fails, naming each kernel,
//! when
//!
//! - a kernel the H200 runs (every experiment's entry points for sm_90 / sm_90a, and the
//!   helpers but the hang reports, which hang on purpose) has no row for some tool;
//! - a row's fingerprint is not the kernel's fingerprint now: the code changed since the
//!   tools saw it, and its record is stale until `scripts/sanitize.sh` runs again;
//! - a row reports errors, or its log is not committed — unless `docs/runs/sanitizer-reviewed.tsv`
//!   lists the kernel and tool at the same fingerprint with what was found on reading the
//!   report (a tool's false report, say), and the log it names holds the kernel's name; such a
//!   review also stands in for a row when the tool stops the kernel (synccheck kills a launch
//!   it reports), and goes stale with the code like a row; a review of a kernel whose row is
//!   clean fails, so none outlives its finding;
//! - a kernel has no row for a tool and `docs/runs/sanitizer-pending.tsv` does not list it as
//!   a run still to make (arch, kernel, tool, the command); a listed run that has a row fails;
//! - a kernel of `gpu-kernels`' own module (what a user's program loads) differs from the
//!   workloads' copy that the table covers.

use ptx_builder::Arch;
use ptx_builder::fingerprint::{Fingerprint, ModuleFingerprints};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const TOOLS: [&str; 4] = ["memcheck", "racecheck", "synccheck", "initcheck"];
/// The archs an H200 runs: its own module and the sm_90a one beside it.
const ARCHS: [Arch; 2] = [Arch::Sm90, Arch::Sm90a];
const HEADER: &str = "\
# compute-sanitizer over every kernel (host/tests/sanitizer.rs says how it is written and
# checked). Tab-separated: arch, kernel, workload, tool, errors, warnings, fingerprint,
# checked_utc, log (under docs/runs/).
";

fn docs_runs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/runs")
}

fn table_path() -> PathBuf {
    docs_runs().join("sanitizer.tsv")
}

/// A report read and judged: arch, kernel, tool, fingerprint, log (under docs/runs/), finding.
#[derive(Debug)]
struct Review {
    arch: Arch,
    kernel: String,
    tool: String,
    fingerprint: Fingerprint,
    log: String,
    finding: String,
}

fn parse_reviews(text: &str) -> Result<Vec<Review>, String> {
    let mut reviews = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| format!("docs/runs/sanitizer-reviewed.tsv:{}: {why}", number + 1);
        let [arch, kernel, tool, fingerprint, log, finding] =
            line.split('\t').collect::<Vec<_>>()[..]
        else {
            return Err(bad("not 6 tab-separated fields"));
        };
        if finding.trim().len() < 40 {
            return Err(bad("the finding says too little"));
        }
        reviews.push(Review {
            arch: Arch::from_name(arch).ok_or_else(|| bad("unknown arch"))?,
            kernel: kernel.to_string(),
            tool: TOOLS
                .iter()
                .find(|t| **t == tool)
                .ok_or_else(|| bad("unknown tool"))?
                .to_string(),
            fingerprint: fingerprint.parse().map_err(|e: String| bad(&e))?,
            log: log.to_string(),
            finding: finding.to_string(),
        });
    }
    Ok(reviews)
}

/// Runs still to make, for want of a GPU: (arch, kernel, tool).
fn pending() -> Vec<(Arch, String, String)> {
    let text =
        std::fs::read_to_string(docs_runs().join("sanitizer-pending.tsv")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(
                f.len() == 4 && f[3].contains("sanitize.sh"),
                "sanitizer-pending.tsv: `{l}`: arch, kernel, tool, command"
            );
            (
                Arch::from_name(f[0]).expect("arch"),
                f[1].to_string(),
                f[2].to_string(),
            )
        })
        .collect()
}

fn reviews() -> Vec<Review> {
    let text =
        std::fs::read_to_string(docs_runs().join("sanitizer-reviewed.tsv")).unwrap_or_default();
    parse_reviews(&text).unwrap()
}

#[derive(Clone, Debug, PartialEq)]
struct Row {
    arch: Arch,
    kernel: String,
    workload: String,
    tool: String,
    errors: u64,
    warnings: u64,
    fingerprint: Fingerprint,
    checked_utc: String,
    log: String,
}

impl Row {
    fn line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.arch,
            self.kernel,
            self.workload,
            self.tool,
            self.errors,
            self.warnings,
            self.fingerprint,
            self.checked_utc,
            self.log
        )
    }

    fn key(&self) -> (Arch, &str, &str) {
        (self.arch, &self.kernel, &self.tool)
    }
}

fn parse_table(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = |why: &str| format!("docs/runs/sanitizer.tsv:{}: {why}", number + 1);
        let [
            arch,
            kernel,
            workload,
            tool,
            errors,
            warnings,
            fingerprint,
            checked,
            log,
        ] = f[..]
        else {
            return Err(bad("not 9 tab-separated fields"));
        };
        rows.push(Row {
            arch: Arch::from_name(arch).ok_or_else(|| bad("unknown arch"))?,
            kernel: kernel.to_string(),
            workload: workload.to_string(),
            tool: TOOLS
                .iter()
                .find(|t| **t == tool)
                .ok_or_else(|| bad("unknown tool"))?
                .to_string(),
            errors: errors.parse().map_err(|_| bad("errors"))?,
            warnings: warnings.parse().map_err(|_| bad("warnings"))?,
            fingerprint: fingerprint.parse().map_err(|e: String| bad(&e))?,
            checked_utc: checked.to_string(),
            log: log.to_string(),
        });
    }
    Ok(rows)
}

/// The arch whose module holds an experiment's or helper's kernels on an H200.
fn h200_arch(archs: &[Arch]) -> Option<Arch> {
    ARCHS.into_iter().rev().find(|a| archs.contains(a))
}

/// Helpers that hang on purpose (the watchdog's demonstrations): no tool can finish them.
fn hangs_on_purpose(kernel: &str) -> bool {
    kernel.contains("hang")
}

/// A workload's helper kernels the tools check, with their arch on an H200.
fn helpers(workload: &'static dyn host::registry::AnyWorkload) -> Vec<(Arch, &'static str)> {
    workload
        .helper_kernels()
        .iter()
        .chain(workload.timed_helper_kernels())
        .filter(|k| !hangs_on_purpose(k))
        .filter_map(|&k| Some((h200_arch(workload.helper_kernel_archs(k))?, k)))
        .collect()
}

/// Every kernel the H200 runs: (arch, kernel, workload).
fn required_kernels() -> Vec<(Arch, &'static str, &'static str)> {
    let mut kernels = Vec::new();
    for workload in host::registry::WORKLOADS {
        for experiment in workload.experiments() {
            let Some(arch) = h200_arch(experiment.archs()) else {
                continue;
            };
            for kernel in experiment.entry_points() {
                kernels.push((arch, kernel, workload.name()));
            }
        }
        for (arch, kernel) in helpers(*workload) {
            kernels.push((arch, kernel, workload.name()));
        }
    }
    kernels.sort();
    kernels.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
    kernels
}

fn workloads_module(arch: Arch) -> ModuleFingerprints<'static> {
    ModuleFingerprints::new(host::device_code::module_text(arch))
}

fn library_module(arch: Arch) -> Option<ModuleFingerprints<'static>> {
    gpu_kernels::MODULES
        .iter()
        .find(|m| m.arch == arch)
        .map(|m| ModuleFingerprints::new(m.ptx))
}

/// What one tool's log says: the summary's error and warning counts, and errors and
/// warnings by the kernel each report names (`None`: the log has no summary, so the tool
/// did not finish).
struct Log {
    errors: u64,
    warnings: u64,
    by_kernel: BTreeMap<String, (u64, u64)>,
}

fn parse_log(text: &str, kernels: &[&str]) -> Option<Log> {
    let mut summary = None;
    let mut by_kernel: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    let number_before = |line: &str, word: &str| -> Option<u64> {
        let at = line.find(word)?;
        line[..at]
            .split_whitespace()
            .last()?
            .trim_start_matches('(')
            .parse()
            .ok()
    };
    for (i, line) in lines.iter().enumerate() {
        let Some(body) = line.strip_prefix("========= ") else {
            continue;
        };
        if body.starts_with("ERROR SUMMARY:") {
            summary = Some((number_before(body, "error")?, 0));
            continue;
        }
        if body.starts_with("RACECHECK SUMMARY:") {
            summary = Some((
                number_before(body, "error")?,
                number_before(body, "warning")?,
            ));
            continue;
        }
        // A report starts at a line without the continuation indent; it names its kernel in
        // itself or in the indented lines below it.
        if body.starts_with(' ')
            || body.starts_with("COMPUTE-SANITIZER")
            || body.starts_with("Program hit")
            || body.starts_with("Target application")
        {
            continue;
        }
        let is_warning = body.starts_with("Warning");
        let block = std::iter::once(body).chain(
            lines[i + 1..]
                .iter()
                .map_while(|l| l.strip_prefix("=========  ")),
        );
        let named = block
            .flat_map(|l| kernels.iter().filter(move |k| contains_word(l, k)).copied())
            .max_by_key(|k| k.len())
            .unwrap_or("(unattributed)");
        let entry = by_kernel.entry(named.to_string()).or_default();
        if is_warning {
            entry.1 += 1;
        } else {
            entry.0 += 1;
        }
    }
    let (errors, warnings) = summary?;
    Some(Log {
        errors,
        warnings,
        by_kernel,
    })
}

/// Whether `text` holds `word` not as part of a longer identifier.
fn contains_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// `2026-12-05T10:11:12Z` -> `2026-12-05 10:11`.
fn utc_minute(date: &str) -> String {
    date.get(..16).unwrap_or(date).replace('T', " ")
}

/// The rows one workload's run under one tool gives, from `dir`'s files; `Err` says why the
/// run gives none.
fn rows_of_run(dir: &Path, workload: &str, tool: &str, log_dir: &str) -> Result<Vec<Row>, String> {
    let w = host::registry::find(workload)?;
    let json = dir.join(format!("{workload}-{tool}.json"));
    let report: serde_json::Value = std::fs::read_to_string(&json)
        .map_err(|e| format!("{}: {e}", json.display()))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))?;
    let date = utc_minute(report["date"].as_str().ok_or("no date")?);
    let mut ran: Vec<(Arch, &'static str)> = Vec::new();
    for problem in report["problems"].as_array().ok_or("no problems")? {
        for row in problem["rows"].as_array().ok_or("no rows")? {
            if row["passed"] != true {
                continue;
            }
            let name = row["name"].as_str().unwrap_or_default();
            let Some(e) = w.experiments().into_iter().find(|e| e.name() == name) else {
                continue;
            };
            if let Some(arch) = h200_arch(e.archs()) {
                ran.extend(e.entry_points().into_iter().map(|k| (arch, k)));
            }
        }
    }
    if ran.is_empty() {
        return Err("no experiment ran and passed".into());
    }
    ran.extend(helpers(w));
    ran.sort();
    ran.dedup();
    let log_name = format!("{workload}-{tool}.log");
    let text = std::fs::read_to_string(dir.join(&log_name)).map_err(|e| e.to_string())?;
    let names: Vec<&str> = ran.iter().map(|(_, k)| *k).collect();
    let log = parse_log(&text, &names).ok_or("the log has no summary: the tool did not finish")?;
    let attributed: u64 = log.by_kernel.values().map(|(e, _)| e).sum();
    if attributed < log.errors {
        return Err(format!(
            "{} error(s) in the summary, {attributed} attributed to a kernel",
            log.errors
        ));
    }
    Ok(ran
        .into_iter()
        .map(|(arch, kernel)| {
            let (errors, warnings) = log.by_kernel.get(kernel).copied().unwrap_or_default();
            Row {
                arch,
                kernel: kernel.to_string(),
                workload: workload.to_string(),
                tool: tool.to_string(),
                errors,
                warnings,
                fingerprint: workloads_module(arch)
                    .fingerprint(kernel)
                    .unwrap_or_else(|| panic!("{arch} {kernel} is not in the module")),
                checked_utc: date.clone(),
                log: format!("{log_dir}/{log_name}"),
            }
        })
        .collect())
}

/// `SANITIZER_WRITE=DIR`: the rows of every run in DIR replace the table's rows of the same
/// kernel and tool; DIR's files are copied to docs/runs/sanitizer-DATE/.
fn write_from(dir: &Path) {
    let mut rows = std::fs::read_to_string(table_path())
        .map(|t| parse_table(&t).unwrap())
        .unwrap_or_default();
    let mut new = Vec::new();
    let mut refused = Vec::new();
    let date = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(e.path()).ok()?).ok()?;
            Some(v["date"].as_str()?[..10].to_string())
        })
        .max()
        .expect("SANITIZER_WRITE: no run report (*.json) in the folder");
    let log_dir = format!("sanitizer-{date}");
    for workload in host::registry::WORKLOADS {
        for tool in TOOLS {
            if !dir.join(format!("{}-{tool}.log", workload.name())).exists() {
                continue;
            }
            match rows_of_run(dir, workload.name(), tool, &log_dir) {
                Ok(r) => new.extend(r),
                Err(why) => refused.push(format!("{} {tool}: {why}", workload.name())),
            }
        }
    }
    let target = docs_runs().join(&log_dir);
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
        std::fs::copy(entry.path(), target.join(entry.file_name())).unwrap();
    }
    rows.retain(|r| !new.iter().any(|n| n.key() == r.key()));
    rows.extend(new);
    rows.sort_by(|a, b| {
        (
            a.arch,
            &a.workload,
            &a.kernel,
            TOOLS.iter().position(|t| *t == a.tool),
        )
            .cmp(&(
                b.arch,
                &b.workload,
                &b.kernel,
                TOOLS.iter().position(|t| *t == b.tool),
            ))
    });
    let text: String =
        HEADER.to_string() + &rows.iter().map(|r| r.line() + "\n").collect::<String>();
    std::fs::write(table_path(), text).unwrap();
    assert!(
        refused.is_empty(),
        "written, but these runs gave no rows:\n{}",
        refused.join("\n")
    );
}

#[test]
fn every_kernel_has_a_clean_sanitizer_record_at_its_current_code() {
    if let Some(dir) = std::env::var_os("SANITIZER_WRITE") {
        write_from(Path::new(&dir));
    }
    let rows = parse_table(&std::fs::read_to_string(table_path()).unwrap_or_default()).unwrap();
    let reviews = reviews();
    let pending = pending();
    let mut problems = Vec::new();
    for (arch, kernel, tool) in &pending {
        if rows
            .iter()
            .any(|r| r.key() == (*arch, kernel.as_str(), tool.as_str()))
        {
            problems.push(format!(
                "{arch} {kernel}: {tool} has a row now; drop it from sanitizer-pending.tsv"
            ));
        }
    }
    for review in &reviews {
        let current = workloads_module(review.arch).fingerprint(&review.kernel);
        let log = std::fs::read_to_string(docs_runs().join(&review.log)).unwrap_or_default();
        let row = rows
            .iter()
            .find(|r| r.key() == (review.arch, review.kernel.as_str(), review.tool.as_str()));
        if Some(review.fingerprint) != current {
            problems.push(format!(
                "{} {}: the {} review ({}) is of code since changed: stale",
                review.arch, review.kernel, review.tool, review.finding
            ));
        } else if !contains_word(&log, &review.kernel) {
            problems.push(format!(
                "{} {}: the {} review's log {} is not committed or does not name it",
                review.arch, review.kernel, review.tool, review.log
            ));
        } else if row.is_some_and(|r| r.errors == 0) {
            problems.push(format!(
                "{} {}: {} is clean now; drop its review",
                review.arch, review.kernel, review.tool
            ));
        }
    }
    let reviewed = |arch: Arch, kernel: &str, tool: &str, fingerprint: Option<Fingerprint>| {
        reviews.iter().any(|r| {
            (r.arch, r.kernel.as_str(), r.tool.as_str()) == (arch, kernel, tool)
                && Some(r.fingerprint) == fingerprint
        })
    };
    for (arch, kernel, workload) in required_kernels() {
        let current = workloads_module(arch).fingerprint(kernel);
        for tool in TOOLS {
            match rows.iter().find(|r| r.key() == (arch, kernel, tool)) {
                None if reviewed(arch, kernel, tool, current) => {}
                None if pending
                    .iter()
                    .any(|p| (p.0, p.1.as_str(), p.2.as_str()) == (arch, kernel, tool)) => {}
                None => problems.push(format!("{arch} {kernel} ({workload}): no {tool} record")),
                Some(r) if Some(r.fingerprint) != current => problems.push(format!(
                    "{arch} {kernel}: {tool} saw {} on {}, the code is now {}: stale",
                    r.fingerprint,
                    r.checked_utc,
                    current.map_or("gone".into(), |f| f.to_string())
                )),
                Some(r) if r.errors > 0 && !reviewed(arch, kernel, tool, Some(r.fingerprint)) => {
                    problems.push(format!(
                        "{arch} {kernel}: {tool} reported {} error(s) ({})",
                        r.errors, r.log
                    ))
                }
                Some(_) => {}
            }
        }
    }
    for r in &rows {
        if !docs_runs().join(&r.log).is_file() {
            problems.push(format!(
                "{} {} {}: log {} is not committed",
                r.arch, r.kernel, r.tool, r.log
            ));
        }
    }
    // What a user's program loads is the code the tools saw.
    for arch in ARCHS {
        let Some(library) = library_module(arch) else {
            continue;
        };
        let ours = workloads_module(arch);
        for kernel in library.kernels() {
            if library.fingerprint(kernel) != ours.fingerprint(kernel) {
                problems.push(format!(
                    "{arch} {kernel}: gpu-kernels' module has {:?}, the workloads' copy {:?}",
                    library.fingerprint(kernel),
                    ours.fingerprint(kernel)
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) with docs/runs/sanitizer.tsv (scripts/sanitize.sh, then \
         SANITIZER_WRITE=DIR cargo test --release -p host --test sanitizer):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn logs_are_read_as_the_tools_write_them() {
    let kernels = [
        "attention_bf16_d128",
        "attention_bf16_d128_cp_async",
        "gemm_tma_3",
    ];
    let clean = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n";
    let log = parse_log(clean, &kernels).unwrap();
    assert_eq!((log.errors, log.warnings, log.by_kernel.len()), (0, 0, 0));
    let memcheck = "\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 16 bytes
=========     at attention_bf16_d128_cp_async+0x1d0
=========     by thread (0,0,0) in block (0,0,0)
=========
========= Invalid __shared__ write of size 4 bytes
=========     at gemm_tma_3+0x80
=========
========= ERROR SUMMARY: 2 errors
";
    let log = parse_log(memcheck, &kernels).unwrap();
    assert_eq!(log.errors, 2);
    assert_eq!(log.by_kernel["attention_bf16_d128_cp_async"], (1, 0));
    assert_eq!(log.by_kernel["gemm_tma_3"], (1, 0));
    assert!(!log.by_kernel.contains_key("attention_bf16_d128"));
    let racecheck = "\
========= COMPUTE-SANITIZER
========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x10 in block (0,0,0) :
=========     Write Thread (0,0,0) at gemm_tma_3+0x10
=========
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
";
    let log = parse_log(racecheck, &kernels).unwrap();
    assert_eq!((log.errors, log.warnings), (0, 1));
    assert_eq!(log.by_kernel["gemm_tma_3"], (0, 1));
    // No summary: the tool did not finish.
    assert!(parse_log("========= COMPUTE-SANITIZER\n", &kernels).is_none());
    assert_eq!(utc_minute("2026-12-05T10:11:12Z"), "2026-12-05 10:11");
    assert!(contains_word("at gemm_tma_3+0x10", "gemm_tma_3"));
    assert!(!contains_word("at gemm_tma_30+0x10", "gemm_tma_3"));
}

#[test]
fn reviews_must_say_what_was_found() {
    let fingerprint = "0123456789abcdef";
    let line = |finding: &str| format!("sm_90\tk\tracecheck\t{fingerprint}\tl.log\t{finding}\n");
    let parsed = parse_reviews(&line(
        "false report: the ordering is an mbarrier phase the tool does not follow",
    ));
    assert!(parsed.is_ok(), "{parsed:?}");
    assert!(parse_reviews(&line("fine")).is_err());
    assert!(parse_reviews("sm_90\tk\tracecheck\n").is_err());
}
