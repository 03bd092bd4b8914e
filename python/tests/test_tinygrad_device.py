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
import warnings

import numpy as np
import pytest

if os.environ.get("TEGRAGPU_REQUIRE_TINYGRAD") == "1":
    import tinygrad  # noqa: F401  (CI: a missing tinygrad is a failure, not a skip)
else:
    tinygrad = pytest.importorskip(
        "tinygrad", reason="tinygrad is not installed (pip install tinygrad==0.14.0)")

SPEC = os.environ.get("TEGRAGPU_DEVICE") or "emu"
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import tegragpu.tinygrad_device as td  # noqa: E402

import tegragpu as tg  # noqa: E402
from tinygrad import Device, Tensor, dtypes  # noqa: E402
from tinygrad.device import Buffer, BufferSpec, TinyELF  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::tegragpu.tinygrad_device.TegraEmulatorWarning")

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


# --------------------------------------------------------------------------------------------
# Several devices: the plan of a multi-device batch, transfers between devices, the graph over
# two devices. The emulated Orin has one GPU and no peer access: a second TEGRA device here is
# a second emulated Orin ("TEGRA:5"), and where the test needs peer access, the two primitives
# the device uses for it across devices (a GPU wait on the other's signal, a copy into the
# other's memory) are replaced by CPU equivalents that log what was recorded.

def _plan_case(rng, ndev, n):
    """A random batch: calls on devices 0..ndev-1 (kernels, copies), each reading and writing
    random buffer ranges; the dependencies by brute force over the ranges."""
    devs, kinds, acc = [], [], []
    for j in range(n):
        devs.append(int(rng.integers(ndev)))
        kinds.append("copy" if rng.random() < 0.3 else "kernel")
        bufs = []
        for _ in range(int(rng.integers(1, 4))):
            b, s = int(rng.integers(6)), int(rng.integers(0, 64))
            bufs.append((b, s, s + int(rng.integers(1, 64)), bool(rng.random() < 0.5)))
        acc.append(bufs)
    deps = []
    for j in range(n):
        d = set()
        for k in range(j):
            for (b1, s1, e1, w1) in acc[j]:
                for (b2, s2, e2, w2) in acc[k]:
                    if b1 == b2 and s1 < e2 and s2 < e1 and (w1 or w2):
                        d.add(k)
        deps.append(sorted(d))
    return devs, kinds, deps


def _simulate(rng, devs, levels, steps, deps):
    """Run the plan's steps the way GPUs would, in a random interleaving of the devices: a
    device runs its steps in order, a step waits until the steps it names have completed, and
    within a step the calls of one level run in any order. Returns the completion order;
    fails on a deadlock or a call that started before one it depends on completed."""
    queues = {}
    for s in steps:
        queues.setdefault(s.dev, []).append(s)
    done_steps, done, order = set(), set(), []
    while any(queues.values()):
        ready = [d for d, q in queues.items() if q and all(w in done_steps for w in q[0].waits)]
        assert ready, f"deadlock: {[(d, q[0]) for d, q in queues.items() if q]}"
        d = ready[int(rng.integers(len(ready)))]
        s = queues[d].pop(0)
        groups = []
        for j in s.items:
            if groups and levels[groups[-1][-1]] == levels[j]:
                groups[-1].append(j)
            else:
                groups.append([j])
        for g in groups:
            for j in rng.permutation(g).tolist():
                missing = [k for k in deps[j] if k not in done]
                assert not missing, f"call {j} ran before {missing} ({s})"
            done.update(g)
            order.extend(g)
        done_steps.add(s.index)
    return order


