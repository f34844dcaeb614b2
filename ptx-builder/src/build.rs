//! `gpu` crate -> PTX, with rustc's NVPTX backend and the pinned toolchain's llvm-tools.
//!
//! 1. `cargo build -p gpu --target nvptx64-nvidia-cuda -Zbuild-std=core --profile ptx` with
//!    `-C target-cpu=<arch>`: every rlib of that build (gpu, core, compiler_builtins) holds LLVM
//!    bitcode, not machine code.
//! 2. The kernels are the unmangled functions `gpu` defines (`#[unsafe(no_mangle)]`).
//! 3. `llvm-link` the bitcode of all rlibs, `opt` internalizes everything but the kernels, drops
//!    what they do not reach, and optimizes (`internalize,globaldce,default<O3>`: dropping the
//!    unused parts of `core` first makes the link about 8x faster), `llc` emits the PTX.
//!
//! This is the link step rustc would hand to `llvm-bitcode-linker`, which is not downloadable
//! for the pinned nightly; doing it here keeps the build inside the repository and registries.

use crate::Arch;
use anyhow::{Context, Result, bail, ensure};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The device target rustc compiles `gpu` for.
pub const DEVICE_TARGET: &str = "nvptx64-nvidia-cuda";

/// What to build and with which tools.
#[derive(Clone, Debug)]
pub struct PtxBuild {
    /// The workspace holding the `gpu` package.
    pub workspace: PathBuf,
    /// `cargo` of the pinned toolchain (a build script gets it as `$CARGO`).
    pub cargo: PathBuf,
    /// `rustc` of the pinned toolchain (a build script gets it as `$RUSTC`).
    pub rustc: PathBuf,
    pub archs: Vec<Arch>,
}

impl PtxBuild {
    /// Every arch, with the `cargo` / `rustc` found in the environment (as set by cargo for a
    /// build script or `cargo run`), else on `PATH`.
    pub fn from_env(workspace: PathBuf) -> PtxBuild {
        let tool = |var: &str, fallback: &str| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(fallback))
        };
        PtxBuild {
            workspace,
            cargo: tool("CARGO", "cargo"),
            rustc: tool("RUSTC", "rustc"),
            archs: Arch::ALL.to_vec(),
        }
    }
}

/// One PTX module produced by [`build_ptx`].
#[derive(Clone, Debug)]
pub struct PtxArtifact {
    pub arch: Arch,
    pub path: PathBuf,
    /// Kernel entry points, sorted.
    pub kernels: Vec<String>,
    /// Compiler warnings about the device code (first line and location of each).
    pub warnings: Vec<String>,
}

/// Builds one PTX file per requested arch at [`crate::ptx_path`].
pub fn build_ptx(req: &PtxBuild) -> Result<Vec<PtxArtifact>> {
    let llvm = LlvmTools::locate(&req.rustc)?;
    req.archs
        .iter()
        .map(|&arch| build_arch(req, &llvm, arch))
        .collect()
}

/// The `llvm-link`, `opt`, `llc`, `llvm-ar` and `llvm-nm` of the toolchain's `llvm-tools`.
struct LlvmTools {
    bin: PathBuf,
}

