//! The objects in shared memory that the instructions work on and whose size and alignment the
//! host must know too: the [`Mbarrier`]. Plain Rust, built for the host as well (the one part
//! of the instruction layer that is), so that [`crate::layout`] can lay them out on both sides.

/// An `mbarrier`: the 8-byte, 8-byte aligned object the `mbarrier.*` instructions work on. Its
/// bits belong to the hardware; Rust code only ever holds its address
/// ([`Shared<Mbarrier>`](crate::ptx::Shared)).
#[repr(C, align(8))]
pub struct Mbarrier {
    _state: u64,
}

impl Mbarrier {
    /// Bytes of shared memory one mbarrier takes.
    pub const BYTES: u32 = size_of::<Self>() as u32;
}
