//! Shared helpers for the integration tests: the repository root (fixtures and other repository
//! files are read from `$TEGRAGPU_REPO_ROOT` when set), open the device under test and load the
//! fixture cubins for its SM version.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use tegragpu::core::{Device, Kernel, LaunchConfig, MemFlags, Module};

/// The device under test: `TEGRAGPU_TEST_DEVICE` (e.g. "rm" on the H200), default the emulated Orin.
pub fn device() -> Device {
    let spec = std::env::var("TEGRAGPU_TEST_DEVICE").unwrap_or_else(|_| "emu".to_string());
    Device::open(Some(&spec)).unwrap_or_else(|e| panic!("opening device \"{spec}\": {e:?}"))
}

/// Environment variable: the repository root the tests read their fixtures and other
/// repository files from. scripts/device-run.sh sets it: the test binaries run there on another
/// machine, where the build tree (`CARGO_MANIFEST_DIR`) does not exist.
pub const REPO_ROOT_ENV: &str = "TEGRAGPU_REPO_ROOT";

/// The repository root: `$TEGRAGPU_REPO_ROOT` when set, else the build tree
/// (`CARGO_MANIFEST_DIR`).
pub fn repo_root() -> PathBuf {
    match std::env::var_os(REPO_ROOT_ENV).filter(|v| !v.is_empty()) {
        Some(root) => PathBuf::from(root),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

/// `rel` (a path relative to the repository root, e.g. `tests/fixtures/kernels.cu`) under
/// [`repo_root`].
pub fn repo_path(rel: impl AsRef<Path>) -> PathBuf {
    repo_root().join(rel)
}

/// The fixture cubin (tests/fixtures/kernels.cu) for the device's SM version.
pub fn fixture_path(dev: &Device) -> PathBuf {
    let i = dev.info();
    repo_path(format!(
        "tests/fixtures/cubin/kernels.sm_{}{}.cubin",
        i.sm_major, i.sm_minor
    ))
}

/// The fixture module (tests/fixtures/kernels.cu) for the device's SM version.
pub fn fixtures(dev: &Device) -> Module {
    let p = fixture_path(dev);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "reading {}: {e} (set {REPO_ROOT_ENV} to the repository root)",
            p.display()
        )
    });
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

/// `k`'s parameter block with parameter `i` set to the low bytes of `words[i]` (at the offset
/// and size the kernel's parameter info gives).
pub fn params_of(k: &Kernel, words: &[u64]) -> Vec<u8> {
    let a = k.attributes();
    let mut p = vec![0u8; a.param_bytes as usize];
    for (i, w) in words.iter().enumerate() {
        let (off, size) = (a.params[i].offset as usize, a.params[i].size as usize);
        p[off..off + size].copy_from_slice(&w.to_le_bytes()[..size]);
    }
    p
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
