"""TinyJit batches: :class:`TegraGraph` replays a batch of kernels from a libtegragpu command
buffer, or launches them from prepacked parameter blocks."""

from __future__ import annotations

import ctypes
import os

import tegragpu as tg

from ._errors import TegraError
from ._program import TegraProgram
from ._tinygrad import MultiBuffer


try:
    from tinygrad.engine.jit import GraphRunner as _GraphRunner
except ImportError:  # pragma: no cover
    _GraphRunner = object


class _Entry:
    __slots__ = ("prg", "pbuf", "cfg", "cfg_ref", "vas", "vals", "node", "concurrent")


def _dims(e):
    """The launch dimensions of entry ``e``: (grid, block)."""
    return tuple(e.cfg.grid), tuple(e.cfg.block)


def cmdbuf_supported():
    """Whether the loaded package and library have command buffers (``tg_cmdbuf_*``,
    ``tg_queue_replay``)."""
    missing = getattr(tg, "missing_functions", ())
    return hasattr(tg, "CmdBuf") and hasattr(tg.Device, "create_cmdbuf") and \
        hasattr(tg.Queue, "replay") and "tg_cmdbuf_create" not in missing and \
        "tg_queue_replay" not in missing and "tg_cmdbuf_set_params" not in missing


def set_launch_supported():
    """Whether command buffers can also take new launch dimensions (``tg_cmdbuf_set_launch``),
    which batches with symbolic launch dimensions need."""
    return cmdbuf_supported() and hasattr(tg.CmdBuf, "set_launch") and \
        "tg_cmdbuf_set_launch" not in getattr(tg, "missing_functions", ())


