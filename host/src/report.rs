//! A run's results: the table printed at the end, `--json`, and `--plot` (SVG).

use crate::device::GpuInfo;
use crate::study::{self, Measurement, Timing};
use anyhow::{Context, Result, ensure};
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
    pub k: u32,
    pub seed: u64,
    pub timing: Timing,
    pub results: Vec<Row>,
}

/// One experiment's line.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub measurement: Measurement,
    pub summary: &'static str,
    /// Baseline median time over this one.
    pub speedup_vs_baseline: Option<f64>,
    pub raw_counterpart: Option<&'static str>,
    /// Raw counterpart's median time over this one (below 1: slower than raw PTX).
    pub speed_vs_raw: Option<f64>,
}

impl RunReport {
    /// Builds the rows (speedups from the measurements themselves).
    pub fn new(
        device: GpuInfo,
        command: String,
        k: u32,
        seed: u64,
        timing: Timing,
        measurements: Vec<Measurement>,
    ) -> RunReport {
        let results = measurements
            .iter()
            .map(|m| {
                let kernel = gpu::study::find(m.name).expect("measured kernels are registered");
                Row {
                    measurement: m.clone(),
                    summary: kernel.style.summary(),
                    speedup_vs_baseline: study::speedup(m, &measurements),
                    raw_counterpart: study::raw_counterpart(kernel).map(|r| r.name),
                    speed_vs_raw: study::versus_raw(m, &measurements),
                }
            })
            .collect();
        RunReport {
            device,
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command,
            k,
            seed,
            timing,
            results,
        }
    }

    pub fn all_passed(&self) -> bool {
        self.results.iter().all(|r| r.measurement.passed())
    }

    /// The table printed after a run.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let d = &self.device;
        let _ = writeln!(
            out,
            "{} (compute capability {}.{}, {} SMs, {} PTX), K = {}, median of {} launches after {} warm-up, {}",
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.multiprocessors,
            d.arch,
            self.k,
            self.timing.reps,
            self.timing.warmup,
            self.date
        );
        let _ = writeln!(
            out,
            "{:<20} {:>6} {:>10} {:>10} {:>9} {:>8} {:>9}  check",
            "experiment", "stages", "median ms", "min ms", "steps/us", "speedup", "vs raw"
        );
        for row in &self.results {
            let m = &row.measurement;
            let ratio = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}x"));
            // The first launch's check, unless only the last timed one failed.
            let check = if m.check.passed && !m.check_after_timing.passed {
                format!("after timing: {}", m.check_after_timing.summary())
            } else {
                m.check.summary()
            };
            let _ = writeln!(
                out,
                "{:<20} {:>6} {:>10.3} {:>10.3} {:>9.1} {:>8} {:>9}  {}",
                m.name,
                m.stages,
                m.median_ms,
                m.min_ms,
                m.steps_per_us(self.k),
                ratio(row.speedup_vs_baseline),
                ratio(row.speed_vs_raw),
                check
            );
        }
        out
    }

    pub fn write_json(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
    }

    /// An SVG with two bar charts: median time per experiment, and speedup over the baseline.
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        ensure!(
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("svg")),
            "--plot writes SVG: give a file name ending in .svg (got {})",
            path.display()
        );
        plot(self, path).map_err(|e| anyhow::anyhow!("drawing {}: {e}", path.display()))
    }
}

/// Two horizontal bar charts side by side, one bar per experiment: median time (with the
/// experiments' names) and speedup over the baseline.
fn plot(report: &RunReport, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;

    let rows = &report.results;
    let height = 140 + 26 * rows.len().max(1) as u32;
    let root = SVGBackend::new(path, (1200, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "{}: C(32x32) = A(32x{}) B, one block (median of {} launches)",
        report.device.name, report.k, report.timing.reps
    );
    let root = root.titled(&title, ("sans-serif", 18))?;
    let (left, right) = root.split_horizontally(620);
    let colors: Vec<RGBColor> = rows
        .iter()
        .map(|row| match row.measurement.style.as_str() {
            "SyncBaseline" => RGBColor(120, 120, 120),
            "RawAsyncGroup" | "RawMbarrier" => RGBColor(200, 110, 40),
            _ => RGBColor(40, 100, 180),
        })
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r.measurement.name).collect();
    let times: Vec<Option<f64>> = rows.iter().map(|r| Some(r.measurement.median_ms)).collect();
    let speedups: Vec<Option<f64>> = rows.iter().map(|r| r.speedup_vs_baseline).collect();
    bar_chart(
        &left,
        "median time (ms); orange: raw PTX",
        &times,
        &colors,
        Some(&names),
        |v| format!(" {v:.2}"),
    )?;
    bar_chart(
        &right,
        "speedup over sync_baseline",
        &speedups,
        &colors,
        None,
        |v| format!(" {v:.2}x"),
    )?;
    root.present()?;
    Ok(())
}

