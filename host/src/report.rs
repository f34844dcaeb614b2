//! A run's results: the table printed at the end, `--json`, and `--plot` (SVG). Rows carry
//! their experiment (`&'static dyn Experiment`), so nothing is looked up again by name. The
//! plot is drawn from the report as `--json` writes it ([`SavedReport`]), so `host plot`
//! redraws a saved run without a GPU.

use crate::registry::{ProblemResult, RunOutcome};
use anyhow::{Context, Result, ensure};
use gpu_runtime::GpuInfo;
use harness::experiment::{Experiment, Inputs, Measurement, Outcome, Role, Timing, same};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// Everything a run measured, as written by `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub device: GpuInfo,
    /// UTC, RFC 3339.
    pub date: String,
    /// The command line.
    pub command: String,
    pub inputs: Inputs,
    pub timing: Timing,
    /// Whether every check of every row passed.
    pub passed: bool,
    /// Whether Ctrl-C stopped the run before the end (the rows are what finished).
    pub interrupted: bool,
    pub problems: Vec<ProblemReport>,
}

/// One workload at one size.
#[derive(Clone, Debug, Serialize)]
pub struct ProblemReport {
    pub workload: &'static str,
    pub size: String,
    /// The experiment the `vs_baseline` column compares with, if it ran: the fastest of the
    /// workload's baselines on this problem.
    pub baseline: Option<&'static str>,
    /// Unit of the `rate` column (`steps/us`, `TFLOP/s`, `GB/s`).
    pub rate_unit: Option<&'static str>,
    /// Whether the table shows `vs_baseline` as a percentage: when the baseline is a vendor
    /// library (cuBLAS) rather than a kernel of ours, "% of cuBLAS" is what a reader wants.
    pub baseline_as_percent: bool,
    pub rows: Vec<Row>,
}

/// One experiment's line.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub name: &'static str,
    pub role: Role,
    pub style: &'static str,
    pub stages: Option<u32>,
    pub threads: Option<u32>,
    pub shared_bytes: Option<u32>,
    pub summary: &'static str,
    /// Why it did not run, if it did not.
    pub unavailable: Option<String>,
    /// It ran and every check passed.
    pub passed: bool,
    /// It ran and a check failed.
    pub failed: bool,
    /// A library's result (cuBLAS), not a kernel of ours: a reference that fails our check
    /// is reported under the table and does not fail the run.
    pub external_reference: bool,
    /// One line on the checks ([`Measurement::check_summary`]).
    pub check_summary: String,
    /// What the problem measured besides the time (cycles a kernel counted, say).
    pub note: Option<String>,
    pub check: Option<harness::check::CheckReport>,
    pub check_after_timing: Option<harness::check::CheckReport>,
    /// Each timed launch, in milliseconds.
    pub times_ms: Vec<f64>,
    pub median_ms: Option<f64>,
    pub min_ms: Option<f64>,
    /// Work per millisecond of the median launch, in `rate_unit`.
    pub rate: Option<f64>,
    /// Baseline median time over this one (above 1: faster than the baseline).
    pub vs_baseline: Option<f64>,
    pub counterpart: Option<&'static str>,
    /// Counterpart's median time over this one (below 1: slower than raw PTX).
    pub vs_counterpart: Option<f64>,
}

