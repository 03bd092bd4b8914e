//! `tg_module_*` and `tg_kernel_*`: loading GPU code (cubin, fatbin, PTX, CUDA C through
//! nvrtc), kernels, their attributes, occupancy, and module globals.

use super::boundary::{
    c_str, check_out_struct_size, device, kernel, module, null, out_ptr, register, run,
};
use super::handles::{self, Kind, Object};
use super::{tg_device, tg_kernel, tg_kernel_attributes, tg_module, tg_status};
use crate::error::{Error, Result, Status};
use std::ffi::{c_char, c_void, CStr};

/// Load GPU code from memory: what `cuModuleLoadData` takes.
///
/// - `data`, `size_bytes`: a cubin (`nvcc -cubin`, nvrtc, `nvlink`); a fatbin (`nvcc -fatbin`),
///   or a host object or shared library that holds one (its `.nv_fatbin` section): the SASS
///   for the device's SM is chosen (same major version, highest minor not above the device's),
///   else the newest PTX not above it is compiled for the device; or PTX text (`nvcc -ptx`),
///   compiled for the device. PTX is compiled with the NVIDIA driver's PTX compiler
///   (`libnvidia-ptxjitcompiler.so.1`) or nvJitLink (`TEGRAGPU_PTXJIT` names either). The
///   library copies what it needs, so the memory may be freed after the call.
/// - `out`: receives the new module handle.
///
/// Kernels that need a feature libtegragpu lacks (surfaces, clusters, dynamic parallelism) do
/// not stop the module from loading: `tg_module_get_kernel()` refuses them with
/// `TG_ERROR_NOT_SUPPORTED` naming the feature. Device-side `printf` and `assert` work: the
/// first module that calls them also loads the library's implementations on the device.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`size_bytes` 0); `TG_ERROR_INVALID_CUBIN` (malformed, or no
/// code for the device's SM version); `TG_ERROR_NOT_SUPPORTED` (e.g. unlinked `-rdc` objects,
/// device-side `malloc`);
/// `TG_ERROR_LIBRARY_MISSING` (PTX to compile and no PTX compiler installed);
/// `TG_ERROR_COMPILE` (PTX rejected; the message carries the log); `TG_ERROR_OUT_OF_MEMORY`;
/// `TG_ERROR_DEVICE_FAULT`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `data` is NULL or readable for `size_bytes` bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_load(
    dev: *const tg_device,
    data: *const c_void,
    size_bytes: usize,
    out: *mut *mut tg_module,
) -> tg_status {
    run("tg_module_load", || {
        let d = device(dev, "dev")?;
        if data.is_null() {
            return Err(null("data"));
        }
        let out = out_ptr(out, "out")?;
        if size_bytes == 0 {
            return Err(Error::invalid("size_bytes is 0"));
        }
        if size_bytes > isize::MAX as usize {
            return Err(Error::invalid(format!(
                "size_bytes {size_bytes} is larger than any object"
            )));
        }
        let bytes = std::slice::from_raw_parts(data as *const u8, size_bytes);
        let m = d.load_module(bytes)?;
        let h = register(Object::Module(m))?;
        out.write(h as *mut tg_module);
        Ok(())
    })
}

/// The largest file `tg_module_load_file()` reads: 1 GiB (the largest cubins and fatbins are a
/// few hundred MiB).
const MODULE_FILE_MAX_BYTES: u64 = 1 << 30;

