//! Tensor copies of Hopper's copy engine (sm_90, TMA): one thread moves a whole box of a 1- to
//! 5-dimensional tensor between global and shared memory, described by a tensor map (a
//! 128-byte descriptor the host encodes with `cuTensorMapEncodeTiled`). Elements of the box
//! outside the tensor are filled by the copy engine (zeros or NaN, as the map says) on loads
//! and skipped on stores, so a ragged edge needs no code.
//!
//! The map operand is a generic address of the descriptor ([`TensorMapRef`]); this crate passes
//! it as a kernel parameter ([`crate::tensor_map_param!`]), as `__grid_constant__` does.
//!
//! SASS: a tensor load is `UTMALDG.<rank>D`, a store `UTMASTG.<rank>D`, the prefetch
//! `UTMACCTL.PF`.

use super::objects::Mbarrier;
use super::smem::Shared;
use core::arch::asm;

/// The generic address of a tensor map the copy engine may read (a kernel parameter): the
/// `tensorMap` operand of `cp.async.bulk.tensor` and `prefetch.tensormap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapRef {
    addr: u64,
}

impl TensorMapRef {
    /// The map at generic address `addr`.
    ///
    /// # Safety
    /// `addr` is the generic address of a 64-byte aligned tensor map, valid (encoded by
    /// `cuTensorMapEncodeTiled` for memory that outlives every copy through it) and visible to
    /// the copy engine — a kernel parameter, or `.const` memory written before the launch.
    /// [`tensor_map_param!`](crate::tensor_map_param) is the safe way to get one.
    #[inline(always)]
    pub const unsafe fn from_generic_address(addr: u64) -> TensorMapRef {
        TensorMapRef { addr }
    }

