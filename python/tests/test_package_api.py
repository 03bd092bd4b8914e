"""The package's public API (on the emulated Orin unless TEGRAGPU_DEVICE says otherwise):
``tegragpu.lib`` / ``check`` and the typed exceptions, lazy CPU mapping, buffer views as kernel
arguments and in copies, GPU timestamps, device selection by index, logging, and how the
shared library is found."""
import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tegragpu as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.environ.get("TEGRAGPU_DEVICE") or "emu"
TIMEOUT_NS = 30_000_000_000
PKG_DIR = os.path.dirname(os.path.abspath(tg.__file__))


@pytest.fixture
def dev():
    with tg.Device(SPEC) as d:
        yield d


def cubin_path(dev):
    i = dev.info
    p = os.path.join(ROOT, "tests", "fixtures", "cubin", f"kernels.sm_{i.sm_major}{i.sm_minor}.cubin")
    if not os.path.exists(p):
        pytest.skip(f"no fixture cubin for sm_{i.sm_major}{i.sm_minor}")
    return p


# --------------------------------------------------------------------------------------------
# lib, check, exceptions

def test_public_lib_and_check():
    assert isinstance(tg.lib, ctypes.CDLL)
    assert tg.lib.tg_version() >> 16 == tg.ABI_MAJOR
    for name, (res, args) in tg.SIGNATURES.items():
        f = getattr(tg.lib, name)
        assert f.restype is res and list(f.argtypes) == args, name
    assert tg.missing_functions == []
    assert tg.check(0) is None
    assert tg.check(tg.Status.OK, "anything") is None
    assert tg.library_source() in ("TEGRAGPU_LIBRARY", "package", "pkg-config", "system",
                                   "source tree")


def test_a_function_the_library_lacks_raises_not_supported():
    # What lib.<name> is for a function of the header an older library does not export.
    stub = tg._library._missing("tg_not_there")
    with pytest.raises(tg.NotSupported, match=r"^tg_not_there: not exported by .*update the library"):
        stub(1, 2)


def test_typed_exceptions_for_a_bad_handle():
    n = ctypes.c_uint64()
    st = tg.lib.tg_buf_size(0x12345, ctypes.byref(n))
    assert st == tg.Status.INVALID_HANDLE
    with pytest.raises(tg.InvalidHandle) as e:
        tg.check(st)
    err = e.value
    assert isinstance(err, tg.Error)
    assert err.status is tg.Status.INVALID_HANDLE
    assert err.message.startswith("tg_buf_size: ") and "0x12345" in err.message
    assert str(err) == err.message
    assert err.call == "tg_buf_size"
    # A label is put in front unless the message already starts with it.
    st = tg.lib.tg_queue_submit(0x777)
    with pytest.raises(tg.InvalidHandle, match=r"^backend.flush: tg_queue_submit: queue 0x777"):
        tg.check(st, "backend.flush")
    st = tg.lib.tg_queue_submit(0x777)
    with pytest.raises(tg.InvalidHandle, match=r"^tg_queue_submit: "):
        tg.check(st, "tg_queue_submit")


def test_exception_hierarchy_and_old_names():
    for status in tg.Status:
        if status == tg.Status.OK:
            continue
        cls = tg.error_class(status)
        assert cls is not tg.Error and issubclass(cls, tg.Error) and cls.status == status
        e = cls(status, "tg_x: message")
        assert e.status == status and e.message == "tg_x: message" and str(e) == "tg_x: message"
    assert tg.error_class(999) is tg.Error
    unknown = tg.Error(999)
    assert unknown.status == 999 and unknown.message == "unknown tg_status"
    # Python exception families.
    assert issubclass(tg.InvalidArgument, ValueError)
    assert issubclass(tg.NullPointer, ValueError)
    assert issubclass(tg.InvalidLaunch, ValueError)
    assert issubclass(tg.OutOfMemory, MemoryError)
    assert issubclass(tg.NotFound, LookupError)
    assert issubclass(tg.Timeout, TimeoutError)
    assert issubclass(tg.Os, OSError)
    assert str(tg.Os(tg.Status.OS, "tg_x: ioctl failed")) == "tg_x: ioctl failed"
    # The names of earlier versions are the same classes.
    assert tg.TegraGpuError is tg.Error
    assert tg.InvalidArgumentError is tg.InvalidArgument
    assert tg.InvalidHandleError is tg.InvalidHandle
    assert tg.GpuTimeoutError is tg.Timeout
    assert tg.OsError is tg.Os
    assert tg.DeviceLostError is tg.DeviceLost
    for name in tg.__all__:
        assert hasattr(tg, name), name


