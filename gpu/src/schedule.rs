//! Which tiles a block works on, in what order: the tile schedule of a persistent kernel (one
//! whose blocks loop over many tiles).
//!
//! - [`GridStride`]: block `b` of `g` takes tiles `b, b + g, b + 2g, ...` — fixed in advance,
//!   no shared state.
//! - [`TileQueue`]: tiles go out in order, one at a time, to whichever block asks next, from a
//!   counter in global memory (`atom.global.add`) — a dynamic tile scheduler, like CUTLASS's
//!   for its persistent kernels. It costs one atomic per tile, and per block one more add and
//!   an acquire-release add when it runs out.
//!
//! Why a streaming kernel wants the queue: a grid-strided walk fixes each block's tiles in
//! advance, so blocks that run a little faster drift tiles ahead of the others, and the
//! addresses in flight spread over an ever wider stretch of the arrays. From a queue the tiles
//! in flight are always the next ones in address order, as a DMA engine walks them. On the
//! H200 that is worth six points of the driver's copy rate for the same kernel (see the
//! README's streaming results).
//!
//! Both are [`TileSchedule`]s, so a kernel body is written once over either.

#[cfg(target_arch = "nvptx64")]
use crate::ptx;

/// What a [`TileQueue`] keeps in global memory: zero when a launch starts, and left zero when
/// it ends (the last block to finish resets it), so one allocation serves launch after launch.
/// The host allocates it zeroed (`TileQueueState::WORDS` 32-bit words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TileQueueState {
    /// The next tile to hand out (counts past the last tile as blocks ask after the end).
    pub next: u32,
    /// Blocks that have been told there is nothing left.
    pub retired: u32,
}

impl TileQueueState {
    /// Its size in 32-bit words, for the host's allocation.
    pub const WORDS: usize = size_of::<Self>() / 4;
}

/// A source of tile indices for one block: each call to [`next`](TileSchedule::next) names
/// the block's next tile, `None` once it has none left (and from then on).
pub trait TileSchedule {
    /// The block's next tile.
    fn next(&mut self) -> Option<u32>;
}

/// Tiles `first, first + step, ...` below `count`: block `b` of a 1-D grid of `g` blocks takes
/// `b, b + g, ...` ([`GridStride::this_block`]). Pure arithmetic; any thread may hold one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridStride {
    next: u32,
    step: u32,
    count: u32,
}

impl GridStride {
    /// Tiles `first, first + step, ...` below `count` (`step > 0`).
    #[inline]
    pub const fn new(first: u32, step: u32, count: u32) -> GridStride {
        GridStride {
            next: first,
            step,
            count,
        }
    }
}

impl TileSchedule for GridStride {
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        if self.next >= self.count {
            return None;
        }
        let tile = self.next;
        // Saturates instead of wrapping past u32::MAX, so the walk ends.
        self.next = self.next.saturating_add(self.step);
        Some(tile)
    }
}

#[cfg(target_arch = "nvptx64")]
impl GridStride {
    /// This block's share of `count` tiles over a 1-D grid: `blockIdx.x`, then every
    /// `gridDim.x`-th tile.
    #[inline(always)]
    pub fn this_block(count: u32) -> GridStride {
        GridStride::new(ptx::block_idx_x(), ptx::grid_dim_x(), count)
    }
}

/// The `(row, column)` of tile `index` of a `tiles_m x tiles_n` grid of output tiles, walked
/// in groups of `group` tile rows, column by column within a group: blocks working at the same
/// time share the A rows of their group and the B columns of their column, so both stay in L2
/// (the rasterization of CUTLASS's and Triton's GEMMs). `group = 1` is row-major order.
#[inline]
pub const fn grouped_tile(index: u32, tiles_m: u32, tiles_n: u32, group: u32) -> (u32, u32) {
    // Both divisors are at least 1 for any index of the grid; saying so keeps a division
    // check (a panic path) out of every kernel that walks its tiles this way.
    let per_group = at_least_one(group * tiles_n);
    let first_m = (index / per_group) * group;
    let rows = at_least_one(if tiles_m - first_m < group {
        tiles_m - first_m
    } else {
        group
    });
    let within = index % per_group;
    (first_m + within % rows, within / rows)
}

/// `x`, or 1 where it is 0.
#[inline(always)]
const fn at_least_one(x: u32) -> u32 {
    if x == 0 { 1 } else { x }
}

