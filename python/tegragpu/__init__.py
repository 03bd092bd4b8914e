"""Python bindings for libtegragpu (ctypes over the C API in include/tegragpu.h).

GPU compute on NVIDIA Jetson Orin (and desktop NVIDIA GPUs) without libcuda::

    import numpy as np
    import tegragpu as tg

    with tg.Device("emu") as dev:                      # None = the GPU of this machine
        mod = dev.load_module_file("kernels.sm_87.cubin")
        k = mod.kernel("vector_add")
        a, b, c = (dev.alloc(4 * n) for _ in range(3))
        a.numpy(np.float32)[:] = ...                   # zero-copy views of GPU memory
        q, done = dev.create_queue(), dev.create_signal(0)
        q.launch(k, grid=(n + 255) // 256, block=256, args=(a, b, c, np.uint32(n)))
        q.signal(done, 1); q.submit(); done.wait(1)

Finding the shared library, first match wins (:func:`library_source` says which one did):

1. ``$TEGRAGPU_LIBRARY``: the path of the library. When set, nothing else is tried, and a file
   that cannot be loaded is an ImportError naming it.
2. A copy inside the package, ``tegragpu/_lib/libtegragpu.so.0`` (wheels built with
   ``TEGRAGPU_BUNDLE_LIBRARY=/path/to/libtegragpu.so``; see docs/python.md).
3. ``$(pkg-config --variable=libdir tegragpu)/libtegragpu.so.0`` (an installed library).
4. ``libtegragpu.so.0`` through the system's dynamic loader (``LD_LIBRARY_PATH``, ld.so.cache).
5. For developers running from the source tree: ``build/meson/libtegragpu.so``, then
   ``target/release/libtegragpu.so`` of the tree.

Public building blocks for code that calls the C API directly (e.g. a framework backend):
:data:`lib` (the ``ctypes.CDLL``, with ``argtypes``/``restype`` set for every function of the
header), :func:`check` (raises the typed exception for a ``tg_status``), the exception classes
(:class:`Error` and one subclass per ``tg_status``), :data:`SIGNATURES` and :data:`STRUCTS`.

Errors raise :class:`Error` subclasses (one per ``tg_status``) whose message is the library's
last-error text, e.g. ``"tg_buf_alloc: size_bytes is 0"``.

Thread safety follows the C API: every object may be used from any thread; calls on one queue
are serialized by the library.
"""

import ctypes
import enum
import os
import shutil
import struct
import subprocess
import weakref
from dataclasses import dataclass

__all__ = [
    "Device", "Buffer", "BufferView", "Module", "Kernel", "Queue", "Signal", "CmdBuf", "GpuTimer",
    "DeviceInfo", "FaultReport", "KernelAttributes", "Status", "QueueKind", "Backend",
    "lib", "check", "error_class", "last_error_message", "status_str", "library_path",
    "library_source", "version", "device_spec", "LibraryNotFoundError",
    "SIGNATURES", "STRUCTS", "Handle", "CDeviceInfo", "CFaultReport", "CKernelAttributes",
    "CLaunchConfig", "CTextureDesc", "Texture",
    "BUF_CPU_CACHED", "BUF_WRITE_COMBINED", "BUF_ZEROED", "BUF_DEVICE_LOCAL", "TIMEOUT_INFINITE",
    "LAUNCH_COOPERATIVE", "LAUNCH_CONCURRENT", "LAUNCH_SUBMIT", "LIMIT_STACK_SIZE",
    "LIMIT_MALLOC_HEAP_SIZE",
    "DEFAULT_TIMEOUT_NS",
]

__version__ = "0.1.0"
#: Major version of the C ABI this package was written for; must equal the library's.
ABI_MAJOR = 0

BUF_CPU_CACHED = 1
BUF_WRITE_COMBINED = 2
BUF_ZEROED = 4
BUF_DEVICE_LOCAL = 8
TIMEOUT_INFINITE = 0xFFFF_FFFF_FFFF_FFFF
LAUNCH_COOPERATIVE = 1
LAUNCH_CONCURRENT = 2
LAUNCH_SUBMIT = 4
LIMIT_STACK_SIZE = 0
LIMIT_MALLOC_HEAP_SIZE = 2
#: ``tg_texture_desc.kind``, ``.format``, ``.address_mode[i]`` and ``.flags`` values.
TEXTURE_LINEAR = 1
TEXTURE_PITCH2D = 2
TEXTURE_FORMATS = {"u8": 0, "s8": 1, "u16": 2, "s16": 3, "u32": 4, "s32": 5, "f16": 6, "f32": 7}
ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
TEXTURE_READ_NORMALIZED_FLOAT = 1
TEXTURE_NORMALIZED_COORDS = 2
TEXTURE_LINEAR_FILTER = 4
DEFAULT_TIMEOUT_NS = 30_000_000_000


class Status(enum.IntEnum):
    """``tg_status`` values (stable)."""
    OK = 0
    INVALID_ARGUMENT = 1
    NULL_POINTER = 2
    INVALID_HANDLE = 3
    OUT_OF_MEMORY = 4
    NOT_FOUND = 5
    NOT_SUPPORTED = 6
    TIMEOUT = 7
    DEVICE_FAULT = 8
    OS = 9
    INVALID_CUBIN = 10
    INVALID_LAUNCH = 11
    COMPILE = 12
    LIBRARY_MISSING = 13
    UNSUPPORTED_DRIVER = 14
    INTERNAL = 15
    DEVICE_LOST = 16


class LogLevel(enum.IntEnum):
    """``tg_log_level``: from quiet to verbose; a level shows its own messages and those of the
    levels above it."""
    OFF = 0
    ERROR = 1
    WARN = 2
    INFO = 3
    DEBUG = 4
    TRACE = 5


class QueueKind(enum.IntEnum):
    """``tg_queue_kind``."""
    COMPUTE = 0
    COPY = 1


class Backend(enum.IntEnum):
    """``tg_backend``."""
    NVGPU = 0
    RM = 1


# --------------------------------------------------------------------------------------------
# Errors

class Error(Exception):
    """A libtegragpu call failed.

    ``status`` is the :class:`Status` (a plain int for values this package does not know),
    ``message`` the library's description naming the call and the values involved
    (``tg_last_error_message()``), e.g. ``"tg_buf_alloc: size_bytes is 0"``. Each ``tg_status``
    has its own subclass (``InvalidHandle``, ``OutOfMemory``, ...); the class attribute
    ``status`` of a subclass is the status it stands for.
    """

    status = None

    def __init__(self, status, message=None):
        if message is None:
            message = _status_text(status)
        super().__init__(message)
        self.status = Status(status) if status in Status._value2member_map_ else status
        self.message = message

    def __str__(self):
        return self.message

    @property
    def call(self):
        """The name of the failed call the message starts with (``"tg_buf_alloc"``), or None."""
        head, sep, _ = self.message.partition(":")
        return head if sep and head and " " not in head else None


class InvalidArgument(Error, ValueError):
    """``TG_ERROR_INVALID_ARGUMENT``: an argument is out of range, malformed or inconsistent."""
    status = Status.INVALID_ARGUMENT


class NullPointer(Error, ValueError):
    """``TG_ERROR_NULL_POINTER``: a required pointer argument was NULL."""
    status = Status.NULL_POINTER


class InvalidHandle(Error):
    """``TG_ERROR_INVALID_HANDLE``: a handle is NULL, destroyed or of the wrong type (also: a
    Python object used after ``close()``)."""
    status = Status.INVALID_HANDLE


class OutOfMemory(Error, MemoryError):
    """``TG_ERROR_OUT_OF_MEMORY``: host or GPU memory, VA space or a ring is exhausted."""
    status = Status.OUT_OF_MEMORY


class NotFound(Error, LookupError):
    """``TG_ERROR_NOT_FOUND``: a named object (device, kernel, file) does not exist."""
    status = Status.NOT_FOUND


class NotSupported(Error):
    """``TG_ERROR_NOT_SUPPORTED``: not supported by this device, backend or build."""
    status = Status.NOT_SUPPORTED


class Timeout(Error, TimeoutError):
    """``TG_ERROR_TIMEOUT``: a wait ran past its timeout."""
    status = Status.TIMEOUT


class DeviceFault(Error):
    """``TG_ERROR_DEVICE_FAULT``: the GPU reported a fault (see :meth:`Device.fault`)."""
    status = Status.DEVICE_FAULT


class Os(Error, OSError):
    """``TG_ERROR_OS``: a system call to the kernel driver failed."""
    status = Status.OS


class InvalidCubin(Error):
    """``TG_ERROR_INVALID_CUBIN``: malformed code, or none for this GPU."""
    status = Status.INVALID_CUBIN


class InvalidLaunch(Error, ValueError):
    """``TG_ERROR_INVALID_LAUNCH``: the launch does not fit the kernel."""
    status = Status.INVALID_LAUNCH


class Compile(Error):
    """``TG_ERROR_COMPILE``: run-time compilation failed; the message carries the log."""
    status = Status.COMPILE


class LibraryMissing(Error):
    """``TG_ERROR_LIBRARY_MISSING``: an optional shared library (libnvrtc) is not installed."""
    status = Status.LIBRARY_MISSING


class UnsupportedDriver(Error):
    """``TG_ERROR_UNSUPPORTED_DRIVER``: the kernel driver's version is not supported."""
    status = Status.UNSUPPORTED_DRIVER


class Internal(Error):
    """``TG_ERROR_INTERNAL``: a bug in libtegragpu."""
    status = Status.INTERNAL


class DeviceLost(Error):
    """``TG_ERROR_DEVICE_LOST``: the device is unusable after a fault; reopen it."""
    status = Status.DEVICE_LOST


_ERRORS = {cls.status: cls for cls in (
    InvalidArgument, NullPointer, InvalidHandle, OutOfMemory, NotFound, NotSupported, Timeout,
    DeviceFault, Os, InvalidCubin, InvalidLaunch, Compile, LibraryMissing, UnsupportedDriver,
    Internal, DeviceLost)}
__all__ += ["Error"] + [c.__name__ for c in _ERRORS.values()]

# The names of earlier versions of this package (the same classes).
TegraGpuError = Error
InvalidArgumentError = InvalidArgument
NullPointerError = NullPointer
InvalidHandleError = InvalidHandle
OutOfMemoryError = OutOfMemory
NotFoundError = NotFound
NotSupportedError = NotSupported
GpuTimeoutError = Timeout
DeviceFaultError = DeviceFault
OsError = Os
InvalidCubinError = InvalidCubin
InvalidLaunchError = InvalidLaunch
CompileError = Compile
LibraryMissingError = LibraryMissing
UnsupportedDriverError = UnsupportedDriver
InternalError = Internal
DeviceLostError = DeviceLost
__all__ += ["TegraGpuError"] + [c.__name__ + "Error" for c in _ERRORS.values() if c is not Timeout
                                and c is not Os] + ["GpuTimeoutError", "OsError"]


def error_class(status):
    """The exception class for a ``tg_status`` (:class:`Error` itself for unknown values)."""
    return _ERRORS.get(status, Error)


# --------------------------------------------------------------------------------------------
# C types (must match include/tegragpu.h; python/tests/test_header_decls.py checks them)

#: Every handle type (``tg_device*``, ``tg_buf*``, ...) is passed as an opaque pointer.
Handle = ctypes.c_void_p


class CDeviceInfo(ctypes.Structure):
    """``tg_device_info``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char * 64),
        ("arch", ctypes.c_uint32),
        ("sm_major", ctypes.c_uint32),
        ("sm_minor", ctypes.c_uint32),
        ("sm_count", ctypes.c_uint32),
        ("memory_bytes", ctypes.c_uint64),
        ("va_bits", ctypes.c_uint32),
        ("backend", ctypes.c_int),
        ("emulated", ctypes.c_bool),
    ]


class CFaultReport(ctypes.Structure):
    """``tg_fault_report``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("code", ctypes.c_uint32),
        ("has_address", ctypes.c_bool),
        ("address", ctypes.c_uint64),
        ("message", ctypes.c_char * 256),
    ]


