"""``Device.register_host`` (``tg_buf_register_host``): the process's own memory mapped for the
GPU at its own addresses (desktop GPUs), or refused with the reason (Jetson, the emulated Orin).
On the device given by ``TEGRAGPU_DEVICE`` (default: the emulated Orin)."""
import os

import numpy as np
import pytest

import tegragpu as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.environ.get("TEGRAGPU_DEVICE") or "emu"


@pytest.fixture(scope="module")
def dev():
    with tg.Device(SPEC) as d:
        yield d


def test_register_host_arguments(dev):
    with pytest.raises(tg.InvalidArgument, match="does not expose its memory"):
        dev.register_host(5)
    with pytest.raises(tg.InvalidArgument, match="writable"):
        dev.register_host(b"read-only bytes")
    with pytest.raises(tg.InvalidArgument, match="not empty"):
        dev.register_host(bytearray())


def test_register_host(dev):
    a = np.arange(3000, dtype=np.uint32)
    if dev.info.backend != tg.Backend.RM:
        with pytest.raises(tg.NotSupported, match="cannot map memory the library did not allocate"):
            dev.register_host(a)
        return
    i = dev.info
    p = os.path.join(ROOT, "tests", "fixtures", "cubin",
                     f"kernels.sm_{i.sm_major}{i.sm_minor}.cubin")
    if not os.path.exists(p):
        pytest.skip(f"no fixture cubin for sm_{i.sm_major}{i.sm_minor}")
    k = dev.load_module_file(p).kernel("fill_u32")
    buf = dev.register_host(a)
    try:
        base = a.ctypes.data
        assert buf.gpu_address == base - base % 4096, "mapped at its own (page) address"
        with dev.create_queue() as q:
            # The kernel writes through the array's own address.
            q.launch(k, 1, 32, (base + 400, 77, 16))
            q.submit()
            q.synchronize()
        want = np.arange(3000, dtype=np.uint32)
        want[100:116] = 77
        assert np.array_equal(a, want)
        with pytest.raises(tg.NotSupported, match="registration"):
            dev.register_host(a[8:16])  # pages the first registration maps
    finally:
        buf.close()
