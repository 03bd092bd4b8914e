"""tegragpu.cuda_interop (CUDA device pointers imported as buffers) and tinygrad's
``Tensor.from_blob`` on TEGRA, against a stand-in libcuda.so.1 built here: a small C library that
answers the driver calls the module makes from a table of "allocations", each exported as an
emulated-Orin dma-buf. The real thing runs on the device machine
(scripts/interop-device-run.sh). Each case runs in a child process, so that the stand-in
libcuda never stays loaded in the test process."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

FAKE_LIBCUDA = r"""
#include <stdint.h>
#include <string.h>
#include <stddef.h>
typedef unsigned long long u64;
typedef int (*exporter)(u64 handle);
static struct { u64 base, size, handle; int types; } A[16];
static int nA, ctx;
static exporter g_export;
void fake_add(u64 base, u64 size, u64 handle, int types) {
    A[nA].base = base; A[nA].size = size; A[nA].handle = handle; A[nA].types = types; nA++;
}
void fake_set_exporter(exporter e) { g_export = e; }
static int find(u64 p) {
    for (int i = 0; i < nA; i++) if (p >= A[i].base && p < A[i].base + A[i].size) return i;
    return -1;
}
int cuGetErrorName(int r, const char **s) {
    *s = r == 1 ? "CUDA_ERROR_INVALID_VALUE" : r == 801 ? "CUDA_ERROR_NOT_SUPPORTED" : "?";
    return 0;
}
int cuPointerGetAttribute(void *data, int attr, u64 ptr) {
    if (find(ptr) < 0) return 1;
    if (attr == 2) { *(unsigned *)data = 2; return 0; }
    if (attr == 1) { *(void **)data = &ctx; return 0; }
    return 1;
}
int cuCtxPushCurrent_v2(void *c) { (void)c; return 0; }
int cuCtxPopCurrent_v2(void **c) { *c = &ctx; return 0; }
int cuMemRetainAllocationHandle(u64 *h, void *addr) {
    int i = find((u64)(uintptr_t)addr);
    if (i < 0 || !A[i].handle) return 1;
    *h = A[i].handle; return 0;
}
int cuMemRelease(u64 h) { (void)h; return 0; }
int cuMemGetAllocationPropertiesFromHandle(void *prop, u64 h) {
    for (int i = 0; i < nA; i++) if (A[i].handle == h) {
        memset(prop, 0, 32); ((int *)prop)[1] = A[i].types; return 0;
    }
    return 1;
}
int cuMemGetAllocationGranularity(size_t *g, const void *prop, int opt) {
    (void)prop; (void)opt; *g = 2u << 20; return 0;
}
int cuMemExportToShareableHandle(void *out, u64 h, int type, u64 flags) {
    (void)flags;
    for (int i = 0; i < nA; i++) if (A[i].handle == h) {
        if (type != 1 || !(A[i].types & 1)) return 801;
        *(int *)out = g_export(h); return 0;
    }
    return 1;
}
"""

PRELUDE = r"""
import ctypes, os, sys
fake = ctypes.CDLL(sys.argv[1], mode=os.RTLD_GLOBAL)
import tegragpu as tg
from tegragpu import cuda_interop
G = 2 << 20
dev = tg.Device("emu")
bufs = {}
EXPORT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64)
@EXPORT
def export(handle):
    return bufs[handle].export_fd()[0]
fake.fake_set_exporter(export)
base = 0x7f0000000000
def add(addr, size, handle, types, buf=None):
    fake.fake_add(ctypes.c_uint64(addr), ctypes.c_uint64(size), ctypes.c_uint64(handle), types)
    if buf is not None:
        bufs[handle] = buf
