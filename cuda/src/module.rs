//! Modules (`cuModuleLoad*`: cubin, fatbin, a host ELF holding a fatbin, PTX), functions, their
//! attributes, globals and occupancy.

use crate::context::current;
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU32, Ordering};
use tegragpu::core::{Kernel, ManagedPlace, ManagedVariable, Module};

const MODULE_MAGIC: u64 = 0x7467_6375_6d6f_646c;
const FUNC_MAGIC: u64 = 0x7467_6375_6675_6e63;

#[repr(C)]
pub struct Mod {
    magic: u64,
    pub module: Module,
    /// Functions handed out (one handle per name, as CUDA does).
    funcs: Mutex<Vec<(String, &'static Func)>>,
    /// The module of a library (`cuLibraryGetModule`): unloaded with the library.
    pub library: bool,
    /// Its `__managed__` variables: (name, managed memory at this GPU address), freed with the
    /// module.
    pub managed: Vec<(String, u64)>,
}

impl Mod {
    /// Load `bytes` on `dev` as a module. Its `__managed__` variables live in managed memory
    /// of `ctx` (a context of `dev`; `None`: none is known, and a module with such variables is
    /// refused).
    pub fn load(
        dev: &tegragpu::core::Device,
        ctx: Option<&'static crate::context::Context>,
        bytes: &[u8],
        library: bool,
    ) -> R<&'static Mod> {
        let mut vars: Vec<(String, crate::memory::Alloc)> = Vec::new();
        // Why placing a variable failed, as this library reports it.
        let mut failed: Option<Fail> = None;
        let mut place = |v: &ManagedVariable| -> tegragpu::Result<ManagedPlace> {
            let a = match ctx {
                Some(ctx) => crate::managed::alloc_shared(ctx, v.size.max(1), true, None),
                None => Err(fail(
                    CUDA_ERROR_INVALID_CONTEXT,
                    format!(
                        "the module has the __managed__ variable {}, and no context of its device is current to hold the managed memory",
                        v.name
                    ),
                )),
            };
            let a = a.map_err(|f| {
                let e = tegragpu::Error::new(
                    tegragpu::Status::InvalidArgument,
                    format!(
                        "__managed__ variable {}: {}",
                        v.name,
                        f.1.as_deref().unwrap_or("")
                    ),
                );
                failed = Some(f);
                e
            })?;
            let host = a.host.unwrap_or(0);
            // SAFETY: `host` is the CPU address of the fresh allocation, at least `size` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(v.init.as_ptr(), host as *mut u8, v.init.len())
            };
            let at = ManagedPlace {
                gpu_va: a.buf.gpu_va(),
                cpu: host,
            };
            vars.push((v.name.to_string(), a));
            Ok(at)
        };
        let module = match dev.load_module_placing(bytes, &mut place) {
            Ok(m) => m,
            Err(e) => return Err(failed.unwrap_or_else(|| e.into())),
        };
        let managed = vars
            .into_iter()
            .map(|(n, a)| {
                let va = a.buf.gpu_va();
                crate::memory::insert(a);
                (n, va)
            })
            .collect();
        Ok(Box::leak(Box::new(Mod {
            magic: MODULE_MAGIC,
            module,
            funcs: Mutex::new(Vec::new()),
            library,
            managed,
        })))
    }

    pub fn handle(&'static self) -> *mut c_void {
        self as *const Mod as *mut c_void
    }

    /// The function `name` (one handle per name).
    pub fn function(&'static self, name: &str) -> R<&'static Func> {
        let mut g = self.funcs.lock();
        if let Some((_, f)) = g.iter().find(|(n, _)| n == name) {
            return Ok(f);
        }
        let kernel = self.module.kernel(name)?;
        let a = kernel.attributes();
        let default_dyn = (48 * 1024u32)
            .saturating_sub(a.static_shared_bytes)
            .min(a.max_dynamic_shared_bytes);
        let f: &'static Func = Box::leak(Box::new(Func {
            magic: FUNC_MAGIC,
            kernel,
            module: self,
            max_dynamic_shared: AtomicU32::new(default_dyn),
            carveout: AtomicU32::new(u32::MAX),
            cache_config: AtomicU32::new(0),
            cluster_policy: AtomicU32::new(0),
        }));
        g.push((name.to_string(), f));
        Ok(f)
    }

    /// Free the module and its functions (their handles read as invalid after).
    ///
    /// # Safety
    /// `self` came from [`Mod::load`] and is not used after.
    pub unsafe fn free(&'static self) {
        let mut b = Box::from_raw(self as *const Mod as *mut Mod);
        b.magic = 0;
        // The managed variables: libtegragpu keeps the memory until queued work is done.
        for (_, va) in b.managed.drain(..) {
            if let Some(a) = crate::memory::remove(va) {
                crate::pools::free_now(&a);
            }
        }
        for (_, f) in b.funcs.lock().drain(..) {
            let mut fb = Box::from_raw(f as *const Func as *mut Func);
            fb.magic = 0;
        }
    }
}

