//! The `host` binary as a user runs it: commands that need no GPU, argument errors, and what
//! happens without a GPU (or, on a machine with one, that a short run verifies).

use std::process::{Command, Output};

fn host(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .args(args)
        .output()
        .expect("the host binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn list_names_every_experiment_of_every_workload() {
    let out = host(&["list"]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    for (workload, e) in host::registry::all_experiments() {
        assert!(
            stdout.contains(workload.name()),
            "{} missing",
            workload.name()
        );
        assert!(
            stdout.contains(e.name()),
            "{} missing from `host list`",
            e.name()
        );
    }
}

#[test]
fn inspect_shows_ptx_and_sass_without_a_gpu() {
    let out = host(&["inspect", "--arch", "sm_80", "--only", "thread_pipeline_2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("cp.async.wait_group 1"), "{stdout}");
    assert!(stdout.contains("SASS: LDGSTS.E"), "{stdout}");
    let out = host(&["inspect", "--only", "no_such_kernel"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error: no kernel `no_such_kernel`"));
}

#[test]
fn bad_arguments_exit_2_with_a_reason() {
    for (args, reason) in [
        (&["run", "--k", "0"][..], "K must be at least 1"),
        (&["run", "--reps", "0"][..], "at least one timed launch"),
        (&["run", "--only", "nope"][..], "unknown experiment `nope`"),
        (
            &["run", "--workload", "nope"][..],
            "unknown workload `nope`",
        ),
        (&["run", "--plot", "x.png"][..], ".svg"),
        (&["plot", "--json", "r.json", "--plot", "x.png"][..], ".svg"),
        (&["selftest", "--n", "0"][..], "count of floats"),
        (
            &["run", "--workload", "gemm", "--size", "0"][..],
            "M must be at least 1",
        ),
        (&["run", "--workload", "gemm", "--size", "4x4"][..], "MxNxK"),
        (
            &["run", "--workload", "gemm", "--size=-7"][..],
            "whole numbers",
        ),
        (
            &["run", "--workload", "gemm", "--size", "1x1x5000000000"][..],
            "too large",
        ),
    ] {
        let out = host(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(reason), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// Without a GPU (CI): one line on stderr, exit 1, no panic. With one: the run verifies.
#[test]
fn a_short_run_verifies_or_explains_why_it_cannot() {
    let out = host(&["run", "--k", "64", "--reps", "1", "--warmup", "1"]);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    if stderr.contains("error: no usable CUDA GPU") || stderr.contains("error: no CUDA driver") {
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    } else {
        assert!(out.status.success(), "{stderr}");
        let stdout = text(&out.stdout);
        assert_eq!(
            stdout.matches(" ok (").count(),
            workloads::study::STUDY_KERNELS.len(),
            "{stdout}"
        );
    }
}

/// A fresh directory for one test's files; the test removes it.
fn scratch_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("host-cli-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A row of a saved report, with the fields `host run --json` writes.
fn row(name: &str, role: &str, style: &str, stages: u32, median_ms: f64) -> String {
    format!(
        r#"{{"name": "{name}", "role": "{role}", "style": "{style}", "stages": {stages},
            "threads": 128, "shared_bytes": null, "summary": "-", "unavailable": null,
            "passed": true, "check_summary": "ok", "check": null, "check_after_timing": null,
            "times_ms": [{median_ms}], "median_ms": {median_ms}, "min_ms": {median_ms},
            "rate": {rate}, "vs_baseline": null, "counterpart": null, "vs_counterpart": null}}"#,
        rate = 1000.0 / median_ms
    )
}

/// A saved report of two sizes, each with `rows`.
fn saved_report(rows: &[String]) -> String {
    let problem = |size: &str| {
        format!(
            r#"{{"workload": "gemm", "size": "{size}", "baseline": "cublas_sgemm",
                "rate_unit": "TFLOP/s", "baseline_as_percent": true, "rows": [{}]}}"#,
            rows.join(",")
        )
    };
    format!(
        r#"{{"device": {{"name": "Test GPU", "compute_capability": [9, 0], "arch": "sm_90",
              "multiprocessors": 132, "clock_mhz": 1980, "memory_gib": 139.8,
              "max_shared_bytes_per_block": 232448, "driver_version": "13.0"}},
            "date": "2026-12-01T00:00:00Z", "command": "host run", "inputs": {{"seed": 1,
            "values": "random"}}, "timing": {{"warmup": 3, "reps": 20, "limit": null}},
            "passed": true, "interrupted": false, "problems": [{}, {}]}}"#,
        problem("1024x1024x1024"),
        problem("2048x2048x2048")
    )
}

#[test]
fn plot_draws_a_saved_report_without_a_gpu() {
    let dir = scratch_dir("plot");
    let json = dir.join("r.json");
    let svg = dir.join("r.svg");
    let rows = [
        row("cublas_sgemm", "baseline", "cublas", 1, 1.0),
        row(
            "gemm_thread_pipeline_3",
            "library",
            "thread_pipeline",
            3,
            1.25,
        ),
        row(
            "gemm_thread_pipeline_4",
            "library",
            "thread_pipeline",
            4,
            1.1,
        ),
        row("gemm_tma_3", "library", "tma", 3, 2.0),
    ];
    std::fs::write(&json, saved_report(&rows)).unwrap();
    let out = host(&[
        "plot",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.starts_with("wrote "), "{stderr}");
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg width=\"1000\" height=\"600\""));
    for label in [
        "cublas_sgemm = 100%",
        "thread_pipeline, depth 4",
        "tma, depth 3",
        "1024³",
        "% of cublas_sgemm",
    ] {
        assert!(picture.contains(label), "{label} missing from the plot");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn plot_of_a_bad_file_says_why_in_one_line() {
    let dir = scratch_dir("plot-bad");
    let svg = dir.join("r.svg");
    let not_a_report = dir.join("not-a-report.json");
    std::fs::write(&not_a_report, "{\"problems\": 3}").unwrap();
    let nothing = dir.join("nothing.json");
    let only_the_baseline = [row("cublas_sgemm", "baseline", "cublas", 1, 1.0)];
    std::fs::write(&nothing, saved_report(&only_the_baseline)).unwrap();
    for (json, reason) in [
        (dir.join("missing.json"), "error: reading "),
        (not_a_report, "is not a report written by `host run --json`"),
        (nothing, "nothing to plot"),
    ] {
        let out = host(&[
            "plot",
            "--json",
            json.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", json.display());
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(reason), "{}: {stderr}", json.display());
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(!svg.exists(), "{} left an SVG", json.display());
    }
    std::fs::remove_dir_all(dir).unwrap();
}
