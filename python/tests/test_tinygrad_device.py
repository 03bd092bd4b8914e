"""Tests of the tinygrad device TEGRA (the package tegragpu/tinygrad_device/), on the emulated
Orin unless TEGRAGPU_DEVICE names another device.

Needs tinygrad 0.14.0 (pip install tinygrad==0.14.0); skipped without it. On the emulated Orin
tinygrad's own kernels cannot run (the emulator knows only the library's fixture kernels), so
these tests check registration, allocation, every copy path, the launch path with a fixture
kernel the emulator knows, and that a tinygrad kernel fails with a clear error (in a separate
process: the device refuses work after that fault). Where libnvrtc is needed (tinygrad's
compiler), TEGRAGPU_NVRTC or NVRTC_PATH must name it; without it the error test still expects
a clear TegraError naming the kernel.
"""
import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tinygrad_common import (  # noqa: F401  (dev is a fixture)
    PYDIR, SPEC, _FakeAst, _FakeInfo, _FakeUop, _FakeVar, _elf, _fixture_cubin, copyin, dev, td)

import tegragpu as tg  # noqa: E402
from tinygrad import Device, Tensor, dtypes  # noqa: E402
from tinygrad.device import Buffer, BufferSpec  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::tegragpu.tinygrad_device.TegraEmulatorWarning")


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    env["TEGRAGPU_DEVICE"] = SPEC
    env.update(extra)
    return env


def _run(args, timeout=240, **extra):
    return subprocess.run([sys.executable] + args, env=_env(**extra), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)


def test_supported_version_is_pinned():
    assert td.SUPPORTED_TINYGRAD_VERSION == "0.14.0"
    if td.tinygrad_version() != td.SUPPORTED_TINYGRAD_VERSION:
        pytest.skip(f"tinygrad {td.tinygrad_version()} installed; the device supports 0.14.0")


def test_registers(dev):
    mod = sys.modules["tinygrad.runtime.ops_tegra"]
    assert mod.TegraDevice is td.TegraDevice
    assert Device.get_class("TEGRA") is td.TegraDevice
    assert isinstance(dev, td.TegraDevice) and dev.device == "TEGRA"
    assert td.register() is mod  # idempotent
    i = dev.info
    assert dev.arch == f"sm_{i.sm_major}{i.sm_minor}"
    if i.emulated:
        assert dev.arch == "sm_87" and dev.unified and dev.graph is None
        assert isinstance(dev.allocator, td.TegraUnifiedAllocator)


TD_ALL = {"TegraDevice", "TegraAllocator", "TegraUnifiedAllocator", "TegraProgram", "TegraGraph",
          "TegraError", "TegraEmulatorWarning", "register", "tinygrad_version",
          "SUPPORTED_TINYGRAD_VERSION", "DEVICE_NAME", "main"}
TD_NOT_IN_ALL = {"TegraCUDARenderer", "TegraNVCCRenderer", "TegraPTXRenderer", "TegraMemory",
                 "cmdbuf_supported", "set_launch_supported", "pytest_report_header", "tg"}


def test_public_names():
    import pickle
    assert set(td.__all__) == TD_ALL and len(td.__all__) == len(TD_ALL)
    for name in TD_ALL | TD_NOT_IN_ALL:
        assert hasattr(td, name), name
    import types
    extra = {n for n in dir(td) if not n.startswith("_")} - TD_ALL - TD_NOT_IN_ALL - {"annotations"}
    assert all(isinstance(getattr(td, n), types.ModuleType) for n in extra), extra  # imports
    assert td.tg is tg
    # The package's classes and functions name it as their module (its private modules hold
    # them); tinygrad pickles the renderers into its compile worker processes.
    for name in TD_ALL | TD_NOT_IN_ALL:
        obj = getattr(td, name)
        if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__code__")):
            assert obj.__module__ == "tegragpu.tinygrad_device", (name, obj.__module__)
    for cls in (td.TegraCUDARenderer, td.TegraPTXRenderer, td.TegraNVCCRenderer, td.TegraError):
        assert pickle.loads(pickle.dumps(cls)) is cls
    e = pickle.loads(pickle.dumps(td.TegraError("TEGRA: x")))
    assert type(e) is td.TegraError and str(e) == "TEGRA: x"