impl ProblemReport {
    /// One line for each library reference whose result is outside our tolerance: its row
    /// stays FAILED in the table, and this says by how much and that it fails nothing.
    pub fn references_outside_tolerance(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| r.failed && r.external_reference)
            .map(|r| {
                let report = r
                    .check_after_timing
                    .as_ref()
                    .filter(|c| !c.passed)
                    .or(r.check.as_ref());
                let by = report.map_or(String::new(), |c| {
                    format!(
                        ": {} elements outside, {} NaN/inf, {} unwritten; largest error {:.2e}                          of max|ref| (norm-wise {:.1e})",
                        c.wrong, c.non_finite, c.unwritten, c.max_scaled_err, c.norm_rel_err
                    )
                });
                format!(
                    "note: the reference `{}` is outside our tolerance here{by}; our kernels' \
                     checks decide the exit status",
                    r.name
                )
            })
            .collect()
    }

    /// The rows of one problem, with comparisons from its own measurements.
    pub fn new(problem: &ProblemResult) -> ProblemReport {
        let all = &problem.measurements;
        let time_of = |e: &dyn Experiment| {
            all.iter()
                .find(|m| same(m.experiment, e))
                .and_then(Measurement::median_ms)
        };
        // The fastest baseline that ran (a workload may have several: cuBLAS's two interfaces).
        let baseline = all
            .iter()
            .filter(|m| m.experiment.role() == Role::Baseline && m.median_ms().is_some())
            .min_by(|a, b| {
                let (a, b) = (
                    a.median_ms().unwrap_or(f64::MAX),
                    b.median_ms().unwrap_or(f64::MAX),
                );
                a.total_cmp(&b)
            });
        let baseline_ms = baseline.and_then(Measurement::median_ms);
        let rows = all
            .iter()
            .map(|m| {
                let e = m.experiment;
                let median_ms = m.median_ms();
                let counterpart = e.counterpart();
                let (check, check_after_timing, times_ms, unavailable) = match &m.outcome {
                    Outcome::Ran(ran) => (
                        Some(ran.check.clone()),
                        ran.check_after_timing.clone(),
                        ran.times_ms.clone(),
                        None,
                    ),
                    Outcome::Unavailable(reason) => {
                        (None, None, Vec::new(), Some(reason.to_string()))
                    }
                };
                Row {
                    name: e.name(),
                    role: e.role(),
                    style: e.style(),
                    stages: e.stages(),
                    threads: e.threads(),
                    shared_bytes: e.shared_bytes(),
                    summary: e.summary(),
                    unavailable,
                    passed: m.passed(),
                    failed: m.failed(),
                    external_reference: is_external_reference(e),
                    check_summary: m.check_summary(),
                    note: match &m.outcome {
                        Outcome::Ran(ran) => ran.note.clone(),
                        Outcome::Unavailable(_) => None,
                    },
                    check,
                    check_after_timing,
                    times_ms,
                    median_ms,
                    min_ms: m.min_ms(),
                    rate: median_ms
                        .and_then(|ms| problem.work.rate(ms))
                        .map(|(r, _)| r),
                    vs_baseline: ratio(baseline_ms, median_ms),
                    counterpart: counterpart.map(|c| c.name()),
                    vs_counterpart: ratio(counterpart.and_then(time_of), median_ms),
                }
            })
            .collect();
        ProblemReport {
            workload: problem.workload,
            size: problem.size.clone(),
            baseline_as_percent: baseline.is_some_and(|m| m.experiment.threads().is_none()),
            baseline: baseline.map(|m| m.experiment.name()),
            rate_unit: problem.work.rate(1.0).map(|(_, unit)| unit),
            rows,
        }
    }

    /// The table of this problem.
    fn table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\n{} at {}{}",
            self.workload,
            self.size,
            self.baseline
                .map_or(String::new(), |b| format!(" (vs baseline: against {b})"))
        );
        let _ = writeln!(
            out,
            "{:<28} {:>6} {:>10} {:>10} {:>9} {:>11} {:>9}  check",
            "experiment",
            "stages",
            "median ms",
            "min ms",
            self.rate_unit.unwrap_or("-"),
            "vs baseline",
            "vs raw"
        );
        let fixed =
            |x: Option<f64>, digits: usize| x.map_or("-".to_string(), |x| format!("{x:.digits$}"));
        let times = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}x"));
        let versus = |x: Option<f64>| match x {
            Some(x) if self.baseline_as_percent => format!("{:.1}%", 100.0 * x),
            x => times(x),
        };
        for row in &self.rows {
            let _ = writeln!(
                out,
                "{:<28} {:>6} {:>10} {:>10} {:>9} {:>11} {:>9}  {}",
                row.name,
                row.stages.map_or("-".to_string(), |s| s.to_string()),
                fixed(row.median_ms, 3),
                fixed(row.min_ms, 3),
                fixed(row.rate, 1),
                versus(row.vs_baseline),
                times(row.vs_counterpart),
                match &row.note {
                    Some(note) => format!("{}; {note}", row.check_summary),
                    None => row.check_summary.clone(),
                }
            );
        }
        for line in self.references_outside_tolerance() {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// A baseline that is a library call rather than a kernel of ours (no threads of ours).
fn is_external_reference(e: &dyn Experiment) -> bool {
    e.role() == Role::Baseline && e.threads().is_none()
}

/// `reference / x`, when both are known.
fn ratio(reference: Option<f64>, x: Option<f64>) -> Option<f64> {
    Some(reference? / x?)
}

impl RunReport {
    /// Builds the report of what a run finished.
    pub fn new(
        device: GpuInfo,
        command: String,
        inputs: Inputs,
        timing: Timing,
        outcome: &RunOutcome,
    ) -> RunReport {
        let problems: Vec<ProblemReport> = outcome.results.iter().map(ProblemReport::new).collect();
        RunReport {
            device,
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command,
            inputs,
            timing,
            passed: problems
                .iter()
                .all(|p| p.rows.iter().all(|r| !r.failed || r.external_reference)),
            interrupted: outcome.interrupted,
            problems,
        }
    }

    /// `name (workload, size)` of every row of ours that failed a check: what decides the
    /// run's exit status. A library reference outside our tolerance is not among them
    /// ([`ProblemReport::references_outside_tolerance`]).
    pub fn failed(&self) -> Vec<String> {
        self.problems
            .iter()
            .flat_map(|p| {
                p.rows
                    .iter()
                    .filter(|r| r.failed && !r.external_reference)
                    .map(move |r| format!("{} ({}, {})", r.name, p.workload, p.size))
            })
            .collect()
    }

    /// The tables printed after a run.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let d = &self.device;
        let _ = writeln!(
            out,
            "{} (compute capability {}.{}, {} SMs, {}), median of {} launches after {} \
             warm-up, seed {}, {}",
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.multiprocessors,
            d.code_label(),
            self.timing.reps,
            self.timing.warmup,
            self.inputs.seed,
            self.date
        );
        for problem in &self.problems {
            problem.table(&mut out);
        }
        out
    }

    /// Writes the report as JSON (atomically: see [`write_atomically`]).
    pub fn write_json(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)? + "\n";
        write_atomically(path, |tmp| {
            std::fs::write(tmp, &text).with_context(|| format!("writing {}", tmp.display()))
        })
    }

    /// The plot of this run: what `host plot` draws from its `--json` (see
    /// [`SavedReport::write_svg`]).
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        self.saved()?.write_svg(path)
    }

    /// This report as `host plot` reads it back from `--json`.
    pub fn saved(&self) -> Result<SavedReport> {
        Ok(serde_json::from_value(serde_json::to_value(self)?)?)
    }
}

