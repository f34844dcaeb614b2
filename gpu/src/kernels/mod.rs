//! Kernel bodies. The entry points (`#[unsafe(no_mangle)] extern "ptx-kernel"`) are generated
//! next to their tables in [`crate::study`] and [`crate::copy_test`], so that the host and the
//! device share one list of names and shapes.

pub mod copy_test;
pub mod study;