class CKernelAttributes(ctypes.Structure):
    """``tg_kernel_attributes``."""
    _fields_ = [(n, ctypes.c_uint32) for n in (
        "struct_size", "num_params", "param_bytes", "registers", "static_shared_bytes",
        "local_bytes_per_thread", "max_threads_per_block", "max_dynamic_shared_bytes")]


class CLaunchConfig(ctypes.Structure):
    """``tg_launch_config``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("grid", ctypes.c_uint32 * 3),
        ("block", ctypes.c_uint32 * 3),
        ("dynamic_shared_bytes", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("cluster", ctypes.c_uint32 * 3),
    ]


class CTextureDesc(ctypes.Structure):
    """``tg_texture_desc``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("kind", ctypes.c_uint32),
        ("format", ctypes.c_uint32),
        ("channels", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("address_mode", ctypes.c_uint32 * 2),
        ("border_color", ctypes.c_float * 4),
        ("offset_bytes", ctypes.c_uint64),
        ("width", ctypes.c_uint64),
        ("height", ctypes.c_uint64),
        ("pitch_bytes", ctypes.c_uint64),
    ]


#: ``tg_log_fn``: ``void (*)(tg_log_level level, const char *target, const char *message,
#: void *user)``.
LogFn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)

#: The C structs of the header by their C name.
STRUCTS = {
    "tg_device_info": CDeviceInfo,
    "tg_fault_report": CFaultReport,
    "tg_kernel_attributes": CKernelAttributes,
    "tg_launch_config": CLaunchConfig,
    "tg_texture_desc": CTextureDesc,
}
# Earlier private names.
_DeviceInfo, _FaultReport, _KernelAttributes, _LaunchConfig = (
    CDeviceInfo, CFaultReport, CKernelAttributes, CLaunchConfig)

_H = Handle
_P = ctypes.POINTER
_u32, _u64, _size, _int = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int
_st = ctypes.c_int  # tg_status (and every other enum) is an int

#: ``name: (restype, argtypes)`` of every function in include/tegragpu.h, as set on :data:`lib`.
SIGNATURES = {
    "tg_version": (_u32, []),
    "tg_status_str": (ctypes.c_char_p, [_st]),
    "tg_last_error_message": (ctypes.c_char_p, []),
    "tg_device_open": (_st, [ctypes.c_char_p, _P(_H)]),
    "tg_device_close": (_st, [_H]),
    "tg_device_get_info": (_st, [_H, _P(CDeviceInfo)]),
    "tg_device_synchronize": (_st, [_H, _u64]),
    "tg_device_get_fault": (_st, [_H, _P(CFaultReport)]),
    "tg_buf_alloc": (_st, [_H, _u64, _u32, _P(_H)]),
    "tg_buf_free": (_st, [_H]),
    "tg_buf_cpu_ptr": (_st, [_H, _P(ctypes.c_void_p)]),
    "tg_buf_gpu_address": (_st, [_H, _P(_u64)]),
    "tg_buf_size": (_st, [_H, _P(_u64)]),
    "tg_buf_export_dmabuf": (_st, [_H, _P(_int)]),
    "tg_module_load": (_st, [_H, ctypes.c_void_p, _size, _P(_H)]),
    "tg_module_load_file": (_st, [_H, ctypes.c_char_p, _P(_H)]),
    "tg_module_compile_cuda": (_st, [_H, ctypes.c_char_p, _P(ctypes.c_char_p), _size, _P(_H)]),
    "tg_module_destroy": (_st, [_H]),
    "tg_module_get_kernel": (_st, [_H, ctypes.c_char_p, _P(_H)]),
    "tg_kernel_destroy": (_st, [_H]),
    "tg_kernel_get_attributes": (_st, [_H, _P(CKernelAttributes)]),
    "tg_kernel_get_param": (_st, [_H, _u32, _P(_u32), _P(_u32)]),
    "tg_kernel_max_active_blocks": (_st, [_H, _u32, _u32, _P(_u32)]),
    "tg_module_get_global": (_st, [_H, ctypes.c_char_p, _P(_u64), _P(ctypes.c_void_p),
                                   _P(_u64)]),
    "tg_device_set_limit": (_st, [_H, _u32, _u64]),
    "tg_device_get_limit": (_st, [_H, _u32, _P(_u64)]),
    "tg_queue_create": (_st, [_H, _int, _P(_H)]),
    "tg_queue_create_with_depth": (_st, [_H, _int, _u32, _P(_H)]),
    "tg_queue_create_owned": (_st, [_H, _int, _u32, _P(_H)]),
    "tg_queue_destroy": (_st, [_H]),
    "tg_queue_abort": (_st, [_H]),
    "tg_launch": (_st, [_H, _H, _P(CLaunchConfig), ctypes.c_void_p, _size]),
    "tg_launch_args": (_st, [_H, _H, _P(CLaunchConfig), _P(ctypes.c_void_p), _size]),
    "tg_queue_copy": (_st, [_H, _H, _u64, _H, _u64, _u64]),
    "tg_queue_signal": (_st, [_H, _H, _u64]),
    "tg_queue_wait": (_st, [_H, _H, _u64]),
    "tg_queue_barrier": (_st, [_H]),
    "tg_queue_submit": (_st, [_H]),
    "tg_queue_synchronize": (_st, [_H, _u64]),
    "tg_signal_create": (_st, [_H, _u64, _P(_H)]),
    "tg_signal_destroy": (_st, [_H]),
    "tg_signal_value": (_st, [_H, _P(_u64)]),
    "tg_signal_timestamp": (_st, [_H, _P(_u64)]),
    "tg_signal_set": (_st, [_H, _u64]),
    "tg_signal_wait": (_st, [_H, _u64, _u64]),
    "tg_cmdbuf_create": (_st, [_H, _P(_H)]),
    "tg_cmdbuf_create_owned": (_st, [_H, _P(_H)]),
    "tg_queue_replay_submit": (_st, [_H, _H]),
    "tg_cmdbuf_destroy": (_st, [_H]),
    "tg_cmdbuf_launch": (_st, [_H, _H, _P(CLaunchConfig), ctypes.c_void_p, _size, _P(_u32)]),
    "tg_cmdbuf_copy": (_st, [_H, _H, _u64, _H, _u64, _u64, _P(_u32)]),
    "tg_cmdbuf_signal": (_st, [_H, _H, _u64, _P(_u32)]),
    "tg_cmdbuf_wait": (_st, [_H, _H, _u64, _P(_u32)]),
    "tg_cmdbuf_barrier": (_st, [_H, _P(_u32)]),
    "tg_cmdbuf_finish": (_st, [_H]),
    "tg_cmdbuf_set_params": (_st, [_H, _u32, _H, ctypes.c_void_p, _size]),
    "tg_cmdbuf_set_launch": (_st, [_H, _u32, _H, _P(CLaunchConfig)]),
    "tg_cmdbuf_set_value": (_st, [_H, _u32, _u64]),
    "tg_queue_replay": (_st, [_H, _H]),
    "tg_texture_create": (_st, [_H, _P(CTextureDesc), _P(_H)]),
    "tg_texture_handle": (_st, [_H, _P(_u64)]),
    "tg_texture_destroy": (_st, [_H]),
    "tg_set_log_callback": (_st, [LogFn, ctypes.c_void_p]),
    "tg_set_log_level": (_st, [_int]),
}


# --------------------------------------------------------------------------------------------
# Finding and loading the library

_SONAME = "libtegragpu.so.0"
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class LibraryNotFoundError(ImportError):
    """No libtegragpu could be loaded. ``tried`` lists ``(where, what happened)``."""

    def __init__(self, message, tried=()):
        super().__init__(message)
        self.tried = list(tried)


