"""A tinygrad device, ``TEGRA``, backed by libtegragpu (supported tinygrad version: 0.14.0).

Importing this module registers the device: it puts a module ``tinygrad.runtime.ops_tegra``
with the class ``TegraDevice`` into ``sys.modules``, where tinygrad looks for device classes,
so that ``Device["TEGRA"]``, ``Tensor(..., device="TEGRA")`` and ``DEV=TEGRA`` work. Three ways
to use it without editing a script::

    import tegragpu.tinygrad_device                              # in code, before using TEGRA
    DEV=TEGRA python -m pytest -p tegragpu.tinygrad_device test/test_ops.py   # pytest plugin
    python -m tegragpu.tinygrad_device script.py args...         # runner (sets DEV=TEGRA)
    python -m tegragpu.tinygrad_device --info                    # self-check of the device

``TEGRA`` is the device of ``tegragpu.Device()`` (the one ``TEGRAGPU_DEVICE`` names, else the GPU
of this machine); ``TEGRA:N`` is GPU N of the desktop driver (spec ``"rm:N"``, or
``"<TEGRAGPU_DEVICE>:N"``).

How it works (docs/tinygrad.md has the details):

* Memory: ``tg_buf`` through :meth:`tegragpu.Device.alloc` (the CPU mapping is made on first
  CPU access only). Desktop GPUs: video memory (``BUF_DEVICE_LOCAL``); copies go through
  pinned host staging buffers and the copy queue (``tg_queue_copy``), ordered against kernels
  with timeline signals. Unified memory (Jetson Orin, the emulated Orin): copies are CPU
  ``memmove`` through the buffer's CPU pointer. Sub-buffers are :class:`tegragpu.BufferView`.
* Code: tinygrad's CUDA renderer + its NVRTC compiler make a cubin for the device's
  ``sm_XY`` (``DEV=TEGRA:PTX``: tinygrad's PTX renderer, compiled by the library's PTX JIT);
  ``tg_module_load`` / ``tg_module_get_kernel`` load it; ``tg_launch`` launches it with the
  parameter block packed by the offsets ``tg_kernel_get_param`` reports.
* Synchronization: a timeline signal per queue. ``wait=True`` launches are timed with GPU
  timestamps (``tg_signal_timestamp``) of signals released before and after the launch.
* TinyJit: ``TegraGraph`` records the captured kernels into a libtegragpu command buffer
  (``tg_cmdbuf``) and replays it with one ``tg_queue_replay``; with a library without command
  buffers it re-launches the kernels from prepacked parameter blocks in one batch.
* Errors of the library become :class:`TegraError` (a ``RuntimeError``) naming the kernel,
  with the :class:`tegragpu.Error` as ``__cause__``, never a wrong result. The emulated Orin
  runs only the library's known test kernels: a tinygrad kernel launched there faults, and
  the error says so (launches on the emulator are synchronized one by one for that reason).

Environment: ``TEGRAGPU_DEVICE`` (which device), ``TEGRA_GRAPH=0`` (no TinyJit graph),
``TEGRA_CMDBUF=0`` (the graph without command buffers),
``TEGRA_SYNC=1`` (wait after every launch: exact fault attribution), ``TEGRA_TIMEOUT_S``
(GPU wait limit, default 300), ``TEGRAGPU_NVRTC`` (used as tinygrad's ``NVRTC_PATH`` when that
is unset), ``TEGRA_STAGED_COPIES=1`` (the desktop copy path on unified memory too; for tests).
"""

from __future__ import annotations

import collections
import ctypes
import os
import struct
import sys
import types
import warnings

if __name__ == "__main__":
    # python -m tegragpu.tinygrad_device: run through the importable module, so that its classes
    # (pickled into tinygrad's compile worker processes) live in tegragpu.tinygrad_device, not
    # in __main__, and are defined once.
    import tegragpu.tinygrad_device as _m
    sys.exit(_m.main())

import tegragpu as tg

#: The tinygrad version this device is written and tested for.
SUPPORTED_TINYGRAD_VERSION = "0.14.0"

# tinygrad finds libnvrtc through NVRTC_PATH (or its search path) when its compiler is first
# made; the library's own variable is the natural default.
if not os.environ.get("NVRTC_PATH") and os.environ.get("TEGRAGPU_NVRTC"):
    os.environ["NVRTC_PATH"] = os.environ["TEGRAGPU_NVRTC"]

