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

# The modules of the package hold the code by subject (_library: finding and loading the library,
# _cdefs: its C types and prototypes, _errors, _device, _memory, _kernel with _param_types and
# _packing, _queue, _cmdbuf, _signal, _texture, _logging); the names are used from here.
import types as _types

from . import _cdefs, _constants, _errors, _library, _logging, _param_types
from ._cdefs import (STRUCTS, SIGNATURES, Handle, CDeviceInfo, CFaultReport, CKernelAttributes,
                     CLaunchConfig, CTextureDesc)
from ._cmdbuf import CmdBuf
from ._constants import (BUF_CPU_CACHED, BUF_DEVICE_LOCAL, BUF_WRITE_COMBINED, BUF_ZEROED,
                         DEFAULT_TIMEOUT_NS, LAUNCH_CONCURRENT, LAUNCH_COOPERATIVE, LAUNCH_SUBMIT,
                         LIMIT_MALLOC_HEAP_SIZE, LIMIT_STACK_SIZE, TIMEOUT_INFINITE, Backend,
                         QueueKind, Status)
from ._device import Device, DeviceInfo, FaultReport, device_spec
from ._errors import (Compile, CompileError, DeviceFault, DeviceFaultError, DeviceLost,
                      DeviceLostError, Error, GpuTimeoutError, Internal, InternalError,
                      InvalidArgument, InvalidArgumentError, InvalidCubin, InvalidCubinError,
                      InvalidHandle, InvalidHandleError, InvalidLaunch, InvalidLaunchError,
                      LibraryMissing, LibraryMissingError, NotFound, NotFoundError, NotSupported,
                      NotSupportedError, NullPointer, NullPointerError, Os, OsError, OutOfMemory,
                      OutOfMemoryError, TegraGpuError, Timeout, UnsupportedDriver,
                      UnsupportedDriverError, check, error_class, last_error_message,
                      status_str)
from ._kernel import Kernel, KernelAttributes, Module
from ._library import LibraryNotFoundError, lib, library_path, library_source, version
from ._memory import Buffer, BufferView
from ._queue import GpuTimer, Queue
from ._signal import Signal
from ._texture import Texture

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
# The exception classes, one per tg_status in the order of _errors._ERRORS
# (python/tests/test_package_api.py checks that they match).
__all__ += ["Error", "InvalidArgument", "NullPointer", "InvalidHandle", "OutOfMemory", "NotFound",
            "NotSupported", "Timeout", "DeviceFault", "Os", "InvalidCubin", "InvalidLaunch",
            "Compile", "LibraryMissing", "UnsupportedDriver", "Internal", "DeviceLost"]
# Their names in earlier versions of this package (the same classes).
__all__ += ["TegraGpuError", "InvalidArgumentError", "NullPointerError", "InvalidHandleError",
            "OutOfMemoryError", "NotFoundError", "NotSupportedError", "DeviceFaultError",
            "InvalidCubinError", "InvalidLaunchError", "CompileError", "LibraryMissingError",
            "UnsupportedDriverError", "InternalError", "DeviceLostError", "GpuTimeoutError",
            "OsError"]

__version__ = "0.1.0"

# Public too, though not in __all__ (``from tegragpu import *`` leaves them out).
ABI_MAJOR = _constants.ABI_MAJOR
TEXTURE_LINEAR = _constants.TEXTURE_LINEAR
TEXTURE_PITCH2D = _constants.TEXTURE_PITCH2D
TEXTURE_FORMATS = _constants.TEXTURE_FORMATS
ADDRESS_MODES = _constants.ADDRESS_MODES
TEXTURE_READ_NORMALIZED_FLOAT = _constants.TEXTURE_READ_NORMALIZED_FLOAT
TEXTURE_NORMALIZED_COORDS = _constants.TEXTURE_NORMALIZED_COORDS
TEXTURE_LINEAR_FILTER = _constants.TEXTURE_LINEAR_FILTER
LogLevel = _constants.LogLevel
LogFn = _cdefs.LogFn
set_log_level = _logging.set_log_level
set_log_callback = _logging.set_log_callback
missing_functions = _library.missing_functions

# Earlier private names, and private functions the tests call.
_lib = _library._lib
_check = _errors._check
_DeviceInfo = _cdefs._DeviceInfo
_FaultReport = _cdefs._FaultReport
_KernelAttributes = _cdefs._KernelAttributes
_LaunchConfig = _cdefs._LaunchConfig
_candidates = _library._candidates
_tell_python_site = _library._tell_python_site
_demangle = _param_types._demangle
_parse_c_decl = _param_types._parse_c_decl

# The classes and functions name "tegragpu" as their module, the path they are imported from:
# tracebacks (``tegragpu.InvalidArgument: ...``), reprs and pickles say tegragpu.<name>.
for _obj in list(globals().values()):
    if isinstance(_obj, (type, _types.FunctionType)) and \
            _obj.__module__.startswith(__name__ + "._"):
        _obj.__module__ = __name__
del _obj, _types
