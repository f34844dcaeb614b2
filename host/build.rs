//! Builds the device code (the `workloads` crate on the `gpu` library) for every arch through the
//! same builder as `cargo xtask build-ptx`, so `cargo run -p host` never runs with missing or
//! stale PTX. The PTX is embedded in the host binary, and so is each module assembled by
//! NVIDIA's ptxas where it is found: a GPU of that arch then loads the machine code as it is,
//! instead of compiling the PTX at first load (about 30 s for these modules on an H200 without
//! the driver's cache). `$OUT_DIR/modules.rs` lists one `gpu_runtime::Module` per arch of
//! `ptx_builder::Arch::ALL`, for `src/device_code.rs` to include.

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
    // The builder watches the device crate and its path dependencies (the `gpu` library) and
    // passes the device build's warnings on.
    let ptxas = nvtools::find(Tool::Ptxas);
    watch_for_ptxas(ptxas.as_deref());
    if ptxas.is_none() {
        println!(
            "cargo:warning=NVIDIA's ptxas was not found: the host binary carries PTX only, which \
             the driver compiles when it loads it (`bash .ci/run` installs ptxas into .tools/; \
             the next build then assembles the modules)"
        );
    }
    // ptxas takes about half a minute per module: both archs at once.
    let cubins: Vec<Option<PathBuf>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = artifacts
            .iter()
            .map(|artifact| scope.spawn(|| embedded_cubin(ptxas.as_deref(), artifact)))
            .collect();
        jobs.into_iter()
            .map(|job| job.join().expect("the ptxas thread panicked"))
            .collect()
    });
    let mut modules = String::from(
        "/// Every module the host carries, one per arch.\npub const MODULES: &[gpu_runtime::Module] = &[\n",
    );
    for (artifact, cubin) in artifacts.iter().zip(cubins) {
        let cubin = match cubin {
            Some(cubin) => format!("Some(include_bytes!({:?}))", cubin.display().to_string()),
            None => "None".to_string(),
        };
        modules.push_str(&format!(
            "    gpu_runtime::Module {{ arch: ptx_builder::Arch::{:?}, ptx: include_str!({:?}), cubin: {cubin} }},\n",
            artifact.arch,
            artifact.path.display().to_string(),
        ));
    }
    modules.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(err) = std::fs::write(out.join("modules.rs"), modules) {
        eprintln!("error: writing modules.rs: {err}");
        std::process::exit(1);
    }
}

/// `artifact`'s cubin to embed: its assembly by `ptxas` (current, or made now), or none when
/// there is no ptxas or it refused the PTX (said as a warning: the host then loads the PTX, and
/// `cargo xtask build-ptx` shows ptxas's error).
fn embedded_cubin(ptxas: Option<&Path>, artifact: &PtxArtifact) -> Option<PathBuf> {
    let cubin = artifact.path.with_extension("cubin");
    match nvtools::assemble_if_changed(ptxas?, &artifact.path, artifact.arch, &cubin) {
        Ok(_) => Some(cubin),
        Err(err) => {
            println!(
                "cargo:warning=ptxas did not assemble the {} PTX, so the host carries PTX only: \
                 {}",
                artifact.arch,
                first_line(&format!("{err:#}"))
            );
            None
        }
    }
}

/// Reruns this script when ptxas appears, moves or changes where `nvtools::find` looks: its
/// environment variables and `PATH`, the ptxas found (a new version reassembles), and — while
/// none is found — the project's `.tools/` folder, which `.ci/run` fills (made here, empty, so
/// that cargo can watch it: a watched path that does not exist reruns the script every build).
fn watch_for_ptxas(found: Option<&Path>) {
    for var in [Tool::Ptxas.env_var(), "NVIDIA_TOOLS_BIN", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    match found {
        Some(ptxas) => println!("cargo:rerun-if-changed={}", ptxas.display()),
        None => {
            let tools = ptx_builder::workspace_root().join(".tools");
            if std::fs::create_dir_all(&tools).is_ok() {
                println!("cargo:rerun-if-changed={}", tools.display());
            }
            let cuda = Path::new("/usr/local/cuda/bin");
            if cuda.is_dir() {
                println!("cargo:rerun-if-changed={}", cuda.display());
            }
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}
