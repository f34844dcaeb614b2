//! What a launch passes, by value: its geometry ([`LaunchConfig`]) and arguments
//! ([`KernelArg`], [`ArgList`]), and the record of the last one that the watchdog reports.

use crate::tensor_map::TensorMap;
use cudarc::driver::sys;
use std::ffi::c_void;

/// Grid, block, dynamic shared memory and cluster shape of a launch (one-dimensional blocks;
/// a one- or two-dimensional grid).
///
/// ```
/// use gpu_runtime::{LaunchConfig, NO_CLUSTER};
/// // 1024 elements: 4 blocks of 256 threads, no dynamic shared memory.
/// let config = LaunchConfig::linear(4, 256, 0);
/// assert_eq!((config.grid, config.threads, config.cluster), ((4, 1), 256, NO_CLUSTER));
/// // The same blocks in thread block clusters of two (sm_90).
/// let paired = config.with_cluster([2, 1, 1]);
/// assert_eq!((paired.grid, paired.cluster), ((4, 1), [2, 1, 1]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in x and y.
    pub grid: (u32, u32),
    /// Threads of a block (x only).
    pub threads: u32,
    /// Dynamic shared memory of a block, in bytes.
    pub shared_bytes: u32,
    /// Blocks of a thread block cluster in x, y and z (sm_90); [`NO_CLUSTER`] launches plain
    /// blocks (or the clusters the kernel itself declares: see
    /// [`Kernel::launch`](crate::Kernel::launch)).
    pub cluster: [u32; 3],
}

/// The cluster shape of a launch without clusters: one block each.
pub const NO_CLUSTER: [u32; 3] = [1, 1, 1];

impl LaunchConfig {
    /// `blocks` blocks of `threads` threads in one dimension, no clusters.
    pub const fn linear(blocks: u32, threads: u32, shared_bytes: u32) -> LaunchConfig {
        LaunchConfig {
            grid: (blocks, 1),
            threads,
            shared_bytes,
            cluster: NO_CLUSTER,
        }
    }

    /// The same launch in thread block clusters of `cluster` blocks (x, y, z); each grid
    /// dimension must be a multiple of the cluster's (checked at launch).
    pub const fn with_cluster(self, cluster: [u32; 3]) -> LaunchConfig {
        LaunchConfig { cluster, ..self }
    }
}

/// One kernel argument as it is passed (and as the watchdog's report shows it).
///
/// ```
/// use gpu_runtime::KernelArg;
/// // What a launch of `scale(x: *const f32, n: u32, alpha: f32)` passes, by value.
/// let args = [KernelArg::Ptr(0x7f00_0000), KernelArg::U32(1024), KernelArg::F32(2.0)];
/// assert!(matches!(args[1], KernelArg::U32(1024)));
/// assert_ne!(args[1], KernelArg::U64(1024));
/// ```
// A launch's few arguments live in a short array for one call; a map is passed by value, so it
// is held by value here too.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelArg {
    /// A device address (`*const T` / `*mut T` in the kernel's signature).
    Ptr(sys::CUdeviceptr),
    /// A `u32`.
    U32(u32),
    /// A `u64`.
    U64(u64),
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// A tensor map, by value.
    TensorMap(TensorMap),
    /// A `#[repr(C)]` struct of 4-byte fields, by value ([`StructArg`]).
    Struct(StructArg),
}

/// The bytes of a `#[repr(C)]` kernel parameter struct whose fields are all 4-byte numbers
/// (`u32`, `i32`, `f32`), up to [`StructArg::MAX_WORDS`] of them: what the device declares as
/// `.param .align 4 .b8 p[N]` (a struct by value), the driver copying `N` bytes from here.
///
/// ```
/// use gpu_runtime::StructArg;
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Shape {
///     rows: u32,
///     cols: u32,
///     scale: f32,
/// }
/// let shape = Shape { rows: 4, cols: 8, scale: 0.5 };
/// // SAFETY: `repr(C)`, three 4-byte numbers, as the kernel declares its parameter.
/// let arg = unsafe { StructArg::new(&shape) };
/// assert_eq!(arg.words(), &[4, 8, 0.5f32.to_bits()]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructArg {
    words: [u32; StructArg::MAX_WORDS],
    len: usize,
}

