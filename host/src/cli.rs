//! Command-line interface: `run` (default), `list`, `inspect`, `info`, `selftest`, `plot`.
//!
//! Arguments are checked in two steps: clap checks each value on its own (exit 2), then
//! [`RunArgs::resolve`] checks what depends on the workload — sizes, experiment names — once,
//! into a [`RunRequest`] that carries the registry's objects rather than names.

use crate::registry::{self, AnyWorkload, Plan, Selection};
use clap::{Args, Parser, Subcommand, ValueEnum};
use harness::experiment::{Timing, Values};
use ptx_builder::Arch;
use std::path::PathBuf;
use std::time::Duration;

/// Asynchronous memory copy on NVIDIA GPUs, in Rust: runs the workloads built on the library
/// (the 32x32xK study by default), checks every result against a reference, and times it.
#[derive(Parser, Debug)]
#[command(name = "host", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug, PartialEq)]
pub enum Command {
    /// Run a workload's experiments: verify each against its reference and time it (the
    /// default: the study at K = 65536).
    Run(RunArgs),
    /// List the workloads and their experiments.
    List,
    /// Show what each kernel lowers to: PTX and (with NVIDIA's tools) SASS. Needs no GPU.
    Inspect(InspectArgs),
    /// Describe the GPU and whether it can run the kernels.
    Info,
    /// Check every library abstraction on the GPU: each test kernel streams random data
    /// through shared memory, and the barrier operations are compared with their spec.
    Selftest(SelftestArgs),
    /// Draw a saved `--json` report as `run --plot` does, without a GPU: per workload, each
    /// style's fastest experiment against the baseline, size by size.
    Plot(PlotArgs),
}

/// Arguments of `plot`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct PlotArgs {
    /// The report to draw, as `host run --json` wrote it.
    #[arg(long, value_name = "FILE")]
    pub json: PathBuf,
    /// The SVG file to write.
    #[arg(long, value_name = "FILE.svg", value_parser = parse_svg)]
    pub plot: PathBuf,
}

/// Arguments of `selftest`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct SelftestArgs {
    /// Floats each test kernel copies (whole-tile kernels round it down to a multiple of 256;
    /// the zero-fill kernels take it as is).
    #[arg(long, default_value = "20000")]
    pub n: String,
    /// Only these test kernels (see `host list`).
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pub only: Vec<String>,
    /// Load this PTX instead of the GPU's own (sm_80 PTX runs on sm_90 GPUs too).
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    pub ptx: Option<Arch>,
    /// Instead, launch a kernel that waits forever on purpose (an mbarrier phase one arrival
    /// short) and show how the watchdog reports it (exit status 1).
    #[arg(long)]
    pub hang: bool,
    /// Instead, launch a cluster of two blocks that deadlocks on purpose (one waits at the
    /// cluster barrier for the other, which waits for the first) and show how the watchdog
    /// reports it (exit status 1; sm_90).
    #[arg(long, conflicts_with = "hang")]
    pub hang_cluster: bool,
    /// How long one launch may run before it is reported as hung (default: 10 s plus the
    /// launch's work; with --hang or --hang-cluster, 2 s).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
}

/// The inputs `--values` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ValuesArg {
    /// Random floats.
    Random,
    /// Small integers: results are exact and checked bit for bit.
    SmallIntegers,
}

impl From<ValuesArg> for Values {
    fn from(v: ValuesArg) -> Values {
        match v {
            ValuesArg::Random => Values::Random,
            ValuesArg::SmallIntegers => Values::SmallIntegers,
        }
    }
}

/// Arguments of `run`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct RunArgs {
    /// The workload to run (see `host list`).
    #[arg(long, default_value = "study")]
    pub workload: String,
    /// Problem sizes, each run in turn; what a size is depends on the workload (the study:
    /// K, from 1 to 4194304). Default: the workload's own.
    #[arg(long, alias = "k", num_args = 1.., value_name = "SIZE")]
    pub size: Vec<String>,
    /// Run only these experiments (see `host list`); the workload's baseline always runs
    /// too, for the comparison column.
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pub only: Vec<String>,
    /// Timed launches per experiment; the median is reported.
    #[arg(long, default_value_t = 20, value_parser = parse_reps)]
    pub reps: u32,
    /// Untimed launches before timing, the first of which is checked (at least 1).
    #[arg(long, default_value_t = 3, value_parser = parse_warmup)]
    pub warmup: u32,
    /// Inputs: random floats, or small integers (exact results, checked bit for bit).
    #[arg(long, value_enum, default_value = "random")]
    pub values: ValuesArg,
    /// Write every result, with the device, date and parameters, to this JSON file.
    #[arg(long, value_name = "FILE", value_parser = parse_output)]
    pub json: Option<PathBuf>,
    /// Draw, per workload, each style's fastest experiment against the baseline (% or
    /// speed-up, and rate) at every size into this SVG file (as `host plot` does).
    #[arg(long, value_name = "FILE.svg", value_parser = parse_svg)]
    pub plot: Option<PathBuf>,
    /// Seed of the random inputs (default: a fresh one each run, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Load this PTX instead of the GPU's own (sm_80 PTX runs on sm_90 GPUs too).
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    pub ptx: Option<Arch>,
    /// How long one launch may run before it is reported as hung (e.g. 30s, 2m; default:
    /// 10 s plus the launch's work at a pessimistic rate).
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
    /// Read the GPU's SM clock, clock event reasons (power cap, thermal) and energy through
    /// NVML while each experiment's timed launches run, sampling every INTERVAL (default
    /// 1ms, at least 500us): a table per size with the mean clock, the power, the energy per
    /// launch and the work per SM cycle (the rate with the clock divided out).
    #[arg(long, value_name = "INTERVAL", num_args = 0..=1, default_missing_value = "1ms",
          value_parser = parse_interval)]
    pub monitor: Option<Duration>,
}