def test_tensor_round_trip(dev):
    assert Tensor([1, 2, 3], device="TEGRA").numpy().tolist() == [1, 2, 3]
    x = np.random.default_rng(0).standard_normal((37, 129)).astype(np.float32)
    t = Tensor(x, device="TEGRA").realize()
    assert t.device == "TEGRA"
    np.testing.assert_array_equal(t.numpy(), x)
    for dt in (np.int8, np.uint16, np.int64, np.float16):
        y = (np.arange(1000) % 97).astype(dt)
        np.testing.assert_array_equal(Tensor(y, device="TEGRA").numpy(), y)


def test_buffer_copyin_copyout_and_views(dev):
    b = Buffer("TEGRA", 64, dtypes.float32).ensure_allocated()
    assert isinstance(b._buf, td.TegraMemory) and b._buf.size == 256
    data = np.arange(64, dtype=np.float32)
    copyin(b, data.tobytes())  # read-only memoryview
    np.testing.assert_array_equal(b.numpy(), data)
    v = b.view(8, dtypes.float32, 16 * 4).ensure_allocated()
    assert v._buf.va == b._buf.va + 64 and v._buf.offset == 64
    np.testing.assert_array_equal(v.numpy(), data[16:24])
    copyin(v, bytearray(np.full(8, -1, np.float32).tobytes()))
    out = b.numpy()
    assert (out[16:24] == -1).all() and (out[:16] == data[:16]).all() and \
        (out[24:] == data[24:]).all()
    # a view of a view
    vv = Buffer("TEGRA", 2, dtypes.float32, base=b, offset=20 * 4).ensure_allocated()
    np.testing.assert_array_equal(vv.numpy(), [-1, -1])


def test_host_and_zeroed_buffers(dev):
    h = Buffer("TEGRA", 16, dtypes.int32, options=BufferSpec(host=True)).ensure_allocated()
    assert h._buf.host and (h._buf.base.flags & tg.BUF_CPU_CACHED)
    copyin(h, bytearray(np.arange(16, dtype=np.int32).tobytes()))
    np.testing.assert_array_equal(h.numpy(), np.arange(16))
    z = Buffer("TEGRA", 1000, dtypes.uint8, options=BufferSpec(zero=True)).ensure_allocated()
    assert not z.numpy().any()


def test_staged_copies_through_the_copy_queue(dev, monkeypatch):
    # The desktop-GPU path (pinned staging buffers + tg_queue_copy on the copy queue), run on
    # this device with a small chunk size: several chunks, both staging buffers.
    monkeypatch.setattr(td._device, "_STAGING_CHUNK", 4096)
    n = 5 * 4096 + 123
    mem = dev.allocator.alloc(n)
    try:
        src = np.random.default_rng(1).integers(0, 255, n, dtype=np.uint8)
        dev._staged_copyin(mem, memoryview(src.tobytes()))
        out = bytearray(n)
        dev._staged_copyout(memoryview(out), mem)
        assert bytes(out) == src.tobytes()
        view = dev.allocator._offset(mem, 1000, 4000)
        back = bytearray(1000)
        dev._staged_copyout(memoryview(back), view)
        assert bytes(back) == src.tobytes()[4000:5000]
        dev.synchronize()
        assert dev.copy_done == dev.copy_value > 0
    finally:
        dev.allocator.free(mem, n)


def test_transfer_on_the_gpu(dev):
    a = Buffer("TEGRA", 300, dtypes.int32).ensure_allocated()
    b = Buffer("TEGRA", 300, dtypes.int32).ensure_allocated()
    copyin(a, bytearray(np.arange(300, dtype=np.int32).tobytes()))
    dev.allocator._transfer(b._buf, a._buf, 1200, src_dev=dev, dest_dev=dev)
    np.testing.assert_array_equal(b.numpy(), np.arange(300))
    # through tinygrad: a copy TEGRA -> TEGRA
    t = Tensor(np.arange(10, dtype=np.float32), device="TEGRA").realize()
    np.testing.assert_array_equal(t.to("TEGRA").contiguous().numpy(), np.arange(10))


