//! The context-independent loading API of CUDA 12: libraries (`cuLibraryLoadData`,
//! `LoadFromFile`, `Unload`, `GetKernel`, `GetKernelCount`, `EnumerateKernels`, `GetModule`,
//! `GetGlobal`) and their kernels (`cuKernelGetFunction`, `GetAttribute`, `SetAttribute`,
//! `SetCacheConfig`, `GetName`, `GetLibrary`, `GetParamInfo`).
//!
//! A library keeps its image and loads it as a module on each device when first used there (the
//! image is checked by loading it once at `cuLibraryLoad*`); the contexts of one device share
//! that module, its functions and its globals. A kernel handle (`CUkernel`) may be passed where
//! a function is taken (`cuLaunchKernel`, graph kernel nodes): it is the kernel's function on
//! the current context's device, found without a lock once resolved.

use crate::context::current;
use crate::device::{dev, devices, out};
use crate::error::{fail, guard, invalid, R};
use crate::module::{
    func_attribute, get_global, image_bytes, read_image_file, set_func_attribute, Func, Mod,
};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::OnceLock;

const LIBRARY_MAGIC: u64 = 0x7467_6375_6c69_6272;
const KERNEL_MAGIC: u64 = 0x7467_6375_6b65_726e;

#[repr(C)]
pub struct Library {
    magic: u64,
    image: Vec<u8>,
    /// Per device ordinal: the module loaded there.
    mods: Mutex<Vec<Option<&'static Mod>>>,
    /// The kernels handed out (one handle per name).
    kernels: Mutex<Vec<&'static LKernel>>,
    /// The kernel names, from the first load.
    names: Vec<String>,
}

#[repr(C)]
pub struct LKernel {
    magic: u64,
    lib: &'static Library,
    name: CString,
    /// Per device ordinal: the kernel's function there, once resolved.
    funcs: Box<[OnceLock<&'static Func>]>,
}

impl Library {
    /// The library's module on device `ordinal`, loaded on first use.
    fn module_on(&'static self, ordinal: i32) -> R<&'static Mod> {
        let d = dev(ordinal)?;
        let mut g = self.mods.lock();
        let slot = g
            .get_mut(ordinal as usize)
            .ok_or_else(|| invalid(format!("device {ordinal}")))?;
        if let Some(m) = slot {
            return Ok(m);
        }
        let m = Mod::load(d.core()?, crate::context::of_device(d), &self.image, true)?;
        *slot = Some(m);
        Ok(m)
    }

    fn kernel(&'static self, name: &str) -> R<&'static LKernel> {
        let mut g = self.kernels.lock();
        if let Some(k) = g.iter().find(|k| k.name.to_bytes() == name.as_bytes()) {
            return Ok(k);
        }
        if !self.names.iter().any(|n| n == name) {
            return Err(fail(
                CUDA_ERROR_NOT_FOUND,
                format!(
                    "kernel \"{name}\" is not in the library; it has: {}",
                    self.names.join(", ")
                ),
            ));
        }
        let k: &'static LKernel = Box::leak(Box::new(LKernel {
            magic: KERNEL_MAGIC,
            lib: self,
            name: CString::new(name).map_err(|_| invalid("name has a NUL"))?,
            funcs: (0..devices().len()).map(|_| OnceLock::new()).collect(),
        }));
        g.push(k);
        Ok(k)
    }
}

impl LKernel {
    /// The kernel's function on device `ordinal`.
    #[inline]
    fn function_on(&'static self, ordinal: i32) -> R<&'static Func> {
        let slot = self
            .funcs
            .get(ordinal as usize)
            .ok_or_else(|| invalid(format!("device {ordinal}")))?;
        if let Some(f) = slot.get() {
            return Ok(f);
        }
        self.resolve(ordinal, slot)
    }

    #[cold]
    fn resolve(&'static self, ordinal: i32, slot: &OnceLock<&'static Func>) -> R<&'static Func> {
        let m = self.lib.module_on(ordinal)?;
        let f = m.function(&self.name.to_string_lossy())?;
        Ok(slot.get_or_init(|| f))
    }
}