#[repr(C)]
pub struct Func {
    magic: u64,
    pub kernel: Kernel,
    pub module: *const Mod,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub max_dynamic_shared: AtomicU32,
    pub carveout: AtomicU32,
    pub cache_config: AtomicU32,
    /// `CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE` as set (a hint).
    pub cluster_policy: AtomicU32,
}

// SAFETY: `module` is only compared, never dereferenced across threads without the module alive.
unsafe impl Send for Func {}
unsafe impl Sync for Func {}

impl Func {
    /// CUDA's rule for dynamic shared memory: at most what the function opted in to
    /// (`cuFuncSetAttribute`), by default 48 KiB less the static shared memory.
    #[inline]
    pub fn check_shared(&self, shared: u32) -> R {
        let max = self.max_dynamic_shared.load(Ordering::Relaxed);
        if shared > max {
            return Err(fail(
                CUDA_ERROR_INVALID_VALUE,
                format!(
                    "kernel \"{}\": {shared} bytes of dynamic shared memory; it allows {max} (raise it with cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES))",
                    self.kernel.attributes().name
                ),
            ));
        }
        Ok(())
    }
}

impl Func {
    /// The carveout occupancy counts with: the function's preferred carveout
    /// (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`) when set, else its cache
    /// configuration's (prefer shared 100 %, prefer L1 0 %, equal 50 %); None: no preference.
    pub fn carveout_percent(&self) -> Option<u32> {
        match self.carveout.load(Ordering::Relaxed) as i32 {
            p @ 0..=100 => Some(p as u32),
            _ => match self.cache_config.load(Ordering::Relaxed) {
                CU_FUNC_CACHE_PREFER_SHARED => Some(100),
                CU_FUNC_CACHE_PREFER_L1 => Some(0),
                CU_FUNC_CACHE_PREFER_EQUAL => Some(50),
                _ => None,
            },
        }
    }

    /// `cuFuncSetCacheConfig`.
    pub fn set_cache_config(&self, config: u32) -> R {
        if config > 3 {
            return Err(invalid(format!("cache config {config}")));
        }
        self.cache_config.store(config, Ordering::Relaxed);
        Ok(())
    }