# --------------------------------------------------------------------------------------------
# Public names (the package is split into private modules; every name is used as tegragpu.<name>)

ALL = {
    "Device", "Buffer", "BufferView", "Module", "Kernel", "Queue", "Signal", "CmdBuf", "GpuTimer",
    "DeviceInfo", "FaultReport", "KernelAttributes", "Status", "QueueKind", "Backend",
    "lib", "check", "error_class", "last_error_message", "status_str", "library_path",
    "library_source", "version", "device_spec", "LibraryNotFoundError",
    "SIGNATURES", "STRUCTS", "Handle", "CDeviceInfo", "CFaultReport", "CKernelAttributes",
    "CLaunchConfig", "CTextureDesc", "Texture",
    "BUF_CPU_CACHED", "BUF_WRITE_COMBINED", "BUF_ZEROED", "BUF_DEVICE_LOCAL", "TIMEOUT_INFINITE",
    "LAUNCH_COOPERATIVE", "LAUNCH_CONCURRENT", "LAUNCH_SUBMIT", "LIMIT_STACK_SIZE",
    "LIMIT_MALLOC_HEAP_SIZE", "DEFAULT_TIMEOUT_NS",
    "Error", "InvalidArgument", "NullPointer", "InvalidHandle", "OutOfMemory", "NotFound",
    "NotSupported", "Timeout", "DeviceFault", "Os", "InvalidCubin", "InvalidLaunch", "Compile",
    "LibraryMissing", "UnsupportedDriver", "Internal", "DeviceLost",
    "TegraGpuError", "InvalidArgumentError", "NullPointerError", "InvalidHandleError",
    "OutOfMemoryError", "NotFoundError", "NotSupportedError", "DeviceFaultError",
    "InvalidCubinError", "InvalidLaunchError", "CompileError", "LibraryMissingError",
    "UnsupportedDriverError", "InternalError", "DeviceLostError", "GpuTimeoutError", "OsError",
}
# Importable, not in __all__: public names, earlier private names, private functions tests call.
NOT_IN_ALL = {
    "__version__", "ABI_MAJOR", "TEXTURE_LINEAR", "TEXTURE_PITCH2D", "TEXTURE_FORMATS",
    "ADDRESS_MODES", "TEXTURE_READ_NORMALIZED_FLOAT", "TEXTURE_NORMALIZED_COORDS",
    "TEXTURE_LINEAR_FILTER", "LogLevel", "LogFn", "set_log_level", "set_log_callback",
    "missing_functions", "_lib", "_check", "_DeviceInfo", "_FaultReport", "_KernelAttributes",
    "_LaunchConfig", "_candidates", "_tell_python_site", "_demangle", "_parse_c_decl",
}


def test_public_names():
    assert set(tg.__all__) == ALL and len(tg.__all__) == len(ALL)
    for name in ALL | NOT_IN_ALL:
        assert hasattr(tg, name), name
    extra = {n for n in dir(tg) if not n.startswith("_")} - ALL - NOT_IN_ALL
    assert extra <= {"tinygrad_device"}, extra  # the subpackage, once imported
    # One exception class per tg_status, each with the name of earlier versions.
    errors = {c.__name__ for c in tg._errors._ERRORS.values()}
    assert errors == {tg.error_class(s).__name__ for s in tg.Status if s != tg.Status.OK}
    assert errors | {"Error"} <= ALL
    assert {n + "Error" for n in errors - {"Timeout", "Os"}} | {"TegraGpuError"} <= ALL
    # The compatibility aliases are the same objects.
    assert tg._lib is tg.lib and tg._check is tg.check
    assert tg._LaunchConfig is tg.CLaunchConfig and tg._DeviceInfo is tg.CDeviceInfo
    assert tg.missing_functions is tg._library.missing_functions  # one list, filled at load
    assert tg.set_log_callback is tg._logging.set_log_callback


