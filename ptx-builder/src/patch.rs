//! The builder's edits to the PTX llc writes: the markers the `gpu` macros leave (module-level
//! asm comment lines naming a kernel) become the directives rustc cannot emit — `.maxntid`
//! (`gpu::max_threads!`), `.reqnctapercluster` (`gpu::cluster_dims!`) and 64-byte aligned
//! tensor-map parameters (`gpu::tensor_map_param!`).

use crate::Arch;
use anyhow::{Context, Result, bail, ensure};

/// The `MARKER KERNEL VALUE...` comment lines (left by module-level asm of the `gpu` macros)
/// of the kernels in `kernels`, as `(kernel, values, line)`; markers of kernels the link
/// dropped are skipped, a line with other than one field per name of `values` is an error.
fn kernel_markers<'a>(
    ptx: &'a str,
    marker: &str,
    values: &[&str],
    kernels: &[String],
) -> Result<Vec<(&'a str, Vec<&'a str>, &'a str)>> {
    let mut found = Vec::new();
    for line in ptx.lines() {
        let Some(rest) = line.trim_start().strip_prefix(marker) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let kernel = fields.next();
        let given: Vec<&str> = fields.collect();
        let Some(kernel) = kernel.filter(|_| given.len() == values.len()) else {
            bail!(
                "malformed marker `{line}`: expected `{marker}KERNEL {}`",
                values.join(" ")
            );
        };
        if kernels.iter().any(|k| k == kernel) {
            found.push((kernel, given, line));
        }
    }
    Ok(found)
}

/// The marker `gpu::max_threads!` leaves in the PTX (a comment line from module-level asm):
/// `// max-threads KERNEL N`.
pub const MAX_THREADS_MARKER: &str = "// max-threads ";