def test_plan_steps_keeps_every_dependency():
    rng = np.random.default_rng(7)
    for case in range(300):
        ndev, n = int(rng.integers(1, 5)), int(rng.integers(1, 40))
        devs, kinds, deps = _plan_case(rng, ndev, n)
        for concurrency in (True, False):
            levels, steps = td._graph.plan_steps(devs, kinds, deps, concurrency)
            assert sorted(j for s in steps for j in s.items) == list(range(n))
            for s in steps:
                assert all(devs[j] == s.dev for j in s.items)
                assert all(w < s.index and steps[w].dev != s.dev for w in s.waits), s
                assert s.kind == "kernels" or len(s.items) == 1
                for j in s.items:
                    for k in deps[j]:
                        assert levels[k] < levels[j]
            # every cross-device dependency is covered by a wait for a step at or after it
            pos = {j: s for s in steps for j in s.items}
            for j in range(n):
                for k in deps[j]:
                    if devs[k] == devs[j]:
                        continue
                    assert pos[k].signal, (case, j, k)
                    earlier = [t for t in steps[:pos[j].index + 1] if t.dev == devs[j]]
                    assert any(steps[w].dev == devs[k] and steps[w].index >= pos[k].index
                               for t in earlier for w in t.waits), (case, j, k)
            for _ in range(3):
                order = _simulate(rng, devs, levels, steps, deps)
                assert sorted(order) == list(range(n))


def test_plan_steps_of_an_exchange_between_two_devices():
    # kernel on 0, copy 0 -> 1 (runs on 0), kernel on 1 using it, copy 1 -> 0 (runs on 1),
    # kernel on 0 using that; a kernel on 1 independent of everything.
    devs = [0, 0, 1, 1, 0, 1]
    kinds = ["kernel", "copy", "kernel", "copy", "kernel", "kernel"]
    deps = [[], [0], [1], [2], [3], []]
    levels, steps = td._graph.plan_steps(devs, kinds, deps)
    assert levels == [0, 1, 2, 3, 4, 0]
    got = [(s.dev, s.kind, s.items, s.waits, s.signal) for s in steps]
    assert got == [(0, "kernels", [0], [], False), (1, "kernels", [5], [], False),
                   (0, "copy", [1], [], True), (1, "kernels", [2], [2], False),
                   (1, "copy", [3], [], True), (0, "kernels", [4], [4], False)], got
    with pytest.raises(ValueError, match="not earlier"):
        td._graph.plan_steps([0, 0], ["kernel", "kernel"], [[1], []])


@pytest.fixture
def dev2(dev, monkeypatch):
    """A second TEGRA device, "TEGRA:5": another emulated Orin (the emulator has one GPU)."""
    if SPEC != "emu":
        pytest.skip("fakes a second device with a second emulated Orin")
    real = td._device._open_tegragpu
    monkeypatch.setattr(td._device, "_open_tegragpu",
                        lambda index: tg.Device(SPEC) if index == 5 else real(index))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = Device["TEGRA:5"]
    d.peer_links.clear()
    dev.peer_links.clear()
    d.peer_waits.clear()
    dev.peer_waits.clear()
    yield d
    for x in (dev, d):
        x.synchronize()
        x.peer_links.clear()
        x.peer_waits.clear()


def _fake_peers(monkeypatch, log, waits=True):
    """Peer access between every two TEGRA devices, done by the CPU: a GPU wait on another
    device's signal waits on the CPU; a copy into another device's memory runs after both
    devices' recorded work. Each is logged as (kind, device, other device or signal, value)."""
    monkeypatch.setattr(td._peer, "_probe",
                        lambda a, b: td._peer.PeerLink(True, waits or a is b, "fake link"))
    real_wait, real_copy = td.TegraDevice._record_wait, td.TegraDevice._record_peer_copy

    def record_wait(self, lane, signal, value, what):
        if signal is self.tl or signal is self.copy_tl:
            return real_wait(self, lane, signal, value, what)
        log.append(("wait", self.device, lane, what, value))
        signal.wait(value)

    def record_copy(self, dest, src, sz, dest_dev, lane="compute"):
        if dest_dev is self:
            return real_copy(self, dest, src, sz, dest_dev, lane)
        log.append(("copy", self.device, lane, dest_dev.device, sz))
        self.synchronize()
        ctypes.memmove(dest.cpu_ptr(), src.cpu_ptr(), sz)

    monkeypatch.setattr(td.TegraDevice, "_record_wait", record_wait)
    monkeypatch.setattr(td.TegraDevice, "_record_peer_copy", record_copy)


