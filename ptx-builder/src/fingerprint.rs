//! PTX fingerprints: a 64-bit hash of one kernel's PTX that changes when the code ptxas gets
//! for that kernel changes, and not when a refactor only renumbers, renames or moves it.
//!
//! # What a kernel's fingerprint covers
//!
//! 1. The module header (`.version`, `.target`, `.address_size`): a new PTX ISA or target
//!    changes every kernel.
//! 2. The declarations of the module-scope variables (`.shared`, `.extern .shared`,
//!    `.global`, `.const` ...) that its code, or a function it calls, names: alignment, type
//!    and size count, other variables do not.
//! 3. Its `.entry` definition: parameter list, performance directives (`.maxntid` ...) and
//!    body. A forward declaration (`.entry NAME (...);`) is not a definition and is skipped.
//! 4. The definition of every `.func` it calls, transitively (or its declaration, where the
//!    module has no definition).
//!
//! # What is normalised
//!
//! - Comments (`//`, `/* */`) and debug directives (`.loc`, `.file`, `.section` blocks) are
//!   dropped.
//! - The text is split into tokens (words, string literals, single punctuation characters)
//!   joined by single spaces: whitespace, blank lines and how statements are spread over lines
//!   do not count (`a,b` equals `a, b`; `ab` does not equal `a b`).
//! - Virtual registers of every class a function declares with `.reg .T %c<N>;` (`%r`, `%rd`,
//!   `%p`, `%rs`, `%f`, `%fd`, `%h` ...) are renumbered per function and class in order of
//!   first appearance (`%r12` -> `%r0`), inside inline-asm `{ }` scopes too. The renaming is
//!   one-to-one, so `add %r1, %r2, %r2` and `add %r1, %r2, %r3` still differ. Special
//!   registers (`%tid.x`, `%ctaid.x`, `%laneid`, `%clock64`, `%envreg3` ...: no `.reg`
//!   declaration of their class) and named registers (`%SP`, `%SPL`, an asm scope's `p`) are
//!   kept as written.
//! - The counts of those declarations are dropped (`.reg .b32 %r<3083>;` -> `.reg .b32 %r<>;`):
//!   LLVM counts every virtual register the function ever had, used or not, so two builds
//!   whose code is equal after renumbering can declare different counts, and ptxas allocates
//!   its own registers whatever the count says.
//! - Labels (`$L__BB12_3`, `$L__tmp0`) and local-memory depots (`__local_depot12`), numbered by
//!   LLVM with the function's position in the module, are renumbered per function in order of
//!   first appearance.
//! - Module-scope names are replaced in order of first appearance: the kernel itself by
//!   `@kernel`, the functions it calls by `@func0`, `@func1` ..., the variables it names by
//!   `@var0`, `@var1` ...; a function's parameter names `NAME_param_3` become `param_3`. So a
//!   kernel renamed, or a function whose mangled name changed, keeps its fingerprint.
//!
//! Nothing else is normalised: an opcode, modifier, immediate, operand, operand order,
//! alignment, array size, `.maxntid` or `.pragma` that differs changes the fingerprint.
//!
//! The hash is 64-bit FNV-1a over the UTF-8 bytes of the normal form, which
//! [`ModuleFingerprints::normal_form`] returns (one statement a line) for comparing two builds
//! by hand.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

/// A kernel's fingerprint: 64-bit FNV-1a of its normal form, shown as 16 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub u64);

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl FromStr for Fingerprint {
    type Err = String;

    /// Exactly 16 hex digits, as [`Fingerprint`]'s `Display` writes them.
    fn from_str(text: &str) -> Result<Fingerprint, String> {
        if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`{text}` is not a fingerprint (16 hex digits)"));
        }
        u64::from_str_radix(text, 16)
            .map(Fingerprint)
            .map_err(|e| format!("`{text}`: {e}"))
    }
}

/// 64-bit FNV-1a ([`crate::digest`] holds the crate's hashes).
pub use crate::digest::fnv1a64;

/// The fingerprint of every kernel (`.entry` definition) in a PTX module, by name.
pub fn kernel_fingerprints(ptx: &str) -> BTreeMap<String, Fingerprint> {
    let module = ModuleFingerprints::new(ptx);
    module
        .kernels()
        .map(|name| {
            (
                name.to_string(),
                module.fingerprint(name).expect("a kernel"),
            )
        })
        .collect()
}

/// A PTX module parsed once, to fingerprint any of its kernels.
pub struct ModuleFingerprints<'a> {
    header: Vec<Vec<Tok<'a>>>,
    items: Vec<Item<'a>>,
    /// Item index of each module-scope name: the definition where there is one.
    symbols: HashMap<&'a str, usize>,
}