impl LlvmTools {
    fn locate(rustc: &Path) -> Result<LlvmTools> {
        let sysroot = capture(Command::new(rustc).args(["--print", "sysroot"]))
            .context("asking rustc for its sysroot")?;
        let version = capture(Command::new(rustc).arg("-vV"))?;
        let host = version
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .context("`rustc -vV` printed no host triple")?;
        let bin = Path::new(sysroot.trim())
            .join("lib/rustlib")
            .join(host.trim())
            .join("bin");
        let tools = LlvmTools { bin };
        for name in ["llvm-link", "opt", "llc", "llvm-ar", "llvm-nm"] {
            ensure!(
                tools.path(name).is_file(),
                "{} is missing: the toolchain needs its `llvm-tools` component \
                 (`rustup component add llvm-tools`, or `rustup toolchain install` in the workspace)",
                tools.path(name).display()
            );
        }
        Ok(tools)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    fn cmd(&self, name: &str) -> Command {
        Command::new(self.path(name))
    }
}

fn build_arch(req: &PtxBuild, llvm: &LlvmTools, arch: Arch) -> Result<PtxArtifact> {
    let out_dir = req.workspace.join("target").join("ptx").join(arch.name());
    let DeviceBuild { rlibs, warnings } = cargo_build_gpu(req, arch, &out_dir)?;

    // Unpack every rlib's bitcode members; each rlib gets its own folder since member names
    // of different crates may collide.
    let link_dir = out_dir.join("link");
    if link_dir.exists() {
        std::fs::remove_dir_all(&link_dir)
            .with_context(|| format!("cleaning {}", link_dir.display()))?;
    }
    let mut bitcode = Vec::new();
    let mut gpu_bitcode = Vec::new();
    for (crate_name, rlib) in &rlibs {
        let dir = link_dir.join(crate_name);
        std::fs::create_dir_all(&dir)?;
        run(llvm.cmd("llvm-ar").current_dir(&dir).arg("x").arg(rlib))
            .with_context(|| format!("unpacking {}", rlib.display()))?;
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "o") {
                if crate_name == "gpu" {
                    gpu_bitcode.push(path.clone());
                }
                bitcode.push(path);
            }
        }
    }
    ensure!(
        !gpu_bitcode.is_empty(),
        "the gpu rlib held no bitcode object"
    );

    let kernels = kernel_symbols(llvm, &gpu_bitcode)?;
    ensure!(
        !kernels.is_empty(),
        "the gpu crate defines no kernel (no `#[unsafe(no_mangle)] extern \"ptx-kernel\" fn`)"
    );

    let linked = link_dir.join("linked.bc");
    run(llvm.cmd("llvm-link").args(&bitcode).arg("-o").arg(&linked)).context("llvm-link")?;

    let optimized = link_dir.join("optimized.bc");
    run(llvm
        .cmd("opt")
        .arg("--passes=internalize,globaldce,default<O3>")
        .arg("-unroll-threshold=4000")
        .arg(format!(
            "--internalize-public-api-list={}",
            kernels.join(",")
        ))
        .arg(&linked)
        .arg("-o")
        .arg(&optimized))
    .context("opt")?;

    let ptx = crate::ptx_path(&req.workspace, arch);
    run(llvm
        .cmd("llc")
        .arg("-O3")
        .arg(format!("-mcpu={}", arch.name()))
        .arg(format!("-mattr={}", arch.ptx_isa_feature()))
        .arg(&optimized)
        .arg("-o")
        .arg(&ptx))
    .context("llc")?;

    let text = std::fs::read_to_string(&ptx)?;
    let text = apply_max_threads(&text).with_context(|| format!("patching {}", ptx.display()))?;
    std::fs::write(&ptx, &text)?;
    check_ptx(&text, &kernels).with_context(|| format!("checking {}", ptx.display()))?;
    Ok(PtxArtifact {
        arch,
        path: ptx,
        kernels,
        warnings,
    })
}

/// What the device build produced: `(crate name, rlib)` for every crate, and its warnings.
struct DeviceBuild {
    rlibs: Vec<(String, PathBuf)>,
    warnings: Vec<String>,
}