def test_transfer_between_devices_without_peer_access_goes_through_host(dev, dev2, caplog):
    # Two emulated Orins have no peer path: the copy goes through host memory, and the reason
    # is logged once for the pair.
    n = 4099
    a = Buffer("TEGRA", n, dtypes.uint8).ensure_allocated()
    b = Buffer("TEGRA:5", n, dtypes.uint8).ensure_allocated()
    data = np.random.default_rng(3).integers(0, 255, n, dtype=np.uint8)
    copyin(a, bytearray(data.tobytes()))
    with caplog.at_level("INFO", logger="tegragpu.tinygrad_device"):
        for _ in range(2):
            dev.allocator._transfer(b._buf, a._buf, n, src_dev=dev, dest_dev=dev2)
    np.testing.assert_array_equal(b.numpy(), data)
    notes = [r.getMessage() for r in caplog.records if "go through host memory" in r.getMessage()]
    assert len(notes) == 1 and notes[0].startswith("TEGRA -> TEGRA:5: no peer access ("), notes
    assert "nvgpu" in notes[0], notes[0]  # the library's reason
    lk = dev.peer_links[dev2]
    assert not lk.access and not lk.waits and not td._peer.graph_ready(dev, dev2)
    # through tinygrad: Tensor.to between the two devices
    t = Tensor(data, device="TEGRA:5").to("TEGRA").realize()
    np.testing.assert_array_equal(t.numpy(), data)


def test_peer_copy_lane_defaults_to_the_sms(monkeypatch):
    # Copies between devices run on the source's SMs unless TEGRA_PEER_COPY=ce asks for its
    # copy engine; any other value is refused, naming the variable and the value.
    from tegragpu.tinygrad_device import _peer
    monkeypatch.delenv("TEGRA_PEER_COPY", raising=False)
    assert _peer.peer_copy_lane() == "compute"
    for v, lane in (("sm", "compute"), ("SM", "compute"), ("ce", "copy"), (" CE ", "copy")):
        monkeypatch.setenv("TEGRA_PEER_COPY", v)
        assert _peer.peer_copy_lane() == lane, v
    monkeypatch.setenv("TEGRA_PEER_COPY", "dma")
    with pytest.raises(ValueError, match="TEGRA_PEER_COPY='dma'"):
        _peer.peer_copy_lane()


@pytest.mark.parametrize("engine", ["ce", "sm"])
def test_transfer_between_devices_is_ordered_on_the_gpus(dev, dev2, monkeypatch, engine):
    # With peer access (faked), a transfer TEGRA -> TEGRA:5 runs on TEGRA's copy queue (ce) or
    # compute queue (sm) after TEGRA's own work and after TEGRA:5's earlier work (a GPU wait on
    # TEGRA:5's timeline); TEGRA:5's next work waits for it (a GPU wait on the timeline of the
    # queue that copied), recorded where that work is recorded; TEGRA's next kernel waits for
    # the copy too (ce: the copy queue is another queue).
    monkeypatch.setenv("TEGRA_PEER_COPY", engine)
    lane = "copy" if engine == "ce" else "compute"
    log = []
    _fake_peers(monkeypatch, log)
    lib = _fixture_cubin(dev)
    u32 = dtypes.uint32
    fill = {d: td.TegraProgram(d, _elf(lib, "fill_u32", [u32, u32, u32])) for d in (dev, dev2)}
    for d in (dev, dev2):
        monkeypatch.setattr(d, "sync_each", False)
    n = 256
    a = Buffer("TEGRA", n, u32).ensure_allocated()
    b = Buffer("TEGRA:5", n, u32).ensure_allocated()
    fill[dev](a._buf, global_size=(4, 1, 1), local_size=(64, 1, 1), vals=(11, n))
    fill[dev2](b._buf, global_size=(4, 1, 1), local_size=(64, 1, 1), vals=(22, n))
    dev.allocator._transfer(b._buf, a._buf, n * 4, src_dev=dev, dest_dev=dev2)
    assert [x[:3] for x in log] == [("wait", "TEGRA", lane), ("copy", "TEGRA", lane)], log
    assert log[0][3] == "TEGRA:5 (compute)" and log[0][4] == dev2.tl_value  # after its fill
    v = dev.copy_value if lane == "copy" else dev.tl_value
    assert dev2.peer_waits == {(dev, lane): v}
    if lane == "copy":
        assert dev.compute_waits_copy == v
    # TEGRA:5's next launch waits for the copy; its result is the copied data plus what it adds
    log.clear()
    fill[dev2](b.view(16, u32, 0).ensure_allocated()._buf, global_size=(1, 1, 1),
               local_size=(16, 1, 1), vals=(33, 16))
    done = (dev.copy_tl if lane == "copy" else dev.tl).value >= v
    assert log[:1] == [("wait", "TEGRA:5", "compute", f"TEGRA ({lane})", v)] or done, log
    assert dev2.peer_waits == {}
    out = b.numpy()
    assert (out[:16] == 33).all() and (out[16:] == 11).all(), out
    # without GPU waits between the devices (the library refuses them): the CPU waits instead
    monkeypatch.setattr(td._peer, "_probe",
                        lambda x, y: td._peer.PeerLink(True, False, "fake, no waits"))
    dev.peer_links.clear()
    dev2.peer_links.clear()
    log.clear()
    fill[dev](a._buf, global_size=(4, 1, 1), local_size=(64, 1, 1), vals=(44, n))
    dev.allocator._transfer(b._buf, a._buf, n * 4, src_dev=dev, dest_dev=dev2)
    assert [x[0] for x in log] == ["copy"], log
    np.testing.assert_array_equal(b.numpy(), np.full(n, 44, np.uint32))


