//! The crate's hashes, both FNV-1a: 64-bit for kernels' PTX fingerprints ([`fnv1a64`]), and
//! 128-bit digests of source trees and files, to tell whether the sources a module was built
//! from changed (carried PTX, build stamps). Not a defence against tampering, only
//! against forgetting to rebuild: 128 bits make an accidental match of two different trees
//! out of the question.

use anyhow::{Context, Result};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

const OFFSET_BASIS: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// A 128-bit FNV-1a digest, written `fnv1a128:` and 32 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest(pub u128);

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fnv1a128:{:032x}", self.0)
    }
}

impl FromStr for Digest {
    type Err = String;

    fn from_str(text: &str) -> Result<Digest, String> {
        let hex = text
            .strip_prefix("fnv1a128:")
            .filter(|h| h.len() == 32)
            .ok_or_else(|| format!("`{text}` is not a digest (fnv1a128: and 32 hex digits)"))?;
        u128::from_str_radix(hex, 16)
            .map(Digest)
            .map_err(|e| format!("`{text}`: {e}"))
    }
}

/// 64-bit FNV-1a: the kernels' PTX fingerprints ([`crate::fingerprint`]), where 64 bits
/// tell the few hundred kernels apart and keep the tables short.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(PRIME)
    })
}

/// The digest of `bytes`.
pub fn digest_bytes(bytes: &[u8]) -> Digest {
    let mut hasher = Hasher(OFFSET_BASIS);
    hasher.write(bytes);
    Digest(hasher.0)
}

/// The digest of the file at `path`.
pub fn digest_file(path: &Path) -> Result<Digest> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(digest_bytes(&bytes))
}

struct Hasher(u128);

impl Hasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u128).wrapping_mul(PRIME);
        }
    }

    /// A length-prefixed field, so that no two sequences of fields hash the same bytes.
    fn field(&mut self, bytes: &[u8]) {
        self.write(&(bytes.len() as u64).to_le_bytes());
        self.write(bytes);
    }
}

/// The digest of a set of labelled texts, files and folders, in the order they are added.
/// A file counts by its label (a path relative to some root, `/`-separated) and its bytes;
/// a folder by every file under it, in sorted order; a missing path by its label, as absent.
/// Timestamps, permissions and the root's own location do not count, so a checkout anywhere
/// digests the same.
pub struct SourceDigest {
    hasher: Hasher,
    files: usize,
}

impl Default for SourceDigest {
    fn default() -> Self {
        SourceDigest::new()
    }
}

impl SourceDigest {
    pub fn new() -> SourceDigest {
        SourceDigest {
            hasher: Hasher(OFFSET_BASIS),
            files: 0,
        }
    }

    /// Adds a setting (a builder option, a compiler version).
    pub fn text(&mut self, label: &str, text: &str) {
        self.bytes(label, text.as_bytes());
    }

    /// Adds bytes that are not a file (a source compiled in).
    pub fn bytes(&mut self, label: &str, bytes: &[u8]) {
        self.hasher.field(b"bytes");
        self.hasher.field(label.as_bytes());
        self.hasher.field(bytes);
    }

    /// Adds the file or folder at `path` under `label`.
    pub fn path(&mut self, label: &str, path: &Path) -> Result<()> {
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, &mut files)?;
            for file in files {
                let relative = file.strip_prefix(path).unwrap_or(&file);
                let relative: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                self.file(&format!("{label}/{}", relative.join("/")), &file)?;
            }
        } else if path.is_file() {
            self.file(label, path)?;
        } else {
            self.hasher.field(b"absent");
            self.hasher.field(label.as_bytes());
        }
        Ok(())
    }

    fn file(&mut self, label: &str, path: &Path) -> Result<()> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        self.hasher.field(b"file");
        self.hasher.field(label.as_bytes());
        self.hasher.field(&bytes);
        self.files += 1;
        Ok(())
    }

    /// How many files were added.
    pub fn files(&self) -> usize {
        self.files
    }

    pub fn finish(&self) -> Digest {
        Digest(self.hasher.0)
    }
}

/// Every file under `dir`, sorted by path (symbolic links followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the folder {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            walk(&entry, out)?;
        } else if entry.is_file() {
            out.push(entry);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_round_trip() {
        // FNV-1a 128 of the empty string is its offset basis; of "a", the published value.
        assert_eq!(digest_bytes(b"").0, OFFSET_BASIS);
        assert_eq!(
            digest_bytes(b"a").0,
            0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964_u128
        );
        let d = digest_bytes(b"gpu");
        assert_eq!(d.to_string().parse::<Digest>(), Ok(d));
        assert!("fnv1a128:12".parse::<Digest>().is_err());
    }

    #[test]
    fn folders_count_names_and_contents_not_location() {
        let base = std::env::temp_dir().join(format!("ptx-builder-digest-{}", std::process::id()));
        let (a, b) = (base.join("a"), base.join("b"));
        for dir in [&a, &b] {
            std::fs::create_dir_all(dir.join("sub")).unwrap();
            std::fs::write(dir.join("sub/x.rs"), "fn x() {}").unwrap();
            std::fs::write(dir.join("y.rs"), "fn y() {}").unwrap();
        }
        let digest = |dir: &Path| {
            let mut d = SourceDigest::new();
            d.path("src", dir).unwrap();
            d.path("missing", &dir.join("none")).unwrap();
            (d.finish(), d.files())
        };
        assert_eq!(digest(&a), digest(&b));
        assert_eq!(digest(&a).1, 2);
        std::fs::write(b.join("y.rs"), "fn y() { }").unwrap();
        assert_ne!(digest(&a), digest(&b));
        std::fs::write(b.join("y.rs"), "fn y() {}").unwrap();
        std::fs::rename(b.join("y.rs"), b.join("z.rs")).unwrap();
        assert_ne!(digest(&a), digest(&b));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
