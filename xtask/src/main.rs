//! `cargo xtask build-ptx [--arch sm_80|sm_90|sm_90a]... [--force]`
//!
//! Builds the device code — the `workloads` crate on the `gpu` library — into
//! `target/ptx/<arch>/workloads.ptx` for each arch (all by default). When NVIDIA's ptxas is
//! found, assembles each PTX for its arch, fails on any ptxas error, and prints per kernel the
//! registers, static shared memory, stack frame and spill bytes. Without `--arch`, it also
//! refreshes gpu-kernels' carried modules (`kernels/ptx`, `ptx_builder::carried`) and
//! assembles them. A module whose inputs did not change since the last run is neither rebuilt
//! nor assembled again (a stamp beside it, a fingerprint beside its cubin); `--force` rebuilds
//! every one.
//!
//! `cargo xtask clippy [--arch ...]`: clippy on the device code (`-D warnings`), per arch, the
//! `workloads` crate and the `gpu` library under it, since `cargo clippy --workspace` only
//! sees their host builds.
//!
//! `cargo xtask doc`: the library's documentation as a user sees it — the `gpu` crate alone,
//! built for the device target (sm_90) — with every warning (a broken link, a
//! missing doc) an error. Lands in `target/doc-device/nvptx64-nvidia-cuda/doc/gpu/`.

use anyhow::{Context, Result, bail};
use ptx_builder::nvtools::{self, Tool};
use ptx_builder::{Arch, CudaBuilder, workspace_device_code, workspace_root};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: cargo xtask (build-ptx [--force] | clippy | doc) [--arch sm_80|sm_90|sm_90a]...";

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let mut args = args.into_iter();
    let command = match args.next() {
        Some(c) if c == "build-ptx" || c == "clippy" || c == "doc" => c,
        Some(c) if c == "-h" || c == "--help" => {
            println!("{USAGE}");
            return Ok(());
        }
        None => {
            println!("{USAGE}");
            return Ok(());
        }
        Some(other) => bail!("unknown command `{other}`\n{USAGE}"),
    };
    let mut archs = Vec::new();
    let mut force = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--force" if command == "build-ptx" => force = true,
            "--arch" => {
                let name = args.next().context("--arch needs a value")?;
                archs.push(Arch::from_name(&name).with_context(|| {
                    format!("unknown arch `{name}`: expected sm_80, sm_90 or sm_90a")
                })?);
            }
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let all_archs = archs.is_empty();
    let builder = workspace_device_code().archs(archs);
    match command.as_str() {
        "clippy" => return clippy(&builder),
        "doc" => return doc(),
        _ => {}
    }
    let artifacts = builder.reuse_unchanged(!force).build()?;
    let ptxas = nvtools::require(Tool::Ptxas);
    for artifact in &artifacts {
        println!(
            "{}: {} ({} kernels{})",
            artifact.arch,
            artifact.path.display(),
            artifact.kernels.len(),
            if artifact.reused { ", unchanged" } else { "" }
        );
        for warning in &artifact.warnings {
            println!("  warning: {warning}");
        }
        let Ok(ptxas) = &ptxas else { continue };
        let cubin = artifact.path.with_extension("cubin");
        let (kernels, _) = nvtools::assemble_cached(ptxas, &artifact.path, artifact.arch, &cubin)?;
        println!(
            "  {:<40} {:>5} {:>8} {:>7} {:>7}",
            "kernel", "regs", "smem B", "stack B", "spill B"
        );
        for k in kernels {
            println!(
                "  {:<40} {:>5} {:>8} {:>7} {:>7}",
                k.name,
                k.registers,
                k.shared_bytes,
                k.stack_frame_bytes,
                k.spill_store_bytes + k.spill_load_bytes
            );
        }
    }
    if all_archs {
        refresh_carried(ptxas.as_ref().ok(), force)?;
    } else {
        println!("gpu-kernels' carried PTX (kernels/ptx) is refreshed only without --arch");
    }
    if let Err(missing) = &ptxas {
        println!("ptxas not found, so the PTX was not assembled: {missing}");
    }
    Ok(())
}

/// Refreshes gpu-kernels' carried modules (`kernels/ptx`) and assembles each with ptxas, so
/// that an error ptxas finds in them fails here rather than in a user's build (where it is
/// only a warning). One line per module: its kernels and their worst registers and spills.
fn refresh_carried(ptxas: Option<&PathBuf>, force: bool) -> Result<()> {
    let root = workspace_root();
    for module in ptx_builder::carried::refresh(&root, force)? {
        let artifact = &module.artifact;
        let state = match (artifact.reused, module.written) {
            (_, true) => "updated",
            (false, false) => "rebuilt, unchanged",
            (true, false) => "unchanged",
        };
        print!(
            "gpu-kernels {}: {} ({} kernels, {state})",
            artifact.arch,
            module
                .path
                .strip_prefix(&root)
                .unwrap_or(&module.path)
                .display(),
            artifact.kernels.len()
        );
        if let Some(ptxas) = ptxas {
            let cubin = artifact.path.with_extension("cubin");
            let (kernels, _) =
                nvtools::assemble_cached(ptxas, &module.path, artifact.arch, &cubin)?;
            let regs = kernels.iter().map(|k| k.registers).max().unwrap_or(0);
            let spills: u32 = kernels
                .iter()
                .map(|k| k.spill_store_bytes + k.spill_load_bytes)
                .sum();
            print!("; ptxas: up to {regs} registers, {spills} spill bytes");
        }
        println!();
        for warning in &artifact.warnings {
            println!("  warning: {warning}");
        }
    }
    Ok(())
}

/// Clippy over the device build of `workloads` (and `gpu`, a workspace member under it), each
/// arch in its own target folder, and over `gpu-kernels`' (every arch too).
fn clippy(builder: &CudaBuilder) -> Result<()> {
    let kernels = CudaBuilder::new(workspace_root().join("kernels"));
    let jobs = builder
        .selected_archs()
        .into_iter()
        .map(|arch| (builder, arch, "workloads"))
        .chain(Arch::ALL.map(|arch| (&kernels, arch, "gpu-kernels")));
    for (builder, arch, what) in jobs {
        let dir = workspace_root()
            .join("target")
            .join("clippy")
            .join(arch.name());
        let status = builder
            .cargo_command("clippy", arch, &dir)
            .args(["--", "-D", "warnings"])
            .status()
            .context("running cargo clippy")?;
        if !status.success() {
            bail!("clippy found problems in the device code of {what} for {arch}");
        }
        println!("clippy: device code of {what} for {arch} is clean");
    }
    Ok(())
}

/// The library's docs for the device target, warnings denied.
fn doc() -> Result<()> {
    let library = CudaBuilder::new(workspace_root().join("gpu"));
    let dir = workspace_root().join("target").join("doc-device");
    let status = library
        .cargo_command("doc", Arch::Sm90a, &dir)
        .arg("--no-deps")
        // rustdoc reads its own flags: the arch decides which wrappers exist (try_wait: sm_90;
        // wgmma: sm_90a, which has every sm_90 one too).
        .env(
            "RUSTDOCFLAGS",
            "-Ctarget-cpu=sm_90a -Ctarget-feature=+ptx81 -D warnings",
        )
        .status()
        .context("running cargo doc")?;
    if !status.success() {
        bail!("the library's documentation has broken links or missing docs (see above)");
    }
    println!(
        "doc: {}",
        dir.join("nvptx64-nvidia-cuda/doc/gpu/index.html").display()
    );
    Ok(())
}