class _CopyAst:
    op = Ops.COPY


@pytest.mark.parametrize("engine", ["ce", "sm"])
def test_graph_over_two_devices(dev, dev2, monkeypatch, engine):
    # A batch as tinygrad's MultiGraphRunner hands it over: c = a + b on TEGRA, copy c to
    # TEGRA:5, y = x + b5 there, copy y back, w = z + b on TEGRA. The plan: steps on both
    # devices with GPU waits between them (peer access faked, see _fake_peers); the kernels in
    # command buffers; input 0 replaces the source of the first copy.
    monkeypatch.setenv("TEGRA_PEER_COPY", engine)
    cl = "copy" if engine == "ce" else "compute"  # the lane of the copies between the devices
    log = []
    _fake_peers(monkeypatch, log)
    for d in (dev, dev2):
        monkeypatch.setattr(d, "sync_each", False)
    lib = _fixture_cubin(dev)
    f32 = dtypes.float32
    add = {d: td.TegraProgram(d, _elf(lib, "vector_add", [f32, f32, f32, dtypes.uint32]))
           for d in (dev, dev2)}
    n = 1000
    a, b, c, c_alt, z, w = (Buffer("TEGRA", n, f32).ensure_allocated() for _ in range(6))
    x, b5, y = (Buffer("TEGRA:5", n, f32).ensure_allocated() for _ in range(3))
    ramp = np.arange(n, dtype=np.float32)
    copyin(a, bytearray(ramp.tobytes()))
    for buf, v in ((b, 1.0), (b5, 10.0)):
        copyin(buf, bytearray(np.full(n, v, np.float32).tobytes()))
    info = _FakeInfo((8, 1, 1), (128, 1, 1), (_FakeVar("n"),))
    g = object.__new__(td.TegraGraph)
    g.calls = [(0, _FakeAst(info), [a, b, c], {}), (0, _CopyAst(), [x, c], {}),
               (0, _FakeAst(info), [x, b5, y], {}), (0, _CopyAst(), [z, y], {}),
               (0, _FakeAst(info), [z, b, w], {})]
    g.runtimes = [add[dev], None, add[dev2], None, add[dev]]
    g.uop_replace = [[], [(1, 0)], [], [], []]
    g.vars = ["n"]
    g.var_vals_replace = {0: [(0, 0)], 2: [(0, 0)], 4: [(0, 0)]}
    g.launch_dims_replace, g.launch_dims_base, g.symbolic_dims = {}, {}, []
    g._build()
    assert g.steps is not None and {id(d) for d in g.devices} == {id(dev), id(dev2)}
    # lanes: each device's compute queue (kernels) and, with ce, its copy queue (the copies
    # between the devices)
    assert [(s.dev[0].device, s.dev[1], s.kind) for s in g.steps] == [
        ("TEGRA", "compute", "kernels"), ("TEGRA", cl, "copy"),
        ("TEGRA:5", "compute", "kernels"), ("TEGRA:5", cl, "copy"),
        ("TEGRA", "compute", "kernels")], g.steps
    if cl == "copy":
        assert [s.waits for s in g.steps] == [[], [0], [1], [2], [3]], g.steps
    else:
        assert [s.waits for s in g.steps] == [[], [], [1], [], [3]], g.steps
    assert len(g.segments) == 3 and "3 kernel runs" in g.cmdbuf_note, g.cmdbuf_note
    if td.cmdbuf_supported():
        assert all(s.cmdbuf is not None for s in g.segments), g.cmdbuf_note
    needs = []
    real_on = td.TegraDevice._wait_on

    def wait_on(self, lane, other, olane, value, what):
        if other is not self:
            needs.append((self.device, lane, other.device, olane, value))
        return real_on(self, lane, other, olane, value, what)

    monkeypatch.setattr(td.TegraDevice, "_wait_on", wait_on)
    c0 = (dev.copy_value, dev2.copy_value) if cl == "copy" else (dev.tl_value, dev2.tl_value)
    assert g((_FakeUop(c),), {"n": n}) is None
    # before the batch, each copying queue waits for the other device's earlier work; TEGRA:5's
    # kernel waits for TEGRA's copy, TEGRA's last kernel for TEGRA:5's copy (the values their
    # queues released after them)
    assert [x[:4] for x in needs] == [
        ("TEGRA", cl, "TEGRA:5", "compute"), ("TEGRA:5", cl, "TEGRA", "compute"),
        ("TEGRA:5", "compute", "TEGRA", cl), ("TEGRA", "compute", "TEGRA:5", cl)], needs
    assert needs[2][4] > c0[0] and needs[3][4] > c0[1], (needs, c0)
    # after the batch, each device's next work waits for the other's copies into its memory,
    # and (ce) for its own copy queue's (they read its memory)
    last = (dev.copy_value, dev2.copy_value) if cl == "copy" else (dev.tl_value, dev2.tl_value)
    assert dev.peer_waits.get((dev2, cl)) == last[1] and \
        dev2.peer_waits.get((dev, cl)) == last[0], (dev.peer_waits, dev2.peer_waits)
    if cl == "copy":
        assert dev.compute_waits_copy == dev.copy_value and \
            dev2.compute_waits_copy == dev2.copy_value
    np.testing.assert_array_equal(w.numpy(), ramp + 12.0)
    kinds = [(k[0], k[1], k[2]) for k in log]
    assert kinds.count(("copy", "TEGRA", cl)) == 1 and \
        kinds.count(("copy", "TEGRA:5", cl)) == 1, log
    # replay with the first copy reading c_alt (filled by hand) and a smaller n, timed
    copyin(c_alt, bytearray((ramp * 2).tobytes()))
    et = g((_FakeUop(c_alt),), {"n": 500}, wait=True)
    assert isinstance(et, float) and et > 0
    out = w.numpy()
    np.testing.assert_array_equal(out[:500], ramp[:500] * 2 + 11.0)
    np.testing.assert_array_equal(out[500:], ramp[500:] + 12.0)
    # back-to-back replays, then one synchronization
    for k in range(4):
        g((_FakeUop(c if k % 2 else c_alt),), {"n": n})
    dev.synchronize()
    dev2.synchronize()
    np.testing.assert_array_equal(w.numpy(), ramp + 12.0)