/// Read a module file for `tg_module_load_file()`: open with `O_NONBLOCK` (a FIFO cannot block),
/// `fstat`, refuse anything that is not a regular file or is larger than
/// [`MODULE_FILE_MAX_BYTES`], then read at most that many bytes (the file may grow meanwhile).
fn read_module_file(path: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let io_err = |op: &str, e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::new(Status::NotFound, format!("cannot read \"{path}\": {e}"))
        }
        _ => match e.raw_os_error() {
            Some(errno) => Error::os(format!("{op}(\"{path}\")"), errno),
            None => Error::new(Status::Os, format!("cannot read \"{path}\": {e}")),
        },
    };
    let too_big = |size: &dyn std::fmt::Display| {
        Error::invalid(format!(
            "\"{path}\" is {size} bytes, larger than the {MODULE_FILE_MAX_BYTES} bytes (1 GiB) \
             a module file may have"
        ))
    };
    // std adds O_CLOEXEC; O_NOCTTY keeps a terminal from becoming the controlling one.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| io_err("open", e))?;
    let md = f.metadata().map_err(|e| io_err("fstat", e))?;
    let ft = md.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO (named pipe)"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "of an unknown file type"
        };
        return Err(Error::invalid(format!(
            "\"{path}\" is {kind}, not a regular file"
        )));
    }
    if md.len() > MODULE_FILE_MAX_BYTES {
        return Err(too_big(&md.len()));
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    f.take(MODULE_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err("read", e))?;
    if bytes.len() as u64 > MODULE_FILE_MAX_BYTES {
        return Err(too_big(&format_args!("more than {MODULE_FILE_MAX_BYTES}")));
    }
    Ok(bytes)
}

/// Load a cubin from a file.
///
/// The file must be a regular file of at most 1 GiB (2^30 bytes). It is opened with
/// `O_NONBLOCK`, so a FIFO cannot block the call, and checked with `fstat` before anything is
/// read: directories, FIFOs, character and block devices (e.g. `/dev/zero`) and sockets are
/// refused, as are larger files.
///
/// Returns what `tg_module_load()` returns, and `TG_ERROR_NOT_FOUND` (no such file),
/// `TG_ERROR_INVALID_ARGUMENT` (not a regular file: the message names the path and its type; or
/// larger than 1 GiB: the message names the path and its size) or `TG_ERROR_OS` (other open or
/// read errors; the message names the path and errno).
///
/// Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_load_file(
    dev: *const tg_device,
    path: *const c_char,
    out: *mut *mut tg_module,
) -> tg_status {
    run("tg_module_load_file", || {
        let d = device(dev, "dev")?;
        let path = c_str(path, "path")?;
        let out = out_ptr(out, "out")?;
        let bytes = read_module_file(path)?;
        if bytes.is_empty() {
            return Err(Error::new(
                Status::InvalidCubin,
                format!("\"{path}\" is empty"),
            ));
        }
        let m = d.load_module(&bytes).map_err(|e| Error {
            message: format!("\"{path}\": {}", e.message),
            ..e
        })?;
        let h = register(Object::Module(m))?;
        out.write(h as *mut tg_module);
        Ok(())
    })
}

/// Compile CUDA C source at run time with libnvrtc (loaded on first use; never linked) for this
/// device's SM version, and load the result.
///
/// - `source`: NUL-terminated CUDA C. Kernels should be `extern "C"` so their names are not
///   mangled.
/// - `options`, `num_options`: extra nvrtc options (e.g. `"--std=c++17"`); the target
///   architecture is added by the library. `options` may be NULL when `num_options` is 0.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`source`, `out`,
/// `options` or one of its elements NULL); `TG_ERROR_LIBRARY_MISSING` (libnvrtc not installed:
/// `pip install nvidia-cuda-nvrtc-cu12`, or set `TEGRAGPU_NVRTC` to the library's path);
/// `TG_ERROR_COMPILE` (the message carries the compiler log); the statuses of
/// `tg_module_load()`.
///
/// Ownership: the caller owns `*out` and releases it with `tg_module_destroy()`.
/// Thread safety: any thread.
///
/// # Safety
/// `source` is NULL or NUL-terminated; `options` is NULL or points to `num_options` pointers,
/// each NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_compile_cuda(
    dev: *const tg_device,
    source: *const c_char,
    options: *const *const c_char,
    num_options: usize,
    out: *mut *mut tg_module,
) -> tg_status {
    run("tg_module_compile_cuda", || {
        let d = device(dev, "dev")?;
        let src = c_str(source, "source")?;
        let out = out_ptr(out, "out")?;
        if options.is_null() && num_options != 0 {
            return Err(Error::new(
                Status::NullPointer,
                format!("options is NULL but num_options is {num_options}"),
            ));
        }
        if num_options > 4096 {
            return Err(Error::invalid(format!(
                "num_options {num_options} is more than 4096"
            )));
        }
        let mut opts = Vec::with_capacity(num_options);
        for i in 0..num_options {
            opts.push(c_str(*options.add(i), &format!("options[{i}]"))?);
        }
        let m = d.compile_cuda(src, &opts)?;
        let h = register(Object::Module(m))?;
        out.write(h as *mut tg_module);
        Ok(())
    })
}

