//! The builder's unit tests.

use super::*;

#[test]
fn check_ptx_rejects_unresolved_calls() {
    let ptx = ".version 8.0\n.extern .func foo()\n.visible .entry k(\n)\n{\nret;\n}\n";
    let err = check_ptx(ptx, &["k".to_string()]).unwrap_err();
    assert!(
        err.to_string()
            .contains("calls `foo`, which nothing defines"),
        "{err}"
    );
    let ptx =
        ".extern .func _RNvNtCs1_4core9panicking18panic_bounds_check\n(\n\t.param .b64 a\n)\n;\n";
    let err = check_ptx(ptx, &[]).unwrap_err().to_string();
    assert!(
        err.contains("calls `_RNvNtCs1_4core9panicking18panic_bounds_check`"),
        "{err}"
    );
    assert!(err.contains("panic path"), "{err}");
}

#[test]
fn keeps_real_warnings_only() {
    let stderr = "\
   Compiling gpu v0.1.0 (/w/gpu)
warning: unstable feature specified for `-Ctarget-feature`: `ptx80`
  |
warning: unused variable: `x`
  --> gpu/src/lib.rs:3:9
   |
warning: `gpu` (lib) generated 2 warnings
";
    assert_eq!(
        warnings(stderr),
        ["unused variable: `x` (gpu/src/lib.rs:3:9)"]
    );
}

#[test]
fn warnings_reach_cargo_once_with_their_archs() {
    let artifact = |arch, warnings: &[&str]| PtxArtifact {
        arch,
        path: PathBuf::from("k.ptx"),
        kernels: vec!["k".into()],
        warnings: warnings.iter().map(|w| w.to_string()).collect(),
        explicit_traps: Vec::new(),
        local_packages: Vec::new(),
        reused: false,
    };
    let lines = cargo_warnings(&[
        artifact(
            Arch::Sm80,
            &["unused variable: `x` (k/src/lib.rs:3:9)", "only sm_80"],
        ),
        artifact(Arch::Sm90, &["unused variable: `x` (k/src/lib.rs:3:9)"]),
    ]);
    assert_eq!(
        lines,
        [
            "cargo:warning=device code (sm_80, sm_90): unused variable: `x` (k/src/lib.rs:3:9)",
            "cargo:warning=device code (sm_80): only sm_80",
        ]
    );
}

#[test]
fn reads_the_package_name() {
    let manifest =
        "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\n[dependencies]\nname = \"x\"\n";
    assert_eq!(package_name(manifest).as_deref(), Some("my-kernels"));
    assert_eq!(lib_name("my-kernels"), "my_kernels");
    assert_eq!(package_name("[workspace]\nmembers = []\n"), None);
}

#[test]
fn builder_defaults_and_choices() {
    let b = CudaBuilder::new("k");
    assert_eq!(b.selected_archs(), Arch::ALL.to_vec());
    let b = b.arch(Arch::Sm90).arch(Arch::Sm90);
    assert_eq!(b.selected_archs(), [Arch::Sm90]);
    let err = CudaBuilder::new("/no/such/crate")
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("reading /no/such/crate/Cargo.toml"), "{err}");
    let err = CudaBuilder::new("k")
        .ptx_isa(60)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("PTX ISA 60"), "{err}");
}

#[test]
fn check_ptx_rejects_missing_kernel() {
    let ptx = ".version 8.0\n.visible .entry k(\n)\n{\nret;\n}\n";
    assert!(check_ptx(ptx, &["k".to_string()]).is_ok());
    let err = check_ptx(ptx, &["other".to_string()]).unwrap_err();
    assert!(err.to_string().contains("`other`"), "{err}");
}
