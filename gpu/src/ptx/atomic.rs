//! Global-memory atomics: the few a block needs to take work from a counter shared by the
//! grid ([`crate::schedule::TileQueue`]).

use core::arch::asm;

macro_rules! atom_add {
    ($(#[$doc:meta])* $name:ident => $instr:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `addr` is a 4-byte aligned word of global memory that only atomics touch while
        /// other threads may access it.
        #[inline(always)]
        pub unsafe fn $name(addr: *mut u32, value: u32) -> u32 {
            let old: u32;
            // SAFETY: the caller upholds the contract above.
            unsafe {
                asm!(
                    concat!($instr, " {old}, [{addr}], {value};"),
                    old = out(reg32) old,
                    addr = in(reg64) addr,
                    value = in(reg32) value,
                    options(nostack, preserves_flags)
                )
            }
            old
        }
    };
}

atom_add!(
    /// `atom.relaxed.gpu.global.add.u32 old, [addr], value;` — adds `value` to the word at
    /// `addr` and returns what it held, with no ordering of other accesses (SASS:
    /// `ATOMG.E.ADD.STRONG.GPU`). Two threads never get the same old value.
    atom_add_relaxed_gpu => "atom.relaxed.gpu.global.add.u32"
);
atom_add!(
    /// `atom.acq_rel.gpu.global.add.u32 old, [addr], value;` — as [`atom_add_relaxed_gpu`],
    /// and also a release of this thread's earlier accesses and an acquire of what the threads
    /// that added before it released: the add that tells the last of many threads everyone
    /// else is done. The fences make it dearer than a relaxed add (SASS: a `MEMBAR` and a cache
    /// invalidation around the `ATOMG`), so it is for once per block, not per tile.
    atom_add_acq_rel_gpu => "atom.acq_rel.gpu.global.add.u32"
);

/// `st.relaxed.gpu.global.u32 [addr], value;` — a store other threads' atomics on the same word
/// see whole (SASS: `STG.E.STRONG.GPU`).
///
/// # Safety
/// `addr` is a 4-byte aligned, writable word of global memory.
#[inline(always)]
pub unsafe fn st_relaxed_gpu(addr: *mut u32, value: u32) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "st.relaxed.gpu.global.u32 [{addr}], {value};",
            addr = in(reg64) addr,
            value = in(reg32) value,
            options(nostack, preserves_flags)
        )
    }
}