impl<'a> ModuleFingerprints<'a> {
    pub fn new(ptx: &'a str) -> ModuleFingerprints<'a> {
        let (header, items) = parse(ptx);
        let mut symbols: HashMap<&'a str, usize> = HashMap::new();
        for (index, item) in items.iter().enumerate() {
            if item.kind == Kind::Other {
                continue;
            }
            match symbols.get(item.name) {
                Some(&known) if items[known].has_body || !item.has_body => {}
                _ => {
                    symbols.insert(item.name, index);
                }
            }
        }
        ModuleFingerprints {
            header,
            items,
            symbols,
        }
    }

    /// The kernels defined in the module, in module order.
    pub fn kernels(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.items
            .iter()
            .filter(|i| i.kind == Kind::Entry && i.has_body)
            .map(|i| i.name)
    }

    /// The fingerprint of kernel `name`, if the module defines it.
    pub fn fingerprint(&self, name: &str) -> Option<Fingerprint> {
        self.normal_form(name)
            .map(|text| Fingerprint(fnv1a64(text.as_bytes())))
    }

    /// What [`ModuleFingerprints::fingerprint`] hashes, one statement a line.
    pub fn normal_form(&self, name: &str) -> Option<String> {
        let &index = self.symbols.get(name)?;
        let entry = &self.items[index];
        if entry.kind != Kind::Entry || !entry.has_body {
            return None;
        }
        let mut walk = Walk {
            module: self,
            placeholders: HashMap::from([(entry.name, "@kernel".to_string())]),
            funcs: vec![index],
            vars: Vec::new(),
        };
        // Functions in order of first call, each rendered once (calls are found as it goes).
        let mut functions = String::new();
        let mut next = 0;
        while next < walk.funcs.len() {
            let item = &self.items[walk.funcs[next]];
            functions.push_str(&walk.render_function(item));
            next += 1;
        }
        let mut vars = String::new();
        let mut next = 0;
        while next < walk.vars.len() {
            let item = &self.items[walk.vars[next]];
            vars.push_str(&walk.render_declaration(item));
            next += 1;
        }
        let mut text = String::new();
        for line in &self.header {
            push_tokens(&mut text, line.iter().copied());
            text.push('\n');
        }
        text.push_str(&vars);
        text.push_str(&functions);
        Some(text)
    }
}

/// One token of PTX text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok<'a> {
    /// A run of letters, digits, `_`, `$`, `%`, `.` and `::` (opcodes, names, numbers).
    Word(&'a str),
    /// A string literal with its quotes.
    Str(&'a str),
    Punct(char),
    Newline,
}

impl Tok<'_> {
    fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Tok::Word(w) | Tok::Str(w) => std::borrow::Cow::Borrowed(w),
            Tok::Punct(c) => std::borrow::Cow::Owned(c.to_string()),
            Tok::Newline => std::borrow::Cow::Borrowed("\n"),
        }
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'%' | b'.')
}

/// Splits PTX into tokens; comments become whitespace (a line break where they held one).
fn lex(text: &str) -> Vec<Tok<'_>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                out.push(Tok::Newline);
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                if text[i..end].contains('\n') {
                    out.push(Tok::Newline);
                }
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(b.len());
                out.push(Tok::Str(&text[i..end]));
                i = end;
            }
            c if is_word_byte(c) => {
                let mut j = i;
                loop {
                    if j < b.len() && is_word_byte(b[j]) {
                        j += 1;
                    } else if j + 1 < b.len() && b[j] == b':' && b[j + 1] == b':' {
                        j += 2;
                    } else {
                        break;
                    }
                }
                out.push(Tok::Word(&text[i..j]));
                i = j;
            }
            _ => {
                let c = text[i..].chars().next().expect("a character");
                out.push(Tok::Punct(c));
                i += c.len_utf8();
            }
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Entry,
    Func,
    Var,
    Other,
}

/// One module-scope statement: a function (declaration or definition), a variable, or
/// something else (`.section` blocks).
struct Item<'a> {
    kind: Kind,
    name: &'a str,
    toks: Vec<Tok<'a>>,
    has_body: bool,
}

/// Directives that end at the line's end, not at a `;`.
const HEADER_DIRECTIVES: [&str; 3] = [".version", ".target", ".address_size"];
const DEBUG_LINE_DIRECTIVES: [&str; 2] = [".loc", ".file"];