/// Writes `path` through a temporary file in the same folder that is then renamed over it,
/// so an interrupted or failed write never leaves a truncated file at `path` (a rename within
/// a folder is atomic); the temporary file is removed when `write` fails.
pub fn write_atomically(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let tmp = path.with_file_name(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = write(&tmp).and_then(|()| {
        std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A report read back from a `--json` file: what `host plot` draws from, under the names
/// `--json` writes. Other fields are ignored, so every report written so far loads (the
/// report types hold `&'static` names and the other crates' types, which are written, not
/// read; this is their reading side).
#[derive(Clone, Debug, Deserialize)]
pub struct SavedReport {
    pub device: SavedDevice,
    pub timing: SavedTiming,
    pub problems: Vec<SavedProblem>,
}

/// The device of a [`SavedReport`].
#[derive(Clone, Debug, Deserialize)]
pub struct SavedDevice {
    pub name: String,
}

/// The timing of a [`SavedReport`].
#[derive(Clone, Debug, Deserialize)]
pub struct SavedTiming {
    pub reps: u32,
}

/// A [`ProblemReport`] read back.
#[derive(Clone, Debug, Deserialize)]
pub struct SavedProblem {
    pub workload: String,
    pub size: String,
    pub baseline: Option<String>,
    pub rate_unit: Option<String>,
    pub baseline_as_percent: bool,
    pub rows: Vec<SavedRow>,
}

/// A [`Row`] read back.
#[derive(Clone, Debug, Deserialize)]
pub struct SavedRow {
    pub name: String,
    /// `baseline`, `raw_ptx` or `library`.
    pub role: String,
    pub style: String,
    pub stages: Option<u32>,
    pub passed: bool,
    pub median_ms: Option<f64>,
    pub rate: Option<f64>,
}

impl SavedReport {
    /// Reads a report that `host run --json` wrote.
    pub fn read(path: &Path) -> Result<SavedReport> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{} is not a report written by `host run --json`: {e}",
                path.display()
            )
        })
    }

    /// The pictures of this report: one per workload, in the order run.
    pub fn figures(&self) -> Vec<Figure> {
        let mut workloads: Vec<&str> = Vec::new();
        for problem in &self.problems {
            if !workloads.contains(&problem.workload.as_str()) {
                workloads.push(&problem.workload);
            }
        }
        workloads
            .into_iter()
            .filter_map(|workload| {
                let problems: Vec<&SavedProblem> = self
                    .problems
                    .iter()
                    .filter(|p| p.workload == workload)
                    .collect();
                Figure::new(&problems)
            })
            .collect()
    }

    /// Draws [`SavedReport::figures`] into an SVG, one 1000x600 picture per workload, one
    /// under the other (atomically: see [`write_atomically`]).
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        ensure!(
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("svg")),
            "--plot writes SVG: give a file name ending in .svg (got {})",
            path.display()
        );
        let figures = self.figures();
        ensure!(
            !figures.is_empty(),
            "nothing to plot: no experiment was timed and checked against its workload's baseline"
        );
        write_atomically(path, |tmp| {
            draw(self, &figures, tmp)
                .map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))
        })
    }
}

/// One workload's picture: per style, its fastest experiment at each size against the
/// workload's baseline (the reference).
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub workload: String,
    /// The baseline experiment.
    pub reference: String,
    /// Whether ratios read as "% of the reference" (a vendor library or the driver) rather
    /// than as a speed-up over it (a kernel of ours).
    pub as_percent: bool,
    pub rate_unit: Option<String>,
    /// The sizes, in the order run.
    pub sizes: Vec<String>,
    /// The reference at each size (ratio 1), where it was timed.
    pub reference_points: Vec<Option<Point>>,
    /// One per style, in the order first run.
    pub series: Vec<Series>,
}

/// A style's fastest experiment at each size of a [`Figure`] (`None`: none of the style ran
/// there, or the reference did not).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub style: String,
    pub raw_ptx: bool,
    pub points: Vec<Option<Point>>,
}

/// One experiment at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub experiment: String,
    pub stages: Option<u32>,
    /// The reference's median time over this one's (above 1: faster than the reference).
    pub ratio: f64,
    pub rate: Option<f64>,
}

impl Figure {
    /// The figure of one workload's problems; `None` when nothing was compared with the
    /// reference. Only rows that were timed and passed their checks count.
    fn new(problems: &[&SavedProblem]) -> Option<Figure> {
        let first = problems.first()?;
        let timed = |r: &&SavedRow| r.passed && r.median_ms.is_some_and(|ms| ms > 0.0);
        let mut reference = None;
        let mut reference_points = Vec::new();
        let mut series: Vec<Series> = Vec::new();
        for (i, problem) in problems.iter().enumerate() {
            let base = problem
                .baseline
                .as_deref()
                .and_then(|b| problem.rows.iter().filter(timed).find(|r| r.name == b));
            let Some(base) = base else {
                reference_points.push(None);
                continue;
            };
            reference.get_or_insert_with(|| base.name.clone());
            let base_ms = base.median_ms.unwrap_or(f64::NAN);
            let point = |r: &SavedRow| Point {
                experiment: r.name.clone(),
                stages: r.stages,
                ratio: base_ms / r.median_ms.unwrap_or(f64::NAN),
                rate: r.rate,
            };
            reference_points.push(Some(point(base)));
            for row in problem.rows.iter().filter(timed) {
                if row.name == base.name {
                    continue;
                }
                let s = match series.iter().position(|s| s.style == row.style) {
                    Some(s) => s,
                    None => {
                        series.push(Series {
                            style: row.style.clone(),
                            raw_ptx: row.role == "raw_ptx",
                            points: vec![None; problems.len()],
                        });
                        series.len() - 1
                    }
                };
                let candidate = point(row);
                let best = &mut series[s].points[i];
                if best.as_ref().is_none_or(|b| candidate.ratio > b.ratio) {
                    *best = Some(candidate);
                }
            }
        }
        if series.is_empty() {
            return None;
        }
        Some(Figure {
            workload: first.workload.clone(),
            reference: reference?,
            as_percent: first.baseline_as_percent,
            rate_unit: first.rate_unit.clone(),
            sizes: problems.iter().map(|p| p.size.clone()).collect(),
            reference_points,
            series,
        })
    }

    /// One size: bars per style instead of lines.
    pub fn bars(&self) -> bool {
        self.sizes.len() == 1
    }

    /// The largest ratio drawn.
    fn max_ratio(&self) -> f64 {
        let points = self.series.iter().flat_map(|s| s.points.iter().flatten());
        points.fold(1.0, |m, p| m.max(p.ratio))
    }

    /// A ratio as the axis shows it.
    fn tick(&self, ratio: f64) -> String {
        if self.as_percent {
            format!("{:.0}%", 100.0 * ratio)
        } else {
            format!("{ratio:.1}x")
        }
    }

    /// A ratio as a bar's label shows it.
    pub fn value(&self, ratio: f64) -> String {
        if self.as_percent {
            format!("{:.1}%", 100.0 * ratio)
        } else {
            format!("{ratio:.2}x")
        }
    }

