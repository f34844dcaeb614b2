//! The toolchain a device build runs: the checks that it can build device code (a nightly with
//! `rust-src` and `llvm-tools`), and [`PinnedToolchain`], the pinned nightly found through
//! rustup whatever toolchain the caller runs (a crate on stable that builds device code from
//! source: gpu-kernels' build script when its carried PTX is stale).

use crate::command::capture;
use anyhow::{Context, Result, bail, ensure};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The components the device build needs beside `rustc` and `cargo`.
pub const COMPONENTS: [&str; 2] = ["rust-src", "llvm-tools"];

/// The `llvm-tools` binaries the link runs.
const LLVM_TOOLS: [&str; 5] = ["llvm-link", "opt", "llc", "llvm-ar", "llvm-nm"];

/// The toolchain checked for what the device build needs.
pub(crate) struct Toolchain {
    pub(crate) llvm: LlvmTools,
    /// `rustc -vV`, which a build stamp records (another compiler, another PTX).
    pub(crate) version: String,
}

impl Toolchain {
    /// Checks that `rustc` runs, is a nightly (for `-Zbuild-std`), has `rust-src` (to build
    /// `core` for the device) and `llvm-tools` (to link): each missing piece is an error that
    /// says what to install.
    pub(crate) fn check(rustc: &Path, crate_dir: &Path) -> Result<Toolchain> {
        let install = format!(
            "install the toolchain the project pins: `rustup toolchain install` in {}",
            crate_dir.display()
        );
        let version = capture(Command::new(rustc).arg("-vV"))
            .with_context(|| format!("could not run {}; {install}", rustc.display()))?;
        let release = version
            .lines()
            .find_map(|l| l.strip_prefix("release: "))
            .unwrap_or("?");
        ensure!(
            release.contains("nightly") || release.contains("dev"),
            "device code needs a nightly toolchain (-Zbuild-std, abi_ptx), found rustc {release}; \
             {install}"
        );
        let sysroot = sysroot(rustc)?;
        ensure!(
            has_rust_src(&sysroot),
            "the toolchain at {} has no `rust-src` component (to build `core` for the GPU): \
             `rustup component add rust-src`, or {install}",
            sysroot.display()
        );
        let llvm = LlvmTools::of(&sysroot, &version)?;
        if let Some(missing) = llvm.missing() {
            bail!(
                "{} is missing: the toolchain needs its `llvm-tools` component \
                 (`rustup component add llvm-tools`, or {install})",
                missing.display()
            );
        }
        Ok(Toolchain { llvm, version })
    }
}

/// `rustc --print sysroot`.
fn sysroot(rustc: &Path) -> Result<PathBuf> {
    let sysroot = capture(Command::new(rustc).args(["--print", "sysroot"]))
        .context("asking rustc for its sysroot")?;
    Ok(PathBuf::from(sysroot.trim()))
}

fn has_rust_src(sysroot: &Path) -> bool {
    sysroot
        .join("lib/rustlib/src/rust/library/core/Cargo.toml")
        .is_file()
}

/// The `llvm-link`, `opt`, `llc`, `llvm-ar` and `llvm-nm` of the toolchain's `llvm-tools`.
pub(crate) struct LlvmTools {
    bin: PathBuf,
}

impl LlvmTools {
    /// The tools of the toolchain at `sysroot`, whose `rustc -vV` printed `version`.
    fn of(sysroot: &Path, version: &str) -> Result<LlvmTools> {
        let host = version
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .context("`rustc -vV` printed no host triple")?;
        Ok(LlvmTools {
            bin: sysroot.join("lib/rustlib").join(host.trim()).join("bin"),
        })
    }

    /// The first tool that is not there.
    fn missing(&self) -> Option<PathBuf> {
        LLVM_TOOLS
            .iter()
            .map(|name| self.path(name))
            .find(|p| !p.is_file())
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    pub(crate) fn cmd(&self, name: &str) -> Command {
        Command::new(self.path(name))
    }
}

/// The nightly a `rust-toolchain.toml` pins, found through rustup: its own `cargo` and `rustc`
/// (never the caller's `$CARGO` / `$RUSTC`, which are stable's in a stable build), checked for
/// the components the device build needs. Give it to [`crate::CudaBuilder::toolchain`].
#[derive(Clone, Debug)]
pub struct PinnedToolchain {
    /// The toolchain's name (`nightly-2026-05-20`).
    pub name: String,
    pub cargo: PathBuf,
    pub rustc: PathBuf,
}

impl PinnedToolchain {
    /// The toolchain `toolchain_file` (a `rust-toolchain.toml`) pins, installed with every
    /// component the device build needs. Any failure is one line that ends with the exact
    /// command that installs it ([`PinnedToolchain::install_command`]).
    pub fn find(toolchain_file: &Path) -> Result<PinnedToolchain> {
        let text = std::fs::read_to_string(toolchain_file)
            .with_context(|| format!("reading {}", toolchain_file.display()))?;
        let name = channel(&text)
            .with_context(|| format!("{} names no channel", toolchain_file.display()))?;
        let install = PinnedToolchain::install_command(&name);
        let which = |tool: &str| -> Result<PathBuf> {
            // `--toolchain` wins over the RUSTUP_TOOLCHAIN that `cargo +stable` sets.
            let path = capture(Command::new("rustup").args(["which", "--toolchain", &name, tool]))
                .map_err(|e| {
                    let why = format!("{e:#}");
                    let why = why.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
                    anyhow::anyhow!(
                        "the device code needs the pinned toolchain {name} through rustup \
                         ({}); run: {install}",
                        why.trim()
                    )
                })?;
            Ok(PathBuf::from(path.trim()))
        };
        let pinned = PinnedToolchain {
            cargo: which("cargo")?,
            rustc: which("rustc")?,
            name,
        };
        let sysroot = sysroot(&pinned.rustc)?;
        let version = capture(Command::new(&pinned.rustc).arg("-vV"))?;
        let llvm_missing = LlvmTools::of(&sysroot, &version)?.missing().is_some();
        if !has_rust_src(&sysroot) || llvm_missing {
            bail!(
                "the toolchain {} lacks rust-src or llvm-tools, which the device code needs; \
                 run: {install}",
                pinned.name
            );
        }
        Ok(pinned)
    }

    /// The command that installs toolchain `name` with what the device build needs (it adds
    /// missing components to an installed toolchain as well).
    pub fn install_command(name: &str) -> String {
        format!(
            "rustup toolchain install {name} --profile minimal --component {}",
            COMPONENTS.join(",")
        )
    }
}

/// The `channel` of a `rust-toolchain.toml` (a line-based read of its `[toolchain]` table).
pub fn channel(toolchain_file: &str) -> Option<String> {
    let mut in_toolchain = false;
    for line in toolchain_file.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_toolchain = line == "[toolchain]";
            continue;
        }
        if in_toolchain
            && let Some(value) = line.strip_prefix("channel")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_channel() {
        let file = "# pinned\n[toolchain]\nchannel = \"nightly-2026-05-20\"\ncomponents = []\n";
        assert_eq!(channel(file).as_deref(), Some("nightly-2026-05-20"));
        assert_eq!(channel("[other]\nchannel = \"x\"\n"), None);
    }

    #[test]
    fn the_install_command_names_every_component() {
        assert_eq!(
            PinnedToolchain::install_command("nightly-2026-05-20"),
            "rustup toolchain install nightly-2026-05-20 --profile minimal --component \
             rust-src,llvm-tools"
        );
    }
}
