//! NVIDIA's `ptxas` and `cuobjdump`: finding them, running them, reading what they print.
//!
//! They are not needed to build or run the project (the driver compiles PTX itself); they check
//! the PTX (CI assembles every module for its arch) and show what each kernel became in SASS.

use crate::Arch;
use crate::command::capture;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An NVIDIA command-line tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Ptxas,
    Cuobjdump,
}

impl Tool {
    pub fn command_name(self) -> &'static str {
        match self {
            Tool::Ptxas => "ptxas",
            Tool::Cuobjdump => "cuobjdump",
        }
    }

    /// The environment variable that names this tool's path explicitly.
    pub fn env_var(self) -> &'static str {
        match self {
            Tool::Ptxas => "PTXAS",
            Tool::Cuobjdump => "CUOBJDUMP",
        }
    }
}

/// Folder `.ci/run` unpacks NVIDIA's PyPI wheels into, relative to the workspace.
/// `cuobjdump` runs `nvdisasm` from its own folder, so both must be there.
pub const PROJECT_TOOLS_BIN: &str = ".tools/nvidia/cu13/bin";

/// Finds `tool`, in this order: the path in its environment variable (`PTXAS`, `CUOBJDUMP`);
/// the folder in `NVIDIA_TOOLS_BIN`; the project's `.tools/nvidia/cu13/bin` (filled by
/// `.ci/run`); `PATH`; `/usr/local/cuda/bin`.
pub fn find(tool: Tool) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(tool.env_var()) {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let name = tool.command_name();
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os("NVIDIA_TOOLS_BIN") {
        dirs.push(dir.into());
    }
    dirs.push(crate::workspace_root().join(PROJECT_TOOLS_BIN));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.push("/usr/local/cuda/bin".into());
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// Like [`find`], but a missing tool is an error that says how to get it.
pub fn require(tool: Tool) -> Result<PathBuf> {
    find(tool).with_context(|| {
        format!(
            "NVIDIA's {name} was not found (looked at ${var}, $NVIDIA_TOOLS_BIN, {dir}, PATH, \
             /usr/local/cuda/bin); `bash .ci/run` installs it from PyPI into {dir}",
            name = tool.command_name(),
            var = tool.env_var(),
            dir = PROJECT_TOOLS_BIN,
        )
    })
}

/// What ptxas reports for one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    pub name: String,
    pub registers: u32,
    /// Static shared memory; dynamic shared memory is decided at launch.
    pub shared_bytes: u32,
    pub stack_frame_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
}

/// Assembles `ptx` for `arch` into `cubin` with `ptxas -v` and returns the per-kernel report.
/// Any ptxas error (or warning-free failure) is an error carrying ptxas's message.
pub fn assemble(
    ptxas: &Path,
    ptx: &Path,
    arch: Arch,
    cubin: &Path,
) -> Result<Vec<KernelResources>> {
    let output = Command::new(ptxas)
        .arg("-v")
        .arg(format!("-arch={}", arch.name()))
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .with_context(|| format!("could not run {}", ptxas.display()))?;
    let report = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!(
            "ptxas rejected {} for {arch}:\n{}",
            ptx.display(),
            report.trim_end()
        );
    }
    // The report first: a fingerprint names a cubin whose report is there too.
    std::fs::write(report_path(cubin), report.as_bytes())
        .with_context(|| format!("writing the ptxas report of {}", cubin.display()))?;
    let fingerprint = source_fingerprint(ptxas, ptx, arch)?;
    std::fs::write(fingerprint_path(cubin), fingerprint)
        .with_context(|| format!("writing the source fingerprint of {}", cubin.display()))?;
    Ok(parse_ptxas_report(&report))
}

/// Like [`assemble`], but when `cubin` is already the assembly of `ptx` for `arch` by this
/// ptxas, returns the report ptxas gave then without running it (`cargo xtask build-ptx`
/// prints every kernel's resources on every run). Also returns whether ptxas ran.
pub fn assemble_cached(
    ptxas: &Path,
    ptx: &Path,
    arch: Arch,
    cubin: &Path,
) -> Result<(Vec<KernelResources>, bool)> {
    let current = source_fingerprint(ptxas, ptx, arch)?;
    let recorded = std::fs::read_to_string(fingerprint_path(cubin)).ok();
    if cubin.is_file()
        && recorded.as_deref() == Some(current.as_str())
        && let Ok(report) = std::fs::read_to_string(report_path(cubin))
    {
        return Ok((parse_ptxas_report(&report), false));
    }
    Ok((assemble(ptxas, ptx, arch, cubin)?, true))
}