"""


def _cc():
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    cc = _cc()
    if not cc:
        if os.environ.get("TEGRAGPU_REQUIRE_CC") == "1":
            pytest.fail("no C compiler for the stand-in libcuda")
        pytest.skip("no C compiler for the stand-in libcuda")
    d = tmp_path_factory.mktemp("fakecuda")
    src = d / "fake_libcuda.c"
    src.write_text(FAKE_LIBCUDA)
    lib = d / "libcuda.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o", str(lib),
                    str(src)], check=True)
    return str(lib)


def _child_env():
    """The child finds the package this test imports (pytest may have put it on sys.path only
    for this process) and opens the emulated Orin."""
    import tegragpu
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(tegragpu.__file__)))
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, TEGRAGPU_DEVICE="emu",
                PYTHONPATH=pkg_root + (os.pathsep + path if path else ""))


def _run(lib, body):
    code = PRELUDE + textwrap.dedent(body)
    r = subprocess.run([sys.executable, "-c", code, lib], capture_output=True, text=True,
                       timeout=120, env=_child_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_cuda_pointer_imports_the_allocation_that_holds_it(fake_libcuda):
    out = _run(fake_libcuda, """
        a, b = dev.alloc(2 * G), dev.alloc(G)
        add(base, 2 * G, 11, 1, a)           # one handle over two granules
        add(base + 2 * G, G, 12, 1, b)       # the next handle, right after it
        a.write(b"A" * 16, G + 100)
        b.write(b"B" * 16, 200)
        v = cuda_interop.import_cuda_pointer(dev, base + G + 100, 16)
        assert (v.offset, v.size, v.read()) == (G + 100, 16, b"A" * 16), (v.offset, v.size)
        assert v.buffer.size == 2 * G
        v2 = cuda_interop.import_cuda_pointer(dev, base + 2 * G + 200, 16)
        assert (v2.offset, v2.read()) == (200, b"B" * 16), v2.offset
        # The import is the same memory: a write through it shows in the exporter's view.
        v.write(b"Z" * 4)
        assert a.read(4, G + 100) == b"ZZZZ"
        print("ok")
    """)
    assert out.strip() == "ok"


def test_what_is_not_cuda_memory_or_cannot_be_shared(fake_libcuda):
    out = _run(fake_libcuda, """
        add(base, G, 21, 1, dev.alloc(G))
        add(base + G, G, 22, 0)              # made without POSIX_FILE_DESCRIPTOR
        add(base + 8 * G, G, 0, 0)           # not cuMemCreate memory (cudaMalloc)
        assert cuda_interop.import_cuda_pointer(dev, 0x1000, 16) is None
        for p, words in [(base + G, "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"),
                         (base + 8 * G, "expandable_segments")]:
            try:
                cuda_interop.import_cuda_pointer(dev, p, 16)
            except tg.NotSupported as e:
                assert words in str(e), str(e)
            else:
                raise SystemExit(f"no error for {p:#x}")
        try:
            cuda_interop.import_cuda_pointer(dev, base + G - 8, 16)
        except tg.InvalidArgument as e:
            assert "runs past" in str(e), str(e)
        else:
            raise SystemExit("no error for a range past the allocation")
        print("ok")
    """)
    assert out.strip() == "ok"


def test_without_libcuda_nothing_is_cuda_memory():
    code = "from tegragpu import cuda_interop as c\nprint(c.cuda_pointer_export(0x7f0000000000))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=_child_env())
    assert r.returncode == 0 and r.stdout.strip() == "None", r.stdout + r.stderr


def test_tinygrad_from_blob_of_a_cuda_pointer_reads_the_shared_memory(fake_libcuda):
    pytest.importorskip("tinygrad")
    out = _run(fake_libcuda, """
        import numpy as np
        import tegragpu.tinygrad_device
        from tinygrad import Device, Tensor, dtypes
        # The exporter must be TEGRA's own emulated device (an emulated kernel knows its own
        # dma-bufs only).
        a = Device["TEGRA"].tdev.alloc(G)
        add(base, G, 31, 1, a)
        a.write(np.arange(12, dtype=np.float32).tobytes(), 4096)
        t = Tensor.from_blob(base + 4096, (3, 4), dtype=dtypes.float32, device="TEGRA")
        np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
        print("ok")
    """)
    assert out.strip() == "ok"
