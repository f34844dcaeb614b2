//! Benchmarks live in `benches/study.rs`; see `cargo bench -p benches`.