def _pkg_config_libdir():
    """``(libdir, None)`` from ``pkg-config --variable=libdir tegragpu``, or ``(None, why)``."""
    exe = shutil.which("pkg-config")
    if exe is None:
        return None, "pkg-config is not installed"
    try:
        r = subprocess.run([exe, "--variable=libdir", "tegragpu"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, universal_newlines=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"pkg-config failed: {e}"
    libdir = r.stdout.strip()
    if r.returncode != 0 or not libdir:
        return None, "no tegragpu.pc on PKG_CONFIG_PATH"
    return libdir, None


def _source_root(pkg_dir):
    """The source tree this package lies in (python/tegragpu), or None when installed."""
    root = os.path.dirname(os.path.dirname(pkg_dir))
    if os.path.exists(os.path.join(root, "Cargo.toml")) and \
            os.path.exists(os.path.join(root, "include", "tegragpu.h")):
        return root
    return None


def _candidates(environ=None, pkg_dir=None, pkg_config=_pkg_config_libdir):
    """The lookup order: a list of ``(source, path, note)``; ``path`` is None where the step
    has nothing to try (``note`` says why). ``source`` is one of "TEGRAGPU_LIBRARY",
    "package", "pkg-config", "system", "source tree"."""
    environ = os.environ if environ is None else environ
    pkg_dir = _PKG_DIR if pkg_dir is None else pkg_dir
    env = environ.get("TEGRAGPU_LIBRARY")
    if env:
        return [("TEGRAGPU_LIBRARY", env, None)]
    out = [("package", os.path.join(pkg_dir, "_lib", _SONAME), None)]
    libdir, why = pkg_config()
    if libdir is None:
        out.append(("pkg-config", None, why))
    else:
        out.append(("pkg-config", os.path.join(libdir, _SONAME), None))
    out.append(("system", _SONAME, None))
    root = _source_root(pkg_dir)
    if root is None:
        out.append(("source tree", None, "not running from a source tree"))
    else:
        for d in ("build/meson", "target/release"):
            out.append(("source tree", os.path.join(root, d, "libtegragpu.so"), None))
    return out


def _load(environ=None, pkg_dir=None, pkg_config=_pkg_config_libdir):
    """Load the library: ``(CDLL, path, source)``; raises :class:`LibraryNotFoundError`."""
    tried = []
    for source, path, note in _candidates(environ, pkg_dir, pkg_config):
        if path is None:
            tried.append((source, note))
            continue
        if os.path.sep in path and not os.path.exists(path):
            tried.append((f"{source}: {path}", "no such file"))
        else:
            try:
                return ctypes.CDLL(path), path, source
            except OSError as e:
                why = str(e)
                if why.startswith(path + ": "):
                    why = why[len(path) + 2:]
                tried.append((f"{source}: {path}", why))
        if source == "TEGRAGPU_LIBRARY":
            raise LibraryNotFoundError(
                f"TEGRAGPU_LIBRARY={path} cannot be loaded ({tried[-1][1]}); point it at a "
                "libtegragpu.so (e.g. target/release/libtegragpu.so after cargo build --release) "
                "or unset it to search the package, pkg-config and the system", tried)
    detail = "".join(f"\n  {where}: {why}" for where, why in tried)
    raise LibraryNotFoundError(
        f"libtegragpu not found ({len(tried)} places tried). Fix: set TEGRAGPU_LIBRARY to the "
        "library's path, install it (meson install; pkg-config tegragpu), or install a wheel "
        f"with the library bundled (docs/python.md). Tried:{detail}", tried)


def _tell_python_site(environ=None):
    """Put this interpreter's prefix and package directories (``sys.prefix``,
    ``site.getsitepackages()``, ``site.getusersitepackages()``) first in
    ``$TEGRAGPU_PYTHON_SITE``, where the library looks for libnvrtc and nvJitLink installed with
    pip (``nvidia/*/lib``) when it first needs them: a venv's python finds its wheels without
    activation."""
    import site
    import sys
    environ = os.environ if environ is None else environ
    dirs = [sys.prefix]
    for get in ("getsitepackages", "getusersitepackages"):
        try:
            got = getattr(site, get)()
        except Exception:  # an old virtualenv's site module, a disabled user site
            continue
        dirs += [got] if isinstance(got, str) else list(got)
    dirs += environ.get("TEGRAGPU_PYTHON_SITE", "").split(os.pathsep)
    environ["TEGRAGPU_PYTHON_SITE"] = os.pathsep.join(
        d for i, d in enumerate(dirs) if d and d not in dirs[:i])


_tell_python_site()
lib, _lib_path, _lib_source = _load()
#: Earlier private name of :data:`lib`.
_lib = lib

#: Functions of the header that the loaded library does not export (an older library); calling
#: one raises :class:`NotSupported`.
missing_functions = []


def _missing(name):
    def call(*args, **kwargs):
        raise NotSupported(Status.NOT_SUPPORTED,
                           f"{name}: not exported by {_lib_path} (an older libtegragpu "
                           f"{'.'.join(map(str, version()))}); update the library")
    call.__name__ = name
    return call


for _name, (_res, _args) in SIGNATURES.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        missing_functions.append(_name)
        setattr(lib, _name, _missing(_name))
        continue
    _f.restype = _res
    _f.argtypes = _args

_lib_version = lib.tg_version()
if _lib_version >> 16 != ABI_MAJOR:
    raise ImportError(
        f"{_lib_path} is libtegragpu {_lib_version >> 16}.{(_lib_version >> 8) & 0xff}."
        f"{_lib_version & 0xff}; this package needs ABI major {ABI_MAJOR}")


def version():
    """The loaded library's version as (major, minor, patch)."""
    return (_lib_version >> 16, (_lib_version >> 8) & 0xFF, _lib_version & 0xFF)


def library_path():
    """Path (or soname, when the system loader found it) of the loaded shared library."""
    return _lib_path


def library_source():
    """Which lookup step found the library: "TEGRAGPU_LIBRARY", "package", "pkg-config",
    "system" or "source tree"."""
    return _lib_source


def _status_text(status):
    try:
        return lib.tg_status_str(int(status)).decode()
    except Exception:
        return f"status {status}"


def status_str(status):
    """The library's description of a status code."""
    return lib.tg_status_str(int(status)).decode()


def last_error_message():
    """``tg_last_error_message()``: the message of the last failed call on this thread."""
    return (lib.tg_last_error_message() or b"").decode(errors="replace")


def check(status, call=""):
    """Raise the exception for ``status`` (a ``tg_status`` returned by a :data:`lib` call);
    return None for ``TG_OK``.

    The exception is the subclass of :class:`Error` for the status (:func:`error_class`), its
    message ``tg_last_error_message()``, which names the failed C call. ``call``, when given
    and the message does not already start with it, is put in front (``"call: message"``).
    Call it right after the failing call, on the same thread: the message is thread-local and
    replaced by the next failure.
    """
    if status == 0:
        return
    msg = last_error_message() or _status_text(status)
    if call and not msg.startswith(call):
        msg = f"{call}: {msg}"
    raise error_class(status)(status, msg)


_check = check

_log_callback = None  # the LogFn object the library holds (kept alive here)


def set_log_level(level):
    """``tg_set_log_level``: produce messages of ``level`` (a :class:`LogLevel`) and above;
    overrides ``$TEGRAGPU_LOG``."""
    check(lib.tg_set_log_level(int(level)))


def set_log_callback(fn):
    """Route the library's log messages to ``fn(level, target, message)`` (a
    :class:`LogLevel` and two str) instead of stderr; None restores stderr. ``fn`` may be
    called from any thread, the library's own included; exceptions it raises are ignored."""
    global _log_callback
    if fn is None:
        check(lib.tg_set_log_callback(LogFn(), None))  # NULL: back to stderr
        _log_callback = None
        return

    def trampoline(level, target, message, user):
        try:
            lvl = LogLevel(level) if level in LogLevel._value2member_map_ else level
            fn(lvl, (target or b"").decode(errors="replace"),
               (message or b"").decode(errors="replace"))
        except BaseException:
            pass

    cb = LogFn(trampoline)
    check(lib.tg_set_log_callback(cb, None))
    _log_callback = cb  # replaced only after the library stopped calling the old one


def _closed_error(what):
    return InvalidHandle(Status.INVALID_HANDLE, f"{what} is closed")


class _Handle:
    """Owns one C handle; ``close()`` destroys it (idempotent); also a context manager."""

    _destroy = None
    _what = "handle"

    def __init__(self, handle):
        self._h = handle

    @property
    def handle(self):
        """The raw C handle (an int) to pass to :data:`lib` functions; raises
        :class:`InvalidHandle` once closed."""
        if self._h is None:
            raise _closed_error(self._what)
        return self._h

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            check(getattr(lib, self._destroy)(h))

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    arch: int
    sm_major: int
    sm_minor: int
    sm_count: int
    memory_bytes: int
    va_bits: int
    backend: Backend
    emulated: bool


@dataclass(frozen=True)
class FaultReport:
    code: int
    address: "int | None"
    message: str


@dataclass(frozen=True)
class KernelAttributes:
    num_params: int
    param_bytes: int
    registers: int
    static_shared_bytes: int
    local_bytes_per_thread: int
    max_threads_per_block: int
    max_dynamic_shared_bytes: int


_NVGPU_CTRL = "/dev/nvgpu/igpu0/ctrl"
_SINGLE_DEVICE_SPECS = ("emu", "nvgpu")


def device_spec(spec=None, index=None):
    """The spec string :class:`Device` passes to ``tg_device_open`` for ``spec`` and ``index``
    (None = no spec: the GPU of this machine).

    ``index`` picks one of several GPUs driven by the desktop driver: ``index=N`` (no spec, or
    ``"rm"``) opens ``"rm:N"``. Exceptions: without a spec on a Jetson (``/dev/nvgpu`` present),
    ``index=0`` opens its one integrated GPU (``"nvgpu"``); ``"emu"`` and ``"nvgpu"`` have one
    device each, so only ``index=0`` is accepted there (:class:`NotFound` otherwise).
    """
    if index is None:
        return spec
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f"Device: index must be an int >= 0, got {index!r}")
    if spec is None:
        if index == 0 and os.path.exists(_NVGPU_CTRL):
            return "nvgpu"
        return f"rm:{index}"
    if spec in _SINGLE_DEVICE_SPECS:
        if index != 0:
            raise NotFound(Status.NOT_FOUND,
                           f'Device: "{spec}" has one device (index 0); there is no index {index}')
        return spec
    if ":" in spec:
        if spec.rpartition(":")[2] == str(index):
            return spec
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f'Device: spec "{spec}" already names a device; index={index} '
                              "conflicts with it")
    return f"{spec}:{index}"


class Device(_Handle):
    """An open GPU.

    ``spec``: None = the GPU of this machine, ``"emu"`` = the emulated Orin, ``"nvgpu"``,
    ``"rm"``, ``"rm:N"``. ``index``: which GPU of several (see :func:`device_spec`):
    ``Device(index=1)`` opens ``"rm:1"``. The environment variable ``TEGRAGPU_DEVICE`` is read
    by the C library (see docs/python.md). Objects created from a device keep it open after
    ``close()``.
    """

    _destroy = "tg_device_close"
    _what = "Device"

    def __init__(self, spec=None, index=None):
        s = device_spec(spec, index)
        h = _H()
        check(lib.tg_device_open(None if s is None else s.encode(), ctypes.byref(h)))
        super().__init__(h.value)
        #: The spec passed to ``tg_device_open`` (None: the GPU of this machine).
        self.spec = s
        #: The ``index`` argument (None when not given).
        self.index = index

    def __repr__(self):
        return f"<tegragpu.Device spec={self.spec!r}{' closed' if self.closed else ''}>"

    @property
    def info(self):
        i = CDeviceInfo(struct_size=ctypes.sizeof(CDeviceInfo))
        check(lib.tg_device_get_info(self.handle, ctypes.byref(i)))
        return DeviceInfo(i.name.decode(errors="replace"), i.arch, i.sm_major, i.sm_minor,
                          i.sm_count, i.memory_bytes, i.va_bits, Backend(i.backend),
                          bool(i.emulated))

    def alloc(self, size_bytes, flags=0):
        """Allocate ``size_bytes`` of GPU memory (see the BUF_* flags). The CPU mapping is not
        requested here: it is made on the first CPU access (:attr:`Buffer.cpu_ptr`,
        :meth:`Buffer.numpy`, :meth:`Buffer.read`, :meth:`Buffer.write`)."""
        h = _H()
        check(lib.tg_buf_alloc(self.handle, size_bytes, flags, ctypes.byref(h)))
        return Buffer(h.value, flags)

    def load_module(self, cubin):
        """Load a cubin (or fatbin, or PTX) from bytes."""
        data = bytes(cubin)
        h = _H()
        check(lib.tg_module_load(self.handle, data, len(data), ctypes.byref(h)))
        return Module(h.value)

    def load_module_file(self, path):
        h = _H()
        check(lib.tg_module_load_file(self.handle, os.fsencode(path), ctypes.byref(h)))
        return Module(h.value)

    def compile_cuda(self, source, options=()):
        """Compile CUDA C with libnvrtc for this device and load it."""
        opts = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
        h = _H()
        check(lib.tg_module_compile_cuda(self.handle, source.encode(),
                                         opts if options else None, len(options),
                                         ctypes.byref(h)))
        return Module(h.value)

    def create_queue(self, kind=QueueKind.COMPUTE, depth=None, owned=False):
        """A compute or copy queue; `depth` (power of two, 16..65536; default 1024) is how many
        submissions/launches may be in flight before recording waits for the GPU. `owned=True`:
        only the calling thread may use (and drop) the queue; its calls take no lock
        (``tg_queue_create_owned``)."""
        h = _H()
        if owned:
            check(lib.tg_queue_create_owned(self.handle, int(kind), int(depth or 0),
                                            ctypes.byref(h)))
        elif depth is None:
            check(lib.tg_queue_create(self.handle, int(kind), ctypes.byref(h)))
        else:
            check(lib.tg_queue_create_with_depth(self.handle, int(kind), int(depth),
                                                 ctypes.byref(h)))
        return Queue(h.value, self)

    def create_signal(self, initial=0):
        h = _H()
        check(lib.tg_signal_create(self.handle, initial, ctypes.byref(h)))
        return Signal(h.value)

    def create_texture(self, buf, width, format="f32", channels=1, height=None, pitch=None,
                       offset=0, filter="point", normalized_coords=False,
                       read_normalized_float=False, address=("clamp", "clamp"),
                       border=(0.0, 0.0, 0.0, 0.0)):
        """A :class:`Texture` over ``buf`` (a :class:`Buffer`; ``tg_texture_create``).

        Linear (``tex1Dfetch``) with ``width`` elements unless ``height`` is given; then
        pitch-linear 2-D (``tex2D``) of ``height`` rows ``pitch`` bytes apart. ``format``: one of
        :data:`TEXTURE_FORMATS` (channel type); ``channels`` 1, 2 or 4; ``offset`` bytes into
        ``buf`` (32-byte aligned); ``filter`` ``"point"`` or ``"linear"``; ``address``: x and y
        modes from :data:`ADDRESS_MODES`; ``border``: RGBA for ``"border"``. Pass
        :attr:`Texture.value` as the kernel's ``cudaTextureObject_t`` argument."""
        d = CTextureDesc()
        d.struct_size = ctypes.sizeof(CTextureDesc)
        if format not in TEXTURE_FORMATS:
            raise ValueError(f"format {format!r} is not one of {sorted(TEXTURE_FORMATS)}")
        if filter not in ("point", "linear"):
            raise ValueError(f"filter {filter!r} is neither 'point' nor 'linear'")
        d.format, d.channels = TEXTURE_FORMATS[format], int(channels)
        d.flags = ((TEXTURE_READ_NORMALIZED_FLOAT if read_normalized_float else 0)
                   | (TEXTURE_NORMALIZED_COORDS if normalized_coords else 0)
                   | (TEXTURE_LINEAR_FILTER if filter == "linear" else 0))
        modes = [ADDRESS_MODES.get(m) for m in address]
        if len(modes) != 2 or None in modes:
            raise ValueError(f"address {address!r}: two of {sorted(ADDRESS_MODES)}")
        d.address_mode[:] = modes
        d.border_color[:] = [float(c) for c in border]
        d.offset_bytes, d.width = int(offset), int(width)
        if height is None:
            d.kind = TEXTURE_LINEAR
        else:
            d.kind, d.height, d.pitch_bytes = TEXTURE_PITCH2D, int(height), int(pitch or 0)
        h = _H()
        check(lib.tg_texture_create(buf.handle, ctypes.byref(d), ctypes.byref(h)))
        return Texture(h.value, buf)

    def create_cmdbuf(self, owned=False):
        """An empty :class:`CmdBuf` (command buffer) on this device. `owned=True`: only the
        calling thread may use (and drop) it; its calls take no lock
        (``tg_cmdbuf_create_owned``)."""
        h = _H()
        if owned:
            check(lib.tg_cmdbuf_create_owned(self.handle, ctypes.byref(h)))
        else:
            check(lib.tg_cmdbuf_create(self.handle, ctypes.byref(h)))
        return CmdBuf(h.value, self)

    def synchronize(self, timeout_ns=DEFAULT_TIMEOUT_NS):
        """Submit what is recorded on the device's queues (every shared queue, and this
        thread's owned queues), then wait for all submitted work (``tg_device_synchronize``)."""
        check(lib.tg_device_synchronize(self.handle, timeout_ns))

    @property
    def stack_limit(self):
        """Stack bytes per GPU thread for kernels taken from now on (default 1024)."""
        v = ctypes.c_uint64()
        check(lib.tg_device_get_limit(self.handle, LIMIT_STACK_SIZE, ctypes.byref(v)))
        return v.value

    @stack_limit.setter
    def stack_limit(self, value):
        check(lib.tg_device_set_limit(self.handle, LIMIT_STACK_SIZE, int(value)))

    @property
    def malloc_heap_size(self):
        """Bytes of the heap ``malloc`` in kernels allocates from (default 8 MiB); set it before
        loading a module that calls ``malloc``."""
        v = ctypes.c_uint64()
        check(lib.tg_device_get_limit(self.handle, LIMIT_MALLOC_HEAP_SIZE, ctypes.byref(v)))
        return v.value

    @malloc_heap_size.setter
    def malloc_heap_size(self, value):
        check(lib.tg_device_set_limit(self.handle, LIMIT_MALLOC_HEAP_SIZE, int(value)))

    def fault(self):
        """The sticky fault report, or None if the device has not faulted."""
        r = CFaultReport(struct_size=ctypes.sizeof(CFaultReport))
        st = lib.tg_device_get_fault(self.handle, ctypes.byref(r))
        if st == Status.NOT_FOUND:
            return None
        check(st)
        return FaultReport(r.code, r.address if r.has_address else None,
                           r.message.decode(errors="replace"))


