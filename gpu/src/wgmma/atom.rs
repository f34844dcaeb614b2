//! The multiply atom ([`Wgmma`]: one k-tile of any [`Element`] into FP32 accumulators, A from
//! shared memory or registers, B K-major or MN-major) and multiplies in flight
//! ([`InFlight`]: issue and wait as separate calls, the accumulators and the stages the
//! multiplies read held until a wait covers them).

use super::{
    AFragment, Accumulator, BOperand, Bf16, E4M3, E5M2, Element, F16, SwizzledKMajor,
    SwizzledMnMajor,
};
use crate::ptx::{self, MatrixDescriptor};
use core::marker::PhantomData;

/// The tensor-core multiply of an `M` x `N` tile of FP32 accumulators by one k-tile of `E`:
/// A `M` rows of a [`SwizzledKMajor`] tile (one 128-byte row of K each), B `N` rows or columns
/// of a tile stored as [`BOperand`] says. `M = 64` (the default): four `wgmma.mma_async` of 32
/// bytes of K each (m64nNk16 for 16-bit types, m64nNk32 for 8-bit), one commit group, into an
/// [`Accumulator`]. `M = 128` (16-bit types, `N` 64 or 128): two 64-row tiles stacked, eight
/// `wgmma.mma_async` by the same B in one commit group, into `[Accumulator; 2]` (rows 0-63,
/// 64-127) — one warpgroup's whole 128 x 128 tile, as a ping-pong consumer multiplies it.
/// The parameters read element, columns, rows: `Wgmma<E, 64, 128>` is 128 rows by 64 columns.
pub struct Wgmma<E: Element, const N: u32, const M: u32 = 64>(PhantomData<E>);

/// Accumulators a `wgmma.wait_group` can name: the tile sizes the atoms write.
pub trait TiedAccumulator {
    /// `wgmma.wait_group N` with this thread's accumulators as the statement's operands.
    ///
    /// # Safety
    /// The whole warpgroup, converged; after it no group that writes these accumulators is
    /// pending (`N` counts the later groups, on other accumulators).
    unsafe fn wait_tied<const N: u32>(&mut self);
}

macro_rules! tied {
    ($($regs:literal => $f:ident),*) => {$(
        impl TiedAccumulator for Accumulator<$regs> {
            #[inline(always)]
            unsafe fn wait_tied<const N: u32>(&mut self) {
                // SAFETY: forwarded contract.
                unsafe { ptx::$f::<N>(&mut self.regs) }
            }
        }
    )*};
}
tied!(32 => wgmma_wait_group_32, 64 => wgmma_wait_group_64, 128 => wgmma_wait_group_128);

// Two stacked tiles: one wait naming both (`[Accumulator<R>; 2]` is `[f32; 2 R]`, the
// accumulator being `repr(transparent)`).
macro_rules! tied_stacked {
    ($($regs:literal => $f:ident),*) => {$(
        impl TiedAccumulator for [Accumulator<$regs>; 2] {
            #[inline(always)]
            unsafe fn wait_tied<const N: u32>(&mut self) {
                let both = self as *mut [Accumulator<$regs>; 2] as *mut [f32; 2 * $regs];
                // SAFETY: forwarded contract; the same memory (repr(transparent)), borrowed
                // through `self` for the call.
                unsafe { ptx::$f::<N>(&mut *both) }
            }
        }
    )*};
}
tied_stacked!(32 => wgmma_wait_group_64, 64 => wgmma_wait_group_128);

/// A `wgmma` shape and input type with B stored as `B`: issues one k-tile's multiplies into
/// `Acc` (see [`crate::ptx::wgmma_k_tile_m64n256_bf16`] for the statement and its rules).
pub trait WarpgroupMma<B: BOperand> {
    /// The accumulator tile (N / 2 registers per thread).
    type Acc: TiedAccumulator;

