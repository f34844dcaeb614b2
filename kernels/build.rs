//! The host build embeds this crate's own device code: it builds the crate for nvptx64
//! (every arch of `ptx_builder::Arch::ALL`) through `ptx-builder`, assembles the module with ptxas
//! where it is found (else the driver compiles the PTX at load), and writes
//! `$OUT_DIR/gpu_kernels_modules.rs`, the module table `src/lib.rs` includes. The device build
//! of the crate (as a dependency of another device crate, or this script's own) does nothing
//! here.

use ptx_builder::CudaBuilder;
use ptx_builder::nvtools::{self, Tool};
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.starts_with("nvptx64") {
        return;
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // Every arch: the FP32 GEMM runs from sm_80, the tensor-core kernels on sm_90a.
    let artifacts = CudaBuilder::new(&manifest)
        .target_dir(
            ptx_builder::workspace_root()
                .join("target")
                .join("gpu-kernels"),
        )
        .emit_rerun_if_changed()
        .build();
    let artifacts = match artifacts {
        Ok(artifacts) => artifacts,
        Err(err) => {
            eprintln!("error: building gpu-kernels' device code failed: {err:#}");
            std::process::exit(1);
        }
    };
    for var in [Tool::Ptxas.env_var(), "NVIDIA_TOOLS_BIN", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let ptxas = nvtools::find(Tool::Ptxas);
    let mut table = String::from("// Written by gpu-kernels' build script.\n&[\n");
    for artifact in &artifacts {
        let cubin = artifact.path.with_extension("cubin");
        let cubin = match &ptxas {
            Some(ptxas) => {
                println!("cargo:rerun-if-changed={}", ptxas.display());
                match nvtools::assemble_if_changed(ptxas, &artifact.path, artifact.arch, &cubin) {
                    Ok(_) => format!("Some(include_bytes!({:?}))", cubin.display().to_string()),
                    Err(err) => {
                        let err = format!("{err:#}");
                        println!(
                            "cargo:warning=ptxas did not assemble gpu-kernels' {} PTX (the \
                             driver compiles it at load): {}",
                            artifact.arch,
                            err.lines().next().unwrap_or(&err)
                        );
                        "None".to_string()
                    }
                }
            }
            None => "None".to_string(),
        };
        table.push_str(&format!(
            "    gpu_runtime::Module {{ arch: gpu_runtime::Arch::{:?}, ptx: include_str!({:?}), \
             cubin: {cubin} }},\n",
            artifact.arch,
            artifact.path.display().to_string()
        ));
    }
    table.push_str("]\n");
    if let Err(err) = std::fs::write(out.join("gpu_kernels_modules.rs"), table) {
        eprintln!("error: writing gpu_kernels_modules.rs: {err}");
        std::process::exit(1);
    }
}
