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

The shared library is found through ``$TEGRAGPU_LIBRARY`` (a path), else the build
directories of this source tree (``build/meson``, ``build``, ``builddir``, ``target/release``),
else the system's library path (``libtegragpu.so.0``).

Errors raise :class:`TegraGpuError` subclasses (one per ``tg_status``) whose message is the
library's last-error text, e.g. ``"tg_buf_alloc: size_bytes is 0"``.

Thread safety follows the C API: every object may be used from any thread; calls on one queue
are serialized by the library.
"""

import ctypes
import ctypes.util
import enum
import os
import struct
import weakref
from dataclasses import dataclass

__all__ = [
    "Device", "Buffer", "Module", "Kernel", "Queue", "Signal", "DeviceInfo", "FaultReport",
    "KernelAttributes", "Status", "QueueKind", "Backend", "TegraGpuError", "library_path",
    "version", "BUF_CPU_CACHED", "BUF_WRITE_COMBINED", "BUF_ZEROED", "BUF_DEVICE_LOCAL", "TIMEOUT_INFINITE",
    "LAUNCH_COOPERATIVE", "LIMIT_STACK_SIZE",
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
LIMIT_STACK_SIZE = 0
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


class QueueKind(enum.IntEnum):
    COMPUTE = 0
    COPY = 1


class Backend(enum.IntEnum):
    NVGPU = 0
    RM = 1


# --------------------------------------------------------------------------------------------
# Errors

class TegraGpuError(Exception):
    """A libtegragpu call failed. ``status`` is the :class:`Status`, ``message`` the library's
    description naming the call and the values (``tg_last_error_message()``)."""

    status = None

    def __init__(self, status, message):
        super().__init__(message)
        self.status = Status(status) if status in Status._value2member_map_ else status
        self.message = message


class InvalidArgumentError(TegraGpuError, ValueError):
    pass


class NullPointerError(TegraGpuError, ValueError):
    pass


class InvalidHandleError(TegraGpuError):
    pass


class OutOfMemoryError(TegraGpuError, MemoryError):
    pass


class NotFoundError(TegraGpuError, LookupError):
    pass


class NotSupportedError(TegraGpuError):
    pass


class GpuTimeoutError(TegraGpuError, TimeoutError):
    pass


class DeviceFaultError(TegraGpuError):
    pass


class OsError(TegraGpuError, OSError):
    pass


class InvalidCubinError(TegraGpuError):
    pass


class InvalidLaunchError(TegraGpuError, ValueError):
    pass


class CompileError(TegraGpuError):
    pass


class LibraryMissingError(TegraGpuError):
    pass


class UnsupportedDriverError(TegraGpuError):
    pass


class InternalError(TegraGpuError):
    pass


class DeviceLostError(TegraGpuError):
    pass


_ERRORS = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.NULL_POINTER: NullPointerError,
    Status.INVALID_HANDLE: InvalidHandleError,
    Status.OUT_OF_MEMORY: OutOfMemoryError,
    Status.NOT_FOUND: NotFoundError,
    Status.NOT_SUPPORTED: NotSupportedError,
    Status.TIMEOUT: GpuTimeoutError,
    Status.DEVICE_FAULT: DeviceFaultError,
    Status.OS: OsError,
    Status.INVALID_CUBIN: InvalidCubinError,
    Status.INVALID_LAUNCH: InvalidLaunchError,
    Status.COMPILE: CompileError,
    Status.LIBRARY_MISSING: LibraryMissingError,
    Status.UNSUPPORTED_DRIVER: UnsupportedDriverError,
    Status.INTERNAL: InternalError,
    Status.DEVICE_LOST: DeviceLostError,
}
__all__ += [c.__name__ for c in _ERRORS.values()]


# --------------------------------------------------------------------------------------------
# C types (must match include/tegragpu.h)

class _DeviceInfo(ctypes.Structure):
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


class _FaultReport(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("code", ctypes.c_uint32),
        ("has_address", ctypes.c_bool),
        ("address", ctypes.c_uint64),
        ("message", ctypes.c_char * 256),
    ]


class _KernelAttributes(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in (
        "struct_size", "num_params", "param_bytes", "registers", "static_shared_bytes",
        "local_bytes_per_thread", "max_threads_per_block", "max_dynamic_shared_bytes")]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("grid", ctypes.c_uint32 * 3),
        ("block", ctypes.c_uint32 * 3),
        ("dynamic_shared_bytes", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("cluster", ctypes.c_uint32 * 3),
    ]


_H = ctypes.c_void_p
_P = ctypes.POINTER


def _candidates():
    env = os.environ.get("TEGRAGPU_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    out = [os.path.join(here, "libtegragpu.so")]
    for d in ("build/meson", "build", "builddir", "target/release"):
        out.append(os.path.join(root, d, "libtegragpu.so"))
    found = ctypes.util.find_library("tegragpu")
    out.append(found or "libtegragpu.so.0")
    return out


def _load():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            errors.append(f"{path}: not found")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("libtegragpu not found; build it (meson compile -C build/meson, or cargo "
                      "build --release) or set TEGRAGPU_LIBRARY. Tried:\n  " + "\n  ".join(errors))


_lib, _lib_path = _load()

_SIGNATURES = {
    "tg_version": (ctypes.c_uint32, []),
    "tg_status_str": (ctypes.c_char_p, [ctypes.c_int]),
    "tg_last_error_message": (ctypes.c_char_p, []),
    "tg_device_open": (ctypes.c_int, [ctypes.c_char_p, _P(_H)]),
    "tg_device_close": (ctypes.c_int, [_H]),
    "tg_device_get_info": (ctypes.c_int, [_H, _P(_DeviceInfo)]),
    "tg_device_synchronize": (ctypes.c_int, [_H, ctypes.c_uint64]),
    "tg_device_get_fault": (ctypes.c_int, [_H, _P(_FaultReport)]),
    "tg_buf_alloc": (ctypes.c_int, [_H, ctypes.c_uint64, ctypes.c_uint32, _P(_H)]),
    "tg_buf_free": (ctypes.c_int, [_H]),
    "tg_buf_cpu_ptr": (ctypes.c_int, [_H, _P(ctypes.c_void_p)]),
    "tg_buf_gpu_address": (ctypes.c_int, [_H, _P(ctypes.c_uint64)]),
    "tg_buf_size": (ctypes.c_int, [_H, _P(ctypes.c_uint64)]),
    "tg_buf_export_dmabuf": (ctypes.c_int, [_H, _P(ctypes.c_int)]),
    "tg_module_load": (ctypes.c_int, [_H, ctypes.c_void_p, ctypes.c_size_t, _P(_H)]),
    "tg_module_load_file": (ctypes.c_int, [_H, ctypes.c_char_p, _P(_H)]),
    "tg_module_compile_cuda": (ctypes.c_int, [_H, ctypes.c_char_p, _P(ctypes.c_char_p),
                                              ctypes.c_size_t, _P(_H)]),
    "tg_module_destroy": (ctypes.c_int, [_H]),
    "tg_module_get_kernel": (ctypes.c_int, [_H, ctypes.c_char_p, _P(_H)]),
    "tg_kernel_destroy": (ctypes.c_int, [_H]),
    "tg_kernel_get_attributes": (ctypes.c_int, [_H, _P(_KernelAttributes)]),
    "tg_kernel_get_param": (ctypes.c_int, [_H, ctypes.c_uint32, _P(ctypes.c_uint32),
                                           _P(ctypes.c_uint32)]),
    "tg_kernel_max_active_blocks": (ctypes.c_int, [_H, ctypes.c_uint32, ctypes.c_uint32,
                                                   _P(ctypes.c_uint32)]),
    "tg_module_get_global": (ctypes.c_int, [_H, ctypes.c_char_p, _P(ctypes.c_uint64),
                                            _P(ctypes.c_void_p), _P(ctypes.c_uint64)]),
    "tg_device_set_limit": (ctypes.c_int, [_H, ctypes.c_uint32, ctypes.c_uint64]),
    "tg_device_get_limit": (ctypes.c_int, [_H, ctypes.c_uint32, _P(ctypes.c_uint64)]),
    "tg_queue_create": (ctypes.c_int, [_H, ctypes.c_int, _P(_H)]),
    "tg_queue_create_with_depth": (ctypes.c_int, [_H, ctypes.c_int, ctypes.c_uint32, _P(_H)]),
    "tg_queue_destroy": (ctypes.c_int, [_H]),
    "tg_queue_abort": (ctypes.c_int, [_H]),
    "tg_launch": (ctypes.c_int, [_H, _H, _P(_LaunchConfig), ctypes.c_void_p, ctypes.c_size_t]),
    "tg_launch_args": (ctypes.c_int, [_H, _H, _P(_LaunchConfig), _P(ctypes.c_void_p),
                                      ctypes.c_size_t]),
    "tg_queue_copy": (ctypes.c_int, [_H, _H, ctypes.c_uint64, _H, ctypes.c_uint64,
                                     ctypes.c_uint64]),
    "tg_queue_signal": (ctypes.c_int, [_H, _H, ctypes.c_uint64]),
    "tg_queue_wait": (ctypes.c_int, [_H, _H, ctypes.c_uint64]),
    "tg_queue_barrier": (ctypes.c_int, [_H]),
    "tg_queue_submit": (ctypes.c_int, [_H]),
    "tg_queue_synchronize": (ctypes.c_int, [_H, ctypes.c_uint64]),
    "tg_signal_create": (ctypes.c_int, [_H, ctypes.c_uint64, _P(_H)]),
    "tg_signal_destroy": (ctypes.c_int, [_H]),
    "tg_signal_value": (ctypes.c_int, [_H, _P(ctypes.c_uint64)]),
    "tg_signal_set": (ctypes.c_int, [_H, ctypes.c_uint64]),
    "tg_signal_wait": (ctypes.c_int, [_H, ctypes.c_uint64, ctypes.c_uint64]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _f = getattr(_lib, _name)
    _f.restype = _res
    _f.argtypes = _args

_lib_version = _lib.tg_version()
if _lib_version >> 16 != ABI_MAJOR:
    raise ImportError(
        f"{_lib_path} is libtegragpu {_lib_version >> 16}.{(_lib_version >> 8) & 0xff}."
        f"{_lib_version & 0xff}; this package needs ABI major {ABI_MAJOR}")


def version():
    """The loaded library's version as (major, minor, patch)."""
    return (_lib_version >> 16, (_lib_version >> 8) & 0xFF, _lib_version & 0xFF)