    /// Issues `acc (+)= A B` over one k-tile and commits it as one group; returns with the
    /// multiplies in flight.
    ///
    /// # Safety
    /// As [`crate::ptx::wgmma_k_tile_m64n256_bf16`]: the warpgroup together; the descriptors
    /// describe tiles that are filled and not written, and `acc` is not touched, until a
    /// `wgmma.wait_group` covers this group ([`InFlight`] keeps both).
    unsafe fn issue(
        acc: &mut Self::Acc,
        a: MatrixDescriptor,
        b: MatrixDescriptor,
        accumulate: bool,
    );
}

/// A [`WarpgroupMma`] that also takes A from registers (the 64-row atoms).
pub trait WarpgroupMmaRegs<B: BOperand>: WarpgroupMma<B> {
    /// As [`WarpgroupMma::issue`], A from registers ([`AFragment`]).
    ///
    /// # Safety
    /// As [`WarpgroupMma::issue`], and the fragment's registers are not written until a wait
    /// covers this group.
    unsafe fn issue_a_regs(
        acc: &mut Self::Acc,
        a: &AFragment,
        b: MatrixDescriptor,
        accumulate: bool,
    );
}

// Each (type, shape): B K-major; for 16-bit types B MN-major too. The k-steps and transpose
// bit are the layouts' (`BOperand`), written out as the instruction's const generics (checked
// equal below).
macro_rules! atoms {
    ($($e:ident $n:literal => $regs:literal, $f:ident, $rs:ident $(, $mn:ident)?;)*) => {$(
        impl<const R: u32> WarpgroupMma<SwizzledKMajor<R, $e>> for Wgmma<$e, $n> {
            type Acc = Accumulator<$regs>;
            #[inline(always)]
            unsafe fn issue(acc: &mut Self::Acc, a: MatrixDescriptor, b: MatrixDescriptor, accumulate: bool) {
                // SAFETY: forwarded contract; B K-major.
                unsafe { ptx::$f::<2, 2, 0>(&mut acc.regs, a, b, accumulate) }
            }
        }
        impl<const R: u32> WarpgroupMmaRegs<SwizzledKMajor<R, $e>> for Wgmma<$e, $n> {
            #[inline(always)]
            unsafe fn issue_a_regs(acc: &mut Self::Acc, a: &AFragment, b: MatrixDescriptor, accumulate: bool) {
                // SAFETY: forwarded contract; B K-major.
                unsafe { ptx::$rs::<2, 0>(&mut acc.regs, &a.regs, b, accumulate) }
            }
        }
        $(atoms!(@$mn $e $n => $regs, $f, $rs);)?
    )*};
    (@mn $e:ident $n:literal => $regs:literal, $f:ident, $rs:ident) => {
        impl<const R: u32> WarpgroupMma<SwizzledMnMajor<R, $e>> for Wgmma<$e, $n> {
            type Acc = Accumulator<$regs>;
            #[inline(always)]
            unsafe fn issue(acc: &mut Self::Acc, a: MatrixDescriptor, b: MatrixDescriptor, accumulate: bool) {
                // SAFETY: forwarded contract; B MN-major (transposed).
                unsafe { ptx::$f::<2, 128, 1>(&mut acc.regs, a, b, accumulate) }
            }
        }
        impl<const R: u32> WarpgroupMmaRegs<SwizzledMnMajor<R, $e>> for Wgmma<$e, $n> {
            #[inline(always)]
            unsafe fn issue_a_regs(acc: &mut Self::Acc, a: &AFragment, b: MatrixDescriptor, accumulate: bool) {
                // SAFETY: forwarded contract; B MN-major (transposed).
                unsafe { ptx::$rs::<128, 1>(&mut acc.regs, &a.regs, b, accumulate) }
            }
        }
    };
}

