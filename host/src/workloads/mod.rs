//! The host side of each workload: its experiments, problem sizes, inputs, reference, launch
//! and check — one module per folder of `gpu/src/workloads/`, registered in
//! [`crate::registry::WORKLOADS`].

pub mod gemm;
pub mod selftest;
pub mod stream;
pub mod study;