def test_program_launch_with_a_fixture_kernel(dev):
    # A kernel the emulator knows, launched through TegraProgram exactly as tinygrad launches
    # its kernels: buffers first, then values, grid = global_size, block = local_size.
    lib = _fixture_cubin(dev)
    f32 = dtypes.float32
    prg = td.TegraProgram(dev, _elf(lib, "vector_add", [f32, f32, f32, dtypes.uint32]))
    assert prg.params == [(0, 8), (8, 8), (16, 8), (24, 4)]
    n = 1000
    a, b, c = (Buffer("TEGRA", n, dtypes.float32).ensure_allocated() for _ in range(3))
    copyin(a, bytearray(np.arange(n, dtype=np.float32).tobytes()))
    # through tinygrad's copy path (PYTHON -> TEGRA)
    b.copy_from(Buffer("PYTHON", n, dtypes.float32,
                       initial_value=np.full(n, 0.5, np.float32).tobytes()))
    # the packed block equals what tegragpu.Kernel.pack makes
    prg.pack_into(prg.pbuf, [a._buf.va, b._buf.va, c._buf.va], (n,))
    assert bytes(prg.pbuf) == prg.kernel.pack(
        (a._buf.region, b._buf.region, c._buf.region, np.uint32(n)))
    assert prg(a._buf, b._buf, c._buf, global_size=((n + 127) // 128, 1, 1),
               local_size=(128, 1, 1), vals=(n,)) is None
    np.testing.assert_array_equal(c.numpy(), np.arange(n, dtype=np.float32) + 0.5)
    et = prg(c._buf, b._buf, a._buf, global_size=((n + 127) // 128, 1, 1),
             local_size=(128, 1, 1), vals=(n,), wait=True)
    assert isinstance(et, float) and 0 < et < 10
    np.testing.assert_array_equal(a.numpy(), np.arange(n, dtype=np.float32) + 1.0)
    # views are passed at their offset
    prg(a.view(500, dtypes.float32, 0).ensure_allocated()._buf,
        b.view(500, dtypes.float32, 0).ensure_allocated()._buf,
        c.view(500, dtypes.float32, 2000).ensure_allocated()._buf,
        global_size=(4, 1, 1), local_size=(128, 1, 1), vals=(500,))
    out = c.numpy()
    np.testing.assert_array_equal(out[500:], np.arange(500, dtype=np.float32) + 1.5)


def test_program_errors_are_clear(dev):
    lib = _fixture_cubin(dev)
    with pytest.raises(td.TegraError, match="no_such_kernel"):
        td.TegraProgram(dev, _elf(lib, "no_such_kernel", []))
    u32 = dtypes.uint32
    prg = td.TegraProgram(dev, _elf(lib, "fill_u32", [u32, u32, u32]))
    buf = Buffer("TEGRA", 16, dtypes.uint32).ensure_allocated()
    with pytest.raises(td.TegraError, match="fill_u32 takes 3 parameters"):
        prg(buf._buf, vals=(1,))
    with pytest.raises(td.TegraError, match=r"launching kernel fill_u32 .*InvalidLaunch"):
        prg(buf._buf, global_size=(1, 1, 1), local_size=(2048, 1, 1), vals=(7, 16))
    prg(buf._buf, global_size=(1, 1, 1), local_size=(32, 1, 1), vals=(7, 16))
    assert buf.numpy().tolist() == [7] * 16


def test_index_out_of_range_is_a_clear_error(dev):
    if SPEC != "emu":
        pytest.skip("checks the emulated Orin's single device")
    with pytest.raises(td.TegraError, match="TEGRA:1: cannot open"):
        Device["TEGRA:1"]


def test_no_tf32_tensor_cores(dev):
    from tinygrad.helpers import Context
    ren = dev.renderer
    assert isinstance(ren, (td.TegraCUDARenderer, td.TegraPTXRenderer))
    assert all(tc.dtype_in != dtypes.float for tc in ren.tensor_cores)
    with Context(ALLOW_TF32=1):
        with_tf32 = list(ren.tensor_cores)
    assert len(with_tf32) >= len(ren.tensor_cores)
    if int(dev.arch[3:]) >= 80 and isinstance(ren, td.TegraCUDARenderer):
        assert any(tc.dtype_in == dtypes.float for tc in with_tf32)


_KERNEL_SCRIPT = """
import warnings
warnings.simplefilter("ignore")
import tegragpu.tinygrad_device as td
from tinygrad import Tensor, Device
t = Tensor([1, 2, 3], device="TEGRA")
try:
    out = (t + 1).numpy()
    print("RESULT", out.tolist())
except td.TegraError as e:
    print("ERROR1", e)
try:
    print("RESULT2", (t * 3).numpy().tolist())
except td.TegraError as e:
    print("ERROR2", e)
"""


def test_tinygrad_kernel_fails_clearly_on_the_emulator():
    if SPEC != "emu":
        pytest.skip("the emulated Orin only")
    r = _run(["-c", _KERNEL_SCRIPT], DEV="TEGRA")
    assert "RESULT" not in r.stdout, r.stdout
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("ERROR")]
    assert len(lines) == 2, r.stdout
    # named kernel, e.g. "TEGRA: kernel E_3 faulted: ..." (or, without libnvrtc/PTX JIT,
    # "TEGRA: loading kernel E_3 failed: LibraryMissing: ...")
    assert "kernel E_" in lines[0], lines[0]
    if "faulted" in lines[0]:
        assert "emulated Orin" in lines[0] and "no reference kernel" in lines[0], lines[0]
        assert "faulted earlier" in lines[1], lines[1]


def test_runner_info_and_script(tmp_path):
    r = _run(["-m", "tegragpu.tinygrad_device", "--info"])
    assert r.returncode == 0 and "copy round trip: ok" in r.stdout, r.stdout
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""
        import sys
        from tinygrad import Device, Tensor
        print("DEFAULT", Device.DEFAULT, sys.argv[1:], __name__)
        print("DATA", Tensor([4, 5]).numpy().tolist())
    """))
    r = _run(["-m", "tegragpu.tinygrad_device", str(script), "a", "b"], DEV="")
    assert r.returncode == 0, r.stdout
    assert "DEFAULT TEGRA ['a', 'b'] __main__" in r.stdout and "DATA [4, 5]" in r.stdout, r.stdout


def test_pytest_plugin(tmp_path):
    (tmp_path / "test_inner.py").write_text(textwrap.dedent("""
        from tinygrad import Device, Tensor
        def test_default():
            assert Device.DEFAULT == "TEGRA"
            assert type(Device[Device.DEFAULT]).__name__ == "TegraDevice"
            assert Tensor([7, 8]).numpy().tolist() == [7, 8]
    """))
    r = _run(["-m", "pytest", "-q", "-p", "tegragpu.tinygrad_device", "-p", "no:cacheprovider",
              str(tmp_path / "test_inner.py")], DEV="TEGRA")
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout


@pytest.mark.parametrize("sync_each,cmdbuf", [(True, "1"), (False, "0"), (False, "1")],
                         ids=["sync-each", "batched", "cmdbuf"])
def test_graph_replay_with_fixture_kernels(dev, monkeypatch, sync_each, cmdbuf):
    # TegraGraph's packing and replay (what TinyJit runs on real GPUs), with the state tinygrad's
    # GraphRunner would set up, for two launches of a kernel the emulator knows: c = a + b,
    # then a2 = c + b; input 0 replaces c's buffer, variable "n" the element count. Batched:
    # as on real GPUs (the emulated device otherwise waits after every launch); cmdbuf: replayed
    # from a libtegragpu command buffer (when the library has them).
    monkeypatch.setattr(dev, "sync_each", sync_each)
    monkeypatch.setenv("TEGRA_CMDBUF", cmdbuf)
    lib = _fixture_cubin(dev)
    f32 = dtypes.float32
    prg = td.TegraProgram(dev, _elf(lib, "vector_add", [f32, f32, f32, dtypes.uint32]))
    n = 1000
    bufs = [Buffer("TEGRA", n, f32).ensure_allocated() for _ in range(5)]
    a, b, c, a2, c_alt = bufs
    copyin(a, bytearray(np.arange(n, dtype=np.float32).tobytes()))
    copyin(b, bytearray(np.full(n, 2.0, np.float32).tobytes()))
    info = _FakeInfo((8, 1, 1), (128, 1, 1), (_FakeVar("n"),))
    g = object.__new__(td.TegraGraph)
    g.calls = [(0, _FakeAst(info), [a, b, c], {}), (0, _FakeAst(info), [c, b, a2], {})]
    g.runtimes = [prg, prg]
    g.uop_replace = [[(2, 0)], [(0, 0)]]
    g.vars = ["n"]
    g.var_vals_replace = {0: [(0, 0)], 1: [(0, 0)]}
    g.launch_dims_replace, g.launch_dims_base, g.symbolic_dims = {}, {}, []
    g._build()
    assert g.dev is dev and len(g.launches) == 2 and g.updatable == [0, 1]
    use_cb = cmdbuf == "1" and not sync_each and td.cmdbuf_supported()
    assert (g.cmdbuf is not None) == use_cb, g.cmdbuf_note
    assert g((_FakeUop(c),), {"n": n}) is None
    np.testing.assert_array_equal(a2.numpy(), np.arange(n, dtype=np.float32) + 4.0)
    # replay with another buffer for input 0 and a smaller n, timed
    copyin(a2, bytearray(np.zeros(n, np.float32).tobytes()))
    et = g((_FakeUop(c_alt),), {"n": 500}, wait=True)
    assert isinstance(et, float) and et > 0
    out = a2.numpy()
    np.testing.assert_array_equal(out[:500], np.arange(500, dtype=np.float32) + 4.0)
    assert not out[500:].any()
    np.testing.assert_array_equal(c_alt.numpy()[:500], np.arange(500, dtype=np.float32) + 2.0)
    # back-to-back replays with changing inputs, no synchronization in between (a command
    # buffer still in use is not updated: that replay launches directly), then unchanged ones
    for k in range(6):
        g((_FakeUop(c if k % 2 else c_alt),), {"n": n})
    for k in range(3):
        g((_FakeUop(c),), {"n": n})
    dev.synchronize()
    np.testing.assert_array_equal(a2.numpy(), np.arange(n, dtype=np.float32) + 4.0)
    np.testing.assert_array_equal(c_alt.numpy(), np.arange(n, dtype=np.float32) + 2.0)


@pytest.mark.parametrize("cmdbuf", ["0", "1"], ids=["direct", "cmdbuf"])
def test_graph_replay_with_symbolic_launch_dims(dev, monkeypatch, cmdbuf):
    # A batch whose grid depends on a variable (as TinyJit's symbolic shapes do): with a command
    # buffer the replay sets the new grid with tg_cmdbuf_set_launch; fill_u32 writes the first
    # blocks * 64 elements, so the result shows which grid ran.
    monkeypatch.setattr(dev, "sync_each", False)
    monkeypatch.setenv("TEGRA_CMDBUF", cmdbuf)
    lib = _fixture_cubin(dev)
    u32 = dtypes.uint32
    prg = td.TegraProgram(dev, _elf(lib, "fill_u32", [u32, u32, u32]))
    n = 16 * 64
    buf = Buffer("TEGRA", n, u32).ensure_allocated()
    info = _FakeInfo((1, 1, 1), (64, 1, 1), (_FakeVar("val"), _FakeVar("n")))
    g = object.__new__(td.TegraGraph)
    g.calls = [(0, _FakeAst(info), [buf], {})]
    g.runtimes = [prg]
    g.uop_replace = [[]]
    g.vars = ["val", "n"]
    g.var_vals_replace = {0: [(0, 0), (1, 1)]}
    g.launch_dims_replace, g.launch_dims_base = {0: (0, None)}, {0: ((1, 1, 1), (64, 1, 1))}
    g.symbolic_dims = []
    g.updated_launch_dims = lambda var_vals: iter([(0, (var_vals["blocks"], 1, 1), (64, 1, 1))])
    g._build()
    use_cb = cmdbuf == "1" and td.set_launch_supported()
    assert (g.cmdbuf is not None) == use_cb, g.cmdbuf_note
    for blocks in (1, 3, 16, 2, 2, 7):
        copyin(buf, bytearray(np.zeros(n, np.uint32).tobytes()))
        assert g((), {"val": 100 + blocks, "n": n, "blocks": blocks}) is None
        dev.synchronize()
        out = buf.numpy()
        assert (out[:64 * blocks] == 100 + blocks).all() and not out[64 * blocks:].any(), blocks
    if use_cb:
        assert g.cb_dims[0] == ((7, 1, 1), (64, 1, 1))


def test_long_batch_of_launches(dev, monkeypatch):
    # 20 launches recorded in one batch (submitted every 8 on the way), then one synchronize.
    monkeypatch.setattr(dev, "sync_each", False)
    lib = _fixture_cubin(dev)
    u32 = dtypes.uint32
    prg = td.TegraProgram(dev, _elf(lib, "fill_u32", [u32, u32, u32]))
    buf = Buffer("TEGRA", 20 * 64, u32).ensure_allocated()
    launches = []
    for k in range(20):
        pbuf = (ctypes.c_ubyte * prg.param_bytes)()
        cfg = td.tg.CLaunchConfig(struct_size=ctypes.sizeof(td.tg.CLaunchConfig))
        td.TegraProgram.set_dims(cfg, (1, 1, 1), (64, 1, 1))
        prg.pack_into(pbuf, [buf._buf.va + 256 * k], (k + 1, 64))
        launches.append((prg, pbuf, ctypes.byref(cfg), cfg))
    assert dev._launch_packed([x[:3] for x in launches], False, None) is None
    dev.synchronize()
    assert buf.numpy().reshape(20, 64).tolist() == [[k + 1] * 64 for k in range(20)]


_STAGED_SCRIPT = """
import warnings
warnings.simplefilter("ignore")
import numpy as np
import tegragpu.tinygrad_device as td
from tinygrad import Tensor, Device, dtypes
from tinygrad.device import Buffer
dev = Device["TEGRA"]
assert not dev.unified and type(dev.allocator) is td.TegraAllocator
x = np.random.default_rng(2).standard_normal(100_000).astype(np.float32)
t = Tensor(x, device="TEGRA").realize()
np.testing.assert_array_equal(t.numpy(), x)
assert Tensor([1, 2, 3], device="TEGRA").tolist() == [1, 2, 3]
b = Buffer("TEGRA", 64, dtypes.int32).ensure_allocated()
src = np.arange(64, dtype=np.int32).tobytes()
b.copy_from(Buffer("PYTHON", 64, dtypes.int32, initial_value=src))
v = b.view(8, dtypes.int32, 32).ensure_allocated()
assert v.numpy().tolist() == list(range(8, 16))
assert dev.copy_value > 0
print("STAGED OK", dev.copy_value)
"""


def test_desktop_copy_path_through_tinygrad():
    # The allocator of desktop GPUs (staging buffers + copy queue, no zero-copy views), used by
    # tinygrad's own copies, forced onto this device with TEGRA_STAGED_COPIES=1.
    r = _run(["-c", _STAGED_SCRIPT], TEGRA_STAGED_COPIES="1", DEV="TEGRA")
    assert r.returncode == 0 and "STAGED OK" in r.stdout, r.stdout