/// The header directives, and the module-scope statements in order.
fn parse(ptx: &str) -> (Vec<Vec<Tok<'_>>>, Vec<Item<'_>>) {
    let toks = lex(ptx);
    let mut header = Vec::new();
    let mut flat = Vec::with_capacity(toks.len());
    let mut line_start = true;
    let mut i = 0;
    while i < toks.len() {
        match toks[i] {
            Tok::Newline => {
                line_start = true;
                i += 1;
            }
            Tok::Word(w)
                if line_start
                    && (HEADER_DIRECTIVES.contains(&w) || DEBUG_LINE_DIRECTIVES.contains(&w)) =>
            {
                let end = toks[i..]
                    .iter()
                    .position(|t| *t == Tok::Newline)
                    .map_or(toks.len(), |e| i + e);
                if HEADER_DIRECTIVES.contains(&w) {
                    header.push(toks[i..end].to_vec());
                }
                i = end;
            }
            t => {
                flat.push(t);
                line_start = false;
                i += 1;
            }
        }
    }
    let mut items = Vec::new();
    let mut current = Vec::new();
    let mut depth = 0usize;
    let mut k = 0;
    while k < flat.len() {
        let t = flat[k];
        k += 1;
        let ends = match t {
            Tok::Punct('{') => {
                depth += 1;
                false
            }
            Tok::Punct('}') => {
                depth = depth.saturating_sub(1);
                depth == 0
            }
            Tok::Punct(';') => depth == 0,
            _ => false,
        };
        current.push(t);
        if ends {
            // A variable's initialiser `= { ... };` ends at its `;`.
            if t == Tok::Punct('}') && flat.get(k) == Some(&Tok::Punct(';')) {
                current.push(Tok::Punct(';'));
                k += 1;
            }
            items.push(classify(std::mem::take(&mut current)));
        }
    }
    if !current.is_empty() {
        items.push(classify(current));
    }
    (header, items)
}