/// `cargo <subcommand> -p gpu` for the device target of `arch`, in the environment the
/// device build needs.
pub fn device_cargo(req: &PtxBuild, subcommand: &str, arch: Arch, target_dir: &Path) -> Command {
    let mut cmd = Command::new(&req.cargo);
    cmd.current_dir(&req.workspace)
        .args([
            subcommand,
            "--quiet",
            "-p",
            "gpu",
            "--lib",
            "--target",
            DEVICE_TARGET,
        ])
        .args(["-Zbuild-std=core", "--profile", "ptx"])
        .arg("--target-dir")
        .arg(target_dir);
    // The caller may be cargo itself (host's build script, `cargo clippy`): its flags, wrappers
    // and target settings are meant for the host build, not this one.
    for var in [
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_RUSTC_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    let rustflags = [
        format!("-Ctarget-cpu={}", arch.name()),
        format!("-Ctarget-feature={}", arch.ptx_isa_feature()),
    ]
    .join("\x1f");
    cmd.env("CARGO_ENCODED_RUSTFLAGS", rustflags)
        .env("RUSTC", &req.rustc);
    cmd
}

/// Runs the device build of `gpu`.
fn cargo_build_gpu(req: &PtxBuild, arch: Arch, out_dir: &Path) -> Result<DeviceBuild> {
    let mut cmd = device_cargo(req, "build", arch, out_dir);
    cmd.arg("--message-format=json-render-diagnostics");
    let output = cmd
        .output()
        .with_context(|| format!("running {}", req.cargo.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "the device build of `gpu` for {arch} failed:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    let mut rlibs = Vec::new();
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let name = msg["target"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for file in msg["filenames"].as_array().into_iter().flatten() {
            if let Some(file) = file.as_str().filter(|f| f.ends_with(".rlib")) {
                rlibs.push((name.clone(), PathBuf::from(file)));
            }
        }
    }
    ensure!(
        rlibs.iter().any(|(n, _)| n == "gpu"),
        "the device build of `gpu` for {arch} reported no gpu rlib"
    );
    Ok(DeviceBuild {
        rlibs,
        warnings: warnings(&String::from_utf8_lossy(&output.stderr)),
    })
}

/// The warnings in rustc's rendered output, one line each (`message (file:line)`), without
/// the one `-Ctarget-feature=+ptx80` always causes and without cargo's totals.
fn warnings(stderr: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut lines = stderr.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(message) = line.strip_prefix("warning: ") else {
            continue;
        };
        if message.starts_with("unstable feature specified for `-Ctarget-feature`")
            || message.contains("generated ")
        {
            continue;
        }
        let location = lines
            .peek()
            .and_then(|next| next.trim_start().strip_prefix("--> "))
            .map(|loc| format!(" ({loc})"))
            .unwrap_or_default();
        found.push(format!("{message}{location}"));
    }
    found
}

/// The kernels: functions `gpu` defines under an unmangled name. Everything else rustc emits
/// carries a mangled (`_R...` or `_ZN...`) name.
fn kernel_symbols(llvm: &LlvmTools, objects: &[PathBuf]) -> Result<Vec<String>> {
    let listing = capture(llvm.cmd("llvm-nm").arg("--defined-only").args(objects))?;
    let mut kernels: Vec<String> = listing
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().rev();
            let name = fields.next()?;
            let kind = fields.next()?;
            (kind == "T" && !name.starts_with("_R") && !name.starts_with("_ZN"))
                .then(|| name.to_string())
        })
        .collect();
    kernels.sort();
    kernels.dedup();
    Ok(kernels)
}

/// The marker `gpu::max_threads!` leaves in the PTX (a comment line from module-level asm):
/// `// max-threads KERNEL N`.
pub const MAX_THREADS_MARKER: &str = "// max-threads ";

