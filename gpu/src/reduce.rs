//! Warp and block collectives: shuffles between the lanes of a warp, and reductions (sum,
//! maximum, minimum) over a warp or a whole block, for `f32`, `i32` and `u32`.
//!
//! | call | lowers to | every thread gets |
//! |---|---|---|
//! | [`shfl_xor`]`(v, mask)` | `shfl.sync.bfly.b32` | `v` of lane `lane ^ mask` |
//! | [`shfl_down`]`(v, delta)` | `shfl.sync.down.b32` | `v` of lane `lane + delta` (its own past lane 31) |
//! | [`shfl_idx`]`(v, lane)` | `shfl.sync.idx.b32` | `v` of lane `lane` |
//! | [`warp_reduce`]`::<Sum, _>(v)` | `f32`: 5 butterfly shuffles and adds; `i32` / `u32`: one `redux.sync` | the warp's sum |
//! | [`block_reduce`]`::<Max, _>(v, scratch)` | a warp reduction, `st.shared` per warp, `barrier.sync`, a warp reduction of the partials | the block's maximum |
//!
//! The butterfly leaves every lane with the same bits: at each step lane `i` adds `a + b`
//! where its partner adds `b + a`, and addition is commutative, so an `f32` sum is the same in
//! every lane (its order, though, is the butterfly's, not the array's). `Max` and `Min` of
//! `f32` follow `max.f32` / `min.f32`: a NaN loses to a number.
//!
//! # Convergence
//! Every function here names the whole warp (`membermask = 0xffffffff`): all 32 lanes of the
//! warp must call it together. [`block_reduce`] also needs every thread of the block, and a
//! block of whole warps.

use crate::ptx;
use crate::shared::SharedArray;

/// A 32-bit value a shuffle can move: `f32`, `i32`, `u32`.
pub trait ShflValue: Copy {
    /// The value's bits.
    fn to_bits32(self) -> u32;
    /// The value with these bits.
    fn from_bits32(bits: u32) -> Self;
}

impl ShflValue for u32 {
    #[inline(always)]
    fn to_bits32(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_bits32(bits: u32) -> Self {
        bits
    }
}

impl ShflValue for i32 {
    #[inline(always)]
    fn to_bits32(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_bits32(bits: u32) -> Self {
        bits as i32
    }
}

impl ShflValue for f32 {
    #[inline(always)]
    fn to_bits32(self) -> u32 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits32(bits: u32) -> Self {
        f32::from_bits(bits)
    }
}

/// `value` of lane `lane ^ mask` (`shfl.sync.bfly.b32`). Every lane of the warp calls it.
#[inline(always)]
#[must_use]
pub fn shfl_xor<T: ShflValue>(value: T, mask: u32) -> T {
    T::from_bits32(ptx::shfl_sync_bfly_b32(value.to_bits32(), mask))
}

/// `value` of lane `lane + delta`; lanes past 31 keep their own (`shfl.sync.down.b32`).
/// Every lane of the warp calls it.
#[inline(always)]
#[must_use]
pub fn shfl_down<T: ShflValue>(value: T, delta: u32) -> T {
    T::from_bits32(ptx::shfl_sync_down_b32(value.to_bits32(), delta))
}

/// `value` of lane `src_lane % 32` (`shfl.sync.idx.b32`). Every lane of the warp calls it.
#[inline(always)]
#[must_use]
pub fn shfl_idx<T: ShflValue>(value: T, src_lane: u32) -> T {
    T::from_bits32(ptx::shfl_sync_idx(value.to_bits32(), src_lane))
}

/// A reduction: how two values combine, what combines to nothing, and how a whole warp is
/// reduced (a butterfly of [`shfl_xor`] unless the hardware has an instruction).
pub trait Reduce<T: ShflValue> {
    /// `a` combined with `b` (commutative).
    fn combine(a: T, b: T) -> T;
    /// The value that changes nothing (0, the lowest or the highest value).
    fn identity() -> T;
    /// The warp's reduction, in every lane: five butterfly steps by default.
    #[inline(always)]
    fn warp(value: T) -> T {
        let mut v = value;
        let mut mask = 16;
        while mask > 0 {
            v = Self::combine(v, shfl_xor(v, mask));
            mask /= 2;
        }
        v
    }
}

/// The sum (wrapping for integers).
pub struct Sum;
/// The largest value.
pub struct Max;
/// The smallest value.
pub struct Min;

impl Reduce<f32> for Sum {
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn identity() -> f32 {
        0.0
    }
}

impl Reduce<f32> for Max {
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a.max(b)
    }
    #[inline(always)]
    fn identity() -> f32 {
        f32::NEG_INFINITY
    }
}

impl Reduce<f32> for Min {
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a.min(b)
    }
    #[inline(always)]
    fn identity() -> f32 {
        f32::INFINITY
    }
}