class _FakeArgUop:
    def __init__(self, device):
        self.device, self.is_bound_var = device, False


class _FakeCall:
    def __init__(self, ast, *devices):
        self.src = (ast, *(_FakeArgUop(d) for d in devices))


def test_graph_takes_copies_only_with_peer_access(dev, dev2, monkeypatch):
    prog = _FakeCall(type("P", (), {"op": Ops.PROGRAM})(), "TEGRA")
    copy = _FakeCall(_CopyAst(), "TEGRA:5", "TEGRA")
    same = _FakeCall(_CopyAst(), "TEGRA", "TEGRA")
    host = _FakeCall(_CopyAst(), "TEGRA", "PYTHON")
    sup = td.TegraGraph.supports_uop
    assert sup([dev], prog) and sup([dev, dev2], prog) and sup([dev], same)
    assert not sup([dev], host)
    assert not sup([dev], copy)  # two emulated Orins: no peer access
    log = []
    _fake_peers(monkeypatch, log)
    dev.peer_links.clear()
    dev2.peer_links.clear()
    assert sup([dev], copy)
    monkeypatch.setenv("TEGRA_MULTIGRAPH", "0")
    assert not sup([dev], copy) and not sup([dev, dev2], prog) and sup([dev], prog)


def test_graph_with_copies_on_one_device(dev, monkeypatch):
    # Copies inside a batch on one device (tinygrad's test_graph does these): a whole buffer,
    # then a view of its first half, then a kernel reading the second half (it depends on the
    # first copy only: the ranges tell); a view copied onto itself (nothing to do); and
    # overlapping halves of one buffer (through the host).
    monkeypatch.setattr(dev, "sync_each", False)
    lib = _fixture_cubin(dev)
    f32 = dtypes.float32
    add = td.TegraProgram(dev, _elf(lib, "vector_add", [f32, f32, f32, dtypes.uint32]))
    n = 512
    base, full = (Buffer("TEGRA", 2 * n, f32).ensure_allocated() for _ in range(2))
    lo_src, a, out = (Buffer("TEGRA", n, f32).ensure_allocated() for _ in range(3))
    lo = Buffer("TEGRA", n, f32, base=base, offset=0).ensure_allocated()
    hi = Buffer("TEGRA", n, f32, base=base, offset=n * 4).ensure_allocated()
    mid = Buffer("TEGRA", n, f32, base=base, offset=n * 2).ensure_allocated()
    ramp = np.arange(2 * n, dtype=np.float32)
    copyin(full, bytearray(ramp.tobytes()))
    copyin(lo_src, bytearray(np.full(n, -1, np.float32).tobytes()))
    copyin(a, bytearray(np.full(n, 0.5, np.float32).tobytes()))
    info = _FakeInfo((4, 1, 1), (128, 1, 1), (_FakeVar("n"),))
    g = object.__new__(td.TegraGraph)
    g.calls = [(0, _CopyAst(), [base, full], {}), (0, _CopyAst(), [lo, lo_src], {}),
               (0, _FakeAst(info), [hi, a, out], {}), (0, _CopyAst(), [lo, lo], {}),
               (0, _CopyAst(), [mid, hi], {})]
    g.runtimes = [None, None, add, None, None]
    g.uop_replace = [[] for _ in g.calls]
    g.vars, g.var_vals_replace = ["n"], {2: [(0, 0)]}
    g.launch_dims_replace, g.launch_dims_base, g.symbolic_dims = {}, {}, []
    g._build()
    assert g.levels[:3] == [0, 1, 1], g.levels  # the kernel does not wait for the second copy
    assert [s.kind for s in g.steps].count("copy") == 4 and all(s.waits == [] for s in g.steps)
    for _ in range(3):
        copyin(base, bytearray(np.zeros(2 * n, np.float32).tobytes()))
        copyin(out, bytearray(np.zeros(n, np.float32).tobytes()))
        assert g((), {"n": n}) is None
        np.testing.assert_array_equal(out.numpy(), ramp[n:] + 0.5)
        want = np.concatenate([np.full(n // 2, -1, np.float32), -np.ones(n // 2, np.float32),
                               ramp[n:], ])
        want[n // 2:n // 2 + n] = ramp[n:]  # mid <- hi (overlapping halves, through the host)
        np.testing.assert_array_equal(base.numpy(), want)


# --------------------------------------------------------------------------------------------
# Two real GPUs (TEGRAGPU_DEVICE=rm on a machine with two or more): no fakes

@pytest.fixture
def gpu1(dev):
    if SPEC == "emu":
        pytest.skip("needs two GPUs of the desktop driver (TEGRAGPU_DEVICE=rm)")
    try:
        d = Device["TEGRA:1"]
    except Exception as e:
        pytest.skip(f"no second GPU: {e}")
    for x, y in ((dev, d), (d, dev)):
        lk = td._peer.link(x, y)
        print(f"{x.device} -> {y.device}: {lk}")
    return d


@pytest.mark.parametrize("engine", ["ce", "sm"])
def test_two_gpus_transfers_are_ordered(dev, gpu1, monkeypatch, engine):
    # Each round, with nothing synchronized until the result is read: a kernel on TEGRA writes
    # a, a transfer to TEGRA:1, a kernel there adds to it, a transfer back; each round's values
    # differ, so a copy that runs too early or too late shows in the result. Without a peer
    # path the transfers go through the host (correct too; the link is printed).
    monkeypatch.setenv("TEGRA_PEER_COPY", engine)
    lib = _fixture_cubin(dev)
    u32, f32 = dtypes.uint32, dtypes.float32
    fill = td.TegraProgram(dev, _elf(lib, "fill_u32", [u32, u32, u32]))
    add = td.TegraProgram(gpu1, _elf(lib, "vector_add", [f32, f32, f32, dtypes.uint32]))
    n = 1 << 22  # 16 MiB
    a, back = (Buffer("TEGRA", n, f32).ensure_allocated() for _ in range(2))
    x, one, y = (Buffer("TEGRA:1", n, f32).ensure_allocated() for _ in range(3))
    copyin(one, bytearray(np.ones(n, np.float32).tobytes()))
    g = ((n + 255) // 256, 1, 1)
    for k in range(1, 6):
        bits = int(np.float32(k * 10).view(np.uint32))
        fill(a._buf, global_size=g, local_size=(256, 1, 1), vals=(bits, n))
        dev.allocator._transfer(x._buf, a._buf, n * 4, src_dev=dev, dest_dev=gpu1)
        add(x._buf, one._buf, y._buf, global_size=g, local_size=(256, 1, 1), vals=(n,))
        gpu1.allocator._transfer(back._buf, y._buf, n * 4, src_dev=gpu1, dest_dev=dev)
        out = back.numpy()
        assert (out == k * 10 + 1).all(), (engine, k, out[:4], out[-4:])
    print(f"{engine}: {dev.peer_links[gpu1]}")


def test_two_gpus_graph(dev, gpu1):
    # The batch of test_graph_over_two_devices on two GPUs: kernels in command buffers, copies
    # both ways on the copy engines, GPU waits between the devices.
    if not td._peer.graph_ready(dev, gpu1):
        pytest.skip(f"no peer access with GPU waits both ways: {dev.peer_links[gpu1]}")
    lib = _fixture_cubin(dev)
    f32 = dtypes.float32
    add = {d: td.TegraProgram(d, _elf(lib, "vector_add", [f32, f32, f32, dtypes.uint32]))
           for d in (dev, gpu1)}
    n = 1 << 20
    a, b, c, c_alt, z, w = (Buffer("TEGRA", n, f32).ensure_allocated() for _ in range(6))
    x, b1, y = (Buffer("TEGRA:1", n, f32).ensure_allocated() for _ in range(3))
    ramp = np.arange(n, dtype=np.float32)
    copyin(a, bytearray(ramp.tobytes()))
    copyin(c_alt, bytearray((ramp * 2).tobytes()))
    for buf, v in ((b, 1.0), (b1, 10.0)):
        copyin(buf, bytearray(np.full(n, v, np.float32).tobytes()))
    info = _FakeInfo(((n + 127) // 128, 1, 1), (128, 1, 1), (_FakeVar("n"),))
    g = object.__new__(td.TegraGraph)
    g.calls = [(0, _FakeAst(info), [a, b, c], {}), (0, _CopyAst(), [x, c], {}),
               (0, _FakeAst(info), [x, b1, y], {}), (0, _CopyAst(), [z, y], {}),
               (0, _FakeAst(info), [z, b, w], {})]
    g.runtimes = [add[dev], None, add[gpu1], None, add[dev]]
    g.uop_replace = [[], [(1, 0)], [], [], []]
    g.vars = ["n"]
    g.var_vals_replace = {0: [(0, 0)], 2: [(0, 0)], 4: [(0, 0)]}
    g.launch_dims_replace, g.launch_dims_base, g.symbolic_dims = {}, {}, []
    g._build()
    print(g.cmdbuf_note)
    for k in range(8):
        src, want = (c, ramp + 12.0) if k % 2 else (c_alt, ramp * 2 + 11.0)
        g((_FakeUop(src),), {"n": n})
        if k % 3 == 2:
            np.testing.assert_array_equal(w.numpy(), want)
    dev.synchronize()
    gpu1.synchronize()
    np.testing.assert_array_equal(w.numpy(), ramp + 12.0)
