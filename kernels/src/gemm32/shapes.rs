//! The GEMM's shapes, for host and device: block, warp and thread tiles, the completion
//! styles, each kernel's launch geometry and shared-memory layout.

use gpu::kernel::EntryPoint;
use gpu::layout::StagedLayout;
use gpu::tensor_map::TensorMap;

/// The k-extent of a block's tile: one pipeline stage holds `BK` columns of A and `BK` rows of
/// B. Stored m-major, eight floats make an A row 32 bytes, so the four rows the four `m` lanes
/// of a warp read at once fall in different banks.
pub const BK: u32 = 8;

/// Floats of padding after each k-row of a k-major A tile ([`ALayout::KMajor`]): rows
/// `bm + 4` floats apart, so the eight k of the four source rows one warp instruction of the
/// transposing copy writes land in 32 different banks, and every row stays 16-byte aligned.
pub const A_K_MAJOR_PAD: u32 = 4;

/// How a stage holds its A tile.
///
/// ```
/// use gpu_kernels::gemm32::{ALayout, GemmTile};
/// let tile = GemmTile { warps_m: 2, warps_n: 2, thread_m: 16, thread_n: 8 };
/// // The transposed A tile is padded so that its rows start on different banks.
/// assert!(tile.a_tile_bytes(ALayout::KMajor) > tile.a_tile_bytes(ALayout::MMajor));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ALayout {
    /// As in global memory: `bm` rows of `BK` floats (16-byte copies; a thread reads four k of
    /// one row with an `LDS.128`).
    MMajor,
    /// Transposed: `BK` rows of `bm` floats (plus [`A_K_MAJOR_PAD`]), written by 4-byte
    /// transposing copies; a thread reads four rows of one k with an `LDS.128`, so one k's
    /// fragment is a few registers and the next one can load while this one multiplies.
    KMajor,
}

/// Lanes of a warp along `m` and along `n`: lane `l` computes column groups `4 (l / 4) + 32 j`
/// of its warp's tile, and rows `l % 4 + 4 i` (A m-major) or `4 (l % 4) + 16 (i / 4) + i % 4`
/// (A k-major: four consecutive rows per load).
pub const LANES_M: u32 = 4;
/// See [`LANES_M`].
pub const LANES_N: u32 = 8;

/// A block's tile of C and how it is cut: `warps_m x warps_n` warps, each owning a
/// `4 thread_m x 8 thread_n` warp tile, each thread `thread_m x thread_n` outputs.
///
/// ```
/// use gpu_kernels::gemm32::GemmTile;
/// let tile = GemmTile { warps_m: 2, warps_n: 2, thread_m: 16, thread_n: 8 };
/// assert_eq!((tile.bm(), tile.bn()), (128, 128));
/// assert_eq!(tile.compute_threads(), 128);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmTile {
    /// Warps along `m`.
    pub warps_m: u32,
    /// Warps along `n`.
    pub warps_n: u32,
    /// Outputs per thread along `m`.
    pub thread_m: u32,
    /// Outputs per thread along `n` (a multiple of 4: they are read and written as `float4`).
    pub thread_n: u32,
}

impl GemmTile {
    /// Rows of C per block.
    pub const fn bm(self) -> u32 {
        self.warps_m * LANES_M * self.thread_m
    }

    /// Columns of C per block.
    pub const fn bn(self) -> u32 {
        self.warps_n * LANES_N * self.thread_n
    }

    /// Threads that compute (one per `thread_m x thread_n` outputs).
    pub const fn compute_threads(self) -> u32 {
        self.warps_m * self.warps_n * 32
    }

    /// Bytes of one stage's A tile in `layout`.
    pub const fn a_tile_bytes(self, layout: ALayout) -> u32 {
        match layout {
            ALayout::MMajor => self.bm() * BK * 4,
            ALayout::KMajor => self.a_k_row_floats() * BK * 4,
        }
    }

