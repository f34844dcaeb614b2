//! Builds the device crate (`../kernels`) into PTX for sm_80 and sm_90 and leaves the modules
//! in `OUT_DIR` for `main.rs` to embed: what `../app/build.rs` does, in a device target dir of
//! its own (the builder's link step in a target dir is not locked, and cargo runs the two
//! build scripts at once).

use ptx_builder::{Arch, CudaBuilder};

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = std::env::var_os("OUT_DIR").unwrap();
    let result = CudaBuilder::new(manifest.join("../kernels"))
        .arch(Arch::Sm80)
        .arch(Arch::Sm90)
        .target_dir(manifest.join("../target/device-cust"))
        .copy_to(out_dir)
        .emit_rerun_if_changed()
        .build();
    if let Err(err) = result {
        eprintln!("error: building the kernels failed: {err:#}");
        std::process::exit(1);
    }
}
