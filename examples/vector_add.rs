//! `c = a + b` over 2^20 floats with the Rust API, checked on the CPU.
//!
//! ```text
//! cargo run --release --example vector_add [SPEC]
//! ```
//!
//! SPEC is a device spec (`emu`, `nvgpu`, `rm`, `rm:N`); without one the example uses this
//! machine's GPU, or the emulated Orin when there is none. The kernel comes from the test
//! fixtures for the SM versions they are built for (sm_87, sm_90, sm_100), else it is compiled
//! from CUDA C at run time (libnvrtc).

use tegragpu::{Device, Module, Result, Status};

const SOURCE: &str = r#"
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

fn open(spec: &str) -> Result<Device> {
    match Device::open(spec) {
        Err(e) if spec.is_empty() && e.status == Status::NotFound => {
            eprintln!("{e}; using the emulated Orin");
            Device::open("emu")
        }
        r => r,
    }
}

fn module(dev: &Device) -> Result<Module> {
    let i = dev.info();
    let cubin: Option<&[u8]> = match (i.sm_major, i.sm_minor) {
        (8, 7) => Some(include_bytes!(
            "../tests/fixtures/cubin/kernels.sm_87.cubin"
        )),
        (9, 0) => Some(include_bytes!(
            "../tests/fixtures/cubin/kernels.sm_90.cubin"
        )),
        (10, 0) => Some(include_bytes!(
            "../tests/fixtures/cubin/kernels.sm_100.cubin"
        )),
        _ => None,
    };
    match cubin {
        Some(c) => dev.load_module(c),
        None => dev.compile_cuda(SOURCE, &[]),
    }
}

fn main() -> Result<()> {
    let spec = std::env::args().nth(1).unwrap_or_default();
    let dev = open(&spec)?;
    let info = dev.info();
    println!(
        "device: {} (sm_{}{}, {} SMs{})",
        info.name,
        info.sm_major,
        info.sm_minor,
        info.sm_count,
        if info.emulated { ", emulated" } else { "" }
    );
    let vector_add = module(&dev)?.kernel("vector_add")?;

    let n: usize = 1 << 20;
    let a = dev.alloc_from(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    let b = dev.alloc_from(&(0..n).map(|i| (n - i) as f32 * 0.5).collect::<Vec<_>>())?;
    let mut c = dev.alloc::<f32>(n)?;

    let mut queue = dev.queue()?;
    // SAFETY: vector_add reads a[0..n] and b[0..n] and writes c[0..n], nothing else.
    unsafe {
        queue
            .launch(&vector_add)
            .grid((n as u32).div_ceil(256))
            .block(256)
            .arg(&a)
            .arg(&b)
            .arg_mut(&mut c)
            .arg(&(n as u32))
            .record()?;
    }
    queue.synchronize()?;

    let (a, b, c) = (a.as_slice()?, b.as_slice()?, c.as_slice()?);
    let bad = (0..n).filter(|&i| c[i] != a[i] + b[i]).count();
    if bad > 0 {
        eprintln!("vector_add: {bad} of {n} elements wrong");
        std::process::exit(1);
    }
    println!("vector_add: OK ({n} elements verified)");
    Ok(())
}