    /// Floats from one k-row of a k-major A tile to the next.
    pub const fn a_k_row_floats(self) -> u32 {
        self.bm() + A_K_MAJOR_PAD
    }

    /// Bytes of one stage's B tile (`BK x bn`, rows of `bn` floats).
    pub const fn b_tile_bytes(self) -> u32 {
        BK * self.bn() * 4
    }

    /// Bytes of one stage with A in `layout`: the A tile, then the B tile.
    pub const fn stage_bytes(self, layout: ALayout) -> u32 {
        self.a_tile_bytes(layout) + self.b_tile_bytes()
    }
}

/// How a GEMM kernel gets its operand tiles into shared memory and learns they arrived.
///
/// ```
/// use gpu_kernels::gemm32::find;
/// let family = find("gemm_thread_pipeline_5").expect("in the table");
/// assert_eq!(family.style.stages(), 5);
/// assert!(!family.style.needs_sm90());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmStyle {
    /// No async copy: the next tile is loaded into registers while the current one is
    /// multiplied, then stored to the other of two shared buffers; one `barrier.sync` per
    /// k-tile (the classic double-buffered kernel).
    Sync,
    /// `memcpy_async` into a [`ThreadPipeline`](gpu::pipeline::ThreadPipeline) of `stages`
    /// buffers, `stages - 1` k-tiles in flight; every thread copies and computes; one
    /// `barrier.sync` per k-tile (CUTLASS's multistage mainloop).
    ThreadPipeline {
        /// Buffers in the ring.
        stages: u32,
    },
    /// The same with a [`BlockPipeline`](gpu::pipeline::BlockPipeline): stages complete
    /// mbarrier phases, and no block-wide barrier.
    BlockPipeline {
        /// Buffers in the ring.
        stages: u32,
    },
    /// `producer_warps` warps only copy, the compute warps only compute, through a
    /// [`BlockPipeline`](gpu::pipeline::BlockPipeline).
    WarpSpecialized {
        /// Buffers in the ring.
        stages: u32,
        /// Warps that copy (after the compute warps).
        producer_warps: u32,
    },
    /// Hopper's copy engine (sm_90, TMA): one elected thread loads each k-tile's A and B
    /// boxes through 2-D tensor maps (the copy engine zero-fills what hangs over the edges)
    /// into a [`BulkPipeline`](gpu::pipeline::BulkPipeline) of `stages` buffers, the
    /// bytes completing the stage; every thread computes; mbarriers only. The maps need rows
    /// 16-byte aligned: `K` and `N` multiples of 4.
    Tma {
        /// Buffers in the ring.
        stages: u32,
    },
    /// Hopper's copy engine for B only (sm_90): one elected thread loads each k-tile's B box
    /// through a tensor map (the bytes expected on the stage's `full` barrier) while every
    /// thread copies A k-major with transposing `cp.async`, into one
    /// [`BlockPipeline`](gpu::pipeline::BlockPipeline) stage whose phase completes on both;
    /// the multiply is the `cp.async` styles' (A k-major, fragments one k ahead). B's map needs
    /// `N` a multiple of 4.
    TmaB {
        /// Buffers in the ring.
        stages: u32,
    },
    /// K split over a thread block cluster (sm_90), and within a block over `k_groups` groups
    /// of the tile's warps: `split` consecutive blocks along x share one tile of C, and each
    /// block's `k_groups` groups of `warps_m x warps_n` warps multiply `1 / (split k_groups)`
    /// of the k-tiles each with the thread pipeline's mainloop, every group through its own
    /// stages and its own barrier (a warp barrier for one-warp groups, a named one for more).
    /// The groups' partial tiles are summed through the block's shared memory, then block `r`
    /// sums rows `r bm / split ..` of every block's partial through distributed shared memory
    /// and stores them. For problems a few tiles wide, where whole-K tiles leave SMs idle.
    SplitK {
        /// Buffers in each group's ring.
        stages: u32,
        /// Blocks per cluster, each with its share of K (1: no cluster).
        split: u32,
        /// Groups of warps per block, each with its share of the block's K.
        k_groups: u32,
    },
}

