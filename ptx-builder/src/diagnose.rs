//! What the builder tells a user about their device code beyond "it built": an llc abort
//! turned into one line naming the function and what to call instead, the kernels that can
//! reach a panic (a check left in the code), and those with an explicit `trap`.

use std::collections::{BTreeMap, BTreeSet};

/// What to call instead of an LLVM libcall that rustc's NVPTX backend cannot lower (`f32::exp`
/// and friends become `fexp`, ... with no library behind them on the GPU).
fn instead_of(libcall: &str) -> &'static str {
    match libcall {
        "fexp" => "`gpu::math::exp` (fast) or `gpu::math::exp_accurate`",
        "fexp2" => "`gpu::math::exp2`",
        "flog2" => "`gpu::math::log2`",
        "flog" => "`gpu::math::log2(x) * core::f32::consts::LN_2`",
        "flog10" => "`gpu::math::log2(x) * core::f32::consts::LOG10_2`",
        "fpow" | "fpowi" => "`gpu::math::exp2(y * gpu::math::log2(x))` (x > 0)",
        "ftanh" => "`gpu::math::tanh` (fast) or `gpu::math::tanh_accurate`",
        "fsin" | "fcos" | "fsincos" | "ftan" => {
            "`sin.approx.f32` / `cos.approx.f32` in `asm!` (gpu::math has no trigonometry yet)"
        }
        _ => "a function of `gpu::math`, or the instruction in `asm!`",
    }
}

/// `name` demangled (Rust v0 or legacy), without the hash.
fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// One line for an llc failure that stderr explains: a libcall with no lowering (`no libcall
/// available for fexp` ... `In function: NAME`), or an instruction llc cannot select. `None`
/// when stderr is not one of those (the caller shows it whole).
pub fn llc_failure(stderr: &str) -> Option<String> {
    let function = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("In function: "))
        .map(|f| format!("`{}`", demangle(f.trim())))
        .unwrap_or_else(|| "a device function".to_string());
    if let Some(libcall) = stderr.lines().find_map(|l| {
        l.split("no libcall available for ")
            .nth(1)
            .map(|rest| rest.split_whitespace().next().unwrap_or(rest))
    }) {
        return Some(format!(
            "{function} calls `{libcall}` (what `f32::{}` and the like lower to), which has no \
             NVPTX lowering and no library on the GPU: use {} instead",
            libcall.trim_start_matches('f'),
            instead_of(libcall)
        ));
    }
    stderr.contains("LLVM ERROR: Cannot select").then(|| {
        format!(
            "llc cannot select an instruction in {function} (an operation the NVPTX backend \
             does not lower, such as a float math intrinsic): write it with `gpu::math` or \
             `asm!` instead"
        )
    })
}

/// A function of a PTX module: whether its body traps, and whom it calls.
#[derive(Default)]
struct PtxFunction {
    traps: bool,
    calls: BTreeSet<String>,
}

/// The name a `.func` / `.entry` header line defines or declares.
fn header_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    for prefix in [".visible ", ".weak ", ".extern "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest
        .strip_prefix(".func ")
        .or_else(|| rest.strip_prefix(".entry "))?
        .trim_start();
    // A return value comes first: `.func (.param .b32 func_retval0) name(`.
    let rest = match rest.strip_prefix('(') {
        Some(r) => r.split_once(')')?.1.trim_start(),
        None => rest,
    };
    identifier(rest)
}