impl Default for RunArgs {
    fn default() -> Self {
        RunArgs {
            workload: "study".into(),
            size: Vec::new(),
            only: Vec::new(),
            reps: 20,
            warmup: 3,
            values: ValuesArg::Random,
            json: None,
            plot: None,
            seed: None,
            ptx: None,
            timeout: None,
            monitor: None,
        }
    }
}

/// A run, resolved against the registry.
pub struct RunRequest {
    pub workload: &'static dyn AnyWorkload,
    pub plan: Box<dyn Plan>,
    pub selection: Selection,
    pub timing: Timing,
}

impl RunArgs {
    /// Checks the workload, its sizes and the experiment names, once.
    pub fn resolve(&self) -> Result<RunRequest, String> {
        let workload = registry::find(&self.workload)?;
        let plan = workload.plan(&self.size).map_err(|e| {
            format!(
                "{e} (--size for {}: {})",
                workload.name(),
                workload.size_syntax()
            )
        })?;
        let selection = Selection::resolve(workload, &self.only)?;
        Ok(RunRequest {
            workload,
            plan,
            selection,
            timing: Timing {
                warmup: self.warmup,
                reps: self.reps,
                limit: self.timeout,
            },
        })
    }
}

impl SelftestArgs {
    /// The self-test as a check-only run of the `selftest` workload.
    pub fn resolve(&self) -> Result<RunRequest, String> {
        RunArgs {
            workload: "selftest".into(),
            size: vec![self.n.clone()],
            only: self.only.clone(),
            ptx: self.ptx,
            ..RunArgs::default()
        }
        .resolve()
        .map(|request| RunRequest {
            timing: Timing {
                limit: self.timeout,
                ..Timing::CHECK_ONLY
            },
            ..request
        })
    }
}

/// Arguments of `inspect`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct InspectArgs {
    /// Which PTX to show: sm_80, sm_90 or sm_90a (the tensor-core kernels).
    #[arg(long, default_value = "sm_90", value_parser = parse_arch)]
    pub arch: Arch,
    /// The workload whose kernels to show (default: the study).
    #[arg(long, default_value = "study")]
    pub workload: String,
    /// Only these kernels (of any workload).
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pub only: Vec<String>,
    /// Every kernel in the PTX.
    #[arg(long)]
    pub all: bool,
}

fn parse_reps(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err("at least one timed launch is needed".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a positive whole number")),
    }
}

fn parse_warmup(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err("at least one warm-up launch is needed: the first launch is the one checked on poisoned output".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a positive whole number")),
    }
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if d >= Duration::from_millis(10) => Ok(d),
        Ok(_) => Err("the timeout must be at least 10ms".into()),
        Err(e) => Err(format!("`{text}` is not a duration like 30s or 2m: {e}")),
    }
}

fn parse_interval(text: &str) -> Result<Duration, String> {
    let min = gpu_runtime::monitor::MIN_INTERVAL;
    match humantime::parse_duration(text) {
        Ok(d) if d >= min => Ok(d),
        Ok(_) => Err(format!(
            "the sampling interval must be at least {}",
            humantime::format_duration(min)
        )),
        Err(e) => Err(format!("`{text}` is not a duration like 1ms or 5ms: {e}")),
    }
}

fn parse_arch(text: &str) -> Result<Arch, String> {
    Arch::from_name(text)
        .ok_or_else(|| format!("unknown arch `{text}`: expected sm_80, sm_90 or sm_90a"))
}

/// A file to write: its folder must exist (so a typo fails before a long run, not after).
fn parse_output(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    match parent {
        Some(dir) if !dir.is_dir() => Err(format!("folder {} does not exist", dir.display())),
        _ => Ok(path),
    }
}

fn parse_svg(text: &str) -> Result<PathBuf, String> {
    let path = parse_output(text)?;
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
    {
        Ok(path)
    } else {
        Err("the plot is an SVG: give a file name ending in .svg".into())
    }
}

