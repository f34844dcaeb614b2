//! The criterion benchmarks live in `benches/experiments.rs`: `cargo bench` at the workspace
//! root runs them.
