//! The host side: loads the `gpu` crate's PTX, launches every workload's kernels, checks them
//! against references, times them, and shows what they lower to.
//!
//! The GPU itself (memory, typed launches, the watchdog, tensor maps, cuBLAS) is the
//! `gpu_runtime` crate's.
//!
//! - [`experiment`]: what a workload is made of, and [`experiment::measure`], which runs,
//!   checks and times any experiment.
//! - [`registry`]: every workload behind one face; `--only` resolution.
//! - [`workloads`]: one module per workload (the study, the GEMM, the streaming copy, the
//!   library's self-test).
//! - [`check`]: comparing outputs (poison, NaN, tolerance, exact).
//! - [`report`]: table, JSON, SVG.
//! - [`inspect`]: PTX / SASS per kernel.
//! - [`interrupt`]: Ctrl-C at launch boundaries.
//! - [`device_code`]: the embedded PTX and cubins, and opening the GPU with them.
//! - [`cli`]: the command line of the `host` binary.

pub mod check;
pub mod cli;
pub mod device_code;
pub mod experiment;
pub mod inspect;
pub mod interrupt;
pub mod registry;
pub mod report;
pub mod workloads;