/// The PTX identifier `text` starts with.
fn identifier(text: &str) -> Option<String> {
    let name: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The callee of a `call` statement: `call.uni NAME, (...)` or `call.uni (retval0), NAME, ...`.
fn callee(statement: &str) -> Option<String> {
    let rest = statement.trim_start().trim_start_matches('{').trim_start();
    let rest = rest.strip_prefix("call")?;
    let rest = rest.split_once(char::is_whitespace)?.1.trim_start();
    let rest = match rest.strip_prefix('(') {
        Some(r) => r
            .split_once(')')?
            .1
            .trim_start()
            .trim_start_matches(',')
            .trim_start(),
        None => rest,
    };
    identifier(rest)
}

/// Every function of `ptx` with a body, by name.
fn functions(ptx: &str) -> BTreeMap<String, PtxFunction> {
    let mut found = BTreeMap::new();
    let mut current: Option<(String, PtxFunction)> = None;
    let mut depth = 0usize;
    let mut pending: Option<String> = None;
    for line in ptx.lines() {
        let code = line.split("//").next().unwrap_or("").trim();
        if current.is_none() {
            if let Some(name) = header_name(code) {
                pending = Some(name);
            }
            if pending.is_some() && code.starts_with('{') {
                current = Some((pending.take().unwrap_or_default(), PtxFunction::default()));
                depth = 0;
            } else if code.ends_with(';') && !code.starts_with('.') {
                pending = None;
            } else {
                continue;
            }
        }
        let Some((_, function)) = current.as_mut() else {
            continue;
        };
        for statement in code.split(';') {
            let s = statement.trim().trim_start_matches('{').trim();
            // A guard predicate (`@%p1 trap`) comes before the opcode.
            let s = match s.strip_prefix('@') {
                Some(guarded) => guarded.split_once(char::is_whitespace).map_or("", |x| x.1),
                None => s,
            }
            .trim_start();
            let opcode = s.split_whitespace().next().unwrap_or("");
            if opcode == "trap" {
                function.traps = true;
            }
            if opcode.starts_with("call")
                && let Some(name) = callee(s)
            {
                function.calls.insert(name);
            }
        }
        depth += code.matches('{').count();
        depth = depth.saturating_sub(code.matches('}').count());
        if depth == 0 {
            let (name, function) = current.take().expect("inside a body");
            found.insert(name, function);
        }
    }
    found
}

/// One warning for each kernel of `kernels` that can reach a panic in `ptx`: a call into a
/// function that traps (`core::panicking::*`, or whatever calls it), which is what an index,
/// overflow or division check the optimizer could not prove away leaves behind. The launch
/// then fails with an illegal instruction. A `trap` in the kernel's own body (an inlined
/// `gpu::ptx::trap()`: the code's own check, such as the library's on a pipeline's use) is no
/// panic: see [`explicit_traps`].
pub fn panic_paths(ptx: &str, kernels: &[String]) -> Vec<String> {
    let functions = functions(ptx);
    let mut warnings = Vec::new();
    for kernel in kernels {
        // Depth-first from the kernel, remembering how each function was reached.
        let mut from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut stack = vec![kernel.as_str()];
        let mut trapping = None;
        while let Some(name) = stack.pop() {
            let Some(function) = functions.get(name) else {
                continue;
            };
            if function.traps && name != kernel {
                trapping = Some(name);
                break;
            }
            for callee in &function.calls {
                if callee != kernel && !from.contains_key(callee.as_str()) {
                    from.insert(callee, name);
                    stack.push(callee);
                }
            }
        }
        let Some(trapping) = trapping else { continue };
        // The function the kernel calls on the way says which check it was.
        let mut first = trapping;
        while let Some(&caller) = from.get(first) {
            if caller == kernel {
                break;
            }
            first = caller;
        }
        warnings.push(format!(
            "kernel `{kernel}` can panic (a trap at run time: the launch fails): it calls `{}`; \
             make the check provably pass (a divisor known nonzero, an index known in range, \
             `get_unchecked` under a `# Safety` argument) so the path folds away",
            demangle(first)
        ));
    }
    warnings
}

/// The kernels of `kernels` with a `trap` in their own body: an explicit `gpu::ptx::trap()`
/// (or a panic inlined whole) the optimizer kept.
pub fn explicit_traps(ptx: &str, kernels: &[String]) -> Vec<String> {
    let functions = functions(ptx);
    kernels
        .iter()
        .filter(|k| functions.get(k.as_str()).is_some_and(|f| f.traps))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// llc's own words for `core::intrinsics::expf32` in a kernel (LLVM 22).
    const LLC_FEXP: &str = "error: no libcall available for fexp\nLLVM ERROR: Cannot select: \
        0x55d7: ch = NVPTXISD::CALL 0x55d7, Constant:i32<0>\nIn function: expo\nPLEASE submit \
        a bug report\nStack dump:\n0.\tProgram arguments: llc -O3\n #0 0x00007f27 \
        llvm::sys::PrintStackTrace\n";

    #[test]
    fn an_llc_abort_becomes_one_line_naming_the_function_and_the_fix() {
        let line = llc_failure(LLC_FEXP).unwrap();
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with("`expo` calls `fexp`"), "{line}");
        assert!(line.contains("gpu::math::exp"), "{line}");
        let other = llc_failure("LLVM ERROR: Cannot select: t3: f32 = fsin t2\nIn function: k\n");
        assert!(other.unwrap().contains("`k`"));
        assert_eq!(llc_failure("llc: error: bad file"), None);
    }

    /// The PTX llc wrote for `n / d` in a kernel: the division's zero check calls a panic
    /// function that traps.
    const DIVIDE: &str = "\
.func _RNvNtCsjyqfColeDL_4core9panicking9panic_fmt()
{
\ttrap;
}
.func _RNvNtNtCsjyqfColeDL_4core9panicking11panic_const23panic_const_div_by_zero()
{
\t{ // callseq 0, 0
\tcall.uni _RNvNtCsjyqfColeDL_4core9panicking9panic_fmt, ();
\t} // callseq 0
\tret;
}
.visible .entry divide(
\t.param .u32 divide_param_0
)
{
\tsetp.eq.s32 %p1, %r1, 0;
\t@%p1 bra $L__BB2_2;
\tret;
$L__BB2_2:
\t{ // callseq 1, 0
\tcall.uni _RNvNtNtCsjyqfColeDL_4core9panicking11panic_const23panic_const_div_by_zero, ();
\t} // callseq 1
\tret;
}
.visible .entry clean(
)
{
\t{ call.uni (retval0), helper, (param0); }
\tret;
}
.func (.param .b32 func_retval0) helper(
\t.param .b32 p
)
{
\tret;
}
";

    #[test]
    fn a_reachable_panic_is_named_with_its_kernel() {
        let kernels = ["divide".to_string(), "clean".to_string()];
        let warnings = panic_paths(DIVIDE, &kernels);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let w = &warnings[0];
        assert!(w.starts_with("kernel `divide` can panic"), "{w}");
        assert!(
            w.contains("calls `core::panicking::panic_const::panic_const_div_by_zero`"),
            "{w}"
        );
        assert!(explicit_traps(DIVIDE, &kernels).is_empty());
        // A trap in the kernel's own body is an explicit one, not a panic.
        let own = ".visible .entry k()\n{\n\t@%p1 trap;\n\tret;\n}\n";
        let k = ["k".to_string()];
        assert!(panic_paths(own, &k).is_empty());
        assert_eq!(explicit_traps(own, &k), k);
    }

    #[test]
    fn headers_and_calls_are_read() {
        assert_eq!(header_name(".visible .entry k(").as_deref(), Some("k"));
        assert_eq!(
            header_name(".func (.param .b32 func_retval0) f(").as_deref(),
            Some("f")
        );
        assert_eq!(callee("call.uni f, ();").as_deref(), Some("f"));
        assert_eq!(
            callee("call.uni (retval0), g, (param0);").as_deref(),
            Some("g")
        );
    }
}
