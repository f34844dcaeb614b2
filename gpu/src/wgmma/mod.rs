//! Warpgroup MMA on Hopper's tensor cores (sm_90a): the operand tiles a tensor copy fills and
//! `wgmma` reads, described once ([`SwizzledKMajor`]: the host takes its box and swizzle for the
//! tensor map, the device its [`MatrixDescriptor`]s, `ldmatrix` addresses and `cp.async`
//! destinations, so they cannot disagree), the accumulator fragment ([`Accumulator`]), A in
//! registers ([`AFragment`]), and the multiply atom ([`WarpgroupMma`]: A from shared memory or
//! from registers).
//!
//! The layouts are plain Rust, built for the host too; the atom and the descriptors exist only
//! in the sm_90a device build.

mod element;
mod tile;
pub use element::{Bf16, E4M3, E5M2, Element, F16, SixteenBit};
#[cfg(target_feature = "sm_90a")]
mod atom;
#[cfg(target_feature = "sm_90a")]
pub use atom::*;

#[cfg(target_feature = "sm_90a")]
use crate::ptx::{self, MatrixDescriptor, Shared};
use core::marker::PhantomData;

/// The threads of a warpgroup: four consecutive warps, what one `wgmma` is issued by.
pub const WARPGROUP_THREADS: u32 = 128;

/// The bits of a matrix descriptor with 128-byte swizzle (PTX ISA encoding): the start address
/// `start / 16` in bits 0-13, the leading and stride byte offsets (in 16-byte units) in bits
/// 16-29 and 32-45, base offset 0, swizzle mode 1 (128 bytes) in bits 62-63.
const fn swizzled_128b_descriptor(start: u32, leading_bytes: u64, stride_bytes: u64) -> u64 {
    ((start as u64 & 0x3_FFFF) >> 4)
        | (leading_bytes >> 4) << 16
        | (stride_bytes >> 4) << 32
        | 1 << 62
}

/// A `ROWS x K` tile of elements `E` (one 128-byte row of K per row of M or N, K-major: `K`
/// is 64 elements of 16 bits, 128 of 8 bits),
/// in shared memory as a tensor copy with 128-byte swizzle writes it: row `r` at byte
/// `128 r`, its 16-byte chunk `c` stored at chunk `c ^ (r % 8)`. The tile is 1024-byte aligned
/// (the swizzle repeats every 8 rows) and holds `ROWS * 128` bytes.
///
/// The same type gives the tensor map's box ([`SwizzledKMajor::BOX`]) and the `wgmma`
/// descriptors (`SwizzledKMajor::descriptor`, sm_90a): leading byte offset 16 (unused by a swizzled
/// K-major operand), stride byte offset 1024 (eight rows), swizzle mode 128 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwizzledKMajor<const ROWS: u32, E: Element = Bf16>(PhantomData<E>);

impl<const ROWS: u32, E: Element> Default for SwizzledKMajor<ROWS, E> {
    fn default() -> Self {
        Self::LAYOUT
    }
}

impl<const ROWS: u32, E: Element> SwizzledKMajor<ROWS, E> {
    /// The layout (a value for the functions that take one: tile copies).
    pub const LAYOUT: Self = SwizzledKMajor(PhantomData);
    /// Elements of K per row: 128 bytes.
    pub const K: u32 = E::K_PER_ROW;
    /// Bytes of the tile.
    pub const BYTES: u32 = ROWS * 128;
    /// The tensor map's box, innermost first: `[64, ROWS]` (ROWS at most 256, the largest box
    /// dimension).
    pub const BOX: [u32; 2] = {
        assert!(ROWS >= 8 && ROWS <= 256 && ROWS.is_multiple_of(8));
        [Self::K, ROWS]
    };
    /// The tensor map's swizzle span in bytes.
    pub const SWIZZLE_BYTES: u32 = 128;
    /// How far one instruction's k-step (32 bytes: 16 elements of 16 bits, 32 of 8 bits) moves
    /// a descriptor, in its 16-byte units.
    pub const K_STEP: u64 = 2;
    /// Leading byte offset, stride byte offset (bytes) and the swizzle field of the descriptor.
    const LEADING_BYTES: u64 = 16;
    const STRIDE_BYTES: u64 = 1024;

