//! The host side: loads the `gpu` crate's PTX, launches every workload's kernels, checks them
//! against references, times them, and shows what they lower to.
//!
//! - [`gpu`]: the GPU, arch selection, memory, the one launch path, timing.
//! - [`experiment`]: what a workload is made of, and [`experiment::measure`], which runs,
//!   checks and times any experiment.
//! - [`registry`]: every workload behind one face; `--only` resolution.
//! - [`workloads`]: one module per workload (the study, the GEMM, the streaming copy, the
//!   library's self-test).
//! - [`check`]: comparing outputs (poison, NaN, tolerance, exact).
//! - [`report`]: table, JSON, SVG.
//! - [`inspect`]: PTX / SASS per kernel.
//! - [`tensor_map`]: tensor maps for the copy engine's tensor copies (sm_90).
//! - [`interrupt`]: Ctrl-C at launch boundaries.
//! - [`device_code`]: the embedded PTX.
//! - [`cli`]: the command line of the `host` binary.

pub mod check;
pub mod cli;
pub mod device_code;
pub mod experiment;
pub mod gpu;
pub mod inspect;
pub mod interrupt;
pub mod registry;
pub mod report;
pub mod tensor_map;
pub mod workloads;
