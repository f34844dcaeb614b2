//! The streaming kernels' table, [`STREAM_KERNELS`] ([`gpu::kernel_table!`], one line per
//! kernel), and each kernel declared once from its line ([`gpu::kernel!`]): an [`EntryPoint`]
//! everywhere, which the kernel's [`StreamKernel`] carries, and on the device its entry point,
//! which runs its style's body from `kernels` with the line's stages, tile and tile order.
//!
//! Every kernel's `# Safety`: `x` and `y` hold `n` floats each, 16-byte aligned, `n % 4 == 0`;
//! blocks of the table's threads with its `shared_bytes` of dynamic shared memory; any 1-D
//! grid; a `queue` is a zeroed `TileQueueState` no other launch uses meanwhile; tensor maps of
//! `x` and `y` have the view and box of [`TensorView::of`] for the kernel's tile.

// The parameter and descriptor types; on the device also the bodies' module, `kernels`.
use super::*;

/// A line of [`STREAM_KERNELS`]: `entry:` (its parameters: [`StreamEntry`]), `style:` and its
/// `params:` ([`StreamStyle`]), `order:` ([`TileOrder`]), `threads:`, `blocks_per_sm:`,
/// `tile_bytes:` and `body:` (`plain`, `thread_pipeline`, `bulk` or `tensor`: which body of
/// `kernels` runs it); `@entry` declares the kernel, `@row` is its [`StreamKernel`].
macro_rules! stream_row {
    (@$what:ident $name:ident {
        entry: $entry:ident,
        style: $style:ident,
        params: { $($param:ident : $value:literal),* },
        order: $order:ident,
        threads: $threads:literal,
        blocks_per_sm: $per_sm:literal,
        tile_bytes: $tile:tt,
        body: $body:ident
    }) => {
        stream_row! {
            $what $body $name $entry,
            StreamKernel {
                name: $name.name(),
                entry: StreamEntry::$entry($name),
                style: StreamStyle::$style { $($param: $value),* },
                order: TileOrder::$order,
                threads: $threads,
                blocks_per_sm: $per_sm,
                tile_bytes: $tile,
            }
        }
    };
    (row $body:ident $name:ident $entry:ident, $kernel:expr) => {
        $kernel
    };
    (entry plain $name:ident Pointers, $kernel:expr) => {
        gpu::kernel! {
            /// Plain 16-byte loads and stores, grid-stride: each thread loads
            /// [`PLAIN_QUADS_PER_THREAD`] quads, a grid's width apart, before it stores them,
            /// so that many loads are in flight per thread.
            ///
            /// # Safety
            /// See the module docs.
            pub fn $name(x: *const f32, y: *mut f32, n: u32) {
                // The body is the entry point's own, not an inlined helper in `kernels`: as one, its
                // loops come out of LLVM in another block order (the PTX would change).
                use gpu::ptx;
                const LOADS: usize = PLAIN_QUADS_PER_THREAD as usize;
                let quads = n / 4;
                let stride = ptx::grid_dim_x() * ptx::block_dim_x();
                let mut i = ptx::block_idx_x() * ptx::block_dim_x() + ptx::thread_idx_x();
                let (x, y) = (x.cast::<[f32; 4]>(), y.cast::<[f32; 4]>());
                let quad = |i: u32| i as usize;
                // Whole groups of LOADS quads; `u64` because the last index may pass u32 for huge grids.
                while (i as u64) + (LOADS as u64 - 1) * (stride as u64) < (quads as u64) {
                    let mut v = [[0.0; 4]; LOADS];
                    for (u, v) in v.iter_mut().enumerate() {
                        // SAFETY: every index is below n / 4 (the loop condition); x is 16-byte aligned.
                        *v = unsafe { ptx::ld_global_v4(x.add(quad(i + u as u32 * stride))) };
                    }
                    for (u, v) in v.iter().enumerate() {
                        // SAFETY: as above, for y.
                        unsafe { ptx::st_global_v4(y.add(quad(i + u as u32 * stride)), *v) };
                    }
                    i += LOADS as u32 * stride;
                }
                // The tail: fewer than LOADS quads left for this thread.
                while i < quads {
                    // SAFETY: i < n / 4; both 16-byte aligned.
                    unsafe { ptx::st_global_v4(y.add(quad(i)), ptx::ld_global_v4(x.add(quad(i)))) };
                    i += stride;
                }
            }
        }
    };
    (entry thread_pipeline $name:ident PointersQueued, $kernel:expr) => {
        gpu::kernel! {
            /// The thread pipeline of its line: tiles from a queue.
            ///
            /// # Safety
            /// See the module docs.
            pub fn $name(x: *const f32, y: *mut f32, n: u32, queue: *mut TileQueueState) {
                const KERNEL: StreamKernel = $kernel;
                const { assert!(KERNEL.takes_queue()) };
                // SAFETY: forwarded.
                unsafe {
                    kernels::thread_pipeline_queued::<{ KERNEL.style.stages() as usize }>(
                        &KERNEL, x, y, n, queue,
                    )
                }
            }
        }
    };
    (entry thread_pipeline $name:ident Pointers, $kernel:expr) => {
        gpu::kernel! {
            /// The thread pipeline of its line: grid-strided tiles.
            ///
            /// # Safety
            /// See the module docs.
            pub fn $name(x: *const f32, y: *mut f32, n: u32) {
                const KERNEL: StreamKernel = $kernel;
                const { assert!(!KERNEL.takes_queue()) };
                // SAFETY: forwarded.
                unsafe {
                    kernels::thread_pipeline_strided::<{ KERNEL.style.stages() as usize }>(
                        &KERNEL, x, y, n,
                    )
                }
            }
        }
    };
    (entry bulk $name:ident PointersQueued, $kernel:expr) => {
        gpu::kernel! {
            /// The copy engine's 1-D bulk copies as its line says, tiles from a queue.
            ///
            /// # Safety
            /// See the module docs; sm_90.
            pub fn $name(x: *const f32, y: *mut f32, n: u32, queue: *mut TileQueueState)
                [device if target_feature = "sm_90"]
            {
                const KERNEL: StreamKernel = $kernel;
                const { assert!(KERNEL.takes_queue()) };
                // SAFETY: forwarded.
                unsafe {
                    kernels::bulk_queued::<{ KERNEL.style.stages() as usize }>(
                        &KERNEL, x, y, n, queue,
                    )
                }
            }
        }
    };
    (entry bulk $name:ident Pointers, $kernel:expr) => {
        gpu::kernel! {
            /// The copy engine's 1-D bulk copies as its line says, grid-strided tiles.
            ///
            /// # Safety
            /// See the module docs; sm_90.
            pub fn $name(x: *const f32, y: *mut f32, n: u32)
                [device if target_feature = "sm_90"]
            {
                const KERNEL: StreamKernel = $kernel;
                const { assert!(!KERNEL.takes_queue()) };
                // SAFETY: forwarded.
                unsafe {
                    kernels::bulk_strided::<{ KERNEL.style.stages() as usize }>(&KERNEL, x, y, n)
                }
            }
        }
    };
    (entry tensor $name:ident TensorMapsQueued, $kernel:expr) => {
        gpu::kernel! {
            /// The copy engine's 2-D tensor copies as its line says, tiles from a queue.
            ///
            /// # Safety
            /// See the module docs; sm_90.
            pub fn $name(x: TensorMap, y: TensorMap, n: u32, queue: *mut TileQueueState)
                [device if target_feature = "sm_90"]
            {
                const KERNEL: StreamKernel = $kernel;
                const { assert!(KERNEL.takes_queue()) };
                let (x, y) = (
                    gpu::tensor_map_param!(entry, 0, x),
                    gpu::tensor_map_param!(entry, 1, y),
                );
                // The view from the constant itself: computed in the body through `&KERNEL`,
                // it lowers to other instructions (the PTX would change).
                let view = TensorView::of(n, KERNEL.tile_floats());
                // SAFETY: forwarded.
                unsafe {
                    kernels::tensor_queued::<{ KERNEL.style.stages() as usize }>(
                        &KERNEL, x, y, view, queue,
                    )
                }
            }
        }
    };
}