impl GemmStyle {
    /// Buffers in shared memory (2 for the register-staged sync kernel).
    pub const fn stages(self) -> u32 {
        match self {
            GemmStyle::Sync => 2,
            GemmStyle::ThreadPipeline { stages }
            | GemmStyle::BlockPipeline { stages }
            | GemmStyle::WarpSpecialized { stages, .. }
            | GemmStyle::Tma { stages }
            | GemmStyle::TmaB { stages }
            | GemmStyle::SplitK { stages, .. } => stages,
        }
    }

    /// Blocks that share one tile of C, each with a share of K (1 but for split K).
    pub const fn split(self) -> u32 {
        match self {
            GemmStyle::SplitK { split, .. } => split,
            _ => 1,
        }
    }

    /// Groups of compute warps per block, each with a share of the block's K and its own
    /// stages (1 but for split K over warps).
    pub const fn k_groups(self) -> u32 {
        match self {
            GemmStyle::SplitK { k_groups, .. } => k_groups,
            _ => 1,
        }
    }

    /// Whether the style keeps a `full` and an `empty` mbarrier per stage.
    pub const fn has_stage_barriers(self) -> bool {
        matches!(
            self,
            GemmStyle::BlockPipeline { .. }
                | GemmStyle::WarpSpecialized { .. }
                | GemmStyle::Tma { .. }
                | GemmStyle::TmaB { .. }
        )
    }

    /// How the style's stages hold A.
    pub const fn a_layout(self) -> ALayout {
        match self {
            GemmStyle::Tma { .. } => ALayout::MMajor,
            _ => ALayout::KMajor,
        }
    }

    /// Whether the style needs sm_90 (tensor copies, clusters): absent from the sm_80 PTX.
    pub const fn needs_sm90(self) -> bool {
        matches!(
            self,
            GemmStyle::Tma { .. } | GemmStyle::TmaB { .. } | GemmStyle::SplitK { .. }
        )
    }

    /// Warps that only copy.
    pub const fn producer_warps(self) -> u32 {
        match self {
            GemmStyle::WarpSpecialized { producer_warps, .. } => producer_warps,
            _ => 0,
        }
    }

    /// The style's name in reports.
    pub const fn label(self) -> &'static str {
        match self {
            GemmStyle::Sync => "sync",
            GemmStyle::ThreadPipeline { .. } => "thread_pipeline",
            GemmStyle::BlockPipeline { .. } => "block_pipeline",
            GemmStyle::WarpSpecialized { .. } => "warp_specialized",
            GemmStyle::Tma { .. } => "tma",
            GemmStyle::TmaB { .. } => "tma_b",
            GemmStyle::SplitK { .. } => "split_k",
        }
    }

    /// One line on what the style does.
    pub const fn summary(self) -> &'static str {
        match self {
            GemmStyle::Sync => "global -> registers -> shared, double-buffered, no cp.async",
            GemmStyle::ThreadPipeline { .. } => {
                "multistage ThreadPipeline, all threads copy + compute, 1 barrier.sync per k-tile"
            }
            GemmStyle::BlockPipeline { .. } => {
                "multistage BlockPipeline, all threads copy + compute, mbarriers only"
            }
            GemmStyle::WarpSpecialized { .. } => {
                "producer warps copy, compute warps multiply, through a BlockPipeline"
            }
            GemmStyle::Tma { .. } => {
                "sm_90 TMA: one thread loads 2-D tensor-map boxes into a BulkPipeline, all compute"
            }
            GemmStyle::TmaB { .. } => {
                "sm_90: B by tensor copy (one thread), A by all threads' cp.async, one BlockPipeline"
            }
            GemmStyle::SplitK { .. } => {
                "sm_90: K split over a cluster and over warp groups, thread-pipeline mainloops, partials reduced in shared memory and DSMEM"
            }
        }
    }
}