fn classify(toks: Vec<Tok<'_>>) -> Item<'_> {
    let head_len = toks
        .iter()
        .position(|t| *t == Tok::Punct('{'))
        .unwrap_or(toks.len());
    let has_body = head_len < toks.len();
    let head = &toks[..head_len];
    let word_at = |i: usize| match head.get(i) {
        Some(Tok::Word(w)) => Some(*w),
        _ => None,
    };
    let other = |toks| Item {
        kind: Kind::Other,
        name: "",
        toks,
        has_body,
    };
    if head.first() == Some(&Tok::Word(".section")) {
        return other(toks);
    }
    if let Some(at) = head.iter().position(|t| *t == Tok::Word(".entry")) {
        return match word_at(at + 1) {
            Some(name) => Item {
                kind: Kind::Entry,
                name,
                toks,
                has_body,
            },
            None => other(toks),
        };
    }
    if let Some(at) = head.iter().position(|t| *t == Tok::Word(".func")) {
        // `.func (.param .b32 retval) NAME (...)`: the name follows the return parameters.
        let mut name_at = at + 1;
        if head.get(name_at) == Some(&Tok::Punct('(')) {
            let mut depth = 0usize;
            while let Some(t) = head.get(name_at) {
                name_at += 1;
                match t {
                    Tok::Punct('(') => depth += 1,
                    Tok::Punct(')') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        return match word_at(name_at) {
            Some(name) => Item {
                kind: Kind::Func,
                name,
                toks,
                has_body,
            },
            None => other(toks),
        };
    }
    // A variable: its name is the last word before its size, initialiser or end.
    let end = head
        .iter()
        .position(|t| matches!(t, Tok::Punct('[' | '=' | ';' | '<')))
        .unwrap_or(head.len());
    match head[..end].iter().rev().find_map(|t| match t {
        Tok::Word(w) if !w.starts_with('.') => Some(*w),
        _ => None,
    }) {
        Some(name) => Item {
            kind: Kind::Var,
            name,
            toks,
            has_body: false,
        },
        None => other(toks),
    }
}

/// Renders one kernel's functions and variables, naming module-scope symbols as it meets them.
struct Walk<'m, 'a> {
    module: &'m ModuleFingerprints<'a>,
    placeholders: HashMap<&'a str, String>,
    /// Item indices of the functions to render, in order of first appearance (the kernel first).
    funcs: Vec<usize>,
    /// Item indices of the variables named, in order of first appearance.
    vars: Vec<usize>,
}

impl<'a> Walk<'_, 'a> {
    /// The placeholder of a module-scope name, assigned at its first appearance; `None` for
    /// words that name nothing at module scope.
    fn symbol(&mut self, word: &'a str) -> Option<String> {
        if let Some(p) = self.placeholders.get(word) {
            return Some(p.clone());
        }
        let &index = self.module.symbols.get(word)?;
        let placeholder = match self.module.items[index].kind {
            Kind::Func | Kind::Entry => {
                self.funcs.push(index);
                format!("@func{}", self.funcs.len() - 2)
            }
            Kind::Var => {
                self.vars.push(index);
                format!("@var{}", self.vars.len() - 1)
            }
            Kind::Other => return None,
        };
        self.placeholders.insert(word, placeholder.clone());
        Some(placeholder)
    }

    fn render_declaration(&mut self, item: &Item<'a>) -> String {
        let mut words = Vec::with_capacity(item.toks.len());
        for t in &item.toks {
            match *t {
                Tok::Word(w) => words.push(self.symbol(w).unwrap_or_else(|| w.to_string())),
                t => words.push(t.text().into_owned()),
            }
        }
        let mut text = String::new();
        push_tokens(&mut text, words.iter().map(|w| Tok::Word(w)));
        text
    }

    fn render_function(&mut self, item: &Item<'a>) -> String {
        let toks = &item.toks;
        // The register classes this function declares: `.reg .T %c<N>;`.
        let mut classes: Vec<&str> = Vec::new();
        for w in toks.windows(2) {
            if let [Tok::Word(class), Tok::Punct('<')] = w
                && let Some(name) = class.strip_prefix('%')
                && !classes.contains(&name)
            {
                classes.push(name);
            }
        }
        let param_prefix = format!("{}_param_", item.name);
        let mut registers: HashMap<&str, String> = HashMap::new();
        let mut per_class: HashMap<&str, usize> = HashMap::new();
        let mut labels: HashMap<&str, String> = HashMap::new();
        let mut depots: HashMap<&str, String> = HashMap::new();
        let mut words: Vec<String> = Vec::with_capacity(toks.len());
        let mut in_reg = false;
        for (i, t) in toks.iter().enumerate() {
            let w = match *t {
                Tok::Word(w) => w,
                Tok::Punct(';') => {
                    in_reg = false;
                    words.push(";".into());
                    continue;
                }
                t => {
                    words.push(t.text().into_owned());
                    continue;
                }
            };
            if w == ".reg" {
                in_reg = true;
            }
            // The count in `%r<3083>`.
            if in_reg
                && i >= 2
                && matches!(toks[i - 2], Tok::Word(c) if c.starts_with('%'))
                && toks[i - 1] == Tok::Punct('<')
                && toks.get(i + 1) == Some(&Tok::Punct('>'))
                && w.bytes().all(|b| b.is_ascii_digit())
            {
                continue;
            }
            if let Some((class, rest)) = virtual_register(w, &classes) {
                let numbered = &w[..w.len() - rest.len()];
                let renamed = registers.entry(numbered).or_insert_with(|| {
                    let n = per_class.entry(class).or_insert(0);
                    *n += 1;
                    format!("%{class}{}", *n - 1)
                });
                words.push(format!("{renamed}{rest}"));
            } else if w.starts_with("$L__") {
                let next = labels.len();
                words.push(
                    labels
                        .entry(w)
                        .or_insert_with(|| format!("$L{next}"))
                        .clone(),
                );
            } else if w.starts_with("__local_depot") {
                let next = depots.len();
                let renamed = depots
                    .entry(w)
                    .or_insert_with(|| format!("__local_depot{next}"));
                words.push(renamed.clone());
            } else if let Some(n) = w
                .strip_prefix(&param_prefix)
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                words.push(format!("param_{n}"));
            } else if let Some(p) = self.symbol(w) {
                words.push(p);
            } else {
                words.push(w.to_string());
            }
        }
        let mut text = String::new();
        push_tokens(&mut text, words.iter().map(|w| Tok::Word(w)));
        text
    }
}

/// `%r12` (or `%r12.suffix`) of a declared class: the class and what follows the number.
fn virtual_register<'w>(word: &'w str, classes: &[&str]) -> Option<(&'w str, &'w str)> {
    let rest = word.strip_prefix('%')?;
    let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
    let digits = rest[letters..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    let (class, tail) = (&rest[..letters], &rest[letters + digits..]);
    let whole = tail.is_empty() || tail.starts_with('.');
    (digits > 0 && whole && classes.contains(&class)).then_some((class, tail))
}

/// Appends tokens joined by single spaces, a line break after each `;`, `{`, `}` and label.
fn push_tokens<'t>(text: &mut String, toks: impl Iterator<Item = Tok<'t>>) {
    let mut line_start = text.is_empty() || text.ends_with('\n');
    for t in toks {
        let word = t.text();
        if !line_start {
            text.push(' ');
        }
        text.push_str(&word);
        line_start = matches!(&*word, ";" | "{" | "}" | ":");
        if line_start {
            text.push('\n');
        }
    }
    if !line_start {
        text.push('\n');
    }
}