def test_classes_and_functions_are_named_tegragpu_x():
    import pickle
    import traceback
    for name in sorted(ALL | NOT_IN_ALL):
        obj = getattr(tg, name)
        if isinstance(obj, type) and obj.__module__.startswith("tegragpu"):
            assert obj.__module__ == "tegragpu", (name, obj.__module__)
            assert pickle.loads(pickle.dumps(obj)) is obj, name
        elif callable(obj) and hasattr(obj, "__code__"):
            assert obj.__module__ == "tegragpu", (name, obj.__module__)
    e = tg.InvalidArgument(tg.Status.INVALID_ARGUMENT, "tg_x: bad")
    assert traceback.format_exception_only(type(e), e) == ["tegragpu.InvalidArgument: tg_x: bad\n"]
    assert repr(tg.Device) == "<class 'tegragpu.Device'>"


def test_closed_objects_raise_invalid_handle(dev):
    q = dev.create_queue()
    q.close()
    with pytest.raises(tg.InvalidHandle, match="Queue is closed"):
        q.submit()


# --------------------------------------------------------------------------------------------
# Lazy CPU mapping

@pytest.fixture
def cpu_ptr_calls(monkeypatch):
    calls = []
    real = tg.lib.tg_buf_cpu_ptr

    def counting(buf, out):
        calls.append(buf)
        return real(buf, out)

    monkeypatch.setattr(tg.lib, "tg_buf_cpu_ptr", counting)
    return calls


