//! `host inspect`: what each kernel lowers to — its async-copy and synchronization
//! instructions in PTX and, when NVIDIA's ptxas and cuobjdump are found, in SASS, with its
//! registers, shared memory and spills. Needs no GPU.

use anyhow::{Context, Result};
use ptx_builder::Arch;
use ptx_builder::nvtools::{self, KernelResources, SassInstr, Tool};
use ptx_builder::ptx_text::{self, PtxInstr};
use std::collections::BTreeMap;
use std::path::Path;

/// One kernel, as compiled for one arch.
#[derive(Clone, Debug)]
pub struct KernelView {
    pub name: String,
    pub ptx: Vec<PtxInstr>,
    /// `None` when the NVIDIA tools were not found.
    pub sass: Option<Vec<SassInstr>>,
    pub resources: Option<KernelResources>,
}

/// Every kernel of the module for one arch.
#[derive(Clone, Debug)]
pub struct Inspection {
    pub arch: Arch,
    pub kernels: BTreeMap<String, KernelView>,
    /// Why there is no SASS, if there is none.
    pub sass_missing: Option<String>,
}

impl Inspection {
    pub fn kernel(&self, name: &str) -> Option<&KernelView> {
        self.kernels.get(name)
    }
}

/// Splits the embedded PTX for `arch` into kernels; assembles and disassembles it when the
/// NVIDIA tools are present.
pub fn inspect(arch: Arch) -> Result<Inspection> {
    let ptx = crate::device_code::module_text(arch);
    let mut kernels: BTreeMap<String, KernelView> = ptx_text::kernel_instructions(ptx)
        .into_iter()
        .map(|(name, ptx)| {
            let view = KernelView {
                name: name.clone(),
                ptx,
                sass: None,
                resources: None,
            };
            (name, view)
        })
        .collect();
    let tools =
        nvtools::require(Tool::Ptxas).and_then(|p| Ok((p, nvtools::require(Tool::Cuobjdump)?)));
    let sass_missing = match tools {
        Ok((ptxas, cuobjdump)) => {
            let (resources, sass) = assemble(arch, ptx, &ptxas, &cuobjdump)?;
            for r in resources {
                if let Some(k) = kernels.get_mut(&r.name) {
                    k.resources = Some(r);
                }
            }
            for (name, instrs) in sass {
                if let Some(k) = kernels.get_mut(&name) {
                    k.sass = Some(instrs);
                }
            }
            None
        }
        Err(err) => Some(err.to_string()),
    };
    Ok(Inspection {
        arch,
        kernels,
        sass_missing,
    })
}

type Assembled = (Vec<KernelResources>, BTreeMap<String, Vec<SassInstr>>);

