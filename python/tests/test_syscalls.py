"""Device-side printf and assert (the vprintf / __assertfail syscalls) against libcuda: nvcc's
cubin (tests/fixtures/syscalls/printf_assert.cu) runs in a child process through libtegragpu
and, where libcuda is present, through libcuda; the printed text and the assertion message
must be the same. Needs a GPU (TEGRAGPU_DEVICE=rm); on the emulated Orin only the module load
is checked (it cannot run nvcc's code)."""
import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

import tegragpu as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.environ.get("TEGRAGPU_DEVICE") or "emu"
PKG = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))


def fixture(sm):
    p = os.path.join(ROOT, "tests", "fixtures", "syscalls", f"printf_assert.sm_{sm[0]}{sm[1]}.cubin")
    if not os.path.exists(p):
        pytest.skip(f"no printf/assert fixture for sm_{sm[0]}{sm[1]}")
    return p


def device_sm():
    with tg.Device(SPEC) as d:
        i = d.info
        return (i.sm_major, i.sm_minor), i.emulated


TG_CHILD = textwrap.dedent("""
    import sys, numpy as np, tegragpu as tg
    path, kernel, v = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tg.Device(sys.argv[4]) as d:
        m = d.load_module_file(path)
        k = m.kernel(kernel)
        with d.alloc(64, tg.BUF_ZEROED) as out, d.create_queue() as q:
            q.launch(k, grid=1, block=4, args=(out, np.int32(v)))
            q.submit()
            try:
                d.synchronize()
            except tg.DeviceFault as e:
                print("FAULT", e.message, file=sys.stderr, flush=True)
                sys.exit(3)
            print("OUT", out.numpy(np.int32)[:4].tolist(), file=sys.stderr, flush=True)
""")

CUDA_CHILD = textwrap.dedent("""
    import ctypes, sys
    path, kernel, v = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cu = ctypes.CDLL("libcuda.so.1")
    def ok(r, what):
        if r != 0:
            print("CUDAERR", what, r, file=sys.stderr, flush=True)
            sys.exit(3)
    ok(cu.cuInit(0), "cuInit")
    dev, ctx, mod, fn, buf = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint64()
    ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
    ok(cu.cuCtxSetCurrent(ctx), "current")
    data = open(path, "rb").read()
    ok(cu.cuModuleLoadData(ctypes.byref(mod), data), "load")
    ok(cu.cuModuleGetFunction(ctypes.byref(fn), mod, kernel.encode()), "function")
    ok(cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(64)), "alloc")
    a0, a1 = ctypes.c_uint64(buf.value), ctypes.c_int32(v)
    args = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(a0), ctypes.c_void_p), ctypes.cast(ctypes.byref(a1), ctypes.c_void_p))
    ok(cu.cuLaunchKernel(fn, 1, 1, 1, 4, 1, 1, 0, None, args, None), "launch")
    ok(cu.cuCtxSynchronize(), "synchronize")
    out = (ctypes.c_int32 * 4)()
    ok(cu.cuMemcpyDtoH_v2(out, ctypes.c_uint64(buf.value), ctypes.c_size_t(16)), "copy")
    print("OUT", list(out), file=sys.stderr, flush=True)
""")


def run_child(code, path, kernel, v):
    env = dict(os.environ, PYTHONPATH=PKG + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", code, path, kernel, str(v), SPEC], env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def have_libcuda():
    try:
        return ctypes.CDLL("libcuda.so.1").cuInit(0) == 0
    except OSError:
        return False


def test_printf_and_assert_modules_load():
    sm, _ = device_sm()
    with tg.Device(SPEC) as d:
        m = d.load_module_file(fixture(sm))
        for name in ("k_printf", "k_assert", "k_plain"):
            assert m.kernel(name).params == [(0, 8), (8, 4)]


def test_printf_prints_what_libcuda_prints():
    sm, emulated = device_sm()
    if emulated:
        pytest.skip("the emulated Orin cannot run nvcc's code")
    path = fixture(sm)
    rc, out, err = run_child(TG_CHILD, path, "k_printf", 42)
    assert rc == 0, err
    assert out == "hello 42 1.500000 str\n" * 4, out
    assert "OUT [42, 42, 42, 42]" in err, err
    if have_libcuda():
        rc, cuda_out, cuda_err = run_child(CUDA_CHILD, path, "k_printf", 42)
        assert rc == 0, cuda_err
        assert out == cuda_out
        assert "OUT [42, 42, 42, 42]" in cuda_err, cuda_err


def test_a_failed_assert_faults_with_libcudas_message():
    sm, emulated = device_sm()
    if emulated:
        pytest.skip("the emulated Orin cannot run nvcc's code")
    path = fixture(sm)
    rc, _, err = run_child(TG_CHILD, path, "k_assert", 3)  # the assertion holds
    assert rc == 0 and "OUT [3, 3, 3, 3]" in err, err
    rc, _, err = run_child(TG_CHILD, path, "k_assert", 7)
    assert rc == 3, err
    assert "device-side assertion failed" in err and "Assertion `v != 7` failed." in err, err
    ours = [l for l in err.splitlines() if l.endswith("Assertion `v != 7` failed.") and not l.startswith("FAULT")]
    assert ours, err
    if have_libcuda():
        rc, _, cuda_err = run_child(CUDA_CHILD, path, "k_assert", 7)
        assert rc == 3 and "CUDAERR synchronize 710" in cuda_err, cuda_err  # CUDA_ERROR_ASSERT
        theirs = [l for l in cuda_err.splitlines() if l.endswith("Assertion `v != 7` failed.")]
        assert theirs, cuda_err
        # The same text: file, line, function, block and thread (libcuda prints every failing
        # thread; the library reports the first).
        assert ours[0] in theirs, (ours, theirs)