/// Tiles `0..count` handed out in order to whichever block asks next, from a
/// [`TileQueueState`] in global memory. One thread per block asks for the block (and, where
/// the others work on the tile too, tells them which, through shared memory).
///
/// The first `None` a block receives retires it (`atom.acq_rel.gpu.global.add` on the
/// retired count); the last block of the grid to retire sets the state back to zero, since
/// every block has then taken its last tile.
#[cfg(target_arch = "nvptx64")]
pub struct TileQueue {
    state: *mut TileQueueState,
    count: u32,
    retired: bool,
}

#[cfg(target_arch = "nvptx64")]
impl TileQueue {
    /// The queue of `count` tiles kept at `state`.
    ///
    /// # Safety
    /// 1. `state` points to a [`TileQueueState`] in global memory that is zero when the
    ///    launch starts and that nothing else touches during it.
    /// 2. The grid is 1-D (`gridDim.y == gridDim.z == 1`), and in every block exactly one
    ///    thread calls [`next`](TileSchedule::next), until it returns `None`, before the
    ///    block exits (other threads may hold a queue but never call it) — else the state is
    ///    not reset and the next launch on it hands out nothing.
    /// 3. `count + gridDim.x <= 2^32`: the counter does not wrap (every block makes exactly
    ///    one add that returns `count` or more; later calls do not touch the state).
    #[inline(always)]
    pub unsafe fn new(state: *mut TileQueueState, count: u32) -> TileQueue {
        TileQueue {
            state,
            count,
            retired: false,
        }
    }
}

#[cfg(target_arch = "nvptx64")]
impl TileSchedule for TileQueue {
    /// The next tile in order (`atom.relaxed.gpu.global.add.u32`,
    /// `ATOMG.E.ADD.STRONG.GPU`), or `None` once every tile is out.
    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        if self.retired {
            return None;
        }
        // SAFETY: a field address of the state (constructor contract 1); no access.
        let next = unsafe { &raw mut (*self.state).next };
        // SAFETY: `state` is the launch's queue state (constructor contract 1); only
        // atomics touch `next` while blocks run.
        let tile = unsafe { ptx::atom_add_relaxed_gpu(next, 1) };
        if tile < self.count {
            return Some(tile);
        }
        self.retired = true;
        // SAFETY: as for `next`.
        let retired = unsafe { &raw mut (*self.state).retired };
        // SAFETY: as above. Acquire-release: the last block to retire sees every other
        // block's last take of `next` before it resets it.
        let before = unsafe { ptx::atom_add_acq_rel_gpu(retired, 1) };
        if before + 1 == ptx::grid_dim_x() {
            // SAFETY: every block has retired (contract 2): nothing else touches the state
            // for the rest of the launch.
            unsafe {
                ptx::st_relaxed_gpu(next, 0);
                ptx::st_relaxed_gpu(retired, 0);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_stride_takes_every_gth_tile_and_ends() {
        let mut walk = GridStride::new(2, 3, 10);
        let tiles: Vec<_> = core::iter::from_fn(|| walk.next()).collect();
        assert_eq!(tiles, [2, 5, 8]);
        assert_eq!(walk.next(), None);
        let mut past = GridStride::new(7, 4, 5);
        assert_eq!(past.next(), None);
        let mut near_max = GridStride::new(u32::MAX - 1, u32::MAX, u32::MAX);
        assert_eq!(near_max.next(), Some(u32::MAX - 1));
        assert_eq!(near_max.next(), None);
    }

    #[test]
    fn grouped_order_visits_every_tile_once() {
        for (tiles_m, tiles_n, group) in [(64, 32, 16), (7, 5, 3), (1, 9, 8), (10, 1, 4), (5, 5, 1)]
        {
            let mut seen = vec![false; (tiles_m * tiles_n) as usize];
            for i in 0..tiles_m * tiles_n {
                let (r, c) = grouped_tile(i, tiles_m, tiles_n, group);
                assert!(r < tiles_m && c < tiles_n, "{i} -> ({r}, {c})");
                assert!(!seen[(r * tiles_n + c) as usize]);
                seen[(r * tiles_n + c) as usize] = true;
            }
        }
        // Column by column within a group of rows.
        assert_eq!(grouped_tile(0, 64, 32, 16), (0, 0));
        assert_eq!(grouped_tile(1, 64, 32, 16), (1, 0));
        assert_eq!(grouped_tile(16, 64, 32, 16), (0, 1));
        assert_eq!(grouped_tile(512, 64, 32, 16), (16, 0));
    }

    #[test]
    fn the_queue_state_is_two_words() {
        assert_eq!(TileQueueState::WORDS, 2);
        assert_eq!(size_of::<TileQueueState>(), 8);
    }
}