    /// What the ratio axis shows.
    fn ratio_axis(&self) -> String {
        if self.as_percent {
            format!("% of {}  (its time / the style's time)", self.reference)
        } else {
            format!(
                "speed-up: x of {}  (its time / the style's time)",
                self.reference
            )
        }
    }

    /// A rate with its unit, if known.
    fn rate(&self, rate: Option<f64>) -> Option<String> {
        let rate = number(rate?);
        Some(match &self.rate_unit {
            Some(unit) => format!("{rate} {unit}"),
            None => rate,
        })
    }
}

/// A rate to three or four significant digits.
fn number(x: f64) -> String {
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$}")
}

impl Series {
    /// The depth (stages) of the fastest experiment, if one depth wins at every size.
    pub fn depth(&self) -> Option<u32> {
        let mut depths = self.points.iter().flatten().map(|p| p.stages);
        let first = depths.next()??;
        depths.all(|d| d == Some(first)).then_some(first)
    }

    /// Where the winning depth changes with the size, the depth at each size (`-`: none
    /// ran), as the legend writes it under the line's name.
    pub fn depths(&self) -> Option<String> {
        let varies =
            self.depth().is_none() && self.points.iter().flatten().any(|p| p.stages.is_some());
        let depth = |p: &Option<Point>| {
            p.as_ref()
                .and_then(|p| p.stages)
                .map_or("-".to_string(), |d| d.to_string())
        };
        varies.then(|| {
            let depths: Vec<String> = self.points.iter().map(depth).collect();
            format!("depth by size: {}", depths.join(" "))
        })
    }

    /// The legend's name of the line: the style, and its depth where one wins everywhere.
    pub fn label(&self) -> String {
        match self.depth() {
            Some(d) => format!("{}, depth {d}", self.style),
            None if self.depths().is_some() => format!("{}, depth varies", self.style),
            None => self.style.clone(),
        }
    }
}

/// A size as the x axis writes it: `1024x1024x1024` as `1024³`, so that seven sizes fit.
fn size_label(size: &str) -> String {
    let parts: Vec<&str> = size.split('x').collect();
    if parts.len() == 3 && parts.iter().all(|p| *p == parts[0] && !p.is_empty()) {
        format!("{}³", parts[0])
    } else {
        size.to_string()
    }
}

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 600;
const FONT: &str = "sans-serif";
// Font sizes as plotters takes them: the SVG gets them divided by 1.24 (16: 12.9 px).
const TITLE: u32 = 22;
const SUBTITLE: u32 = 16;
const LABEL: u32 = 16;
const AXIS: u32 = 17;
const NOTE: u32 = 15;

/// The lines' colours (Tableau 10), one per style in the order first run.
const PALETTE: [plotters::prelude::RGBColor; 10] = {
    use plotters::prelude::RGBColor;
    [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(127, 127, 127),
    ]
};
const REFERENCE: plotters::prelude::RGBColor = plotters::prelude::RGBColor(70, 70, 70);
const MUTED: plotters::prelude::RGBColor = plotters::prelude::RGBColor(110, 110, 110);

type DrawResult = Result<(), Box<dyn std::error::Error>>;
type Area<'a> =
    plotters::prelude::DrawingArea<plotters::prelude::SVGBackend<'a>, plotters::coord::Shift>;

/// The SVG: per figure, a title and either lines (several sizes) or bars (one).
fn draw(report: &SavedReport, figures: &[Figure], path: &Path) -> DrawResult {
    use plotters::prelude::*;

    let root = SVGBackend::new(path, (WIDTH, HEIGHT * figures.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    for (figure, area) in figures.iter().zip(root.split_evenly((figures.len(), 1))) {
        let (head, body) = area.split_vertically(58);
        let at = if figure.bars() {
            format!(" at {}", figure.sizes[0])
        } else {
            String::new()
        };
        head.draw_text(
            &format!(
                "{}{at} on {}: each style's fastest experiment against {}",
                figure.workload, report.device.name, figure.reference
            ),
            &TextStyle::from((FONT, TITLE).into_font()).color(&BLACK),
            (18, 12),
        )?;
        let what = if figure.bars() {
            "per style"
        } else {
            "per problem size, in the order run"
        };
        let ratio = if figure.as_percent {
            format!("% of {}", figure.reference)
        } else {
            format!("speed-up over {}", figure.reference)
        };
        head.draw_text(
            &format!(
                "{ratio} {what}; median of {} launches; {} = {}",
                report.timing.reps,
                figure.reference,
                figure.tick(1.0)
            ),
            &TextStyle::from((FONT, SUBTITLE).into_font()).color(&MUTED),
            (18, 38),
        )?;
        if figure.bars() {
            draw_bars(&body, figure)?;
        } else {
            draw_lines(&body, figure)?;
        }
    }
    root.present()?;
    Ok(())
}

/// Style `i`'s marker (one of four shapes), centred on pixel `at` of `area`: filled, or for
/// raw PTX hollow and larger, so that it rings a library style's marker at the same value.
fn draw_marker(
    area: &Area,
    i: usize,
    raw_ptx: bool,
    (x, y): (i32, i32),
    colour: plotters::prelude::RGBColor,
) -> DrawResult {
    use plotters::prelude::*;
    let (style, r) = if raw_ptx {
        (colour.stroke_width(2), 8)
    } else {
        (colour.filled(), 5)
    };
    match i % 4 {
        0 => area.draw(&Circle::new((x, y), r, style))?,
        1 => {
            // Pointing up, centred on its centroid (TriangleMarker is always filled).
            let r = f64::from(r + 2);
            let corner = |deg: f64| {
                let rad = deg.to_radians();
                (
                    x + (r * rad.cos()).round() as i32,
                    y - (r * rad.sin()).round() as i32,
                )
            };
            let corners = [corner(90.0), corner(210.0), corner(330.0)];
            if raw_ptx {
                let closed = [corners[0], corners[1], corners[2], corners[0]];
                area.draw(&PathElement::new(closed, style))?
            } else {
                area.draw(&Polygon::new(corners, style))?
            }
        }
        2 => area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], style))?,
        _ => area.draw(&Cross::new((x, y), r, colour.stroke_width(3)))?,
    }
    Ok(())
}

