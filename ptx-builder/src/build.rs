//! A `no_std` device crate -> PTX, with rustc's NVPTX backend and the pinned toolchain's
//! llvm-tools: [`CudaBuilder`], the shape Rust-CUDA's `cuda_builder` made familiar, called from a
//! `build.rs` or a build tool.
//!
//! 1. `cargo build` of the crate for `nvptx64-nvidia-cuda` with `-Zbuild-std=core`, release
//!    settings fit for device code (`panic = "abort"`, one codegen unit) and
//!    `-C target-cpu=<arch>`: every rlib of that build (the crate, its dependencies, core,
//!    compiler_builtins) holds LLVM bitcode, not machine code.
//! 2. The kernels are the unmangled functions the crate itself defines
//!    (`#[unsafe(no_mangle)] extern "ptx-kernel" fn`).
//! 3. `llvm-link` the bitcode of all rlibs, `opt` internalizes everything but the kernels,
//!    drops what they do not reach, and optimizes (`internalize,globaldce,default<O3>`:
//!    dropping the unused parts of `core` first makes the link about 8x faster), `llc` emits
//!    the PTX, and `gpu::max_threads!` markers become `.maxntid` directives
//!    (`gpu::cluster_dims!` markers, `.reqnctapercluster`).
//!
//! This is the link step rustc would hand to `llvm-bitcode-linker`, which is not downloadable
//! for the pinned nightly; doing it here keeps the build inside the repository and registries.

use crate::Arch;
pub use crate::artifact::PtxArtifact;
use crate::command::{capture, find_upwards, run};
pub use crate::patch::{
    CLUSTER_DIMS_MARKER, CLUSTER_PTX_ISA, MAX_THREADS_MARKER, TENSOR_MAP_PARAM_MARKER,
    apply_cluster_dims, apply_max_threads, apply_tensor_map_params,
};
use crate::stamp;
use crate::toolchain::{LlvmTools, PinnedToolchain, Toolchain};
use anyhow::{Context, Result, bail, ensure};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The device target rustc compiles device crates for.
pub const DEVICE_TARGET: &str = "nvptx64-nvidia-cuda";

/// The cargo profile device code is built with; [`DEVICE_PROFILE_SETTINGS`] override it for
/// that build only. A debug build produces huge PTX with a stack frame ptxas cannot size, and
/// unwinding does not exist on the GPU.
pub const DEVICE_PROFILE: &str = "release";

/// `--config` overrides of [`DEVICE_PROFILE`] for the device build.
pub const DEVICE_PROFILE_SETTINGS: &[&str] = &[
    "profile.release.opt-level=3",
    "profile.release.panic=\"abort\"",
    "profile.release.codegen-units=1",
    "profile.release.debug=false",
    "profile.release.debug-assertions=false",
    "profile.release.overflow-checks=false",
    "profile.release.incremental=false",
    "profile.release.lto=false",
];

/// The PTX ISA version the builder targets unless told otherwise: 8.1, the first with the
/// cluster stores `st.async` and `red.async` (sm_90); CUDA 12.1 and every later driver accept
/// it (LLVM's default for sm_80, 7.0, lacks `mbarrier.test_wait.parity`).
pub const DEFAULT_PTX_ISA: u32 = 81;

/// Builds a `no_std` device crate into one PTX module per GPU architecture.
///
/// ```no_run
/// // build.rs of a host crate whose kernels live in ../kernels:
/// let ptx = ptx_builder::CudaBuilder::new("../kernels")
///     .arch(ptx_builder::Arch::Sm80)
///     .arch(ptx_builder::Arch::Sm90)
///     .copy_to(std::env::var("OUT_DIR").unwrap())
///     .emit_rerun_if_changed()
///     .build()
///     .unwrap_or_else(|e| panic!("{e:#}"));
/// ```
#[derive(Clone, Debug)]
pub struct CudaBuilder {
    crate_dir: PathBuf,
    archs: Vec<Arch>,
    ptx_isa: u32,
    features: Vec<String>,
    kernel_crates: Vec<String>,
    target_dir: Option<PathBuf>,
    copy_to: Option<PathBuf>,
    rerun_if_changed: bool,
    reuse_unchanged: bool,
    cargo: PathBuf,
    rustc: PathBuf,
    /// Set for the inner cargo, so that any rustup proxy it reaches runs this toolchain too.
    rustup_toolchain: Option<String>,
}