class TegraGraph(_GraphRunner):
    """Replays a TinyJit batch of kernels.

    With command buffers (libtegragpu's ``tg_cmdbuf``, when the library has them): the batch
    is recorded once into a command buffer; a replay is one ``tg_queue_replay`` + submit, like
    a CUDA graph launch. Parameter blocks that change between replays (other input buffers,
    variables) are written with ``tg_cmdbuf_set_params`` when the command buffer's earlier
    replays have finished; otherwise that replay launches the kernels directly (no waiting).
    Launch dimensions that depend on symbolic variables are set the same way
    (``tg_cmdbuf_set_launch``; with a library without it, such batches launch directly).

    Without (``TEGRA_CMDBUF=0``, older library): parameter blocks and launch configurations are
    packed once; a replay patches them and records every ``tg_launch`` in one go."""

    def __init__(self, linear, input_uops=()):
        super().__init__(linear, input_uops)
        self._build()

    def _build(self):
        """Pack every launch of ``self.calls`` (set up by tinygrad's GraphRunner)."""
        self.dev = None
        self.entries = []
        # Dependencies from tinygrad's buffer lists: a kernel depends on every earlier kernel
        # that wrote what it reads or writes, or read what it writes. Kernels are launched level
        # by level (a kernel's level is one more than its dependencies' highest); the kernels of
        # one level are independent, so all but the first get LAUNCH_CONCURRENT, as a CUDA graph
        # runs nodes without an edge between them.
        concurrency = os.environ.get("TEGRA_CONCURRENT", "1") != "0" and \
            hasattr(tg, "LAUNCH_CONCURRENT")
        accesses, levels = [], []
        for (dev_idx, ast, bufs, device_vars), rt in zip(self.calls, self.runtimes):
            if not isinstance(rt, TegraProgram):
                raise TegraError(f"TegraGraph: {ast.op} is not a TEGRA kernel")
            self.dev = rt.dev
            gs, ls = ast.arg.launch_dims({v: 0 for v in self.vars} | device_vars)
            e = _Entry()
            e.prg = rt
            e.pbuf = (ctypes.c_ubyte * max(rt.param_bytes, 1))()
            e.cfg = tg.CLaunchConfig(struct_size=ctypes.sizeof(tg.CLaunchConfig))
            e.cfg_ref = ctypes.byref(e.cfg)
            e.vas = [b._buf.va for b in bufs]
            e.vals = [device_vars.get(x.expr, 0) for x in ast.arg.vars]
            rt.pack_into(e.pbuf, e.vas, e.vals)
            TegraProgram.set_dims(e.cfg, gs, ls)
            outs = set(getattr(ast.arg, "outs", None) or range(len(bufs)))
            writes = {id(b.base) for i, b in enumerate(bufs) if i in outs}
            reads = {id(b.base) for i, b in enumerate(bufs) if i not in outs}
            level = 0
            for (r, w), lv in zip(accesses, levels):
                if w & (reads | writes) or r & writes:
                    level = max(level, lv + 1)
            accesses.append((reads, writes))
            levels.append(level if concurrency else len(levels))
            e.concurrent = False
            self.entries.append(e)
        # Launch order: by level, the captured order within a level.
        self.order = sorted(range(len(self.entries)), key=lambda j: (levels[j], j))
        for k, j in enumerate(self.order):
            e = self.entries[j]
            e.concurrent = k > 0 and levels[self.order[k - 1]] == levels[j]
            e.cfg.flags = tg.LAUNCH_CONCURRENT if e.concurrent else 0
        self.updatable = sorted({j for j, r in enumerate(self.uop_replace) if r} |
                                self.var_vals_replace.keys() | self.launch_dims_replace.keys())
        ordered = [self.entries[j] for j in self.order]
        self.launches = tuple((e.prg, e.pbuf, e.cfg_ref) for e in ordered)
        self.names = tuple(e.prg.name for e in ordered)
        self.cmdbuf, self.cmdbuf_note, self.cb_fence, self.cb_params = None, None, 0, []
        self.cb_dims = []
        dev = self.dev
        if dev is None or (self.launch_dims_replace and not set_launch_supported()) or \
                dev.sync_each or os.environ.get("TEGRA_CMDBUF", "1") == "0" or \
                not cmdbuf_supported():
            self.cmdbuf_note = "kernels launched one by one"
            return
        cb = None
        try:
            cb = dev.tdev.create_cmdbuf()
            for e in ordered:
                # Symbolic dimensions were evaluated with the variables at 0 here; a replay
                # sets the real ones (tg_cmdbuf_set_launch) before it runs.
                g, b = (tuple(max(int(x), 1) for x in d) for d in _dims(e))
                e.node = cb.launch_packed(e.prg.kernel, g, b,
                                          bytes(e.pbuf)[:e.prg.param_bytes],
                                          concurrent=e.concurrent)
            cb.finish()
        except tg.Error as err:
            if cb is not None:
                cb.close()
            self.cmdbuf_note = f"no command buffer ({type(err).__name__}: {err})"
            return
        self.cmdbuf = cb
        self.cb_params = [bytes(e.pbuf)[:e.prg.param_bytes] for e in self.entries]
        self.cb_dims = [None if j in self.launch_dims_replace else _dims(e)
                        for j, e in enumerate(self.entries)]
        self.cmdbuf_note = f"command buffer of {len(self.entries)} launches"

    def _cmdbuf_idle(self):
        dev = self.dev
        return self.cb_fence <= dev.tl_done or dev.tl.value >= self.cb_fence

    def __call__(self, input_uops, var_vals, wait=False):
        for j in self.updatable:
            e, dev_idx = self.entries[j], self.calls[j][0]
            for pos, iidx in self.uop_replace[j]:
                b = input_uops[iidx].buffer
                if isinstance(b, MultiBuffer):
                    b = b.bufs[dev_idx]
                e.vas[pos] = b._buf.va
        for j, i, v in self.updated_vars(var_vals):
            self.entries[j].vals[i] = v
        for j, gs, ls in self.updated_launch_dims(var_vals):
            TegraProgram.set_dims(self.entries[j].cfg, gs, ls)
        for j in self.updatable:
            e = self.entries[j]
            e.prg.pack_into(e.pbuf, e.vas, e.vals)
        cb = self.cmdbuf
        if cb is not None:
            changed = []
            for j in self.updatable:
                e = self.entries[j]
                p = bytes(e.pbuf)[:e.prg.param_bytes]
                if p != self.cb_params[j]:
                    changed.append((j, p))
            resized = [j for j in self.launch_dims_replace
                       if _dims(self.entries[j]) != self.cb_dims[j]]
            if not (changed or resized) or self._cmdbuf_idle():
                for j, p in changed:
                    e = self.entries[j]
                    try:
                        cb.set_params(e.node, p, e.prg.kernel)
                    except tg.Error as err:
                        raise self.dev._error(f"updating the parameters of kernel {e.prg.name} "
                                              "in the command buffer", err) from err
                    self.cb_params[j] = p
                for j in resized:
                    e = self.entries[j]
                    g, b = _dims(e)
                    try:
                        cb.set_launch(e.node, g, b, kernel=e.prg.kernel,
                                      concurrent=e.concurrent)
                    except tg.Error as err:
                        raise self.dev._error(
                            f"setting the launch dimensions of kernel {e.prg.name} (grid {g}, "
                            f"block {b}) in the command buffer", err, [e.prg.name]) from err
                    self.cb_dims[j] = (g, b)
                return self.dev._replay(self, wait)
        return self.dev._launch_packed(self.launches, wait, None)
