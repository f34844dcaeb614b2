//! The harness every workload plugs into, below the workloads and above the runtime:
//!
//! - [`experiment`]: what a workload is made of ([`experiment::Workload`],
//!   [`experiment::Experiment`], [`experiment::Problem`]) and [`experiment::measure`], which
//!   poisons, launches, checks and times any experiment of any workload.
//! - [`check`]: comparing outputs with references (poison, NaN, tolerance, exact).
//! - [`interrupt`]: Ctrl-C at launch boundaries.
//!
//! A workload (the `workloads` crate, one folder each) implements the traits; the host
//! program's registry lists the workloads and walks them.

pub mod check;
pub mod experiment;
pub mod interrupt;