def test_alloc_does_not_map_for_the_cpu(dev, cpu_ptr_calls):
    mod = dev.load_module_file(cubin_path(dev))
    fill = mod.kernel("fill_u32")
    n = 1024
    bufs = [dev.alloc(4 * n, f) for f in (0, tg.BUF_DEVICE_LOCAL, tg.BUF_WRITE_COMBINED,
                                          tg.BUF_CPU_CACHED | tg.BUF_ZEROED)]
    with dev.create_queue() as q:
        for b in bufs:
            assert not b.cpu_mapped
            assert b.gpu_address != 0 and b.size == 4 * n
            v = b.view(64, 128)                       # views do not map either
            assert v.gpu_address == b.gpu_address + 64
            q.launch(fill, grid=n // 256, block=256, args=(b, np.uint32(9), np.uint32(n)))
        q.copy(bufs[1], 0, bufs[0], 0, 4 * n)         # GPU copies do not map
        q.synchronize(TIMEOUT_NS)
    assert cpu_ptr_calls == []
    assert not any(b.cpu_mapped for b in bufs)
    # The first CPU access maps, once.
    a = bufs[1].numpy(np.uint32)
    assert bufs[1].cpu_mapped and cpu_ptr_calls == [bufs[1].handle]
    assert (a == 9).all()
    assert bufs[1].cpu_ptr == a.ctypes.data
    assert bufs[1].view(4).numpy(np.uint32)[0] == 9
    assert bufs[1].read(4, offset=8) == np.uint32(9).tobytes()
    assert cpu_ptr_calls == [bufs[1].handle]
    bufs[2].write(b"\x01\x02")                        # a write is a CPU access too
    assert cpu_ptr_calls == [bufs[1].handle, bufs[2].handle]
    del a
    for b in bufs:
        b.close()
    fill.close()
    mod.close()


# --------------------------------------------------------------------------------------------
# Views

def test_views_as_kernel_arguments(dev):
    n = 5000
    nbytes = 4 * n
    stride = (nbytes + 255) // 256 * 256
    mod = dev.load_module_file(cubin_path(dev))
    k = mod.kernel("vector_add")
    with dev.alloc(256 + 3 * stride + 256, tg.BUF_ZEROED) as big:
        whole = big.numpy(np.uint8)
        whole[:] = 0xEE                               # sentinels around the views
        a, b, c = (big.view(256 + i * stride, nbytes) for i in range(3))
        assert (a.offset, a.size, a.buffer) == (256, nbytes, big)
        assert c.gpu_address == big.gpu_address + 256 + 2 * stride
        a.numpy(np.float32)[:] = np.arange(n, dtype=np.float32)
        b.numpy(np.float32)[:] = 0.5
        with dev.create_queue() as q:
            q.launch(k, grid=(n + 255) // 256, block=256, args=(a, b, c, np.uint32(n)))
            q.synchronize(TIMEOUT_NS)
        np.testing.assert_array_equal(c.numpy(np.float32), np.arange(n, dtype=np.float32) + 0.5)
        # Nothing outside c was written.
        end_c = c.offset + nbytes
        assert (whole[end_c:] == 0xEE).all()
        assert (whole[:256] == 0xEE).all()
        # A view of a view is relative to it.
        cc = c.view(8, 8)
        assert cc.offset == c.offset + 8 and cc.gpu_address == c.gpu_address + 8
        np.testing.assert_array_equal(cc.numpy(np.float32), [2.5, 3.5])
        del whole
    k.close()
    mod.close()


@pytest.mark.parametrize("kind", [tg.QueueKind.COPY, tg.QueueKind.COMPUTE])
def test_copy_between_views_translates_offsets(dev, kind):
    with dev.alloc(8192, tg.BUF_ZEROED) as buf:
        src, dst = buf.view(1000, 2000), buf.view(4096, 3000)
        src.numpy(np.uint8)[:] = np.arange(2000) % 251
        with dev.create_queue(kind) as q:
            q.copy(dst, 10, src, 100, 1500)          # copy(dst, dst_off, src, src_off, n)
            q.copy(buf, 0, src, 0, 16)               # a buffer and a view mix
            q.copy(dst, src_offset=0, src=buf, dst_offset=2000, size_bytes=8)
            q.synchronize(TIMEOUT_NS)
        whole = buf.numpy(np.uint8)
        np.testing.assert_array_equal(whole[4096 + 10:4096 + 1510], np.arange(100, 1600) % 251)
        assert not whole[4096:4096 + 10].any() and not whole[4096 + 1510:4096 + 2000].any()
        np.testing.assert_array_equal(whole[:16], np.arange(16))
        np.testing.assert_array_equal(whole[4096 + 2000:4096 + 2008], np.arange(8))
        del whole


def test_view_and_copy_bounds(dev):
    with dev.alloc(4096) as buf, dev.alloc(4096) as other, dev.create_queue() as q:
        with pytest.raises(tg.InvalidArgument, match=r"view: range \[4000, 4100\) is outside the buffer \(4096 bytes\)"):
            buf.view(4000, 100)
        with pytest.raises(tg.InvalidArgument, match="view: offset 5000 is outside"):
            buf.view(5000)
        with pytest.raises(tg.InvalidArgument, match="offset -1 is negative"):
            buf.view(-1, 10)
        with pytest.raises(tg.InvalidArgument, match="must be an int"):
            buf.view(1.5, 10)
        assert buf.view(4096).size == 0
        v = buf.view(1024, 512)
        with pytest.raises(tg.InvalidArgument, match=r"view: range \[500, 520\) is outside the view \[1024, 1536\)"):
            v.view(500, 20)
        with pytest.raises(tg.InvalidArgument, match=r"^Queue.copy: dst range \[0, 600\) is outside the view"):
            q.copy(v, 0, other, 0, 600)               # inside the buffer, outside the view
        with pytest.raises(tg.InvalidArgument, match=r"^Queue.copy: src range \[256, 768\)"):
            q.copy(other, 0, v, 256, 512)
        with pytest.raises(tg.InvalidArgument, match="src must be a Buffer or BufferView"):
            q.copy(other, 0, b"bytes", 0, 4)
        with pytest.raises(tg.InvalidArgument, match="overlap"):  # the library's check
            q.copy(buf.view(0, 64), 0, buf.view(32, 64), 0, 64)
        with pytest.raises(tg.InvalidArgument, match=r"numpy: shape \(200,\) of uint32 needs 800 bytes"):
            v.numpy(np.uint32, shape=200)
        with pytest.raises(tg.InvalidArgument, match=r"write: range \[510, 514\)"):
            v.write(b"abcd", offset=510)
        v.write(np.arange(4, dtype=np.uint8), offset=508)
        assert v.read(offset=508) == bytes([0, 1, 2, 3])
        assert buf.read(4, offset=1024 + 508) == bytes([0, 1, 2, 3])
    with pytest.raises(tg.InvalidHandle):
        v.gpu_address                                 # the buffer is closed


# --------------------------------------------------------------------------------------------
# GPU timestamps

@pytest.mark.parametrize("kind", [tg.QueueKind.COPY, tg.QueueKind.COMPUTE])
def test_timestamps_around_a_copy(dev, kind):
    size = 4 << 20
    with dev.alloc(size) as src, dev.alloc(size) as dst, dev.create_queue(kind) as q, \
            dev.create_signal() as start, dev.create_signal() as end:
        assert start.timestamp == 0 and end.timestamp == 0
        q.signal(start, 1)
        q.copy(dst, 0, src, 0, size)
        q.signal(end, 1)
        q.submit()
        end.wait(1, TIMEOUT_NS)
        t0, t1 = start.timestamp, end.timestamp
        assert 0 < t0 <= t1
        start.set(7)                                  # a CPU set leaves the timestamp alone
        assert start.timestamp == t0
        with q.timed() as t:
            q.copy(dst, 0, src, 0, size)
        assert t.start_ns >= t1 and t.end_ns >= t.start_ns
        assert t.elapsed_ns == t.end_ns - t.start_ns >= 0
        assert t.elapsed_s == t.elapsed_ns * 1e-9


def test_timer_does_not_wait_when_the_block_raises(dev):
    with dev.create_queue() as q:
        with pytest.raises(RuntimeError):
            with q.timed() as t:
                raise RuntimeError("boom")
        assert t.elapsed_ns is None
        q.synchronize(TIMEOUT_NS)


# --------------------------------------------------------------------------------------------
# Device selection

def test_device_spec_from_index():
    jetson = os.path.exists("/dev/nvgpu/igpu0/ctrl")
    assert tg.device_spec() is None
    assert tg.device_spec("emu") == "emu"
    assert tg.device_spec(None, 3) == "rm:3"
    assert tg.device_spec(None, 0) == ("nvgpu" if jetson else "rm:0")
    assert tg.device_spec("rm", 2) == "rm:2"
    assert tg.device_spec("rm:1", 1) == "rm:1"
    assert tg.device_spec("emu", 0) == "emu"
    assert tg.device_spec("nvgpu", 0) == "nvgpu"
    with pytest.raises(tg.NotFound, match='"emu" has one device'):
        tg.device_spec("emu", 1)
    with pytest.raises(tg.InvalidArgument, match="conflicts"):
        tg.device_spec("rm:1", 2)
    for bad in (-1, True, "0", 1.0):
        with pytest.raises(tg.InvalidArgument, match="index must be an int"):
            tg.device_spec(None, bad)


def test_device_index_on_emu():
    with tg.Device("emu", index=0) as d:
        assert d.info.emulated and d.spec == "emu" and d.index == 0
    with pytest.raises(tg.NotFound):
        tg.Device("emu", index=1)


def test_device_index_opens_rm_n(monkeypatch):
    seen = []

    def fake_open(spec, out):
        seen.append(spec)
        return int(tg.Status.NOT_FOUND)

    monkeypatch.setattr(tg.lib, "tg_device_open", fake_open)
    with pytest.raises(tg.NotFound):
        tg.Device(index=2)
    with pytest.raises(tg.NotFound):
        tg.Device("rm", index=5)
    assert seen == [b"rm:2", b"rm:5"]


def test_tegragpu_device_applies_only_without_a_spec(monkeypatch):
    monkeypatch.setenv("TEGRAGPU_DEVICE", "emu")
    with tg.Device() as d:                            # no spec: the environment's device
        assert d.info.emulated
    with pytest.raises(tg.InvalidArgument, match="no-such-device"):
        tg.Device("no-such-device")                   # an explicit spec wins


# --------------------------------------------------------------------------------------------
# Logging

def test_log_callback():
    got = []
    tg.set_log_level(tg.LogLevel.INFO)
    tg.set_log_callback(lambda level, target, message: got.append((level, target, message)))
    try:
        with tg.Device("emu"):
            pass
    finally:
        tg.set_log_callback(None)
        tg.set_log_level(tg.LogLevel.WARN)
    assert got, "no log message for a device open at level info"
    assert all(isinstance(lv, tg.LogLevel) and lv <= tg.LogLevel.INFO for lv, _, _ in got)
    assert any(t.startswith("tegragpu") for _, t, _ in got)
    with pytest.raises(tg.InvalidArgument, match="tg_set_log_level"):
        tg.set_log_level(42)


# --------------------------------------------------------------------------------------------
# Finding the library

def _import_in_subprocess(tmp_path, env_changes, pkg_parent=None, code=None):
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    env["PYTHONPATH"] = pkg_parent or os.path.dirname(PKG_DIR)
    code = code or "import tegragpu as tg; print(tg.library_source()); print(tg.library_path())"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)


def _package_copy(tmp_path, with_library=None):
    """A copy of the package outside the source tree (so no build directories are found)."""
    parent = tmp_path / "site"
    shutil.copytree(PKG_DIR, str(parent / "tegragpu"),
                    ignore=shutil.ignore_patterns("__pycache__", "_lib"))
    if with_library:
        (parent / "tegragpu" / "_lib").mkdir()
        shutil.copyfile(with_library, str(parent / "tegragpu" / "_lib" / "libtegragpu.so.0"))
    return str(parent)


def _no_installed_library():
    return {"TEGRAGPU_LIBRARY": None, "PKG_CONFIG_PATH": "", "PKG_CONFIG_LIBDIR": "/nonexistent",
            "LD_LIBRARY_PATH": None}


def test_bad_tegragpu_library_is_a_clear_error(tmp_path):
    bad = str(tmp_path / "nope" / "libtegragpu.so")
    r = _import_in_subprocess(tmp_path, {"TEGRAGPU_LIBRARY": bad})
    assert r.returncode != 0
    assert "ImportError" in r.stderr or "LibraryNotFoundError" in r.stderr
    assert f"tegragpu.LibraryNotFoundError: TEGRAGPU_LIBRARY={bad} cannot be loaded (no such " \
        "file)" in r.stderr
    # Not a shared library at all.
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an ELF file")
    r = _import_in_subprocess(tmp_path, {"TEGRAGPU_LIBRARY": str(junk)})
    assert r.returncode != 0 and f"TEGRAGPU_LIBRARY={junk} cannot be loaded" in r.stderr


def test_lookup_order(tmp_path):
    env = {}
    none = lambda: (None, "no tegragpu.pc on PKG_CONFIG_PATH")  # noqa: E731
    # TEGRAGPU_LIBRARY alone, when set.
    c = tg._candidates({"TEGRAGPU_LIBRARY": "/x/libtegragpu.so"}, PKG_DIR, none)
    assert c == [("TEGRAGPU_LIBRARY", "/x/libtegragpu.so", None)]
    # Installed package: its copy, pkg-config, the system loader.
    pkg = str(tmp_path / "site" / "tegragpu")
    c = tg._candidates(env, pkg, lambda: ("/opt/tg/lib", None))
    assert [(s, p) for s, p, _ in c] == [
        ("package", os.path.join(pkg, "_lib", "libtegragpu.so.0")),
        ("pkg-config", "/opt/tg/lib/libtegragpu.so.0"),
        ("system", "libtegragpu.so.0"),
        ("source tree", None)]
    # In a source tree: then its build directories.
    root = tmp_path / "repo"
    (root / "include").mkdir(parents=True)
    (root / "include" / "tegragpu.h").write_text("")
    (root / "Cargo.toml").write_text("")
    pkg = str(root / "python" / "tegragpu")
    c = tg._candidates(env, pkg, none)
    assert [(s, p) for s, p, _ in c] == [
        ("package", os.path.join(pkg, "_lib", "libtegragpu.so.0")),
        ("pkg-config", None),
        ("system", "libtegragpu.so.0"),
        ("source tree", str(root / "build" / "meson" / "libtegragpu.so")),
        ("source tree", str(root / "target" / "release" / "libtegragpu.so"))]


def test_bundled_copy_is_found(tmp_path):
    site = _package_copy(tmp_path, with_library=tg.library_path())
    r = _import_in_subprocess(tmp_path, _no_installed_library(), pkg_parent=site)
    assert r.returncode == 0, r.stderr
    source, path = r.stdout.split()
    assert source == "package"
    assert path == os.path.join(site, "tegragpu", "_lib", "libtegragpu.so.0")


def test_pkg_config_libdir_is_found(tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config is not installed")
    libdir = tmp_path / "prefix" / "lib"
    libdir.mkdir(parents=True)
    shutil.copyfile(tg.library_path(), str(libdir / "libtegragpu.so.0"))
    pc = tmp_path / "pc"
    pc.mkdir()
    (pc / "tegragpu.pc").write_text(
        f"libdir={libdir}\nName: tegragpu\nDescription: test\nVersion: {tg.__version__}\n"
        "Libs: -L${libdir} -ltegragpu\n")
    site = _package_copy(tmp_path)
    env = _no_installed_library()
    env.update(PKG_CONFIG_PATH=str(pc), PKG_CONFIG_LIBDIR=str(pc))
    r = _import_in_subprocess(tmp_path, env, pkg_parent=site)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["pkg-config", str(libdir / "libtegragpu.so.0")]


def test_nothing_found_says_what_was_tried(tmp_path):
    site = _package_copy(tmp_path)
    r = _import_in_subprocess(tmp_path, _no_installed_library(), pkg_parent=site)
    if r.returncode == 0:
        pytest.skip(f"an installed libtegragpu was found ({' '.join(r.stdout.split())})")
    assert "libtegragpu not found (4 places tried). Fix: set TEGRAGPU_LIBRARY" in r.stderr
    assert "package: " in r.stderr and "system: libtegragpu.so.0" in r.stderr


def test_the_interpreters_site_dirs_are_passed_to_the_library():
    import site
    dirs = os.environ["TEGRAGPU_PYTHON_SITE"].split(os.pathsep)
    assert dirs[0] == sys.prefix, dirs
    for d in site.getsitepackages():
        assert d in dirs, (d, dirs)


def test_tell_python_site_puts_this_interpreter_first_once():
    env = {"TEGRAGPU_PYTHON_SITE": os.pathsep.join(["/x", sys.prefix, "", "/y"])}
    tg._tell_python_site(env)
    dirs = env["TEGRAGPU_PYTHON_SITE"].split(os.pathsep)
    assert dirs[0] == sys.prefix and dirs[-2:] == ["/x", "/y"], dirs
    assert dirs.count(sys.prefix) == 1 and "" not in dirs, dirs


def _own_nvrtc():
    """A libnvrtc that pip installed for this interpreter, or None."""
    import glob
    import site
    for d in [*site.getsitepackages(), site.getusersitepackages()]:
        for w in ("cuda_nvrtc", "cu13"):
            found = glob.glob(os.path.join(d, "nvidia", w, "lib", "libnvrtc.so.1*"))
            if found:
                return found[0]
    return None


def test_libnvrtc_of_this_interpreter_is_found_without_activation(tmp_path):
    """An unactivated venv's python (build/venv/bin/python run by its path), from another
    directory, with the library outside the source tree: libnvrtc from this interpreter's
    site-packages is found."""
    if _own_nvrtc() is None:
        pytest.skip("no libnvrtc installed with pip for this interpreter")
    site_copy = _package_copy(tmp_path, with_library=tg.library_path())
    code = ("import tegragpu as tg\n"
            "with tg.Device('emu') as d:\n"
            "    d.compile_cuda('extern \"C\" __global__ void f(int* p) { *p = 1; }')\n"
            "print(tg.library_source(), 'compiled')\n")
    changes = dict(_no_installed_library(), TEGRAGPU_NVRTC=None, TEGRAGPU_PYTHON_SITE=None,
                   VIRTUAL_ENV=None, CONDA_PREFIX=None)
    r = _import_in_subprocess(tmp_path, changes, pkg_parent=site_copy, code=code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["package", "compiled"], r.stdout


@pytest.mark.skipif(os.environ.get("TEGRAGPU_TEST_INSTALLED") != "1",
                    reason="tests the source tree's package (TEGRAGPU_TEST_INSTALLED=1: the installed one)")
def test_installed_package_is_the_one_tested():
    assert not PKG_DIR.startswith(os.path.join(ROOT, "python") + os.sep), PKG_DIR
    assert PKG_DIR.startswith(sys.prefix), (PKG_DIR, sys.prefix)