def _int_arg(v, what, where):
    if isinstance(v, bool) or not isinstance(v, int):
        try:
            v = v.__index__()
        except (AttributeError, TypeError):
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"{where}: {what} must be an int, got {type(v).__name__}")
    if v < 0:
        raise InvalidArgument(Status.INVALID_ARGUMENT, f"{where}: {what} {v} is negative")
    return v


def _check_range(where, what, offset, size, limit, describe):
    """Raise InvalidArgument unless [offset, offset + size) lies within [0, limit)."""
    offset = _int_arg(offset, f"{what}offset", where)
    size = _int_arg(size, f"{what}size", where)
    if offset + size > limit:
        raise InvalidArgument(
            Status.INVALID_ARGUMENT,
            f"{where}: {what}range [{offset}, {offset + size}) is outside {describe} "
            f"({limit} bytes)")
    return offset, size


class _Region:
    """What Buffer and BufferView share: a byte range [offset, offset + size) of a Buffer."""

    __slots__ = ()

    def view(self, offset, size=None):
        """A :class:`BufferView` of ``size`` bytes (default: to the end) from ``offset``,
        relative to this region. Bounds-checked: raises :class:`InvalidArgument`."""
        if size is None:
            offset = _int_arg(offset, "offset", "view")
            if offset > self.size:
                raise InvalidArgument(
                    Status.INVALID_ARGUMENT,
                    f"view: offset {offset} is outside {self._describe()} ({self.size} bytes)")
            size = self.size - offset
        offset, size = _check_range("view", "", offset, size, self.size, self._describe())
        return BufferView(self.buffer, self.offset + offset, size)

    @property
    def gpu_address(self):
        """The GPU virtual address of the region's first byte (pass it to kernels)."""
        return self.buffer._va_checked() + self.offset

    @property
    def cpu_ptr(self):
        """The CPU address of the region's first byte; maps the buffer for the CPU on first
        use (``tg_buf_cpu_ptr``)."""
        return self.buffer._map() + self.offset

    def numpy(self, dtype="uint8", shape=None, offset=0):
        """A numpy array viewing the region's memory (no copy). ``shape`` defaults to as many
        elements of ``dtype`` as fit after ``offset`` bytes. Maps the buffer for the CPU on
        first use. The buffer's memory stays allocated while the array is alive."""
        import numpy as np
        buf = self.buffer
        if buf._close_requested:
            raise _closed_error("Buffer")
        where = f"{type(self).__name__}.numpy"
        dt = np.dtype(dtype)
        offset = _int_arg(offset, "offset", where)
        if offset > self.size:
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"{where}: offset {offset} outside {self.size} bytes")
        if shape is None:
            shape = ((self.size - offset) // dt.itemsize,)
        elif isinstance(shape, int):
            shape = (shape,)
        need = dt.itemsize
        for s in shape:
            need *= s
        if need > self.size - offset:
            raise InvalidArgument(
                Status.INVALID_ARGUMENT,
                f"{where}: shape {tuple(shape)} of {dt} needs {need} bytes, the "
                f"{'view' if isinstance(self, BufferView) else 'buffer'} has "
                f"{self.size - offset} after offset {offset}")
        raw = (ctypes.c_ubyte * need).from_address(self.cpu_ptr + offset)
        raw._tg_buffer = buf  # the array keeps the buffer object alive
        buf._views += 1
        weakref.finalize(raw, Buffer._view_gone, buf)
        return np.frombuffer(raw, dtype=dt, count=need // dt.itemsize).reshape(shape)

    def read(self, size=None, offset=0):
        """Copy ``size`` bytes (default: to the end) from ``offset`` into a new ``bytes``
        through the CPU mapping (slow for video memory on desktop GPUs: see docs/python.md)."""
        if size is None:
            offset = _int_arg(offset, "offset", "read")
            size = max(self.size - offset, 0)
        offset, size = _check_range("read", "", offset, size, self.size, self._describe())
        if size == 0:
            return b""
        return ctypes.string_at(self.cpu_ptr + offset, size)

    def write(self, data, offset=0):
        """Copy ``data`` (bytes or any contiguous buffer, e.g. a numpy array) to ``offset``
        through the CPU mapping."""
        mv = memoryview(data)
        if not mv.contiguous:
            raise InvalidArgument(Status.INVALID_ARGUMENT, "write: data is not contiguous")
        mv = mv.cast("B")
        offset, n = _check_range("write", "", offset, mv.nbytes, self.size, self._describe())
        if n == 0:
            return
        if isinstance(data, bytes):
            src = data
        elif not mv.readonly:
            src = (ctypes.c_char * n).from_buffer(mv)
        else:
            src = bytes(mv)
        ctypes.memmove(self.cpu_ptr + offset, src, n)


class Buffer(_Handle, _Region):
    """GPU memory the CPU can access (``tg_buf``).

    The CPU mapping is made on first CPU access (:attr:`cpu_ptr`, :meth:`numpy`, :meth:`read`,
    :meth:`write`), never by allocation; :attr:`gpu_address`, :meth:`view` and kernel
    arguments do not map. ``numpy()`` gives zero-copy arrays; the memory is freed once the
    buffer is closed *and* no array is alive any more.

    A Buffer is also the region ``[0, size)`` of itself: ``buffer`` is the buffer itself,
    ``offset`` is 0, as for a :class:`BufferView`.
    """

    _destroy = "tg_buf_free"
    _what = "Buffer"

    def __init__(self, handle, flags=None):
        super().__init__(handle)
        self._views = 0
        self._close_requested = False
        self._ptr = None
        #: The ``tg_buf_alloc`` flags (None when not known).
        self.flags = flags
        n = ctypes.c_uint64()
        check(lib.tg_buf_size(handle, ctypes.byref(n)))
        self._size = n.value
        a = ctypes.c_uint64()
        check(lib.tg_buf_gpu_address(handle, ctypes.byref(a)))
        self._va = a.value

    def __repr__(self):
        state = " closed" if self.closed else ""
        return f"<tegragpu.Buffer {self._size} bytes at {self._va:#x}{state}>"

    @property
    def buffer(self):
        return self

    @property
    def offset(self):
        return 0

    def _describe(self):
        return "the buffer"

    @property
    def size(self):
        self.handle
        return self._size

    def _va_checked(self):
        self.handle
        return self._va

    @property
    def cpu_mapped(self):
        """Whether this object has asked the library for the CPU mapping yet."""
        return self._ptr is not None

    def _map(self):
        h = self.handle
        if self._ptr is None:
            p = ctypes.c_void_p()
            check(lib.tg_buf_cpu_ptr(h, ctypes.byref(p)))
            self._ptr = p.value
        return self._ptr

    def _view_gone(self):
        self._views -= 1
        if self._close_requested and self._views == 0:
            _Handle.close(self)

    def close(self):
        """Free the buffer (deferred until the last numpy array is gone)."""
        self._close_requested = True
        if self._views == 0:
            _Handle.close(self)

    def export_dmabuf(self):
        """A new dma-buf file descriptor for the buffer (the caller closes it)."""
        fd = ctypes.c_int()
        check(lib.tg_buf_export_dmabuf(self.handle, ctypes.byref(fd)))
        return fd.value


class BufferView(_Region):
    """``size`` bytes of a :class:`Buffer` from ``offset`` (:meth:`Buffer.view`). Accepted
    wherever a Buffer is: as a kernel argument (its :attr:`gpu_address`), in
    :meth:`Queue.copy` (offsets relative to the view, bounds-checked against it). Keeps the
    buffer object alive; closing the buffer invalidates its views."""

    __slots__ = ("buffer", "offset", "size")

    def __init__(self, buffer, offset, size):
        #: The :class:`Buffer` this is a view of.
        self.buffer = buffer
        #: Byte offset in ``buffer``.
        self.offset = offset
        #: Size in bytes.
        self.size = size

    def _describe(self):
        return f"the view [{self.offset}, {self.offset + self.size}) of a " \
               f"{self.buffer._size}-byte buffer"

    def __repr__(self):
        return (f"<tegragpu.BufferView [{self.offset}, {self.offset + self.size}) of "
                f"{self.buffer!r}>")


_REGIONS = (Buffer, BufferView)


def _region(x, where, what):
    if isinstance(x, _REGIONS):
        return x
    raise InvalidArgument(Status.INVALID_ARGUMENT,
                          f"{where}: {what} must be a Buffer or BufferView, got "
                          f"{type(x).__name__}")


# ---------------------------------------------------------------------------------------------
# Kernel parameter types. A cubin records only each parameter's offset and size; the C type of a
# C++ kernel's parameters is read from its Itanium-mangled name (``_Z5saxpyfPKfPfj`` =
# ``saxpy(float, const float*, float*, unsigned int)``) by the small demangler below, which reads
# the parameter list only. Kernel.pack checks each argument against the type.


import sys as _sys  # noqa: E402  (numpy detection in Kernel.pack)


class _DemangleError(ValueError):
    pass


class _CType:
    """A demangled type: ``spelling`` (C), ``kind`` ("builtin", "ptr", "ref", "class", "func",
    "array", "value": a template argument that is not a type) and ``code`` (the mangling code of
    a builtin type, or of the builtin a qualified type qualifies)."""

    __slots__ = ("spelling", "kind", "code")

    def __init__(self, spelling, kind, code=None):
        self.spelling, self.kind, self.code = spelling, kind, code


#: Mangling code -> (C spelling, what Kernel.pack checks, size in bytes on the GPU).
#: Checks: "int"/"uint" (range of a signed/unsigned integer), "char" (char: signed on x86-64,
#: unsigned on aarch64; -128..255 accepted), "bool", "float" (IEEE binary16/32/64 by size),
#: "bf16", "ptr" (an address); None: by size only.
_BUILTIN_TYPES = {
    "v": ("void", None, 0), "w": ("wchar_t", "int", 4), "b": ("bool", "bool", 1),
    "c": ("char", "char", 1), "a": ("signed char", "int", 1), "h": ("unsigned char", "uint", 1),
    "s": ("short", "int", 2), "t": ("unsigned short", "uint", 2), "i": ("int", "int", 4),
    "j": ("unsigned int", "uint", 4), "l": ("long", "int", 8), "m": ("unsigned long", "uint", 8),
    "x": ("long long", "int", 8), "y": ("unsigned long long", "uint", 8),
    "n": ("__int128", "int", 16), "o": ("unsigned __int128", "uint", 16),
    "f": ("float", "float", 4), "d": ("double", "float", 8), "e": ("long double", None, 0),
    "g": ("__float128", None, 0), "z": ("...", None, 0),
    "Dh": ("half", "float", 2), "DF16_": ("_Float16", "float", 2),
    "DF16b": ("std::bfloat16_t", "bf16", 2), "DF32_": ("_Float32", "float", 4),
    "DF64_": ("_Float64", "float", 8), "Di": ("char32_t", "uint", 4),
    "Ds": ("char16_t", "uint", 2), "Du": ("char8_t", "uint", 1),
    "Dn": ("decltype(nullptr)", "ptr", 8),
}
#: CUDA's scalar structs (cuda_fp16.h, cuda_bf16.h): checked as the scalar they hold.
_CLASS_SCALARS = {"__half": ("float", 2), "half": ("float", 2), "__nv_bfloat16": ("bf16", 2),
                  "nv_bfloat16": ("bf16", 2)}
_STD_SUBS = {"St": "std", "Sa": "std::allocator", "Sb": "std::basic_string",
             "Ss": "std::string", "Si": "std::istream", "So": "std::ostream",
             "Sd": "std::iostream"}


class _Demangler:
    """Reads ``_Z<name><parameter types>`` (the Itanium C++ ABI) far enough for kernel names:
    plain, namespaced and template functions; builtin, pointer, reference, cv-qualified,
    class/enum, template-parameter, function and array types; substitutions. Anything else
    (local names, operators, expressions, pack expansions, vendor qualifiers) raises
    _DemangleError."""

    def __init__(self, s):
        self.s, self.i = s, 0
        self.subs = []          # substitution candidates, in order (S_, S0_, S1_, ...)
        self.targs = None       # the function's template arguments (T_, T0_, ...)

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def fail(self, why):
        raise _DemangleError(f"{self.s!r} at {self.i}: {why}")

    def number(self):
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        if j == self.i:
            self.fail("expected a number")
        return int(self.s[j:self.i])

    def source_name(self):
        n = self.number()
        if n <= 0 or self.i + n > len(self.s):
            self.fail("bad identifier length")
        name = self.s[self.i:self.i + n]
        self.i += n
        return name

    def seq_id(self, prefix):
        """``<prefix>_`` = 0, ``<prefix><base-36 n>_`` = n + 1 (S_, S0_, ... / T_, T0_, ...)."""
        j = self.i
        while self.i < len(self.s) and self.s[self.i] != "_":
            c = self.s[self.i]
            if not (c.isdigit() or "A" <= c <= "Z"):
                self.fail(f"bad {prefix} index")
            self.i += 1
        if self.i >= len(self.s):
            self.fail(f"unterminated {prefix}")
        digits = self.s[j:self.i]
        self.i += 1
        return int(digits, 36) + 1 if digits else 0

    def substitution(self):
        """``S...``: a previous candidate or a std:: abbreviation (the caller is at 'S')."""
        two = self.peek(2)
        if two in _STD_SUBS:
            self.i += 2
            return two, _CType(_STD_SUBS[two], "class")
        self.i += 1
        k = self.seq_id("S")
        if k >= len(self.subs):
            self.fail(f"substitution S{k} beyond the {len(self.subs)} candidates")
        return None, self.subs[k]

    def unqualified(self):
        c = self.peek()
        if c.isdigit():
            return self.source_name()
        self.fail("only plain identifiers are read (no operators, constructors, lambdas)")

    def template_args(self):
        self.i += 1  # 'I'
        args = []
        while self.peek() != "E":
            c = self.peek()
            if not c:
                self.fail("unterminated template arguments")
            if c == "L":
                self.i += 1
                if self.peek(2) == "_Z":
                    self.fail("template argument names an entity")
                t = self.type()
                j = self.i
                while self.i < len(self.s) and self.s[self.i] != "E":
                    self.i += 1
                if self.i >= len(self.s):
                    self.fail("unterminated literal")
                v = self.s[j:self.i]
                self.i += 1
                if t.code == "b" and v in ("0", "1"):
                    v = ("false", "true")[int(v)]
                elif v.startswith("n"):
                    v = "-" + v[1:]
                args.append(_CType(v, "value"))
            elif c == "J":
                self.fail("template argument packs are not read")
            elif c == "X":
                self.fail("template argument expressions are not read")
            else:
                args.append(self.type())
        self.i += 1
        return args

    @staticmethod
    def with_args(name, args):
        inner = ", ".join(a.spelling for a in args)
        return f"{name}<{inner}{' ' if inner.endswith('>') else ''}>"

    def name(self, function):
        """A name; returns (spelling, template arguments or None). ``function``: the kernel's
        own name, which is no substitution candidate (its template prefix is)."""
        c = self.peek()
        if c == "N":
            return self.nested(function)
        if c == "Z":
            self.fail("local names are not read")
        if c == "S":
            abbrev, t = self.substitution()
            name = t.spelling
            if abbrev == "St":
                name = "std::" + self.unqualified()
                if self.peek() == "I" or not function:
                    self.subs.append(_CType(name, "class"))
            elif function and self.peek() != "I":
                self.fail("a substitution as a function name")
            # else: a substitution or abbreviation is no new candidate
        else:
            name = self.unqualified()
            if self.peek() == "I" or not function:
                self.subs.append(_CType(name, "class"))
        if self.peek() == "I":
            args = self.template_args()
            name = self.with_args(name, args)
            if not function:
                self.subs.append(_CType(name, "class"))
            return name, args
        return name, None

    def nested(self, function):
        self.i += 1  # 'N'
        while self.peek() in ("r", "V", "K", "R", "O"):
            if self.peek() in ("R", "O"):
                self.fail("member function ref-qualifiers are not read")
            self.i += 1
        cur, args = "", None
        while self.peek() != "E":
            c = self.peek()
            if not c:
                self.fail("unterminated nested name")
            if c == "S":
                if cur:
                    self.fail("a substitution inside a nested name")
                _, t = self.substitution()
                cur = t.spelling
                args = None
                continue  # a substitution is no new candidate
            if c == "I":
                if not cur:
                    self.fail("template arguments without a name")
                args = self.template_args()
                cur = self.with_args(cur, args)
            else:
                part = self.unqualified()
                cur = f"{cur}::{part}" if cur else part
                args = None
            if not (function and self.peek() == "E"):
                self.subs.append(_CType(cur, "class"))
        self.i += 1
        return cur, args

    def type(self):
        s, c = self.s, self.peek()
        if not c:
            self.fail("expected a type")
        if c in "rVK":
            quals = []
            while self.peek() in ("r", "V", "K"):
                quals.append({"r": "__restrict__", "V": "volatile", "K": "const"}[self.peek()])
                self.i += 1
            inner = self.type()
            q = " ".join(reversed(quals))  # mangled r V K; written const volatile __restrict__
            if inner.kind in ("ptr", "ref"):
                sp = f"{inner.spelling} {q}"
            else:
                sp = f"{q} {inner.spelling}"
            t = _CType(sp, inner.kind, inner.code)
        elif c in "PRO":
            self.i += 1
            inner = self.type()
            mark = {"P": "*", "R": "&", "O": "&&"}[c]
            kind = "ptr" if c == "P" else "ref"
            if inner.kind == "func":
                ret, params = inner.code
                t = _CType(f"{ret} ({mark})({params})", kind)
            elif inner.kind == "array":
                elem, dim = inner.code
                t = _CType(f"{elem} ({mark})[{dim}]", kind)
            else:
                t = _CType(inner.spelling + mark, kind)
        elif c == "F":
            self.i += 1
            if self.peek() == "Y":
                self.i += 1
            ret = self.type()
            params = []
            while self.peek() not in ("E", ""):
                if self.peek() in ("R", "O") and self.s[self.i + 1:self.i + 2] == "E":
                    self.i += 1
                    continue
                params.append(self.type())
            if self.peek() != "E":
                self.fail("unterminated function type")
            self.i += 1
            if len(params) == 1 and params[0].code == "v":
                params = []
            ps = ", ".join(p.spelling for p in params)
            t = _CType(f"{ret.spelling} ({ps})", "func", (ret.spelling, ps))
        elif c == "A":
            self.i += 1
            dim = str(self.number()) if self.peek().isdigit() else ""
            if self.peek() != "_":
                self.fail("array dimension expressions are not read")
            self.i += 1
            elem = self.type()
            t = _CType(f"{elem.spelling}[{dim}]", "array", (elem.spelling, dim))
        elif c == "T":
            self.i += 1
            k = self.seq_id("T")
            if self.targs is None or k >= len(self.targs):
                self.fail(f"template parameter T{k} unknown")
            t = self.targs[k]
            if self.peek() == "I":
                self.subs.append(t)
                t = _CType(self.with_args(t.spelling, self.template_args()), "class")
        elif c == "S" and s[self.i:self.i + 2] not in _STD_SUBS:
            _, t = self.substitution()
            if self.peek() == "I":
                t = _CType(self.with_args(t.spelling, self.template_args()), "class")
            else:
                return t  # a substitution is no new candidate
        elif c in "NS" or c.isdigit():
            name, _ = self.name(function=False)
            return _CType(name, "class")  # name() recorded the candidates
        elif c == "D":
            for code in ("DF16_", "DF16b", "DF32_", "DF64_", "Dh", "Di", "Ds", "Du", "Dn"):
                if s.startswith(code, self.i):
                    self.i += len(code)
                    return _CType(_BUILTIN_TYPES[code][0], "builtin", code)
            self.fail("this D type (pack expansion, decltype, vector) is not read")
        elif c == "u":
            self.i += 1
            t = _CType(self.source_name(), "class")
        elif c in _BUILTIN_TYPES:
            self.i += 1
            return _CType(_BUILTIN_TYPES[c][0], "builtin", c)  # builtins are no candidates
        else:
            self.fail(f"type code {c!r} is not read")
        self.subs.append(t)
        return t

    def parse(self):
        """(function name, [_CType of each parameter])."""
        if not self.s.startswith("_Z"):
            self.fail("not a mangled name")
        self.i = 2
        name, targs = self.name(function=True)
        if targs is not None:
            self.targs = targs
            self.type()  # a template function's name is followed by its return type
        params = []
        while self.i < len(self.s) and self.s[self.i] != ".":  # ".part.0" etc.: clone suffixes
            params.append(self.type())
        if not params:
            self.fail("no parameter list")
        if len(params) == 1 and params[0].code == "v":
            params = []
        elif any(p.code == "v" and p.kind == "builtin" for p in params):
            self.fail("void among parameters")
        return name, params


def _demangle(name):
    """``(function name, [C type of each parameter])`` for an Itanium-mangled name, or None for
    a name that is not mangled or that the demangler does not read."""
    try:
        fname, params = _Demangler(name).parse()
    except (_DemangleError, IndexError, ValueError, RecursionError):
        return None
    return fname, [p.spelling for p in params]


def _check_of(t, size):
    """What Kernel.pack checks (see _BUILTIN_TYPES) for a parameter of ``size`` bytes of type
    ``t`` (a _CType, or None: unknown); None: by size only."""
    if t is None:
        return None
    if t.kind in ("ptr", "ref"):
        return "ptr" if size == 8 else None
    if t.kind == "builtin":
        _, check_, tsize = _BUILTIN_TYPES[t.code]
    elif t.kind == "class" and t.spelling in _CLASS_SCALARS:
        check_, tsize = _CLASS_SCALARS[t.spelling]
    else:
        return None
    return check_ if tsize == size else None  # the cubin disagrees with the type: size only


# param_types= of Module.kernel: C declarations ("const float* x", "unsigned n") -> _CType, name
_C_QUALIFIERS = ("const", "volatile", "restrict", "__restrict__", "__restrict")
_C_TYPEDEFS = {
    "int8_t": "a", "uint8_t": "h", "int16_t": "s", "uint16_t": "t", "int32_t": "i",
    "uint32_t": "j", "int64_t": "l", "uint64_t": "m", "size_t": "m", "ssize_t": "l",
    "ptrdiff_t": "l", "intptr_t": "l", "uintptr_t": "m", "_Bool": "b", "bool": "b",
    "float": "f", "double": "d", "_Float16": "DF16_", "char16_t": "Ds", "char32_t": "Di",
    "char8_t": "Du", "wchar_t": "w", "void": "v",
}
_C_INT_WORDS = {"signed", "unsigned", "char", "short", "int", "long"}


def _c_int_code(words):
    if not words or not set(words) <= _C_INT_WORDS or words.count("long") > 2 or \
            len(set(words)) != len(words) - max(words.count("long") - 1, 0) or \
            ("signed" in words and "unsigned" in words):
        return None
    u, longs = "unsigned" in words, words.count("long")
    if "char" in words:
        return None if set(words) - {"char", "signed", "unsigned"} else \
            ("h" if u else "a" if "signed" in words else "c")
    if "short" in words:
        return None if longs else ("t" if u else "s")
    if longs:
        return ("m" if u else "l") if longs == 1 else ("y" if u else "x")
    return "j" if u else "i"


def _parse_c_decl(decl):
    """A C parameter declaration ("const float* x", "unsigned n", "Dims d") -> (_CType, name or
    None). Unknown type names are kept as a class type (checked by size only)."""
    import re
    toks = [m.group(1).replace(" ", "") for m in
            re.finditer(r"\s*([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|\*|&&|&|\S)", decl)]
    if not toks or any(not (t[0].isalpha() or t[0] == "_" or t in ("*", "&", "&&"))
                       for t in toks):
        raise ValueError(f"cannot read the C declaration {decl!r}")
    name = None
    last = toks[-1]
    if last not in ("*", "&", "&&") and last not in _C_QUALIFIERS and last not in _C_TYPEDEFS \
            and last not in _C_INT_WORDS and len([t for t in toks if t not in _C_QUALIFIERS]) > 1:
        name = last
        toks = toks[:-1]
    marks = [j for j, t in enumerate(toks) if t in ("*", "&", "&&")]
    base_end = marks[0] if marks else len(toks)
    quals = [t for t in toks[:base_end] if t in _C_QUALIFIERS]
    words = [t for t in toks[:base_end] if t not in _C_QUALIFIERS]
    if not words:
        raise ValueError(f"no type in the C declaration {decl!r}")
    if words == ["long", "double"]:
        code = "e"
    elif len(words) > 1 or words[0] in _C_INT_WORDS:
        code = _c_int_code(words)
        if code is None:
            raise ValueError(f"cannot read the C type in {decl!r}")
    else:
        code = _C_TYPEDEFS.get(words[0])
    # int words are spelled as the demangler spells them; typedef and class names as written
    base = _BUILTIN_TYPES[code][0] if code and set(words) <= _C_INT_WORDS | {"double"} \
        else " ".join(words)
    spelling = " ".join([q for q in ("const", "volatile") if q in quals] + [base])
    if code is not None and not marks:
        t = _CType(spelling, "builtin", code)
    elif code is None and not marks:
        t = _CType(spelling, "class")
    else:
        for t_ in toks[base_end:]:
            if t_ in ("*", "&", "&&"):
                spelling += t_
            elif t_ in ("const", "volatile"):
                spelling += " " + t_
        t = _CType(spelling, "ref" if toks[marks[-1]] != "*" else "ptr")
    return t, name


class _Refused(Exception):
    """An argument a parameter does not take (the reason); Kernel.pack names the parameter."""


_NUMPY = [None]


def _numpy():
    """The numpy module if the program has imported it (a numpy value implies it has), else
    None: the package does not import numpy itself."""
    np = _NUMPY[0]
    if np is None:
        np = _NUMPY[0] = _sys.modules.get("numpy")
    return np


def _describe_value(a):
    np = _numpy()
    if np is not None and isinstance(a, np.generic):
        return f"numpy.{a.dtype} {a!s}"
    r = repr(a)
    return f"{type(a).__name__} {r if len(r) <= 60 else r[:57] + '...'}"


def _int_range(check_, size):
    bits = 8 * size
    if check_ == "int":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if check_ == "uint":
        return 0, (1 << bits) - 1
    if check_ == "char":
        return -128, 255
    return -(1 << (bits - 1)), (1 << bits) - 1   # type unknown: either signedness


def _raw(a, size):
    """The bytes of a bytes-like object or of a numpy array or scalar, which must number
    ``size``; None if ``a`` is none of these."""
    if isinstance(a, (bytes, bytearray, memoryview)):
        raw = bytes(a)
    elif hasattr(a, "tobytes") and hasattr(a, "dtype"):
        raw = a.tobytes()
    else:
        return None
    if len(raw) != size:
        raise _Refused(f"has {len(raw)} bytes; the parameter has {size}")
    return raw


_FLOAT_FORMATS = {2: "<e", 4: "<f", 8: "<d"}


def _float_bytes(v, size, check_):
    """The IEEE bytes of ``v`` (an int or float) for a floating-point parameter of ``size``
    bytes (``check_`` "bf16": bfloat16, rounded to nearest even)."""
    try:
        if type(v) is not float:
            v = float(v)  # OverflowError for ints beyond the double range
        if check_ == "bf16":
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            if (bits & 0x7f800000) == 0x7f800000:
                return struct.pack("<H", (bits >> 16) | (0x40 if bits & 0x7fffff else 0))
            r = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16
            if (r & 0x7f80) == 0x7f80:
                raise OverflowError
            return struct.pack("<H", r)
        return struct.pack(_FLOAT_FORMATS[size], v)
    except OverflowError:
        raise _Refused("overflows (not finite in this floating-point type)") from None


_PACKERS = {}


def _packer(check_, size):
    """_make_packer(check_, size), made once per (check, size)."""
    fn = _PACKERS.get((check_, size))
    if fn is None:
        fn = _PACKERS[(check_, size)] = _make_packer(check_, size)
    return fn


def _make_packer(check_, size):
    """A function packing one argument for a parameter of ``size`` bytes checked as ``check_``
    (see _BUILTIN_TYPES; None: by size only); it returns ``size`` bytes or raises _Refused."""
    lo, hi = _int_range(check_, size)

    def numpy_int(a):
        if a.dtype.kind not in "iu":
            raise _Refused("is not an integer")
        if a.dtype.itemsize != size:
            raise _Refused(f"is a numpy integer of {a.dtype.itemsize} bytes; the parameter "
                           f"has {size}")
        return int(a)

    def other_int(a):
        """An int from an int subclass (IntEnum...); raw bytes are handled by the caller."""
        if isinstance(a, int):
            return int(a)
        raise _Refused("is not an integer" if isinstance(a, float) else
                       "cannot be passed for this parameter")

    if check_ in ("int", "uint", "char"):
        unsigned = check_ == "uint"

        def pack_int(a):
            t = type(a)
            if t is not int and t is not bool:
                np = _numpy()
                if np is not None and isinstance(a, np.generic):
                    a = numpy_int(a)
                else:
                    raw = _raw(a, size)
                    if raw is not None:
                        return raw
                    a = other_int(a)
            if a < lo or a > hi:
                if a < 0 and unsigned:
                    raise _Refused(f"is negative; the parameter is unsigned (0..{hi})")
                raise _Refused(f"is out of range ({lo}..{hi})")
            return a.to_bytes(size, "little", signed=a < 0)
        return pack_int

    if check_ == "bool":
        def pack_bool(a):
            if a is True or a is False:
                return b"\x01" if a else b"\x00"
            np = _numpy()
            if np is not None and isinstance(a, np.generic):
                v = bool(a) if a.dtype.kind == "b" else int(a) if a.dtype.kind in "iu" else None
            else:
                raw = _raw(a, size)
                if raw is not None:
                    return raw
                v = int(a) if isinstance(a, int) else None
            if v is None or v not in (0, 1):
                raise _Refused("is not a bool (True, False, 0 or 1)")
            return b"\x01" if v else b"\x00"
        return pack_bool

    if check_ in ("float", "bf16"):
        def pack_float(a):
            t = type(a)
            if t is float or t is int:
                return _float_bytes(a, size, check_)
            np = _numpy()
            if np is not None and isinstance(a, np.generic):
                k = a.dtype.kind
                if k == "f":
                    if a.dtype.itemsize == size and check_ == "float":
                        return a.tobytes()
                    return _float_bytes(float(a), size, check_)
                if k in "iu":
                    return _float_bytes(int(a), size, check_)
                raise _Refused("is not a real number")
            raw = _raw(a, size)
            if raw is not None:
                return raw
            if isinstance(a, bool):
                raise _Refused("is a bool, not a number")
            if isinstance(a, (int, float)):
                return _float_bytes(a, size, check_)
            raise _Refused("cannot be passed for this parameter")
        return pack_float

    if check_ == "ptr":
        not_address = "is not a Buffer, BufferView, address (int >= 0) or None"

        def pack_ptr(a):
            if isinstance(a, _REGIONS):
                return a.gpu_address.to_bytes(8, "little")
            if a is None:
                return bytes(8)
            t = type(a)
            if t is not int:
                np = _numpy()
                if np is not None and isinstance(a, np.generic):
                    if a.dtype.kind not in "iu":
                        raise _Refused(not_address)
                    a = int(a)
                elif t is bool:
                    raise _Refused(not_address)
                else:
                    raw = _raw(a, size)
                    if raw is not None:
                        return raw
                    if not isinstance(a, int):
                        raise _Refused(not_address)
                    a = int(a)
            if a < 0:
                raise _Refused("is negative; an address is >= 0")
            if a > 0xFFFF_FFFF_FFFF_FFFF:
                raise _Refused("is out of range for a 64-bit address")
            return a.to_bytes(8, "little")
        return pack_ptr

    # Type unknown (extern "C" kernels, class/struct/enum types, names the demangler does not
    # read): by size only, as earlier versions packed.
    def pack_any(a):
        t = type(a)
        if t is int or t is bool:
            if a < lo or a > hi:
                raise _Refused(f"is out of range for {size} bytes ({lo}..{hi})")
            return a.to_bytes(size, "little", signed=a < 0)
        if isinstance(a, _REGIONS):
            if size != 8:
                raise _Refused(f"is an address (8 bytes); the parameter has {size}")
            return a.gpu_address.to_bytes(8, "little")
        raw = _raw(a, size)  # numpy scalars too: their bytes
        if raw is not None:
            return raw
        if isinstance(a, float):
            if size not in (4, 8):
                raise _Refused(f"is a float; a float needs a 4- or 8-byte parameter, this one "
                               f"has {size}")
            return _float_bytes(a, size, "float")
        if isinstance(a, int):
            return pack_any(int(a))
        raise _Refused("cannot be passed for this parameter")
    return pack_any


class Module(_Handle):
    _destroy = "tg_module_destroy"
    _what = "Module"

    def kernel(self, name, param_types=None):
        """The kernel ``name`` (as the cubin spells it: mangled for a C++ kernel).
        ``param_types``: optional C declarations of its parameters, one per parameter, e.g.
        ``["const float* x", "float* y", "unsigned n"]`` (None entries: unknown), for kernels
        whose name carries no types (``extern "C"``); see :attr:`Kernel.param_types`."""
        h = _H()
        check(lib.tg_module_get_kernel(self.handle, name.encode(), ctypes.byref(h)))
        return Kernel(h.value, name, param_types)

    def global_address(self, name):
        """``(gpu_address, size_bytes)`` of a ``__device__`` / ``__constant__`` variable."""
        va, size = ctypes.c_uint64(), ctypes.c_uint64()
        check(lib.tg_module_get_global(self.handle, name.encode(), ctypes.byref(va), None,
                                       ctypes.byref(size)))
        return va.value, size.value

    def global_view(self, name, dtype="uint8"):
        """A writable numpy view of a ``__device__`` / ``__constant__`` variable's memory
        (valid while the module is loaded). Getting the view makes every queue drop the GPU's
        constant and data caches before its next launch."""
        import numpy as np
        cpu, size = ctypes.c_void_p(), ctypes.c_uint64()
        check(lib.tg_module_get_global(self.handle, name.encode(), None, ctypes.byref(cpu),
                                       ctypes.byref(size)))
        raw = (ctypes.c_uint8 * size.value).from_address(cpu.value)
        return np.frombuffer(raw, dtype=np.uint8).view(dtype)


class Kernel(_Handle):
    _destroy = "tg_kernel_destroy"
    _what = "Kernel"

    def __init__(self, handle, name, param_types=None):
        super().__init__(handle)
        self.name = name
        a = CKernelAttributes(struct_size=ctypes.sizeof(CKernelAttributes))
        check(lib.tg_kernel_get_attributes(handle, ctypes.byref(a)))
        self.attributes = KernelAttributes(
            a.num_params, a.param_bytes, a.registers, a.static_shared_bytes,
            a.local_bytes_per_thread, a.max_threads_per_block, a.max_dynamic_shared_bytes)
        params = []
        for i in range(a.num_params):
            off, size = ctypes.c_uint32(), ctypes.c_uint32()
            check(lib.tg_kernel_get_param(handle, i, ctypes.byref(off), ctypes.byref(size)))
            params.append((off.value, size.value))
        #: (offset, size) of each parameter in the packed parameter block.
        self.params = params
        self._set_param_types(param_types)

    @property
    def param_types(self):
        """The C type of each parameter, as :meth:`pack` checks arguments against them: a list
        with a string per parameter (``"unsigned int"``, ``"const float*"``) or None where the
        type is unknown.

        A cubin records only each parameter's offset and size. The types come from the
        ``param_types`` declarations given to :meth:`Module.kernel`, else from the kernel's
        mangled name: a C++ kernel's name carries its parameter list (``_Z5saxpyfPKfPfj`` is
        ``saxpy(float, const float*, float*, unsigned int)``), read by a small demangler
        (builtin, pointer, reference, const/volatile, class and enum types, template
        parameters, substitutions). An ``extern "C"`` kernel's name carries none, and a name the
        demangler does not read gives none: every entry is None, and :meth:`pack` checks such
        parameters by size only. A class, struct, union or enum type (``"Dims"``,
        ``"ns::Box<float>"``) is named but checked by size only, as an unknown type is; CUDA's
        ``__half`` and ``__nv_bfloat16`` are checked as the 16-bit floats they hold. A type
        whose size differs from the cubin's parameter size is also checked by size only.
        """
        return self._param_types

    def _set_param_types(self, declared):
        n = len(self.params)
        types, names = [None] * n, [None] * n
        self._signature = None  # the demangled function name
        if declared is not None:
            declared = list(declared)
            if len(declared) != n:
                raise InvalidArgument(
                    Status.INVALID_ARGUMENT,
                    f"{self.name}: param_types has {len(declared)} entries; the kernel has "
                    f"{n} parameters")
            for i, d in enumerate(declared):
                if d is not None:
                    try:
                        types[i], names[i] = _parse_c_decl(str(d))
                    except ValueError as e:
                        raise InvalidArgument(Status.INVALID_ARGUMENT,
                                              f"{self.name}: param_types[{i}]: {e}") from None
        elif self.name.startswith("_Z"):
            try:
                fname, parsed = _Demangler(self.name).parse()
            except (_DemangleError, IndexError, ValueError, RecursionError):
                parsed = None  # not read: size-only checks
            if parsed is not None and len(parsed) == n:
                types = parsed
                self._signature = fname
        self._param_types = [t.spelling if t is not None else None for t in types]
        self._param_names = names
        self._packers = [(off, size, _packer(_check_of(t, size), size))
                         for t, (off, size) in zip(types, self.params)]
        self._param_bytes = self.attributes.param_bytes

    def max_active_blocks(self, block_threads, shared_bytes=0):
        """Blocks of ``block_threads`` threads one SM runs at once (occupancy)."""
        n = ctypes.c_uint32()
        check(lib.tg_kernel_max_active_blocks(self.handle, block_threads, shared_bytes,
                                              ctypes.byref(n)))
        return n.value

    def pack(self, args):
        """Pack Python values into the kernel's parameter block, checking each against the
        parameter's C type (:attr:`param_types`); a value the parameter does not take raises
        :class:`InvalidArgument` naming the kernel, the parameter (index, and name if
        declared), its C type and the value.

        - integer types (``int``, ``unsigned int``, ``long long``, ``char``...): an ``int``
          (or ``bool``) within the type's range, or a numpy integer scalar of the parameter's
          size (also range-checked: ``np.int32(-1)`` for an ``unsigned int`` is refused).
          Floats, negative values for unsigned types and values out of range are refused.
        - ``bool``: ``True``, ``False``, 0 or 1 (Python or numpy).
        - ``float``, ``double``, ``half``/``__half``, ``_Float16``, ``__nv_bfloat16``: an
          ``int`` or ``float`` or a numpy integer or floating scalar, converted as C++ converts;
          a finite value the type cannot hold as a finite number (``1e39`` for ``float``) is
          refused.
        - pointers and references: a :class:`Buffer` or :class:`BufferView` (its GPU address),
          an ``int`` address (0 to 2**64 - 1), or None (null).
        - type unknown (``extern "C"`` kernels, class/struct/enum types, names the demangler
          does not read): by size only, as earlier versions did: an ``int`` within
          -2**(8n-1) .. 2**(8n)-1 for an n-byte parameter, packed little-endian; a ``float``
          as float32 (4 bytes) or float64 (8 bytes); a numpy scalar as its bytes; a
          :class:`Buffer`/:class:`BufferView` as its address (8 bytes).
        - any parameter: ``bytes``/``bytearray``/``memoryview`` or a numpy array (not a
          scalar) of exactly the parameter's size is packed as is, unchecked (the escape hatch,
          e.g. for structs).
        """
        packers = self._packers
        if len(args) != len(packers):
            raise InvalidLaunch(
                Status.INVALID_LAUNCH,
                f"{self.name}: takes {len(packers)} parameters, got {len(args)}")
        block = bytearray(self._param_bytes)
        i = 0
        try:
            for i, (off, size, fn) in enumerate(packers):
                block[off:off + size] = fn(args[i])
        except _Refused as e:
            raise self._refusal(i, args[i], e) from None
        return bytes(block)

    def _refusal(self, i, a, why):
        size = self.params[i][1]
        ctype = self.param_types[i] or f"{size} bytes, type unknown"
        hint = ""
        if not self.name.startswith("_Z") and not any(self.param_types):
            hint = ("; an extern \"C\" kernel's name carries no types: "
                    "Module.kernel(name, param_types=[...]) declares them")
        name = self._param_names[i]
        where = f"{self.name} ({self._signature})" if self._signature else self.name
        return InvalidArgument(
            Status.INVALID_ARGUMENT,
            f"{where}: parameter {i}{f' {name!r}' if name else ''} ({ctype}): "
            f"{_describe_value(a)} {why}{hint}")


def _dims(v):
    if isinstance(v, int):
        return (v, 1, 1)
    t = tuple(v) + (1,) * (3 - len(v))
    if len(t) != 3:
        raise InvalidArgument(Status.INVALID_ARGUMENT, f"dimensions {v!r}: at most 3")
    return t


class Queue(_Handle):
    """A command queue: record, ``submit()``, wait with signals or ``synchronize()``."""

    _destroy = "tg_queue_destroy"
    _what = "Queue"

    def __init__(self, handle, device=None):
        super().__init__(handle)
        #: The :class:`Device` that created the queue (None when made from a raw handle).
        self.device = device

    def launch(self, kernel, grid, block, args=(), shared_bytes=0, cooperative=False,
               concurrent=False, cluster=None, submit=False):
        """Record a launch; ``args`` are packed by :meth:`Kernel.pack`. ``cooperative``: all
        blocks resident at once, for kernels that synchronise the whole grid. ``concurrent``:
        may run concurrently with the launch recorded just before it (``LAUNCH_CONCURRENT``).
        ``cluster``: thread-block cluster shape (sm_90; ``tg_launch_config.cluster``).
        ``submit``: submit the queue in the same call (``LAUNCH_SUBMIT``; one library call
        instead of ``launch`` + :meth:`submit`)."""
        self.launch_packed(kernel, grid, block, kernel.pack(tuple(args)), shared_bytes,
                           cooperative, concurrent, cluster, submit)

    def launch_packed(self, kernel, grid, block, params, shared_bytes=0, cooperative=False,
                      concurrent=False, cluster=None, submit=False):
        """Record a launch with an already packed parameter block (``bytes``)."""
        cfg = CLaunchConfig(struct_size=ctypes.sizeof(CLaunchConfig))
        cfg.grid[:] = _dims(grid)
        cfg.block[:] = _dims(block)
        if cluster is not None:
            cfg.cluster[:] = _dims(cluster)
        cfg.dynamic_shared_bytes = shared_bytes
        cfg.flags = (LAUNCH_COOPERATIVE if cooperative else 0) | \
            (LAUNCH_CONCURRENT if concurrent else 0) | (LAUNCH_SUBMIT if submit else 0)
        data = bytes(params)
        check(lib.tg_launch(self.handle, kernel.handle, ctypes.byref(cfg),
                            data if data else None, len(data)))

    def copy(self, dst, *args, **kwargs):
        """Record a copy: ``copy(dst, dst_offset, src, src_offset=0, size_bytes=None)``.

        ``dst`` and ``src`` are :class:`Buffer` or :class:`BufferView`; offsets are relative to
        them and the ranges are checked against them (a view's bounds, not just its
        buffer's). ``size_bytes`` defaults to the rest of ``src`` after ``src_offset``; the
        ranges must not overlap. Copy queues use the copy engine, compute queues the built-in
        SM copy kernel.

        The older argument order ``copy(dst, src, size_bytes=None, dst_offset=0,
        src_offset=0)`` is still accepted (recognised by a Buffer or view as the second
        argument).
        """
        if args and isinstance(args[0], _REGIONS):
            self._copy_legacy(dst, *args, **kwargs)
        else:
            self._copy(dst, *args, **kwargs)

    def _copy_legacy(self, dst, src, size_bytes=None, dst_offset=0, src_offset=0):
        self._copy(dst, dst_offset, src, src_offset, size_bytes)

    def _copy(self, dst, dst_offset=0, src=None, src_offset=0, size_bytes=None):
        where = "Queue.copy"
        dst = _region(dst, where, "dst")
        src = _region(src, where, "src")
        if size_bytes is None:
            size_bytes = src.size - _int_arg(src_offset, "src_offset", where)
        dst_offset = _int_arg(dst_offset, "dst_offset", where)
        src_offset = _int_arg(src_offset, "src_offset", where)
        size_bytes = _int_arg(size_bytes, "size_bytes", where)
        # Views: check against the view (the library only knows the buffer), then translate.
        if isinstance(dst, BufferView):
            _check_range(where, "dst ", dst_offset, size_bytes, dst.size, dst._describe())
        if isinstance(src, BufferView):
            _check_range(where, "src ", src_offset, size_bytes, src.size, src._describe())
        check(lib.tg_queue_copy(self.handle, dst.buffer.handle, dst.offset + dst_offset,
                                src.buffer.handle, src.offset + src_offset, size_bytes))

    def signal(self, signal, value):
        check(lib.tg_queue_signal(self.handle, signal.handle, value))

    def wait(self, signal, value):
        check(lib.tg_queue_wait(self.handle, signal.handle, value))

    def barrier(self):
        check(lib.tg_queue_barrier(self.handle))

    def submit(self):
        check(lib.tg_queue_submit(self.handle))

    def synchronize(self, timeout_ns=DEFAULT_TIMEOUT_NS):
        """Submit what was recorded, then wait until all of the queue's work has completed
        (``tg_queue_synchronize``): ``launch`` + ``synchronize`` runs the launch."""
        check(lib.tg_queue_synchronize(self.handle, timeout_ns))

    def timed(self, timeout_ns=DEFAULT_TIMEOUT_NS):
        """A :class:`GpuTimer` context manager that measures the GPU time of the work recorded
        inside it::

            with q.timed() as t:
                q.launch(k, ...)
            print(t.elapsed_ns)

        Entering records a signal release (start); leaving records another (end), submits
        and waits for it (up to ``timeout_ns``). Includes the wait for work recorded earlier
        on the queue to finish before the start was released.
        """
        return GpuTimer(self, timeout_ns)

    def replay(self, cmdbuf, submit=False):
        """Record a replay of the finished :class:`CmdBuf` (``tg_queue_replay``); :meth:`submit`
        makes it visible with one doorbell. ``submit=True`` submits in the same call
        (``tg_queue_replay_submit``)."""
        if submit:
            check(lib.tg_queue_replay_submit(self.handle, cmdbuf.handle))
        else:
            check(lib.tg_queue_replay(self.handle, cmdbuf.handle))

    def abort(self):
        """Abandon the queue's work and destroy the queue at once (``tg_queue_abort``): the
        recovery from a kernel that does not end. The queue is closed afterwards."""
        h, self._h = self._h, None
        if h is not None:
            check(lib.tg_queue_abort(h))


class CmdBuf(_Handle):
    """A command buffer (``tg_cmdbuf``): launches, copies, signals, waits and barriers recorded
    once, then replayed on compute queues (:meth:`Queue.replay`) many times, with kernel
    parameters and signal values changed between replays. Recording methods return the node
    index that :meth:`set_params` / :meth:`set_value` take. Updates wait until the replays
    recorded so far have completed (submit them first)."""

    _destroy = "tg_cmdbuf_destroy"
    _what = "CmdBuf"

    def __init__(self, handle, device=None):
        super().__init__(handle)
        self.device = device
        self._kernels = {}

    @staticmethod
    def _node(call, *args):
        n = ctypes.c_uint32()
        check(call(*args, ctypes.byref(n)))
        return n.value

    def launch(self, kernel, grid, block, args=(), shared_bytes=0, concurrent=False,
               cluster=None, cooperative=False):
        """Record a launch (``args`` packed by :meth:`Kernel.pack`); returns the node index.
        ``concurrent``: may run concurrently with the launch recorded just before it.
        ``cluster``: thread-block cluster shape (sm_90; as :meth:`Queue.launch`).
        ``cooperative``: all blocks resident at once (as :meth:`Queue.launch`)."""
        return self.launch_packed(kernel, grid, block, kernel.pack(tuple(args)), shared_bytes,
                                  concurrent, cluster, cooperative)

    def launch_packed(self, kernel, grid, block, params, shared_bytes=0, concurrent=False,
                      cluster=None, cooperative=False):
        cfg = CLaunchConfig(struct_size=ctypes.sizeof(CLaunchConfig))
        cfg.grid[:] = _dims(grid)
        cfg.block[:] = _dims(block)
        if cluster is not None:
            cfg.cluster[:] = _dims(cluster)
        cfg.dynamic_shared_bytes = shared_bytes
        cfg.flags = (LAUNCH_CONCURRENT if concurrent else 0) | \
            (LAUNCH_COOPERATIVE if cooperative else 0)
        data = bytes(params)
        node = self._node(lib.tg_cmdbuf_launch, self.handle, kernel.handle, ctypes.byref(cfg),
                          data if data else None, len(data))
        self._kernels[node] = kernel
        return node

    def copy(self, dst, dst_offset, src, src_offset=0, size_bytes=None):
        """Record a copy (on the SMs); offsets relative to :class:`Buffer` or
        :class:`BufferView` arguments; returns the node index."""
        where = "CmdBuf.copy"
        dst = _region(dst, where, "dst")
        src = _region(src, where, "src")
        if size_bytes is None:
            size_bytes = src.size - src_offset
        if isinstance(dst, BufferView):
            _check_range(where, "dst ", dst_offset, size_bytes, dst.size, dst._describe())
        if isinstance(src, BufferView):
            _check_range(where, "src ", src_offset, size_bytes, src.size, src._describe())
        return self._node(lib.tg_cmdbuf_copy, self.handle, dst.buffer.handle,
                          dst.offset + dst_offset, src.buffer.handle, src.offset + src_offset,
                          size_bytes)

    def signal(self, signal, value):
        return self._node(lib.tg_cmdbuf_signal, self.handle, signal.handle, value)

    def wait(self, signal, value):
        return self._node(lib.tg_cmdbuf_wait, self.handle, signal.handle, value)

    def barrier(self):
        return self._node(lib.tg_cmdbuf_barrier, self.handle)

    def finish(self):
        check(lib.tg_cmdbuf_finish(self.handle))

    def set_args(self, node, args, kernel=None):
        """New arguments for launch ``node`` (packed by the node's kernel)."""
        kernel = kernel or self._kernels[node]
        self.set_params(node, kernel.pack(tuple(args)), kernel)

    def set_params(self, node, params, kernel=None):
        """New packed parameter block for launch ``node``."""
        kernel = kernel or self._kernels[node]
        data = bytes(params)
        check(lib.tg_cmdbuf_set_params(self.handle, node, kernel.handle,
                                       data if data else None, len(data)))

    def set_launch(self, node, grid, block, shared_bytes=0, kernel=None, concurrent=False,
                   cluster=None, cooperative=False):
        """New grid, block and dynamic shared memory (and cluster shape) for launch ``node``
        (``tg_cmdbuf_set_launch``); ``concurrent`` and ``cooperative`` must be what the node
        was recorded with, and a cluster launch stays one (a plain launch stays plain)."""
        kernel = kernel or self._kernels[node]
        cfg = CLaunchConfig(struct_size=ctypes.sizeof(CLaunchConfig))
        cfg.grid[:] = _dims(grid)
        cfg.block[:] = _dims(block)
        if cluster is not None:
            cfg.cluster[:] = _dims(cluster)
        cfg.dynamic_shared_bytes = shared_bytes
        cfg.flags = (LAUNCH_CONCURRENT if concurrent else 0) | \
            (LAUNCH_COOPERATIVE if cooperative else 0)
        check(lib.tg_cmdbuf_set_launch(self.handle, node, kernel.handle, ctypes.byref(cfg)))

    def set_value(self, node, value):
        """New value for signal or wait ``node``."""
        check(lib.tg_cmdbuf_set_value(self.handle, node, value))


class Texture(_Handle):
    """A texture object over buffer memory (``tg_texture``; :meth:`Device.create_texture`)."""

    _destroy = "tg_texture_destroy"
    _what = "Texture"

    def __init__(self, handle, buf):
        super().__init__(handle)
        self.buffer = buf

    @property
    def value(self):
        """The 64-bit value to pass as the kernel's ``cudaTextureObject_t`` parameter."""
        v = ctypes.c_uint64()
        check(lib.tg_texture_handle(self.handle, ctypes.byref(v)))
        return v.value


class Signal(_Handle):
    """A 64-bit timeline signal."""

    _destroy = "tg_signal_destroy"
    _what = "Signal"

    @property
    def value(self):
        v = ctypes.c_uint64()
        check(lib.tg_signal_value(self.handle, ctypes.byref(v)))
        return v.value

    @property
    def timestamp(self):
        """GPU time (ns) written with the signal's last GPU release (:meth:`Queue.signal`);
        0 before the first. Compare it only with timestamps of the same device; read it after
        waiting for the release you care about (a later release overwrites it)."""
        v = ctypes.c_uint64()
        check(lib.tg_signal_timestamp(self.handle, ctypes.byref(v)))
        return v.value

    def set(self, value):
        check(lib.tg_signal_set(self.handle, value))

    def wait(self, value, timeout_ns=DEFAULT_TIMEOUT_NS):
        """Wait until the value is ≥ ``value``. A release of such a value that is recorded
        on a queue (:meth:`Queue.signal`, a command buffer replay) but not submitted is
        submitted first (``tg_signal_wait``); :class:`Timeout` says where the release stands."""
        check(lib.tg_signal_wait(self.handle, value, timeout_ns))


class GpuTimer:
    """GPU time of the work recorded on a queue between ``__enter__`` and ``__exit__``
    (:meth:`Queue.timed`). After the ``with`` block: ``start_ns``, ``end_ns`` (GPU
    timestamps) and ``elapsed_ns``. The two signals it uses are created from the queue's
    device on entry and destroyed on exit."""

    def __init__(self, queue, timeout_ns=DEFAULT_TIMEOUT_NS):
        if queue.device is None:
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  "Queue.timed: the queue was not made by Device.create_queue")
        self.queue = queue
        self.timeout_ns = timeout_ns
        self.start_ns = self.end_ns = self.elapsed_ns = None
        self._start = self._end = None

    def __enter__(self):
        dev = self.queue.device
        self._start, self._end = dev.create_signal(0), dev.create_signal(0)
        self.queue.signal(self._start, 1)
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.queue.signal(self._end, 1)
                self.queue.submit()
                self._end.wait(1, self.timeout_ns)
                self.start_ns, self.end_ns = self._start.timestamp, self._end.timestamp
                self.elapsed_ns = self.end_ns - self.start_ns
        finally:
            self._start.close()
            self._end.close()
        return False

    @property
    def elapsed_s(self):
        return None if self.elapsed_ns is None else self.elapsed_ns * 1e-9


# --------------------------------------------------------------------------------------------
# Peer access between two devices (tg_device_can_access_peer, tg_device_enable_peer_access).
# A delimited block: the bindings it adds to SIGNATURES and lib, and the Device methods.

_PEER_SIGNATURES = {
    "tg_device_can_access_peer": (_st, [_H, _H, _P(ctypes.c_bool), ctypes.c_char_p, _size]),
    "tg_device_enable_peer_access": (_st, [_H, _H]),
}
SIGNATURES.update(_PEER_SIGNATURES)
for _name, (_res, _args) in _PEER_SIGNATURES.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        missing_functions.append(_name)
        setattr(lib, _name, _missing(_name))
        continue
    _f.restype = _res
    _f.argtypes = _args


def _peer_access_info(self, other):
    """``(can_access, reason)``: whether this device can read and write ``other``'s memory once
    peer access is enabled, and why not (naming both GPUs and what the driver reported) or,
    when it can, the link (``tg_device_can_access_peer``)."""
    can = ctypes.c_bool()
    reason = ctypes.create_string_buffer(1024)
    check(lib.tg_device_can_access_peer(self.handle, other.handle, ctypes.byref(can),
                                        ctypes.cast(reason, ctypes.c_char_p),
                                        ctypes.sizeof(reason)))
    return bool(can.value), reason.value.decode(errors="replace")


def _can_access_peer(self, other):
    """Whether this device can read and write ``other``'s memory once peer access is enabled
    (two desktop GPUs joined by NVLink or a PCIe peer path; never on Jetson Orin or the
    emulated Orin). :meth:`peer_access_info` says why not."""
    return self.peer_access_info(other)[0]


def _enable_peer_access(self, other):
    """Let this device's queues and kernels use ``other``'s memory: its buffers, those
    allocated later included, are mapped into this device's GPU, and :meth:`Queue.copy` on this
    device's queues accepts them (``tg_device_enable_peer_access``). One-way; raises
    :class:`NotSupported` with the reason where there is no peer path."""
    check(lib.tg_device_enable_peer_access(self.handle, other.handle))


Device.peer_access_info = _peer_access_info
Device.can_access_peer = _can_access_peer
Device.enable_peer_access = _enable_peer_access
# End of the peer access block.
