//! Builds the device code (the `gpu` crate with its workloads) for every arch through the
//! same builder as `cargo xtask build-ptx`, so `cargo run -p host` never runs with missing or
//! stale PTX. The PTX is embedded in the host binary (`GPU_PTX_SM_80`, `GPU_PTX_SM_90`).

fn main() {
    let builder = ptx_builder::workspace_device_code().emit_rerun_if_changed();
    match builder.build() {
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
