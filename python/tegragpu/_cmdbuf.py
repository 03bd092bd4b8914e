"""Command buffers: :class:`CmdBuf`, recorded once and replayed on queues."""

import ctypes

from ._cdefs import CLaunchConfig
from ._constants import LAUNCH_CONCURRENT, LAUNCH_COOPERATIVE
from ._errors import check
from ._handle import _Handle
from ._library import lib
from ._memory import BufferView, _check_range, _region
from ._queue import _dims


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