    /// `cuFuncGetParamInfo`: offset and size of parameter `i`.
    pub fn param_info(&self, i: usize) -> R<(usize, usize)> {
        let a = self.kernel.attributes();
        let p = a.params.get(i).ok_or_else(|| {
            invalid(format!(
                "kernel \"{}\" has {} parameters; no parameter {i}",
                a.name,
                a.params.len()
            ))
        })?;
        Ok((p.offset as usize, p.size as usize))
    }

    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor` for blocks of `block` threads with `shared`
    /// bytes of dynamic shared memory, under the function's carveout preference.
    pub fn max_active_blocks(&self, block: u32, shared: u32) -> R<u32> {
        Ok(self
            .kernel
            .max_active_blocks_with_carveout(block, shared, self.carveout_percent())?)
    }
}

/// The function behind a handle: a `CUfunction`, or a library kernel (`CUkernel`, which CUDA
/// lets callers pass where a function is taken) resolved for the current context's device.
#[inline]
pub unsafe fn func_ref(h: *mut c_void) -> R<&'static Func> {
    let f = (h as *const Func)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_HANDLE, "the function handle is NULL"))?;
    if f.magic != FUNC_MAGIC {
        return crate::library::kernel_function(h);
    }
    Ok(f)
}

pub(crate) unsafe fn mod_ref(h: *mut c_void) -> R<&'static Mod> {
    let m = (h as *const Mod)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_HANDLE, "the module handle is NULL"))?;
    if m.magic != MODULE_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{h:?} is not a module"),
        ));
    }
    Ok(m)
}

fn rd<const N: usize>(p: *const u8, off: usize) -> [u8; N] {
    let mut b = [0u8; N];
    // SAFETY: the caller checked the header it reads is there (ELF header, fatbin header).
    unsafe { std::ptr::copy_nonoverlapping(p.add(off), b.as_mut_ptr(), N) };
    b
}

/// The bytes of the image at `p` (`cuModuleLoadData` gets no size): an ELF file's extent from
/// its headers, a fatbin's from its header, PTX text up to its NUL.
pub unsafe fn image_len(p: *const u8) -> R<usize> {
    let magic = u32::from_le_bytes(rd(p, 0));
    if magic == 0x464c_457f {
        if *p.add(4) != 2 {
            return Err(fail(CUDA_ERROR_INVALID_IMAGE, "a 32-bit ELF image"));
        }
        let phoff = u64::from_le_bytes(rd(p, 0x20)) as usize;
        let shoff = u64::from_le_bytes(rd(p, 0x28)) as usize;
        let phentsize = u16::from_le_bytes(rd(p, 0x36)) as usize;
        let phnum = u16::from_le_bytes(rd(p, 0x38)) as usize;
        let shentsize = u16::from_le_bytes(rd(p, 0x3a)) as usize;
        let shnum = u16::from_le_bytes(rd(p, 0x3c)) as usize;
        let mut end = 64usize
            .max(phoff + phentsize * phnum)
            .max(shoff + shentsize * shnum);
        if end > 1 << 31 {
            return Err(fail(
                CUDA_ERROR_INVALID_IMAGE,
                "the ELF headers are out of range",
            ));
        }
        for i in 0..shnum {
            let sh = p.add(shoff + i * shentsize);
            let ty = u32::from_le_bytes(rd(sh, 4));
            let off = u64::from_le_bytes(rd(sh, 0x18)) as usize;
            let size = u64::from_le_bytes(rd(sh, 0x20)) as usize;
            if ty != 8 {
                end = end.max(off.saturating_add(size));
            }
        }
        for i in 0..phnum {
            let ph = p.add(phoff + i * phentsize);
            let off = u64::from_le_bytes(rd(ph, 8)) as usize;
            let size = u64::from_le_bytes(rd(ph, 0x20)) as usize;
            end = end.max(off.saturating_add(size));
        }
        if end > 1 << 31 {
            return Err(fail(
                CUDA_ERROR_INVALID_IMAGE,
                "the ELF sections are out of range",
            ));
        }
        return Ok(end);
    }
    if magic == 0xba55_ed50 {
        let header = u16::from_le_bytes(rd(p, 6)) as usize;
        let size = u64::from_le_bytes(rd(p, 8)) as usize;
        return Ok(header + size);
    }
    Ok(CStr::from_ptr(p as *const c_char).to_bytes().len() + 1)
}

/// The bytes of the image at `image` (a cubin, fatbin or its wrapper, host ELF, PTX text).
pub unsafe fn image_bytes<'a>(image: *const c_void) -> R<&'a [u8]> {
    if image.is_null() {
        return Err(invalid("image is NULL"));
    }
    let mut p = image as *const u8;
    // `__fatBinC_Wrapper_t`: follow it to the fatbin.
    if u32::from_le_bytes(rd(p, 0)) == 0x4662_43b1 {
        p = usize::from_le_bytes(rd(p, 8)) as *const u8;
        if p.is_null() {
            return Err(fail(
                CUDA_ERROR_INVALID_IMAGE,
                "the fatbin wrapper points to NULL",
            ));
        }
    }
    let n = image_len(p)?;
    Ok(std::slice::from_raw_parts(p, n))
}

pub(crate) unsafe fn load_image(pm: *mut *mut c_void, image: *const c_void) -> R {
    let o = out(pm, "module")?;
    load_bytes(o, image_bytes(image)?)
}

/// The bytes of the file `fname`.
pub unsafe fn read_image_file(fname: *const c_char) -> R<Vec<u8>> {
    if fname.is_null() {
        return Err(invalid("fname is NULL"));
    }
    let path = CStr::from_ptr(fname).to_string_lossy().into_owned();
    std::fs::read(&path).map_err(|e| {
        fail(
            if e.kind() == std::io::ErrorKind::NotFound {
                CUDA_ERROR_FILE_NOT_FOUND
            } else {
                CUDA_ERROR_INVALID_VALUE
            },
            format!("reading \"{path}\": {e}"),
        )
    })
}

fn load_bytes(o: &mut *mut c_void, bytes: &[u8]) -> R {
    let c = current()?;
    *o = Mod::load(&c.core, Some(c), bytes, false)?.handle();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(pm: *mut *mut c_void, image: *const c_void) -> CUresult {
    guard("cuModuleLoadData", || load_image(pm, image))
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    pm: *mut *mut c_void,
    image: *const c_void,
    _num_options: u32,
    _options: *mut c_void,
    _values: *mut *mut c_void,
) -> CUresult {
    guard("cuModuleLoadDataEx", || load_image(pm, image))
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadFatBinary(
    pm: *mut *mut c_void,
    image: *const c_void,
) -> CUresult {
    guard("cuModuleLoadFatBinary", || load_image(pm, image))
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoad(pm: *mut *mut c_void, fname: *const c_char) -> CUresult {
    guard("cuModuleLoad", || {
        let o = out(pm, "module")?;
        let bytes = read_image_file(fname)?;
        load_bytes(o, &bytes)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleUnload(h: *mut c_void) -> CUresult {
    guard("cuModuleUnload", || {
        let m = mod_ref(h)?;
        if m.library {
            return Err(fail(
                CUDA_ERROR_NOT_PERMITTED,
                "the module belongs to a library: unload it with cuLibraryUnload",
            ));
        }
        m.free();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    pf: *mut *mut c_void,
    h: *mut c_void,
    name: *const c_char,
) -> CUresult {
    guard("cuModuleGetFunction", || {
        let o = out(pf, "hfunc")?;
        let m = mod_ref(h)?;
        if name.is_null() {
            return Err(invalid("name is NULL"));
        }
        let name = CStr::from_ptr(name).to_string_lossy();
        *o = m.function(&name)? as *const Func as *mut c_void;
        Ok(())
    })
}

pub unsafe fn get_global(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    h: *mut c_void,
    name: *const c_char,
) -> R {
    let m = mod_ref(h)?;
    if name.is_null() {
        return Err(invalid("name is NULL"));
    }
    let name = CStr::from_ptr(name).to_string_lossy();
    let (va, _, size) = m.module.global(&name)?;
    if let Some(d) = dptr.as_mut() {
        *d = va;
    }
    if let Some(b) = bytes.as_mut() {
        *b = size as usize;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    h: *mut c_void,
    name: *const c_char,
) -> CUresult {
    guard("cuModuleGetGlobal_v2", || get_global(dptr, bytes, h, name))
}

/// Function attribute `attrib` of `f` (`cuFuncGetAttribute`, `cuKernelGetAttribute`).
pub fn func_attribute(f: &Func, attrib: i32) -> R<i32> {
    {
        let a = f.kernel.attributes();
        let i = f.kernel.device().info();
        let sm = (i.sm_major * 10 + i.sm_minor) as i32;
        Ok(match attrib {
            CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK => a.max_threads_per_block as i32,
            CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES => a.static_shared_bytes as i32,
            CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES => {
                i32::try_from(f.kernel.constant_bytes()).unwrap_or(i32::MAX)
            }
            CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES => a.local_bytes_per_thread as i32,
            CU_FUNC_ATTRIBUTE_NUM_REGS => a.registers as i32,
            CU_FUNC_ATTRIBUTE_PTX_VERSION | CU_FUNC_ATTRIBUTE_BINARY_VERSION => sm,
            CU_FUNC_ATTRIBUTE_CACHE_MODE_CA => 0,
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                f.max_dynamic_shared.load(Ordering::Relaxed) as i32
            }
            CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => {
                f.carveout.load(Ordering::Relaxed) as i32
            }
            CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET => 0,
            CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH => {
                f.kernel.cluster_dims().map_or(0, |c| c[0] as i32)
            }
            CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT => {
                f.kernel.cluster_dims().map_or(0, |c| c[1] as i32)
            }
            CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH => {
                f.kernel.cluster_dims().map_or(0, |c| c[2] as i32)
            }
            // Off unless a function sets it (NVIDIA's driver reports 0 on the H100).
            CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED => {
                i32::from(f.kernel.non_portable_clusters())
            }
            CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE => {
                f.cluster_policy.load(Ordering::Relaxed) as i32
            }
            _ => {
                return Err(invalid(format!(
                    "attribute {attrib} is not a function attribute"
                )))
            }
        })
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetAttribute(
    pi: *mut i32,
    attrib: i32,
    hfunc: *mut c_void,
) -> CUresult {
    guard("cuFuncGetAttribute", || {
        let o = out(pi, "pi")?;
        *o = func_attribute(func_ref(hfunc)?, attrib)?;
        Ok(())
    })
}

/// Set function attribute `attrib` of `f` (`cuFuncSetAttribute`, `cuKernelSetAttribute`).
pub fn set_func_attribute(f: &Func, attrib: i32, value: i32) -> R {
    {
        let a = f.kernel.attributes();
        match attrib {
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                if value < 0 || value as u32 > a.max_dynamic_shared_bytes {
                    return Err(invalid(format!(
                        "kernel \"{}\": {value} bytes of dynamic shared memory; at most {}",
                        a.name, a.max_dynamic_shared_bytes
                    )));
                }
                f.max_dynamic_shared.store(value as u32, Ordering::Relaxed);
            }
            CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => {
                if !(-1..=100).contains(&value) {
                    return Err(invalid(format!("carveout {value}: -1 or 0..=100")));
                }
                f.carveout.store(value as u32, Ordering::Relaxed);
            }
            // Clusters of up to 16 blocks (8 otherwise).
            CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED => {
                f.kernel.set_non_portable_clusters(value != 0);
            }
            // A scheduling hint (0: default, 1: spread, 2: load balancing).
            CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE => {
                if !(0..=2).contains(&value) {
                    return Err(invalid(format!(
                        "CLUSTER_SCHEDULING_POLICY_PREFERENCE {value}: 0, 1 or 2"
                    )));
                }
                f.cluster_policy.store(value as u32, Ordering::Relaxed);
            }
            CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH
            | CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT
            | CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH => {
                return Err(fail(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!(
                        "attribute {attrib}: a required cluster shape set at run time is not supported (pass the shape to cuLaunchKernelEx)"
                    ),
                ))
            }
            _ => return Err(invalid(format!("attribute {attrib} cannot be set"))),
        }
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncSetAttribute(
    hfunc: *mut c_void,
    attrib: i32,
    value: i32,
) -> CUresult {
    guard("cuFuncSetAttribute", || {
        set_func_attribute(func_ref(hfunc)?, attrib, value)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncSetCacheConfig(hfunc: *mut c_void, config: u32) -> CUresult {
    guard("cuFuncSetCacheConfig", || {
        func_ref(hfunc)?.set_cache_config(config)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncSetSharedMemConfig(hfunc: *mut c_void, config: u32) -> CUresult {
    guard("cuFuncSetSharedMemConfig", || {
        func_ref(hfunc)?;
        if config > 2 {
            return Err(invalid(format!("shared memory config {config}")));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetParamInfo(
    hfunc: *mut c_void,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    guard("cuFuncGetParamInfo", || {
        let (o, n) = func_ref(hfunc)?.param_info(index)?;
        if let Some(x) = offset.as_mut() {
            *x = o;
        }
        if let Some(x) = size.as_mut() {
            *x = n;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetModule(pm: *mut *mut c_void, hfunc: *mut c_void) -> CUresult {
    guard("cuFuncGetModule", || {
        let o = out(pm, "hmod")?;
        *o = func_ref(hfunc)?.module as *mut c_void;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetName(name: *mut *const c_char, hfunc: *mut c_void) -> CUresult {
    guard("cuFuncGetName", || {
        let o = out(name, "name")?;
        let f = func_ref(hfunc)?;
        static NAMES: Mutex<Vec<(usize, std::ffi::CString)>> = Mutex::new(Vec::new());
        let mut g = NAMES.lock();
        let key = f as *const Func as usize;
        if let Some((_, s)) = g.iter().find(|(k, _)| *k == key) {
            *o = s.as_ptr();
            return Ok(());
        }
        let s = std::ffi::CString::new(f.kernel.attributes().name.clone())
            .map_err(|_| invalid("name has a NUL"))?;
        *o = s.as_ptr();
        g.push((key, s));
        Ok(())
    })
}

unsafe fn occupancy(n: *mut i32, hfunc: *mut c_void, block: i32, shared: usize) -> R {
    let o = out(n, "numBlocks")?;
    let f = func_ref(hfunc)?;
    if block <= 0 {
        return Err(invalid(format!("blockSize {block}")));
    }
    *o = f.max_active_blocks(block as u32, shared as u32)? as i32;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    n: *mut i32,
    hfunc: *mut c_void,
    block: i32,
    shared: usize,
) -> CUresult {
    guard("cuOccupancyMaxActiveBlocksPerMultiprocessor", || {
        occupancy(n, hfunc, block, shared)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    n: *mut i32,
    hfunc: *mut c_void,
    block: i32,
    shared: usize,
    _flags: u32,
) -> CUresult {
    guard(
        "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
        || occupancy(n, hfunc, block, shared),
    )
}

#[allow(dead_code)]
fn _unused(_: Fail) {}
