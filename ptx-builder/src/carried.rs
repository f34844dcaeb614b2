//! gpu-kernels' carried device modules: the crate keeps its PTX in the repository
//! (`kernels/ptx/gpu_kernels.<arch>.ptx`, one per [`Arch::ALL`]) beside `manifest.txt`, the
//! digest of the sources that PTX was built from, so that a crate on stable that depends on it
//! builds without a nightly, `rust-src` or `llvm-tools`. `cargo xtask build-ptx` refreshes
//! them ([`refresh`]); gpu-kernels' build script uses them while they are current
//! ([`check`]) and rebuilds from source with the pinned nightly when they are not.
//!
//! The digest ([`source_digest`]) covers what decides the PTX, relative to the repository
//! root ([`SOURCES`]): the device crates' sources and manifests (`kernels`, `gpu`), the
//! workspace manifest (edition, profiles, dependency paths), the toolchain file (the
//! compiler), and the builder's sources that shape the PTX (`build.rs`: flags and link;
//! `patch.rs`: directives it writes; `lib.rs`: the arch table). Left out: kernels' build
//! script (the device build runs it, and it returns at once), `Cargo.lock` (the device build
//! of these crates has no registry dependency), and the builder's other modules (they find
//! tools, check or report, and do not change a byte of PTX). Host-only code in `kernels/src`
//! counts too, since a file cannot be split by target: editing it makes the carried PTX stale.

use crate::build::{CudaBuilder, DEFAULT_PTX_ISA, PtxArtifact};
use crate::digest::{Digest, SourceDigest, digest_file};
use crate::{Arch, toolchain};
use anyhow::{Context, Result, bail, ensure};
use std::path::{Path, PathBuf};

/// The folder of the carried modules, in the gpu-kernels crate.
pub const PTX_DIR: &str = "ptx";

/// The manifest beside them.
pub const MANIFEST: &str = "manifest.txt";

/// What the carried PTX is built from, relative to the repository root: files and folders
/// (every file under them). A path that does not exist counts as absent.
pub const SOURCES: [&str; 10] = [
    "Cargo.toml",
    "rust-toolchain.toml",
    "gpu/Cargo.toml",
    "gpu/build.rs",
    "gpu/src",
    "kernels/Cargo.toml",
    "kernels/src",
    "ptx-builder/src/build.rs",
    "ptx-builder/src/lib.rs",
    "ptx-builder/src/patch.rs",
];

/// The file name of `arch`'s carried module.
pub fn module_file(arch: Arch) -> String {
    format!("gpu_kernels.{}.ptx", arch.name())
}

/// The repository root, when `kernels_dir` (gpu-kernels' manifest folder) is the `kernels`
/// folder of a checkout of this repository (a clone, or cargo's checkout of a git
/// dependency): beside it, the workspace manifest, the toolchain file, `gpu` and
/// `ptx-builder`. A packaged copy (`cargo package`, a registry) has none of them.
pub fn repository_root(kernels_dir: &Path) -> Option<PathBuf> {
    let kernels_dir = std::fs::canonicalize(kernels_dir).ok()?;
    let root = kernels_dir.parent()?;
    let is_workspace = std::fs::read_to_string(root.join("Cargo.toml"))
        .is_ok_and(|text| text.contains("[workspace]"));
    (is_workspace
        && kernels_dir.file_name().is_some_and(|n| n == "kernels")
        && root.join("rust-toolchain.toml").is_file()
        && root.join("gpu/src").is_dir()
        && root.join("ptx-builder/src/build.rs").is_file())
    .then(|| root.to_path_buf())
}

/// The digest of [`SOURCES`] under `root`.
pub fn source_digest(root: &Path) -> Result<Digest> {
    let mut digest = SourceDigest::new();
    for source in SOURCES {
        digest.path(source, &root.join(source))?;
    }
    Ok(digest.finish())
}