atoms! {
    Bf16 64 => 32, wgmma_k_tile_m64n64_bf16, wgmma_k_tile_m64n64_bf16_rs, mn;
    Bf16 128 => 64, wgmma_k_tile_m64n128_bf16, wgmma_k_tile_m64n128_bf16_rs, mn;
    Bf16 256 => 128, wgmma_k_tile_m64n256_bf16, wgmma_k_tile_m64n256_bf16_rs, mn;
    F16 64 => 32, wgmma_k_tile_m64n64_f16, wgmma_k_tile_m64n64_f16_rs, mn;
    F16 128 => 64, wgmma_k_tile_m64n128_f16, wgmma_k_tile_m64n128_f16_rs, mn;
    F16 256 => 128, wgmma_k_tile_m64n256_f16, wgmma_k_tile_m64n256_f16_rs, mn;
    E4M3 64 => 32, wgmma_k_tile_m64n64_e4m3, wgmma_k_tile_m64n64_e4m3_rs;
    E4M3 128 => 64, wgmma_k_tile_m64n128_e4m3, wgmma_k_tile_m64n128_e4m3_rs;
    E4M3 256 => 128, wgmma_k_tile_m64n256_e4m3, wgmma_k_tile_m64n256_e4m3_rs;
    E5M2 64 => 32, wgmma_k_tile_m64n64_e5m2, wgmma_k_tile_m64n64_e5m2_rs;
    E5M2 128 => 64, wgmma_k_tile_m64n128_e5m2, wgmma_k_tile_m64n128_e5m2_rs;
    E5M2 256 => 128, wgmma_k_tile_m64n256_e5m2, wgmma_k_tile_m64n256_e5m2_rs;
}

/// A 64-row step of a K-major A tile in descriptor units: 64 rows of 128 bytes, in 16s.
const A_64_ROWS: u64 = 64 * 128 / 16;

// The stacked 128-row atoms of 16-bit types: B K-major or MN-major, N 64 or 128.
macro_rules! stacked_atoms {
    ($($e:ident $n:literal => $regs:literal, $f:ident;)*) => {$(
        impl<const R: u32> WarpgroupMma<SwizzledKMajor<R, $e>> for Wgmma<$e, $n, 128> {
            type Acc = [Accumulator<$regs>; 2];
            #[inline(always)]
            unsafe fn issue(acc: &mut Self::Acc, a: MatrixDescriptor, b: MatrixDescriptor, accumulate: bool) {
                let [lo, hi] = acc;
                // SAFETY: forwarded contract (A's 128 rows from `a`); B K-major.
                unsafe { ptx::$f::<2, A_64_ROWS, 2, 0>(&mut lo.regs, &mut hi.regs, a, b, accumulate) }
            }
        }
        impl<const R: u32> WarpgroupMma<SwizzledMnMajor<R, $e>> for Wgmma<$e, $n, 128> {
            type Acc = [Accumulator<$regs>; 2];
            #[inline(always)]
            unsafe fn issue(acc: &mut Self::Acc, a: MatrixDescriptor, b: MatrixDescriptor, accumulate: bool) {
                let [lo, hi] = acc;
                // SAFETY: forwarded contract (A's 128 rows from `a`); B MN-major (transposed).
                unsafe { ptx::$f::<2, A_64_ROWS, 128, 1>(&mut lo.regs, &mut hi.regs, a, b, accumulate) }
            }
        }
    )*};
}

stacked_atoms! {
    Bf16 64 => 32, wgmma_k_tile_m128n64_bf16;
    Bf16 128 => 64, wgmma_k_tile_m128n128_bf16;
    F16 64 => 32, wgmma_k_tile_m128n64_f16;
    F16 128 => 64, wgmma_k_tile_m128n128_f16;
}

const _: () = {
    assert!(SwizzledKMajor::<8, Bf16>::K_STEP == 2 && SwizzledKMajor::<8, E4M3>::K_STEP == 2);
    assert!(
        SwizzledMnMajor::<64, Bf16>::K_STEP == 128 && SwizzledMnMajor::<64, F16>::K_STEP == 128
    );
};

