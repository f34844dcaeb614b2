//! Global-memory accesses spelled out: 16-byte ones (a plain Rust copy of a 16-byte value
//! between two global addresses lowers to two 8-byte accesses on the NVPTX backend, a
//! `memcpy`, where one `LDG.E.128` / `STG.E.128` each is the point), and loads that skip L1
//! (`.cg`).

use core::arch::asm;

/// `ld.global.v4.b32 {a, b, c, d}, [addr];` — 16 bytes from global memory in one access
/// (SASS: `LDG.E.128`).
///
/// # Safety
/// `addr` is 16-byte aligned and 16 bytes of readable global memory that no thread writes
/// meanwhile.
#[inline(always)]
pub unsafe fn ld_global_v4(addr: *const [f32; 4]) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "ld.global.v4.b32 {{{a}, {b}, {c}, {d}}}, [{addr}];",
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
            addr = in(reg64) addr,
            options(readonly, nostack, preserves_flags)
        )
    }
    [a, b, c, d]
}

/// `st.global.v4.b32 [addr], {a, b, c, d};` — 16 bytes to global memory in one access (SASS:
/// `STG.E.128`).
///
/// # Safety
/// `addr` is 16-byte aligned and 16 bytes of writable global memory that no other thread
/// accesses meanwhile.
#[inline(always)]
pub unsafe fn st_global_v4(addr: *mut [f32; 4], [a, b, c, d]: [f32; 4]) {
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "st.global.v4.b32 [{addr}], {{{a}, {b}, {c}, {d}}};",
            addr = in(reg64) addr,
            a = in(reg32) a,
            b = in(reg32) b,
            c = in(reg32) c,
            d = in(reg32) d,
            options(nostack, preserves_flags)
        )
    }
}

/// `ld.global.cg.b32 v, [addr];` — 4 bytes from global memory cached in L2 only, not L1
/// (SASS: `LDG.E.STRONG.GPU`-class): what a chain of loads that must reach L2 (or DRAM) on
/// every step uses.
///
/// # Safety
/// `addr` is 4-byte aligned and 4 bytes of readable global memory that no thread writes
/// meanwhile.
#[inline(always)]
pub unsafe fn ld_global_cg_u32(addr: *const u32) -> u32 {
    let value: u32;
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "ld.global.cg.b32 {v}, [{addr}];",
            v = out(reg32) value,
            addr = in(reg64) addr,
            options(readonly, nostack, preserves_flags)
        )
    }
    value
}

/// `ld.global.cg.v4.b32 {a, b, c, d}, [addr];` — the 16-byte form of [`ld_global_cg_u32`].
///
/// # Safety
/// As [`ld_global_v4`].
#[inline(always)]
pub unsafe fn ld_global_cg_v4(addr: *const [u32; 4]) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller upholds the contract above.
    unsafe {
        asm!(
            "ld.global.cg.v4.b32 {{{a}, {b}, {c}, {d}}}, [{addr}];",
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
            addr = in(reg64) addr,
            options(readonly, nostack, preserves_flags)
        )
    }
    [a, b, c, d]
}

// Sixteen bytes of zeros in global memory, in every module that links this crate: the source
// of a copy that only zero-fills. `.global` variables start as zeros, and nothing writes it.
core::arch::global_asm!(".global .align 16 .b8 GPU_ZERO_CHUNK[16];");

/// `cvta.global.u64 p, GPU_ZERO_CHUNK;` — the generic address of 16 bytes of zeros in global
/// memory (16-byte aligned, never written): what a copy that only zero-fills reads, so that
/// every byte a copy reads lies inside memory a memory checker knows is valid.
#[inline(always)]
#[must_use]
pub fn zero_chunk() -> *const u8 {
    let p: *const u8;
    // SAFETY: takes the address of a module variable; reads and writes nothing. Not `pure`
    // on purpose: where it is used (the edge of a tile) it is formed again, one instruction,
    // instead of being hoisted and holding two registers across a kernel that needs them all.
    unsafe {
        asm!(
            "cvta.global.u64 {p}, GPU_ZERO_CHUNK;",
            p = out(reg64) p,
            options(nomem, nostack, preserves_flags)
        )
    }
    p
}
