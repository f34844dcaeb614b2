//! What this project runs on the `gpu` library, apart from it: one folder per workload, each
//! holding its shapes and kernel declarations (plain Rust, built for both sides), its kernel
//! bodies (`kernels.rs`, device only) and its host half (`host.rs`: sizes, inputs, reference,
//! launch, check — host only). The device build of this crate is the PTX the host embeds;
//! the host build is what the host program's registry lists.
//!
//! | workload | what it is |
//! |---|---|
//! | [`study`] | the 32x32xK one-warp study: every completion style against a synchronous baseline |
//! | [`selftest`] | the library's self-test: every abstraction streams random data, checked exactly |
//! | [`gemm`] | a tiled FP32 GEMM (any size) in every completion style, against cuBLAS |
//! | [`gemm16`] | the 16-bit (BF16 and FP16) tensor-core GEMM of `gpu-kernels` (wgmma + TMA, sm_90a, any size), against cuBLAS |
//! | [`dsmem`] | distributed shared memory (sm_90 clusters): latency and bandwidth by cluster size and rank distance, beside shared memory, L2 and DRAM |
//! | [`stream`] | a bandwidth-bound copy through shared memory (plain, `cp.async`, bulk), against the driver's copy |

#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]
// The device modules exist only in the nvptx64 build, so a host `cargo doc` cannot resolve
// links to them.
#![cfg_attr(not(target_arch = "nvptx64"), allow(rustdoc::broken_intra_doc_links))]

pub mod attention;
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub mod dsmem;
pub mod gemm16;
// The sm_90a module holds only what needs sm_90a (the tensor-core GEMM, the self-test's
// register-tile kernel): the GPU loads it beside the sm_90 module, which holds everything
// else, so the rest is not built twice.
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub mod gemm;
// In both: `selftest` itself leaves everything but its register-tile kernel out of sm_90a.
pub mod selftest;
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub mod stream;
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub mod study;
#[cfg(not(all(target_arch = "nvptx64", target_feature = "sm_90a")))]
pub mod verify;

#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90a")))]
use gpu_kernels::Quad;