/// Gives every kernel named by a `// max-threads KERNEL N` line the directive
/// `.maxntid N, 1, 1` (inserted after its parameter list): ptxas then keeps the kernel's
/// registers within what `N` threads of a block may have. rustc has no launch-bounds
/// attribute; this is how `gpu::max_threads!` reaches the PTX.
pub fn apply_max_threads(ptx: &str) -> Result<String> {
    let mut bounds = Vec::new();
    for line in ptx.lines() {
        let Some(rest) = line.trim_start().strip_prefix(MAX_THREADS_MARKER) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let (Some(name), Some(threads)) = (fields.next(), fields.next()) else {
            bail!("malformed launch-bounds marker `{line}`");
        };
        let threads: u32 = threads
            .parse()
            .ok()
            .filter(|t| (1..=1024).contains(t))
            .with_context(|| format!("`{line}`: threads must be 1..=1024"))?;
        bounds.push((name.to_string(), threads));
    }
    if bounds.is_empty() {
        return Ok(ptx.to_string());
    }
    let mut out = String::with_capacity(ptx.len() + 32 * bounds.len());
    let mut pending: Option<u32> = None;
    let mut applied = 0;
    let mut lines = ptx.lines().peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        if let Some(name) = crate::ptx_text::entry_names(line).first() {
            pending = bounds.iter().find(|(k, _)| k == name).map(|(_, t)| *t);
        }
        // The parameter list ends with `)`; a body `{` follows a definition, `;` a
        // declaration (which needs no directive).
        if let Some(threads) = pending
            && line.trim_start().starts_with(')')
        {
            if lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with('{'))
            {
                out.push_str(&format!(".maxntid {threads}, 1, 1\n"));
                applied += 1;
            }
            pending = None;
        }
    }
    ensure!(
        applied == bounds.len(),
        "{} launch-bounds markers, but {applied} of their kernels found",
        bounds.len()
    );
    Ok(out)
}

/// A PTX module ptxas can take on its own: every kernel is an entry, nothing is left external.
fn check_ptx(text: &str, kernels: &[String]) -> Result<()> {
    if let Some(line) = text.lines().find(|l| l.starts_with(".extern .func")) {
        bail!(
            "the PTX calls a function nothing defines (`{line}`); usually a `core` function \
             that was not linked"
        );
    }
    let entries = crate::ptx_text::entry_names(text);
    for kernel in kernels {
        ensure!(
            entries.iter().any(|e| e == kernel),
            "kernel `{kernel}` is not an entry of the PTX (is it `extern \"ptx-kernel\"`?)"
        );
    }
    Ok(())
}

fn run(cmd: &mut Command) -> Result<()> {
    capture(cmd).map(drop)
}

/// Runs `cmd` and returns its stdout; a failure carries the command and its stderr.
pub(crate) fn capture(cmd: &mut Command) -> Result<String> {
    let program: OsString = cmd.get_program().to_owned();
    let output = cmd
        .output()
        .with_context(|| format!("could not run {}", program.to_string_lossy()))?;
    if !output.status.success() {
        bail!(
            "{} failed ({}):\n{}",
            program.to_string_lossy(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_ptx_rejects_unresolved_calls() {
        let ptx = ".version 8.0\n.extern .func foo()\n.visible .entry k(\n)\n{\nret;\n}\n";
        let err = check_ptx(ptx, &["k".to_string()]).unwrap_err();
        assert!(err.to_string().contains("nothing defines"), "{err}");
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
    fn max_threads_markers_become_maxntid() {
        let ptx = "// max-threads k 288\n.visible .entry k\n(\n\t.param .u32 k_param_0\n)\n;\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n{\nret;\n}\n.visible .entry other(\n)\n{\nret;\n}\n";
        let patched = apply_max_threads(ptx).unwrap();
        assert!(patched.contains(")\n.maxntid 288, 1, 1\n{"), "{patched}");
        assert_eq!(patched.matches(".maxntid").count(), 1);
        let missing = apply_max_threads("// max-threads gone 64\n.visible .entry k(\n)\n{\n}\n");
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("1 launch-bounds markers")
        );
        assert!(apply_max_threads("// max-threads k 0\n").is_err());
        assert_eq!(
            apply_max_threads(".entry k(\n)\n").unwrap(),
            ".entry k(\n)\n"
        );
    }

    #[test]
    fn check_ptx_rejects_missing_kernel() {
        let ptx = ".version 8.0\n.visible .entry k(\n)\n{\nret;\n}\n";
        assert!(check_ptx(ptx, &["k".to_string()]).is_ok());
        let err = check_ptx(ptx, &["other".to_string()]).unwrap_err();
        assert!(err.to_string().contains("`other`"), "{err}");
    }
}
