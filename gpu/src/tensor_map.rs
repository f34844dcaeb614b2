//! Tensor maps on the device (sm_90): how a kernel receives the descriptor of a tensor copy.
//!
//! The host encodes a map with `cuTensorMapEncodeTiled` (this project's host: a typed,
//! validating builder) and passes it **by value as a kernel parameter** of type [`TensorMap`];
//! the kernel takes its address with [`tensor_map_param!`](crate::tensor_map_param) and hands
//! that [`TensorMapRef`] to the copies. This is CUDA's `const __grid_constant__ CUtensorMap`:
//!
//! - the descriptor lives in the launch's parameter space (constant bank), where the copy
//!   engine may read it directly — no device allocation per map, no upload, and no
//!   `fence.proxy.tensormap::generic.acquire` (which a map in global memory written by the
//!   host needs before first use);
//! - taking `&param` in Rust would not do: the NVPTX backend copies a by-value parameter
//!   whose address escapes into local memory (a 128-byte stack copy per thread, and a map the
//!   copy engine must not read from local memory). The macro instead names the parameter in
//!   PTX (`mov.b64 %rd, KERNEL_param_I; cvta.param.u64 %rd, %rd;`), so nothing is copied;
//!   `host inspect` and a lowering test check that no kernel taking a map has a stack frame;
//! - the copy engine wants the descriptor 64-byte aligned, but rustc cannot declare a kernel
//!   parameter aligned past 16 bytes; the macro leaves a marker that `ptx-builder` turns into
//!   `.param .align 64` on that parameter (and fails the build if the parameter is not a
//!   128-byte [`TensorMap`]).

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
pub use crate::ptx::TensorMapRef;

/// A tensor map as a kernel parameter: 128 opaque bytes encoded by the host
/// (`CUtensorMap`). Declare the kernel parameter with this type, and take its address with
/// [`tensor_map_param!`](crate::tensor_map_param) — never with `&`. The type exists on every
/// target, so that a kernel's declared parameter types ([`crate::kernel::EntryPoint`]) do;
/// only the sm_90 device code can use one.
#[repr(C, align(16))]
pub struct TensorMap {
    _opaque: [u64; 16],
}

/// The [`TensorMapRef`] of the kernel parameter `param`, the `index`-th (from 0) parameter of
/// the kernel `kernel` this is written in; `param` must be a [`TensorMap`].
///
/// ```ignore
/// #[unsafe(no_mangle)]
/// pub unsafe extern "ptx-kernel" fn copy_tiles(x: TensorMap, n: u32) {
///     let x = gpu::tensor_map_param!(copy_tiles, 0, x);
///     gpu::ptx::prefetch_tensormap(x);
///     // ... memcpy_async_tensor(stage, x, [col, row], bytes, &stage) ...
/// }
/// ```
///
/// Lowers to `mov.b64 %rd, copy_tiles_param_0; cvta.param.u64 %rd, %rd;` (SASS: the
/// parameter bank's address plus the parameter's offset, in uniform registers), and a
/// `// tensor-map-param copy_tiles 0` line by which `ptx-builder` aligns the parameter to 64
/// bytes. A wrong `kernel` (the code is not inside it) fails in ptxas (unknown symbol); a
/// wrong `index` fails in `ptx-builder` (that parameter is not 128 bytes).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
#[macro_export]
macro_rules! tensor_map_param {
    ($kernel:path, $index:literal, $param:ident) => {{
        ::core::arch::global_asm!("// tensor-map-param {} {}", sym $kernel, const $index);
        let _: &$crate::tensor_map::TensorMap = &$param;
        let addr: u64;
        // SAFETY: reads the address of this kernel's own parameter; no memory is touched.
        unsafe {
            ::core::arch::asm!(
                "{{ .reg .b64 t; mov.b64 t, {kernel}_param_{index}; cvta.param.u64 {addr}, t; }}",
                kernel = sym $kernel,
                index = const $index,
                addr = out(reg64) addr,
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        // SAFETY: the address of a kernel parameter of type `TensorMap` (checked above and by
        // ptx-builder), which ptx-builder aligns to 64 bytes; the host encoded it.
        unsafe { $crate::tensor_map::TensorMapRef::from_generic_address(addr) }
    }};
}
