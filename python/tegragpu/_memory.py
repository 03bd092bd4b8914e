"""GPU memory: :class:`Buffer`, and :class:`BufferView` (a byte range of a buffer)."""

import ctypes
import weakref

from ._constants import Status
from ._errors import InvalidArgument, check
from ._handle import _Handle, _closed_error
from ._library import lib


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

    def export_fd(self):
        """Share the buffer with another driver (CUDA) or process (``tg_buf_export_fd``):
        ``(fd, size)``, a new file descriptor (Jetson: a dma-buf; desktop: an RM export fd)
        that the caller closes or hands to an importer, and the size of the memory object it
        carries (the buffer's size rounded up to whole pages; what
        ``cuImportExternalMemory`` wants). :meth:`Device.import_fd` imports it."""
        fd, size = ctypes.c_int(), ctypes.c_uint64()
        check(lib.tg_buf_export_fd(self.handle, ctypes.byref(fd), ctypes.byref(size)))
        return fd.value, size.value

    def signal(self, offset):
        """A :class:`Signal` whose value is the 64-bit word at ``offset`` of this buffer
        (``tg_signal_create_in_buffer``): for ordering work with another driver or process
        that shares the buffer. ``offset`` is a multiple of 16; a GPU release also writes a
        timestamp at ``offset + 8``. The memory is not written; the signal keeps the buffer's
        memory alive."""
        from ._cdefs import _H
        from ._signal import Signal
        offset = _int_arg(offset, "offset", "Buffer.signal")
        h = _H()
        check(lib.tg_signal_create_in_buffer(self.handle, offset, ctypes.byref(h)))
        return Signal(h.value)


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