    /// The byte offset in the tile of element `(row, col)` (`col < K`): row `row` at
    /// `128 row`, its 16-byte chunk moved to chunk `chunk ^ (row % 8)`. Where a
    /// thread writes an element for a tensor copy with 128-byte swizzle to store, or reads one
    /// such a copy loaded; eight rows' same chunk fall in eight different bank groups.
    pub const fn byte_offset(row: u32, col: u32) -> u32 {
        let byte = col * E::BITS / 8;
        let chunk = (byte / 16) ^ (row % 8);
        row * 128 + chunk * 16 + byte % 16
    }

    /// The descriptor bits of the tile's rows from `row` on (a multiple of 8) when the tile
    /// starts at shared address `base`: start address `(base + 128 row) / 16` (14 bits), the
    /// offsets, the swizzle mode in bits 62-63.
    pub const fn descriptor_bits(base: u32, row: u32) -> u64 {
        swizzled_128b_descriptor(base + row * 128, Self::LEADING_BYTES, Self::STRIDE_BYTES)
    }

    /// The `wgmma` descriptor of the tile's rows from `row` on (a multiple of 8), the tile at
    /// `base`.
    ///
    /// # Safety
    /// `base` is 1024-byte aligned and starts `BYTES` of shared memory laid out as above (by a
    /// tensor copy through a map with [`Self::BOX`] and 128-byte swizzle); `row + 64 <= ROWS`
    /// for an A operand, `row + N <= ROWS` for a B operand of width N.
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    pub unsafe fn descriptor<T>(base: Shared<T>, row: u32) -> MatrixDescriptor {
        // SAFETY: forwarded contract: the bits describe this layout.
        unsafe { MatrixDescriptor::from_bits(Self::descriptor_bits(base.addr(), row)) }
    }
}

impl<const ROWS: u32, E: SixteenBit> SwizzledKMajor<ROWS, E> {
    /// The 64 rows from `row` on of the tile at `base`, as a warpgroup's A operand in registers
    /// ([`AFragment`]): four `ldmatrix_x4` per thread (`t`: the thread's index in the
    /// warpgroup), each lane pointing at its row's swizzled 16-byte chunk.
    ///
    /// # Safety
    /// The whole warpgroup calls it together, converged; `base` is 1024-byte aligned and
    /// starts `BYTES` of shared memory laid out as above, initialized and visible to this
    /// thread (a tensor copy's completion observed), not written until the loads return;
    /// `row + 64 <= ROWS`.
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    pub unsafe fn load_a<T>(base: Shared<T>, row: u32, t: u32) -> AFragment {
        let (r, c) = x4_lane_row(t % 32);
        let row = row + 16 * (t / 32) + r;
        let mut regs = [0u32; 16];
        let mut j = 0;
        while j < 4 {
            let at = base
                .cast::<u8>()
                .add(Self::byte_offset(row, 16 * j as u32 + c));
            // SAFETY: a 16-byte aligned chunk (c and 16 j are multiples of 8 elements) inside
            // the tile (row < ROWS), initialized (contract); the warp is converged.
            let x = unsafe { ptx::ldmatrix_x4(at.cast()) };
            regs[4 * j..4 * j + 4].copy_from_slice(&x);
            j += 1;
        }
        AFragment { regs }
    }
}

/// The swizzled layout as a tile copy's destination: byte `b` of row `r` where a tensor copy
/// with 128-byte swizzle puts it (`cp.async` into a tile `wgmma` reads).
impl<const ROWS: u32, E: Element> crate::layout::TileLayout for SwizzledKMajor<ROWS, E> {
    #[inline(always)]
    fn row_start(self, row: u32) -> u32 {
        row * 128
    }
    #[inline(always)]
    fn byte_in_row(self, row: u32, byte: u32) -> u32 {
        ((byte / 16) ^ (row % 8)) * 16 + byte % 16
    }
}

