//! Running the tools a device build calls, and finding the files it reads.

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cmd`, its output dropped; a failure carries the command and its stderr.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
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

/// `name` in `dir` or the nearest folder above it that has one.
pub(crate) fn find_upwards(dir: &Path, name: &str) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors().map(|d| d.join(name)).find(|p| p.is_file())
}