impl StructArg {
    /// The most 4-byte fields a struct argument may have.
    pub const MAX_WORDS: usize = 16;

    /// The struct `value`'s bytes.
    ///
    /// # Safety
    /// `T` is `#[repr(C)]` and made only of 4-byte numbers (no padding, no pointers, no
    /// references), at most [`Self::MAX_WORDS`] of them, and is what the kernel's parameter
    /// is declared as.
    pub unsafe fn new<T: Copy>(value: &T) -> StructArg {
        const { assert!(size_of::<T>().is_multiple_of(4) && size_of::<T>() <= 4 * 16) };
        let len = size_of::<T>() / 4;
        let mut words = [0u32; StructArg::MAX_WORDS];
        // SAFETY: `T` is `len` initialized 4-byte words (contract); `words` holds at least
        // `len` and does not overlap `value`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::from_ref(value).cast::<u32>(),
                words.as_mut_ptr(),
                len,
            )
        };
        StructArg { words, len }
    }

    /// The words, in field order.
    pub fn words(&self) -> &[u32] {
        &self.words[..self.len]
    }

    /// All the words (the launch passes their address).
    pub(crate) fn words_array(&self) -> &[u32; StructArg::MAX_WORDS] {
        &self.words
    }
}

/// The most parameters a kernel declared through [`Params`](crate::Params) takes.
pub const MAX_PARAMS: usize = 8;

/// The arguments of one launch, by value, in a fixed array (no allocation on the launch path).
///
/// ```
/// use gpu_runtime::KernelArg;
/// use gpu_runtime::args::ArgList;
/// let mut args = ArgList::new();
/// args.push(KernelArg::Ptr(0x7f00));
/// args.push(KernelArg::U32(5));
/// assert_eq!(args.as_slice(), &[KernelArg::Ptr(0x7f00), KernelArg::U32(5)]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ArgList {
    args: [KernelArg; MAX_PARAMS],
    len: usize,
}

impl ArgList {
    /// No arguments.
    pub const fn new() -> ArgList {
        ArgList {
            args: [KernelArg::U32(0); MAX_PARAMS],
            len: 0,
        }
    }

    /// Appends `arg`.
    ///
    /// # Panics
    /// Past [`MAX_PARAMS`] arguments (a [`Params`](crate::Params) tuple has at most that many).
    pub fn push(&mut self, arg: KernelArg) {
        assert!(
            self.len < MAX_PARAMS,
            "a kernel takes at most {MAX_PARAMS} parameters"
        );
        self.args[self.len] = arg;
        self.len += 1;
    }

    /// The arguments, in order.
    pub fn as_slice(&self) -> &[KernelArg] {
        &self.args[..self.len]
    }

    /// The `kernelParams` array of `cuLaunchKernel(Ex)`: the address of each argument's value
    /// (a `CUdeviceptr`, a number, a tensor map's 128 bytes), valid while `self` is neither
    /// moved nor dropped; unused slots are null.
    pub(crate) fn param_pointers(&self) -> [*mut c_void; MAX_PARAMS] {
        let mut pointers = [std::ptr::null_mut(); MAX_PARAMS];
        for (slot, arg) in pointers.iter_mut().zip(self.as_slice()) {
            *slot = match arg {
                KernelArg::Ptr(ptr) => std::ptr::from_ref(ptr).cast_mut().cast(),
                KernelArg::U32(value) => std::ptr::from_ref(value).cast_mut().cast(),
                KernelArg::U64(value) => std::ptr::from_ref(value).cast_mut().cast(),
                KernelArg::F32(value) => std::ptr::from_ref(value).cast_mut().cast(),
                KernelArg::F64(value) => std::ptr::from_ref(value).cast_mut().cast(),
                // The encoded map is the struct's first field (`repr(C)`), as cudarc passes it.
                KernelArg::TensorMap(map) => std::ptr::from_ref(map).cast_mut().cast(),
                // The driver copies the parameter's declared size from the words.
                KernelArg::Struct(s) => s.words.as_ptr().cast_mut().cast(),
            };
        }
        pointers
    }
}

