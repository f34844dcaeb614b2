//! Reading PTX text: which kernels a module has and which instructions each one executes.

use std::collections::BTreeMap;

/// Names of the `.entry` functions (kernels) in a PTX module, in order of first appearance
/// (a kernel declared before its definition — PTX that takes a kernel's address, say — is
/// listed once).
pub fn entry_names(ptx: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in ptx.lines().filter_map(entry_name) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The kernel an `.entry` line declares.
pub(crate) fn entry_name(line: &str) -> Option<String> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix(".visible ").unwrap_or(rest);
    let rest = rest.strip_prefix(".entry ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// One PTX instruction: optional guard predicate, the full opcode with its modifiers
/// (`cp.async.ca.shared.global`), and the operand text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxInstr {
    pub predicate: Option<String>,
    pub opcode: String,
    pub operands: String,
}

/// The instructions of each kernel in a PTX module, keyed by kernel name.
///
/// Directives (`.reg`, `.local`), labels and comments are left out; instructions that came from
/// inline asm (including `{ ... }` scopes inside it) are kept in order.
pub fn kernel_instructions(ptx: &str) -> BTreeMap<String, Vec<PtxInstr>> {
    kernel_bodies(ptx)
        .into_iter()
        .map(|(name, body)| (name, body.instructions))
        .collect()
}

/// The branch labels of each kernel, keyed by kernel name: `(index, label)`, the label
/// (without its colon) standing before instruction `index` of [`kernel_instructions`]' list
/// (`index` = the list's length for a label at the end). With the branches (`bra`, whose
/// operand names a label) they give the kernel's control flow.
pub fn kernel_labels(ptx: &str) -> BTreeMap<String, Vec<(usize, String)>> {
    kernel_bodies(ptx)
        .into_iter()
        .map(|(name, body)| (name, body.labels))
        .collect()
}

/// A kernel's instructions and labels.
struct Body {
    instructions: Vec<PtxInstr>,
    labels: Vec<(usize, String)>,
}

fn kernel_bodies(ptx: &str) -> BTreeMap<String, Body> {
    let mut kernels = BTreeMap::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let Some(name) = entry_name(line) else {
            continue;
        };
        // Parameters run until the body's opening brace; the body ends when braces balance.
        let mut depth = 0usize;
        let mut started = false;
        let mut body = Body {
            instructions: Vec::new(),
            labels: Vec::new(),
        };
        for line in lines.by_ref() {
            let code = line.split("//").next().unwrap_or("").trim();
            if !started {
                if code.starts_with('{') {
                    started = true;
                    depth = 1;
                } else if code.starts_with(';') {
                    break; // a declaration, not a definition
                }
                continue;
            }
            for stmt in code.split(';') {
                let stmt = stmt.trim();
                let opens = stmt.matches('{').count();
                let closes = stmt.matches('}').count();
                depth = (depth + opens).saturating_sub(closes);
                let stmt = stmt.trim_matches(|c| c == '{' || c == '}').trim();
                if let Some(label) = stmt.strip_prefix('$').and_then(|l| l.strip_suffix(':')) {
                    body.labels
                        .push((body.instructions.len(), format!("${label}")));
                } else if let Some(instr) = parse_instr(stmt) {
                    body.instructions.push(instr);
                }
            }
            if depth == 0 {
                break;
            }
        }
        if started {
            kernels.insert(name, body);
        }
    }
    kernels
}

fn parse_instr(stmt: &str) -> Option<PtxInstr> {
    if stmt.is_empty() || stmt.starts_with('.') || stmt.ends_with(':') || stmt.starts_with('$') {
        return None;
    }
    let (predicate, rest) = match stmt.strip_prefix('@') {
        Some(rest) => {
            let (pred, rest) = rest.split_once(char::is_whitespace)?;
            (Some(pred.to_string()), rest.trim_start())
        }
        None => (None, stmt),
    };
    let (opcode, operands) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if !opcode.starts_with(|c: char| c.is_ascii_lowercase()) {
        return None;
    }
    Some(PtxInstr {
        predicate,
        opcode: opcode.to_string(),
        operands: operands.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.shared .align 16 .b8 SMEM[256];
.visible .entry second
(
)
;
	// .globl	first
.visible .entry first(
	.param .u64 .ptr .align 1 first_param_0,
	.param .u32 first_param_1
)
{
	.reg .b32 	%r<4>;
// %bb.0:
	ld.param.b32 	%r1, [first_param_1];
	// begin inline asm
	cp.async.ca.shared.global [%r2], [%rd1], 4;
	// end inline asm
$L__BB0_1:
	// begin inline asm
	{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%r3], %r1; selp.u32 %r1, 1, 0, p; }
	// end inline asm
	@%p1 bra 	$L__BB0_1;
	ret;
}
.entry second()
{
	cp.async.wait_group 1;
	ret;
}
"#;

    #[test]
    fn labels_stand_before_their_instruction() {
        let labels = kernel_labels(SAMPLE);
        // `$L__BB0_1` precedes the try_wait (instruction 2 of `first`).
        assert_eq!(labels["first"], [(2, "$L__BB0_1".to_string())]);
        assert!(labels["second"].is_empty());
    }

    #[test]
    fn finds_entries() {
        assert_eq!(entry_names(SAMPLE), ["second", "first"]);
    }

    #[test]
    fn splits_instructions_per_kernel() {
        let kernels = kernel_instructions(SAMPLE);
        let ops = |k: &str| -> Vec<&str> { kernels[k].iter().map(|i| i.opcode.as_str()).collect() };
        assert_eq!(
            ops("first"),
            [
                "ld.param.b32",
                "cp.async.ca.shared.global",
                "mbarrier.try_wait.parity.shared.b64",
                "selp.u32",
                "bra",
                "ret"
            ]
        );
        assert_eq!(ops("second"), ["cp.async.wait_group", "ret"]);
        let bra = &kernels["first"][4];
        assert_eq!(bra.predicate.as_deref(), Some("%p1"));
        assert_eq!(bra.operands, "$L__BB0_1");
    }
}
