//! Opens the GPU with gpu-kernels' modules, or says why it could not: what a crate on stable
//! does first with the ready-made kernels.

fn main() {
    match gpu_runtime::Gpu::open(gpu_kernels::MODULES) {
        Ok(_gpu) => println!(
            "opened the GPU with gpu-kernels' modules ({} archs)",
            gpu_kernels::MODULES.len()
        ),
        Err(err) => println!("could not open the GPU: {err}"),
    }
}
