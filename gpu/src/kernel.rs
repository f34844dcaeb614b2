//! Kernels declared once for both sides: [`kernel!`](crate::kernel!) emits, from one
//! signature, the device's `extern "ptx-kernel"` entry point (with its launch bounds) and an
//! [`EntryPoint`] constant that the host resolves and launches with the same parameter types.
//!
//! ```ignore
//! gpu::kernel! {
//!     /// `y = alpha * x` over `n` floats.
//!     ///
//!     /// # Safety
//!     /// `x` and `y` hold `n` floats each.
//!     pub fn scale(x: *const f32, y: *mut f32, n: u32, alpha: f32) [max_threads = 256] {
//!         // ... the body, on the device only ...
//!     }
//! }
//! // Everywhere: `scale: EntryPoint<(*const f32, *mut f32, u32, f32)>`, named "scale".
//! // A host launch through it takes (&CudaSlice<f32>, &mut CudaSlice<f32>, u32, f32).
//! ```
//!
//! The entry point is `scale::entry` on the device, exported under the kernel's name: a
//! module and a constant of one name live side by side (types and values are separate
//! namespaces), so the name is written once. A body that takes a tensor map's address names
//! its kernel `entry` (`tensor_map_param!(entry, 0, map)`).

use core::fmt;
use core::marker::PhantomData;

/// A kernel's entry point as host and device both see it: the name it is exported under, and
/// its parameter types `P` (the tuple of the types in its signature). Made by
/// [`kernel!`](crate::kernel!), which also defines the kernel, so the two cannot disagree.
pub struct EntryPoint<P> {
    name: &'static str,
    cluster: Option<[u32; 3]>,
    params: PhantomData<fn(P)>,
}

impl<P> EntryPoint<P> {
    /// The entry point exported as `name` with parameter types `P`.
    ///
    /// # Safety
    /// The kernel exported as `name` declares exactly the parameter types `P`:
    /// [`kernel!`](crate::kernel!) calls this beside the kernel it defines, which is what makes
    /// an `EntryPoint` proof of its kernel's signature.
    #[doc(hidden)]
    pub const unsafe fn declared(name: &'static str) -> EntryPoint<P> {
        EntryPoint {
            name,
            cluster: None,
            params: PhantomData,
        }
    }

    /// The entry point exported as `name` with parameter types `P`, whose kernel runs in
    /// clusters of `cluster` blocks (x, y, z) fixed at compile time
    /// ([`cluster_dims!`](crate::cluster_dims)), or in plain blocks where `cluster` is `None`.
    ///
    /// # Safety
    /// As [`declared`](Self::declared); and the kernel's PTX declares exactly this shape
    /// (`.reqnctapercluster`, or none), which the host trusts when it launches it.
    ///
    /// # Panics
    /// On a zero dimension: a compile error where the constant is defined.
    #[doc(hidden)]
    pub const unsafe fn declared_with_cluster(
        name: &'static str,
        cluster: Option<[u32; 3]>,
    ) -> EntryPoint<P> {
        if let Some([x, y, z]) = cluster {
            assert!(
                x >= 1 && y >= 1 && z >= 1,
                "a cluster dimension must be at least 1"
            );
        }
        EntryPoint {
            name,
            cluster,
            params: PhantomData,
        }
    }

    /// The name the entry point is exported under (its `.entry` in PTX).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The cluster shape (blocks in x, y, z) the kernel was declared with
    /// (`[cluster = (X, Y, Z)]` in [`kernel!`](crate::kernel!)), if any: such a kernel always
    /// runs in clusters of that shape, whatever its launch asks.
    pub const fn cluster(&self) -> Option<[u32; 3]> {
        self.cluster
    }
}

impl<P> Clone for EntryPoint<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for EntryPoint<P> {}

impl<P> PartialEq for EntryPoint<P> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl<P> Eq for EntryPoint<P> {}

impl<P> fmt::Debug for EntryPoint<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cluster {
            None => write!(f, "EntryPoint({})", self.name),
            Some([x, y, z]) => write!(f, "EntryPoint({}, cluster {x}x{y}x{z})", self.name),
        }
    }
}

/// Declares that `kernel` always runs in thread block clusters of `x * y * z` blocks: CUDA
/// C++'s `__cluster_dims__(x, y, z)`. Needs sm_90 and PTX ISA 7.8, so a kernel built for
/// sm_80 too is declared `[device if target_feature = "sm_90"]`.
///
/// ```ignore
/// gpu::cluster_dims!(my_kernel, 2, 1, 1);
/// ```
///
/// Lowers to `.reqnctapercluster x, y, z` on the kernel's `.entry`. rustc has no such
/// attribute: the macro leaves a `// cluster-dims KERNEL X Y Z` line in the PTX (module-level
/// asm with the kernel's symbol), and `ptx-builder` turns it into the directive after `llc`,
/// refusing a zero dimension. [`kernel!`](crate::kernel!)'s `[cluster = (X, Y, Z)]` calls it
/// and records the shape in the [`EntryPoint`], which the host's launch reads.
#[macro_export]
macro_rules! cluster_dims {
    ($kernel:path, $x:expr, $y:expr, $z:expr) => {
        #[cfg(target_arch = "nvptx64")]
        ::core::arch::global_asm!(
            "// cluster-dims {} {} {} {}",
            sym $kernel,
            const $x,
            const $y,
            const $z
        );
    };
}

