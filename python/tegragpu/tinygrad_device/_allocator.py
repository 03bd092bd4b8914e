"""Memory: the opaque buffer object tinygrad holds, and the allocators (video memory with staged
copies on desktop GPUs; unified memory on Jetson Orin and the emulated Orin)."""

from __future__ import annotations

import ctypes

import tegragpu as tg

from . import _peer
from ._errors import TegraError
from ._tinygrad import LRUAllocator


class TegraMemory:
    """The opaque object tinygrad holds for a TEGRA buffer: ``region`` (a
    :class:`tegragpu.Buffer`, or a :class:`tegragpu.BufferView` for sub-buffers; None for
    ``external_ptr`` buffers), ``base`` (the Buffer), ``offset`` in it, ``size`` and ``va``
    (GPU address)."""

    __slots__ = ("region", "base", "offset", "size", "va", "host", "__weakref__")

    def __init__(self, region, base, offset, size, va, host=False):
        self.region, self.base, self.offset, self.size, self.va, self.host = \
            region, base, offset, size, va, host

    def __repr__(self):
        return f"<TegraMemory {self.size} bytes at {self.va:#x}{' host' if self.host else ''}>"

    def cpu_ptr(self):
        if self.region is None:
            raise TegraError(f"TEGRA: buffer at {self.va:#x} came from external_ptr and has no "
                             "CPU mapping known to libtegragpu")
        return self.region.cpu_ptr


def _mv_addr(mv):
    """(address, keepalive) of a memoryview's bytes (copies read-only views)."""
    if mv.readonly:
        keep = ctypes.create_string_buffer(mv.tobytes(), mv.nbytes)
        return ctypes.addressof(keep), keep
    arr = (ctypes.c_char * mv.nbytes).from_buffer(mv)
    return ctypes.addressof(arr), arr


def _flat(mv):
    mv = memoryview(mv)
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    return mv


def _external_memory(dev, ptr, size):
    """An ``external_ptr`` buffer (``Tensor.from_blob``): memory of NVIDIA's libcuda in this
    process (a torch tensor's ``data_ptr()``) is imported (:mod:`tegragpu.cuda_interop`); any
    other address is taken as a GPU address of this device."""
    from tegragpu import cuda_interop
    try:
        view = cuda_interop.import_cuda_pointer(dev.tdev, ptr, size)
    except tg.Error as e:
        raise dev._error(f"importing CUDA memory at {ptr:#x} ({size} bytes)", e) from e
    if view is None:
        return TegraMemory(None, None, 0, size, ptr)
    # The view keeps the imported buffer; it is freed when tinygrad drops the memory.
    return TegraMemory(view, view.buffer, view.offset, size, view.gpu_address)


class TegraAllocator(LRUAllocator):
    """Allocator for desktop GPUs (RM backend): video memory, staged copies on the copy
    queue."""

    def __init__(self, dev):
        super().__init__(dev)

    def _alloc(self, size, options):
        dev = self.dev
        if options.external_ptr:
            return _external_memory(dev, int(options.external_ptr), size)
        host = bool(options.host or options.cpu_access)
        flags = (tg.BUF_CPU_CACHED if host or dev.unified else tg.BUF_DEVICE_LOCAL)
        if options.zero:
            flags |= tg.BUF_ZEROED
        try:
            buf = dev.tdev.alloc(size, flags)
        except tg.OutOfMemory:
            raise  # a MemoryError: tinygrad frees its cache and retries
        except tg.Error as e:
            raise dev._error(f"allocating {size} bytes", e) from e
        return TegraMemory(buf, buf, 0, size, buf.gpu_address, host=host)

    def _free(self, opaque, options):
        if opaque.region is not None and opaque.region is opaque.base:
            try:
                opaque.base.close()  # the library frees it once submitted work is done
            except tg.Error:
                pass

    def _offset(self, buf, size, offset):
        if buf.region is None:
            return TegraMemory(None, None, 0, size, buf.va + offset)
        off = buf.offset + offset
        return TegraMemory(buf.base.view(off, size), buf.base, off, size, buf.va + offset,
                           buf.host)

    def _copyin(self, dest, src):
        src = _flat(src)
        if src.nbytes == 0:
            return
        if dest.host or self.dev.unified:
            self.dev.synchronize()  # no queued kernel may still use the old contents
            addr, keep = _mv_addr(src)
            ctypes.memmove(dest.cpu_ptr(), addr, src.nbytes)
            del keep
        else:
            self.dev._staged_copyin(dest, src)

    def _copyout(self, dest, src):
        dest = _flat(dest)
        if dest.nbytes == 0:
            return
        if src.host or self.dev.unified:
            self.dev.synchronize()
            addr, keep = _mv_addr(dest)
            ctypes.memmove(addr, src.cpu_ptr(), dest.nbytes)
            del keep
        else:
            self.dev._staged_copyout(dest, src)

    def _transfer(self, dest, src, sz, src_dev, dest_dev):
        """Device-to-device copy (tinygrad's COPY between two TEGRA buffers). One device: a
        copy on its compute queue. Two devices: a peer copy on the source's GPU
        (:meth:`TegraDevice._peer_copy`, GPU-ordered with both devices' work), peer access
        enabled at the first transfer between them; without a peer path (or for buffers the
        library does not know), through host memory, the reason logged once per pair."""
        if dest.region is not None and src.region is not None and sz > 0:
            if src_dev is dest_dev:
                if not (dest.base is src.base and dest.offset < src.offset + sz and
                        src.offset < dest.offset + sz):
                    dest_dev._gpu_copy(dest, src, sz)
                    return
            else:
                lk = _peer.link(src_dev, dest_dev)
                if lk.access:
                    src_dev._peer_copy(dest, src, sz, dest_dev)
                    return
                _peer.note_host_path(src_dev, dest_dev, lk)
        tmp = memoryview(bytearray(sz))
        src_dev.allocator._copyout(tmp, src)
        dest_dev.allocator._copyin(dest, tmp)


class TegraUnifiedAllocator(TegraAllocator):
    """Allocator for unified memory (Jetson Orin, the emulated Orin): the CPU reaches every
    buffer through its CPU pointer, so tinygrad may also copy straight into it
    (``_as_buffer``)."""

    def _as_buffer(self, src):
        if src.region is None:
            raise TegraError("TEGRA: external_ptr buffers have no CPU view")
        return memoryview(src.region.numpy("uint8")).cast("B")