try:
    import tinygrad  # noqa: F401
    import tinygrad.runtime
    from tinygrad.device import Compiled, LRUAllocator, MultiBuffer, Device as _TinyDevice
    from tinygrad.dtype import dtypes
    from tinygrad.helpers import ALLOW_TF32, DEV
    from tinygrad.renderer.cstyle import CUDARenderer, NVCCRenderer
    from tinygrad.renderer.ptx import PTXRenderer
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"tegragpu.tinygrad_device needs tinygrad ({_e}); install the supported version: "
        f"pip install tinygrad=={SUPPORTED_TINYGRAD_VERSION}") from _e

__all__ = ["TegraDevice", "TegraAllocator", "TegraUnifiedAllocator", "TegraProgram",
           "TegraGraph", "TegraError", "TegraEmulatorWarning", "register", "tinygrad_version",
           "SUPPORTED_TINYGRAD_VERSION", "DEVICE_NAME", "main"]

DEVICE_NAME = "TEGRA"
_MODULE_NAME = "tinygrad.runtime.ops_tegra"


def tinygrad_version():
    """The installed tinygrad's version string (None when it cannot be told)."""
    try:
        from importlib.metadata import version
        return version("tinygrad")
    except Exception:
        return getattr(tinygrad, "__version__", None)


if tinygrad_version() not in (SUPPORTED_TINYGRAD_VERSION, None) and \
        os.environ.get("TEGRA_ANY_TINYGRAD") != "1":
    warnings.warn(f"tegragpu.tinygrad_device supports tinygrad {SUPPORTED_TINYGRAD_VERSION}; "
                  f"tinygrad {tinygrad_version()} is installed (TEGRA_ANY_TINYGRAD=1 silences "
                  "this)", RuntimeWarning, stacklevel=2)


class TegraError(RuntimeError):
    """A libtegragpu call made for tinygrad failed. The message names the kernel or copy and
    the library's error; ``__cause__`` is the :class:`tegragpu.Error`; ``status`` is its
    :class:`tegragpu.Status` (None when the error did not come from the library)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class TegraEmulatorWarning(UserWarning):
    """The TEGRA device opened the emulated Orin, which cannot run tinygrad's kernels."""