    /// The generic address.
    #[inline(always)]
    pub const fn addr(self) -> u64 {
        self.addr
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The coordinates of a box in a tensor of rank 1 to 5: `[i32; RANK]`, innermost dimension
/// first (element indices, not bytes; negative or past the end is allowed: those elements are
/// out of bounds). Each rank is its own instruction (`cp.async.bulk.tensor.<RANK>d`).
pub trait TensorCoords: Copy + sealed::Sealed {
    /// The tensor's rank.
    const RANK: u32;

    /// The load for this rank; see [`cp_async_bulk_tensor_global_to_shared`].
    #[doc(hidden)]
    unsafe fn load(self, dst: u32, map: u64, bar: u32);

    /// The store for this rank; see [`cp_async_bulk_tensor_shared_to_global`].
    #[doc(hidden)]
    unsafe fn store(self, map: u64, src: u32);

    /// The multicast load for this rank; see
    /// [`cp_async_bulk_tensor_global_to_shared_multicast`].
    #[doc(hidden)]
    unsafe fn load_multicast(self, dst: u32, map: u64, bar: u32, mask: u16);
}

/// `"{c0}, {c1}, ..."`: the coordinate list of an instruction's template.
macro_rules! coordinate_list {
    ($first:ident $(, $rest:ident)*) => {
        concat!("{", stringify!($first), "}" $(, ", {", stringify!($rest), "}")*)
    };
}

macro_rules! tensor_coords {
    ($($rank:literal: [$($c:ident),+];)*) => {$(
        impl sealed::Sealed for [i32; $rank] {}

        impl TensorCoords for [i32; $rank] {
            const RANK: u32 = $rank;

            #[inline(always)]
            unsafe fn load(self, dst: u32, map: u64, bar: u32) {
                let [$($c),+] = self;
                // SAFETY: forwarded from `cp_async_bulk_tensor_global_to_shared`.
                unsafe {
                    asm!(
                        concat!(
                            "cp.async.bulk.tensor.", $rank, "d.shared::cluster.global.tile",
                            ".mbarrier::complete_tx::bytes [{dst}], [{map}, {{",
                            coordinate_list!($($c),+),
                            "}}], [{bar}];"
                        ),
                        dst = in(reg32) dst,
                        map = in(reg64) map,
                        bar = in(reg32) bar,
                        $($c = in(reg32) $c,)+
                        options(nostack, preserves_flags)
                    )
                }
            }

            #[inline(always)]
            unsafe fn load_multicast(self, dst: u32, map: u64, bar: u32, mask: u16) {
                let [$($c),+] = self;
                // SAFETY: forwarded from `cp_async_bulk_tensor_global_to_shared_multicast`.
                unsafe {
                    asm!(
                        concat!(
                            "cp.async.bulk.tensor.", $rank, "d.shared::cluster.global.tile",
                            ".mbarrier::complete_tx::bytes.multicast::cluster [{dst}], [{map}, {{",
                            coordinate_list!($($c),+),
                            "}}], [{bar}], {mask};"
                        ),
                        dst = in(reg32) dst,
                        map = in(reg64) map,
                        bar = in(reg32) bar,
                        mask = in(reg16) mask,
                        $($c = in(reg32) $c,)+
                        options(nostack, preserves_flags)
                    )
                }
            }

            #[inline(always)]
            unsafe fn store(self, map: u64, src: u32) {
                let [$($c),+] = self;
                // SAFETY: forwarded from `cp_async_bulk_tensor_shared_to_global`.
                unsafe {
                    asm!(
                        concat!(
                            "cp.async.bulk.tensor.", $rank, "d.global.shared::cta.tile.bulk_group",
                            " [{map}, {{",
                            coordinate_list!($($c),+),
                            "}}], [{src}];"
                        ),
                        map = in(reg64) map,
                        src = in(reg32) src,
                        $($c = in(reg32) $c,)+
                        options(nostack, preserves_flags)
                    )
                }
            }
        }
    )*};
}

tensor_coords! {
    1: [c0];
    2: [c0, c1];
    3: [c0, c1, c2];
    4: [c0, c1, c2, c3];
    5: [c0, c1, c2, c3, c4];
}

/// `cp.async.bulk.tensor.<R>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst],
/// [map, {coords}], [bar];` — the copy engine copies the box at `coords` of the tensor `map`
/// describes into shared `dst` (densely, innermost dimension first, or swizzled as the map
/// says), filling elements outside the tensor, and completes the box's bytes (all of them,
/// filled ones included) of transaction count on `bar`.
///
/// # Safety
/// 1. `map` is a valid tensor map ([`TensorMapRef`]) of rank `C::RANK` whose global memory is
///    readable for the duration of the copy.
/// 2. `dst` is 128-byte aligned (1024 with 128-byte swizzle) and holds the box's bytes of this
///    block's shared memory.
/// 3. `bar` holds an initialized mbarrier whose current phase expects these bytes
///    ([`super::mbarrier_expect_tx`], by this thread, before) and cannot complete before they
///    land; nothing reads or writes `dst` until that phase completed.
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_global_to_shared<C: TensorCoords>(
    dst: u32,
    map: TensorMapRef,
    coords: C,
    bar: Shared<Mbarrier>,
) {
    // SAFETY: the caller upholds the contract above.
    unsafe { coords.load(dst, map.addr(), bar.addr()) }
}

/// `cp.async.bulk.tensor.<R>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
/// .multicast::cluster [dst], [map, {coords}], [bar], mask;` — the copy engine reads the box
/// at `coords` once and writes it to `dst` in the shared memory of every block of the cluster
/// whose rank is set in `mask` (bit r: rank r), completing the box's bytes of transaction
/// count on the mbarrier at `bar`'s offset in each of them: one L2 read feeding several SMs
/// (CUTLASS's `SM90_TMA_LOAD_MULTICAST`).
///
/// # Safety
/// 1. As [`cp_async_bulk_tensor_global_to_shared`] (1) and (2), `dst` being the same offset
///    in every block named by `mask`.
/// 2. In each of those blocks the mbarrier at `bar`'s offset is initialized (and its
///    initialization fenced for the copy engine at cluster scope) and its current phase
///    expects these bytes and cannot complete without them; nothing there reads or writes
///    `dst` until that phase completed, and the block does not exit before the copy lands.
/// 3. `mask` names only ranks of this cluster (a launch in clusters, sm_90).
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_global_to_shared_multicast<C: TensorCoords>(
    dst: u32,
    map: TensorMapRef,
    coords: C,
    bar: Shared<Mbarrier>,
    mask: u16,
) {
    // SAFETY: the caller upholds the contract above.
    unsafe { coords.load_multicast(dst, map.addr(), bar.addr(), mask) }
}

/// `cp.async.bulk.tensor.<R>d.global.shared::cta.tile.bulk_group [map, {coords}], [src];` —
/// the copy engine writes the box at `coords` of the tensor `map` describes from shared `src`,
/// skipping elements outside the tensor; tracked by this thread's bulk async-groups
/// ([`super::bulk_commit_group`], [`super::bulk_wait_group_read`]).
///
/// # Safety
/// 1. `map` is a valid tensor map of rank `C::RANK` whose global memory is writable and
///    touched by nothing else until the group completes.
/// 2. `src` is 128-byte aligned and holds the box's bytes of shared memory, made visible to the
///    copy engine ([`super::fence_proxy_async_shared`]) and not written until a
///    `bulk_wait_group_read` covering this copy returned.
#[inline(always)]
pub unsafe fn cp_async_bulk_tensor_shared_to_global<C: TensorCoords>(
    map: TensorMapRef,
    coords: C,
    src: u32,
) {
    // SAFETY: the caller upholds the contract above.
    unsafe { coords.store(map.addr(), src) }
}

/// `prefetch.tensormap [map];` — starts fetching the descriptor into the copy engine's cache,
/// so the first copy through it does not wait for it (issue once per map, early).
#[inline(always)]
pub fn prefetch_tensormap(map: TensorMapRef) {
    // SAFETY: a prefetch of a valid descriptor address (a `TensorMapRef` is one); it changes
    // no memory.
    unsafe {
        asm!(
            "prefetch.tensormap [{map}];",
            map = in(reg64) map.addr(),
            options(nostack, readonly, preserves_flags)
        )
    }
}
