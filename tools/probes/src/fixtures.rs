//! Set-up the probes share: the library's fixture kernels for the device's architecture and
//! a launch configuration of one grid shape.

use tegragpu::core::{Device, LaunchConfig, Module};

/// The fixture module (`tests/fixtures/kernels.cu`) built for `dev`: sm_90 on Hopper and later,
/// else sm_87.
pub fn fixture_module(dev: &Device) -> tegragpu::Result<Module> {
    let cubin: &[u8] = if dev.info().sm_major >= 9 {
        include_bytes!("../../../tests/fixtures/cubin/kernels.sm_90.cubin")
    } else {
        include_bytes!("../../../tests/fixtures/cubin/kernels.sm_87.cubin")
    };
    dev.load_module(cubin)
}

/// `blocks` blocks of `threads` threads, nothing else set.
pub fn launch(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    }
}
