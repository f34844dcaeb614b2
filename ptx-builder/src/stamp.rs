//! Build stamps for [`crate::CudaBuilder::reuse_unchanged`]: beside each module,
//! `<crate>.ptx.stamp` records the digest of what it was built from and of the PTX itself, the
//! build's warnings and the local packages it compiled. A later build whose inputs digest the
//! same, and whose PTX is still that PTX, reuses the module without running cargo, the link or
//! llc: what makes a `cargo xtask build-ptx` with nothing changed take seconds.
//!
//! The inputs: the builder's settings and the compiler's `rustc -vV`; this builder's own
//! sources that shape the PTX or its warnings (compiled in); `src/`, `Cargo.toml` and
//! `build.rs` of every local package the last build compiled (the crate and its path
//! dependencies: a new one needs a manifest edit, which counts); the workspace's `Cargo.toml`,
//! `Cargo.lock`, toolchain file and `.cargo/config.toml`. Cargo's own fingerprints would
//! also catch a change of a registry dependency's source, which device crates here have none
//! of.

use crate::Arch;
use crate::artifact::PtxArtifact;
use crate::command::find_upwards;
use crate::digest::{Digest, SourceDigest, digest_file};
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The builder's sources whose change can change a module or its warnings.
const BUILDER_SOURCES: [(&str, &[u8]); 4] = [
    ("build.rs", include_bytes!("build.rs")),
    ("patch.rs", include_bytes!("patch.rs")),
    ("lib.rs", include_bytes!("lib.rs")),
    ("diagnose.rs", include_bytes!("diagnose.rs")),
];

fn stamp_path(ptx: &Path) -> PathBuf {
    ptx.with_extension("ptx.stamp")
}

/// Removes `ptx`'s stamp (before a build, so that a failed one leaves none).
pub(crate) fn clear(ptx: &Path) {
    let _ = std::fs::remove_file(stamp_path(ptx));
}

/// The digest of the inputs of a build with `settings` of the crate in `crate_dir` that
/// compiled `local_packages`.
fn inputs(settings: &str, crate_dir: &Path, local_packages: &[PathBuf]) -> Result<Digest> {
    let mut digest = SourceDigest::new();
    digest.text("settings", settings);
    for (name, bytes) in BUILDER_SOURCES {
        digest.bytes(name, bytes);
    }
    for dir in local_packages {
        for name in ["src", "Cargo.toml", "build.rs"] {
            let path = dir.join(name);
            digest.path(&path.display().to_string(), &path)?;
        }
    }
    for name in [
        "rust-toolchain.toml",
        "rust-toolchain",
        "Cargo.lock",
        ".cargo/config.toml",
    ] {
        if let Some(file) = find_upwards(crate_dir, name) {
            digest.path(&file.display().to_string(), &file)?;
        }
    }
    let workspace = std::fs::canonicalize(crate_dir).ok().and_then(|dir| {
        dir.ancestors()
            .map(|d| d.join("Cargo.toml"))
            .filter(|m| m.is_file())
            .find(|m| std::fs::read_to_string(m).is_ok_and(|t| t.contains("[workspace]")))
    });
    if let Some(manifest) = workspace {
        digest.path(&manifest.display().to_string(), &manifest)?;
    }
    Ok(digest.finish())
}

/// The module at `ptx` as the last build of `arch` left it, if its stamp shows the same
/// inputs and the PTX is the one it built.
pub(crate) fn reusable(
    ptx: &Path,
    arch: Arch,
    settings: &str,
    crate_dir: &Path,
) -> Option<PtxArtifact> {
    let stamp: Value =
        serde_json::from_str(&std::fs::read_to_string(stamp_path(ptx)).ok()?).ok()?;
    let strings = |key: &str| -> Option<Vec<String>> {
        stamp[key]
            .as_array()?
            .iter()
            .map(|v| v.as_str().map(String::from))
            .collect()
    };
    let local_packages: Vec<PathBuf> = strings("local_packages")?
        .into_iter()
        .map(PathBuf::from)
        .collect();
    let recorded = |key: &str| stamp[key].as_str().and_then(|d| d.parse::<Digest>().ok());
    if recorded("inputs")? != inputs(settings, crate_dir, &local_packages).ok()?
        || recorded("ptx")? != digest_file(ptx).ok()?
    {
        return None;
    }
    let text = std::fs::read_to_string(ptx).ok()?;
    let mut kernels = crate::ptx_text::entry_names(&text);
    kernels.sort();
    kernels.dedup();
    Some(PtxArtifact {
        arch,
        path: ptx.to_path_buf(),
        explicit_traps: crate::diagnose::explicit_traps(&text, &kernels),
        kernels,
        warnings: strings("warnings")?,
        local_packages,
        reused: true,
    })
}

/// Writes the stamp of `artifact`, just built with `settings`.
pub(crate) fn record(artifact: &PtxArtifact, settings: &str, crate_dir: &Path) -> Result<()> {
    let stamp = json!({
        "inputs": inputs(settings, crate_dir, &artifact.local_packages)?.to_string(),
        "ptx": digest_file(&artifact.path)?.to_string(),
        "warnings": artifact.warnings,
        "local_packages": artifact
            .local_packages
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>(),
    });
    let path = stamp_path(&artifact.path);
    std::fs::write(&path, serde_json::to_string_pretty(&stamp)?)
        .with_context(|| format!("writing {}", path.display()))
}