def library_path():
    """Path of the loaded shared library."""
    return _lib_path


def status_str(status):
    """The library's description of a status code."""
    return _lib.tg_status_str(int(status)).decode()


def _check(status):
    if status != 0:
        msg = (_lib.tg_last_error_message() or b"").decode(errors="replace")
        cls = _ERRORS.get(status, TegraGpuError)
        raise cls(status, msg)


def _closed_error(what):
    return InvalidHandleError(Status.INVALID_HANDLE, f"{what} is closed")


class _Handle:
    """Owns one C handle; ``close()`` destroys it (idempotent); also a context manager."""

    _destroy = None
    _what = "handle"

    def __init__(self, handle):
        self._h = handle

    @property
    def handle(self):
        """The raw C handle (an int); raises InvalidHandleError once closed."""
        if self._h is None:
            raise _closed_error(self._what)
        return self._h

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            _check(getattr(_lib, self._destroy)(h))

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


class Device(_Handle):
    """An open GPU. ``spec``: None = the GPU of this machine, "emu" = the emulated Orin,
    "nvgpu", "rm"; ``$TEGRAGPU_DEVICE`` overrides it. Objects created from a device keep it
    open after ``close()``."""

    _destroy = "tg_device_close"
    _what = "Device"

    def __init__(self, spec=None):
        h = _H()
        _check(_lib.tg_device_open(None if spec is None else spec.encode(), ctypes.byref(h)))
        super().__init__(h.value)

    @property
    def info(self):
        i = _DeviceInfo(struct_size=ctypes.sizeof(_DeviceInfo))
        _check(_lib.tg_device_get_info(self.handle, ctypes.byref(i)))
        return DeviceInfo(i.name.decode(errors="replace"), i.arch, i.sm_major, i.sm_minor,
                          i.sm_count, i.memory_bytes, i.va_bits, Backend(i.backend),
                          bool(i.emulated))

    def alloc(self, size_bytes, flags=0):
        """Allocate ``size_bytes`` of GPU memory the CPU can access (see BUF_* flags)."""
        h = _H()
        _check(_lib.tg_buf_alloc(self.handle, size_bytes, flags, ctypes.byref(h)))
        return Buffer(h.value)

    def load_module(self, cubin):
        """Load a cubin from bytes."""
        data = bytes(cubin)
        h = _H()
        _check(_lib.tg_module_load(self.handle, data, len(data), ctypes.byref(h)))
        return Module(h.value)

    def load_module_file(self, path):
        h = _H()
        _check(_lib.tg_module_load_file(self.handle, os.fsencode(path), ctypes.byref(h)))
        return Module(h.value)

    def compile_cuda(self, source, options=()):
        """Compile CUDA C with libnvrtc for this device and load it."""
        opts = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
        h = _H()
        _check(_lib.tg_module_compile_cuda(self.handle, source.encode(),
                                           opts if options else None, len(options),
                                           ctypes.byref(h)))
        return Module(h.value)

    def create_queue(self, kind=QueueKind.COMPUTE, depth=None):
        """A compute or copy queue; `depth` (power of two, 16..65536; default 1024) is how many
        submissions/launches may be in flight before recording waits for the GPU."""
        h = _H()
        if depth is None:
            _check(_lib.tg_queue_create(self.handle, int(kind), ctypes.byref(h)))
        else:
            _check(_lib.tg_queue_create_with_depth(self.handle, int(kind), int(depth), ctypes.byref(h)))
        return Queue(h.value)

    def create_signal(self, initial=0):
        h = _H()
        _check(_lib.tg_signal_create(self.handle, initial, ctypes.byref(h)))
        return Signal(h.value)

    def synchronize(self, timeout_ns=DEFAULT_TIMEOUT_NS):
        _check(_lib.tg_device_synchronize(self.handle, timeout_ns))

    @property
    def stack_limit(self):
        """Stack bytes per GPU thread for kernels taken from now on (default 1024)."""
        v = ctypes.c_uint64()
        _check(_lib.tg_device_get_limit(self.handle, LIMIT_STACK_SIZE, ctypes.byref(v)))
        return v.value

    @stack_limit.setter
    def stack_limit(self, value):
        _check(_lib.tg_device_set_limit(self.handle, LIMIT_STACK_SIZE, int(value)))

    def fault(self):
        """The sticky fault report, or None if the device has not faulted."""
        r = _FaultReport(struct_size=ctypes.sizeof(_FaultReport))
        st = _lib.tg_device_get_fault(self.handle, ctypes.byref(r))
        if st == Status.NOT_FOUND:
            return None
        _check(st)
        return FaultReport(r.code, r.address if r.has_address else None,
                           r.message.decode(errors="replace"))


