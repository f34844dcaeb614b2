//! A run's results: the table printed at the end, `--json`, and `--plot` (SVG). Rows carry
//! their experiment (`&'static dyn Experiment`), so nothing is looked up again by name.

use crate::registry::{ProblemResult, RunOutcome};
use anyhow::{Context, Result, ensure};
use gpu_runtime::GpuInfo;
use harness::experiment::{Experiment, Inputs, Measurement, Outcome, Role, Timing, same};
use serde::Serialize;
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
    /// The experiment the `vs_baseline` column compares with, if it ran.
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
    pub passed: bool,
    /// One line on the checks ([`Measurement::check_summary`]).
    pub check_summary: String,
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
    /// The rows of one problem, with comparisons from its own measurements.
    pub fn new(problem: &ProblemResult) -> ProblemReport {
        let all = &problem.measurements;
        let time_of = |e: &dyn Experiment| {
            all.iter()
                .find(|m| same(m.experiment, e))
                .and_then(Measurement::median_ms)
        };
        let baseline = all
            .iter()
            .find(|m| m.experiment.role() == Role::Baseline && m.median_ms().is_some());
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
                    Outcome::Unavailable(reason) => (None, None, Vec::new(), Some(reason.clone())),
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
                    check_summary: m.check_summary(),
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
                row.check_summary
            );
        }
    }
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
            passed: problems.iter().all(|p| p.rows.iter().all(|r| r.passed)),
            interrupted: outcome.interrupted,
            problems,
        }
    }

    /// `workload/size/name` of every row that failed a check.
    pub fn failed(&self) -> Vec<String> {
        self.problems
            .iter()
            .flat_map(|p| {
                p.rows
                    .iter()
                    .filter(|r| !r.passed)
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

    /// An SVG with, per problem, two bar charts: the rate (or median time) per experiment,
    /// and the comparison with the baseline.
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        ensure!(
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("svg")),
            "--plot writes SVG: give a file name ending in .svg (got {})",
            path.display()
        );
        write_atomically(path, |tmp| {
            plot(self, tmp).map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))
        })
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

/// The colour of a role's bars: grey baseline, orange raw PTX, blue library.
fn role_colour(role: Role) -> plotters::prelude::RGBColor {
    use plotters::prelude::RGBColor;
    match role {
        Role::Baseline => RGBColor(120, 120, 120),
        Role::RawPtx => RGBColor(200, 110, 40),
        Role::Library => RGBColor(40, 100, 180),
    }
}

/// Per problem, two horizontal bar charts side by side, one bar per experiment.
fn plot(report: &RunReport, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;

    let heights: Vec<u32> = report
        .problems
        .iter()
        .map(|p| 80 + 26 * p.rows.len().max(1) as u32)
        .collect();
    let total: u32 = 40 + heights.iter().sum::<u32>();
    let root = SVGBackend::new(path, (1200, total)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "{} (median of {} launches; grey: baseline, orange: raw PTX, blue: library)",
        report.device.name, report.timing.reps
    );
    let root = root.titled(&title, ("sans-serif", 18))?;
    let mut rest = root;
    for (problem, &height) in report.problems.iter().zip(&heights) {
        let (area, below) = rest.split_vertically(height);
        rest = below;
        let (left, right) = area.split_horizontally(620);
        let colours: Vec<RGBColor> = problem.rows.iter().map(|r| role_colour(r.role)).collect();
        let names: Vec<&str> = problem.rows.iter().map(|r| r.name).collect();
        let (values, caption): (Vec<Option<f64>>, String) = match problem.rate_unit {
            Some(unit) => (
                problem.rows.iter().map(|r| r.rate).collect(),
                format!("{} at {}: {unit}", problem.workload, problem.size),
            ),
            None => (
                problem.rows.iter().map(|r| r.median_ms).collect(),
                format!("{} at {}: median ms", problem.workload, problem.size),
            ),
        };
        bar_chart(&left, &caption, &values, &colours, Some(&names), |v| {
            format!(" {v:.2}")
        })?;
        let ratios: Vec<Option<f64>> = problem.rows.iter().map(|r| r.vs_baseline).collect();
        let caption = match problem.baseline {
            Some(b) => format!("{b} time / time"),
            None => "no baseline measured".into(),
        };
        bar_chart(&right, &caption, &ratios, &colours, None, |v| {
            format!(" {v:.2}x")
        })?;
    }
    rest.present()?;
    Ok(())
}

/// A horizontal bar chart: row `i` at y = `i`, 0.7 high so neighbours stay apart, its value
/// written at the end of the bar; rows without a value are left empty. `names`, when given,
/// label the rows.
fn bar_chart<DB: plotters::prelude::DrawingBackend>(
    area: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    values: &[Option<f64>],
    colours: &[plotters::prelude::RGBColor],
    names: Option<&[&str]>,
    label: impl Fn(f64) -> String,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    use plotters::prelude::*;

    let n = values.len().max(1);
    let max = values.iter().flatten().fold(1e-6, |m: f64, &v| m.max(v)) * 1.15;
    let name_of = |y: &f64| {
        let i = y.round();
        match names {
            Some(names) if (y - i).abs() < 1e-6 && i >= 0.0 => names
                .get(i as usize)
                .map_or(String::new(), |s| s.to_string()),
            _ => String::new(),
        }
    };
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .caption(caption, ("sans-serif", 16))
        .x_label_area_size(30)
        .y_label_area_size(if names.is_some() { 190 } else { 10 })
        .build_cartesian_2d(0.0..max, -0.6..(n as f64 - 0.4))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n + 1)
        .y_label_formatter(&name_of)
        .draw()?;
    let bars = values.iter().zip(colours).enumerate();
    chart.draw_series(bars.clone().filter_map(|(i, (v, colour))| {
        let y = i as f64;
        v.map(|v| Rectangle::new([(0.0, y - 0.35), (v, y + 0.35)], colour.mix(0.85).filled()))
    }))?;
    chart.draw_series(bars.filter_map(|(i, (v, _))| {
        v.map(|v| Text::new(label(v), (v, i as f64 + 0.25), ("sans-serif", 12)))
    }))?;
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
    fn svg_plot_names_every_experiment() {
        let dir = scratch_dir("report-svg");
        let path = dir.join("r.svg");
        report().write_svg(&path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
        for name in ["sync_baseline", "raw_async_group_2", "block_pipeline_2"] {
            assert!(svg.contains(name), "{name} missing");
        }
        assert!(svg.contains("2.50x"));
        let err = report()
            .write_svg(&dir.join("r.png"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(".svg"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