/// `manifest.txt`: what the carried modules were built from, and each module's digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// [`source_digest`] when they were built.
    pub sources: Digest,
    /// The toolchain that built them (for the reader: the digest covers the toolchain file).
    pub toolchain: String,
    /// The PTX ISA version, times ten.
    pub ptx_isa: u32,
    /// Every module's digest, in [`Arch::ALL`] order.
    pub modules: Vec<(Arch, Digest)>,
}

impl Manifest {
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# gpu-kernels' carried device modules: written by `cargo xtask build-ptx`, checked by\n\
             # build.rs (docs/design.md, \"gpu-kernels on stable: carried PTX\"). Do not edit.\n",
        );
        out.push_str(&format!("sources {}\n", self.sources));
        out.push_str(&format!("toolchain {}\n", self.toolchain));
        out.push_str(&format!("ptx-isa {}\n", self.ptx_isa));
        for (arch, digest) in &self.modules {
            out.push_str(&format!(
                "module {} {} {digest}\n",
                arch,
                module_file(*arch)
            ));
        }
        out
    }

    pub fn parse(text: &str) -> Result<Manifest> {
        let (mut sources, mut toolchain, mut ptx_isa) = (None, None, None);
        let mut modules = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["sources", digest] => sources = Some(digest.parse().map_err(anyhow::Error::msg)?),
                ["toolchain", name] => toolchain = Some(name.to_string()),
                ["ptx-isa", isa] => ptx_isa = Some(isa.parse()?),
                ["module", arch, file, digest] => {
                    let arch =
                        Arch::from_name(arch).with_context(|| format!("unknown arch {arch}"))?;
                    ensure!(*file == module_file(arch), "module {arch} is in {file}");
                    modules.push((arch, digest.parse().map_err(anyhow::Error::msg)?));
                }
                _ => bail!("unexpected line `{line}`"),
            }
        }
        Ok(Manifest {
            sources: sources.context("no `sources` line")?,
            toolchain: toolchain.context("no `toolchain` line")?,
            ptx_isa: ptx_isa.context("no `ptx-isa` line")?,
            modules,
        })
    }
}

/// The carried modules of the crate in `kernels_dir`, and whether they can be used.
#[derive(Clone, Debug)]
pub struct Carried {
    /// Every arch's module.
    pub modules: Vec<(Arch, PathBuf)>,
    pub state: State,
}

/// Whether the carried modules can be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// In a checkout, built from the sources beside them.
    Current { root: PathBuf },
    /// Not in a checkout: nothing to build them from, so they are the crate's device code.
    Packaged,
    /// In a checkout whose sources changed since they were built (or that lacks them): why.
    Stale { root: PathBuf, why: String },
}

/// Checks the carried modules of the gpu-kernels crate in `kernels_dir`. An error only for a
/// packaged copy whose modules are missing or not those its manifest names (a broken package).
pub fn check(kernels_dir: &Path) -> Result<Carried> {
    let ptx_dir = kernels_dir.join(PTX_DIR);
    let modules: Vec<(Arch, PathBuf)> = Arch::ALL
        .into_iter()
        .map(|arch| (arch, ptx_dir.join(module_file(arch))))
        .collect();
    let root = repository_root(kernels_dir);
    let problem = || -> Result<Option<String>> {
        let manifest_path = ptx_dir.join(MANIFEST);
        let Ok(text) = std::fs::read_to_string(&manifest_path) else {
            return Ok(Some(format!("{} is missing", manifest_path.display())));
        };
        let manifest = Manifest::parse(&text)
            .with_context(|| format!("reading {}", manifest_path.display()))?;
        for (arch, path) in &modules {
            let recorded = manifest
                .modules
                .iter()
                .find(|(a, _)| a == arch)
                .map(|m| m.1);
            let Some(recorded) = recorded else {
                return Ok(Some(format!("the manifest names no {arch} module")));
            };
            if !path.is_file() || digest_file(path)? != recorded {
                return Ok(Some(format!(
                    "{} is not the module the manifest names",
                    path.display()
                )));
            }
        }
        if let Some(root) = &root
            && source_digest(root)? != manifest.sources
        {
            return Ok(Some(
                "the device code's sources changed since it was built".into(),
            ));
        }
        Ok(None)
    };
    let state = match (problem()?, root) {
        (None, Some(root)) => State::Current { root },
        (None, None) => State::Packaged,
        (Some(why), Some(root)) => State::Stale { root, why },
        (Some(why), None) => bail!(
            "gpu-kernels' carried device code is broken ({why}), and this copy of the crate has \
             no sources to rebuild it from"
        ),
    };
    Ok(Carried { modules, state })
}

