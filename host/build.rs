//! Builds the device code: `target/ptx/<arch>/gpu.ptx` for every arch, through the same code
//! as `cargo xtask build-ptx`, so `cargo run -p host` never runs with missing or stale PTX.
//! The PTX is embedded in the host binary (`GPU_PTX_SM_80`, `GPU_PTX_SM_90`).

use ptx_builder::build::{PtxBuild, build_ptx};
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest
        .parent()
        .expect("host lives in the workspace")
        .to_path_buf();
    for input in [
        "gpu/src",
        "gpu/Cargo.toml",
        "Cargo.toml",
        "rust-toolchain.toml",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(input).display());
    }
    match build_ptx(&PtxBuild::from_env(workspace)) {
        Ok(artifacts) => {
            for artifact in artifacts {
                for warning in &artifact.warnings {
                    println!("cargo:warning=device code ({}): {warning}", artifact.arch);
                }
                println!(
                    "cargo:rustc-env=GPU_PTX_{}={}",
                    artifact.arch.name().to_uppercase(),
                    artifact.path.display()
                );
            }
        }
        Err(err) => {
            eprintln!("error: building the device code failed: {err:#}");
            std::process::exit(1);
        }
    }
}
