"""Programs: a tinygrad kernel loaded with ``tg_module_load`` and launched with ``tg_launch``."""

from __future__ import annotations

import ctypes
import struct

import tegragpu as tg

from ._errors import TegraError
from ._tinygrad import dtypes


_INT_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}


class TegraProgram:
    """A tinygrad kernel loaded with ``tg_module_load`` and launched with ``tg_launch``."""

    def __init__(self, dev, obj):
        self.dev, self.name, self.lib, self.signature = dev, obj.name, obj.lib, obj.signature
        try:
            self.module = dev.tdev.load_module(obj.lib)
            self.kernel = self.module.kernel(obj.name)
        except tg.Error as e:
            raise dev._error(f"loading kernel {obj.name}", e) from e
        self.khandle = self.kernel.handle
        self.params = list(self.kernel.params)
        self.param_bytes = self.kernel.attributes.param_bytes
        self.max_threads = self.kernel.attributes.max_threads_per_block
        self.pbuf = (ctypes.c_ubyte * max(self.param_bytes, 1))()
        self.cfg = tg.CLaunchConfig(struct_size=ctypes.sizeof(tg.CLaunchConfig))
        self.cfg_ref = ctypes.byref(self.cfg)
        self._packers = {}

    def packer(self, nbufs):
        """The ``struct.Struct`` that packs ``nbufs`` GPU addresses and the values into the
        parameter block at the offsets ``tg_kernel_get_param`` gives."""
        st = self._packers.get(nbufs)
        if st is not None:
            return st
        fmt, pos = "<", 0
        for i, (off, size) in enumerate(self.params):
            if off < pos:
                raise TegraError(f"TEGRA: kernel {self.name}: parameter {i} at offset {off} "
                                 "overlaps the previous one")
            if off > pos:
                fmt += f"{off - pos}x"
            if i < nbufs:
                if size != 8:
                    raise TegraError(f"TEGRA: kernel {self.name}: parameter {i} is {size} "
                                     "bytes; tinygrad passes a buffer (an 8-byte pointer) there")
                fmt += "Q"
            else:
                dt = self.signature[i][2] if i < len(self.signature) else None
                code = dt.fmt if dt is not None and dt.fmt and dt.itemsize == size and \
                    dtypes.is_int(dt) else _INT_CODES.get(size)
                if code is None:
                    raise TegraError(f"TEGRA: kernel {self.name}: parameter {i} is {size} bytes; "
                                     "tinygrad passes an integer there")
                fmt += code
            pos = off + size
        st = self._packers[nbufs] = struct.Struct(fmt)
        return st

    def pack_into(self, pbuf, bufs_va, vals):
        n = len(bufs_va) + len(vals)
        if n != len(self.params):
            raise TegraError(f"TEGRA: kernel {self.name} takes {len(self.params)} parameters; "
                             f"tinygrad passed {len(bufs_va)} buffers and {len(vals)} values")
        vals = [0 if v is None else int(v) for v in vals]
        try:
            self.packer(len(bufs_va)).pack_into(pbuf, 0, *bufs_va, *vals)
        except struct.error:
            # a value outside the parameter's signed/unsigned range: pass its low bits, as C does
            sizes = [size for _, size in self.params[len(bufs_va):]]
            vals = [v & ((1 << (8 * sz)) - 1) for v, sz in zip(vals, sizes)]
            vals = [v - (1 << (8 * sz)) if v >= 1 << (8 * sz - 1) else v
                    for v, sz in zip(vals, sizes)]
            try:
                self.packer(len(bufs_va)).pack_into(pbuf, 0, *bufs_va, *vals)
            except struct.error as e:
                raise TegraError(f"TEGRA: kernel {self.name}: cannot pack its parameters "
                                 f"(values {vals}): {e}") from e

    @staticmethod
    def set_dims(cfg, global_size, local_size):
        g, b = cfg.grid, cfg.block
        gs = tuple(global_size) + (1,) * (3 - len(global_size))
        ls = tuple(local_size) + (1,) * (3 - len(local_size)) if local_size else (1, 1, 1)
        g[0], g[1], g[2] = int(gs[0]), int(gs[1]), int(gs[2])
        b[0], b[1], b[2] = int(ls[0]), int(ls[1]), int(ls[2])

    def __call__(self, *bufs, global_size=(1, 1, 1), local_size=(1, 1, 1), vals=(), wait=False,
                 timeout=None, **kwargs):
        self.pack_into(self.pbuf, [b.va for b in bufs], vals)
        self.set_dims(self.cfg, global_size, local_size)
        return self.dev._launch_packed(((self, self.pbuf, self.cfg_ref),), wait, timeout)

    def __del__(self):
        for h in ("kernel", "module"):
            try:
                getattr(self, h).close()
            except Exception:
                pass
