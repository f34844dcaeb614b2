//! `host`: run the study (`host run`, the default), `host list`, `host inspect`, `host info`.
//!
//! Errors (no GPU, no driver, a failed launch, a bad file) end the program with one line on
//! stderr and exit status 1; a result that fails verification also exits with 1. Bad
//! arguments exit with 2 (clap).

use anyhow::Result;
use clap::Parser;
use host::cli::{Cli, Command, InspectArgs, RunArgs, SelftestArgs};
use host::device::{DeviceError, Gpu};
use host::report::RunReport;
use host::study::{self, Inputs, Timing};
use indicatif::{ProgressBar, ProgressStyle};
use std::process::ExitCode;

fn main() -> ExitCode {
    // A panic is a bug; still, the user gets one line rather than a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let message = info.to_string().replace('\n', " ");
        eprintln!("error: internal error: {message}");
    }));
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let result = match Cli::parse().into_command() {
        Command::Run(args) => run(args, command_line),
        Command::List => list(),
        Command::Inspect(args) => inspect(args),
        Command::Info => info(),
        Command::Selftest(args) => selftest(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", format!("{err:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

fn run(args: RunArgs, command_line: String) -> Result<ExitCode> {
    let mut kernels = study::select(&args.only)?;
    if !kernels.iter().any(|k| k.name == study::baseline().name) {
        kernels.insert(0, study::baseline());
    }
    let gpu = Gpu::open_with(args.ptx)?;
    let seed = args.seed.unwrap_or_else(study::fresh_seed);
    let timing = Timing {
        warmup: args.warmup,
        reps: args.reps,
    };
    eprintln!(
        "{}: K = {}, seed {seed}, {} experiments; computing the f64 reference...",
        gpu.info().name,
        args.k,
        kernels.len()
    );
    let inputs = Inputs::random(args.k, seed);
    let reference = inputs.reference();
    let mut matrices = study::upload(&inputs)?;

    let launches = kernels.len() as u64 * (timing.warmup + timing.reps) as u64;
    let progress = ProgressBar::new(launches).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} launches  {msg}")
            .expect("a valid template"),
    );
    let mut measurements = Vec::with_capacity(kernels.len());
    for kernel in kernels {
        progress.set_message(kernel.name);
        let m = study::measure(&gpu, kernel, &mut matrices, &reference, timing, || {
            progress.inc(1)
        })?;
        measurements.push(m);
    }
    progress.finish_and_clear();

    let report = RunReport::new(
        gpu.info().clone(),
        command_line,
        args.k,
        seed,
        timing,
        measurements,
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
    let failed: Vec<&str> = report
        .results
        .iter()
        .filter(|r| !r.measurement.passed())
        .map(|r| r.measurement.name)
        .collect();
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("error: verification failed: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

fn list() -> Result<ExitCode> {
    println!(
        "{:<20} {:<16} {:>6} {:>7} {:>9}  {:<18} what",
        "experiment", "style", "stages", "threads", "shared B", "raw counterpart"
    );
    for k in study::experiments() {
        println!(
            "{:<20} {:<16} {:>6} {:>7} {:>9}  {:<18} {}",
            k.name,
            format!("{:?}", k.style),
            k.stages,
            k.threads(),
            k.shared().bytes,
            study::raw_counterpart(k).map_or("-", |r| r.name),
            k.style.summary()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn inspect(args: InspectArgs) -> Result<ExitCode> {
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
        study::experiments().iter().map(|k| k.name).collect()
    };
    print!("{}", host::inspect::render(&inspection, &names));
    Ok(ExitCode::SUCCESS)
}

fn info() -> Result<ExitCode> {
    match Gpu::open() {
        Ok(gpu) => {
            let i = gpu.info();
            println!("GPU 0: {}", i.name);
            println!(
                "  compute capability {}.{}, {} SMs, {} MHz, {:.1} GiB, driver API {}",
                i.compute_capability.0,
                i.compute_capability.1,
                i.multiprocessors,
                i.clock_mhz,
                i.memory_gib,
                i.driver_version
            );
            println!(
                "  qualifies: yes, cp.async and mbarrier need sm_80+; runs the {} PTX{}",
                i.arch,
                if i.arch == "sm_90" {
                    " (mbarrier.try_wait)"
                } else {
                    " (mbarrier.test_wait loops)"
                }
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(err @ DeviceError::Unsupported { .. }) => {
            println!("qualifies: no, {err}");
            Ok(ExitCode::FAILURE)
        }
        Err(err) => Err(err.into()),
    }
}

fn selftest(args: SelftestArgs) -> Result<ExitCode> {
    use host::copy_tests::{self, BARRIER_OPS_EXPECTED, COPY_TEST_KERNELS};
    for name in &args.only {
        if gpu::copy_test::find(name).is_none() && name != gpu::copy_test::BARRIER_OPS {
            anyhow::bail!("no library test kernel `{name}` (see `host inspect --all`)");
        }
    }
    let wanted = |name: &str| args.only.is_empty() || args.only.iter().any(|n| n == name);
    let gpu = Gpu::open_with(args.ptx)?;
    let seed = study::fresh_seed();
    println!(
        "{} ({} PTX): library self-test, seed {seed}",
        gpu.info().name,
        gpu.info().arch
    );
    let mut failed = Vec::new();
    for kernel in COPY_TEST_KERNELS.iter().filter(|k| wanted(k.name)) {
        let tile = gpu::copy_test::TILE_FLOATS;
        let n = if kernel.accepts_ragged() {
            args.n
        } else {
            (args.n / tile).max(1) * tile
        };
        let src = copy_tests::random_input(n as usize, seed);
        let report = copy_tests::run_and_check(&gpu, kernel, &src)?;
        println!("{:<26} n = {n:<9} {}", kernel.name, report.summary());
        if !report.passed {
            failed.push(kernel.name);
        }
    }
    if wanted(gpu::copy_test::BARRIER_OPS) {
        let observed = copy_tests::run_barrier_ops(&gpu)?;
        let mut ok = true;
        for ((what, expected), got) in BARRIER_OPS_EXPECTED.iter().zip(&observed) {
            if got != expected {
                println!(
                    "{:<26} {what}: got {got}, expected {expected}",
                    "barrier_ops"
                );
                ok = false;
            }
        }
        println!("{:<26} {}", "barrier_ops", if ok { "ok" } else { "FAILED" });
        if !ok {
            failed.push(gpu::copy_test::BARRIER_OPS);
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("error: self-test failed: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}