/// One carried module after [`refresh`].
pub struct Refreshed {
    /// The carried file.
    pub path: PathBuf,
    /// The build, in `target/gpu-kernels` (reused when nothing changed).
    pub artifact: PtxArtifact,
    /// Whether the carried file changed.
    pub written: bool,
}

/// Builds gpu-kernels' device code in the checkout at `root` (into `target/gpu-kernels`,
/// reusing an arch's module when its inputs did not change, unless `force`) and writes each
/// module and the manifest into `kernels/ptx` where they differ (an unchanged file keeps its
/// timestamp, so builds that watch the folder do not rerun).
pub fn refresh(root: &Path, force: bool) -> Result<Vec<Refreshed>> {
    let kernels = root.join("kernels");
    let before = source_digest(root)?;
    let artifacts = CudaBuilder::new(&kernels)
        .target_dir(root.join("target").join("gpu-kernels"))
        .reuse_unchanged(!force)
        .build()?;
    ensure!(
        source_digest(root)? == before,
        "gpu-kernels' sources changed while its device code was built: run it again"
    );
    let ptx_dir = kernels.join(PTX_DIR);
    std::fs::create_dir_all(&ptx_dir)?;
    let mut refreshed = Vec::new();
    let mut modules = Vec::new();
    for artifact in artifacts {
        let path = ptx_dir.join(module_file(artifact.arch));
        let ptx = std::fs::read(&artifact.path)
            .with_context(|| format!("reading {}", artifact.path.display()))?;
        modules.push((artifact.arch, crate::digest::digest_bytes(&ptx)));
        let written = write_if_changed(&path, &ptx)?;
        refreshed.push(Refreshed {
            path,
            artifact,
            written,
        });
    }
    let toolchain_file = root.join("rust-toolchain.toml");
    let manifest = Manifest {
        sources: before,
        toolchain: std::fs::read_to_string(&toolchain_file)
            .ok()
            .and_then(|t| toolchain::channel(&t))
            .with_context(|| format!("{} names no channel", toolchain_file.display()))?,
        ptx_isa: DEFAULT_PTX_ISA,
        modules,
    };
    write_if_changed(&ptx_dir.join(MANIFEST), manifest.render().as_bytes())?;
    Ok(refreshed)
}

/// Writes `bytes` to `path` unless it holds them already; returns whether it wrote.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trips() {
        let manifest = Manifest {
            sources: Digest(7),
            toolchain: "nightly-2026-05-20".into(),
            ptx_isa: 81,
            modules: Arch::ALL
                .into_iter()
                .map(|a| (a, Digest(a as u128)))
                .collect(),
        };
        let text = manifest.render();
        assert!(
            text.contains("module sm_90a gpu_kernels.sm_90a.ptx fnv1a128:"),
            "{text}"
        );
        assert_eq!(Manifest::parse(&text).unwrap(), manifest);
        assert!(Manifest::parse("sources x\n").is_err());
    }

    #[test]
    fn this_checkout_is_a_repository() {
        let root = crate::workspace_root();
        assert_eq!(
            repository_root(&root.join("kernels")),
            Some(std::fs::canonicalize(&root).unwrap())
        );
        assert_eq!(repository_root(&root.join("gpu")), None);
        assert_eq!(repository_root(&root.join("ptx-builder")), None);
    }
}
