//! Shared helpers for the integration tests: open the device under test and load the fixture
//! cubins for its SM version.
#![allow(dead_code)]

use tegragpu::core::{Device, LaunchConfig, MemFlags, Module};

/// The device under test: `TEGRAGPU_TEST_DEVICE` (e.g. "rm" on the H200), default the emulated Orin.
pub fn device() -> Device {
    let spec = std::env::var("TEGRAGPU_TEST_DEVICE").unwrap_or_else(|_| "emu".to_string());
    Device::open(Some(&spec)).unwrap_or_else(|e| panic!("opening device \"{spec}\": {e:?}"))
}

pub fn fixture_path(dev: &Device) -> std::path::PathBuf {
    let i = dev.info();
    let name = format!("kernels.sm_{}{}.cubin", i.sm_major, i.sm_minor);
    // The build tree, or the working directory (test binaries copied to the device machine).
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cubin")
        .join(&name);
    if built.exists() {
        built
    } else {
        std::path::Path::new("tests/fixtures/cubin").join(name)
    }
}

/// The fixture module (tests/fixtures/kernels.cu) for the device's SM version.
pub fn fixtures(dev: &Device) -> Module {
    let p = fixture_path(dev);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
    dev.load_module(&bytes).expect("loading fixture cubin")
}

pub fn cfg(grid: u32, block: u32) -> LaunchConfig {
    LaunchConfig {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
        cooperative: false,
        concurrent: false,
        cluster: [0; 3],
    }
}

pub fn data_flags() -> MemFlags {
    MemFlags {
        cpu_cached: true,
        zeroed: true,
        ..Default::default()
    }
}

/// Pack parameters: each item is (bytes) appended at its natural alignment.
pub struct Params(pub Vec<u8>);
impl Params {
    pub fn new() -> Self {
        Params(Vec::new())
    }
    fn push(mut self, bytes: &[u8], align: usize) -> Self {
        while self.0.len() % align != 0 {
            self.0.push(0);
        }
        self.0.extend_from_slice(bytes);
        self
    }
    pub fn u64(self, v: u64) -> Self {
        self.push(&v.to_le_bytes(), 8)
    }
    pub fn u32(self, v: u32) -> Self {
        self.push(&v.to_le_bytes(), 4)
    }
    pub fn f32(self, v: f32) -> Self {
        self.push(&v.to_le_bytes(), 4)
    }
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

pub const SEC: u64 = 1_000_000_000;
