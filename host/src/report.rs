//! A run's results: the table printed at the end, `--json`, and `--plot` (SVG). Rows carry
//! their experiment (`&'static dyn Experiment`), so nothing is looked up again by name. The
//! plot is drawn from the report as `--json` writes it ([`SavedReport`]), so `host plot`
//! redraws a saved run without a GPU.

use crate::registry::{ProblemResult, RunOutcome};
use anyhow::{Context, Result, ensure};
use gpu_runtime::GpuInfo;
use harness::experiment::{
    Experiment, Inputs, LaunchesWatched, Measurement, Outcome, Role, Timing, same,
};
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
    /// Whether every check of every row of ours passed and at least one row of ours ran and
    /// passed: a run in which nothing of ours was verified is not a pass
    /// ([`RunReport::nothing_verified`]).
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
    /// Unit of the work (`FLOP`, `B`, `steps`): what `work_per_sm_cycle` counts.
    pub work_unit: Option<&'static str>,
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
    /// The GPU's clocks and power over the timed launches (`host run --monitor`).
    pub watch: Option<LaunchesWatched>,
    /// The median launch's work per SM cycle at the watched mean SM clock, in the problem's
    /// `work_unit`: the rate with the clock divided out.
    pub work_per_sm_cycle: Option<f64>,
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

    /// The rows of one problem, with comparisons from its own measurements, on a GPU of
    /// `multiprocessors` SMs.
    pub fn new(problem: &ProblemResult, multiprocessors: u32) -> ProblemReport {
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
                let (check, check_after_timing, times_ms, unavailable, watch) = match &m.outcome {
                    Outcome::Ran(ran) => (
                        Some(ran.check.clone()),
                        ran.check_after_timing.clone(),
                        ran.times_ms.clone(),
                        None,
                        ran.watch.clone(),
                    ),
                    Outcome::Unavailable(reason) => {
                        (None, None, Vec::new(), Some(reason.to_string()), None)
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
                    work_per_sm_cycle: watch.as_ref().and_then(|w| {
                        let (per_second, _) = problem.work.per_second(median_ms?)?;
                        w.watch.work_per_sm_cycle(per_second, multiprocessors)
                    }),
                    watch,
                }
            })
            .collect();
        ProblemReport {
            workload: problem.workload,
            size: problem.size.clone(),
            baseline_as_percent: baseline.is_some_and(|m| m.experiment.threads().is_none()),
            baseline: baseline.map(|m| m.experiment.name()),
            rate_unit: problem.work.rate(1.0).map(|(_, unit)| unit),
            work_unit: problem.work.per_second(1.0).map(|(_, unit)| unit),
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
        self.watch_table(out);
    }

    /// The clocks and power under the timed launches of each row that was watched
    /// (`--monitor`); nothing if none was.
    fn watch_table(&self, out: &mut String) {
        let watched: Vec<(&Row, &LaunchesWatched)> = self
            .rows
            .iter()
            .filter_map(|r| Some((r, r.watch.as_ref()?)))
            .collect();
        if watched.is_empty() {
            return;
        }
        let per_cycle = format!("{}/SM-clk", self.work_unit.unwrap_or("work"));
        let _ = writeln!(
            out,
            "clocks and power over the timed launches (NVML):\n{:<28} {:>7} {:>17} {:>7} {:>8} {:>8} {:>9} {:>13}",
            "experiment",
            "samples",
            "SM MHz (min-max)",
            "capped",
            "thermal",
            "power W",
            "J/launch",
            per_cycle
        );
        let fixed =
            |x: Option<f64>, digits: usize| x.map_or("-".to_string(), |x| format!("{x:.digits$}"));
        let percent = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.0}%", 100.0 * x));
        for (row, w) in watched {
            let clock = match (w.watch.sm_mhz_mean, w.watch.sm_mhz_min, w.watch.sm_mhz_max) {
                (Some(mean), Some(min), Some(max)) => format!("{mean:.0} ({min}-{max})"),
                _ => "-".to_string(),
            };
            let _ = writeln!(
                out,
                "{:<28} {:>7} {:>17} {:>7} {:>8} {:>8} {:>9} {:>13}",
                row.name,
                w.watch.samples,
                clock,
                percent(w.watch.power_capped),
                percent(w.watch.thermal),
                fixed(w.watch.power_w, 0),
                fixed(w.energy_per_launch_j(), 3),
                row.work_per_sm_cycle.map_or("-".to_string(), readable),
            );
        }
    }
}

/// `x` to three or four significant digits: whole from 100, two decimals from 1, else in
/// scientific notation (a loop's steps per SM cycle are tiny, a GEMM's FLOP are thousands).
fn readable(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 1.0 => format!("{x:.2}"),
        _ => format!("{x:.2e}"),
    }
}

/// A baseline that is a library call rather than a kernel of ours (no threads of ours).
fn is_external_reference(e: &dyn Experiment) -> bool {
    e.role() == Role::Baseline && e.threads().is_none()
}

/// Whether some row of ours (not a library reference) ran and passed its checks.
fn verified_any(problems: &[ProblemReport]) -> bool {
    problems
        .iter()
        .flat_map(|p| &p.rows)
        .any(|r| r.passed && !r.external_reference)
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
        let problems: Vec<ProblemReport> = outcome
            .results
            .iter()
            .map(|p| ProblemReport::new(p, device.multiprocessors))
            .collect();
        RunReport {
            device,
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command,
            inputs,
            timing,
            passed: problems
                .iter()
                .all(|p| p.rows.iter().all(|r| !r.failed || r.external_reference))
                && verified_any(&problems),
            interrupted: outcome.interrupted,
            problems,
        }
    }

    /// Why the run verified nothing of ours, if it did not: every kernel of ours was
    /// unavailable or failed (library references such as cuBLAS do not count). Such a run
    /// is not a pass, whatever else it measured.
    pub fn nothing_verified(&self) -> Option<String> {
        if verified_any(&self.problems) {
            return None;
        }
        let ours = self
            .problems
            .iter()
            .flat_map(|p| &p.rows)
            .filter(|r| !r.external_reference);
        let (mut unavailable, mut total) = (0, 0);
        for row in ours {
            total += 1;
            unavailable += usize::from(row.unavailable.is_some());
        }
        Some(if total == 0 {
            "nothing of ours ran: no experiment of ours was selected".to_string()
        } else {
            format!(
                "nothing of ours was verified: {unavailable} of {total} experiment(s) of ours \
                 unavailable, none ran and passed its checks"
            )
        })
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

mod plot;
use plot::draw;
pub use plot::{Figure, Point, Series};

#[cfg(test)]
mod tests;
