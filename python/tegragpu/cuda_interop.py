"""Memory of NVIDIA's libcuda in this process as libtegragpu buffers (e.g. a torch tensor's
``data_ptr()``), through the file descriptors of docs/api.md, "Sharing memory with CUDA and
other processes".

:func:`import_cuda_pointer` exports the CUDA allocation that holds a device pointer
(``cuMemRetainAllocationHandle`` + ``cuMemExportToShareableHandle`` with
``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``) and imports it into a :class:`tegragpu.Device`
(:meth:`tegragpu.Device.import_fd`). Only allocations made with that handle type can be shared
this way: ``cuMemCreate`` allocations that asked for it, and torch's with
``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` (torch's default ``cudaMalloc`` memory
cannot be exported; the error says so). The import maps the same memory: no copy, and each side
sees the other's writes once the writer's work is complete (synchronize the writer first, e.g.
``torch.cuda.synchronize()``, or order the GPU work through a signal in the memory:
:meth:`tegragpu.Buffer.signal`).

libcuda is used only when the process has loaded it already: this module never loads it.
"""

import ctypes
import os

from ._constants import Status
from ._errors import InvalidArgument, NotSupported

CUDA_SUCCESS = 0
CU_POINTER_ATTRIBUTE_CONTEXT = 1
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_MEMORYTYPE_DEVICE = 2
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0


class _MemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocProp(ctypes.Structure):
    """``CUmemAllocationProp``."""
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _MemLocation), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


def _loaded_libcuda():
    """The process's libcuda.so.1 when it is loaded already, else None."""
    try:
        return ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:
        return None


def _err(cu, what, r):
    name = ctypes.c_char_p()
    try:
        cu.cuGetErrorName(r, ctypes.byref(name))
    except AttributeError:
        pass
    return f"{what} returned {r} ({(name.value or b'?').decode()})"


def cuda_pointer_export(ptr):
    """The CUDA allocation holding device pointer ``ptr``, exported: ``(fd, offset)``, an RM
    export fd of the whole allocation (the caller closes it) and ``ptr``'s offset in it. None
    when libcuda is not loaded or ``ptr`` is not CUDA device memory; raises
    :class:`tegragpu.NotSupported` when it is, but cannot be exported."""
    cu = _loaded_libcuda()
    if cu is None or not ptr:
        return None
    u64 = ctypes.c_uint64
    mtype = ctypes.c_uint(0)
    if cu.cuPointerGetAttribute(ctypes.byref(mtype), CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                u64(ptr)) != CUDA_SUCCESS or mtype.value != CU_MEMORYTYPE_DEVICE:
        return None
    ctx = ctypes.c_void_p()
    r = cu.cuPointerGetAttribute(ctypes.byref(ctx), CU_POINTER_ATTRIBUTE_CONTEXT, u64(ptr))
    if r != CUDA_SUCCESS:
        raise NotSupported(Status.NOT_SUPPORTED, _err(cu, f"cuPointerGetAttribute(CONTEXT, {ptr:#x})", r))
    pushed = ctx.value is not None and cu.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS
    try:
        return _export_in_context(cu, ptr)
    finally:
        if pushed:
            cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def _handle_at(cu, addr):
    """The allocation handle mapped at ``addr`` (released again), or None."""
    h = ctypes.c_uint64()
    if cu.cuMemRetainAllocationHandle(ctypes.byref(h), ctypes.c_void_p(addr)) != CUDA_SUCCESS:
        return None
    cu.cuMemRelease(h)
    return h.value


def _export_in_context(cu, ptr):
    h = ctypes.c_uint64()
    r = cu.cuMemRetainAllocationHandle(ctypes.byref(h), ctypes.c_void_p(ptr))
    if r != CUDA_SUCCESS:
        raise NotSupported(Status.NOT_SUPPORTED, (
            f"CUDA pointer {ptr:#x} is not memory of cuMemCreate ("
            + _err(cu, "cuMemRetainAllocationHandle", r)
            + "): only such memory can be shared. For torch, set "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before CUDA is initialised"))
    try:
        prop = _AllocProp()
        gran = ctypes.c_size_t(0)
        if cu.cuMemGetAllocationPropertiesFromHandle(ctypes.byref(prop), h) != CUDA_SUCCESS or \
                cu.cuMemGetAllocationGranularity(ctypes.byref(gran), ctypes.byref(prop),
                                                 CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS \
                or not gran.value:
            gran.value = 2 << 20
        if not prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
            raise NotSupported(Status.NOT_SUPPORTED, (
                f"the CUDA allocation holding {ptr:#x} was made without "
                "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (requestedHandleTypes "
                f"{prop.requestedHandleTypes:#x}) and cannot be exported; for torch, set "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before CUDA is initialised"))
        # Where the handle's mapping starts: handles are mapped at multiples of the
        # granularity, so walk down from ptr while the same handle is mapped.
        g = gran.value
        start = ptr - ptr % g
        while start >= g and _handle_at(cu, start - g) == h.value:
            start -= g
        fd = ctypes.c_int(-1)
        r = cu.cuMemExportToShareableHandle(ctypes.byref(fd), h,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                            ctypes.c_ulonglong(0))
        if r != CUDA_SUCCESS:
            raise NotSupported(Status.NOT_SUPPORTED, _err(
                cu, f"cuMemExportToShareableHandle(POSIX_FILE_DESCRIPTOR) of the allocation "
                    f"holding {ptr:#x}", r))
        return fd.value, ptr - start
    finally:
        cu.cuMemRelease(h)


def import_cuda_pointer(device, ptr, size):
    """``size`` bytes of CUDA device memory at ``ptr`` (in this process) as a
    :class:`tegragpu.BufferView` of ``device``: the whole CUDA allocation is imported
    (:meth:`tegragpu.Device.import_fd`) and the view covers ``[ptr, ptr + size)``. None when
    libcuda is not loaded or ``ptr`` is not CUDA device memory. Raises
    :class:`tegragpu.NotSupported` for CUDA memory that cannot be exported (see the module),
    :class:`tegragpu.InvalidArgument` when the range leaves the allocation."""
    got = cuda_pointer_export(ptr)
    if got is None:
        return None
    fd, offset = got
    try:
        buf = device.import_fd(fd)
    finally:
        os.close(fd)
    total = buf.size
    if offset + size > total:
        buf.close()
        raise InvalidArgument(Status.INVALID_ARGUMENT, (
            f"CUDA range [{ptr:#x}, +{size}) runs past the end of its allocation "
            f"({total} bytes from {ptr - offset:#x})"))
    return buf.view(offset, size)
