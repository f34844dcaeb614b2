//! Every figure in the docs traces to a raw output committed under `docs/runs/`.
//!
//! Read by this test: `README.md`, `docs/results.md`, `docs/design.md`. It fails, naming file,
//! line and figure, when
//!
//! - a path under `runs/` (`docs/runs/...` in the README) names a file or folder that is not
//!   committed;
//! - a bullet of the README's headline list (the list after the line that begins
//!   `Measured on`) names no raw output under `docs/runs/`;
//! - a section (the text under one heading, down to the next heading of any level; fenced
//!   code left out) states a measured figure and names no raw output. A measured figure is a
//!   number with a unit of time, rate, clock or cycles, a percentage, or a ratio written
//!   `1.23x`: [`FIGURE`] is the pattern. Sizes and tile shapes (`128 x 128`, `227 KiB`) are
//!   not figures.
//!
//! So a number may stand in the docs only where its section links the run it came from;
//! the section says which (one run, or the runs a range spans).

use regex::Regex;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// A measured figure: a number with its unit, a percentage or a speed-up ratio.
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b\d+(?:\.\d+)?(?:%|x\b|\s?(?:TFLOP/s|GFLOP/s|FLOP/s|GB/s|TB/s|GHz|MHz|ms\b|us\b|µs|ns\b|cycles\b|W\b))",
    )
    .unwrap()
});

/// A path to a raw output, relative to `docs/` (`runs/...`), as a link or in text.
static RUN_PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bruns/[A-Za-z0-9_.+/-]*[A-Za-z0-9_+-]").unwrap());

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A markdown file's lines with fenced code blanked (line numbers kept).
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return String::new();
            }
            if fenced {
                String::new()
            } else {
                line.to_string()
            }
        })
        .collect()
}

/// The raw-output paths `line` names, each as a path from the repository root, with
/// whether it exists.
fn run_paths(line: &str, docs: &Path) -> Vec<(String, bool)> {
    RUN_PATH
        .find_iter(line)
        .map(|m| {
            let path = docs.join(m.as_str());
            (m.as_str().to_string(), path.exists())
        })
        .collect()
}

/// What one file breaks of the rules in the module doc.
fn violations(name: &str, text: &str) -> Vec<String> {
    let docs = root().join("docs");
    let lines = prose(text);
    let mut out = Vec::new();
    // Every path resolves.
    for (number, line) in lines.iter().enumerate() {
        for (path, exists) in run_paths(line, &docs) {
            if !exists {
                out.push(format!(
                    "{name}:{}: `{path}` is not committed under docs/",
                    number + 1
                ));
            }
        }
    }
    // Every section with a figure names a raw output that exists.
    let mut start = 0;
    let heading = |line: &str| line.starts_with('#');
    while start < lines.len() {
        let end = (start + 1..lines.len())
            .find(|&i| heading(&lines[i]))
            .unwrap_or(lines.len());
        let section = &lines[start..end];
        let traced = section
            .iter()
            .any(|l| run_paths(l, &docs).iter().any(|(_, exists)| *exists));
        if !traced
            && let Some((offset, figure)) = section
                .iter()
                .enumerate()
                .find_map(|(i, l)| FIGURE.find(l).map(|m| (i, m.as_str().to_string())))
        {
            out.push(format!(
                "{name}:{}: `{figure}` in the section `{}` names no raw output under docs/runs",
                start + offset + 1,
                lines[start].trim_start_matches('#').trim()
            ));
        }
        start = end;
    }
    out
}

/// The README's headline bullets: each item of the list after `Measured on ...`, with the
/// line it starts on.
fn headline_items(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(first) = lines.iter().position(|l| l.starts_with("Measured on")) else {
        return Vec::new();
    };
    let mut items: Vec<(usize, String)> = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(first + 1) {
        if line.starts_with("- ") {
            items.push((i + 1, line.to_string()));
        } else if line.starts_with("  ") && !items.is_empty() {
            let last = items.len() - 1;
            items[last].1.push('\n');
            items[last].1.push_str(line);
        } else if !line.trim().is_empty() || !items.is_empty() {
            break;
        }
    }
    items
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

#[test]
fn every_figure_names_its_raw_output() {
    let mut all = Vec::new();
    for path in ["README.md", "docs/results.md", "docs/design.md"] {
        // The README names raw outputs as `docs/runs/...`: the same paths from the root.
        let text = read(path);
        all.extend(violations(path, &text));
    }
    assert!(
        all.is_empty(),
        "{} figure(s) or path(s) do not trace:\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn every_readme_headline_names_a_stored_run() {
    let text = read("README.md");
    let items = headline_items(&text);
    assert!(
        items.len() >= 3,
        "README.md: no headline list found after a line beginning `Measured on`"
    );
    let docs = root().join("docs");
    let missing: Vec<String> = items
        .iter()
        .filter(|(_, item)| {
            !item.lines().any(|l| {
                l.contains("docs/runs/") && run_paths(l, &docs).iter().any(|(_, exists)| *exists)
            })
        })
        .map(|(line, item)| {
            format!(
                "README.md:{line}: {}",
                item.lines().next().unwrap_or_default()
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "headlines without a stored run (docs/runs/...):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_rules_catch_what_they_should() {
    // A figure without a run, a run that is not there, and a traced section.
    let text = "# A\n\n81.5% of cuBLAS\n\n## B\n\n3.2x at 4096 ([run](runs/nope.json))\n\n\
                ## C\n\n128 x 128 tiles, 227 KiB\n\n## D\n\n```\n9 ms\n```\n";
    let found = violations("t.md", text);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].contains("t.md:7: `runs/nope.json`"), "{found:#?}");
    assert!(found[1].contains("t.md:3: `81.5%`"), "{found:#?}");
    assert!(found[2].contains("`3.2x`"), "{found:#?}");
    // A section that names a committed run passes; sizes, tiles and code are not figures.
    let existing = std::fs::read_dir(root().join("docs/runs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().is_file())
        .unwrap()
        .file_name();
    let traced = format!(
        "# A\n\n97.8% of the copy ([run](runs/{}))\n",
        existing.to_string_lossy()
    );
    assert!(violations("t.md", &traced).is_empty());
    // Headline items: continuation lines belong to their bullet; the list ends at a paragraph.
    let readme = "intro\n\nMeasured on an H200:\n\n- one\n  more\n- two\n\nAfter.\n- not\n";
    let items = headline_items(readme);
    assert_eq!(
        items,
        vec![(5, "- one\n  more".to_string()), (7, "- two".to_string())]
    );
}
