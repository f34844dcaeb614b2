//! Command-line interface: `run` (default), `list`, `inspect`, `info`.

use crate::study;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use xtask::Arch;

/// Reproduces the CUDA async-copy study in Rust: C(32x32) = A(32xK) * B(Kx32) on one block,
/// the synchronous baseline against every async-copy completion style.
#[derive(Parser, Debug)]
#[command(name = "host", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug, PartialEq)]
pub enum Command {
    /// Run the experiments: verify each against an f64 reference and time it (the default).
    Run(RunArgs),
    /// List the experiments.
    List,
    /// Show what each kernel lowers to: PTX and (with NVIDIA's tools) SASS. Needs no GPU.
    Inspect(InspectArgs),
    /// Describe the GPU and whether it can run the kernels.
    Info,
    /// Check every library abstraction on the GPU: each test kernel streams random data
    /// through shared memory, and the barrier operations are compared with their spec.
    Selftest(SelftestArgs),
}

/// Arguments of `selftest`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct SelftestArgs {
    /// Floats each test kernel copies (whole-tile kernels round it down to a multiple of 256;
    /// the zero-fill kernels take it as is).
    #[arg(long, default_value_t = 20_000, value_parser = parse_floats)]
    pub n: u32,
    /// Only these test kernels (see `host inspect --all`).
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pub only: Vec<String>,
    /// Load this PTX instead of the GPU's own (sm_80 PTX runs on sm_90 GPUs too).
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    pub ptx: Option<Arch>,
}

/// Arguments of `run`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct RunArgs {
    /// Run only these experiments (see `host list`); the baseline always runs too, for the
    /// speedup column.
    #[arg(long, num_args = 1.., value_name = "NAME", value_parser = parse_experiment)]
    pub only: Vec<String>,
    /// K: the columns of A and rows of B (any value from 1 to 4194304).
    #[arg(long, default_value_t = 65536, value_parser = parse_k)]
    pub k: u32,
    /// Timed launches per experiment; the median is reported.
    #[arg(long, default_value_t = 20, value_parser = parse_reps)]
    pub reps: u32,
    /// Untimed launches before timing, the first of which is checked (at least 1).
    #[arg(long, default_value_t = 3, value_parser = parse_warmup)]
    pub warmup: u32,
    /// Write every result, with the device, date and parameters, to this JSON file.
    #[arg(long, value_name = "FILE", value_parser = parse_output)]
    pub json: Option<PathBuf>,
    /// Draw time and speedup per experiment into this SVG file.
    #[arg(long, value_name = "FILE.svg", value_parser = parse_svg)]
    pub plot: Option<PathBuf>,
    /// Seed of the random inputs (default: a fresh one each run, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Load this PTX instead of the GPU's own (sm_80 PTX runs on sm_90 GPUs too).
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    pub ptx: Option<Arch>,
}

impl Default for RunArgs {
    fn default() -> Self {
        RunArgs {
            only: Vec::new(),
            k: 65536,
            reps: 20,
            warmup: 3,
            json: None,
            plot: None,
            seed: None,
            ptx: None,
        }
    }
}

/// Arguments of `inspect`.
#[derive(Args, Debug, Clone, PartialEq)]
pub struct InspectArgs {
    /// Which PTX to show: sm_80 or sm_90.
    #[arg(long, default_value = "sm_90", value_parser = parse_arch)]
    pub arch: Arch,
    /// Only these kernels (study experiments or library test kernels).
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pub only: Vec<String>,
    /// Also show the library's test kernels, not just the study's.
    #[arg(long)]
    pub all: bool,
}

fn parse_experiment(name: &str) -> Result<String, String> {
    study::select(&[name.to_string()])
        .map(|_| name.to_string())
        .map_err(|e| e.to_string())
}

fn parse_k(text: &str) -> Result<u32, String> {
    let k: u32 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number from 1 to {}", study::MAX_K))?;
    study::validate_k(k).map_err(|e| e.to_string())
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

fn parse_floats(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=1 << 28).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}` is not a count of floats from 1 to {}",
            1u32 << 28
        )),
    }
}

fn parse_arch(text: &str) -> Result<Arch, String> {
    Arch::from_name(text).ok_or_else(|| format!("unknown arch `{text}`: expected sm_80 or sm_90"))
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
        assert_eq!(
            (args.k, args.reps, args.warmup, args.seed),
            (4099, 5, 1, Some(42))
        );
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        assert!(error(&["run", "--k", "0"]).contains("K must be at least 1"));
        assert!(error(&["run", "--k=-3"]).contains("not a whole number"));
        assert!(error(&["run", "--k", "many"]).contains("not a whole number"));
        assert!(error(&["run", "--k", "4194305"]).contains("too large"));
        assert!(error(&["run", "--reps", "0"]).contains("at least one timed launch"));
        assert!(error(&["run", "--warmup", "0"]).contains("warm-up"));
        let unknown = error(&["run", "--only", "pingpong"]);
        assert!(
            unknown.contains("unknown experiment `pingpong`"),
            "{unknown}"
        );
        assert!(error(&["run", "--plot", "out.png"]).contains(".svg"));
        assert!(error(&["run", "--json", "/no/such/dir/r.json"]).contains("does not exist"));
        assert!(error(&["inspect", "--arch", "sm_75"]).contains("sm_80 or sm_90"));
        let kind = parse(&["frobnicate"]).unwrap_err().kind();
        assert_eq!(kind, ErrorKind::InvalidSubcommand);
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
        assert_eq!(args.n, 300);
        assert!(error(&["selftest", "--n", "0"]).contains("count of floats"));
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        <Cli as CommandFactory>::command().debug_assert();
    }
}
