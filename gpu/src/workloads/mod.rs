//! What this project runs on the library, apart from it: one folder per workload, each
//! holding its shapes and kernel table (plain Rust, also built for the host) and its kernel
//! bodies (device only). Nothing in the library modules refers to a workload.
//!
//! | workload | what it is |
//! |---|---|
//! | [`study`] | the 32x32xK one-warp study: every completion style against a synchronous baseline |
//! | [`selftest`] | the library's self-test: every abstraction streams random data, checked exactly |
//! | [`gemm`] | a tiled FP32 GEMM (any size) in every completion style, against cuBLAS |
//! | [`stream`] | a bandwidth-bound copy through shared memory (plain, `cp.async`, bulk), against the driver's copy |

pub mod gemm;
pub mod selftest;
pub mod stream;
pub mod study;

/// Four floats moved as one 16-byte access (`ld.global.v4.f32` / `st.global.v4.f32`): how the
/// workloads' kernels read and write global memory a `float4` at a time.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Quad([f32; 4]);
