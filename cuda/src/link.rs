//! The JIT linker: `cuLinkCreate`, `cuLinkAddData`, `cuLinkAddFile`, `cuLinkComplete`,
//! `cuLinkDestroy` (and their `_v2` forms), on nvJitLink (libtegragpu's `ptxjit::link`, which
//! finds it through the library's run-time library search).
//!
//! A link of one complete image (an executable cubin, a fatbin) returns it as it is. Without
//! nvJitLink, a link of one PTX input is compiled by the PTX compiler libtegragpu finds; any
//! other link is refused at `cuLinkComplete` with `CUDA_ERROR_JIT_COMPILER_NOT_FOUND` and the
//! places searched. The error log buffer (`CU_JIT_ERROR_LOG_BUFFER`) receives the reason.

use crate::context::current;
use crate::device::out;
use crate::error::{fail, guard, invalid, Fail, R};
use crate::types::*;
use parking_lot::Mutex;
use std::ffi::{c_char, c_void, CStr};
use tegragpu::ptxjit::{self, LinkInput};
use tegragpu::Status;

const LINK_MAGIC: u64 = 0x7467_6375_6c69_6e6b;

// CUjit_option.
const CU_JIT_MAX_REGISTERS: i32 = 0;
const CU_JIT_WALL_TIME: i32 = 2;
const CU_JIT_INFO_LOG_BUFFER: i32 = 3;
const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: i32 = 4;
const CU_JIT_ERROR_LOG_BUFFER: i32 = 5;
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: i32 = 6;
const CU_JIT_OPTIMIZATION_LEVEL: i32 = 7;
const CU_JIT_GENERATE_DEBUG_INFO: i32 = 11;
const CU_JIT_LOG_VERBOSE: i32 = 12;
const CU_JIT_GENERATE_LINE_INFO: i32 = 13;
const CU_JIT_LTO: i32 = 20;

struct State {
    inputs: Vec<(LinkInput, Vec<u8>, String)>,
    options: Vec<String>,
    /// The caller's error log buffer and its size option's slot.
    error_log: Option<(*mut c_char, usize, *mut *mut c_void)>,
    /// The caller's info log buffer and its size option's slot.
    info_log: Option<(*mut c_char, usize, *mut *mut c_void)>,
    wall_time: Option<*mut *mut c_void>,
    output: Vec<u8>,
}

#[repr(C)]
pub struct Link {
    magic: u64,
    st: Mutex<State>,
}

// SAFETY: the raw pointers are the caller's buffers, written only in calls on the state.
unsafe impl Send for Link {}
unsafe impl Sync for Link {}

unsafe fn link_ref(h: *mut c_void) -> R<&'static Link> {
    crate::device::check_init()?;
    let l = (h as *const Link)
        .as_ref()
        .ok_or_else(|| fail(CUDA_ERROR_INVALID_HANDLE, "the link state is NULL"))?;
    if l.magic != LINK_MAGIC {
        return Err(fail(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{h:?} is not a link state"),
        ));
    }
    Ok(l)
}

/// The `CUjitInputType` as nvJitLink's.
fn input_kind(ty: u32) -> R<LinkInput> {
    Ok(match ty {
        0 => LinkInput::Cubin,
        1 => LinkInput::Ptx,
        2 => LinkInput::Fatbin,
        3 => LinkInput::Object,
        4 => LinkInput::Library,
        5 => LinkInput::LtoIr,
        t => return Err(invalid(format!("input type {t} is not a CUjitInputType"))),
    })
}

/// Write `text` into a log buffer and its used size (with the NUL) into the size slot.
unsafe fn write_log(log: Option<(*mut c_char, usize, *mut *mut c_void)>, text: &str) {
    let Some((buf, cap, slot)) = log else {
        return;
    };
    if buf.is_null() || cap == 0 {
        return;
    }
    let b = text.as_bytes();
    let k = b.len().min(cap - 1);
    std::ptr::copy_nonoverlapping(b.as_ptr(), buf as *mut u8, k);
    *buf.add(k) = 0;
    if !slot.is_null() {
        *slot = (k + 1) as *mut c_void;
    }
}

