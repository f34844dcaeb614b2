//! The app as a user runs it: on a GPU it verifies; without one it says so in one line.

use std::process::Command;

#[test]
fn scales_and_verifies_or_explains_why_it_cannot() {
    for n in ["1", "1025", "1000003"] {
        let out = Command::new(env!("CARGO_BIN_EXE_cust-app"))
            .arg(n)
            .output()
            .expect("the app runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("no usable CUDA GPU") {
            assert_eq!(out.status.code(), Some(1));
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            return;
        }
        assert!(out.status.success(), "n = {n}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("ok: "), "{stdout}");
    }
}

#[test]
fn a_bad_count_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_cust-app"))
        .arg("zero")
        .output()
        .expect("the app runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a count of floats"));
}
