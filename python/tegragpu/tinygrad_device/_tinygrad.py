"""The parts of tinygrad the device uses, imported in one place: without tinygrad, or with a
tinygrad that lacks one of them, importing tegragpu.tinygrad_device fails with an ImportError
that names the supported version."""

from __future__ import annotations

import os

# What the other modules of the package import from here.
__all__ = ["SUPPORTED_TINYGRAD_VERSION", "tinygrad_version", "tinygrad", "Compiled",
           "LRUAllocator", "MultiBuffer", "_TinyDevice", "dtypes", "ALLOW_TF32", "DEV",
           "CUDARenderer", "NVCCRenderer", "PTXRenderer", "GraphRunner", "MultiGraphRunner",
           "DepsTracker", "Ops", "get_call_arg_uops"]


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
    from tinygrad.device import DepsTracker
    from tinygrad.engine.jit import GraphRunner, MultiGraphRunner
    from tinygrad.engine.realize import get_call_arg_uops
    from tinygrad.uop.ops import Ops
    from tinygrad.dtype import dtypes
    from tinygrad.helpers import ALLOW_TF32, DEV
    from tinygrad.renderer.cstyle import CUDARenderer, NVCCRenderer
    from tinygrad.renderer.ptx import PTXRenderer
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"tegragpu.tinygrad_device needs tinygrad ({_e}); install the supported version: "
        f"pip install tinygrad=={SUPPORTED_TINYGRAD_VERSION}") from _e


def tinygrad_version():
    """The installed tinygrad's version string (None when it cannot be told)."""
    try:
        from importlib.metadata import version
        return version("tinygrad")
    except Exception:
        return getattr(tinygrad, "__version__", None)