def _env_float(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _timeout_ns():
    return int(_env_float("TEGRA_TIMEOUT_S", 300.0) * 1e9)


# --------------------------------------------------------------------------------------------
# Renderers: tinygrad's, minus TF32 tensor cores (tinygrad leaves those out for "CUDA" and
# "NV" only, by device name; float32 matmuls must not silently lose precision on TEGRA either).

class _NoTF32:
    @property
    def tensor_cores(self):
        tcs = self.__dict__.get("_tegra_tcs", [])
        return tcs if ALLOW_TF32 else [tc for tc in tcs if tc.dtype_in != dtypes.float]

    @tensor_cores.setter
    def tensor_cores(self, value):
        self.__dict__["_tegra_tcs"] = value


class TegraCUDARenderer(_NoTF32, CUDARenderer):
    """tinygrad's CUDA C renderer; its NVRTC compiler makes a cubin for the device's sm_XY
    (the target device is TEGRA, so tinygrad asks NVRTC for SASS, not PTX)."""


class TegraNVCCRenderer(_NoTF32, NVCCRenderer):
    """tinygrad's CUDA C renderer compiled with nvcc to a cubin (``DEV=TEGRA:NVCC``)."""


class TegraPTXRenderer(_NoTF32, PTXRenderer):
    """tinygrad's PTX renderer; the PTX text goes to ``tg_module_load``, which compiles it with
    the library's PTX JIT (the NVIDIA driver's PTX compiler or nvJitLink) (``DEV=TEGRA:PTX``)."""

    def __init__(self, target):
        from dataclasses import replace
        from tinygrad.runtime.support.compiler_cuda import PTXCompiler
        # PTXRenderer picks nvJitLink (cubin) for every device but CUDA; we want the PTX text.
        super().__init__(replace(target, device="CUDA"))
        self.target = target
        self.compiler = PTXCompiler(target.arch, cache_key="tegra_ptx")


# --------------------------------------------------------------------------------------------
# Memory

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


class TegraAllocator(LRUAllocator):
    """Allocator for desktop GPUs (RM backend): video memory, staged copies on the copy
    queue."""

    def __init__(self, dev):
        super().__init__(dev)

    def _alloc(self, size, options):
        dev = self.dev
        if options.external_ptr:
            return TegraMemory(None, None, 0, size, int(options.external_ptr))
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
        if src_dev is dest_dev and dest.region is not None and src.region is not None and \
                not (dest.base is src.base and dest.offset < src.offset + sz and
                     src.offset < dest.offset + sz):
            dest_dev._gpu_copy(dest, src, sz)
            return
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


# --------------------------------------------------------------------------------------------
# Programs

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


# --------------------------------------------------------------------------------------------
# TinyJit batches

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


# --------------------------------------------------------------------------------------------
# The device

_STAGING_CHUNK = 32 << 20


def _open_tegragpu(index):
    """Open the libtegragpu device for ``TEGRA:index``."""
    if index == 0:
        return tg.Device()  # TEGRAGPU_DEVICE, else the GPU of this machine
    env = (os.environ.get("TEGRAGPU_DEVICE") or "").strip()
    return tg.Device(env.split(":", 1)[0] or None, index=index)


class TegraDevice(Compiled):
    """tinygrad's ``TEGRA`` device: one libtegragpu device, a compute queue (launches,
    device-to-device copies) and, on desktop GPUs, a copy queue (host staging copies)."""

    def __init__(self, device=DEVICE_NAME):
        index = int(device.split(":")[1]) if ":" in device else 0
        try:
            self.tdev = _open_tegragpu(index)
            self.info = self.tdev.info
        except tg.Error as e:
            raise TegraError(f"{device}: cannot open the libtegragpu device "
                             f"(TEGRAGPU_DEVICE={os.environ.get('TEGRAGPU_DEVICE')!r}, library "
                             f"{tg.library_path()}): {type(e).__name__}: {e}", e.status) from e
        info = self.info
        self.emulated = bool(info.emulated)
        unified = getattr(info, "unified_memory", None)
        self.unified = bool(unified) if unified is not None else \
            (self.emulated or info.backend == tg.Backend.NVGPU)
        if os.environ.get("TEGRA_STAGED_COPIES") == "1":
            self.unified = False  # the desktop copy path everywhere (for tests)
        self.sync_each = self.emulated or os.environ.get("TEGRA_SYNC") == "1"
        try:
            self.q = self.tdev.create_queue(tg.QueueKind.COMPUTE)
            self.qh = self.q.handle
            self.tl = self.tdev.create_signal(0)       # compute timeline
            self.ts = (self.tdev.create_signal(0), self.tdev.create_signal(0))  # timing
        except tg.Error as e:
            raise TegraError(f"{device}: cannot create a queue: {e}", e.status) from e
        self.tl_value = self.tl_done = 0
        self.ts_value = 0
        self.unsignaled = False     # compute work recorded since the last timeline release
        self.copy_q = self.copy_tl = None
        self.copy_value = self.copy_done = 0
        self.compute_waits_copy = 0  # copy timeline value the next compute work must wait for
        self.staging = []           # [buffer, copy timeline value that frees it]
        self.inflight = collections.deque(maxlen=64)  # kernel names since the last sync
        self._faulted = None
        if self.emulated:
            warnings.warn(f"{device} is the emulated Orin ({tg.library_path()}): allocation and "
                          "copies work, tinygrad kernels cannot run there (the emulator knows "
                          "only the library's test kernels) and fail with TegraError",
                          TegraEmulatorWarning, stacklevel=2)
        graph = None if self.emulated or os.environ.get("TEGRA_GRAPH", "1") == "0" else TegraGraph
        allocator = (TegraUnifiedAllocator if self.unified else TegraAllocator)(self)
        super().__init__(device, allocator,
                         [TegraCUDARenderer, TegraPTXRenderer, TegraNVCCRenderer],
                         TegraProgram, graph, arch=f"sm_{info.sm_major}{info.sm_minor}")

    def __repr__(self):
        return f"<TegraDevice {self.device} {self.info.name} {self.arch} spec={self.tdev.spec!r}>"

    # ---- errors

    def _error(self, what, e, kernels=None):
        """A TegraError for the tegragpu.Error ``e`` raised while doing ``what``."""
        status = getattr(e, "status", None)
        msg = f"{self.device}: {what} failed: {type(e).__name__}: {e}"
        if isinstance(e, (tg.DeviceFault, tg.DeviceLost)):
            names = list(kernels if kernels is not None else self.inflight)
            if names:
                if len(names) == 1:
                    msg = f"{self.device}: kernel {names[0]} faulted: {e}"
                else:
                    shown = ", ".join(names[-8:])
                    msg = (f"{self.device}: GPU fault while running the {len(names)} kernels "
                           f"launched since the last synchronization (last: {shown}); "
                           f"{what}: {e} (TEGRA_SYNC=1 names the exact kernel)")
            if self.emulated:
                msg += (". The emulated Orin (TEGRAGPU_DEVICE=emu) runs only libtegragpu's own "
                        "test kernels, not tinygrad's: run tinygrad kernels on a real GPU")
            msg += ". The device refuses new work after a fault: restart the process"
            self._faulted = msg
        return TegraError(msg, status)

    def _raise_status(self, st, what, kernels=None):
        try:
            tg.check(st)
        except tg.Error as e:
            raise self._error(what, e, kernels) from e

    # ---- ordering

    def _fence(self):
        """Release the compute timeline after the work recorded so far; its value."""
        if self.unsignaled:
            self.tl_value += 1
            lib = tg.lib
            st = lib.tg_queue_signal(self.qh, self.tl.handle, self.tl_value)
            if st == 0:
                st = lib.tg_queue_submit(self.qh)
            if st:
                self._raise_status(st, "recording a timeline release")
            self.unsignaled = False
        return self.tl_value

    def _before_compute(self):
        if self.compute_waits_copy:
            st = tg.lib.tg_queue_wait(self.qh, self.copy_tl.handle, self.compute_waits_copy)
            if st:
                self._raise_status(st, "recording a wait for the copy queue")
            self.compute_waits_copy = 0

    def _wait(self, signal, value, what, timeout_ns=None, kernels=None):
        try:
            signal.wait(value, _timeout_ns() if timeout_ns is None else timeout_ns)
        except tg.Error as e:
            raise self._error(what, e, kernels) from e

    def synchronize(self):
        v = self._fence()
        if v > self.tl_done:
            self._wait(self.tl, v, "waiting for the compute queue")
            self.tl_done = v
        if self.copy_value > self.copy_done:
            self._wait(self.copy_tl, self.copy_value, "waiting for the copy queue")
            self.copy_done = self.copy_value
        self.inflight.clear()

    # ---- launches

    def _launch_packed(self, launches, wait, timeout):
        """Record ``(program, parameter block, launch config ref)`` launches and submit them;
        with ``wait``, return their GPU time in seconds."""
        if self._faulted is not None:
            raise TegraError(f"{self.device}: the device faulted earlier: {self._faulted}")
        lib, qh = tg.lib, self.qh
        self._before_compute()
        if wait:
            self.ts_value += 1
            st = lib.tg_queue_signal(qh, self.ts[0].handle, self.ts_value)
            if st:
                self._raise_status(st, "recording the start timestamp")
        launch, submit, inflight, sync_each = lib.tg_launch, lib.tg_queue_submit, \
            self.inflight, self.sync_each
        for k, (prg, pbuf, cfg_ref) in enumerate(launches):
            st = launch(qh, prg.khandle, cfg_ref, pbuf, prg.param_bytes)
            if st:
                self._launch_failed(prg, cfg_ref, st)
            inflight.append(prg.name)
            if sync_each:
                self.unsignaled = True
                v = self._fence()
                self._wait(self.tl, v, f"running kernel {prg.name}", kernels=[prg.name])
                self.tl_done = v
                inflight.clear()
            elif k & 7 == 7:
                submit(qh)  # long batches: let the GPU start on what is recorded
        self.unsignaled = True
        if wait:
            st = lib.tg_queue_signal(qh, self.ts[1].handle, self.ts_value)
            if st == 0:
                st = lib.tg_queue_submit(qh)
            if st:
                self._raise_status(st, "recording the end timestamp")
            tns = None if timeout is None else int(timeout * 1e6)
            self._wait(self.ts[1], self.ts_value, "waiting for a timed launch", tns)
            self.inflight.clear()
            return (self.ts[1].timestamp - self.ts[0].timestamp) * 1e-9
        if not self.sync_each:
            st = lib.tg_queue_submit(qh)
            if st:
                self._raise_status(st, "submitting")
        return None

    def _replay(self, graph, wait):
        """Replay ``graph``'s command buffer (one ``tg_queue_replay`` + submit); with ``wait``,
        return its GPU time in seconds."""
        if self._faulted is not None:
            raise TegraError(f"{self.device}: the device faulted earlier: {self._faulted}")
        lib, qh = tg.lib, self.qh
        self._before_compute()
        if wait:
            self.ts_value += 1
            st = lib.tg_queue_signal(qh, self.ts[0].handle, self.ts_value)
            if st:
                self._raise_status(st, "recording the start timestamp")
        st = lib.tg_queue_replay(qh, graph.cmdbuf.handle)
        if st:
            self._raise_status(st, f"replaying a command buffer of {len(graph.names)} kernels",
                               list(graph.names))
        self.inflight.extend(graph.names)
        self.unsignaled = True
        graph.cb_fence = self._fence()  # submits; tells when the command buffer is idle again
        if wait:
            st = lib.tg_queue_signal(qh, self.ts[1].handle, self.ts_value)
            if st == 0:
                st = lib.tg_queue_submit(qh)
            if st:
                self._raise_status(st, "recording the end timestamp")
            self._wait(self.ts[1], self.ts_value, "waiting for a timed replay",
                       kernels=list(graph.names))
            self.inflight.clear()
            return (self.ts[1].timestamp - self.ts[0].timestamp) * 1e-9
        return None

    def _launch_failed(self, prg, cfg_ref, st):
        cfg = cfg_ref._obj
        try:
            tg.check(st)
        except tg.Error as e:
            raise self._error(
                f"launching kernel {prg.name} (grid {tuple(cfg.grid)}, block {tuple(cfg.block)}, "
                f"{prg.param_bytes} parameter bytes)", e, [prg.name]) from e

    # ---- copies

    def _gpu_copy(self, dest, src, sz):
        """Device-to-device copy on the compute queue (ordered with the launches)."""
        self._before_compute()
        try:
            self.q.copy(dest.region, 0, src.region, 0, sz)
            self.q.submit()
        except tg.Error as e:
            raise self._error(f"copying {sz} bytes on the GPU", e) from e
        self.unsignaled = True
        if self.sync_each:
            self.synchronize()

    def _copy_queue(self):
        if self.copy_q is None:
            try:
                self.copy_q = self.tdev.create_queue(tg.QueueKind.COPY)
                self.copy_tl = self.tdev.create_signal(0)
            except tg.Error as e:
                raise self._error("creating the copy queue", e) from e
        return self.copy_q

    def _stage(self, k, size):
        """Staging buffer ``k`` (pinned host memory of at least ``size`` bytes), free to use."""
        while len(self.staging) <= k:
            self.staging.append([None, 0])
        ent = self.staging[k]
        if ent[1] > self.copy_done:
            self._wait(self.copy_tl, ent[1], "waiting for a staging buffer")
            self.copy_done = max(self.copy_done, ent[1])
        if ent[0] is None or ent[0].size < size:
            if ent[0] is not None:
                ent[0].close()
            try:
                ent[0] = self.tdev.alloc(max(size, 1 << 20), tg.BUF_CPU_CACHED)
            except tg.Error as e:
                raise self._error("allocating a staging buffer", e) from e
        return ent

    def _copy_on_copy_queue(self, dst, dst_off, src, src_off, n, wait_compute):
        cq = self._copy_queue()
        try:
            if wait_compute:
                cq.wait(self.tl, wait_compute)
            cq.copy(dst, dst_off, src, src_off, n)
            self.copy_value += 1
            cq.signal(self.copy_tl, self.copy_value)
            cq.submit()
        except tg.Error as e:
            raise self._error(f"copying {n} bytes on the copy queue", e) from e
        return self.copy_value

    def _staged_copyin(self, dest, src):
        """Host → video memory: CPU into a staging buffer, the copy engine from there. Ordered
        after the kernels recorded so far, and before the ones recorded next; returns without
        waiting (the staging buffers are reused once their copy is done)."""
        n = src.nbytes
        addr, keep = _mv_addr(src)
        fence = self._fence()  # earlier kernels may still read dest
        chunk = min(n, _STAGING_CHUNK)
        for i, off in enumerate(range(0, n, chunk)):
            m = min(chunk, n - off)
            ent = self._stage(i % 2, chunk)
            ctypes.memmove(ent[0].cpu_ptr, addr + off, m)
            ent[1] = self._copy_on_copy_queue(dest.region, off, ent[0], 0, m,
                                              fence if fence > self.tl_done else 0)
        del keep
        self.compute_waits_copy = self.copy_value

    def _staged_copyout(self, dest, src):
        """Video memory → host: the copy engine into a staging buffer after the kernels recorded
        so far, then the CPU from there."""
        n = dest.nbytes
        addr, keep = _mv_addr(dest)
        fence = self._fence()
        chunk = min(n, _STAGING_CHUNK)
        for off in range(0, n, chunk):
            m = min(chunk, n - off)
            ent = self._stage(0, chunk)
            ent[1] = v = self._copy_on_copy_queue(ent[0], 0, src.region, off, m,
                                                  fence if fence > self.tl_done else 0)
            self._wait(self.copy_tl, v, "copying to the host")
            self.copy_done = max(self.copy_done, v)
            ctypes.memmove(addr + off, ent[0].cpu_ptr, m)
        del keep

    def finalize(self):
        try:
            self.synchronize()
        except Exception:
            pass


# --------------------------------------------------------------------------------------------
# Registration

def register():
    """Make ``TEGRA`` a tinygrad device (idempotent; done when this module is imported).
    Returns the ``tinygrad.runtime.ops_tegra`` module object."""
    mod = sys.modules.get(_MODULE_NAME)
    if mod is not None and getattr(mod, "TegraDevice", None) is TegraDevice:
        return mod
    mod = types.ModuleType(_MODULE_NAME, "tinygrad device TEGRA, registered by "
                                         "tegragpu.tinygrad_device (libtegragpu)")
    mod.__file__ = __file__
    for name in ("TegraDevice", "TegraAllocator", "TegraUnifiedAllocator", "TegraProgram",
                 "TegraGraph", "TegraCUDARenderer", "TegraPTXRenderer", "TegraNVCCRenderer",
                 "TegraError"):
        setattr(mod, name, globals()[name])
    sys.modules[_MODULE_NAME] = mod
    setattr(tinygrad.runtime, "ops_tegra", mod)
    if DEVICE_NAME not in _TinyDevice._devices:
        _TinyDevice._devices.append(DEVICE_NAME)
    return mod


register()


# --------------------------------------------------------------------------------------------
# pytest plugin (python -m pytest -p tegragpu.tinygrad_device ...)

def pytest_report_header(config):
    return [f"tegragpu.tinygrad_device: tinygrad {tinygrad_version()} (supported: "
            f"{SUPPORTED_TINYGRAD_VERSION}), libtegragpu {'.'.join(map(str, tg.version()))} "
            f"from {tg.library_path()}, DEV={os.environ.get('DEV', '')!r}, "
            f"TEGRAGPU_DEVICE={os.environ.get('TEGRAGPU_DEVICE', '')!r}"]


# --------------------------------------------------------------------------------------------
# Runner (python -m tegragpu.tinygrad_device script.py args...)

_USAGE = """usage: python -m tegragpu.tinygrad_device --info
       python -m tegragpu.tinygrad_device script.py [args...]
       python -m tegragpu.tinygrad_device -m module [args...]

Registers tinygrad's TEGRA device (libtegragpu), then runs the script (or module) as __main__
with DEV=TEGRA unless DEV is set. --info opens the device, prints what it is and checks a copy.
"""


def _info():
    from tinygrad import Device, Tensor
    import numpy as np
    dev = Device[DEVICE_NAME]
    print(f"tinygrad {tinygrad_version()} (supported {SUPPORTED_TINYGRAD_VERSION}), "
          f"libtegragpu {'.'.join(map(str, tg.version()))} at {tg.library_path()}")
    print(f"{dev.device}: {dev.info}")
    print(f"arch {dev.arch}, unified memory {dev.unified}, renderer "
          f"{type(dev.renderer).__name__}, graph {getattr(dev.graph, '__name__', None)} "
          f"(command buffers: {cmdbuf_supported() and os.environ.get('TEGRA_CMDBUF') != '0'})")
    data = np.arange(16, dtype=np.float32)
    t = Tensor(data, device=DEVICE_NAME).realize()
    ok = bool((t.numpy() == data).all())
    print(f"copy round trip: {'ok' if ok else 'WRONG'}")
    if not dev.emulated:
        out = (t * 2 + 1).numpy()
        ok2 = bool((out == data * 2 + 1).all())
        print(f"kernel: {'ok' if ok2 else 'WRONG'}")
        ok = ok and ok2
    return 0 if ok else 1


def main(argv=None):
    import runpy
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, end="")
        return 0 if argv else 2
    if not os.environ.get("DEV"):
        os.environ["DEV"] = DEVICE_NAME   # for child processes
        DEV.value = DEVICE_NAME
    if argv[0] == "--info":
        return _info()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, end="")
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0