/// Integer reductions: the operation, its identity and the `redux.sync` that does a warp's.
macro_rules! integer_reduce {
    ($op:ty, $ty:ty, $combine:expr, $identity:expr, $redux:path) => {
        impl Reduce<$ty> for $op {
            #[inline(always)]
            fn combine(a: $ty, b: $ty) -> $ty {
                $combine(a, b)
            }
            #[inline(always)]
            fn identity() -> $ty {
                $identity
            }
            #[inline(always)]
            fn warp(value: $ty) -> $ty {
                $redux(value)
            }
        }
    };
}

integer_reduce!(Sum, u32, u32::wrapping_add, 0, ptx::redux_sync_add_u32);
integer_reduce!(Max, u32, u32::max, u32::MIN, ptx::redux_sync_max_u32);
integer_reduce!(Min, u32, u32::min, u32::MAX, ptx::redux_sync_min_u32);
integer_reduce!(Sum, i32, i32::wrapping_add, 0, ptx::redux_sync_add_s32);
integer_reduce!(Max, i32, i32::max, i32::MIN, ptx::redux_sync_max_s32);
integer_reduce!(Min, i32, i32::min, i32::MAX, ptx::redux_sync_min_s32);

/// The reduction `R` of `value` over the warp, in every lane. Every lane of the warp calls it.
#[inline(always)]
#[must_use]
pub fn warp_reduce<R: Reduce<T>, T: ShflValue>(value: T) -> T {
    R::warp(value)
}

/// The reduction `R` of `value` over the block, in every thread: each warp reduces its own,
/// lane 0 of each writes it to `scratch[warp]`, and after a block barrier every warp reduces
/// the partials (missing warps count as [`Reduce::identity`]). Two `barrier.sync 0`: one
/// before the partials are read, one after, so `scratch` may be used again at once.
///
/// # Safety
/// Every thread of the block calls it, with the block's threads in whole warps (at most 1024,
/// so at most 32 warps: `scratch` holds one partial per warp) and not diverged; `scratch` is
/// this block's shared memory that no other code uses during the call.
#[inline(always)]
#[must_use]
pub unsafe fn block_reduce<R: Reduce<T>, T: ShflValue + crate::ptx::SharedValue>(
    value: T,
    scratch: SharedArray<T, 32>,
) -> T {
    let (thread, threads) = (ptx::thread_idx_x(), ptx::block_dim_x());
    let (warp, lane, warps) = (thread / 32, thread % 32, threads.div_ceil(32));
    let mine = R::warp(value);
    if lane == 0 {
        // SAFETY: warp < 32 (at most 1024 threads); the scratch is ours (caller).
        unsafe { scratch.at(warp).write(mine) };
    }
    ptx::barrier_sync();
    let partial = if lane < warps {
        // SAFETY: lane < warps: a partial written before the barrier.
        unsafe { scratch.at(lane).read() }
    } else {
        R::identity()
    };
    let all = R::warp(partial);
    // Nobody writes the scratch again (a next call) before everyone has read it.
    ptx::barrier_sync();
    all
}
