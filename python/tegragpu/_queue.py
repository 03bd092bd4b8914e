"""Command queues: :class:`Queue`, and :class:`GpuTimer` (GPU time of the work recorded on a
queue)."""

import ctypes

from ._cdefs import CLaunchConfig
from ._constants import (DEFAULT_TIMEOUT_NS, LAUNCH_CONCURRENT, LAUNCH_COOPERATIVE, LAUNCH_SUBMIT,
                         VALUE_64, VALUE_CONDS, VALUE_NO_BARRIER, Status)
from ._errors import InvalidArgument, check
from ._handle import _Handle
from ._library import lib
from ._memory import _REGIONS, BufferView, _check_range, _int_arg, _region


def _dims(v):
    if isinstance(v, int):
        return (v, 1, 1)
    t = tuple(v) + (1,) * (3 - len(v))
    if len(t) != 3:
        raise InvalidArgument(Status.INVALID_ARGUMENT, f"dimensions {v!r}: at most 3")
    return t


def _bool_arg(v, name, where):
    """``v`` as a bool: True, False (or 0 / 1); anything else is refused naming it."""
    if isinstance(v, bool) or v in (0, 1) and isinstance(v, int):
        return bool(v)
    raise InvalidArgument(Status.INVALID_ARGUMENT,
                          f"{where}: {name} must be True or False, not {v!r}")


def _queue_region(where, dst, offset, size):
    """(buffer, byte offset in the buffer) for ``size`` bytes at ``offset`` of a Buffer or
    BufferView; a view's own bounds are checked here (the library knows only the buffer)."""
    r = _region(dst, where, "buffer")
    offset, size = _int_arg(offset, "offset", where), _int_arg(size, "size", where)
    if isinstance(r, BufferView):
        _check_range(where, "", offset, size, r.size, r._describe())
    return r.buffer, r.offset + offset


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

    def fill(self, dst, value, elem_bytes=1, count=None, offset=0):
        """Record a fill of ``count`` elements of ``elem_bytes`` (1, 2 or 4) bytes of ``dst`` (a
        Buffer or BufferView) from byte ``offset`` with ``value`` (``tg_queue_fill``, like
        ``cuMemsetD8/D16/D32Async``), in order with the queue's other commands. ``count`` defaults
        to as many elements as fit after ``offset``."""
        where = "Queue.fill"
        r = _region(dst, where, "dst")
        offset = _int_arg(offset, "offset", where)
        elem_bytes = _int_arg(elem_bytes, "elem_bytes", where)
        if count is None:
            count = max(r.size - offset, 0) // elem_bytes if elem_bytes else 0
        count = _int_arg(count, "count", where)
        buf, off = _queue_region(where, r, offset, count * elem_bytes)
        check(lib.tg_queue_fill(self.handle, buf.handle, off, _int_arg(value, "value", where),
                                elem_bytes, count))

    def write(self, dst, data, offset=0):
        """Record a copy of ``data`` (bytes or any contiguous buffer, e.g. a numpy array) to
        ``dst`` (a Buffer or BufferView) at byte ``offset`` (``tg_queue_write``, like
        ``cuMemcpyHtoDAsync``), in order with the queue's other commands. The bytes are staged
        during the call: ``data`` may change as soon as it returns."""
        where = "Queue.write"
        mv = memoryview(data)
        if not mv.contiguous:
            raise InvalidArgument(Status.INVALID_ARGUMENT, f"{where}: data is not contiguous")
        mv = mv.cast("B")
        n = mv.nbytes
        buf, off = _queue_region(where, dst, offset, n)
        if n == 0:
            src = None
        elif mv.readonly:
            src = ctypes.c_char_p(bytes(mv))
        else:
            src = (ctypes.c_char * n).from_buffer(mv)
        check(lib.tg_queue_write(self.handle, buf.handle, off, src, n))

    def read(self, src, size=None, offset=0, out=None):
        """Copy bytes of ``src`` (a Buffer or BufferView) from byte ``offset`` to the host, in
        order with the queue's other commands (``tg_queue_read``, like ``cuMemcpyDtoH``): waits for
        the queue's earlier work and returns once the bytes are there. With ``out`` (a writable
        contiguous buffer, e.g. a numpy array) fills it and returns it; else returns ``size``
        bytes (default: to the end of ``src``) as ``bytes``."""
        where = "Queue.read"
        r = _region(src, where, "src")
        offset = _int_arg(offset, "offset", where)
        if out is not None:
            mv = memoryview(out)
            if mv.readonly or not mv.contiguous:
                raise InvalidArgument(Status.INVALID_ARGUMENT,
                                      f"{where}: out must be a writable contiguous buffer")
            mv = mv.cast("B")
            n = mv.nbytes
            if size is not None and _int_arg(size, "size", where) != n:
                raise InvalidArgument(Status.INVALID_ARGUMENT,
                                      f"{where}: size {size} differs from out's {n} bytes")
            dst = (ctypes.c_char * n).from_buffer(mv) if n else None
        else:
            n = max(r.size - offset, 0) if size is None else _int_arg(size, "size", where)
            dst = ctypes.create_string_buffer(n) if n else None
        buf, off = _queue_region(where, r, offset, n)
        check(lib.tg_queue_read(self.handle, dst, buf.handle, off, n))
        if out is not None:
            return out
        return dst.raw if n else b""

    def signal(self, signal, value):
        check(lib.tg_queue_signal(self.handle, signal.handle, value))

    def wait(self, signal, value):
        check(lib.tg_queue_wait(self.handle, signal.handle, value))

    def write_value(self, dst, value, offset=0, wide=False, barrier=True):
        """Record a GPU write of ``value`` to the 32-bit word (``wide``: the 64-bit word) at byte
        ``offset`` of ``dst`` (a Buffer or BufferView; ``tg_queue_write_value``, like
        ``cuStreamWriteValue32/64``), once earlier work on the queue is complete and visible;
        ``barrier=False`` lets it pass that work."""
        where = "Queue.write_value"
        wide = _bool_arg(wide, "wide", where)
        buf, off = _queue_region(where, dst, offset, 8 if wide else 4)
        flags = (VALUE_64 if wide else 0) | \
            (0 if _bool_arg(barrier, "barrier", where) else VALUE_NO_BARRIER)
        check(lib.tg_queue_write_value(self.handle, buf.handle, off,
                                       _int_arg(value, "value", where), flags))

    def wait_value(self, buf, value, cond="geq", offset=0, wide=False):
        """Record a GPU wait, before the queue's later work, until the 32-bit word (``wide``:
        the 64-bit word) at byte ``offset`` of ``buf`` satisfies ``cond`` against ``value``:
        "eq", "geq" (unsigned), "geq_wrapping" (across wrap-around), "and" (a bit in common),
        "nor" (``~(word | value)`` not 0) (``tg_queue_wait_value``, like
        ``cuStreamWaitValue32/64``)."""
        where = "Queue.wait_value"
        if cond not in VALUE_CONDS:
            raise InvalidArgument(Status.INVALID_ARGUMENT, f"{where}: cond {cond!r}: expected "
                                  f"one of {sorted(VALUE_CONDS)}")
        wide = _bool_arg(wide, "wide", where)
        b, off = _queue_region(where, buf, offset, 8 if wide else 4)
        check(lib.tg_queue_wait_value(self.handle, b.handle, off,
                                      _int_arg(value, "value", where),
                                      VALUE_CONDS[cond],
                                      VALUE_64 if wide else 0))

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
