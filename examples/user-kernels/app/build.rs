//! Builds the device crate (`../kernels`) into PTX for sm_80, sm_90 and sm_90a (the
//! arch-specific module, which `gemv_multicast` is built for: multicast copies are optimized
//! for it) and leaves the modules in `OUT_DIR` for `main.rs` to embed.

use ptx_builder::{Arch, CudaBuilder};

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = std::env::var_os("OUT_DIR").unwrap();
    let result = CudaBuilder::new(manifest.join("../kernels"))
        .arch(Arch::Sm80)
        .arch(Arch::Sm90)
        .arch(Arch::Sm90a)
        .target_dir(manifest.join("../target/device"))
        .copy_to(out_dir)
        .emit_rerun_if_changed()
        .build();
    if let Err(err) = result {
        eprintln!("error: building the kernels failed: {err:#}");
        std::process::exit(1);
    }
}