/// Makes `cubin` the assembly of `ptx` for `arch`, assembling only if it is not already: a
/// fingerprint beside it (written by [`assemble`]) names the PTX text, arch and ptxas it came
/// from. Returns whether ptxas ran. `cargo xtask build-ptx` assembles every module, so the
/// host's build script then finds its cubins current.
pub fn assemble_if_changed(ptxas: &Path, ptx: &Path, arch: Arch, cubin: &Path) -> Result<bool> {
    let current = source_fingerprint(ptxas, ptx, arch)?;
    let recorded = std::fs::read_to_string(fingerprint_path(cubin)).ok();
    if cubin.is_file() && recorded.as_deref() == Some(current.as_str()) {
        return Ok(false);
    }
    assemble(ptxas, ptx, arch, cubin)?;
    Ok(true)
}

/// Where [`assemble`] keeps ptxas's report on a cubin.
fn report_path(cubin: &Path) -> PathBuf {
    cubin.with_extension("cubin.ptxas-report")
}

/// Where [`assemble`] records what a cubin was assembled from.
fn fingerprint_path(cubin: &Path) -> PathBuf {
    cubin.with_extension("cubin.source")
}

/// The arch, the ptxas path and size, and a 64-bit FNV-1a hash of the PTX text: enough to tell
/// a cubin assembled from other PTX or by another ptxas.
fn source_fingerprint(ptxas: &Path, ptx: &Path, arch: Arch) -> Result<String> {
    let text = std::fs::read(ptx).with_context(|| format!("reading {}", ptx.display()))?;
    let hash = text.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let ptxas_bytes = std::fs::metadata(ptxas).map(|m| m.len()).unwrap_or(0);
    Ok(format!(
        "{arch} {hash:016x} {} bytes of PTX; {} ({ptxas_bytes} bytes)\n",
        text.len(),
        ptxas.display()
    ))
}

/// Reads the `ptxas -v` report: one entry per kernel (`Compiling entry function`), in order.
pub fn parse_ptxas_report(report: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    let mut current: Option<String> = None;
    for line in report.lines() {
        let line = line.trim();
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            kernels.push(KernelResources {
                name: name.clone(),
                ..Default::default()
            });
            current = Some(name);
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = Some(rest.trim().to_string());
        } else if line.contains("bytes stack frame")
            && let Some(k) = entry_mut(&mut kernels, &current)
        {
            k.stack_frame_bytes = number_before(line, "bytes stack frame");
            k.spill_store_bytes = number_before(line, "bytes spill stores");
            k.spill_load_bytes = number_before(line, "bytes spill loads");
        } else if line.contains("Used ")
            && line.contains("registers")
            && let Some(k) = entry_mut(&mut kernels, &current)
        {
            k.registers = number_before(line, "registers");
            k.shared_bytes = number_before(line, "bytes smem");
        }
    }
    kernels
}

fn entry_mut<'a>(
    kernels: &'a mut [KernelResources],
    current: &Option<String>,
) -> Option<&'a mut KernelResources> {
    let name = current.as_deref()?;
    kernels.iter_mut().rev().find(|k| k.name == name)
}

