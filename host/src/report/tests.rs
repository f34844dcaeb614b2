//! The report's unit tests: comparisons, tables, JSON, the plot.

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
            watch: None,
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
                watch: None,
            }),
        }
    };
    let report_of = |measurements: Vec<Measurement>| {
        let mut r = report();
        r.problems = vec![ProblemReport::new(
            &ProblemResult {
                workload: "gemm",
                size: "8191".into(),
                work: Work::Flops(1),
                measurements,
            },
            132,
        )];
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

/// A run where nothing of ours ran and passed is not a pass, whatever the references did.
#[test]
fn a_run_that_verified_nothing_of_ours_is_not_a_pass() {
    let experiments = crate::registry::find("gemm").unwrap().experiments();
    let cublas = experiments
        .iter()
        .copied()
        .find(|e| e.role() == Role::Baseline)
        .unwrap();
    let ours: Vec<_> = experiments
        .iter()
        .copied()
        .filter(|e| e.threads().is_some())
        .take(2)
        .collect();
    let c = check(&[1.0], &[1.0], Tolerance::F32_DOT);
    let reference = Measurement {
        experiment: cublas,
        outcome: Outcome::Ran(Ran {
            check: c.clone(),
            times_ms: vec![1.0],
            check_after_timing: Some(c),
            note: None,
            watch: None,
        }),
    };
    let missing = |e| Measurement {
        experiment: e,
        outcome: Outcome::Unavailable(harness::experiment::Unavailable::Missing(
            "needs sm_90a".into(),
        )),
    };
    let report_of = |measurements: Vec<Measurement>| {
        let outcome = RunOutcome {
            results: vec![ProblemResult {
                workload: "gemm",
                size: "64".into(),
                work: Work::Flops(1),
                measurements,
            }],
            interrupted: false,
        };
        let r = report();
        RunReport::new(r.device, r.command, r.inputs, r.timing, &outcome)
    };
    // Every kernel of ours unavailable, the reference fine: not a pass, one line why.
    let r = report_of(vec![reference.clone(), missing(ours[0]), missing(ours[1])]);
    assert!(!r.passed && r.failed().is_empty());
    let why = r.nothing_verified().unwrap();
    assert_eq!(
        why,
        "nothing of ours was verified: 2 of 2 experiment(s) of ours unavailable, none ran \
         and passed its checks"
    );
    assert!(
        serde_json::to_string_pretty(&r)
            .unwrap()
            .contains("\"passed\": false")
    );
    // Only the reference selected: not a pass either.
    let r = report_of(vec![reference.clone()]);
    assert!(!r.passed);
    assert!(
        r.nothing_verified()
            .unwrap()
            .contains("no experiment of ours")
    );
    // One kernel of ours verified: a pass, the unavailable one beside it notwithstanding.
    let ran = Measurement {
        experiment: ours[0],
        ..reference.clone()
    };
    let r = report_of(vec![reference, ran, missing(ours[1])]);
    assert!(r.passed && r.nothing_verified().is_none());
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

/// A row watched by `--monitor` gets its clocks, power, energy per launch and work per SM
/// cycle, in the table and the JSON; rows not watched get none and no table.
#[test]
fn watched_rows_show_clocks_power_and_work_per_cycle() {
    use gpu_runtime::monitor::Sample;
    let unwatched = report().table();
    assert!(!unwatched.contains("NVML"), "{unwatched}");
    let sample = |sm_mhz, power_capped| Sample {
        sm_mhz,
        power_capped,
        thermal: false,
    };
    let samples = [sample(1600, true), sample(1700, true), sample(1800, false)];
    let watched = LaunchesWatched {
        launches: 19,
        watch: gpu_runtime::Watch::from_samples(
            &samples,
            std::time::Duration::from_millis(100),
            Some(66_500),
        ),
    };
    let mut m = measurement("block_pipeline_2", 4.0);
    if let Outcome::Ran(ran) = &mut m.outcome {
        ran.watch = Some(watched);
    }
    let problem = ProblemReport::new(
        &ProblemResult {
            workload: "study",
            size: "K = 65536".into(),
            work: Work::Steps(65536),
            measurements: vec![measurement("sync_baseline", 10.0), m],
        },
        132,
    );
    let row = &problem.rows[1];
    // 65536 steps in 4 ms over 132 SMs at 1.7 GHz.
    let per_cycle = row.work_per_sm_cycle.unwrap();
    assert!(
        (per_cycle - 65536.0 / 4e-3 / (1.7e9 * 132.0)).abs() < 1e-12,
        "{per_cycle}"
    );
    assert!(problem.rows[0].watch.is_none() && problem.rows[0].work_per_sm_cycle.is_none());
    let mut table = String::new();
    problem.table(&mut table);
    let line = table
        .lines()
        .filter(|l| l.starts_with("block_pipeline_2"))
        .nth(1)
        .unwrap_or_else(|| panic!("no clocks line in {table}"));
    // 3 samples, mean 1700 MHz, two of three capped, 665 W, 66.5 J over 19 launches.
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        fields[1..],
        [
            "3",
            "1700",
            "(1600-1800)",
            "67%",
            "0%",
            "665",
            "3.500",
            "7.30e-5"
        ],
        "{table}"
    );
    assert!(table.contains("steps/SM-clk"), "{table}");
    assert_eq!(
        [3030.3, 2.5, 0.0123].map(readable),
        ["3030", "2.50", "1.23e-2"]
    );
    let json = serde_json::to_value(row).unwrap();
    assert_eq!(json["watch"]["launches"], 19);
    assert_eq!(json["watch"]["sm_mhz_mean"], 1700.0);
    assert_eq!(json["watch"]["energy_j"], 66.5);
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
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/runs");
    let dir = scratch_dir("every_saved_report");
    let (mut loaded, mut plotted) = (0, 0);
    for entry in std::fs::read_dir(&docs).unwrap() {
        let path = entry.unwrap().path();
        // `host run --json` reports; the peers' outputs (SDPA, sanitizer tables) are not.
        let is_report = std::fs::read_to_string(&path)
            .is_ok_and(|text| text.contains("\"problems\"") && text.contains("\"timing\""));
        if path.extension().is_some_and(|e| e == "json") && is_report {
            let report =
                SavedReport::read(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            // Workloads without a baseline (attention: SDPA runs apart) have nothing to plot.
            if !report.figures().is_empty() {
                report
                    .write_svg(&dir.join("plot.svg"))
                    .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                plotted += 1;
            }
            loaded += 1;
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
    assert!(
        loaded >= 40 && plotted >= 30,
        "{loaded} reports, {plotted} plotted, in {}",
        docs.display()
    );
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
