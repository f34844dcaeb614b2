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
            params: PhantomData,
        }
    }

    /// The name the entry point is exported under (its `.entry` in PTX).
    pub const fn name(&self) -> &'static str {
        self.name
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
        write!(f, "EntryPoint({})", self.name)
    }
}

/// Declares a kernel once for host and device (see the [module docs](mod@crate::kernel)).
///
/// ```ignore
/// gpu::kernel! {
///     /// Docs, with the launch contract under `# Safety`.
///     pub fn NAME(PARAM: TYPE, ...) [export = NAME_EXPR] [max_threads = THREADS] [device if CFG] {
///         BODY
///     }
/// }
/// ```
///
/// - `[export = NAME_EXPR]` (optional): the name to export the entry point under, when it
///   is not the declaration's own (`concat!(stringify!(family), "_a16")`, say).
/// - `[max_threads = THREADS]` (optional) is the kernel's `__launch_bounds__`
///   ([`max_threads!`](crate::max_threads)).
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
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident($($param:ident : $ty:ty),* $(,)?)
        $([export = $export:expr])?
        $([max_threads = $threads:expr])?
        $([device if $cfg:meta])?
        $body:block
    ) => {
        #[allow(non_upper_case_globals)]
        #[doc = concat!("The entry point of the kernel `", stringify!($name), "` (see [`kernel!`](", "crate::kernel!)).")]
        // SAFETY: the entry point below is exported under this name with these parameters.
        $vis const $name: $crate::kernel::EntryPoint<($($ty,)*)> = unsafe {
            $crate::kernel::EntryPoint::declared($crate::kernel!(@export $name $($export)?))
        };

        #[cfg(all(target_arch = "nvptx64" $(, $cfg)?))]
        #[allow(non_snake_case)]
        #[doc = concat!("The device side of the kernel `", stringify!($name), "`.")]
        $vis mod $name {
            #[allow(unused_imports)]
            use super::*;
            $($crate::max_threads!(entry, $threads);)?

            $(#[$attr])*
            #[unsafe(export_name = $crate::kernel!(@export $name $($export)?))]
            pub unsafe extern "ptx-kernel" fn entry($($param : $ty),*) $body
        }
    };
}
