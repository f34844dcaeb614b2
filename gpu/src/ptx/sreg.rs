//! Special registers (`mov.u32 r, %sreg;`).

use core::arch::asm;

special_register!(
    /// This thread's index in its block, x dimension.
    thread_idx_x => "%tid.x", below 1024
);
special_register!(
    /// The block's size, x dimension.
    block_dim_x => "%ntid.x", in 1..1025
);
special_register!(
    /// This block's index in the grid, x dimension.
    block_idx_x => "%ctaid.x", below 0x8000_0000
);
special_register!(
    /// This block's index in the grid, y dimension.
    block_idx_y => "%ctaid.y", below 0x1_0000
);
special_register!(
    /// The grid's size in blocks, x dimension.
    grid_dim_x => "%nctaid.x", in 1..0x8000_0000
);
special_register!(
    /// The block's size, y dimension.
    block_dim_y => "%ntid.y", in 1..1025
);
special_register!(
    /// The block's size, z dimension.
    block_dim_z => "%ntid.z", in 1..65
);
special_register!(
    /// The grid's size in blocks, y dimension.
    grid_dim_y => "%nctaid.y", in 1..0x1_0000
);
special_register!(
    /// The grid's size in blocks, z dimension.
    grid_dim_z => "%nctaid.z", in 1..0x1_0000
);
special_register!(
    /// This thread's lane in its warp (0..32).
    lane_id => "%laneid", below 32
);

/// `mov.u64 r, %clock64;` — the SM's cycle counter. Not `pure`: each read is a new value, and
/// it is not moved across other side effects (the loads of a latency chain between two reads
/// stay between them). The counter runs at the SM clock, which varies with power and load.
#[inline(always)]
#[must_use]
pub fn clock64() -> u64 {
    let value: u64;
    // SAFETY: reading a special register; a memory clobber keeps it in program order.
    unsafe { asm!("mov.u64 {0}, %clock64;", out(reg64) value, options(nostack, preserves_flags)) };
    value
}