class Buffer(_Handle):
    """GPU memory the CPU can access. ``numpy()`` gives zero-copy views; the memory is freed
    once the buffer is closed *and* no view is alive any more."""

    _destroy = "tg_buf_free"
    _what = "Buffer"

    def __init__(self, handle):
        super().__init__(handle)
        self._views = 0
        self._close_requested = False
        p = ctypes.c_void_p()
        _check(_lib.tg_buf_cpu_ptr(handle, ctypes.byref(p)))
        self._ptr = p.value
        n = ctypes.c_uint64()
        _check(_lib.tg_buf_size(handle, ctypes.byref(n)))
        self._size = n.value
        a = ctypes.c_uint64()
        _check(_lib.tg_buf_gpu_address(handle, ctypes.byref(a)))
        self._va = a.value

    @property
    def size(self):
        self.handle
        return self._size

    @property
    def gpu_address(self):
        self.handle
        return self._va

    @property
    def cpu_ptr(self):
        self.handle
        return self._ptr

    def numpy(self, dtype="uint8", shape=None, offset=0):
        """A numpy array viewing the buffer's memory (no copy). ``shape`` defaults to as many
        elements of ``dtype`` as fit after ``offset`` bytes."""
        import numpy as np
        if self._close_requested:
            raise _closed_error("Buffer")
        dt = np.dtype(dtype)
        if offset < 0 or offset > self.size:
            raise InvalidArgumentError(Status.INVALID_ARGUMENT,
                                       f"Buffer.numpy: offset {offset} outside {self.size} bytes")
        count = (self.size - offset) // dt.itemsize
        if shape is None:
            shape = (count,)
        elif isinstance(shape, int):
            shape = (shape,)
        need = dt.itemsize
        for s in shape:
            need *= s
        if need > self.size - offset:
            raise InvalidArgumentError(
                Status.INVALID_ARGUMENT,
                f"Buffer.numpy: shape {tuple(shape)} of {dt} needs {need} bytes, the buffer has "
                f"{self.size - offset} after offset {offset}")
        raw = (ctypes.c_ubyte * need).from_address(self._ptr + offset)
        raw._tg_buffer = self  # the view keeps the buffer object alive
        self._views += 1
        weakref.finalize(raw, Buffer._view_gone, self)
        return np.frombuffer(raw, dtype=dt, count=need // dt.itemsize).reshape(shape)

    def _view_gone(self):
        self._views -= 1
        if self._close_requested and self._views == 0:
            _Handle.close(self)

    def close(self):
        """Free the buffer (deferred until the last numpy view is gone)."""
        self._close_requested = True
        if self._views == 0:
            _Handle.close(self)

    def export_dmabuf(self):
        """A new dma-buf file descriptor for the buffer (the caller closes it)."""
        fd = ctypes.c_int()
        _check(_lib.tg_buf_export_dmabuf(self.handle, ctypes.byref(fd)))
        return fd.value


class Module(_Handle):
    _destroy = "tg_module_destroy"
    _what = "Module"

    def kernel(self, name):
        h = _H()
        _check(_lib.tg_module_get_kernel(self.handle, name.encode(), ctypes.byref(h)))
        return Kernel(h.value, name)

    def global_address(self, name):
        """``(gpu_address, size_bytes)`` of a ``__device__`` / ``__constant__`` variable."""
        va, size = ctypes.c_uint64(), ctypes.c_uint64()
        _check(_lib.tg_module_get_global(self.handle, name.encode(), ctypes.byref(va), None,
                                         ctypes.byref(size)))
        return va.value, size.value

    def global_view(self, name, dtype="uint8"):
        """A writable numpy view of a ``__device__`` / ``__constant__`` variable's memory
        (valid while the module is loaded). Getting the view makes every queue drop the GPU's
        constant and data caches before its next launch."""
        import numpy as np
        cpu, size = ctypes.c_void_p(), ctypes.c_uint64()
        _check(_lib.tg_module_get_global(self.handle, name.encode(), None, ctypes.byref(cpu),
                                         ctypes.byref(size)))
        raw = (ctypes.c_uint8 * size.value).from_address(cpu.value)
        return np.frombuffer(raw, dtype=np.uint8).view(dtype)


class Kernel(_Handle):
    _destroy = "tg_kernel_destroy"
    _what = "Kernel"

    def __init__(self, handle, name):
        super().__init__(handle)
        self.name = name
        a = _KernelAttributes(struct_size=ctypes.sizeof(_KernelAttributes))
        _check(_lib.tg_kernel_get_attributes(handle, ctypes.byref(a)))
        self.attributes = KernelAttributes(
            a.num_params, a.param_bytes, a.registers, a.static_shared_bytes,
            a.local_bytes_per_thread, a.max_threads_per_block, a.max_dynamic_shared_bytes)
        params = []
        for i in range(a.num_params):
            off, size = ctypes.c_uint32(), ctypes.c_uint32()
            _check(_lib.tg_kernel_get_param(handle, i, ctypes.byref(off), ctypes.byref(size)))
            params.append((off.value, size.value))
        #: (offset, size) of each parameter in the packed parameter block.
        self.params = params

    def max_active_blocks(self, block_threads, shared_bytes=0):
        """Blocks of ``block_threads`` threads one SM runs at once (occupancy)."""
        n = ctypes.c_uint32()
        _check(_lib.tg_kernel_max_active_blocks(self.handle, block_threads, shared_bytes,
                                                ctypes.byref(n)))
        return n.value

    def pack(self, args):
        """Pack Python values into the kernel's parameter block.

        Each argument may be a :class:`Buffer` (its GPU address), a numpy scalar or ``bytes``
        (their bytes, which must have the parameter's size), an ``int`` (little-endian, the
        parameter's size) or a ``float`` (float32 for 4-byte, float64 for 8-byte parameters).
        """
        if len(args) != len(self.params):
            raise InvalidLaunchError(
                Status.INVALID_LAUNCH,
                f"{self.name}: takes {len(self.params)} parameters, got {len(args)}")
        block = bytearray(self.attributes.param_bytes)
        for i, ((off, size), a) in enumerate(zip(self.params, args)):
            if isinstance(a, Buffer):
                raw = struct.pack("<Q", a.gpu_address)
            elif isinstance(a, (bytes, bytearray, memoryview)):
                raw = bytes(a)
            elif hasattr(a, "tobytes") and hasattr(a, "dtype"):
                raw = a.tobytes()
            elif isinstance(a, bool) or isinstance(a, int):
                raw = int(a).to_bytes(size, "little", signed=int(a) < 0)
            elif isinstance(a, float):
                if size not in (4, 8):
                    raise InvalidArgumentError(
                        Status.INVALID_ARGUMENT,
                        f"{self.name}: parameter {i} is {size} bytes; a float needs 4 or 8")
                raw = struct.pack("<f" if size == 4 else "<d", a)
            else:
                raise InvalidArgumentError(
                    Status.INVALID_ARGUMENT,
                    f"{self.name}: parameter {i}: cannot pass {type(a).__name__}")
            if len(raw) != size:
                raise InvalidArgumentError(
                    Status.INVALID_ARGUMENT,
                    f"{self.name}: parameter {i} is {size} bytes, got {len(raw)} "
                    f"({type(a).__name__})")
            block[off:off + size] = raw
        return bytes(block)


def _dims(v):
    if isinstance(v, int):
        return (v, 1, 1)
    t = tuple(v) + (1,) * (3 - len(v))
    if len(t) != 3:
        raise InvalidArgumentError(Status.INVALID_ARGUMENT, f"dimensions {v!r}: at most 3")
    return t


class Queue(_Handle):
    """A command queue: record, ``submit()``, wait with signals or ``synchronize()``."""

    _destroy = "tg_queue_destroy"
    _what = "Queue"

    def launch(self, kernel, grid, block, args=(), shared_bytes=0, cooperative=False):
        """Record a launch; ``args`` are packed by :meth:`Kernel.pack`. ``cooperative``: all
        blocks resident at once, for kernels that synchronise the whole grid."""
        self.launch_packed(kernel, grid, block, kernel.pack(tuple(args)), shared_bytes,
                           cooperative)

    def launch_packed(self, kernel, grid, block, params, shared_bytes=0, cooperative=False):
        """Record a launch with an already packed parameter block (``bytes``)."""
        cfg = _LaunchConfig(struct_size=ctypes.sizeof(_LaunchConfig))
        cfg.grid[:] = _dims(grid)
        cfg.block[:] = _dims(block)
        cfg.dynamic_shared_bytes = shared_bytes
        cfg.flags = LAUNCH_COOPERATIVE if cooperative else 0
        data = bytes(params)
        _check(_lib.tg_launch(self.handle, kernel.handle, ctypes.byref(cfg),
                              data if data else None, len(data)))

    def copy(self, dst, src, size_bytes=None, dst_offset=0, src_offset=0):
        """Record a copy: copy engine on copy queues, built-in SM copy kernel on compute queues.
        ``size_bytes`` defaults to all of src (from ``src_offset``); ranges must not overlap."""
        if size_bytes is None:
            size_bytes = src.size - src_offset
        _check(_lib.tg_queue_copy(self.handle, dst.handle, dst_offset, src.handle, src_offset,
                                  size_bytes))

    def signal(self, signal, value):
        _check(_lib.tg_queue_signal(self.handle, signal.handle, value))

    def wait(self, signal, value):
        _check(_lib.tg_queue_wait(self.handle, signal.handle, value))

    def barrier(self):
        _check(_lib.tg_queue_barrier(self.handle))

    def submit(self):
        _check(_lib.tg_queue_submit(self.handle))

    def synchronize(self, timeout_ns=DEFAULT_TIMEOUT_NS):
        _check(_lib.tg_queue_synchronize(self.handle, timeout_ns))

    def abort(self):
        """Abandon the queue's work and destroy the queue at once (``tg_queue_abort``): the
        recovery from a kernel that does not end. The queue is closed afterwards."""
        h, self._h = self._h, None
        if h is not None:
            _check(_lib.tg_queue_abort(h))


class Signal(_Handle):
    """A 64-bit timeline signal."""

    _destroy = "tg_signal_destroy"
    _what = "Signal"

    @property
    def value(self):
        v = ctypes.c_uint64()
        _check(_lib.tg_signal_value(self.handle, ctypes.byref(v)))
        return v.value

    def set(self, value):
        _check(_lib.tg_signal_set(self.handle, value))

    def wait(self, value, timeout_ns=DEFAULT_TIMEOUT_NS):
        _check(_lib.tg_signal_wait(self.handle, value, timeout_ns))
