//! The streaming kernels, each declared once ([`gpu::kernel!`]): an [`EntryPoint`]
//! everywhere, which the kernel's [`StreamKernel`] carries, and on the device its entry
//! point, which runs its style's body from `kernels` with the table's stages, tile and tile
//! order.
//!
//! Every kernel's `# Safety`: `x` and `y` hold `n` floats each, 16-byte aligned, `n % 4 == 0`;
//! blocks of the table's threads with its `shared_bytes` of dynamic shared memory; any 1-D
//! grid.

// The parameter types; on the device also the table and the bodies' module, `kernels`.
use super::*;

gpu::kernel! {
    /// Plain 16-byte loads and stores, grid-stride: each thread loads
    /// [`PLAIN_QUADS_PER_THREAD`] quads, a grid's width apart, before it stores them, so that
    /// many loads are in flight per thread.
    ///
    /// # Safety
    /// See the module docs.
    pub fn stream_plain(x: *const f32, y: *mut f32, n: u32) {
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

gpu::kernel! {
    /// The thread pipeline of [`STREAM_THREAD_PIPELINE_4`]: tiles from a queue.
    ///
    /// # Safety
    /// See the module docs; `queue` is a zeroed `TileQueueState` no other launch uses
    /// meanwhile.
    pub fn stream_thread_pipeline_4(
        x: *const f32,
        y: *mut f32,
        n: u32,
        queue: *mut TileQueueState,
    ) {
        const KERNEL: StreamKernel = STREAM_THREAD_PIPELINE_4;
        const { assert!(KERNEL.takes_queue()) };
        // SAFETY: forwarded.
        unsafe {
            kernels::thread_pipeline_queued::<{ KERNEL.style.stages() as usize }>(
                &KERNEL, x, y, n, queue,
            )
        }
    }
}

gpu::kernel! {
    /// The thread pipeline of [`STREAM_THREAD_PIPELINE_4_STRIDED`]: grid-strided tiles.
    ///
    /// # Safety
    /// See the module docs.
    pub fn stream_thread_pipeline_4_strided(x: *const f32, y: *mut f32, n: u32) {
        const KERNEL: StreamKernel = STREAM_THREAD_PIPELINE_4_STRIDED;
        const { assert!(!KERNEL.takes_queue()) };
        // SAFETY: forwarded.
        unsafe {
            kernels::thread_pipeline_strided::<{ KERNEL.style.stages() as usize }>(
                &KERNEL, x, y, n,
            )
        }
    }
}

/// One bulk kernel of the table per line: the copy engine over 1-D bulk copies with that
/// kernel's stages, tile, geometry and tile order (`queue`: parameters `(x, y, n, queue)`;
/// `grid_stride`: `(x, y, n)`); sm_90 only.
macro_rules! bulk_kernels {
    ($($name:ident = $kernel:ident $order:ident,)*) => {$(
        bulk_kernels!(@kernel $name $kernel $order);
    )*};
    (@kernel $name:ident $kernel:ident queue) => {
        gpu::kernel! {
            #[doc = concat!(
                "The copy engine's 1-D bulk copies as [`", stringify!($kernel), "`] says, tiles ",
                "from a queue."
            )]
            ///
            /// # Safety
            /// See the module docs; sm_90; `queue` is a zeroed `TileQueueState` no other
            /// launch uses meanwhile.
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
    (@kernel $name:ident $kernel:ident grid_stride) => {
        gpu::kernel! {
            #[doc = concat!(
                "The copy engine's 1-D bulk copies as [`", stringify!($kernel), "`] says, ",
                "grid-strided tiles."
            )]
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
}

bulk_kernels! {
    stream_bulk_3 = STREAM_BULK_3 queue,
    stream_bulk_4 = STREAM_BULK_4 queue,
    stream_bulk_4_strided = STREAM_BULK_4_STRIDED grid_stride,
    stream_bulk_3_64k = STREAM_BULK_3_64K queue,
    stream_bulk_3_64k_evict_first = STREAM_BULK_3_64K_EVICT_FIRST queue,
}

/// One tensor kernel of the table per line: the copy engine over 2-D tensor copies, tiles
/// from a queue; sm_90 only. Parameters `(x, y, n, queue)`: tensor maps of `x` and `y` as
/// [`TensorView::of`]`(n, tile floats)` says (rows of `row_floats`, boxes of
/// `row_floats x box_rows`), and `n`.
macro_rules! tensor_kernels {
    ($($name:ident = $kernel:ident,)*) => {$(
        gpu::kernel! {
            #[doc = concat!(
                "The copy engine's 2-D tensor copies as [`", stringify!($kernel), "`] says."
            )]
            ///
            /// # Safety
            /// `x` and `y` are tensor maps of two buffers of `n` floats (`n % 4 == 0`) with
            /// the view and box of [`TensorView::of`] for this kernel's tile; sm_90; `queue`
            /// is a zeroed `TileQueueState` no other launch uses meanwhile.
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
    )*};
}

tensor_kernels! {
    stream_tensor_3 = STREAM_TENSOR_3,
    stream_tensor_3_64k = STREAM_TENSOR_3_64K,
}