/// `ptxas -v` then `cuobjdump -sass` in a private temporary folder.
fn assemble(arch: Arch, ptx: &str, ptxas: &Path, cuobjdump: &Path) -> Result<Assembled> {
    let dir = std::env::temp_dir().join(format!(
        "host-inspect-{}-{}-{}",
        std::process::id(),
        arch,
        unique()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = (|| {
        let ptx_path = dir.join("gpu.ptx");
        let cubin = dir.join("gpu.cubin");
        std::fs::write(&ptx_path, ptx)?;
        let resources = nvtools::assemble(ptxas, &ptx_path, arch, &cubin)?;
        let sass = nvtools::disassemble(cuobjdump, &cubin)?;
        Ok((resources, sass))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Whether a PTX instruction is part of async copying or synchronization (with, for the copy
/// engine, the elected issuer, the tensor map's address and prefetch, and cache policies).
pub fn is_async_ptx(opcode: &str) -> bool {
    [
        "cp.async",
        "mbarrier",
        "barrier",
        "bar.",
        "fence",
        "trap",
        "elect",
        "cvta.param",
        "prefetch.tensormap",
        "createpolicy",
        "wgmma",
        "setmaxnreg",
    ]
    .iter()
    .any(|p| opcode.starts_with(p))
}

/// Whether a SASS instruction is part of async copying or synchronization.
pub fn is_async_sass(opcode: &str) -> bool {
    [
        "LDGSTS",
        "UBLKCP",
        "UTMA",
        "LDGDEPBAR",
        "DEPBAR",
        "ARRIVES",
        "SYNCS",
        "BAR",
        "BPT",
        "HGMMA",
        "QGMMA",
        "WARPGROUP",
        "USETMAXREG",
    ]
    .iter()
    .any(|p| opcode.starts_with(p))
}

/// Whether a PTX instruction is `gpu::math`'s or `gpu::reduce`'s: the special-function unit,
/// the correctly rounded forms beside it, warp shuffles and reductions.
pub fn is_math_ptx(opcode: &str) -> bool {
    [
        "ex2.", "lg2.", "rcp.", "rsqrt.", "sqrt.", "tanh.", "div.rn", "shfl.", "redux.",
    ]
    .iter()
    .any(|p| opcode.starts_with(p))
}

/// Whether a SASS instruction is `gpu::math`'s or `gpu::reduce`'s (`MUFU.*`, `SHFL.*`,
/// `REDUX`; the correctly rounded forms are sequences around `MUFU.RCP` / `MUFU.RSQ`).
pub fn is_math_sass(opcode: &str) -> bool {
    ["MUFU", "SHFL", "REDUX"]
        .iter()
        .any(|p| opcode.starts_with(p))
}

/// The PTX instruction with the operand that tells its variant: the byte count of a copy
/// (and `src-size` for the zero-fill form), the count of `wait_group`.
pub fn ptx_key(instr: &PtxInstr) -> String {
    let operands: Vec<&str> = instr.operands.split(',').map(str::trim).collect();
    if instr.opcode.starts_with("cp.async.ca") || instr.opcode.starts_with("cp.async.cg") {
        let size = operands.get(2).copied().unwrap_or("?");
        let zfill = if operands.len() > 3 { ", src-size" } else { "" };
        format!("{} {size}{zfill}", instr.opcode)
    } else if instr.opcode == "cp.async.wait_group" || instr.opcode.starts_with("setmaxnreg") {
        format!("{} {}", instr.opcode, instr.operands)
    } else {
        instr.opcode.clone()
    }
}

/// The SASS instruction with what tells its variant (the count of a `DEPBAR`).
pub fn sass_key(instr: &SassInstr) -> String {
    if instr.opcode.starts_with("DEPBAR") {
        instr.text.clone()
    } else {
        instr.opcode.clone()
    }
}

/// `(key, count)` in order of first appearance.
pub fn tally(keys: impl IntoIterator<Item = String>) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for key in keys {
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => out.push((key, 1)),
        }
    }
    out
}

impl KernelView {
    /// The async-copy and synchronization instructions of its PTX, counted.
    pub fn ptx_async_ops(&self) -> Vec<(String, usize)> {
        tally(
            self.ptx
                .iter()
                .filter(|i| is_async_ptx(&i.opcode))
                .map(ptx_key),
        )
    }

    /// The async-copy and synchronization instructions of its SASS, counted.
    pub fn sass_async_ops(&self) -> Option<Vec<(String, usize)>> {
        let sass = self.sass.as_ref()?;
        Some(tally(
            sass.iter()
                .filter(|i| is_async_sass(&i.opcode))
                .map(sass_key),
        ))
    }

    pub fn has_ptx(&self, prefix: &str) -> bool {
        self.ptx.iter().any(|i| i.opcode.starts_with(prefix))
    }

    /// Whether any SASS opcode starts with `prefix`; `None` without SASS.
    pub fn has_sass(&self, prefix: &str) -> Option<bool> {
        Some(
            self.sass
                .as_ref()?
                .iter()
                .any(|i| i.opcode.starts_with(prefix)),
        )
    }
}

/// Renders the inspection of `names` (all kernels when empty) as text.
pub fn render(inspection: &Inspection, names: &[&str]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "PTX and SASS for {} (PTX ISA 8.0)", inspection.arch);
    if let Some(why) = &inspection.sass_missing {
        let _ = writeln!(out, "(no SASS: {why})");
    }
    for (name, k) in &inspection.kernels {
        if !names.is_empty() && !names.contains(&name.as_str()) {
            continue;
        }
        let _ = writeln!(out, "\n{name}");
        if let Some((_, e)) = crate::registry::all_experiments()
            .find(|(_, e)| e.entry_points().contains(&name.as_str()))
        {
            let dash = |x: Option<u32>| x.map_or("-".to_string(), |x| x.to_string());
            let _ = writeln!(
                out,
                "  {} | {} threads, {} B dynamic shared",
                e.summary(),
                dash(e.threads()),
                dash(e.shared_bytes())
            );
        }
        if let Some(r) = &k.resources {
            let _ = writeln!(
                out,
                "  ptxas: {} registers, {} B static shared, {} B stack, {} B spilled",
                r.registers,
                r.shared_bytes,
                r.stack_frame_bytes,
                r.spill_store_bytes + r.spill_load_bytes
            );
        }
        let _ = writeln!(out, "  PTX : {}", format_ops(&k.ptx_async_ops()));
        if let Some(ops) = k.sass_async_ops() {
            let _ = writeln!(out, "  SASS: {}", format_ops(&ops));
        }
        // Math and warp exchanges, where a kernel has any (`gpu::math`, `gpu::reduce`).
        let math = tally(k.ptx.iter().filter(|i| is_math_ptx(&i.opcode)).map(ptx_key));
        if !math.is_empty() {
            let _ = writeln!(out, "  PTX math/warp : {}", format_ops(&math));
        }
        if let Some(sass) = &k.sass {
            let math = tally(
                sass.iter()
                    .filter(|i| is_math_sass(&i.opcode))
                    .map(sass_key),
            );
            if !math.is_empty() {
                let _ = writeln!(out, "  SASS math/warp: {}", format_ops(&math));
            }
        }
    }
    out
}

fn format_ops(ops: &[(String, usize)]) -> String {
    if ops.is_empty() {
        return "(none)".into();
    }
    ops.iter()
        .map(|(op, n)| {
            if *n == 1 {
                op.clone()
            } else {
                format!("{op} x{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instr(opcode: &str, operands: &str) -> PtxInstr {
        PtxInstr {
            predicate: None,
            opcode: opcode.into(),
            operands: operands.into(),
        }
    }

    #[test]
    fn keys_name_the_variant() {
        assert_eq!(
            ptx_key(&instr("cp.async.ca.shared.global", "[%r1], [%rd2], 4")),
            "cp.async.ca.shared.global 4"
        );
        assert_eq!(
            ptx_key(&instr(
                "cp.async.cg.shared.global",
                "[%r1], [%rd2], 16, %r9"
            )),
            "cp.async.cg.shared.global 16, src-size"
        );
        assert_eq!(
            ptx_key(&instr("cp.async.wait_group", "2")),
            "cp.async.wait_group 2"
        );
        assert_eq!(ptx_key(&instr("barrier.sync", "0")), "barrier.sync");
    }

    #[test]
    fn tally_keeps_first_appearance_order() {
        let t = tally(["b", "a", "b", "c", "b"].map(String::from));
        assert_eq!(t, [("b".into(), 3), ("a".into(), 1), ("c".into(), 1)]);
    }

    #[test]
    fn filters() {
        assert!(is_async_ptx("cp.async.commit_group"));
        assert!(is_async_ptx("mbarrier.try_wait.parity.shared.b64"));
        assert!(!is_async_ptx("fma.rn.f32"));
        // How a kernel reaches its tensor map (in place, as a parameter) is shown too.
        assert!(is_async_ptx("cvta.param.u64"));
        assert!(is_async_ptx("prefetch.tensormap"));
        assert!(is_async_sass("LDGSTS.E.BYPASS.128"));
        assert!(is_async_sass("SYNCS.PHASECHK.TRANS64.TRYWAIT"));
        assert!(!is_async_sass("FFMA"));
    }
}