impl Default for ArgList {
    fn default() -> Self {
        ArgList::new()
    }
}

/// The last launch, for the watchdog's report (recorded by value: no allocation per launch;
/// described only on a hang).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LastLaunch {
    launch: Option<(&'static str, LaunchConfig, ArgList)>,
}

impl LastLaunch {
    pub(crate) fn record(&mut self, name: &'static str, config: LaunchConfig, args: ArgList) {
        self.launch = Some((name, config, args));
    }

    pub(crate) fn describe(&self) -> String {
        match &self.launch {
            None => "none".into(),
            Some((name, c, args)) => format!(
                "`{name}` ({} x {} blocks{} of {} threads, {} B dynamic shared memory, \
                 parameters {})",
                c.grid.0,
                c.grid.1,
                match c.cluster {
                    NO_CLUSTER => String::new(),
                    [x, y, z] => format!(" in clusters of {x} x {y} x {z}"),
                },
                c.threads,
                c.shared_bytes,
                describe_args(args.as_slice())
            ),
        }
    }
}

/// Kernel arguments as the watchdog's report shows them.
fn describe_args(args: &[KernelArg]) -> String {
    let each: Vec<String> = args
        .iter()
        .map(|a| match a {
            KernelArg::Ptr(p) => format!("{p:#x}"),
            KernelArg::U32(v) => v.to_string(),
            KernelArg::U64(v) => v.to_string(),
            KernelArg::F32(v) => format!("{v:?}"),
            KernelArg::F64(v) => format!("{v:?}"),
            KernelArg::TensorMap(m) => format!("{m:?}"),
            KernelArg::Struct(s) => format!("{:x?}", s.words()),
        })
        .collect();
    format!("({})", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_launch_is_described_with_its_geometry_and_arguments() {
        let mut last = LastLaunch::default();
        assert_eq!(last.describe(), "none");
        let mut args = ArgList::new();
        args.push(KernelArg::Ptr(0x7f00));
        args.push(KernelArg::U32(5));
        args.push(KernelArg::F32(1.5));
        last.record("k", LaunchConfig::linear(3, 32, 1024), args);
        assert_eq!(
            last.describe(),
            "`k` (3 x 1 blocks of 32 threads, 1024 B dynamic shared memory, parameters \
             (0x7f00, 5, 1.5))"
        );
        // A later launch replaces the record.
        last.record("j", LaunchConfig::linear(1, 64, 0), ArgList::new());
        assert_eq!(
            last.describe(),
            "`j` (1 x 1 blocks of 64 threads, 0 B dynamic shared memory, parameters ())"
        );
    }

    #[test]
    fn a_cluster_launch_is_described_with_its_cluster_shape() {
        let mut last = LastLaunch::default();
        let config = LaunchConfig::linear(8, 128, 0).with_cluster([4, 1, 1]);
        assert_eq!(config.grid, (8, 1));
        last.record("c", config, ArgList::new());
        assert_eq!(
            last.describe(),
            "`c` (8 x 1 blocks in clusters of 4 x 1 x 1 of 128 threads, 0 B dynamic shared \
             memory, parameters ())"
        );
        assert!(format!("{config:?}").contains("cluster: [4, 1, 1]"));
    }

    #[test]
    fn param_pointers_address_each_value() {
        let mut args = ArgList::new();
        args.push(KernelArg::Ptr(0x7f00));
        args.push(KernelArg::U32(5));
        args.push(KernelArg::F64(2.5));
        let pointers = args.param_pointers();
        // SAFETY: each pointer addresses the value of its argument in `args`, alive here.
        unsafe {
            assert_eq!(*pointers[0].cast::<sys::CUdeviceptr>(), 0x7f00);
            assert_eq!(*pointers[1].cast::<u32>(), 5);
            assert_eq!(*pointers[2].cast::<f64>(), 2.5);
        }
        assert!(pointers[3..].iter().all(|p| p.is_null()));
    }

    #[test]
    #[should_panic(expected = "a kernel takes at most 8 parameters")]
    fn an_arg_list_refuses_more_than_its_capacity() {
        let mut args = ArgList::new();
        for i in 0..=MAX_PARAMS as u32 {
            args.push(KernelArg::U32(i));
        }
    }
}
