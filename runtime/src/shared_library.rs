//! Whether NVIDIA's shared libraries can be loaded, asked before the first call into them.
//!
//! cudarc's own check (`is_culib_present`) exists only under its `dynamic-loading` feature,
//! which the application chooses (candle, say, links the libraries instead): this asks the
//! loader directly, so the answer is the same whichever way cudarc was built. Under dynamic
//! linking a program without the driver does not start, and the check is simply true.

/// The names the CUDA driver goes by.
pub const DRIVER: &[&str] = &["libcuda.so.1", "libcuda.so", "nvcuda.dll"];
/// The names cuBLAS goes by (CUDA 13, 12, 11; the unversioned link).
pub const CUBLAS: &[&str] = &[
    "libcublas.so.13",
    "libcublas.so.12",
    "libcublas.so.11",
    "libcublas.so",
    "cublas64_13.dll",
    "cublas64_12.dll",
];
/// The names cuBLASLt goes by.
pub const CUBLAS_LT: &[&str] = &[
    "libcublasLt.so.13",
    "libcublasLt.so.12",
    "libcublasLt.so.11",
    "libcublasLt.so",
    "cublasLt64_13.dll",
    "cublasLt64_12.dll",
];

/// Whether the loader finds a library under one of `names`.
pub fn present(names: &[&str]) -> bool {
    names.iter().any(|name| {
        // SAFETY: loading NVIDIA's libraries runs only their initializers, which have no
        // preconditions; the handle is closed at once (the library stays mapped while cudarc,
        // which loads it too, holds it).
        unsafe { libloading::Library::new(name) }.is_ok()
    })
}

/// The first few of `names`, for a message saying what was looked for.
pub fn looked_for(names: &[&str]) -> String {
    names
        .iter()
        .filter(|n| !n.ends_with(".dll"))
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}