/// The copy styles' parameters: `(a, b, c, m, n, k)`, A `m x k`, B `k x n`, C `m x n`,
/// row-major `f32`.
///
/// ```
/// use gpu_kernels::gemm32::{GemmEntry, GemmPointers, find};
/// let family = find("gemm_thread_pipeline_5").unwrap();
/// let any: gpu::kernel::EntryPoint<GemmPointers> = family.entry_any.expect("4-byte copies");
/// assert!(matches!(family.entry_aligned, GemmEntry::Pointers(_)));
/// assert_ne!(any.name(), family.entry_aligned.name());
/// ```
pub type GemmPointers = (*const f32, *const f32, *mut f32, u32, u32, u32);

/// A GEMM entry point, by its parameter types.
///
/// ```
/// use gpu_kernels::gemm32::find;
/// let family = find("gemm_thread_pipeline_5").unwrap();
/// // K and N multiples of 4: the 16-byte copies; otherwise the 4-byte ones.
/// assert_eq!(family.entry_for(4096, 4096).map(|e| e.name()), Some(family.entry_aligned.name()));
/// assert_ne!(family.entry_for(4097, 4096).map(|e| e.name()), Some(family.entry_aligned.name()));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmEntry {
    /// A and B as pointers (the `cp.async` styles).
    Pointers(EntryPoint<GemmPointers>),
    /// Tensor maps of A (`k x m`, innermost first) and B (`n x k`) with the family's
    /// [`GemmKernel::a_box`] / [`GemmKernel::b_box`], zero fill, no swizzle (sm_90).
    TensorMaps(EntryPoint<(TensorMap, TensorMap, *mut f32, u32, u32, u32)>),
    /// A as a pointer, a tensor map of B (`n x k`) with the family's
    /// [`GemmKernel::b_box`] (sm_90).
    TensorMapB(EntryPoint<(*const f32, TensorMap, *mut f32, u32, u32, u32)>),
}

impl GemmEntry {
    /// The name its entry point is exported under.
    pub const fn name(&self) -> &'static str {
        match self {
            GemmEntry::Pointers(e) => e.name(),
            GemmEntry::TensorMaps(e) => e.name(),
            GemmEntry::TensorMapB(e) => e.name(),
        }
    }
}

/// The threads of a block of `style` cutting C by `tile`: the compute warps (of every k
/// group), then the producer warps.
pub const fn block_threads(style: GemmStyle, tile: GemmTile) -> u32 {
    tile.compute_threads() * style.k_groups() + 32 * style.producer_warps()
}

/// The shared-memory layout of `style` with `tile`: each k group's `stages` buffers, one group
/// after another, then the stage mbarriers if the style has them.
pub const fn staged_layout(style: GemmStyle, tile: GemmTile) -> StagedLayout {
    StagedLayout::new(
        tile.stage_bytes(style.a_layout()),
        style.stages() * style.k_groups(),
        style.has_stage_barriers(),
    )
}

/// Bytes from the start of dynamic shared memory to a split-K block's partial tile of C:
/// after the stages, or after the k groups' partial tiles (summed there once every group's
/// stages are free) where those take more room.
pub const fn partial_offset(style: GemmStyle, tile: GemmTile) -> u32 {
    let stages = staged_layout(style, tile).bytes;
    let groups = if style.k_groups() > 1 {
        style.k_groups() * tile.bm() * tile.bn() * 4
    } else {
        0
    };
    if groups > stages { groups } else { stages }
}