/// The integer right before `unit` in `text` ("10 registers" -> 10); 0 when absent.
fn number_before(text: &str, unit: &str) -> u32 {
    text.split(unit)
        .next()
        .filter(|head| head.len() < text.len())
        .and_then(|head| {
            head.split(|c: char| !c.is_ascii_digit())
                .rfind(|s| !s.is_empty())
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// One SASS instruction as `cuobjdump -sass` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SassInstr {
    /// Byte offset in the kernel.
    pub offset: u32,
    pub predicate: Option<String>,
    /// Opcode with modifiers, e.g. `LDGSTS.E.BYPASS.128`.
    pub opcode: String,
    pub text: String,
}

/// Disassembles `cubin` and returns its SASS per kernel.
pub fn disassemble(cuobjdump: &Path, cubin: &Path) -> Result<BTreeMap<String, Vec<SassInstr>>> {
    let text = capture(Command::new(cuobjdump).arg("-sass").arg(cubin))
        .with_context(|| format!("disassembling {}", cubin.display()))?;
    Ok(parse_sass(&text))
}

/// Splits `cuobjdump -sass` output into kernels (`Function : name`) and instructions.
pub fn parse_sass(text: &str) -> BTreeMap<String, Vec<SassInstr>> {
    let mut kernels: BTreeMap<String, Vec<SassInstr>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix("Function : ") {
            let name = name.trim().to_string();
            kernels.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let (Some(name), Some(instr)) = (current.as_ref(), parse_sass_line(trimmed)) else {
            continue;
        };
        if let Some(list) = kernels.get_mut(name) {
            list.push(instr);
        }
    }
    kernels
}

fn parse_sass_line(line: &str) -> Option<SassInstr> {
    // `/*0040*/   @!P0 LDGSTS.E [R5], desc[UR4][R2.64] ;   /* 0x... */`
    let rest = line.strip_prefix("/*")?;
    let (offset, rest) = rest.split_once("*/")?;
    let offset = u32::from_str_radix(offset.trim(), 16).ok()?;
    let text = rest.split(';').next()?.trim();
    if text.is_empty() {
        return None;
    }
    let (predicate, body) = match text.strip_prefix('@') {
        Some(r) => {
            let (pred, body) = r.split_once(char::is_whitespace)?;
            (Some(pred.to_string()), body.trim_start())
        }
        None => (None, text),
    };
    let opcode = body.split_whitespace().next()?.to_string();
    Some(SassInstr {
        offset,
        predicate,
        opcode,
        text: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for ptxas that counts its runs and writes its `-o` file.
    #[cfg(unix)]
    fn fake_ptxas(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("ptxas");
        let script = format!(
            "#!/bin/sh\necho run >> {runs}\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then \
             echo cubin > \"$2\"; fi; shift; done\n",
            runs = dir.join("runs").display()
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[cfg(unix)]
    #[test]
    fn cubins_are_reassembled_only_when_their_source_changes() {
        let dir = std::env::temp_dir().join(format!("ptx-builder-cubin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ptxas = fake_ptxas(&dir);
        let (ptx, cubin) = (dir.join("m.ptx"), dir.join("m.cubin"));
        let runs = || std::fs::read_to_string(dir.join("runs")).map_or(0, |r| r.lines().count());
        std::fs::write(&ptx, ".version 8.0").unwrap();
        assert!(assemble_if_changed(&ptxas, &ptx, Arch::Sm90, &cubin).unwrap());
        assert!(!assemble_if_changed(&ptxas, &ptx, Arch::Sm90, &cubin).unwrap());
        assert_eq!(runs(), 1);
        // Another arch, other text, or a missing cubin: assembled again.
        assert!(assemble_if_changed(&ptxas, &ptx, Arch::Sm80, &cubin).unwrap());
        std::fs::write(&ptx, ".version 8.0 // changed").unwrap();
        assert!(assemble_if_changed(&ptxas, &ptx, Arch::Sm80, &cubin).unwrap());
        std::fs::remove_file(&cubin).unwrap();
        assert!(assemble_if_changed(&ptxas, &ptx, Arch::Sm80, &cubin).unwrap());
        assert!(!assemble_if_changed(&ptxas, &ptx, Arch::Sm80, &cubin).unwrap());
        assert_eq!(runs(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_ptxas_report() {
        let report = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers, 256 bytes smem, 376 bytes cmem[0]
ptxas info    : Compiling entry function 'other' for 'sm_80'
ptxas info    : Function properties for other
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 38 registers, used 1 barriers, 376 bytes cmem[0]
ptxas info    : Function properties for _RNvNtCs_4core9panicking9panic_fmt
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
";
        let kernels = parse_ptxas_report(report);
        assert_eq!(
            kernels,
            [
                KernelResources {
                    name: "k".into(),
                    registers: 10,
                    shared_bytes: 256,
                    stack_frame_bytes: 8,
                    spill_store_bytes: 4,
                    spill_load_bytes: 12,
                },
                KernelResources {
                    name: "other".into(),
                    registers: 38,
                    ..Default::default()
                }
            ]
        );
    }

    #[test]
    fn reads_sass() {
        let text = "
	code for sm_90
		Function : second
	.headerflags	@\"EF_CUDA_TM EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
                                                                           /* 0x000fe40000000800 */
        /*0010*/              @!P0 LDGSTS.E.BYPASS.128 [R5], desc[UR4][R2.64] ;  /* 0x0000000002057fae */
        /*0020*/                   DEPBAR.LE SB0, 0x1 ;                    /* 0x000080400000791a */
		.........
		Function : first
        /*0000*/                   EXIT ;  /* 0x000000000000794d */
";
        let kernels = parse_sass(text);
        assert_eq!(kernels.len(), 2);
        let second = &kernels["second"];
        let ops: Vec<_> = second.iter().map(|i| i.opcode.as_str()).collect();
        assert_eq!(ops, ["LDC", "LDGSTS.E.BYPASS.128", "DEPBAR.LE"]);
        assert_eq!(second[1].predicate.as_deref(), Some("!P0"));
        assert_eq!(second[1].offset, 0x10);
        assert_eq!(second[2].text, "DEPBAR.LE SB0, 0x1");
        assert_eq!(kernels["first"][0].opcode, "EXIT");
    }

    #[test]
    fn number_before_unit() {
        assert_eq!(
            number_before("Used 38 registers, 12 bytes smem", "registers"),
            38
        );
        assert_eq!(
            number_before("Used 38 registers, 12 bytes smem", "bytes smem"),
            12
        );
        assert_eq!(number_before("Used 38 registers", "bytes smem"), 0);
    }
}