gpu::kernel_table! {
    /// Every streaming kernel (a `static`: one address per entry).
    pub static STREAM_KERNELS: [StreamKernel] by stream_row;
    stream_plain { entry: Pointers, style: Plain, params: {}, order: GridStride, threads: 256, blocks_per_sm: 8, tile_bytes: 16, body: plain }
    stream_thread_pipeline_4 { entry: PointersQueued, style: ThreadPipeline, params: { stages: 4 }, order: Queue, threads: 256, blocks_per_sm: 2, tile_bytes: PIPELINE_TILE_BYTES, body: thread_pipeline }
    stream_thread_pipeline_4_strided { entry: Pointers, style: ThreadPipeline, params: { stages: 4 }, order: GridStride, threads: 256, blocks_per_sm: 2, tile_bytes: PIPELINE_TILE_BYTES, body: thread_pipeline }
    stream_bulk_3 { entry: PointersQueued, style: Bulk, params: { stages: 3, evict_first: false }, order: Queue, threads: 32, blocks_per_sm: 2, tile_bytes: BULK_TILE_BYTES, body: bulk }
    stream_bulk_4 { entry: PointersQueued, style: Bulk, params: { stages: 4, evict_first: false }, order: Queue, threads: 32, blocks_per_sm: 1, tile_bytes: BULK_TILE_BYTES, body: bulk }
    stream_bulk_4_strided { entry: Pointers, style: Bulk, params: { stages: 4, evict_first: false }, order: GridStride, threads: 32, blocks_per_sm: 1, tile_bytes: BULK_TILE_BYTES, body: bulk }
    stream_bulk_3_64k { entry: PointersQueued, style: Bulk, params: { stages: 3, evict_first: false }, order: Queue, threads: 32, blocks_per_sm: 1, tile_bytes: (64 * 1024), body: bulk }
    stream_bulk_3_64k_evict_first { entry: PointersQueued, style: Bulk, params: { stages: 3, evict_first: true }, order: Queue, threads: 32, blocks_per_sm: 1, tile_bytes: (64 * 1024), body: bulk }
    stream_tensor_3 { entry: TensorMapsQueued, style: Tensor, params: { stages: 3 }, order: Queue, threads: 32, blocks_per_sm: 2, tile_bytes: BULK_TILE_BYTES, body: tensor }
    stream_tensor_3_64k { entry: TensorMapsQueued, style: Tensor, params: { stages: 3 }, order: Queue, threads: 32, blocks_per_sm: 1, tile_bytes: (64 * 1024), body: tensor }
}
