//! libcuda, loaded at run time. Only the calls the benchmarks need.

use libloading::{Library, Symbol};
use std::ffi::c_void;
use std::time::Instant;

type CUresult = i32;
type CUdevice = i32;
type CUcontext = *mut c_void;
type CUmodule = *mut c_void;
type CUfunction = *mut c_void;
type CUstream = *mut c_void;
type CUevent = *mut c_void;
type CUdeviceptr = u64;

/// `cuLaunchKernel` (function, grid x/y/z, block x/y/z, shared bytes, stream, kernel
/// parameters, extra).
pub type CuLaunchKernel = unsafe extern "C" fn(
    CUfunction,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    u32,
    CUstream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CUresult;

pub struct Cuda {
    _lib: Library,
    major: i32,
    ctx: CUcontext,
    func: CUfunction,
    stream: CUstream,
    launch: CuLaunchKernel,
    sync: unsafe extern "C" fn(CUstream) -> CUresult,
    alloc: unsafe extern "C" fn(*mut CUdeviceptr, usize) -> CUresult,
    free: unsafe extern "C" fn(CUdeviceptr) -> CUresult,
    dtod: unsafe extern "C" fn(CUdeviceptr, CUdeviceptr, usize, CUstream) -> CUresult,
    ev_create: unsafe extern "C" fn(*mut CUevent, u32) -> CUresult,
    ev_record: unsafe extern "C" fn(CUevent, CUstream) -> CUresult,
    ev_sync: unsafe extern "C" fn(CUevent) -> CUresult,
    ev_elapsed: unsafe extern "C" fn(*mut f32, CUevent, CUevent) -> CUresult,
}

unsafe fn sym<T: Copy>(lib: &Library, name: &[u8]) -> Option<T> {
    let s: Symbol<T> = lib.get(name).ok()?;
    Some(*s)
}

impl Cuda {
    /// Load libcuda and set up a context, the fixture module and a stream; None if absent or failing.
    pub fn load() -> Option<Cuda> {
        // SAFETY: loading NVIDIA's library runs only its initialisers.
        let lib = unsafe { Library::new("libcuda.so.1").or_else(|_| Library::new("libcuda.so")) };
        Self::with_library(lib.ok()?)
    }

    /// The same with the library at `path` (`--cuda-facade`: libtegragpu's libcuda.so.1).
    pub fn load_from(path: &str) -> Option<Cuda> {
        // SAFETY: as above.
        let lib = unsafe { Library::new(path) };
        match lib {
            Ok(l) => Self::with_library(l),
            Err(e) => {
                eprintln!("tegragpu-bench: loading {path}: {e}");
                None
            }
        }
    }

    /// The address of `cuInit` in this library (tells two loaded libraries apart).
    pub fn cu_init_address(&self) -> usize {
        // SAFETY: only the symbol's address is read.
        unsafe { sym::<unsafe extern "C" fn(u32) -> CUresult>(&self._lib, b"cuInit\0") }
            .map_or(0, |f| f as usize)
    }

    /// The device's compute capability major number.
    pub fn sm_major(&self) -> i32 {
        self.major
    }

    /// The loaded library (for the graph rows, which look up more of its functions).
    pub fn library(&self) -> &Library {
        &self._lib
    }

    fn with_library(lib: Library) -> Option<Cuda> {
        // SAFETY: calling the CUDA driver API with the documented signatures.
        unsafe {
            let init: unsafe extern "C" fn(u32) -> CUresult = sym(&lib, b"cuInit\0")?;
            let dev_get: unsafe extern "C" fn(*mut CUdevice, i32) -> CUresult =
                sym(&lib, b"cuDeviceGet\0")?;
            let retain: unsafe extern "C" fn(*mut CUcontext, CUdevice) -> CUresult =
                sym(&lib, b"cuDevicePrimaryCtxRetain\0")?;
            let set: unsafe extern "C" fn(CUcontext) -> CUresult = sym(&lib, b"cuCtxSetCurrent\0")?;
            let mload: unsafe extern "C" fn(*mut CUmodule, *const c_void) -> CUresult =
                sym(&lib, b"cuModuleLoadData\0")?;
            let getf: unsafe extern "C" fn(
                *mut CUfunction,
                CUmodule,
                *const std::ffi::c_char,
            ) -> CUresult = sym(&lib, b"cuModuleGetFunction\0")?;
            let screate: unsafe extern "C" fn(*mut CUstream, u32) -> CUresult =
                sym(&lib, b"cuStreamCreate\0")?;
            let attr: unsafe extern "C" fn(*mut i32, i32, CUdevice) -> CUresult =
                sym(&lib, b"cuDeviceGetAttribute\0")?;
            if init(0) != 0 {
                return None;
            }
            let mut d = 0;
            if dev_get(&mut d, 0) != 0 {
                return None;
            }
            let (mut maj, mut min) = (0, 0);
            attr(&mut maj, 75, d);
            attr(&mut min, 76, d);
            let mut ctx = std::ptr::null_mut();
            if retain(&mut ctx, d) != 0 || set(ctx) != 0 {
                return None;
            }
            let image = if maj >= 9 {
                super::CUBIN_SM90
            } else {
                super::CUBIN_SM87
            };
            let mut m = std::ptr::null_mut();
            if mload(&mut m, image.as_ptr() as *const c_void) != 0 {
                eprintln!("libcuda: cuModuleLoadData failed for sm_{maj}{min}");
                return None;
            }
            let mut f = std::ptr::null_mut();
            if getf(&mut f, m, c"empty_kernel".as_ptr()) != 0 {
                return None;
            }
            let mut stream = std::ptr::null_mut();
            if screate(&mut stream, 1) != 0 {
                return None;
            }
            Some(Cuda {
                major: maj,
                ctx,
                func: f,
                stream,
                launch: sym(&lib, b"cuLaunchKernel\0")?,
                sync: sym(&lib, b"cuStreamSynchronize\0")?,
                alloc: sym(&lib, b"cuMemAlloc_v2\0")?,
                free: sym(&lib, b"cuMemFree_v2\0")?,
                dtod: sym(&lib, b"cuMemcpyDtoDAsync_v2\0")?,
                ev_create: sym(&lib, b"cuEventCreate\0")?,
                ev_record: sym(&lib, b"cuEventRecord\0")?,
                ev_sync: sym(&lib, b"cuEventSynchronize\0")?,
                ev_elapsed: sym(&lib, b"cuEventElapsedTime\0")?,
                _lib: lib,
            })
        }
    }

    unsafe fn go(&self) -> bool {
        (self.launch)(
            self.func,
            1,
            1,
            1,
            32,
            1,
            1,
            0,
            self.stream,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        ) == 0
    }

    pub fn launch_latency(&mut self, reps: usize) -> Vec<f64> {
        let _ = self.ctx;
        let mut v = Vec::with_capacity(reps);
        // SAFETY: valid function and stream from load().
        unsafe {
            for _ in 0..50 {
                self.go();
                (self.sync)(self.stream);
            }
            for _ in 0..reps {
                let t = Instant::now();
                if !self.go() || (self.sync)(self.stream) != 0 {
                    return Vec::new();
                }
                v.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        v
    }

    pub fn launch_cpu_cost(&mut self, n: usize) -> Option<f64> {
        // SAFETY: as above.
        unsafe {
            (self.sync)(self.stream);
            let t = Instant::now();
            for _ in 0..n {
                if !self.go() {
                    return None;
                }
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
            (self.sync)(self.stream);
            Some(us)
        }
    }

    pub fn dependent_wall(&mut self, n: usize) -> Option<f64> {
        // SAFETY: as above.
        unsafe {
            (self.sync)(self.stream);
            let t = Instant::now();
            for _ in 0..n {
                if !self.go() {
                    return None;
                }
            }
            (self.sync)(self.stream);
            Some(t.elapsed().as_secs_f64() * 1e3)
        }
    }

    pub fn copy_bandwidth(&mut self, size: u64, iters: usize) -> Option<f64> {
        // SAFETY: device allocations of `size` bytes, freed before returning.
        unsafe {
            let (mut a, mut b) = (0u64, 0u64);
            if (self.alloc)(&mut a, size as usize) != 0 || (self.alloc)(&mut b, size as usize) != 0
            {
                return None;
            }
            let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
            (self.ev_create)(&mut e0, 0);
            (self.ev_create)(&mut e1, 0);
            // Warm-up: ~30 ms of copies first, so the clocks are where the timed runs find
            // them for every row (the same as on our side).
            let warm = std::time::Instant::now();
            while warm.elapsed() < std::time::Duration::from_millis(30) {
                (self.dtod)(b, a, size as usize, self.stream);
                (self.sync)(self.stream);
            }
            let mut best = f64::MAX;
            for _ in 0..iters {
                (self.ev_record)(e0, self.stream);
                (self.dtod)(b, a, size as usize, self.stream);
                (self.ev_record)(e1, self.stream);
                (self.ev_sync)(e1);
                let mut ms = 0f32;
                (self.ev_elapsed)(&mut ms, e0, e1);
                best = best.min(ms as f64 / 1e3);
            }
            (self.free)(a);
            (self.free)(b);
            Some(size as f64 / best / 1e9)
        }
    }

    /// One `cuMemAlloc` + `cuMemFree` of `size` bytes, in µs (`None` if the allocation fails).
    pub fn alloc_free_once(&mut self, size: u64) -> Option<f64> {
        let t = Instant::now();
        let mut p = 0u64;
        // SAFETY: the allocation is freed at once.
        unsafe {
            if (self.alloc)(&mut p, size as usize) != 0 {
                return None;
            }
            (self.free)(p);
        }
        Some(t.elapsed().as_secs_f64() * 1e6)
    }
}