/// One GEMM kernel family: a style and a tile, built twice — with 16-byte copies for
/// operands whose rows are 16-byte aligned (K and N multiples of 4), and with 4-byte copies
/// for any size — except the tensor-copy styles, whose one entry point needs aligned rows.
///
/// ```
/// use gpu_kernels::gemm32::{GEMM_KERNELS, find};
/// let family = find("gemm_thread_pipeline_5").unwrap();
/// assert_eq!(family.threads(), 128);
/// assert_eq!(family.grid(1000, 1000), (8, 8));
/// assert!(GEMM_KERNELS.iter().any(|k| k.cluster() != [1, 1, 1]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmKernel {
    /// The family's name.
    pub name: &'static str,
    /// How it copies and waits.
    pub style: GemmStyle,
    /// How it cuts C.
    pub tile: GemmTile,
    /// Entry point for rows 16-byte aligned (`K % 4 == 0 && N % 4 == 0`): 16-byte
    /// `cp.async.cg` copies, or tensor copies.
    pub entry_aligned: GemmEntry,
    /// Entry point with 4-byte copies, for any `M, N, K` (none for tensor copies).
    pub entry_any: Option<EntryPoint<GemmPointers>>,
}

impl GemmKernel {
    /// Threads per block: the compute warps, then the producer warps.
    pub const fn threads(&self) -> u32 {
        block_threads(self.style, self.tile)
    }

    /// Its dynamic shared memory: the stage buffers (each k group's in turn), then the stage
    /// mbarriers if it has them.
    pub const fn layout(&self) -> StagedLayout {
        staged_layout(self.style, self.tile)
    }

    /// Blocks for an `m x n` C: `(n tiles, m tiles)`, times the split along x (a cluster of
    /// `split` blocks per tile).
    pub const fn grid(&self, m: u32, n: u32) -> (u32, u32) {
        (
            n.div_ceil(self.tile.bn()) * self.style.split(),
            m.div_ceil(self.tile.bm()),
        )
    }

    /// The thread block cluster a launch needs: `[split, 1, 1]` (`[1, 1, 1]`: none).
    pub const fn cluster(&self) -> [u32; 3] {
        [self.style.split(), 1, 1]
    }

    /// Dynamic shared memory of a launch: the [`GemmKernel::layout`] (for k groups, at least
    /// their partial tiles), then, for split K over a cluster, the block's partial tile of C
    /// (`bm x bn` floats; [`partial_offset`]).
    pub const fn shared_bytes(&self) -> u32 {
        let partial = if self.style.split() > 1 {
            self.tile.bm() * self.tile.bn() * 4
        } else {
            0
        };
        partial_offset(self.style, self.tile) + partial
    }

    /// The entry point for `n` columns of B and `k` columns of A: the aligned one when every
    /// row of both starts 16-byte aligned; `None` when the family has none for these sizes.
    pub const fn entry_for(&self, n: u32, k: u32) -> Option<GemmEntry> {
        if n.is_multiple_of(4) && k.is_multiple_of(4) {
            Some(self.entry_aligned)
        } else {
            match self.entry_any {
                Some(any) => Some(GemmEntry::Pointers(any)),
                None => None,
            }
        }
    }

    /// The names of its entry points: the aligned one, then the one for any size.
    pub const fn entry_names(&self) -> (&'static str, Option<&'static str>) {
        let any = match self.entry_any {
            Some(any) => Some(any.name()),
            None => None,
        };
        (self.entry_aligned.name(), any)
    }

    /// The box of A one tensor copy loads: `(BK, bm)` (columns, rows) of the `m x k` matrix.
    pub const fn a_box(&self) -> (u32, u32) {
        (BK, self.tile.bm())
    }

    /// The box of B one tensor copy loads: `(bn, BK)` (columns, rows) of the `k x n` matrix.
    pub const fn b_box(&self) -> (u32, u32) {
        (self.tile.bn(), BK)
    }
}

/// The largest `M`, `N` or `K` the kernels take: indices into a matrix are 64-bit, but the
/// sizes are `u32` kernel parameters and tile origins `u32` sums.
pub const MAX_DIM: u32 = 1 << 30;