/// Destroy a module handle. Kernels taken from it stay valid (they keep the code loaded); GPU
/// memory is released once no kernel handle and no submitted work uses it. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
/// used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_module_destroy(module: *mut tg_module) -> tg_status {
    run("tg_module_destroy", || {
        handles::remove(module as usize, Kind::Module, "module").map(|_| ())
    })
}

/// Look up a kernel by name (the `extern "C"` name, or the mangled name).
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_NOT_FOUND` (the message lists the module's kernels); `TG_ERROR_NOT_SUPPORTED`
/// (the kernel needs a feature libtegragpu lacks; the message names it and the attribute that
/// says so); `TG_ERROR_OUT_OF_MEMORY` (the kernel's local memory cannot be provided).
///
/// Ownership: the caller owns `*out` and releases it with `tg_kernel_destroy()`; the kernel keeps
/// its module loaded. Thread safety: any thread.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_get_kernel(
    module: *const tg_module,
    name: *const c_char,
    out: *mut *mut tg_kernel,
) -> tg_status {
    run("tg_module_get_kernel", || {
        let m = self::module(module, "module")?;
        let name = c_str(name, "name")?;
        let out = out_ptr(out, "out")?;
        let k = m.kernel(name)?;
        let h = register(Object::Kernel(std::sync::Arc::new(k)))?;
        out.write(h as *mut tg_kernel);
        Ok(())
    })
}

/// Destroy a kernel handle. NULL is a no-op.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`. Thread safety: any thread; the handle must not be
/// used after this call.
///
/// # Safety
/// None beyond the handle contract.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_destroy(kernel: *mut tg_kernel) -> tg_status {
    run("tg_kernel_destroy", || {
        handles::remove(kernel as usize, Kind::Kernel, "kernel").map(|_| ())
    })
}

/// What a kernel needs and allows.
///
/// - `out`: caller-allocated; set `out->struct_size = sizeof(tg_kernel_attributes)` first.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`struct_size` too small). Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or points to a writable `tg_kernel_attributes`.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_get_attributes(
    kernel: *const tg_kernel,
    out: *mut tg_kernel_attributes,
) -> tg_status {
    run("tg_kernel_get_attributes", || {
        let k = self::kernel(kernel, "kernel")?;
        let out = out_ptr(out, "out")?;
        check_out_struct_size(out, "out", "tg_kernel_attributes")?;
        let a = k.attributes();
        out.write_unaligned(tg_kernel_attributes {
            struct_size: std::mem::size_of::<tg_kernel_attributes>() as u32,
            num_params: a.params.len() as u32,
            param_bytes: a.param_bytes,
            registers: a.registers,
            static_shared_bytes: a.static_shared_bytes,
            local_bytes_per_thread: a.local_bytes_per_thread,
            max_threads_per_block: a.max_threads_per_block,
            max_dynamic_shared_bytes: a.max_dynamic_shared_bytes,
        });
        Ok(())
    })
}

