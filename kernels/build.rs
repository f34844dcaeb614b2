//! The host build embeds this crate's own device code, one module per arch of
//! `ptx_builder::Arch::ALL`, and writes `$OUT_DIR/gpu_kernels_modules.rs`, the module table
//! `src/lib.rs` includes. The device build of the crate (as a dependency of another device
//! crate, or the rebuild below) does nothing here.
//!
//! The modules are the PTX the crate carries in `ptx/` (`ptx_builder::carried`), so that a
//! crate on stable builds this one without a nightly: used as they are when this copy of the
//! crate is not in a checkout of the repository (a package: nothing to rebuild them from), or
//! when the manifest beside them names the digest of the sources beside them. When a
//! developer changed the device code and did not run `cargo xtask build-ptx`, they are
//! rebuilt from source into `$OUT_DIR` with the pinned nightly, found through rustup whatever
//! toolchain runs this build. Each module is assembled by NVIDIA's ptxas where it is found
//! (into `$OUT_DIR`; else the driver compiles the PTX at load). Nothing is written outside
//! `$OUT_DIR`.

use ptx_builder::carried::{self, State};
use ptx_builder::nvtools::{self, Tool};
use ptx_builder::{Arch, CudaBuilder, PinnedToolchain};
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.starts_with("nvptx64") {
        return;
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let carried = carried::check(&manifest).unwrap_or_else(|err| fail(&format!("{err:#}")));
    // Watched: the carried modules, and in a checkout the sources they are checked against —
    // nothing of the crate that depends on this one, so its edits do not rerun this script.
    println!(
        "cargo:rerun-if-changed={}",
        manifest.join(carried::PTX_DIR).display()
    );
    if let State::Current { root } | State::Stale { root, .. } = &carried.state {
        for source in carried::SOURCES {
            let path = root.join(source);
            // A watched path that does not exist would rerun the script on every build.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let modules = match carried.state {
        State::Current { .. } | State::Packaged => carried.modules,
        State::Stale { root, why } => rebuild(&manifest, &root, &why, &out),
    };
    for var in [Tool::Ptxas.env_var(), "NVIDIA_TOOLS_BIN", "PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let ptxas = nvtools::find(Tool::Ptxas);
    if let Some(ptxas) = &ptxas {
        println!("cargo:rerun-if-changed={}", ptxas.display());
    }
    // ptxas takes a while per module: every arch at once.
    let cubins: Vec<Option<PathBuf>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = modules
            .iter()
            .map(|(arch, ptx)| scope.spawn(|| assemble(ptxas.as_deref(), *arch, ptx, &out)))
            .collect();
        jobs.into_iter()
            .map(|job| job.join().expect("the ptxas thread panicked"))
            .collect()
    });
    let mut table = String::from("// Written by gpu-kernels' build script.\n&[\n");
    for ((arch, ptx), cubin) in modules.iter().zip(cubins) {
        let cubin = match cubin {
            Some(cubin) => format!("Some(include_bytes!({:?}))", cubin.display().to_string()),
            None => "None".to_string(),
        };
        table.push_str(&format!(
            "    gpu_runtime::Module {{ arch: gpu_runtime::Arch::{arch:?}, ptx: include_str!({:?}), \
             cubin: {cubin} }},\n",
            ptx.display().to_string()
        ));
    }
    table.push_str("]\n");
    if let Err(err) = std::fs::write(out.join("gpu_kernels_modules.rs"), table) {
        fail(&format!("writing gpu_kernels_modules.rs: {err}"));
    }
}

/// Builds the device code from source into `$OUT_DIR/device` with the toolchain the
/// repository at `root` pins, since the carried modules are stale (`why`).
fn rebuild(manifest: &Path, root: &Path, why: &str, out: &Path) -> Vec<(Arch, PathBuf)> {
    println!(
        "cargo:warning=gpu-kernels' carried PTX (kernels/ptx) is stale ({why}): building the \
         device code from source with the pinned nightly; run `cargo xtask build-ptx` to \
         refresh it"
    );
    let toolchain = PinnedToolchain::find(&root.join("rust-toolchain.toml"))
        .unwrap_or_else(|err| fail(&format!("{err:#}")));
    let artifacts = CudaBuilder::new(manifest)
        .toolchain(&toolchain)
        .target_dir(out.join("device"))
        .emit_rerun_if_changed()
        .build()
        .unwrap_or_else(|err| fail(&format!("building gpu-kernels' device code: {err:#}")));
    artifacts.into_iter().map(|a| (a.arch, a.path)).collect()
}

/// `ptx` assembled for `arch` into `$OUT_DIR/cubin`, or none when there is no ptxas or it
/// refused the PTX (a warning: the driver then compiles the PTX at load).
fn assemble(ptxas: Option<&Path>, arch: Arch, ptx: &Path, out: &Path) -> Option<PathBuf> {
    let dir = out.join("cubin");
    std::fs::create_dir_all(&dir).ok()?;
    let cubin = dir.join(format!("gpu_kernels.{}.cubin", arch.name()));
    match nvtools::assemble_if_changed(ptxas?, ptx, arch, &cubin) {
        Ok(_) => Some(cubin),
        Err(err) => {
            let err = format!("{err:#}");
            println!(
                "cargo:warning=ptxas did not assemble gpu-kernels' {arch} PTX (the driver \
                 compiles it at load): {}",
                err.lines().next().unwrap_or(&err)
            );
            None
        }
    }
}

/// Ends the build script with `message` as cargo's error.
fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}
