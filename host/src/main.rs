//! `host`: run a workload (`host run`, the default: the study), `host list`, `host inspect`,
//! `host info`, `host selftest`, `host plot` (a saved report's SVG).
//!
//! Errors (no GPU, no driver, a failed launch, a bad file) end the program with one line on
//! stderr and exit status 1; a result that fails verification also exits with 1. Bad
//! arguments exit with 2.

use anyhow::{Context, Result};
use clap::Parser;
use gpu_runtime::{Gpu, GpuError};
use harness::experiment::{Inputs, Values, fresh_seed};
use host::cli::{Cli, Command, InspectArgs, PlotArgs, RunArgs, RunRequest, SelftestArgs};
use host::registry::{self, RunOutcome};
use host::report::{RunReport, SavedReport};
use indicatif::{ProgressBar, ProgressStyle};
use ptx_builder::Arch;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    // A panic is a bug; still, the user gets one line rather than a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let message = info.to_string().replace('\n', " ");
        eprintln!("error: internal error: {message}");
    }));
    harness::interrupt::install();
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let result = match Cli::parse().into_command() {
        Command::Run(args) => run(args, command_line),
        Command::List => list(),
        Command::Inspect(args) => inspect(args),
        Command::Info => info(),
        Command::Selftest(args) => selftest(args),
        Command::Plot(args) => plot(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", format!("{err:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

/// A usage error found after parsing: one line, exit status 2 (as clap's own).
fn usage_error(message: String) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

/// Runs `request` on the GPU with a progress bar.
fn execute(
    request: &RunRequest,
    ptx: Option<Arch>,
    monitor: Option<Duration>,
    inputs: Inputs,
) -> Result<(Gpu, RunOutcome)> {
    let mut gpu = host::device_code::open_gpu(ptx)?;
    if let Some(interval) = monitor {
        gpu.enable_monitor(interval)?;
    }
    eprintln!(
        "{} ({}): {} at {}, seed {}",
        gpu.info().name,
        gpu.info().code_label(),
        request.workload.name(),
        request.plan.sizes().join(", "),
        inputs.seed
    );
    let launches = request.plan.launches(&request.selection, request.timing);
    let progress = ProgressBar::new(launches).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} launches  {msg}")
            .expect("a valid template"),
    );
    let results = request.plan.run(
        &gpu,
        &request.selection,
        inputs,
        request.timing,
        &mut |name| {
            progress.set_message(name.to_string());
            progress.inc(1);
        },
    )?;
    progress.finish_and_clear();
    Ok((gpu, results))
}

fn run(args: RunArgs, command_line: String) -> Result<ExitCode> {
    let request = match args.resolve() {
        Ok(request) => request,
        Err(message) => return Ok(usage_error(message)),
    };
    let inputs = Inputs {
        seed: args.seed.unwrap_or_else(fresh_seed),
        values: args.values.into(),
    };
    let (gpu, outcome) = execute(&request, args.ptx, args.monitor, inputs)?;
    let report = RunReport::new(
        gpu.info().clone(),
        command_line,
        inputs,
        request.timing,
        &outcome,
    );
    print!("{}", report.table());
    if let Some(path) = &args.json {
        report.write_json(path)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.plot {
        report.write_svg(path)?;
        eprintln!("wrote {}", path.display());
    }
    let failed = report.failed();
    if !failed.is_empty() {
        eprintln!("error: verification failed: {}", failed.join(", "));
        return Ok(ExitCode::FAILURE);
    }
    if let (false, Some(why)) = (outcome.interrupted, report.nothing_verified()) {
        eprintln!("error: {why}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(finished(&outcome))
}

/// Success, or the Ctrl-C status after saying how far the run got.
fn finished(outcome: &RunOutcome) -> ExitCode {
    if outcome.interrupted {
        let done: usize = outcome.results.iter().map(|p| p.measurements.len()).sum();
        eprintln!("interrupted: {done} experiment(s) finished; the results above are theirs");
        ExitCode::from(harness::interrupt::EXIT_STATUS)
    } else {
        ExitCode::SUCCESS
    }
}

/// Draws a saved report: needs no GPU.
fn plot(args: PlotArgs) -> Result<ExitCode> {
    let report = SavedReport::read(&args.json)?;
    report
        .write_svg(&args.plot)
        .with_context(|| format!("plotting {}", args.json.display()))?;
    eprintln!("wrote {}", args.plot.display());
    Ok(ExitCode::SUCCESS)
}

fn list() -> Result<ExitCode> {
    for workload in registry::WORKLOADS {
        println!("{}: {}", workload.name(), workload.summary());
        println!("  --size: {}", workload.size_syntax());
        println!(
            "  {:<26} {:<18} {:>6} {:>7} {:>9}  {:<18} what",
            "experiment", "style", "stages", "threads", "shared B", "raw counterpart"
        );
        let dash = |x: Option<u32>| x.map_or("-".to_string(), |x| x.to_string());
        for e in workload.experiments() {
            println!(
                "  {:<26} {:<18} {:>6} {:>7} {:>9}  {:<18} {}",
                e.name(),
                e.style(),
                dash(e.stages()),
                dash(e.threads()),
                dash(e.shared_bytes()),
                e.counterpart().map_or("-", |c| c.name()),
                e.summary()
            );
        }
        println!();
    }
    Ok(ExitCode::SUCCESS)
}

fn inspect(args: InspectArgs) -> Result<ExitCode> {
    let workload = match registry::find(&args.workload) {
        Ok(w) => w,
        Err(message) => return Ok(usage_error(message)),
    };
    let inspection = host::inspect::inspect(args.arch)?;
    for name in &args.only {
        if inspection.kernel(name).is_none() {
            let known: Vec<&str> = inspection.kernels.keys().map(String::as_str).collect();
            anyhow::bail!(
                "no kernel `{name}` in the PTX; kernels: {}",
                known.join(", ")
            );
        }
    }
    let names: Vec<&str> = if !args.only.is_empty() {
        args.only.iter().map(String::as_str).collect()
    } else if args.all {
        inspection.kernels.keys().map(String::as_str).collect()
    } else {
        workload
            .experiments()
            .into_iter()
            .flat_map(|e| e.entry_points())
            .chain(workload.helper_kernels().iter().copied())
            .collect()
    };
    print!("{}", host::inspect::render(&inspection, &names));
    Ok(ExitCode::SUCCESS)
}

fn info() -> Result<ExitCode> {
    println!("this binary carries: {}", host::device_code::carried());
    match host::device_code::open_gpu(None) {
        Ok(mut gpu) => {
            let i = gpu.info();
            println!("GPU 0: {}", i.name);
            println!(
                "  compute capability {}.{}, {} SMs, {} MHz, {:.1} GiB, {} KiB shared memory per \
                 block, driver {}",
                i.compute_capability.0,
                i.compute_capability.1,
                i.multiprocessors,
                i.clock_mhz,
                i.memory_gib,
                i.max_shared_bytes_per_block / 1024,
                i.driver_version
            );
            println!(
                "  qualifies: yes, cp.async and mbarrier need sm_80+; runs the {}{}",
                i.code_label(),
                if i.specific.is_some() {
                    " (mbarrier.try_wait; wgmma and setmaxnreg from sm_90a)"
                } else if i.arch == Arch::Sm90 {
                    " (mbarrier.try_wait)"
                } else {
                    " (mbarrier.test_wait loops)"
                }
            );
            match gpu.enable_monitor(gpu_runtime::monitor::MIN_INTERVAL) {
                Ok(()) => {
                    let l = gpu.monitor().map(|m| m.limits()).unwrap_or_default();
                    let mhz = |x: Option<u32>| x.map_or("?".to_string(), |x| format!("{x} MHz"));
                    println!(
                        "  NVML (run --monitor): SM clock {} now, {} at most; power limit {}",
                        mhz(l.sm_mhz_now),
                        mhz(l.sm_mhz_max),
                        l.power_limit_w
                            .map_or("?".to_string(), |w| format!("{w:.0} W"))
                    );
                }
                Err(why) => println!("  NVML (run --monitor): unavailable, {why}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(err @ GpuError::Unsupported { .. }) => {
            println!("qualifies: no, {err}");
            Ok(ExitCode::FAILURE)
        }
        Err(err) => Err(err.into()),
    }
}

fn selftest(args: SelftestArgs) -> Result<ExitCode> {
    if args.hang {
        let gpu = host::device_code::open_gpu(args.ptx)?;
        let limit = args.timeout.unwrap_or(Duration::from_secs(2));
        workloads::selftest::host::run_hang(&gpu, limit)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.hang_cluster {
        let gpu = host::device_code::open_gpu(args.ptx)?;
        let limit = args.timeout.unwrap_or(Duration::from_secs(2));
        workloads::dsmem::host::run_cluster_hang(&gpu, limit)?;
        return Ok(ExitCode::SUCCESS);
    }
    let request = match args.resolve() {
        Ok(request) => request,
        Err(message) => return Ok(usage_error(message)),
    };
    let inputs = Inputs {
        seed: fresh_seed(),
        values: Values::Random,
    };
    let (gpu, outcome) = execute(&request, args.ptx, None, inputs)?;
    println!(
        "{} ({}): library self-test, seed {}",
        gpu.info().name,
        gpu.info().code_label(),
        inputs.seed
    );
    let mut failed = Vec::new();
    for problem in &outcome.results {
        for m in &problem.measurements {
            println!(
                "{:<26} {:<12} {}",
                m.experiment.name(),
                problem.size,
                m.check_summary()
            );
            if m.failed() {
                failed.push(m.experiment.name());
            }
        }
    }
    let verified = outcome
        .results
        .iter()
        .flat_map(|p| &p.measurements)
        .any(|m| m.passed());
    if !failed.is_empty() {
        eprintln!("error: self-test failed: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    } else if !verified && !outcome.interrupted {
        eprintln!("error: nothing was verified: every self-test kernel was unavailable here");
        Ok(ExitCode::FAILURE)
    } else {
        Ok(finished(&outcome))
    }
}