/// A 64 (K) x `MN` tile of 16-bit elements stored MN-major (a B operand read from a K x N
/// row-major matrix: `wgmma`'s transposed B), as a tensor copy with 128-byte swizzle writes it
/// in `MN / 64` boxes of 64 k-rows x 128 bytes (64 elements of MN): box `j` (elements
/// `64 j..64 j + 64` of MN) at byte `8192 j`, k-row `r` of a box at `128 r`, its 16-byte chunks
/// swizzled as in [`SwizzledKMajor`].
///
/// The descriptors: leading byte offset 8192 (from one 64-element group of MN to the next),
/// stride byte offset 1024 (eight k-rows), swizzle mode 128 bytes; a k-step of 16 moves the
/// start by 16 k-rows (2048 bytes).
///
/// 16-bit elements only (`E: SixteenBit`): the tensor cores read 8-bit operands K-major only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwizzledMnMajor<const MN: u32, E: SixteenBit = Bf16>(PhantomData<E>);

impl<const MN: u32, E: SixteenBit> SwizzledMnMajor<MN, E> {
    /// The layout.
    pub const LAYOUT: Self = SwizzledMnMajor(PhantomData);
    /// Elements of K per tile (one stage).
    pub const K: u32 = 64;
    /// Bytes of the tile.
    pub const BYTES: u32 = MN * 128;
    /// Boxes of 64 MN elements per tile.
    pub const BOXES: u32 = {
        assert!(MN >= 64 && MN <= 256 && MN.is_multiple_of(64));
        MN / 64
    };
    /// Bytes of one box.
    pub const BOX_BYTES: u32 = 64 * 128;
    /// The tensor map's box, innermost (MN) first: `[64, 64]`.
    pub const BOX: [u32; 2] = [64, Self::K];
    /// The tensor map's swizzle span in bytes.
    pub const SWIZZLE_BYTES: u32 = 128;
    /// How far one k-step of 16 elements (16 k-rows, 2048 bytes) moves a descriptor, in its
    /// 16-byte units.
    pub const K_STEP: u64 = 128;
    const LEADING_BYTES: u64 = 8192;
    const STRIDE_BYTES: u64 = 1024;

    /// The descriptor bits of the tile at shared address `base`.
    pub const fn descriptor_bits(base: u32) -> u64 {
        swizzled_128b_descriptor(base, Self::LEADING_BYTES, Self::STRIDE_BYTES)
    }

    /// The `wgmma` descriptor of the tile at `base`.
    ///
    /// # Safety
    /// `base` is 1024-byte aligned and starts `BYTES` of shared memory laid out as above (by
    /// `BOXES` tensor copies through a map with [`Self::BOX`] and 128-byte swizzle).
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    pub unsafe fn descriptor<T>(base: Shared<T>) -> MatrixDescriptor {
        // SAFETY: forwarded contract: the bits describe this layout.
        unsafe { MatrixDescriptor::from_bits(Self::descriptor_bits(base.addr())) }
    }
}

/// How a B tile is stored, as a `wgmma` reads it: K-major ([`SwizzledKMajor`]: B `n x k`,
/// the weights of a `Linear` layer) or MN-major ([`SwizzledMnMajor`]: B `k x n` row-major,
/// `a @ b`, read transposed).
pub trait BOperand: Copy {
    /// The element type the tile holds.
    type Element: Element;
    /// `imm-trans-b`: 1 for MN-major.
    const TRANS: u32;
    /// One instruction's k-step in the descriptor's units.
    const K_STEP: u64;
}

impl<const ROWS: u32, E: Element> BOperand for SwizzledKMajor<ROWS, E> {
    type Element = E;
    const TRANS: u32 = 0;
    const K_STEP: u64 = SwizzledKMajor::<ROWS, E>::K_STEP;
}

impl<const MN: u32, E: SixteenBit> BOperand for SwizzledMnMajor<MN, E> {
    type Element = E;
    const TRANS: u32 = 1;
    const K_STEP: u64 = SwizzledMnMajor::<MN, E>::K_STEP;
}

/// A warpgroup's 64 x N FP32 accumulator tile, `REGS = N / 2` registers per thread. Thread
/// `t` (0..128) of the warpgroup holds, in register `i`, the element at row
/// `16 (t / 32) + (t % 32) / 4 + 8 ((i / 2) % 2)` and column `8 (i / 4) + 2 (t % 4) + i % 2`
/// ([`Accumulator::position`]): pairs of adjacent columns, so an epilogue stores two at a time.
///
/// Index it only with constants (unrolled loops): a run-time index puts the array in local
/// memory.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Accumulator<const REGS: usize> {
    /// This thread's registers, in `wgmma`'s order.
    pub regs: [f32; REGS],
}