/// A horizontal bar chart: row `i` at y = `i`, 0.7 high so neighbours stay apart, its value
/// written at the end of the bar; rows without a value are left empty. `names`, when given,
/// label the rows.
fn bar_chart<DB: plotters::prelude::DrawingBackend>(
    area: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    values: &[Option<f64>],
    colors: &[plotters::prelude::RGBColor],
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
        .y_label_area_size(if names.is_some() { 170 } else { 10 })
        .build_cartesian_2d(0.0..max, -0.6..(n as f64 - 0.4))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n + 1)
        .y_label_formatter(&name_of)
        .draw()?;
    let bars = values.iter().zip(colors).enumerate();
    chart.draw_series(bars.clone().filter_map(|(i, (v, color))| {
        let y = i as f64;
        v.map(|v| Rectangle::new([(0.0, y - 0.35), (v, y + 0.35)], color.mix(0.85).filled()))
    }))?;
    chart.draw_series(bars.filter_map(|(i, (v, _))| {
        v.map(|v| Text::new(label(v), (v, i as f64 + 0.25), ("sans-serif", 12)))
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Tolerance, check};

    fn measurement(name: &'static str, median_ms: f64) -> Measurement {
        let kernel = gpu::study::find(name).unwrap();
        let ok = check(&[1.0], &[1.0], Tolerance::F32_DOT);
        Measurement {
            name,
            style: format!("{:?}", kernel.style),
            stages: kernel.stages,
            threads: kernel.threads(),
            shared_bytes: kernel.shared().bytes,
            times_ms: vec![median_ms],
            median_ms,
            min_ms: median_ms,
            check: ok.clone(),
            check_after_timing: ok,
        }
    }

    fn report() -> RunReport {
        RunReport::new(
            GpuInfo {
                name: "Test GPU".into(),
                compute_capability: (9, 0),
                arch: "sm_90".into(),
                multiprocessors: 132,
                clock_mhz: 1980,
                memory_gib: 139.8,
                driver_version: "13.0".into(),
            },
            "host run".into(),
            65536,
            7,
            Timing { warmup: 1, reps: 1 },
            vec![
                measurement("sync_baseline", 10.0),
                measurement("raw_async_group_2", 5.0),
                measurement("thread_pipeline_2", 5.0),
                measurement("block_pipeline_2", 4.0),
            ],
        )
    }

    #[test]
    fn rows_carry_speedups() {
        let r = report();
        let row = |name: &str| {
            r.results
                .iter()
                .find(|x| x.measurement.name == name)
                .unwrap()
        };
        assert_eq!(row("sync_baseline").speedup_vs_baseline, Some(1.0));
        assert_eq!(row("thread_pipeline_2").speedup_vs_baseline, Some(2.0));
        assert_eq!(row("thread_pipeline_2").speed_vs_raw, Some(1.0));
        // raw_mbarrier_2 was not measured: no comparison.
        assert_eq!(row("block_pipeline_2").speed_vs_raw, None);
        assert!(r.all_passed());
        let table = r.table();
        assert!(table.contains("thread_pipeline_2"), "{table}");
        assert!(table.contains("2.00x"), "{table}");
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
        assert_eq!(v["k"], 65536);
        assert_eq!(v["timing"]["reps"], 1);
        assert!(v["date"].as_str().unwrap().starts_with("20"));
        assert_eq!(v["results"][1]["name"], "raw_async_group_2");
        assert_eq!(v["results"][1]["speedup_vs_baseline"], 2.0);
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