unsafe fn create(
    n: u32,
    options: *const i32,
    values: *mut *mut c_void,
    pstate: *mut *mut c_void,
) -> R {
    let o = out(pstate, "stateOut")?;
    current()?;
    if n > 0 && (options.is_null() || values.is_null()) {
        return Err(invalid("options or optionValues is NULL"));
    }
    let mut st = State {
        inputs: Vec::new(),
        options: Vec::new(),
        error_log: None,
        info_log: None,
        wall_time: None,
        output: Vec::new(),
    };
    let mut err_buf: (*mut c_char, usize, *mut *mut c_void) =
        (std::ptr::null_mut(), 0, std::ptr::null_mut());
    let mut info_buf = err_buf;
    for i in 0..n as usize {
        let v = *values.add(i);
        let slot = values.add(i);
        match *options.add(i) {
            CU_JIT_MAX_REGISTERS => st
                .options
                .push(format!("-maxrregcount={}", v as usize as u32)),
            CU_JIT_OPTIMIZATION_LEVEL => st.options.push(format!("-O{}", v as usize as u32)),
            CU_JIT_GENERATE_DEBUG_INFO if v as usize != 0 => st.options.push("-g".into()),
            CU_JIT_LOG_VERBOSE if v as usize != 0 => st.options.push("-verbose".into()),
            CU_JIT_GENERATE_LINE_INFO if v as usize != 0 => st.options.push("-lineinfo".into()),
            CU_JIT_LTO if v as usize != 0 => st.options.push("-lto".into()),
            CU_JIT_ERROR_LOG_BUFFER => err_buf.0 = v as *mut c_char,
            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES => err_buf = (err_buf.0, v as usize, slot),
            CU_JIT_INFO_LOG_BUFFER => info_buf.0 = v as *mut c_char,
            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES => info_buf = (info_buf.0, v as usize, slot),
            CU_JIT_WALL_TIME => st.wall_time = Some(slot),
            // Target, fallback, cache and the other hints: the context's device decides.
            _ => {}
        }
    }
    st.error_log = (!err_buf.0.is_null()).then_some(err_buf);
    st.info_log = (!info_buf.0.is_null()).then_some(info_buf);
    let l = Box::new(Link {
        magic: LINK_MAGIC,
        st: Mutex::new(st),
    });
    *o = Box::into_raw(l) as *mut c_void;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkCreate_v2(
    n: u32,
    options: *const i32,
    values: *mut *mut c_void,
    pstate: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkCreate_v2", || create(n, options, values, pstate))
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkCreate(
    n: u32,
    options: *const i32,
    values: *mut *mut c_void,
    pstate: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkCreate", || create(n, options, values, pstate))
}

unsafe fn add(h: *mut c_void, ty: u32, bytes: Vec<u8>, name: String) -> R {
    let l = link_ref(h)?;
    let kind = input_kind(ty)?;
    if bytes.is_empty() {
        return Err(invalid(format!("input \"{name}\" is empty")));
    }
    l.st.lock().inputs.push((kind, bytes, name));
    Ok(())
}

unsafe fn add_data(
    h: *mut c_void,
    ty: u32,
    data: *const c_void,
    size: usize,
    name: *const c_char,
) -> R {
    if data.is_null() || size == 0 {
        return Err(invalid(format!("data {data:?}, size {size}")));
    }
    let name = if name.is_null() {
        "input".to_string()
    } else {
        CStr::from_ptr(name).to_string_lossy().into_owned()
    };
    let mut bytes = std::slice::from_raw_parts(data as *const u8, size).to_vec();
    // PTX text is given with or without its NUL.
    if ty == 1 {
        if let Some(n) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(n);
        }
    }
    add(h, ty, bytes, name)
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkAddData_v2(
    h: *mut c_void,
    ty: u32,
    data: *const c_void,
    size: usize,
    name: *const c_char,
    _n: u32,
    _options: *const i32,
    _values: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkAddData_v2", || add_data(h, ty, data, size, name))
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkAddData(
    h: *mut c_void,
    ty: u32,
    data: *const c_void,
    size: usize,
    name: *const c_char,
    _n: u32,
    _options: *const i32,
    _values: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkAddData", || add_data(h, ty, data, size, name))
}

unsafe fn add_file(h: *mut c_void, ty: u32, path: *const c_char) -> R {
    let bytes = crate::module::read_image_file(path)?;
    let name = CStr::from_ptr(path).to_string_lossy().into_owned();
    let mut bytes = bytes;
    if ty == 1 {
        if let Some(n) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(n);
        }
    }
    add(h, ty, bytes, name)
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkAddFile_v2(
    h: *mut c_void,
    ty: u32,
    path: *const c_char,
    _n: u32,
    _options: *const i32,
    _values: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkAddFile_v2", || add_file(h, ty, path))
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkAddFile(
    h: *mut c_void,
    ty: u32,
    path: *const c_char,
    _n: u32,
    _options: *const i32,
    _values: *mut *mut c_void,
) -> CUresult {
    guard("cuLinkAddFile", || add_file(h, ty, path))
}

/// The linked image: nvJitLink's, or without it the one input that needs no linking.
fn complete_link(st: &State, sm: (u32, u32)) -> R<Vec<u8>> {
    let inputs: Vec<(LinkInput, &[u8], &str)> = st
        .inputs
        .iter()
        .map(|(k, b, n)| (*k, &b[..], n.as_str()))
        .collect();
    let opts: Vec<&str> = st.options.iter().map(|s| s.as_str()).collect();
    // One complete image (an executable cubin, ELF type ET_EXEC, or a fatbin) needs no linking.
    match inputs.as_slice() {
        [(LinkInput::Cubin, b, _)] if b.len() > 18 && b[..4] == *b"\x7fELF" && b[16] == 2 => {
            return Ok(b.to_vec())
        }
        [(LinkInput::Fatbin, b, _)] => return Ok(b.to_vec()),
        _ => {}
    }
    match ptxjit::link(&inputs, sm, &opts) {
        Ok(cubin) => Ok(cubin),
        Err(e) if e.status == Status::LibraryMissing => match inputs.as_slice() {
            [(LinkInput::Ptx, bytes, _)] => {
                let text = std::str::from_utf8(bytes)
                    .map_err(|_| fail(CUDA_ERROR_INVALID_PTX, "the PTX is not UTF-8 text"))?;
                Ok(ptxjit::compile_ptx(text, sm, &opts)?)
            }
            _ => Err(Fail(
                CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
                Some(format!(
                    "linking {} input(s) needs nvJitLink: {}",
                    inputs.len(),
                    e.message
                )),
            )),
        },
        Err(e) => Err(e.into()),
    }
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkComplete(
    h: *mut c_void,
    cubin: *mut *mut c_void,
    size: *mut usize,
) -> CUresult {
    guard("cuLinkComplete", || {
        let l = link_ref(h)?;
        let (o, sz) = (out(cubin, "cubinOut")?, out(size, "sizeOut")?);
        let info = current()?.core.info();
        let mut st = l.st.lock();
        if st.inputs.is_empty() {
            return Err(invalid("no inputs were added"));
        }
        let t0 = std::time::Instant::now();
        let r = complete_link(&st, (info.sm_major, info.sm_minor));
        if let Some(slot) = st.wall_time {
            let ms = t0.elapsed().as_secs_f32() * 1000.0;
            *(slot as *mut f32) = ms;
        }
        match r {
            Ok(image) => {
                write_log(st.info_log, "");
                write_log(st.error_log, "");
                st.output = image;
                *o = st.output.as_ptr() as *mut c_void;
                *sz = st.output.len();
                Ok(())
            }
            Err(Fail(code, msg)) => {
                write_log(st.error_log, msg.as_deref().unwrap_or(""));
                Err(Fail(code, msg))
            }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLinkDestroy(h: *mut c_void) -> CUresult {
    guard("cuLinkDestroy", || {
        let l = link_ref(h)?;
        let mut b = Box::from_raw(l as *const Link as *mut Link);
        b.magic = 0;
        Ok(())
    })
}