impl<const REGS: usize> Accumulator<REGS> {
    /// Columns of the tile.
    pub const N: u32 = 2 * REGS as u32;

    /// Zeros.
    #[inline(always)]
    pub const fn zeros() -> Self {
        Accumulator { regs: [0.0; REGS] }
    }

    /// `(row, column)` in the 64 x N tile of register `i` of warpgroup thread `t`.
    #[inline(always)]
    pub const fn position(t: u32, i: u32) -> (u32, u32) {
        let row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
        let col = 8 * (i / 4) + 2 * (t % 4) + i % 2;
        (row, col)
    }

    /// Registers `8 q..8 q + 8` rounded to `E` in pairs: this thread's fragments of the four
    /// 8 x 8 matrices of columns `16 q..16 q + 16` of its warp's 16 rows, in the order
    /// [`x4_lane_row`] addresses them (rows 0-7 and 8-15 of columns 0-7, then of 8-15) — one
    /// `stmatrix_x4`'s registers, and A's register fragment of k-slice `q` when the tile is
    /// the A operand of the next multiply (`P V`: see [`Accumulator::to_a_fragment`]). `q` a
    /// constant (unrolled loop) below `REGS / 8`.
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    pub fn pack_x4<E: SixteenBit>(&self, q: usize) -> [u32; 4] {
        let r = &self.regs[8 * q..8 * q + 8];
        [
            E::pack2(r[0], r[1]),
            E::pack2(r[2], r[3]),
            E::pack2(r[4], r[5]),
            E::pack2(r[6], r[7]),
        ]
    }

    /// Columns `64 j..64 j + 64` of the tile rounded to `E`, as the A operand of a `wgmma`
    /// from registers ([`AFragment`]): the accumulator's layout of a 16-column slice is the A
    /// fragment's of a 16-wide k-slice, so this is register arithmetic only (four
    /// [`pack_x4`](Self::pack_x4)). `j` a constant below `REGS / 32`.
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    pub fn to_a_fragment<E: SixteenBit>(&self, j: usize) -> AFragment {
        let mut regs = [0u32; 16];
        let mut s = 0;
        while s < 4 {
            regs[4 * s..4 * s + 4].copy_from_slice(&self.pack_x4::<E>(4 * j + s));
            s += 1;
        }
        AFragment { regs }
    }
}

/// Where lane `lane` of a warp points `ldmatrix_x4` / `stmatrix_x4` for a 16 x 16 block of
/// 16-bit elements held as the tensor cores' fragments: `(row, column)` in the block of the
/// 16-byte row it gives — matrix `lane / 8` is rows 0-7 (even) or 8-15 (odd) of columns 0-7
/// (`lane < 16`) or 8-15. For A (rows of M, columns of K) that is `wgmma`'s register
/// fragment of a 16-row slice; for an [`Accumulator`]'s 16 columns `16 q..16 q + 16` it is
/// registers `8 q..8 q + 8` rounded in pairs ([`Accumulator::pack_x4`]).
pub const fn x4_lane_row(lane: u32) -> (u32, u32) {
    (((lane / 8) % 2) * 8 + lane % 8, 8 * ((lane / 16) % 2))
}