/// Declares a kernel once for host and device (see the [module docs](mod@crate::kernel)).
///
/// ```ignore
/// gpu::kernel! {
///     /// Docs, with the launch contract under `# Safety`.
///     pub fn NAME(PARAM: TYPE, ...) [export = NAME_EXPR] [max_threads = THREADS]
///         [cluster = (X, Y, Z)] [device if CFG] {
///         BODY
///     }
/// }
/// ```
///
/// - `[export = NAME_EXPR]` (optional): the name to export the entry point under, when it
///   is not the declaration's own (`concat!(stringify!(family), "_a16")`, say).
/// - `[max_threads = THREADS]` (optional) is the kernel's `__launch_bounds__`
///   ([`max_threads!`](crate::max_threads)).
/// - `[cluster = (X, Y, Z)]` (optional): the kernel always runs in clusters of `X * Y * Z`
///   blocks ([`cluster_dims!`](crate::cluster_dims); sm_90, so with `[device if ..]` where the
///   crate is built for sm_80 too); [`EntryPoint::cluster`] returns the shape.
/// - `[device if CFG]` (optional) compiles the entry point only where `CFG` holds on the device
///   (`target_feature = "sm_90"` for an sm_90-only kernel); the [`EntryPoint`] exists on
///   every target, so host tables can list the kernel everywhere.
/// - the body runs as an `unsafe fn`'s body with the parameters bound, the items of the
///   enclosing module in scope.
///
/// Emits `pub const NAME: EntryPoint<(TYPE, ...)>` and, on nvptx64, `pub mod NAME` holding
/// `entry`, exported as `NAME`.
#[macro_export]
macro_rules! kernel {
    (@export $name:ident) => {
        stringify!($name)
    };
    (@export $name:ident $export:expr) => {
        $export
    };
    (@cluster) => {
        None
    };
    (@cluster $x:expr, $y:expr, $z:expr) => {
        Some([$x, $y, $z])
    };
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident($($param:ident : $ty:ty),* $(,)?)
        $([export = $export:expr])?
        $([max_threads = $threads:expr])?
        $([cluster = ($cx:expr, $cy:expr, $cz:expr $(,)?)])?
        $([device if $cfg:meta])?
        $body:block
    ) => {
        #[allow(non_upper_case_globals)]
        #[doc = concat!("The entry point of the kernel `", stringify!($name), "` (see [`kernel!`](", "crate::kernel!)).")]
        $vis const $name: $crate::kernel::EntryPoint<($($ty,)*)> = {
            // Evaluated outside the `unsafe` block: the caller's expressions stay safe code.
            const EXPORT: &str = $crate::kernel!(@export $name $($export)?);
            const CLUSTER: Option<[u32; 3]> = $crate::kernel!(@cluster $($cx, $cy, $cz)?);
            // SAFETY: the entry point below is exported under this name with these
            // parameters, and declares this cluster shape.
            unsafe { $crate::kernel::EntryPoint::declared_with_cluster(EXPORT, CLUSTER) }
        };

        #[cfg(all(target_arch = "nvptx64" $(, $cfg)?))]
        #[allow(non_snake_case)]
        #[doc = concat!("The device side of the kernel `", stringify!($name), "`.")]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            $($crate::max_threads!(entry, $threads);)?
            $($crate::cluster_dims!(entry, $cx, $cy, $cz);)?

            $(#[$attr])*
            #[unsafe(export_name = $crate::kernel!(@export $name $($export)?))]
            pub unsafe extern "ptx-kernel" fn entry($($param : $ty),*) $body
        }
    };
}

/// One form for every kernel table: a `static` slice of descriptors and the kernels behind them,
/// written one line per kernel with named fields, each value one token tree (a literal, a
/// name, or a group: `cluster: (2 x 1)`).
///
/// ```ignore
/// gpu::kernel_table! {
///     /// Every study kernel, baseline first.
///     pub static STUDY_KERNELS: [StudyKernel] by study_row;
///     sync_baseline { style: SyncBaseline, stages: 1, body: sync_baseline }
///     raw_mbarrier_2 { style: RawMbarrier, stages: 2, body: raw_mbarrier }
/// }
/// ```
///
/// `by ROW` names the table's own `macro_rules!`, in scope where the table is, which says what
/// a line is: `ROW!(@entry NAME { FIELD: VALUE, .. })` declares the line's kernels (with
/// [`kernel!`](crate::kernel!), host and device), and `ROW!(@row NAME { .. })` is the line's
/// descriptor, an expression of the table's element type. The row macro's patterns name the
/// fields in their order, so a line with a field missing, extra or out of place does not
/// compile. Expands to the declarations and `VIS static TABLE: &[DESCRIPTOR]`, one address per
/// descriptor wherever it is taken.
#[macro_export]
macro_rules! kernel_table {
    (
        $(#[$meta:meta])*
        $vis:vis static $table:ident: [$descriptor:ty] by $row:ident;
        $( $name:ident { $($field:ident : $value:tt),* $(,)? } )*
    ) => {
        $( $row!(@entry $name { $($field: $value),* }); )*

        $(#[$meta])*
        $vis static $table: &[$descriptor] = &[ $( $row!(@row $name { $($field: $value),* }), )* ];
    };
}

#[cfg(test)]
mod tests {
    crate::kernel! {
        /// Runs in clusters of two blocks.
        ///
        /// # Safety
        /// `x` holds a word per block.
        fn paired(x: *mut u32) [max_threads = 64] [cluster = (2, 1, 1)]
            [device if target_feature = "sm_90"] {}
    }

    crate::kernel! {
        /// Runs in plain blocks.
        ///
        /// # Safety
        /// None.
        fn plain(n: u32) {}
    }

    #[test]
    fn a_declared_cluster_shape_reaches_the_entry_point() {
        assert_eq!(paired.cluster(), Some([2, 1, 1]));
        assert_eq!(paired.name(), "paired");
        assert_eq!(format!("{paired:?}"), "EntryPoint(paired, cluster 2x1x1)");
        assert_eq!(plain.cluster(), None);
        assert_eq!(format!("{plain:?}"), "EntryPoint(plain)");
    }
}