/// Where parameter `index` (0-based, declaration order) lies in the packed parameter block that
/// `tg_launch()` takes: `*offset` bytes from the start, `*size` bytes long.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`offset` or `size`
/// NULL); `TG_ERROR_INVALID_ARGUMENT` (`index` ≥ `num_params`). Thread safety: any thread.
///
/// # Safety
/// `offset` and `size` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_get_param(
    kernel: *const tg_kernel,
    index: u32,
    offset: *mut u32,
    size: *mut u32,
) -> tg_status {
    run("tg_kernel_get_param", || {
        let k = self::kernel(kernel, "kernel")?;
        let offset = out_ptr(offset, "offset")?;
        let size = out_ptr(size, "size")?;
        let a = k.attributes();
        let p = a.params.get(index as usize).ok_or_else(|| {
            Error::invalid(format!(
                "index {index} is out of range: kernel \"{}\" has {} parameters",
                a.name,
                a.params.len()
            ))
        })?;
        offset.write_unaligned(p.offset);
        size.write_unaligned(p.size);
        Ok(())
    })
}

/// How many blocks of `block_threads` threads using `dynamic_shared_bytes` of dynamic shared
/// memory one SM runs at once (like `cuOccupancyMaxActiveBlocksPerMultiprocessor`): the
/// smallest of the limits set by warps, registers, shared memory and the SM's block limit.
/// Multiply by `tg_device_info.sm_count` for the largest cooperative grid.
///
/// Returns `TG_OK` (`*out` is 0 when `dynamic_shared_bytes` is above the kernel's
/// `max_dynamic_shared_bytes`); `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER`;
/// `TG_ERROR_INVALID_ARGUMENT` (`block_threads` 0 or above the kernel's
/// `max_threads_per_block`). Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_kernel_max_active_blocks(
    kernel: *const tg_kernel,
    block_threads: u32,
    dynamic_shared_bytes: u32,
    out: *mut u32,
) -> tg_status {
    run("tg_kernel_max_active_blocks", || {
        let k = self::kernel(kernel, "kernel")?;
        let out = out_ptr(out, "out")?;
        let n = k.max_active_blocks(block_threads, dynamic_shared_bytes)?;
        out.write_unaligned(n);
        Ok(())
    })
}

/// Find a `__device__` or `__constant__` variable of a module by name (like
/// `cuModuleGetGlobal`). Any of the out pointers may be NULL.
///
/// - `gpu_address`: the variable's GPU virtual address (pass it to kernels, copy to it).
/// - `cpu_ptr`: a CPU pointer to the same memory, valid while the module is loaded: write
///   initial values before the launches that read them, read results after they finish.
/// - `size_bytes`: the variable's size.
///
/// Names are as in the cubin: C++ variables are mangled unless declared `extern "C"`.
/// Each call makes every queue drop the GPU's constant and data caches before its next launch,
/// so call it again after changing through `cpu_ptr` a `__constant__` that launches already read.
///
/// Returns `TG_OK`; `TG_ERROR_INVALID_HANDLE`; `TG_ERROR_NULL_POINTER` (`name`);
/// `TG_ERROR_NOT_FOUND` (the message lists the module's variables). Thread safety: any thread.
///
/// # Safety
/// `name` is NULL or NUL-terminated; each out pointer is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tg_module_get_global(
    module: *const tg_module,
    name: *const c_char,
    gpu_address: *mut u64,
    cpu_ptr: *mut *mut c_void,
    size_bytes: *mut u64,
) -> tg_status {
    run("tg_module_get_global", || {
        let m = self::module(module, "module")?;
        if name.is_null() {
            return Err(null("name"));
        }
        let name = CStr::from_ptr(name)
            .to_str()
            .map_err(|_| Error::invalid("name is not valid UTF-8"))?;
        let (va, cpu, size) = m.global(name)?;
        if !gpu_address.is_null() {
            gpu_address.write_unaligned(va);
        }
        if !cpu_ptr.is_null() {
            cpu_ptr.write_unaligned(cpu as *mut c_void);
        }
        if !size_bytes.is_null() {
            size_bytes.write_unaligned(size);
        }
        Ok(())
    })
}