/// A warpgroup's 64 x 64 k-tile of A in registers, the form `wgmma` takes A from registers in:
/// per thread four 32-bit registers (eight 16-bit elements) for each of the four 64 x 16
/// k-slices, warp `w` holding rows `16 w..16 w + 16` ([`x4_lane_row`]). Loaded from a
/// [`SwizzledKMajor`] tile with `ldmatrix` (`SwizzledKMajor::load_a`, sm_90a).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct AFragment {
    /// This thread's registers, k-slice `j` in `regs[4 j..4 j + 4]`.
    pub regs: [u32; 16],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_fields_follow_the_ptx_encoding() {
        type T = SwizzledKMajor<128>;
        let bits = T::descriptor_bits(0x1_0400, 0);
        assert_eq!(bits & 0x3FFF, 0x1_0400 >> 4);
        assert_eq!((bits >> 16) & 0x3FFF, 1);
        assert_eq!((bits >> 32) & 0x3FFF, 64);
        assert_eq!(bits >> 62, 1);
        // Row 64 starts 8 KiB later.
        assert_eq!(
            T::descriptor_bits(0x1_0400, 64) & 0x3FFF,
            (0x1_0400 + 8192) >> 4
        );
        assert_eq!(T::BOX, [64, 128]);
        // Swizzle: row 0 unmoved, row 1's chunk 0 in chunk 1, row 9 like row 1.
        assert_eq!(T::byte_offset(0, 9), 18);
        assert_eq!(T::byte_offset(1, 0), 128 + 16);
        assert_eq!(T::byte_offset(1, 8), 128);
        assert_eq!(T::byte_offset(9, 3), 9 * 128 + 16 + 6);
        // Eight rows' chunk 0 land in eight different chunks (bank groups).
        let chunks: std::collections::BTreeSet<u32> =
            (0..8).map(|r| T::byte_offset(r, 0) % 128 / 16).collect();
        assert_eq!(chunks.len(), 8);
        assert_eq!(T::BYTES, 16384);
    }

    #[test]
    fn mn_major_descriptors_step_by_boxes_and_k_rows() {
        type T = SwizzledMnMajor<256>;
        let bits = T::descriptor_bits(0x2_0000);
        assert_eq!(bits & 0x3FFF, (0x2_0000 & 0x3_FFFF) >> 4);
        assert_eq!((bits >> 16) & 0x3FFF, 8192 >> 4);
        assert_eq!((bits >> 32) & 0x3FFF, 1024 >> 4);
        assert_eq!(bits >> 62, 1);
        assert_eq!((T::BOXES, T::BYTES, T::BOX), (4, 32768, [64, 64]));
        assert_eq!(T::K_STEP * 16, 2048);
        assert_eq!(<T as BOperand>::TRANS, 1);
        assert_eq!(<SwizzledKMajor<256> as BOperand>::TRANS, 0);
    }

    #[test]
    fn x4_lanes_address_the_fragments_registers_hold() {
        // The 32 lanes' rows cover a 16 x 16 block once, in 16-byte (8-element) rows.
        let mut seen = std::collections::BTreeSet::new();
        for lane in 0..32 {
            let (r, c) = x4_lane_row(lane);
            assert!(r < 16 && (c == 0 || c == 8));
            assert!(seen.insert((r, c)), "lane {lane} repeats ({r}, {c})");
        }
        // Matrix i (lanes 8 i..8 i + 8) is what register i of an accumulator's pair rounding
        // holds: rows 8 ((i / 2) % 2) of register 2 i's position, columns 8 (i / 4)...
        for q in 0..16u32 {
            for i in 0..4u32 {
                // Register 8 q + 2 i of thread t, at lane 8 i + (t / 4) of the x4's rows.
                for t in 0..32u32 {
                    let (row, col) = Accumulator::<128>::position(t, 8 * q + 2 * i);
                    let (r, c) = x4_lane_row(8 * i + (row % 8));
                    assert_eq!((r, 16 * q + c), (row % 16, col - col % 8));
                }
            }
        }
    }

    #[test]
    fn the_swizzled_tile_layout_puts_bytes_where_the_tensor_copy_does() {
        use crate::layout::TileLayout;
        let t = SwizzledKMajor::<64>::LAYOUT;
        for row in 0..64 {
            for col in 0..64 {
                let at = t.row_start(row) + t.byte_in_row(row, 2 * col);
                assert_eq!(at, SwizzledKMajor::<64>::byte_offset(row, col));
            }
        }
    }

    #[test]
    fn accumulator_positions_cover_the_tile_once() {
        let mut seen = vec![false; 64 * 256];
        for t in 0..128 {
            for i in 0..128 {
                let (r, c) = Accumulator::<128>::position(t, i);
                assert!(r < 64 && c < 256);
                assert!(!seen[(r * 256 + c) as usize], "({r}, {c}) twice");
                seen[(r * 256 + c) as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}
