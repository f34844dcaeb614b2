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
