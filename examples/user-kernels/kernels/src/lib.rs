//! `scale`: `y = alpha * x` for any `n`, streamed through shared memory with a three-stage
//! `ThreadPipeline` — two tiles in flight while a third is read — with the tail of `x`
//! zero-filled by the copies (`memcpy_async_zfill`). The device side of the example.
//!
//! Launch: any grid of one-dimensional blocks (block `b` takes tiles `b, b + grid, ...`), with
//! [`SHARED_BYTES`] of dynamic shared memory; `x` holds `n` floats and `y` `n` floats.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]

/// Floats per tile (one pipeline stage).
pub const TILE: u32 = 1024;
/// Stages of the pipeline.
pub const STAGES: u32 = 3;
/// Dynamic shared memory a block needs.
pub const SHARED_BYTES: u32 = STAGES * TILE * 4;

gpu::kernel! {
    /// `y[i] = alpha * x[i]` for `i < n`. Declared once for both sides: on the device, the
    /// entry point `scale`; everywhere, `scale: EntryPoint<(*const f32, *mut f32, u32, f32)>`,
    /// which the app resolves and launches with typed arguments.
    ///
    /// # Safety
    /// Blocks of any size with `SHARED_BYTES` of dynamic shared memory; `x` and `y` hold `n`
    /// floats each, 16-byte aligned.
    pub fn scale(x: *const f32, y: *mut f32, n: u32, alpha: f32) {
        // SAFETY: forwarded launch contract.
        unsafe { crate::device::scale(x, y, n, alpha) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::{STAGES, TILE};
    use gpu::group::Block;
    use gpu::memcpy_async::{AlignedSize, cp_async::memcpy_async_zfill};
    use gpu::pipeline::{Consumer, Producer, ThreadPipeline};
    use gpu::ptx;
    use gpu::shared::{Shared, dynamic_shared};

    /// Stage `s`'s buffer.
    fn stage(s: u32) -> Shared<f32> {
        dynamic_shared().add(s * TILE * 4).cast()
    }

    /// The body of [`scale`](super::scale).
    ///
    /// # Safety
    /// `scale`'s launch contract.
    #[inline(always)]
    pub(super) unsafe fn scale(x: *const f32, y: *mut f32, n: u32, alpha: f32) {
        let block = Block::this_block();
        let (rank, threads) = (ptx::thread_idx_x(), ptx::block_dim_x());
        let tiles = n.div_ceil(TILE);
        let (first, step) = (ptx::block_idx_x(), ptx::grid_dim_x());
        let mine = tiles.saturating_sub(first).div_ceil(step);
        let tile_of = |i: u32| first + i * step;

        let mut pipeline = ThreadPipeline::<{ STAGES as usize }>::new();
        let (mut producer, mut consumer) = pipeline.split();
        let mut fill = |i: u32| {
            let s = producer.producer_acquire();
            if i < mine {
                let t = tile_of(i);
                let left = (n - t * TILE).min(TILE) * 4;
                let src = x.wrapping_add((t * TILE) as usize);
                // SAFETY: `left` bytes of x exist from `src` (16-byte aligned: tiles are 4 KiB);
                // the stage is free (fresh, or released after the barrier below).
                unsafe {
                    memcpy_async_zfill(
                        &block,
                        stage(s.index()),
                        src,
                        AlignedSize::<16>::of(TILE * 4),
                        left,
                        &s,
                    )
                };
            }
            // An empty commit when nothing is left keeps the wait count a constant.
            s.producer_commit();
        };
        for i in 0..STAGES - 1 {
            fill(i);
        }
        for i in 0..mine {
            let ready = consumer.consumer_wait();
            // Every thread's copies of this tile are visible.
            ptx::barrier_sync();
            let base = tile_of(i) * TILE;
            let mut e = rank;
            while e < TILE {
                if base + e < n {
                    // SAFETY: the tile landed; base + e < n, inside y.
                    unsafe {
                        let v = stage(ready.index()).add(e).read();
                        y.add((base + e) as usize).write(alpha * v);
                    }
                }
                e += threads;
            }
            ready.consumer_release();
            // Everyone is done with the stage before anyone refills it.
            ptx::barrier_sync();
            fill(i + STAGES - 1);
        }
    }
}
