//! The GEMM's kernel bodies: one generic function per [`GemmStyle`], sharing the tile copy,
//! the per-stage multiply and the epilogue, so the styles differ only in their mainloop.
//!
//! Generic parameters, in order: the thread tile `TM x TN`, the warps `WM x WN` (see
//! [`GemmTile`](super::GemmTile)), the style's own (`STAGES`, and `PRODUCER_WARPS` for warp
//! specialization), `ALIGN`, the bytes per copy (16 or 4), and `INTERIOR`: the block's tiles
//! lie inside the matrices ([`block_is_interior`]; the entry points pick), so its copies and
//! stores need no bound checks.
//!
//! Every body's `# Safety` is the GEMM launch contract: grid [`GemmKernel::grid`], blocks of
//! [`GemmKernel::threads`] threads with [`GemmKernel::layout`] bytes of dynamic shared memory;
//! `a` holds `m * k` floats, `b` `k * n`, `c` `m * n`, each 16-byte aligned;
//! `1 <= m, n, k <= MAX_DIM`; with `ALIGN = 16`, `k` and `n` are multiples of 4; with
//! `INTERIOR`, [`block_is_interior`] holds for the block.
//!
//! The shared pieces: `block_tile` (a block's operands, tile geometry and k-tile copy, and the
//! operations every mainloop is made of) and `fragment` (a thread's fragment: its multiply and
//! its store). A file per style family: `thread_pipeline` (with split K), `block_pipeline` (with
//! warp specialization), `tma` (both tensor-copy styles) and `sync`.
//!
//! [`GemmStyle`]: super::GemmStyle
//! [`GemmKernel::grid`]: super::GemmKernel::grid
//! [`GemmKernel::threads`]: super::GemmKernel::threads
//! [`GemmKernel::layout`]: super::GemmKernel::layout

mod block_pipeline;
mod block_tile;
mod fragment;
mod problem;
mod sync;
mod thread_pipeline;
#[cfg(target_feature = "sm_90")]
mod tma;

pub use block_pipeline::{block_pipeline, warp_specialized};
pub use problem::block_is_interior;
#[cfg(target_feature = "sm_90")]
pub use problem::split_block_is_interior;
pub use sync::sync;
#[cfg(target_feature = "sm_90")]
pub use thread_pipeline::split_k;
pub use thread_pipeline::thread_pipeline;
#[cfg(target_feature = "sm_90")]
pub use tma::{tma, tma_b};
