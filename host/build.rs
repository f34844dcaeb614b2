//! Builds the device code (the `gpu` crate with its workloads) for every arch through the
//! same builder as `cargo xtask build-ptx`, so `cargo run -p host` never runs with missing or
//! stale PTX. The PTX is embedded in the host binary (`GPU_PTX_SM_80`, `GPU_PTX_SM_90`), and
//! so is each module assembled by NVIDIA's ptxas where it is found (`GPU_CUBIN_SM_80`,
//! `GPU_CUBIN_SM_90`; an empty file where not): a GPU of that arch then loads the machine
//! code as it is, instead of compiling the PTX at first load (about 30 s for these modules on
//! an H200 without the driver's cache).

use ptx_builder::PtxArtifact;
use ptx_builder::nvtools::{self, Tool};
use std::path::{Path, PathBuf};

fn main() {
    let builder = ptx_builder::workspace_device_code().emit_rerun_if_changed();
    let artifacts = match builder.build() {
        Ok(artifacts) => artifacts,
        Err(err) => {
            eprintln!("error: building the device code failed: {err:#}");
            std::process::exit(1);
        }
    };
    for var in [Tool::Ptxas.env_var(), "NVIDIA_TOOLS_BIN"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let ptxas = nvtools::find(Tool::Ptxas);
    if ptxas.is_none() {
        println!(
            "cargo:warning=NVIDIA's ptxas was not found: the host binary carries PTX only, which \
             the driver compiles when it loads it (`bash .ci/run` installs ptxas into .tools/)"
        );
    }
    // ptxas takes about half a minute per module: both archs at once.
    let cubins: Vec<PathBuf> = std::thread::scope(|scope| {
        let jobs: Vec<_> = artifacts
            .iter()
            .map(|artifact| scope.spawn(|| embedded_cubin(ptxas.as_deref(), artifact)))
            .collect();
        jobs.into_iter()
            .map(|job| job.join().expect("the ptxas thread panicked"))
            .collect()
    });
    for (artifact, cubin) in artifacts.iter().zip(cubins) {
        for warning in &artifact.warnings {
            println!("cargo:warning=device code ({}): {warning}", artifact.arch);
        }
        let arch = artifact.arch.name().to_uppercase();
        println!("cargo:rustc-env=GPU_PTX_{arch}={}", artifact.path.display());
        println!("cargo:rustc-env=GPU_CUBIN_{arch}={}", cubin.display());
    }
}

/// The file to embed as `artifact`'s cubin: its assembly by `ptxas` (current, or made now), or
/// an empty file when there is no ptxas or it refused the PTX (said as a warning: the host
/// then loads the PTX, and `cargo xtask build-ptx` shows ptxas's error).
fn embedded_cubin(ptxas: Option<&Path>, artifact: &PtxArtifact) -> PathBuf {
    let cubin = artifact.path.with_extension("cubin");
    if let Some(ptxas) = ptxas {
        match nvtools::assemble_if_changed(ptxas, &artifact.path, artifact.arch, &cubin) {
            Ok(_) => return cubin,
            Err(err) => println!(
                "cargo:warning=ptxas did not assemble the {} PTX, so the host carries PTX only: \
                 {}",
                artifact.arch,
                first_line(&format!("{err:#}"))
            ),
        }
    }
    let none = artifact.path.with_extension("no-cubin");
    if let Err(err) = std::fs::write(&none, b"") {
        eprintln!("error: writing {}: {err}", none.display());
        std::process::exit(1);
    }
    none
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}
