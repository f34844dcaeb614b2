//! Thread groups: the threads that share out a copy, and the roles of a kernel — CUDA's
//! cooperative groups (`thread_block`, `tiled_partition<32>`) for one-dimensional blocks.
//!
//! | group | rank | size |
//! |---|---|---|
//! | [`ThisThread`] | 0 | 1 |
//! | [`Warp`] | `%laneid` | 32 |
//! | [`Threads`] | assigned | assigned (a block's first threads, one role of a warp-specialized kernel) |
//! | [`Block`] | `%tid.x` | `%ntid.x` |
//!
//! A group copy ([`memcpy_async`](crate::memcpy_async)) gives chunk `i` to the thread of rank
//! `i % size`; role dispatch (which warp produces, which consumes) branches on
//! [`Warp::index_in_block`]. Rank and size are read once, when the group is made.

use crate::ptx;

/// Threads that copy together: a group copy splits its chunks over them by rank.
pub trait Group {
    /// This thread's rank in the group, `0..size()`.
    fn thread_rank(&self) -> u32;
    /// Number of threads in the group.
    fn size(&self) -> u32;
}

/// The calling thread alone.
pub struct ThisThread;

impl Group for ThisThread {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        0
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        1
    }
}

/// The calling thread's warp: 32 threads, rank = lane. All 32 lanes must take part.
///
/// The lane is read once, when the group is made, so copies in a loop cost no special-register
/// read (as with `cooperative_groups::tiled_partition<32>`).
#[derive(Clone, Copy)]
pub struct Warp {
    lane: u32,
}

impl Warp {
    /// This thread's warp (`mov.u32 r, %laneid;`).
    #[inline(always)]
    pub fn this_warp() -> Warp {
        Warp {
            lane: ptx::lane_id(),
        }
    }

    /// This thread's lane, `0..32`.
    #[inline(always)]
    pub fn lane(&self) -> u32 {
        self.lane
    }

    /// The warp's index in a one-dimensional block (`%tid.x / 32`), broadcast from lane 0
    /// with `shfl.sync` so that ptxas knows it is warp-uniform: branching on it (producer
    /// warp / consumer warp) keeps each role's loop on the uniform datapath. All 32 lanes
    /// must call it together.
    #[inline(always)]
    pub fn index_in_block(&self) -> u32 {
        ptx::shfl_sync_idx(ptx::thread_idx_x() / 32, 0)
    }
}

impl Group for Warp {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        self.lane
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        32
    }
}

/// A set of threads whose ranks and size the caller assigns (the first `size` threads of a
/// block, or one role of a warp-specialized kernel). Give it a size known at compile time
/// and a group copy of a tile of known size unrolls, after inlining, to straight-line copies
/// with constant offsets.
#[derive(Clone, Copy)]
pub struct Threads {
    rank: u32,
    size: u32,
}

impl Threads {
    /// The thread of rank `rank` in a group of `size`; traps (the launch fails) if
    /// `rank >= size`.
    #[inline(always)]
    pub fn new(rank: u32, size: u32) -> Self {
        if rank >= size {
            ptx::trap();
        }
        Threads { rank, size }
    }
}

impl Group for Threads {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        self.rank
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        self.size
    }
}

/// The whole block, which must be one-dimensional: rank = `%tid.x`, size = `%ntid.x`, read
/// once when the group is made.
#[derive(Clone, Copy)]
pub struct Block {
    rank: u32,
    size: u32,
}

impl Block {
    /// This thread's block.
    #[inline(always)]
    pub fn this_block() -> Block {
        Block {
            rank: ptx::thread_idx_x(),
            size: ptx::block_dim_x(),
        }
    }
}

impl Group for Block {
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        self.rank
    }
    #[inline(always)]
    fn size(&self) -> u32 {
        self.size
    }
}