/// A warpgroup's multiplies in flight on one accumulator tile, at most `K` groups pending
/// after each issue: the accumulators are borrowed from [`InFlight::new`] to
/// [`InFlight::finish`] (the wait that names them), so Rust code cannot read or write them
/// while a multiply may still be writing them; each group's stage `S` (what its operands were
/// read from: a held pipeline stage) is kept until a wait shows the group complete, then
/// handed back to be released. CUTLASS's mainloop with `K` MMAs in flight, the release
/// trailing the read by `K` k-tiles.
///
/// `K = 0` waits for each group before the next issue (one multiply in flight, nothing beside
/// it); `K = 1` keeps the tensor cores fed across the wait for the next stage.
#[must_use = "the accumulators are complete only after `finish`"]
pub struct InFlight<'acc, A: TiedAccumulator, S, const K: usize> {
    acc: &'acc mut A,
    /// The stages of the last `K` groups, oldest first (`None`: fewer issued).
    held: [Option<S>; K],
}

impl<'acc, A: TiedAccumulator, S, const K: usize> InFlight<'acc, A, S, K> {
    /// Starts multiplying into `acc` (nothing is issued yet).
    #[inline(always)]
    pub fn new(acc: &'acc mut A) -> Self {
        const { assert!(K <= 7, "wgmma.wait_group takes 0..=7") };
        InFlight {
            acc,
            held: [const { None }; K],
        }
    }

    /// Issues one k-tile into the accumulators (`M`, A and B from shared memory), then waits
    /// until at most `K` groups are pending (`wgmma.wait_group K`): returns the stage of the
    /// group that completed by then (issued `K` calls ago; `None` during the first `K`).
    ///
    /// # Safety
    /// The whole warpgroup, converged, with the same arguments; the descriptors describe
    /// `stage`'s tiles, filled (the copies' completion observed) and not written until the
    /// stage comes back from this call or [`finish`](Self::finish).
    #[inline(always)]
    pub unsafe fn mma<M: WarpgroupMma<B, Acc = A>, B: BOperand>(
        &mut self,
        stage: S,
        a: MatrixDescriptor,
        b: MatrixDescriptor,
        accumulate: bool,
    ) -> Option<S> {
        // SAFETY: forwarded contract; the accumulators are borrowed by `self` until `finish`.
        unsafe { M::issue(self.acc, a, b, accumulate) };
        // SAFETY: the whole warpgroup (contract).
        unsafe { self.retire(stage) }
    }

    /// As [`mma`](Self::mma), A from registers.
    ///
    /// # Safety
    /// As [`mma`](Self::mma); with `K > 0`, `a`'s registers are not written until the group
    /// completes — a loop that loads a fresh fragment per k-tile rewrites the same PTX
    /// registers one iteration later, so it needs `K = 0`.
    #[inline(always)]
    pub unsafe fn mma_a_regs<M: WarpgroupMmaRegs<B> + WarpgroupMma<B, Acc = A>, B: BOperand>(
        &mut self,
        stage: S,
        a: &AFragment,
        b: MatrixDescriptor,
        accumulate: bool,
    ) -> Option<S> {
        // SAFETY: forwarded contract.
        unsafe { M::issue_a_regs(self.acc, a, b, accumulate) };
        // SAFETY: the whole warpgroup (contract).
        unsafe { self.retire(stage) }
    }

    /// `wgmma.wait_group K`, then the oldest stage out and `stage` in.
    #[inline(always)]
    unsafe fn retire(&mut self, stage: S) -> Option<S> {
        // SAFETY: the whole warpgroup (callers' contract).
        unsafe { wait_group_k::<K>() };
        if K == 0 {
            return Some(stage);
        }
        let oldest = self.held.first_mut().and_then(Option::take);
        let mut i = 0;
        while i + 1 < K {
            self.held[i] = self.held[i + 1].take();
            i += 1;
        }
        if let Some(last) = self.held.last_mut() {
            *last = Some(stage);
        }
        oldest
    }

    /// Waits for every group (`wgmma.wait_group 0` naming the accumulators) and gives back the
    /// stages still held, oldest first: the accumulators are complete and free again.
    ///
    /// # Safety
    /// The whole warpgroup, converged.
    #[inline(always)]
    pub unsafe fn finish(self) -> [Option<S>; K] {
        // SAFETY: forwarded contract; no later group is pending on other registers.
        unsafe { self.acc.wait_tied::<0>() };
        self.held
    }
}

