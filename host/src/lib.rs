//! The host program (the card's `host`): runs, checks and times every workload's
//! experiments, and shows what they lower to. Three crates below it do the work:
//! `gpu_runtime` (the GPU: memory, typed launches, the watchdog, tensor maps, cuBLAS),
//! `harness` (what a workload is made of, the one measure path, the checks) and `workloads`
//! (one folder per workload, both halves).
//!
//! - [`registry`]: every workload behind one face; `--only` resolution.
//! - [`report`]: table, JSON, SVG.
//! - [`inspect`]: PTX / SASS per kernel.
//! - [`device_code`]: the embedded PTX and cubins, and opening the GPU with them.
//! - [`cli`]: the command line of the `host` binary.

pub mod cli;
pub mod device_code;
pub mod inspect;
pub mod registry;
pub mod report;