impl Cli {
    /// The command to run: `run` with defaults when none is given.
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Run(RunArgs::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    fn parse(args: &[&str]) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("host").chain(args.iter().copied()))
            .map(Cli::into_command)
    }

    fn error(args: &[&str]) -> String {
        parse(args).unwrap_err().to_string()
    }

    fn resolve_error(args: &[&str]) -> String {
        let Command::Run(run) = parse(args).unwrap() else {
            panic!("not run");
        };
        run.resolve().err().expect("an error")
    }

    #[test]
    fn default_is_run_with_defaults() {
        assert_eq!(parse(&[]).unwrap(), Command::Run(RunArgs::default()));
        assert_eq!(parse(&["run"]).unwrap(), Command::Run(RunArgs::default()));
    }

    #[test]
    fn run_options() {
        let Command::Run(args) = parse(&[
            "run",
            "--only",
            "block_pipeline_2",
            "thread_pipeline_2",
            "--k",
            "4099",
            "--reps",
            "5",
            "--warmup",
            "1",
            "--seed",
            "42",
        ])
        .unwrap() else {
            panic!("not run");
        };
        assert_eq!(args.only, ["block_pipeline_2", "thread_pipeline_2"]);
        assert_eq!(args.size, ["4099"]);
        assert_eq!((args.reps, args.warmup, args.seed), (5, 1, Some(42)));
        let request = args.resolve().unwrap();
        assert_eq!(request.workload.name(), "study");
        assert_eq!(request.plan.sizes(), ["K = 4099"]);
        assert_eq!(
            request.timing,
            Timing {
                warmup: 1,
                reps: 5,
                limit: None
            }
        );
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        assert!(resolve_error(&["run", "--k", "0"]).contains("K must be at least 1"));
        assert!(resolve_error(&["run", "--k=-3"]).contains("not a whole number"));
        assert!(resolve_error(&["run", "--k", "many"]).contains("not a whole number"));
        assert!(resolve_error(&["run", "--k", "4194305"]).contains("too large"));
        assert!(resolve_error(&["run", "--workload", "nope"]).contains("unknown workload `nope`"));
        let unknown = resolve_error(&["run", "--only", "pingpong"]);
        assert!(
            unknown.contains("unknown experiment `pingpong`"),
            "{unknown}"
        );
        assert!(error(&["run", "--reps", "0"]).contains("at least one timed launch"));
        assert!(error(&["run", "--warmup", "0"]).contains("warm-up"));
        assert!(error(&["run", "--plot", "out.png"]).contains(".svg"));
        assert!(error(&["run", "--json", "/no/such/dir/r.json"]).contains("does not exist"));
        assert!(error(&["inspect", "--arch", "sm_75"]).contains("sm_80, sm_90 or sm_90a"));
        assert!(error(&["run", "--timeout", "soon"]).contains("not a duration"));
        assert!(error(&["run", "--timeout", "1ms"]).contains("at least 10ms"));
        assert!(error(&["run", "--monitor", "100us"]).contains("at least 500us"));
        assert!(error(&["run", "--monitor", "often"]).contains("not a duration"));
        let kind = parse(&["frobnicate"]).unwrap_err().kind();
        assert_eq!(kind, ErrorKind::InvalidSubcommand);
    }

    #[test]
    fn monitor_samples_every_millisecond_unless_told() {
        let monitor = |args: &[&str]| match parse(args).unwrap() {
            Command::Run(run) => run.monitor,
            _ => panic!("not run"),
        };
        assert_eq!(monitor(&["run"]), None);
        assert_eq!(
            monitor(&["run", "--monitor", "--reps", "5"]),
            Some(Duration::from_millis(1))
        );
        assert_eq!(
            monitor(&["run", "--monitor", "5ms"]),
            Some(Duration::from_millis(5))
        );
    }

    #[test]
    fn other_commands() {
        assert_eq!(parse(&["list"]).unwrap(), Command::List);
        assert_eq!(parse(&["info"]).unwrap(), Command::Info);
        let Command::Inspect(args) = parse(&["inspect", "--arch", "sm_80", "--all"]).unwrap()
        else {
            panic!("not inspect");
        };
        assert_eq!(args.arch, Arch::Sm80);
        assert!(args.all);
        let Command::Selftest(args) = parse(&["selftest", "--n", "300"]).unwrap() else {
            panic!("not selftest");
        };
        let request = args.resolve().unwrap();
        assert_eq!(request.workload.name(), "selftest");
        assert_eq!(request.plan.sizes(), ["n = 300"]);
        assert_eq!(request.timing, Timing::CHECK_ONLY);
        let Command::Selftest(args) = parse(&["selftest", "--n", "0"]).unwrap() else {
            panic!("not selftest");
        };
        assert!(args.resolve().err().unwrap().contains("count of floats"));
        let Command::Plot(args) = parse(&["plot", "--json", "r.json", "--plot", "r.svg"]).unwrap()
        else {
            panic!("not plot");
        };
        assert_eq!(args.json, PathBuf::from("r.json"));
        assert_eq!(args.plot, PathBuf::from("r.svg"));
        assert!(error(&["plot", "--json", "r.json", "--plot", "r.png"]).contains(".svg"));
        assert!(error(&["plot", "--plot", "r.svg"]).contains("--json"));
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        <Cli as CommandFactory>::command().debug_assert();
    }
}
