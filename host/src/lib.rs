//! The host side of the async-copy study: loads the `gpu` crate's PTX with `cust`, launches
//! every kernel, checks it against a CPU reference, times it, and shows what it lowers to.
//!
//! - [`device`]: the GPU, arch selection, the loaded module.
//! - [`study`]: the experiment registry, inputs, reference, launch and timing.
//! - [`copy_tests`]: the library's test kernels.
//! - [`check`]: comparing outputs (poison, NaN, tolerance).
//! - [`inspect`]: PTX / SASS per kernel.
//! - [`report`]: table, JSON, SVG.
//! - [`cli`]: the command line of the `host` binary.

pub mod check;
pub mod cli;
pub mod copy_tests;
pub mod device;
pub mod inspect;
pub mod ptx;
pub mod report;
pub mod study;
