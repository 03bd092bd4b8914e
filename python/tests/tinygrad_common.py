"""Shared setup of the tinygrad device tests (test_tinygrad_device.py, test_tinygrad_multi.py):
the tinygrad import (a skip without it), the device fixture `dev`, buffer copy-in, the fixture
kernels and the stand-ins for tinygrad's program objects that the graph tests build.
"""
import os
import warnings

import pytest

if os.environ.get("TEGRAGPU_REQUIRE_TINYGRAD") == "1":
    import tinygrad  # noqa: F401  (CI: a missing tinygrad is a failure, not a skip)
else:
    tinygrad = pytest.importorskip(
        "tinygrad", reason="tinygrad is not installed (pip install tinygrad==0.14.0)")

SPEC = os.environ.get("TEGRAGPU_DEVICE") or "emu"
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import tegragpu.tinygrad_device as td  # noqa: E402,F401

from tinygrad import Device  # noqa: E402
from tinygrad.device import TinyELF  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "python")



@pytest.fixture(scope="module")
def dev():
    # TEGRA opens the default device (TEGRAGPU_DEVICE): the emulated Orin unless set. The
    # variable is set only while the device opens (tinygrad keeps the device open).
    old = os.environ.get("TEGRAGPU_DEVICE")
    os.environ["TEGRAGPU_DEVICE"] = SPEC
    try:
        return Device["TEGRA"]
    finally:
        if old is None:
            del os.environ["TEGRAGPU_DEVICE"]


def copyin(buf, data):
    """Buffer-level copy-in (the allocator's _copyin, as tinygrad calls it)."""
    buf.allocator._copyin(buf._buf, memoryview(data))


def _fixture_cubin(dev):
    i = dev.info
    p = os.path.join(ROOT, "tests", "fixtures", "cubin",
                     f"kernels.sm_{i.sm_major}{i.sm_minor}.cubin")
    if not os.path.exists(p):
        pytest.skip(f"no fixture cubin for sm_{i.sm_major}{i.sm_minor}")
    with open(p, "rb") as f:
        return f.read()


def _elf(lib, name, sig):
    return TinyELF(lib, name, None, tuple((f"p{i}", i, dt, ()) for i, dt in enumerate(sig)))


class _FakeVar:
    def __init__(self, expr):
        self.expr = expr


class _FakeInfo:
    def __init__(self, gs, ls, vars_):
        self.gs, self.ls, self.vars = gs, ls, vars_

    def launch_dims(self, var_vals):
        return self.gs, self.ls


class _FakeAst:
    def __init__(self, info):
        self.arg, self.op = info, "PROGRAM"


class _FakeUop:
    def __init__(self, buffer):
        self.buffer = buffer