impl CudaBuilder {
    /// A builder for the device crate whose `Cargo.toml` is in `crate_dir`, for every
    /// [`Arch`], with the `cargo` / `rustc` of the environment (a build script or `cargo run`
    /// gets the pinned toolchain's as `$CARGO` / `$RUSTC`), else on `PATH`.
    pub fn new(crate_dir: impl Into<PathBuf>) -> CudaBuilder {
        let tool = |var: &str, fallback: &str| {
            std::env::var_os(var)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(fallback))
        };
        CudaBuilder {
            crate_dir: crate_dir.into(),
            archs: Vec::new(),
            ptx_isa: DEFAULT_PTX_ISA,
            features: Vec::new(),
            kernel_crates: Vec::new(),
            target_dir: None,
            copy_to: None,
            rerun_if_changed: false,
            reuse_unchanged: false,
            cargo: tool("CARGO", "cargo"),
            rustc: tool("RUSTC", "rustc"),
            rustup_toolchain: None,
        }
    }

    /// Builds for `arch` (the first call replaces the default, every arch).
    pub fn arch(mut self, arch: Arch) -> Self {
        if !self.archs.contains(&arch) {
            self.archs.push(arch);
        }
        self
    }

    /// Builds for these archs.
    pub fn archs(mut self, archs: impl IntoIterator<Item = Arch>) -> Self {
        for arch in archs {
            self = self.arch(arch);
        }
        self
    }

    /// The PTX ISA version, times ten (`80` for 8.0): at least 71 (`mbarrier.test_wait.parity`).
    pub fn ptx_isa(mut self, version: u32) -> Self {
        self.ptx_isa = version;
        self
    }

    /// Cargo features of the device crate to enable.
    pub fn features<S: Into<String>>(mut self, features: impl IntoIterator<Item = S>) -> Self {
        self.features.extend(features.into_iter().map(Into::into));
        self
    }

    /// Keeps the kernels that the dependency `package` defines as entries of the module too
    /// (by default only the device crate's own are; a dependency's are internalized and
    /// dropped): how a crate that measures a kernel library's kernels carries them in its own
    /// module, without defining them twice.
    pub fn kernels_from(mut self, package: &str) -> Self {
        self.kernel_crates.push(lib_name(package));
        self
    }

    /// Where cargo builds (default: `target/` beside the device crate's `Cargo.toml`). The
    /// PTX lands in `<target_dir>/ptx/<arch>/<crate>.ptx`.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Also copies each module to `dir` as `<crate>_<arch>.ptx` (a build script's `OUT_DIR`),
    /// and writes `<crate>_modules.rs` there: the `&[gpu_runtime::Module]` over them
    /// ([`module_table`]) for the host crate to `include!`.
    pub fn copy_to(mut self, dir: impl Into<PathBuf>) -> Self {
        self.copy_to = Some(dir.into());
        self
    }

    /// For a build script: tells cargo to rerun it when the sources, `Cargo.toml` or build
    /// script of the device crate or of any local package it depends on (the `gpu` library
    /// by path, say) change, or the toolchain file does; and passes the device build's
    /// warnings on as `cargo:warning` lines (compiler warnings, and kernels that can panic),
    /// each once with the archs it came from.
    pub fn emit_rerun_if_changed(mut self) -> Self {
        self.rerun_if_changed = true;
        self
    }

    /// Builds with `toolchain`'s own `cargo` and `rustc` instead of the environment's: how a
    /// build script run by a stable cargo builds device code with the pinned nightly.
    pub fn toolchain(mut self, toolchain: &PinnedToolchain) -> Self {
        self.cargo = toolchain.cargo.clone();
        self.rustc = toolchain.rustc.clone();
        self.rustup_toolchain = Some(toolchain.name.clone());
        self
    }

    /// Skips an arch's build (cargo, link, optimization, llc) when a stamp beside its PTX says
    /// it was built from the same inputs: the sources of the crate and its local packages, the
    /// workspace's manifest, lock and toolchain files, this builder's settings and sources, and
    /// the compiler (see `stamp.rs`). For a build tool (`cargo xtask build-ptx`), whose
    /// every run would otherwise link and optimize every module again.
    pub fn reuse_unchanged(mut self, reuse: bool) -> Self {
        self.reuse_unchanged = reuse;
        self
    }

    /// The archs to build: those asked for, else every one.
    pub fn selected_archs(&self) -> Vec<Arch> {
        if self.archs.is_empty() {
            Arch::ALL.to_vec()
        } else {
            self.archs.clone()
        }
    }

    /// The device crate's package name (from its `Cargo.toml`).
    pub fn package(&self) -> Result<String> {
        let manifest = self.crate_dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).with_context(|| {
            format!(
                "reading {}: the builder takes the folder of the device crate's Cargo.toml",
                manifest.display()
            )
        })?;
        package_name(&text).with_context(|| format!("{} has no [package] name", manifest.display()))
    }

    fn target_root(&self) -> PathBuf {
        self.target_dir
            .clone()
            .unwrap_or_else(|| self.crate_dir.join("target"))
    }

    /// Builds one PTX module per arch; see the module docs for the steps.
    pub fn build(&self) -> Result<Vec<PtxArtifact>> {
        ensure!(
            (71..=88).contains(&self.ptx_isa),
            "PTX ISA {} is not one this builder knows: from 71 (7.1, mbarrier.test_wait.parity) \
             to 88",
            self.ptx_isa
        );
        let package = self.package()?;
        let toolchain = Toolchain::check(&self.rustc, &self.crate_dir)?;
        if self.rerun_if_changed {
            // The crate itself even if its build fails, so that an edit reruns the script.
            watch_package(&self.crate_dir);
            if let Some(file) = find_upwards(&self.crate_dir, "rust-toolchain.toml") {
                println!("cargo:rerun-if-changed={}", file.display());
            }
        }
        let mut artifacts = Vec::new();
        for arch in self.selected_archs() {
            let ptx = self.ptx_path(&package, arch);
            let settings = self.settings(&package, arch, &toolchain.version);
            let reused = self
                .reuse_unchanged
                .then(|| stamp::reusable(&ptx, arch, &settings, &self.crate_dir))
                .flatten();
            let artifact = match reused {
                Some(artifact) => artifact,
                None => {
                    // No stamp survives a build that fails halfway.
                    stamp::clear(&ptx);
                    let artifact = self.build_arch(&toolchain.llvm, &package, arch)?;
                    if self.reuse_unchanged {
                        stamp::record(&artifact, &settings, &self.crate_dir)?;
                    }
                    artifact
                }
            };
            if let Some(dir) = &self.copy_to {
                std::fs::create_dir_all(dir)?;
                let to = dir.join(format!("{}_{}.ptx", lib_name(&package), arch.name()));
                std::fs::copy(&artifact.path, &to)
                    .with_context(|| format!("copying the PTX to {}", to.display()))?;
            }
            artifacts.push(artifact);
        }
        if let Some(dir) = &self.copy_to {
            let table = dir.join(format!("{}_modules.rs", lib_name(&package)));
            let copied: Vec<(Arch, PathBuf)> = artifacts
                .iter()
                .map(|a| {
                    let name = format!("{}_{}.ptx", lib_name(&package), a.arch.name());
                    (a.arch, dir.join(name))
                })
                .collect();
            std::fs::write(&table, module_table(&copied))
                .with_context(|| format!("writing {}", table.display()))?;
        }
        if self.rerun_if_changed {
            let mut watched: Vec<&PathBuf> = Vec::new();
            for dir in artifacts.iter().flat_map(|a| &a.local_packages) {
                if !watched.contains(&dir) {
                    watch_package(dir);
                    watched.push(dir);
                }
            }
            for line in cargo_warnings(&artifacts) {
                println!("{line}");
            }
        }
        Ok(artifacts)
    }

    /// `cargo <subcommand>` of the device crate for `arch`, in the environment the device build
    /// needs (`cargo xtask clippy` runs clippy this way).
    pub fn cargo_command(&self, subcommand: &str, arch: Arch, target_dir: &Path) -> Command {
        let mut cmd = Command::new(&self.cargo);
        cmd.arg(subcommand)
            .arg("--quiet")
            .arg("--manifest-path")
            .arg(self.crate_dir.join("Cargo.toml"))
            .args(["--lib", "--target", DEVICE_TARGET, "-Zbuild-std=core"])
            .args(["--profile", DEVICE_PROFILE])
            .arg("--target-dir")
            .arg(target_dir);
        for setting in DEVICE_PROFILE_SETTINGS {
            cmd.args(["--config", setting]);
        }
        if !self.features.is_empty() {
            cmd.args(["--features", &self.features.join(",")]);
        }
        // The caller may be cargo itself (a build script, `cargo clippy`): its flags, wrappers
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
            "CARGO_ENCODED_RUSTFLAGS",
        ] {
            cmd.env_remove(var);
        }
        let rustflags = [
            format!("-Ctarget-cpu={}", arch.name()),
            format!("-Ctarget-feature=+ptx{}", self.ptx_isa),
        ]
        .join("\x1f");
        cmd.env("CARGO_ENCODED_RUSTFLAGS", rustflags)
            .env("RUSTC", &self.rustc);
        if let Some(name) = &self.rustup_toolchain {
            cmd.env("RUSTUP_TOOLCHAIN", name);
        }
        cmd
    }

    /// Where `arch`'s module lands: `<target_dir>/ptx/<arch>/<crate>.ptx`.
    fn ptx_path(&self, package: &str, arch: Arch) -> PathBuf {
        self.target_root()
            .join("ptx")
            .join(arch.name())
            .join(format!("{}.ptx", lib_name(package)))
    }

    /// Everything about this build of `arch` but its sources, for its stamp.
    fn settings(&self, package: &str, arch: Arch, rustc_version: &str) -> String {
        format!(
            "package {package}; arch {arch}; ptx isa {}; features {:?}; kernels from {:?}; \
             {DEVICE_TARGET}; {DEVICE_PROFILE_SETTINGS:?}; rustc {rustc_version}",
            self.ptx_isa, self.features, self.kernel_crates
        )
    }

    fn build_arch(&self, llvm: &LlvmTools, package: &str, arch: Arch) -> Result<PtxArtifact> {
        let ptx = self.ptx_path(package, arch);
        let out_dir = ptx.parent().expect("a file in ptx/<arch>").to_path_buf();
        let DeviceBuild {
            rlibs,
            warnings,
            local_packages,
        } = self.cargo_build(package, arch, &out_dir)?;
        let lib = lib_name(package);

        // Unpack every rlib's bitcode members; each rlib gets its own folder since member
        // names of different crates may collide.
        let link_dir = out_dir.join("link");
        if link_dir.exists() {
            std::fs::remove_dir_all(&link_dir)
                .with_context(|| format!("cleaning {}", link_dir.display()))?;
        }
        let mut bitcode = Vec::new();
        let mut own_bitcode = Vec::new();
        for (crate_name, rlib) in &rlibs {
            let dir = link_dir.join(crate_name);
            std::fs::create_dir_all(&dir)?;
            run(llvm.cmd("llvm-ar").current_dir(&dir).arg("x").arg(rlib))
                .with_context(|| format!("unpacking {}", rlib.display()))?;
            for entry in std::fs::read_dir(&dir)? {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "o") {
                    if *crate_name == lib || self.kernel_crates.contains(crate_name) {
                        own_bitcode.push(path.clone());
                    }
                    bitcode.push(path);
                }
            }
        }
        ensure!(
            !own_bitcode.is_empty(),
            "the {lib} rlib held no bitcode object"
        );

        let kernels = kernel_symbols(llvm, &own_bitcode)?;
        ensure!(
            !kernels.is_empty(),
            "the crate `{package}` defines no kernel: a kernel is a \
             `#[unsafe(no_mangle)] pub unsafe extern \"ptx-kernel\" fn` in the crate itself"
        );

        let linked = link_dir.join("linked.bc");
        run(llvm.cmd("llvm-link").args(&bitcode).arg("-o").arg(&linked)).context("llvm-link")?;

        // The unroll threshold lets O3 fully unroll the fixed loops of a register tile (a
        // GEMM's 128 accumulators): left partly rolled, such an array goes to local memory.
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

        let llc = llvm
            .cmd("llc")
            .arg("-O3")
            .arg(format!("-mcpu={}", arch.name()))
            .arg(format!("-mattr=+ptx{}", self.ptx_isa))
            .arg(&optimized)
            .arg("-o")
            .arg(&ptx)
            .output()
            .context("could not run llc")?;
        if !llc.status.success() {
            let stderr = String::from_utf8_lossy(&llc.stderr);
            // An abort's stack dump says nothing a user can act on; its first lines do.
            match crate::diagnose::llc_failure(&stderr) {
                Some(line) => bail!("{line} (device code of `{package}` for {arch})"),
                None => bail!("llc failed ({}):\n{}", llc.status, stderr.trim_end()),
            }
        }

        let text = std::fs::read_to_string(&ptx)?;
        let text = apply_max_threads(&text, &kernels)
            .and_then(|text| apply_cluster_dims(&text, &kernels, arch, self.ptx_isa))
            .and_then(|text| apply_tensor_map_params(&text, &kernels))
            .with_context(|| format!("patching {}", ptx.display()))?;
        std::fs::write(&ptx, &text)?;
        check_ptx(&text, &kernels).with_context(|| format!("checking {}", ptx.display()))?;
        let mut warnings = warnings;
        warnings.extend(crate::diagnose::panic_paths(&text, &kernels));
        let explicit_traps = crate::diagnose::explicit_traps(&text, &kernels);
        Ok(PtxArtifact {
            arch,
            path: ptx,
            kernels,
            warnings,
            explicit_traps,
            local_packages,
            reused: false,
        })
    }

    /// Runs the device build of the crate.
    fn cargo_build(&self, package: &str, arch: Arch, out_dir: &Path) -> Result<DeviceBuild> {
        let mut cmd = self.cargo_command("build", arch, out_dir);
        cmd.arg("--message-format=json-render-diagnostics");
        let output = cmd
            .output()
            .with_context(|| format!("running {}", self.cargo.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            bail!(
                "the device build of `{package}` for {arch} failed (does it build for \
                 {DEVICE_TARGET}: no_std, no std-only dependencies?):\n{}",
                String::from_utf8_lossy(&output.stderr).trim_end()
            );
        }
        let mut rlibs = Vec::new();
        let mut local_packages = Vec::new();
        for line in stdout.lines() {
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if msg["reason"] != "compiler-artifact" {
                continue;
            }
            // Path dependencies (the `gpu` library, a user's own crates), not `core` and
            // friends, which -Zbuild-std builds from the toolchain's rust-src.
            if let (Some(id), Some(manifest)) = (
                msg["package_id"].as_str(),
                msg["manifest_path"].as_str().map(Path::new),
            ) && id.starts_with("path+file://")
                && !manifest.components().any(|c| c.as_os_str() == "rustlib")
                && let Some(dir) = manifest.parent()
                && !local_packages.iter().any(|d: &PathBuf| d == dir)
            {
                local_packages.push(dir.to_path_buf());
            }
            let name = msg["target"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            // The device target's rlibs only: a build script's dependencies (a device crate
            // that embeds its own PTX builds with ptx-builder) are host objects.
            for file in msg["filenames"].as_array().into_iter().flatten() {
                if let Some(file) = file.as_str().filter(|f| {
                    f.ends_with(".rlib")
                        && Path::new(f)
                            .components()
                            .any(|c| c.as_os_str() == DEVICE_TARGET)
                }) {
                    rlibs.push((name.clone(), PathBuf::from(file)));
                }
            }
        }
        let lib = lib_name(package);
        ensure!(
            rlibs.iter().any(|(n, _)| *n == lib),
            "the device build of `{package}` for {arch} produced no {lib} rlib (its [lib] needs \
             crate-type = [\"rlib\"])"
        );
        Ok(DeviceBuild {
            rlibs,
            warnings: warnings(&String::from_utf8_lossy(&output.stderr)),
            local_packages,
        })
    }
}

/// A package's library name: its package name with `-` as `_`.
fn lib_name(package: &str) -> String {
    package.replace('-', "_")
}

/// The `name` of a `Cargo.toml`'s `[package]` table (a line-based read: enough for the
/// manifests cargo itself accepts with a plain `name = "..."`).
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if in_package
            && let Some(value) = line.strip_prefix("name")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// The `cargo:warning=` lines of `artifacts`' warnings: each warning once, with the archs it
/// came from (`device code (sm_80, sm_90): ...`).
pub fn cargo_warnings(artifacts: &[PtxArtifact]) -> Vec<String> {
    let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
    for artifact in artifacts {
        for warning in &artifact.warnings {
            match seen.iter_mut().find(|(w, _)| *w == warning.as_str()) {
                Some((_, archs)) => archs.push(artifact.arch.name()),
                None => seen.push((warning, vec![artifact.arch.name()])),
            }
        }
    }
    seen.into_iter()
        .map(|(warning, archs)| {
            format!(
                "cargo:warning=device code ({}): {warning}",
                archs.join(", ")
            )
        })
        .collect()
}

/// Tells cargo to rerun the build script when a package's sources, manifest or build script
/// change: only paths that exist (cargo reruns whenever a watched path is missing).
fn watch_package(dir: &Path) {
    for path in [
        dir.join("src"),
        dir.join("Cargo.toml"),
        dir.join("build.rs"),
    ] {
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// The Rust expression of a `&[gpu_runtime::Module]` over `modules` (arch, PTX file): what a
/// host crate includes instead of writing its module table by hand,
/// `const MODULES: &[Module] = include!(concat!(env!("OUT_DIR"), "/<crate>_modules.rs"));`.
/// PTX only: the driver compiles it when it loads the module.
pub fn module_table(modules: &[(Arch, PathBuf)]) -> String {
    let mut out = String::from(
        "// Written by ptx-builder: one module per arch, PTX the driver compiles at load.\n&[\n",
    );
    for (arch, path) in modules {
        out.push_str(&format!(
            "    gpu_runtime::Module {{ arch: gpu_runtime::Arch::{arch:?}, ptx: include_str!({:?}), \
             cubin: None }},\n",
            path.display().to_string()
        ));
    }
    out.push_str("]\n");
    out
}

/// What the device build produced: `(crate name, rlib)` for every crate, its warnings, and
/// the folders of the local packages it compiled (the crate and its path dependencies).
struct DeviceBuild {
    rlibs: Vec<(String, PathBuf)>,
    warnings: Vec<String>,
    local_packages: Vec<PathBuf>,
}

/// The warnings in rustc's rendered output, one line each (`message (file:line)`), without
/// the one `-Ctarget-feature=+ptx81` always causes and without cargo's totals.
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

/// The kernels: functions the device crate defines under an unmangled name. Everything else rustc emits
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

/// A PTX module ptxas can take on its own: every kernel is an entry, nothing is left external.
fn check_ptx(text: &str, kernels: &[String]) -> Result<()> {
    if let Some(line) = text.lines().find(|l| l.starts_with(".extern .func")) {
        let name = line
            .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
            .rfind(|w| !w.is_empty() && !w.starts_with('.') && !w.starts_with('%'))
            .unwrap_or(line);
        bail!(
            "the PTX calls `{name}`, which nothing defines (`{line}`): usually a `core` panic \
             path left in a kernel — an index that may be out of bounds, an overflow or division \
             check, an unwrap, slices of unequal lengths; make it provably impossible (check and \
             `gpu::ptx::trap()`, or `get_unchecked`) so the call folds away"
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

#[cfg(test)]
mod tests;