/// `wgmma.wait_group K` for a `usize` count.
///
/// # Safety
/// As [`ptx::wgmma_wait_group`].
#[inline(always)]
unsafe fn wait_group_k<const K: usize>() {
    // SAFETY: forwarded contract (K <= 7, checked in `InFlight::new`).
    unsafe {
        match K {
            0 => ptx::wgmma_wait_group::<0>(),
            1 => ptx::wgmma_wait_group::<1>(),
            2 => ptx::wgmma_wait_group::<2>(),
            3 => ptx::wgmma_wait_group::<3>(),
            4 => ptx::wgmma_wait_group::<4>(),
            5 => ptx::wgmma_wait_group::<5>(),
            6 => ptx::wgmma_wait_group::<6>(),
            _ => ptx::wgmma_wait_group::<7>(),
        }
    }
}

/// Multiplies issued into one accumulator tile and not yet waited for, with what they read
/// kept borrowed (`H`: the stages, the A fragments): the form for a kernel that keeps two
/// tiles' multiplies in flight at once (attention's `S = Q K^T` beside the previous block's
/// `O += P V`), where [`InFlight`]'s one-tile ring does not fit. Made empty with
/// [`new`](Self::new); each [`mma`](Self::mma) or [`mma_a_regs`](Self::mma_a_regs) issues
/// one k-tile (one commit group) into the tile; [`wait`](Self::wait) is the `wgmma.wait_group
/// N` that names the accumulators and hands `H` back. Until then Rust code can neither read
/// nor write the accumulators, nor write what `H` borrows.
#[must_use = "the accumulators are complete only after `wait`"]
pub struct Issued<'acc, A: TiedAccumulator, H> {
    acc: &'acc mut A,
    held: H,
}

impl<'acc, A: TiedAccumulator, H> Issued<'acc, A, H> {
    /// Starts issuing into `acc`, keeping `held` (nothing is issued yet).
    #[inline(always)]
    pub fn new(acc: &'acc mut A, held: H) -> Self {
        Issued { acc, held }
    }

    /// Issues one k-tile, A and B from shared memory: `acc (+)= A B`, one commit group.
    ///
    /// # Safety
    /// As [`WarpgroupMma::issue`]: the whole warpgroup, converged, with the same arguments;
    /// the descriptors describe tiles that are filled and that nothing writes until
    /// [`wait`](Self::wait) shows this group complete (`held` keeps the stages).
    #[inline(always)]
    pub unsafe fn mma<M: WarpgroupMma<B, Acc = A>, B: BOperand>(
        &mut self,
        a: MatrixDescriptor,
        b: MatrixDescriptor,
        accumulate: bool,
    ) {
        // SAFETY: forwarded contract; the accumulators are borrowed until `wait`.
        unsafe { M::issue(self.acc, a, b, accumulate) }
    }

    /// As [`mma`](Self::mma), A from registers.
    ///
    /// # Safety
    /// As [`mma`](Self::mma), and `a` is not written until the wait: pass it borrowed in
    /// `held` (`&[AFragment; _]`), so the borrow checker keeps it.
    #[inline(always)]
    pub unsafe fn mma_a_regs<M: WarpgroupMmaRegs<B> + WarpgroupMma<B, Acc = A>, B: BOperand>(
        &mut self,
        a: &AFragment,
        b: MatrixDescriptor,
        accumulate: bool,
    ) {
        // SAFETY: forwarded contract.
        unsafe { M::issue_a_regs(self.acc, a, b, accumulate) }
    }

    /// `wgmma.wait_group N` naming the accumulators: returns once at most `N` groups are
    /// pending, every one of them committed after this tile's last — so this tile's are
    /// complete — and hands back what they read.
    ///
    /// # Safety
    /// The whole warpgroup, converged; `N` is at most the number of groups (on other
    /// accumulators) this warpgroup committed after this tile's last.
    #[inline(always)]
    pub unsafe fn wait<const N: u32>(self) -> H {
        // SAFETY: forwarded contract.
        unsafe { self.acc.wait_tied::<N>() };
        self.held
    }
}