unsafe fn lib_ref(h: *mut c_void) -> R<&'static Library> {
    crate::device::check_init()?;
    let l = (h as *const Library)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_HANDLE, "the library handle is NULL"))?;
    if l.magic != LIBRARY_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{h:?} is not a library"),
        ));
    }
    Ok(l)
}

unsafe fn kernel_ref(h: *mut c_void) -> R<&'static LKernel> {
    crate::device::check_init()?;
    let k = (h as *const LKernel)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_HANDLE, "the kernel handle is NULL"))?;
    if k.magic != KERNEL_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{h:?} is not a function or kernel"),
        ));
    }
    Ok(k)
}

/// The function a kernel handle stands for on the current context's device (for
/// `module::func_ref`, which has found no function at `h`).
#[cold]
pub unsafe fn kernel_function(h: *mut c_void) -> R<&'static Func> {
    let k = kernel_ref(h)?;
    k.function_on(current()?.dev.ordinal)
}

fn load(bytes: Vec<u8>) -> R<*mut c_void> {
    crate::device::check_init()?;
    // Checked now: on the current context's device, else on device 0.
    let ordinal = current().map(|c| c.dev.ordinal).unwrap_or(0);
    let d = dev(ordinal)?;
    let first = Mod::load(d.core()?, crate::context::of_device(d), &bytes, true)?;
    let mut mods = vec![None; devices().len()];
    mods[ordinal as usize] = Some(first);
    let l = Box::new(Library {
        magic: LIBRARY_MAGIC,
        names: first.module.kernel_names(),
        image: bytes,
        mods: Mutex::new(mods),
        kernels: Mutex::new(Vec::new()),
    });
    Ok(Box::into_raw(l) as *mut c_void)
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadData(
    plib: *mut *mut c_void,
    code: *const c_void,
    _jit_options: *mut c_void,
    _jit_values: *mut *mut c_void,
    _num_jit: u32,
    _lib_options: *mut c_void,
    _lib_values: *mut *mut c_void,
    _num_lib: u32,
) -> CUresult {
    guard("cuLibraryLoadData", || {
        let o = out(plib, "library")?;
        *o = load(image_bytes(code)?.to_vec())?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    plib: *mut *mut c_void,
    fname: *const c_char,
    _jit_options: *mut c_void,
    _jit_values: *mut *mut c_void,
    _num_jit: u32,
    _lib_options: *mut c_void,
    _lib_values: *mut *mut c_void,
    _num_lib: u32,
) -> CUresult {
    guard("cuLibraryLoadFromFile", || {
        let o = out(plib, "library")?;
        *o = load(read_image_file(fname)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryUnload(h: *mut c_void) -> CUresult {
    guard("cuLibraryUnload", || {
        let l = lib_ref(h)?;
        let mut b = Box::from_raw(l as *const Library as *mut Library);
        b.magic = 0;
        for k in b.kernels.lock().drain(..) {
            let mut kb = Box::from_raw(k as *const LKernel as *mut LKernel);
            kb.magic = 0;
        }
        for m in b.mods.lock().drain(..).flatten() {
            m.free();
        }
        Ok(())
    })
}

unsafe fn name_of<'a>(name: *const c_char) -> R<std::borrow::Cow<'a, str>> {
    if name.is_null() {
        return Err(invalid("name is NULL"));
    }
    Ok(CStr::from_ptr(name).to_string_lossy())
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernel(
    pk: *mut *mut c_void,
    h: *mut c_void,
    name: *const c_char,
) -> CUresult {
    guard("cuLibraryGetKernel", || {
        let o = out(pk, "pKernel")?;
        let k = lib_ref(h)?.kernel(&name_of(name)?)?;
        *o = k as *const LKernel as *mut c_void;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernelCount(count: *mut u32, h: *mut c_void) -> CUresult {
    guard("cuLibraryGetKernelCount", || {
        let o = out(count, "count")?;
        *o = lib_ref(h)?.names.len() as u32;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryEnumerateKernels(
    kernels: *mut *mut c_void,
    n: u32,
    h: *mut c_void,
) -> CUresult {
    guard("cuLibraryEnumerateKernels", || {
        let l = lib_ref(h)?;
        if kernels.is_null() {
            return Err(invalid("kernels is NULL"));
        }
        if n as usize > l.names.len() {
            return Err(invalid(format!(
                "numKernels {n}: the library has {}",
                l.names.len()
            )));
        }
        for (i, name) in l.names.iter().take(n as usize).enumerate() {
            *kernels.add(i) = l.kernel(name)? as *const LKernel as *mut c_void;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetModule(pm: *mut *mut c_void, h: *mut c_void) -> CUresult {
    guard("cuLibraryGetModule", || {
        let o = out(pm, "pMod")?;
        let l = lib_ref(h)?;
        *o = l.module_on(current()?.dev.ordinal)?.handle();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    h: *mut c_void,
    name: *const c_char,
) -> CUresult {
    guard("cuLibraryGetGlobal", || {
        let l = lib_ref(h)?;
        let m = l.module_on(current()?.dev.ordinal)?;
        get_global(dptr, bytes, m.handle(), name)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetManaged(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    h: *mut c_void,
    name: *const c_char,
) -> CUresult {
    guard("cuLibraryGetManaged", || {
        let l = lib_ref(h)?;
        if name.is_null() {
            return Err(invalid("name is NULL"));
        }
        let m = l.module_on(current()?.dev.ordinal)?;
        let n = CStr::from_ptr(name).to_string_lossy();
        if !m.managed.iter().any(|(v, _)| *v == n) {
            let names: Vec<&str> = m.managed.iter().map(|(v, _)| v.as_str()).collect();
            return Err(fail(
                CUDA_ERROR_NOT_FOUND,
                format!(
                    "no __managed__ variable named \"{n}\" in the library; it has: {}",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
        }
        get_global(dptr, bytes, m.handle(), name)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelGetFunction(pf: *mut *mut c_void, k: *mut c_void) -> CUresult {
    guard("cuKernelGetFunction", || {
        let o = out(pf, "pFunc")?;
        let f = kernel_ref(k)?.function_on(current()?.dev.ordinal)?;
        *o = f as *const Func as *mut c_void;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelGetAttribute(
    pi: *mut i32,
    attrib: i32,
    k: *mut c_void,
    device: CUdevice,
) -> CUresult {
    guard("cuKernelGetAttribute", || {
        let o = out(pi, "pi")?;
        *o = func_attribute(kernel_ref(k)?.function_on(dev(device)?.ordinal)?, attrib)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelSetAttribute(
    attrib: i32,
    value: i32,
    k: *mut c_void,
    device: CUdevice,
) -> CUresult {
    guard("cuKernelSetAttribute", || {
        let f = kernel_ref(k)?.function_on(dev(device)?.ordinal)?;
        set_func_attribute(f, attrib, value)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelSetCacheConfig(
    k: *mut c_void,
    config: u32,
    device: CUdevice,
) -> CUresult {
    guard("cuKernelSetCacheConfig", || {
        kernel_ref(k)?
            .function_on(dev(device)?.ordinal)?
            .set_cache_config(config)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelGetName(name: *mut *const c_char, k: *mut c_void) -> CUresult {
    guard("cuKernelGetName", || {
        let o = out(name, "name")?;
        *o = kernel_ref(k)?.name.as_ptr();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelGetLibrary(pl: *mut *mut c_void, k: *mut c_void) -> CUresult {
    guard("cuKernelGetLibrary", || {
        let o = out(pl, "pLib")?;
        *o = kernel_ref(k)?.lib as *const Library as *mut c_void;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuKernelGetParamInfo(
    k: *mut c_void,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CUresult {
    guard("cuKernelGetParamInfo", || {
        let kr = kernel_ref(k)?;
        let ordinal = current().map(|c| c.dev.ordinal).unwrap_or(0);
        let (o, n) = kr.function_on(ordinal)?.param_info(index)?;
        if let Some(x) = offset.as_mut() {
            *x = o;
        }
        if let Some(x) = size.as_mut() {
            *x = n;
        }
        Ok(())
    })
}
