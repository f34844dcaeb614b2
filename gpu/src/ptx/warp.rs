//! Warp-wide data exchange: `shfl.sync` (any 32-bit value from another lane) and
//! `redux.sync` (a whole warp's integer sum, minimum or maximum in one instruction, sm_80+).
//! Every wrapper names the full warp (`membermask = 0xffffffff`): all 32 lanes must execute
//! the same call, converged, or the result is undefined.

use core::arch::asm;

/// Declares `fn $name(value: u32, operand: u32) -> u32` for a `shfl.sync` mode.
macro_rules! shfl {
    ($(#[$doc:meta])* $name:ident => $mode:literal, $clamp:literal) => {
        $(#[$doc])*
        #[doc = concat!(
            "\n\nLowers to `shfl.sync.", $mode, ".b32 d, value, operand, ", $clamp,
            ", 0xffffffff;` (SASS `SHFL.", $mode, "`)."
        )]
        #[inline(always)]
        #[must_use]
        pub fn $name(value: u32, operand: u32) -> u32 {
            let out: u32;
            // SAFETY: exchanges registers within the warp; the caller's contract (every
            // lane converged here) is the module's.
            unsafe {
                asm!(
                    concat!("shfl.sync.", $mode, ".b32 {out}, {value}, {operand}, ", $clamp,
                        ", 0xffffffff;"),
                    out = out(reg32) out,
                    value = in(reg32) value,
                    operand = in(reg32) operand,
                    options(nomem, nostack, preserves_flags)
                )
            };
            out
        }
    };
}

shfl!(
    /// `value` of lane `lane ^ mask` (butterfly): the step of a reduction every lane ends
    /// with.
    shfl_sync_bfly_b32 => "bfly", "0x1f"
);
shfl!(
    /// `value` of lane `lane + delta`, or this lane's own where that is past lane 31.
    shfl_sync_down_b32 => "down", "0x1f"
);
/// `shfl.sync.idx.b32 d, value, lane, 0x1f, 0xffffffff;` — every lane of the warp gets
/// `value` from lane `lane`. All 32 lanes must execute it together.
///
/// Besides exchanging data, it tells ptxas the result is the same across the warp, so code
/// that depends on it (a warp-specialized kernel's role branch and the loops inside it) can
/// use the uniform datapath — what CUTLASS's `canonical_warp_idx_sync()` does.
#[inline(always)]
pub fn shfl_sync_idx(value: u32, lane: u32) -> u32 {
    let out: u32;
    // SAFETY: a register exchange within the warp; touches no memory.
    unsafe {
        asm!(
            "shfl.sync.idx.b32 {out}, {value}, {lane}, 0x1f, 0xffffffff;",
            out = out(reg32) out,
            value = in(reg32) value,
            lane = in(reg32) lane,
            options(nomem, nostack, preserves_flags)
        )
    }
    out
}

/// Declares `fn $name(value: $ty) -> $ty` for a `redux.sync` operation.
macro_rules! redux {
    ($(#[$doc:meta])* $name:ident, $ty:ty => $op:literal) => {
        $(#[$doc])*
        #[doc = concat!("\n\nLowers to `", $op, " d, value, 0xffffffff;` (SASS `REDUX`).")]
        #[inline(always)]
        #[must_use]
        pub fn $name(value: $ty) -> $ty {
            let out: $ty;
            // SAFETY: a warp-wide register reduction; every lane converged here (module).
            unsafe {
                asm!(
                    concat!($op, " {out}, {value}, 0xffffffff;"),
                    out = out(reg32) out,
                    value = in(reg32) value,
                    options(nomem, nostack, preserves_flags)
                )
            };
            out
        }
    };
}

redux!(
    /// The warp's sum, wrapping, in every lane.
    redux_sync_add_u32, u32 => "redux.sync.add.u32"
);
redux!(
    /// The warp's smallest value, in every lane.
    redux_sync_min_u32, u32 => "redux.sync.min.u32"
);
redux!(
    /// The warp's largest value, in every lane.
    redux_sync_max_u32, u32 => "redux.sync.max.u32"
);
redux!(
    /// The warp's sum, wrapping, in every lane.
    redux_sync_add_s32, i32 => "redux.sync.add.s32"
);
redux!(
    /// The warp's smallest value, in every lane.
    redux_sync_min_s32, i32 => "redux.sync.min.s32"
);
redux!(
    /// The warp's largest value, in every lane.
    redux_sync_max_s32, i32 => "redux.sync.max.s32"
);
