"""The runner: ``python -m tegragpu.tinygrad_device script.py args...`` (and ``--info``)."""

from __future__ import annotations

import os
import sys

import tegragpu as tg

from ._device import DEVICE_NAME
from ._graph import cmdbuf_supported
from ._tinygrad import DEV, SUPPORTED_TINYGRAD_VERSION, tinygrad_version


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
