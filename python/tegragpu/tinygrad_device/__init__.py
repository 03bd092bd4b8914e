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
* Several GPUs (``TEGRA:N``): copies between two of them are peer copies on the source GPU's
  copy engine, ordered with both devices' work by GPU waits on each other's timelines (peer
  access enabled per pair on first use); without a peer path, through host memory.
* TinyJit: ``TegraGraph`` (a ``MultiGraphRunner``) records the captured kernels into libtegragpu
  command buffers (``tg_cmdbuf``) and replays each with one ``tg_queue_replay``; batches with
  copies or several devices are replayed step by step per queue, with GPU waits between the
  queues; with a library without command buffers it re-launches the kernels from prepacked
  parameter blocks.
* Errors of the library become :class:`TegraError` (a ``RuntimeError``) naming the kernel,
  with the :class:`tegragpu.Error` as ``__cause__``, never a wrong result. The emulated Orin
  runs only the library's known test kernels: a tinygrad kernel launched there faults, and
  the error says so (launches on the emulator are synchronized one by one for that reason).

Environment: ``TEGRAGPU_DEVICE`` (which device), ``TEGRA_GRAPH=0`` (no TinyJit graph),
``TEGRA_CMDBUF=0`` (the graph without command buffers),
``TEGRA_SYNC=1`` (wait after every launch: exact fault attribution), ``TEGRA_TIMEOUT_S``
(GPU wait limit, default 300), ``TEGRAGPU_NVRTC`` (used as tinygrad's ``NVRTC_PATH`` when that
is unset), ``TEGRA_STAGED_COPIES=1`` (the desktop copy path on unified memory too; for tests),
``TEGRA_PEER=0`` (copies between GPUs through the host), ``TEGRA_PEER_COPY=ce`` (copies between
GPUs on the copy engine; default ``sm``: on the SMs), ``TEGRA_MULTIGRAPH=0`` (TinyJit batches of one device's kernels only).
"""

from __future__ import annotations

import os
import sys
import types
import warnings

import tegragpu as tg

# The modules of the package hold the code by subject (_tinygrad: the parts of tinygrad used,
# _renderer, _allocator, _program, _graph, _peer, _device, _runner: python -m
# tegragpu.tinygrad_device);
# the names are used from here.
from . import _allocator, _graph, _renderer
from ._allocator import TegraAllocator, TegraUnifiedAllocator
from ._device import DEVICE_NAME, TegraDevice
from ._errors import TegraEmulatorWarning, TegraError
from ._graph import TegraGraph
from ._program import TegraProgram
from ._runner import main
from ._tinygrad import SUPPORTED_TINYGRAD_VERSION, _TinyDevice, tinygrad, tinygrad_version

__all__ = ["TegraDevice", "TegraAllocator", "TegraUnifiedAllocator", "TegraProgram",
           "TegraGraph", "TegraError", "TegraEmulatorWarning", "register", "tinygrad_version",
           "SUPPORTED_TINYGRAD_VERSION", "DEVICE_NAME", "main"]

# Public too, though not in __all__.
TegraCUDARenderer = _renderer.TegraCUDARenderer
TegraNVCCRenderer = _renderer.TegraNVCCRenderer
TegraPTXRenderer = _renderer.TegraPTXRenderer
TegraMemory = _allocator.TegraMemory
cmdbuf_supported = _graph.cmdbuf_supported
set_launch_supported = _graph.set_launch_supported

_MODULE_NAME = "tinygrad.runtime.ops_tegra"

if tinygrad_version() not in (SUPPORTED_TINYGRAD_VERSION, None) and \
        os.environ.get("TEGRA_ANY_TINYGRAD") != "1":
    warnings.warn(f"tegragpu.tinygrad_device supports tinygrad {SUPPORTED_TINYGRAD_VERSION}; "
                  f"tinygrad {tinygrad_version()} is installed (TEGRA_ANY_TINYGRAD=1 silences "
                  "this)", RuntimeWarning, stacklevel=2)

# The classes and functions name "tegragpu.tinygrad_device" as their module, the path they are
# imported from (tracebacks, reprs and pickles, e.g. of the renderers sent to tinygrad's compile
# worker processes).
for _obj in list(globals().values()):
    if isinstance(_obj, (type, types.FunctionType)) and \
            _obj.__module__.startswith(__name__ + "._"):
        _obj.__module__ = __name__
del _obj


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