/// Gives every kernel of `kernels` named by a `// max-threads KERNEL N` line the directive
/// `.maxntid N, 1, 1` (inserted after its parameter list): ptxas then keeps the kernel's
/// registers within what `N` threads of a block may have. rustc has no launch-bounds
/// attribute; this is how `gpu::max_threads!` reaches the PTX. Markers of kernels that are not
/// in the module (a dependency's, dropped by the link) are ignored.
pub fn apply_max_threads(ptx: &str, kernels: &[String]) -> Result<String> {
    let mut bounds = Vec::new();
    for (name, values, line) in kernel_markers(ptx, MAX_THREADS_MARKER, &["N"], kernels)? {
        let threads: u32 = values[0]
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
        if let Some(name) = crate::ptx_text::entry_name(line) {
            pending = bounds.iter().find(|(k, _)| *k == name).map(|(_, t)| *t);
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

/// The marker `gpu::cluster_dims!` leaves in the PTX: `// cluster-dims KERNEL X Y Z`.
pub const CLUSTER_DIMS_MARKER: &str = "// cluster-dims ";

/// The PTX ISA version that introduced `.reqnctapercluster` (7.8).
pub const CLUSTER_PTX_ISA: u32 = 78;

/// Gives every kernel of `kernels` named by a `// cluster-dims KERNEL X Y Z` line the
/// directive `.reqnctapercluster X, Y, Z` (before its body, after any `.maxntid`): the kernel
/// then always runs in clusters of that shape, as CUDA C++'s `__cluster_dims__(X, Y, Z)`.
/// This is how `gpu::cluster_dims!` reaches the PTX. Fails on a zero dimension, a kernel named
/// twice or without a body, and for an `arch` or `ptx_isa` older than the directive (sm_90,
/// PTX 7.8); markers of kernels not in the module are ignored.
pub fn apply_cluster_dims(
    ptx: &str,
    kernels: &[String],
    arch: Arch,
    ptx_isa: u32,
) -> Result<String> {
    let mut shapes: Vec<(&str, [u32; 3])> = Vec::new();
    for (name, values, line) in kernel_markers(ptx, CLUSTER_DIMS_MARKER, &["X", "Y", "Z"], kernels)?
    {
        let mut dims = [0u32; 3];
        for (dim, value) in dims.iter_mut().zip(&values) {
            *dim = value
                .parse()
                .ok()
                .filter(|d| *d >= 1)
                .with_context(|| format!("`{line}`: cluster dimensions must be at least 1"))?;
        }
        ensure!(
            shapes.iter().all(|(k, _)| *k != name),
            "kernel `{name}` declares its cluster shape twice (`{line}`)"
        );
        shapes.push((name, dims));
    }
    let Some((first, _)) = shapes.first() else {
        return Ok(ptx.to_string());
    };
    ensure!(
        arch.compute_capability() >= (9, 0) && ptx_isa >= CLUSTER_PTX_ISA,
        "kernel `{first}` declares a cluster shape, which needs sm_90 and PTX ISA 7.8; this \
         build is {arch} with PTX ISA {}.{} (declare the kernel \
         `[device if target_feature = \"sm_90\"]`)",
        ptx_isa / 10,
        ptx_isa % 10
    );
    let mut out = String::with_capacity(ptx.len() + 40 * shapes.len());
    // The shape of the entry whose header is being read, and whether its parameter list has
    // ended (directives such as `.maxntid` may follow it before the body's `{`).
    let mut pending: Option<[u32; 3]> = None;
    let mut params_done = false;
    let mut applied = 0;
    for line in ptx.lines() {
        let text = line.trim_start();
        if let Some(name) = crate::ptx_text::entry_name(line) {
            pending = shapes.iter().find(|(k, _)| *k == name).map(|(_, d)| *d);
            let code = line.split("//").next().unwrap_or(line);
            params_done = code.trim_end().ends_with(')');
        } else if let Some([x, y, z]) = pending {
            if !params_done {
                params_done = text.starts_with(')');
            } else if text.starts_with('{') {
                out.push_str(&format!(".reqnctapercluster {x}, {y}, {z}\n"));
                applied += 1;
                pending = None;
            } else if !text.starts_with('.') {
                // `;`: a declaration, which takes no directive.
                pending = None;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    ensure!(
        applied == shapes.len(),
        "{} cluster-shape markers, but {applied} of their kernels found",
        shapes.len()
    );
    Ok(out)
}

/// The marker `gpu::tensor_map_param!` leaves in the PTX: `// tensor-map-param KERNEL INDEX`.
pub const TENSOR_MAP_PARAM_MARKER: &str = "// tensor-map-param ";

/// Declares every kernel parameter named by a `// tensor-map-param KERNEL INDEX` line
/// `.align 64`: the copy engine reads a tensor map (128 bytes) only at a 64-byte aligned
/// address, and rustc cannot align a kernel parameter past 16 bytes (ptxas places a parameter
/// at the alignment it is declared with). Fails when the parameter is not 128 bytes (the
/// macro was given the wrong index); markers of kernels not in the module are ignored.
pub fn apply_tensor_map_params(ptx: &str, kernels: &[String]) -> Result<String> {
    let mut params = Vec::new();
    for (kernel, values, line) in kernel_markers(ptx, TENSOR_MAP_PARAM_MARKER, &["INDEX"], kernels)?
    {
        let index: u32 = values[0]
            .parse()
            .with_context(|| format!("`{line}`: the parameter index is not a number"))?;
        params.push((kernel.to_string(), format!("{kernel}_param_{index}")));
    }
    params.sort();
    params.dedup();
    if params.is_empty() {
        return Ok(ptx.to_string());
    }
    let mut found = vec![false; params.len()];
    let mut out = String::with_capacity(ptx.len() + 16 * params.len());
    for line in ptx.lines() {
        let declaration = line.trim_start().strip_prefix(".param ");
        let hit = declaration.and_then(|decl| {
            let name = decl.split_whitespace().last()?;
            let name = name.trim_end_matches(',');
            let (symbol, _) = name.split_once('[').unwrap_or((name, ""));
            params
                .iter()
                .position(|(_, p)| p == symbol)
                .map(|i| (i, decl, name))
        });
        match hit {
            Some((i, decl, name)) => {
                let (kernel, param) = &params[i];
                ensure!(
                    name.starts_with(&format!("{param}[128]")) && decl.contains(".align 16 .b8 "),
                    "`tensor_map_param!({kernel}, ..)` names `{param}`, which is not a 128-byte \
                     TensorMap parameter: `{}` (is the index the parameter's position?)",
                    line.trim()
                );
                out.push_str(&line.replacen(".align 16 ", ".align 64 ", 1));
                found[i] = true;
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    if let Some(i) = found.iter().position(|f| !f) {
        bail!(
            "`tensor_map_param!({}, ..)` names `{}`, which the kernel does not have",
            params[i].0,
            params[i].1
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_map_markers_align_their_parameters() {
        let k = vec!["k".to_string()];
        let ptx = "// tensor-map-param k 1\n.visible .entry k(\n\t.param .u32 k_param_0,\n\t.param .align 16 .b8 k_param_1[128]\n)\n{\nret;\n}\n";
        let patched = apply_tensor_map_params(ptx, &k).unwrap();
        assert!(
            patched.contains(".param .align 64 .b8 k_param_1[128]\n"),
            "{patched}"
        );
        assert!(patched.contains(".param .u32 k_param_0,"));
        let wrong_index = ptx.replace("k 1", "k 0");
        let err = apply_tensor_map_params(&wrong_index, &k)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a 128-byte"), "{err}");
        let missing = ptx.replace("k 1", "k 2");
        let err = apply_tensor_map_params(&missing, &k)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not have"), "{err}");
        let other = ptx.replace("param k 1", "param gone 1");
        assert_eq!(apply_tensor_map_params(&other, &k).unwrap(), other);
        assert!(apply_tensor_map_params("// tensor-map-param k x\n", &k).is_err());
    }

    #[test]
    fn max_threads_markers_become_maxntid() {
        let ptx = "// max-threads k 288\n.visible .entry k\n(\n\t.param .u32 k_param_0\n)\n;\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n{\nret;\n}\n.visible .entry other(\n)\n{\nret;\n}\n";
        let k = ["k".to_string(), "other".to_string()];
        let patched = apply_max_threads(ptx, &k).unwrap();
        assert!(patched.contains(")\n.maxntid 288, 1, 1\n{"), "{patched}");
        assert_eq!(patched.matches(".maxntid").count(), 1);
        // A marker whose kernel the link dropped is ignored; one whose kernel has no body fails.
        let dropped = "// max-threads gone 64\n.visible .entry k(\n)\n{\n}\n";
        assert_eq!(apply_max_threads(dropped, &k).unwrap(), dropped);
        let bodiless = "// max-threads k 64\n.visible .entry k\n(\n)\n;\n";
        let err = apply_max_threads(bodiless, &k).unwrap_err().to_string();
        assert!(err.contains("1 launch-bounds markers"), "{err}");
        assert!(apply_max_threads("// max-threads k 0\n", &k).is_err());
        assert_eq!(
            apply_max_threads(".entry k(\n)\n", &k).unwrap(),
            ".entry k(\n)\n"
        );
    }

    #[test]
    fn cluster_markers_become_reqnctapercluster() {
        let ptx = "// cluster-dims k 2 1 1\n.visible .entry k\n(\n\t.param .u32 k_param_0\n)\n;\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n{\nret;\n}\n.visible .entry other()\n{\nret;\n}\n";
        let k = ["k".to_string(), "other".to_string()];
        let patched = apply_cluster_dims(ptx, &k, Arch::Sm90, 80).unwrap();
        assert!(
            patched.contains(")\n.reqnctapercluster 2, 1, 1\n{"),
            "{patched}"
        );
        assert_eq!(patched.matches(".reqnctapercluster").count(), 1);
        // A kernel without parameters (`()` on its `.entry` line) gets it too.
        let bare = ptx
            .replace("cluster-dims k", "cluster-dims other")
            .replace("other()", "other() // @other");
        let patched = apply_cluster_dims(&bare, &k, Arch::Sm90a, 80).unwrap();
        assert!(
            patched.contains("other() // @other\n.reqnctapercluster 2, 1, 1\n{"),
            "{patched}"
        );
        // After the launch bounds: both directives precede the body.
        let both = apply_max_threads(&format!("// max-threads k 128\n{ptx}"), &k).unwrap();
        let patched = apply_cluster_dims(&both, &k, Arch::Sm90, 80).unwrap();
        assert!(
            patched.contains(")\n.maxntid 128, 1, 1\n.reqnctapercluster 2, 1, 1\n{"),
            "{patched}"
        );
        // No marker: the PTX is unchanged, whatever the arch.
        let plain = ".visible .entry k(\n)\n{\n}\n";
        assert_eq!(
            apply_cluster_dims(plain, &k, Arch::Sm80, 71).unwrap(),
            plain
        );
        // A marker whose kernel the link dropped is ignored.
        let dropped = format!("// cluster-dims gone 2 1 1\n{plain}");
        assert_eq!(
            apply_cluster_dims(&dropped, &k, Arch::Sm80, 71).unwrap(),
            dropped
        );
    }

    #[test]
    fn cluster_markers_are_refused_when_wrong() {
        let k = ["k".to_string()];
        let body = ".visible .entry k(\n)\n{\n}\n";
        let err = |ptx: &str, arch, isa| {
            apply_cluster_dims(ptx, &k, arch, isa)
                .unwrap_err()
                .to_string()
        };
        let zero = format!("// cluster-dims k 2 0 1\n{body}");
        assert!(
            err(&zero, Arch::Sm90, 80).contains("at least 1"),
            "{}",
            err(&zero, Arch::Sm90, 80)
        );
        let short = format!("// cluster-dims k 2 1\n{body}");
        assert!(err(&short, Arch::Sm90, 80).contains("KERNEL X Y Z"));
        let twice = format!("// cluster-dims k 2 1 1\n// cluster-dims k 4 1 1\n{body}");
        assert!(err(&twice, Arch::Sm90, 80).contains("twice"));
        let bodiless = "// cluster-dims k 2 1 1\n.visible .entry k\n(\n)\n;\n";
        assert!(
            err(bodiless, Arch::Sm90, 80).contains("1 cluster-shape markers, but 0"),
            "{}",
            err(bodiless, Arch::Sm90, 80)
        );
        let fine = format!("// cluster-dims k 2 1 1\n{body}");
        assert!(err(&fine, Arch::Sm80, 80).contains("needs sm_90"));
        assert!(err(&fine, Arch::Sm90, 77).contains("PTX ISA 7.7"));
    }
}
