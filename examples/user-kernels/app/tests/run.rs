//! The app as a user runs it: on a GPU it verifies (ignored without one: run with
//! `--include-ignored` on a GPU machine); with no GPU it says so in one line.

use std::process::Command;

#[test]
#[ignore = "needs a CUDA GPU"]
fn scales_and_verifies_on_the_gpu() {
    for n in ["1", "1025", "1000003"] {
        let out = Command::new(env!("CARGO_BIN_EXE_user-app"))
            .arg(n)
            .output()
            .expect("the app runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "n = {n}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("ok: "), "{stdout}");
    }
}

/// With every GPU hidden (`CUDA_VISIBLE_DEVICES=""`, or on a machine with none), one line
/// says why and the status is 1: the same on CI and on a GPU machine.
#[test]
fn without_a_gpu_it_says_why_in_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_user-app"))
        .arg("1025")
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("the app runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no CUDA driver") || stderr.contains("no usable CUDA GPU"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

#[test]
fn a_bad_count_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_user-app"))
        .arg("zero")
        .output()
        .expect("the app runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a count of floats"));
}