/// Ratio against size: one line per style, the reference flat at 1, the legend on the right.
fn draw_lines(body: &Area, figure: &Figure) -> DrawResult {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let (plot_area, legend) = body.split_horizontally(WIDTH - 270);
    let n = figure.sizes.len();
    let top = figure.max_ratio() * 1.08;
    let tick = |v: &f64| figure.tick(*v);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_left(14)
        .margin_right(24)
        .margin_top(8)
        .margin_bottom(6)
        .x_label_area_size(72)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_labels(10)
        .y_label_formatter(&tick)
        .y_desc(figure.ratio_axis())
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, AXIS))
        .bold_line_style(RGBColor(225, 225, 225))
        .max_light_lines(0)
        .draw()?;

    // The x axis by hand: a size and the reference's rate under each point.
    let grid = RGBColor(235, 235, 235);
    let base = plot_area.get_base_pixel();
    let local = |(x, y): (i32, i32)| (x - base.0, y - base.1);
    chart.draw_series(std::iter::once(PathElement::new(
        [(-0.5, 0.0), (n as f64 - 0.5, 0.0)],
        BLACK,
    )))?;
    for (i, size) in figure.sizes.iter().enumerate() {
        let x = i as f64;
        chart.draw_series(std::iter::once(PathElement::new(
            [(x, 0.0), (x, top)],
            grid,
        )))?;
        let (px, py) = local(chart.backend_coord(&(x, 0.0)));
        plot_area.draw(&PathElement::new([(px, py), (px, py + 5)], BLACK))?;
        let centre = Pos::new(HPos::Center, VPos::Top);
        plot_area.draw(&Text::new(
            size_label(size),
            (px, py + 9),
            TextStyle::from((FONT, LABEL)).pos(centre),
        ))?;
        if let Some(rate) = figure.reference_points[i].as_ref().and_then(|p| p.rate) {
            plot_area.draw(&Text::new(
                number(rate),
                (px, py + 28),
                TextStyle::from((FONT, NOTE)).color(&MUTED).pos(centre),
            ))?;
        }
    }
    let (left, py) = local(chart.backend_coord(&(-0.5, 0.0)));
    let (right, _) = local(chart.backend_coord(&(n as f64 - 0.5, 0.0)));
    plot_area.draw(&Text::new(
        match &figure.rate_unit {
            Some(unit) => format!("problem size; in grey: {}'s {unit}", figure.reference),
            None => "problem size".to_string(),
        },
        ((left + right) / 2, py + 50),
        TextStyle::from((FONT, AXIS)).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;

    // The reference, then the styles.
    chart.draw_series(LineSeries::new(
        [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
        REFERENCE.stroke_width(3),
    ))?;
    // Raw PTX last: its dashes and rings stay visible over a library style at the same value.
    let mut order: Vec<(usize, &Series)> = figure.series.iter().enumerate().collect();
    order.sort_by_key(|(_, series)| series.raw_ptx);
    for (s, series) in order {
        let colour = PALETTE[s % PALETTE.len()];
        let style = colour.stroke_width(2);
        // Consecutive sizes with a point make a line; a missing size breaks it.
        let xy = |(i, p): (usize, &Option<Point>)| p.as_ref().map(|p| (i as f64, p.ratio));
        let mut run: Vec<(f64, f64)> = Vec::new();
        for point in series.points.iter().enumerate().map(xy).chain([None]) {
            match point {
                Some(xy) => run.push(xy),
                None if run.is_empty() => {}
                None if series.raw_ptx => {
                    let run = std::mem::take(&mut run);
                    chart.draw_series(DashedLineSeries::new(run, 9, 5, style))?;
                }
                None => {
                    chart.draw_series(LineSeries::new(std::mem::take(&mut run), style))?;
                }
            }
        }
        for (i, point) in series.points.iter().enumerate() {
            if let Some(point) = point {
                let at = local(chart.backend_coord(&(i as f64, point.ratio)));
                draw_marker(&plot_area, s, series.raw_ptx, at, colour)?;
            }
        }
    }

    // The legend: a line per style, the depth by size under it where it changes.
    let text = TextStyle::from((FONT, LABEL)).pos(Pos::new(HPos::Left, VPos::Center));
    let note = TextStyle::from((FONT, NOTE))
        .color(&MUTED)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 24;
    legend.draw(&PathElement::new(
        [(8, y), (40, y)],
        REFERENCE.stroke_width(3),
    ))?;
    legend.draw(&Text::new(
        format!("{} = {}", figure.reference, figure.tick(1.0)),
        (48, y),
        text.clone(),
    ))?;
    for (s, series) in figure.series.iter().enumerate() {
        y += 28;
        let colour = PALETTE[s % PALETTE.len()];
        let style = colour.stroke_width(2);
        let dashes: &[(i32, i32)] = if series.raw_ptx {
            &[(8, 16), (22, 30), (36, 40)]
        } else {
            &[(8, 40)]
        };
        for &(from, to) in dashes {
            legend.draw(&PathElement::new([(from, y), (to, y)], style))?;
        }
        draw_marker(&legend, s, series.raw_ptx, (24, y), colour)?;
        legend.draw(&Text::new(series.label(), (48, y), text.clone()))?;
        if let Some(depths) = series.depths() {
            y += 19;
            legend.draw(&Text::new(depths, (48, y), note.clone()))?;
        }
    }
    if figure.series.iter().any(|s| s.raw_ptx) {
        y += 38;
        legend.draw(&Text::new("dashed, hollow: raw PTX", (8, y), note.clone()))?;
    }
    Ok(())
}

/// One size: a horizontal bar per style, the reference's on top, each with its ratio and
/// rate.
fn draw_bars(body: &Area, figure: &Figure) -> DrawResult {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let mut bars: Vec<(String, RGBColor, &Point)> = Vec::new();
    if let Some(p) = &figure.reference_points[0] {
        bars.push((format!("{} (reference)", figure.reference), REFERENCE, p));
    }
    for (s, series) in figure.series.iter().enumerate() {
        if let Some(p) = &series.points[0] {
            let raw = if series.raw_ptx { " (raw PTX)" } else { "" };
            bars.push((
                format!("{}{raw}", series.label()),
                PALETTE[s % PALETTE.len()],
                p,
            ));
        }
    }
    let m = bars.len();
    let top = figure.max_ratio() * 1.35;
    let tick = |v: &f64| figure.tick(*v);
    let mut chart = ChartBuilder::on(body)
        .margin_left(14)
        .margin_right(24)
        .margin_top(8)
        .margin_bottom(10)
        .x_label_area_size(56)
        .y_label_area_size(290)
        .build_cartesian_2d(0.0..top, -0.5..m as f64 - 0.5)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_labels(12)
        .x_label_formatter(&tick)
        .x_desc(figure.ratio_axis())
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, AXIS))
        .bold_line_style(RGBColor(225, 225, 225))
        .max_light_lines(0)
        .draw()?;
    let base = body.get_base_pixel();
    let local = |(x, y): (i32, i32)| (x - base.0, y - base.1);
    chart.draw_series(DashedLineSeries::new(
        [(1.0, -0.5), (1.0, m as f64 - 0.5)],
        6,
        4,
        REFERENCE.stroke_width(1),
    ))?;
    chart.draw_series(std::iter::once(PathElement::new(
        [(0.0, -0.5), (0.0, m as f64 - 0.5)],
        BLACK,
    )))?;
    // The values in one column right of the longest bar and of the reference's line.
    let column = figure.max_ratio().max(1.0);
    for (i, (name, colour, point)) in bars.iter().enumerate() {
        let y = (m - 1 - i) as f64;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y - 0.32), (point.ratio, y + 0.32)],
            colour.mix(0.9).filled(),
        )))?;
        let (px, py) = local(chart.backend_coord(&(0.0, y)));
        body.draw(&Text::new(
            name.clone(),
            (px - 10, py),
            TextStyle::from((FONT, LABEL)).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        let rate = figure
            .rate(point.rate)
            .map_or(String::new(), |r| format!(",  {r}"));
        let (px, py) = local(chart.backend_coord(&(column, y)));
        body.draw(&Text::new(
            format!("{}{rate}", figure.value(point.ratio)),
            (px + 12, py),
            TextStyle::from((FONT, LABEL)).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::check::{Tolerance, check};
    use harness::experiment::{Measurement, Ran, Values, Work};

    fn measurement(name: &str, median_ms: f64) -> Measurement {
        let kernel = workloads::study::find(name).unwrap();
        let ok = check(&[1.0], &[1.0], Tolerance::F32_DOT);
        Measurement {
            experiment: kernel,
            outcome: Outcome::Ran(Ran {
                check: ok.clone(),
                times_ms: vec![median_ms],
                check_after_timing: Some(ok),
                note: None,
            }),
        }
    }

    fn report() -> RunReport {
        let problem = ProblemResult {
            workload: "study",
            size: "K = 65536".into(),
            work: Work::Steps(65536),
            measurements: vec![
                measurement("sync_baseline", 10.0),
                measurement("raw_async_group_2", 5.0),
                measurement("thread_pipeline_2", 5.0),
                measurement("block_pipeline_2", 4.0),
            ],
        };
        let outcome = RunOutcome {
            results: vec![problem],
            interrupted: false,
        };
        RunReport::new(
            GpuInfo {
                name: "Test GPU".into(),
                compute_capability: (9, 0),
                arch: ptx_builder::Arch::Sm90,
                specific: None,
                multiprocessors: 132,
                clock_mhz: 1980,
                memory_gib: 139.8,
                max_shared_bytes_per_block: 232448,
                driver_version: "13.0".into(),
                code: gpu_runtime::DeviceCode::Cubin,
            },
            "host run".into(),
            Inputs {
                seed: 7,
                values: Values::Random,
            },
            Timing {
                warmup: 1,
                reps: 1,
                limit: None,
            },
            &outcome,
        )
    }

    /// A library reference outside our tolerance keeps its FAILED row and a note under the
    /// table, and fails nothing; a kernel of ours that fails decides the exit status.
    #[test]
    fn a_reference_outside_tolerance_is_reported_not_failed() {
        let experiments = crate::registry::find("gemm").unwrap().experiments();
        let cublas = experiments
            .iter()
            .copied()
            .find(|e| e.role() == Role::Baseline)
            .unwrap();
        let ours = experiments
            .iter()
            .copied()
            .find(|e| e.threads().is_some())
            .unwrap();
        let checked = |got: f32| {
            let c = check(&[got, 2.0], &[1.0, 2.0], Tolerance::F32_DOT);
            Measurement {
                experiment: cublas,
                outcome: Outcome::Ran(Ran {
                    check: c.clone(),
                    times_ms: vec![1.0],
                    check_after_timing: Some(c),
                    note: None,
                }),
            }
        };
        let report_of = |measurements: Vec<Measurement>| {
            let mut r = report();
            r.problems = vec![ProblemReport::new(&ProblemResult {
                workload: "gemm",
                size: "8191".into(),
                work: Work::Flops(1),
                measurements,
            })];
            r.passed = r.problems[0]
                .rows
                .iter()
                .all(|row| !row.failed || row.external_reference);
            r
        };
        let ours_ok = Measurement {
            experiment: ours,
            ..checked(1.0)
        };
        let r = report_of(vec![checked(1.5), ours_ok.clone()]);
        assert!(r.failed().is_empty(), "{:?}", r.failed());
        assert!(r.passed);
        let table = r.table();
        assert!(table.contains("FAILED"), "{table}");
        let note = table
            .lines()
            .find(|l| l.starts_with("note: the reference"))
            .unwrap_or_else(|| panic!("{table}"));
        assert!(note.contains(cublas.name()), "{note}");
        assert!(note.contains("1 elements outside"), "{note}");
        // Ours failing is a failure whatever the reference did.
        let ours_bad = Measurement {
            experiment: ours,
            ..checked(1.5)
        };
        let r = report_of(vec![checked(1.0), ours_bad]);
        assert_eq!(r.failed().len(), 1, "{:?}", r.failed());
        assert!(!r.table().contains("note: the reference"));
    }

    #[test]
    fn rows_carry_comparisons() {
        let r = report();
        let row = |name: &str| r.problems[0].rows.iter().find(|x| x.name == name).unwrap();
        assert_eq!(r.problems[0].baseline, Some("sync_baseline"));
        assert_eq!(row("sync_baseline").vs_baseline, Some(1.0));
        assert_eq!(row("thread_pipeline_2").vs_baseline, Some(2.0));
        assert_eq!(row("thread_pipeline_2").vs_counterpart, Some(1.0));
        assert_eq!(row("thread_pipeline_2").role, Role::Library);
        // raw_mbarrier_2 was not measured: no comparison.
        assert_eq!(row("block_pipeline_2").vs_counterpart, None);
        assert_eq!(row("block_pipeline_2").rate, Some(65536.0 / 4000.0));
        assert!(r.passed && r.failed().is_empty());
        let table = r.table();
        assert!(table.contains("thread_pipeline_2"), "{table}");
        assert!(table.contains("2.00x"), "{table}");
        assert!(table.contains("steps/us"), "{table}");
        assert!(table.contains("132 SMs, sm_90 cubin)"), "{table}");
    }

    /// A fresh directory for one test's files; the test removes it.
    fn scratch_dir(test: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn json_has_device_date_and_parameters() {
        let dir = scratch_dir("report-json");
        let path = dir.join("r.json");
        report().write_json(&path).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["device"]["name"], "Test GPU");
        assert_eq!(v["device"]["arch"], "sm_90");
        assert_eq!(v["inputs"]["seed"], 7);
        assert_eq!(v["timing"]["reps"], 1);
        assert!(v["date"].as_str().unwrap().starts_with("20"));
        let rows = &v["problems"][0]["rows"];
        assert_eq!(v["problems"][0]["size"], "K = 65536");
        assert_eq!(rows[1]["name"], "raw_async_group_2");
        assert_eq!(rows[1]["role"], "raw_ptx");
        assert_eq!(rows[1]["vs_baseline"], 2.0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn writes_are_atomic() {
        let dir = scratch_dir("report-atomic");
        let path = dir.join("r.json");
        std::fs::write(&path, "old").unwrap();
        // A writer that fails half-way leaves the old file and no temporary file.
        let err = write_atomically(&path, |tmp| {
            std::fs::write(tmp, "half")?;
            anyhow::bail!("interrupted")
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A complete write replaces it, and leaves nothing else behind.
        report().write_json(&path).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"passed\": true")
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn svg_plot_names_every_style_and_the_reference() {
        let dir = scratch_dir("report-svg");
        let path = dir.join("r.svg");
        report().write_svg(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.starts_with("<svg width=\"1000\" height=\"600\""),
            "{}",
            &svg[..50]
        );
        for name in [
            "sync_baseline (reference)",
            "raw_async_group, depth 2 (raw PTX)",
            "thread_pipeline, depth 2",
            "block_pipeline, depth 2",
        ] {
            assert!(svg.contains(name), "{name} missing");
        }
        // block_pipeline_2: 10 ms / 4 ms, at 65536 steps / 4 ms.
        assert!(svg.contains("2.50x,  16.4 steps/us"), "{svg}");
        assert!(svg.contains("speed-up: x of sync_baseline"), "{svg}");
        let err = report()
            .write_svg(&dir.join("r.png"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(".svg"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn saved_row(name: &str, style: &str, stages: Option<u32>, ms: Option<f64>) -> SavedRow {
        SavedRow {
            name: name.into(),
            role: if name == "base" {
                "baseline"
            } else {
                "library"
            }
            .into(),
            style: style.into(),
            stages,
            passed: true,
            median_ms: ms,
            rate: ms.map(|ms| 100.0 / ms),
        }
    }

    fn saved_problem(size: &str, rows: Vec<SavedRow>) -> SavedProblem {
        SavedProblem {
            workload: "w".into(),
            size: size.into(),
            baseline: Some("base".into()),
            rate_unit: Some("GB/s".into()),
            baseline_as_percent: true,
            rows,
        }
    }

    fn saved(problems: Vec<SavedProblem>) -> SavedReport {
        SavedReport {
            device: SavedDevice {
                name: "Test GPU".into(),
            },
            timing: SavedTiming { reps: 5 },
            problems,
        }
    }

    /// Two sizes: `pipe` wins at depth 2, then at depth 3; `block` at depth 4 both times;
    /// `late` only runs at the second size. Failed and untimed rows never win.
    fn two_sizes() -> SavedReport {
        let failed = SavedRow {
            passed: false,
            ..saved_row("block_1", "block", Some(1), Some(0.1))
        };
        saved(vec![
            saved_problem(
                "1",
                vec![
                    saved_row("base", "driver", None, Some(10.0)),
                    saved_row("pipe_2", "pipe", Some(2), Some(5.0)),
                    saved_row("pipe_3", "pipe", Some(3), Some(6.0)),
                    saved_row("block_2", "block", Some(2), Some(8.0)),
                    saved_row("block_4", "block", Some(4), Some(4.0)),
                    failed.clone(),
                    saved_row("late_2", "late", Some(2), None),
                ],
            ),
            saved_problem(
                "2",
                vec![
                    saved_row("base", "driver", None, Some(20.0)),
                    saved_row("pipe_2", "pipe", Some(2), Some(16.0)),
                    saved_row("pipe_3", "pipe", Some(3), Some(8.0)),
                    saved_row("block_4", "block", Some(4), Some(10.0)),
                    saved_row("block_2", "block", Some(2), Some(40.0)),
                    failed,
                    saved_row("late_2", "late", Some(2), Some(40.0)),
                ],
            ),
        ])
    }

    #[test]
    fn each_style_keeps_its_fastest_depth_at_each_size() {
        let figures = two_sizes().figures();
        assert_eq!(figures.len(), 1);
        let figure = &figures[0];
        assert_eq!(figure.sizes, ["1", "2"]);
        let styles: Vec<&str> = figure.series.iter().map(|s| s.style.as_str()).collect();
        assert_eq!(styles, ["pipe", "block", "late"]);
        let winners = |s: &Series| -> Vec<Option<(String, f64)>> {
            let winner = |p: &Option<Point>| p.as_ref().map(|p| (p.experiment.clone(), p.ratio));
            s.points.iter().map(winner).collect()
        };
        let (pipe, block, late) = (&figure.series[0], &figure.series[1], &figure.series[2]);
        assert_eq!(
            winners(pipe),
            [Some(("pipe_2".into(), 2.0)), Some(("pipe_3".into(), 2.5))]
        );
        assert_eq!(
            (pipe.depth(), pipe.label()),
            (None, "pipe, depth varies".into())
        );
        assert_eq!(pipe.depths().as_deref(), Some("depth by size: 2 3"));
        assert_eq!(
            winners(block),
            [Some(("block_4".into(), 2.5)), Some(("block_4".into(), 2.0))]
        );
        assert_eq!(
            (block.depth(), block.label()),
            (Some(4), "block, depth 4".into())
        );
        assert_eq!(block.depths(), None);
        assert_eq!(winners(late), [None, Some(("late_2".into(), 0.5))]);
        assert_eq!(late.label(), "late, depth 2");
    }

    #[test]
    fn the_reference_is_100_percent_and_no_line_of_its_own() {
        let figure = &two_sizes().figures()[0];
        assert_eq!(figure.reference, "base");
        let reference: Vec<Option<f64>> = figure
            .reference_points
            .iter()
            .map(|p| p.as_ref().map(|p| p.ratio))
            .collect();
        assert_eq!(reference, [Some(1.0), Some(1.0)]);
        assert_eq!(figure.value(1.0), "100.0%");
        assert!(figure.series.iter().all(|s| s.style != "driver"));
        // A speed-up baseline (a kernel of ours) reads as 1x rather than 100%.
        let mut report = two_sizes();
        report
            .problems
            .iter_mut()
            .for_each(|p| p.baseline_as_percent = false);
        assert_eq!(report.figures()[0].value(1.0), "1.00x");
        // Without its reference timed, a size has no points.
        report.problems[0].rows[0].median_ms = None;
        let figure = &report.figures()[0];
        assert_eq!(figure.reference_points[0], None);
        assert!(figure.series.iter().all(|s| s.points[0].is_none()));
    }

    #[test]
    fn one_size_draws_bars_several_draw_lines() {
        let dir = scratch_dir("report-bars");
        let path = dir.join("r.svg");
        let two = two_sizes();
        assert!(!two.figures()[0].bars());
        two.write_svg(&path).unwrap();
        let lines = std::fs::read_to_string(&path).unwrap();
        let mut one = two_sizes();
        one.problems.truncate(1);
        assert!(one.figures()[0].bars());
        one.write_svg(&path).unwrap();
        let bars = std::fs::read_to_string(&path).unwrap();
        // Bars are the only rectangles drawn at 0.9 opacity.
        let bar_rects = |svg: &str| {
            svg.split("<rect")
                .skip(1)
                .filter(|r| r.split("/>").next().unwrap().contains("opacity=\"0.9\""))
                .count()
        };
        // The reference, pipe and block ran at size 1 (late did not).
        assert_eq!(bar_rects(&bars), 3, "{bars}");
        assert!(bars.contains("250.0%,  25.0 GB/s"), "{bars}");
        assert_eq!(bar_rects(&lines), 0, "{lines}");
        assert!(lines.contains("pipe, depth varies"), "{lines}");
        assert!(lines.contains("depth by size: 2 3"), "{lines}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_plot_is_drawn_from_what_json_writes() {
        let dir = scratch_dir("report-replot");
        let run = report();
        run.write_json(&dir.join("r.json")).unwrap();
        let read = SavedReport::read(&dir.join("r.json")).unwrap();
        assert_eq!(read.figures(), run.saved().unwrap().figures());
        // `host run --plot` and `host plot` on its JSON draw the same picture.
        run.write_svg(&dir.join("run.svg")).unwrap();
        read.write_svg(&dir.join("plot.svg")).unwrap();
        let svg = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(svg("run.svg"), svg("plot.svg"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn every_saved_report_in_docs_loads_and_plots() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&docs).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let report = SavedReport::read(&path).unwrap();
                let figures = report.figures();
                assert!(!figures.is_empty(), "{}", path.display());
                assert!(
                    figures.iter().all(|f| f.series.len() >= 2),
                    "{}",
                    path.display()
                );
                loaded += 1;
            }
        }
        assert!(loaded >= 5, "{loaded} reports in {}", docs.display());
    }

    #[test]
    fn a_file_that_is_no_report_or_has_nothing_to_plot_is_refused() {
        let dir = scratch_dir("report-refused");
        let path = dir.join("r.json");
        std::fs::write(&path, "{\"rows\": []}").unwrap();
        let err = format!("{:#}", SavedReport::read(&path).unwrap_err());
        assert!(
            err.contains("is not a report written by `host run --json`"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            SavedReport::read(&dir.join("none.json")).unwrap_err()
        );
        assert!(err.starts_with("reading "), "{err}");
        // Only the reference ran: nothing to compare, and no SVG is left behind.
        let mut report = two_sizes();
        report.problems.iter_mut().for_each(|p| p.rows.truncate(1));
        let err = report
            .write_svg(&dir.join("r.svg"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("nothing to plot"), "{err}");
        assert!(!dir.join("r.svg").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
