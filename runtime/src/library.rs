//! A kernel library's device code loaded beside the program's: [`Gpu::load_library`] loads the
//! modules a crate of ready-made kernels embeds (its own PTX and cubins, one per arch) into the
//! GPU's context, and [`Library::entry_point`] resolves its kernels as [`Gpu::entry_point`]
//! resolves the program's. The same context and stream: a library kernel reads and writes the
//! program's buffers and is ordered with its launches.

use crate::device::{Gpu, Module, declares_entry, load, module_for};
use crate::error::{Context, GpuError};
use crate::launch::{Kernel, Params};
use cudarc::driver::CudaModule;
use gpu::kernel::EntryPoint;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A library's modules, loaded for an open [`Gpu`]: the portable module of the GPU's arch and,
/// where the library carries one and the GPU runs it, the arch-specific module (sm_90a on
/// compute capability 9.0), where kernels the portable one lacks are found.
///
/// ```no_run
/// use gpu_runtime::{Gpu, LaunchConfig};
/// # mod my_kernels {
/// #     pub const MODULES: &[gpu_runtime::Module] = &[];
/// #     gpu::kernel! { pub fn fill(x: *mut u32, n: u32, value: u32) {} }
/// # }
/// # fn main() -> Result<(), gpu_runtime::GpuError> {
/// let gpu = Gpu::open(&[])?; // no device code of the program's own
/// let library = gpu.load_library("my-kernels", my_kernels::MODULES)?;
/// let fill = library.entry_point(my_kernels::fill)?;
/// let mut x = gpu.zeros::<u32>(1024, "x")?;
/// // SAFETY: fill(x, n, value) writes n words of x.
/// unsafe { fill.launch(&gpu, LaunchConfig::linear(4, 256, 0), (&mut x, 1024, 7))? };
/// # Ok(())
/// # }
/// ```
pub struct Library {
    name: &'static str,
    portable: Option<ManuallyDrop<Arc<CudaModule>>>,
    specific: Option<(ManuallyDrop<Arc<CudaModule>>, &'static str)>,
    hung: Arc<AtomicBool>,
}

impl Drop for Library {
    fn drop(&mut self) {
        // As the GPU's own modules: leaked if a wait ran out of time (unloading could block).
        if self.hung.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: each module is dropped once, here.
        unsafe {
            if let Some(m) = &mut self.portable {
                ManuallyDrop::drop(m);
            }
            if let Some((m, _)) = &mut self.specific {
                ManuallyDrop::drop(m);
            }
        }
    }
}

impl Gpu {
    /// Loads the library `name`'s `modules` for this GPU: the one built for the arch the GPU
    /// was opened with and, when the GPU runs its own arch, the arch-specific one. A library
    /// that carries neither is refused ([`GpuError::NotBuilt`]).
    pub fn load_library(
        &self,
        name: &'static str,
        modules: &[Module],
    ) -> Result<Library, GpuError> {
        let info = self.info();
        let major = info.compute_capability.0;
        let loaded = |m: &Module| {
            load(self.context(), m, major, &info.name).map(|(module, _)| ManuallyDrop::new(module))
        };
        let portable = module_for(modules, info.arch).map(loaded).transpose()?;
        let specific = match info.specific {
            Some((arch, _)) => match module_for(modules, arch) {
                Some(m) => Some((loaded(m)?, m.ptx)),
                None => None,
            },
            None => None,
        };
        if portable.is_none() && specific.is_none() {
            return Err(GpuError::NotBuilt {
                arch: info.specific.map_or(info.arch, |(arch, _)| arch),
                built: modules.iter().map(|m| m.arch).collect(),
            });
        }
        Ok(Library {
            name,
            portable,
            specific,
            hung: self.hung_flag(),
        })
    }
}

impl Library {
    /// The kernel `entry` declares, from the arch-specific module if its PTX declares it, else
    /// from the portable one, with the cluster shape it declares.
    pub fn entry_point<P: Params>(&self, entry: EntryPoint<P>) -> Result<Kernel<P>, GpuError> {
        let name = entry.name();
        let module = match (&self.specific, &self.portable) {
            (Some((module, ptx)), _) if declares_entry(ptx, name) => module,
            (_, Some(module)) => module,
            (Some((module, _)), None) => module,
            (None, None) => {
                return Err(GpuError::Refused {
                    what: format!("kernel `{name}`"),
                    why: format!("{} has no module loaded", self.name),
                });
            }
        };
        let function = module
            .load_function(name)
            .during(|| format!("finding kernel `{name}` in {}", self.name))?;
        let mut kernel = Kernel::new(name, function);
        kernel.declared_cluster = entry.cluster();
        Ok(kernel)
    }
}
