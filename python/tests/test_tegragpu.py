"""End-to-end tests of the Python binding (on the emulated Orin unless TEGRAGPU_DEVICE says
otherwise): numpy views of GPU memory, a fixture-kernel launch, a copy-queue copy, run-time
compilation, and errors raised with the library's messages."""
import os
import time
import threading

import numpy as np

import pytest

import tegragpu as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.environ.get("TEGRAGPU_DEVICE") or "emu"
TIMEOUT_NS = 30_000_000_000


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


def test_version_matches_package():
    major, minor, patch = tg.version()
    assert major == tg.ABI_MAJOR
    assert tg.__version__ == f"{major}.{minor}.{patch}"


def test_device_info(dev):
    i = dev.info
    assert i.name
    assert i.sm_count > 0 and i.memory_bytes > 0
    if i.emulated:
        # The emulated device is a Jetson AGX Orin GPU: nvgpu backend, sm_87.
        assert (i.backend, i.sm_major, i.sm_minor) == (tg.Backend.NVGPU, 8, 7)


def test_vector_add_through_numpy_views(dev):
    n = 10_007
    mod = dev.load_module_file(cubin_path(dev))
    k = mod.kernel("vector_add")
    assert k.params == [(0, 8), (8, 8), (16, 8), (24, 4)]
    with dev.alloc(4 * n) as a, dev.alloc(4 * n) as b, dev.alloc(4 * n, tg.BUF_ZEROED) as c:
        va, vb, vc = a.numpy(np.float32), b.numpy(np.float32), c.numpy(np.float32)
        va[:] = np.arange(n, dtype=np.float32) * 0.25
        vb[:] = 7.0 - np.arange(n, dtype=np.float32)
        with dev.create_queue() as q, dev.create_signal(0) as done:
            q.launch(k, grid=(n + 255) // 256, block=256, args=(a, b, c, np.uint32(n)))
            q.signal(done, 1)
            q.submit()
            done.wait(1, TIMEOUT_NS)
            assert done.value == 1
        expected = np.arange(n, dtype=np.float32) * 0.25 + (7.0 - np.arange(n, dtype=np.float32))
        np.testing.assert_array_equal(vc, expected)
        del va, vb, vc
    k.close()
    mod.close()


@pytest.mark.parametrize("kind", [tg.QueueKind.COPY, tg.QueueKind.COMPUTE])
def test_queue_copy(dev, kind):
    # Copy queue: the copy engine; compute queue: the built-in SM copy kernel.
    size = 3 * 1024 * 1024 + 12
    with dev.alloc(size) as src, dev.alloc(size, tg.BUF_ZEROED) as dst:
        s = src.numpy(np.uint8)
        s[:] = (np.arange(size, dtype=np.uint64) * 2654435761 >> 7).astype(np.uint8)
        with dev.create_queue(kind) as q, dev.create_signal() as done:
            q.copy(dst, src, size_bytes=size - 20, dst_offset=4, src_offset=16)
            q.signal(done, 5)
            q.submit()
            done.wait(5, TIMEOUT_NS)
            q.synchronize(TIMEOUT_NS)
        d = dst.numpy(np.uint8)
        assert not d[:4].any()
        np.testing.assert_array_equal(d[4:size - 16], s[16:size - 4])
        assert not d[size - 16:].any()


def test_saxpy_compiled_from_cuda_source(dev):
    with open(os.path.join(ROOT, "tests", "fixtures", "kernels.cu")) as f:
        source = f.read()
    try:
        mod = dev.compile_cuda(source, ["--std=c++17"])
    except tg.LibraryMissingError as e:
        if os.environ.get("TEGRAGPU_REQUIRE_NVRTC") == "1":
            raise
        pytest.skip(str(e))
    k = mod.kernel("saxpy")
    n = 4099
    with dev.alloc(4 * n) as x, dev.alloc(4 * n) as y:
        xs, ys = x.numpy(np.float32), y.numpy(np.float32)
        xs[:] = np.arange(n) % 100
        ys[:] = np.arange(n) % 13
        with dev.create_queue() as q:
            q.launch(k, grid=(n + 127) // 128, block=128, args=(3.0, x, y, n))
            q.submit()
            q.synchronize(TIMEOUT_NS)
        np.testing.assert_array_equal(ys, 3.0 * (np.arange(n) % 100) + np.arange(n) % 13)
        del xs, ys


def test_errors_raise_with_messages(dev):
    with pytest.raises(tg.InvalidArgumentError, match=r"^tg_buf_alloc: size_bytes is 0$") as e:
        dev.alloc(0)
    assert e.value.status == tg.Status.INVALID_ARGUMENT
    with pytest.raises(tg.InvalidArgumentError, match=r"tg_buf_alloc: flags 0x10 has unknown bits"):
        dev.alloc(4096, 16)
    with pytest.raises(tg.OutOfMemoryError, match="4611686018427387904"):
        dev.alloc(1 << 62)
    with pytest.raises(tg.NotFoundError, match=r"tg_module_load_file: .*/no/such.cubin"):
        dev.load_module_file("/no/such.cubin")
    with pytest.raises(tg.InvalidCubinError, match="^tg_module_load: "):
        dev.load_module(b"\x7fELF" + bytes(60))
    mod = dev.load_module_file(cubin_path(dev))
    with pytest.raises(tg.NotFoundError, match=r'kernel "nope" is not in the module; it has: .*vector_add'):
        mod.kernel("nope")
    bounded = mod.kernel("bounded_128")
    with dev.alloc(4096) as out, dev.create_queue() as q:
        with pytest.raises(tg.InvalidLaunchError, match=r"^tg_launch: .*256.*128"):
            q.launch(bounded, grid=1, block=256, args=(out,))
        with pytest.raises(tg.InvalidLaunchError, match=r"takes 8 bytes of parameters, params_size_bytes is 3"):
            q.launch_packed(bounded, 1, 128, b"abc")
        with pytest.raises(tg.InvalidArgumentError, match="overlap"):
            q.copy(out, out, 16, dst_offset=8)
    with dev.create_signal(0) as s:
        with pytest.raises(tg.GpuTimeoutError, match=r"^tg_signal_wait: .*waiting for 3"):
            s.wait(3, 1_000_000)
    # A destroyed handle gives INVALID_HANDLE, from the library itself.
    q = dev.create_queue(tg.QueueKind.COPY)
    raw = q.handle
    q.close()
    assert tg._lib.tg_queue_submit(raw) == tg.Status.INVALID_HANDLE
    assert tg._lib.tg_last_error_message().decode().startswith("tg_queue_submit: queue 0x")
    with pytest.raises(tg.InvalidHandleError):
        q.submit()
    bounded.close()
    mod.close()


def test_buffer_outlives_close_while_views_exist(dev):
    b = dev.alloc(64)
    v = b.numpy(np.uint32)
    v[:] = 7
    b.close()                      # deferred: the view still uses the memory
    assert int(v.sum()) == 7 * 16
    h = b._h
    assert h is not None
    del v                          # last view gone: the buffer is freed now
    assert b.closed
    assert tg._lib.tg_buf_size(h, None) == tg.Status.INVALID_HANDLE


def test_status_strings():
    assert tg.status_str(tg.Status.TIMEOUT).startswith("TG_ERROR_TIMEOUT")
    assert tg.status_str(1234) == "unknown tg_status"


def test_queue_depth(dev):
    with pytest.raises(tg.InvalidArgumentError, match=r"^tg_queue_create_with_depth: .*depth 100"):
        dev.create_queue(depth=100)
    mod = dev.load_module_file(cubin_path(dev))
    fill = mod.kernel("fill_u32")
    n = 4096
    with dev.alloc(4 * n, tg.BUF_ZEROED) as out, dev.create_queue(depth=16) as q:
        # More launches than the queue holds: recording waits for the GPU and wraps around.
        for v in range(1, 41):
            q.launch(fill, grid=n // 256, block=256, args=(out, np.uint32(v), np.uint32(n)))
            q.submit()
        q.synchronize(TIMEOUT_NS)
        view = out.numpy(np.uint32)
        assert (view == 40).all()
        del view
    fill.close()
    mod.close()


def test_launch_with_submit(dev):
    mod = dev.load_module_file(cubin_path(dev))
    fill = mod.kernel("fill_u32")
    n = 1024
    with dev.alloc(4 * n, tg.BUF_ZEROED) as out, dev.create_queue() as q, \
            dev.create_signal() as s:
        q.signal(s, 1)  # recorded, not submitted
        time.sleep(0.02)
        assert s.value == 0
        q.launch(fill, grid=n // 256, block=256, args=(out, np.uint32(7), np.uint32(n)),
                 submit=True)
        deadline = time.monotonic() + 10
        while s.value < 1:  # submitted by the launch (read, not waited for: a wait submits)
            assert time.monotonic() < deadline, "the launch did not submit the signal"
            time.sleep(0.001)
        q.synchronize(TIMEOUT_NS)
        view = out.numpy(np.uint32)
        assert (view == 7).all()
        del view
    fill.close()
    mod.close()


def test_owned_queue_serves_only_its_thread(dev):
    import threading
    mod = dev.load_module_file(cubin_path(dev))
    fill = mod.kernel("fill_u32")
    n = 1024
    with dev.alloc(4 * n, tg.BUF_ZEROED) as out, dev.create_queue(owned=True, depth=16) as q:
        for v in range(1, 25):
            q.launch(fill, grid=n // 256, block=256, args=(out, np.uint32(v), np.uint32(n)))
            q.submit()
        errors = []

        def other():
            try:
                q.submit()
            except tg.InvalidArgumentError as e:
                errors.append(str(e))

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert len(errors) == 1 and errors[0].startswith("tg_queue_submit:"), errors
        assert "owned by the thread" in errors[0]
        q.synchronize(TIMEOUT_NS)
        view = out.numpy(np.uint32)
        assert (view == 24).all()
        del view
    fill.close()
    mod.close()


def test_stack_limit_occupancy_and_cooperative_checks(dev):
    assert dev.stack_limit == 1024  # libcuda's default CU_LIMIT_STACK_SIZE
    dev.stack_limit = 4096
    assert dev.stack_limit == 4096
    with pytest.raises(tg.InvalidArgumentError, match="tg_device_set_limit"):
        dev.stack_limit = 1 << 40
    assert dev.stack_limit == 4096
    dev.stack_limit = 1024
    mod = dev.load_module_file(cubin_path(dev))
    k = mod.kernel("fill_u32")
    per_sm = k.max_active_blocks(256)
    assert per_sm >= 1
    assert k.max_active_blocks(32) >= per_sm
    with pytest.raises(tg.InvalidArgumentError, match="tg_kernel_max_active_blocks"):
        k.max_active_blocks(0)
    buf = dev.alloc(4096)
    q = dev.create_queue()
    too_many = per_sm * dev.info.sm_count + 1
    with pytest.raises(tg.InvalidLaunchError, match="cooperative"):
        q.launch(k, grid=too_many, block=256, args=(buf, np.uint32(1), np.uint32(1024)),
                 cooperative=True)
    # The same in a command buffer: checked when recorded, replayed when it fits.
    with dev.create_cmdbuf() as cb:
        with pytest.raises(tg.InvalidLaunchError, match="tg_cmdbuf_launch.*cooperative"):
            cb.launch(k, grid=too_many, block=256, args=(buf, np.uint32(1), np.uint32(1024)),
                      cooperative=True)
        node = cb.launch(k, grid=1, block=256, args=(buf, np.uint32(7), np.uint32(1024)),
                         cooperative=True)
        cb.finish()
        with pytest.raises(tg.InvalidArgumentError, match="TG_LAUNCH_COOPERATIVE"):
            cb.set_launch(node, grid=1, block=256)
        cb.set_launch(node, grid=4, block=256, cooperative=True)
        q.replay(cb, submit=True)
        q.synchronize(TIMEOUT_NS)
        assert list(buf.numpy(np.uint32)[:1024]) == [7] * 1024


def test_module_globals(dev):
    i = dev.info
    p = os.path.join(ROOT, "tests", "fixtures", "cubin", f"globals.sm_{i.sm_major}{i.sm_minor}.cubin")
    if not os.path.exists(p):
        pytest.skip("no globals fixture for this SM")
    mod = dev.load_module_file(p)
    with pytest.raises(tg.NotFoundError, match="tg_module_get_global"):
        mod.global_address("no_such_variable")
    va, size = mod.global_address("g_init")
    assert va != 0 and size == 16
    view = mod.global_view("g_init", "uint32")
    assert list(view) == [0x11111111, 0x22222222, 0x33333333, 0x44444444]
    # g_ptr is initialised with &g_init[2] (an R_CUDA_G64 relocation).
    assert int(mod.global_view("g_ptr", "uint64")[0]) == va + 8


def test_abort_recovers_from_a_kernel_that_does_not_end(dev):
    mod = dev.load_module_file(cubin_path(dev))
    spin, fill = mod.kernel("spin_until"), mod.kernel("fill_u32")
    n = 1024
    with dev.alloc(4096, tg.BUF_ZEROED) as flag, dev.create_signal(0) as done, \
            dev.alloc(4 * n, tg.BUF_ZEROED) as out:
        q = dev.create_queue()
        q.launch(spin, grid=1, block=32, args=(flag, np.uint64(60_000_000_000)))
        q.signal(done, 1)
        q.submit()
        with pytest.raises(tg.GpuTimeoutError, match=r"^tg_signal_wait: "):
            done.wait(1, 200_000_000)
        q.abort()
        assert q.closed
        q.abort()  # idempotent on the Python object
        assert done.value == 0
        with dev.create_queue() as q2:
            q2.launch(fill, grid=n // 256, block=256, args=(out, np.uint32(77), np.uint32(n)))
            q2.synchronize(TIMEOUT_NS)
        view = out.numpy(np.uint32)
        assert (view == 77).all()
        del view
    spin.close()
    fill.close()
    mod.close()


def test_command_buffer_replays_with_new_arguments(dev):
    k = dev.load_module_file(cubin_path(dev)).kernel("increment")
    counter = dev.alloc(4096, tg.BUF_CPU_CACHED | tg.BUF_ZEROED)
    done = dev.create_signal()
    q = dev.create_queue()
    cb = dev.create_cmdbuf()
    n_inc = cb.launch(k, 1, 32, (counter, 0))
    n_sig = cb.signal(done, 0)
    assert (n_inc, n_sig) == (0, 1)
    cb.finish()
    for r in range(1, 101):
        cb.set_args(n_inc, (counter, r))
        cb.set_value(n_sig, r)
        q.replay(cb)
        q.submit()
        done.wait(r, TIMEOUT_NS)
    assert counter.numpy(np.uint64)[0] == 100 * 101 // 2
    with pytest.raises(tg.InvalidArgument, match="tg_cmdbuf_set_value: node 0 is a launch"):
        cb.set_value(n_inc, 1)
    with pytest.raises(tg.InvalidArgument, match="finished"):
        cb.barrier()
    cb.close()
    with pytest.raises(tg.InvalidHandle):
        q.replay(cb)


def test_owned_command_buffer_serves_only_its_thread(dev):
    k = dev.load_module_file(cubin_path(dev)).kernel("increment")
    counter = dev.alloc(4096, tg.BUF_CPU_CACHED | tg.BUF_ZEROED)
    done = dev.create_signal()
    q = dev.create_queue(owned=True)
    cb = dev.create_cmdbuf(owned=True)
    n_inc = cb.launch(k, 1, 32, (counter, 0))
    n_sig = cb.signal(done, 0)
    cb.finish()
    errors = []

    def other():
        try:
            cb.set_value(n_sig, 7)
        except tg.InvalidArgument as e:
            errors.append(str(e))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 1 and "owned by the thread" in errors[0], errors
    for r in range(1, 101):
        cb.set_args(n_inc, (counter, r))
        cb.set_value(n_sig, r)
        if r % 2:
            q.replay(cb)
            q.submit()
        else:
            q.replay(cb, submit=True)
    done.wait(100, TIMEOUT_NS)
    assert counter.numpy(np.uint64)[0] == 100 * 101 // 2
    cb.close()
    q.close()


def test_command_buffer_launch_dimensions_change(dev):
    fill = dev.load_module_file(cubin_path(dev)).kernel("fill_u32")
    n = 2048
    out = dev.alloc(4 * n, tg.BUF_CPU_CACHED | tg.BUF_ZEROED)
    done = dev.create_signal()
    q = dev.create_queue()
    cb = dev.create_cmdbuf()
    n_reset = cb.launch(fill, n // 256, 256, (out, np.uint32(0), np.uint32(n)))
    n_fill = cb.launch(fill, 1, 32, (out, np.uint32(5), np.uint32(n)))
    n_sig = cb.signal(done, 0)
    cb.finish()
    view = out.numpy(np.uint32)
    for r, (grid, block) in enumerate([(1, 32), (3, 64), (8, 256), (2, 96)], start=1):
        cb.set_launch(n_fill, grid, block)
        cb.set_value(n_sig, r)
        q.replay(cb)
        q.submit()
        done.wait(r, TIMEOUT_NS)
        covered = min(grid * block, n)
        assert (view[:covered] == 5).all() and (view[covered:] == 0).all(), (grid, block)
    with pytest.raises(tg.InvalidArgument, match="tg_cmdbuf_set_launch: node 2 is a signal"):
        cb.set_launch(n_sig, 1, 32, kernel=fill)
    with pytest.raises(tg.InvalidLaunch, match="tg_cmdbuf_set_launch"):
        cb.set_launch(n_reset, 1, 4096)
    del view
    cb.close()
    out.close()


def test_texture_object_fetch_and_errors(dev):
    """A texture from Device.create_texture read by the tex_fetch_2d fixture kernel
    (out = tex(x, y) + 2 tex(x - 3, y + 2), nearest texel, clamped x, border 0.25 in y)."""
    mod = dev.load_module_file(cubin_path(dev))
    k = mod.kernel("tex_fetch_2d")
    w, h, pitch = 21, 9, 96
    with dev.alloc(pitch * h) as img, dev.alloc(4 * w * h) as out:
        rows = img.numpy(np.float32).reshape(h, pitch // 4)
        rows[:, :w] = np.random.default_rng(5).standard_normal((h, w), dtype=np.float32)
        src = rows[:, :w].copy()
        with pytest.raises(tg.InvalidArgument, match="pitch_bytes 80"):
            dev.create_texture(img, w, height=h, pitch=80)
        with pytest.raises(ValueError, match="format"):
            dev.create_texture(img, w, format="f64")
        with dev.create_texture(img, w, height=h, pitch=pitch,
                                address=("clamp", "border"), border=(0.25, 0, 0, 0)) as t:
            assert t.value >= 1
            with dev.create_queue() as q:
                q.launch(k, grid=(1, h), block=32,
                         args=(np.uint64(t.value), out, np.uint32(w), np.uint32(h)))
                q.synchronize(TIMEOUT_NS)
        got = out.numpy(np.float32).reshape(h, w).copy()
        del rows

    def texel(x, y):
        if not 0 <= y < h:
            return np.float32(0.25)
        return src[y, min(max(x, 0), w - 1)]
    want = np.array([[np.float32(texel(x, y)) + np.float32(2) * texel(x - 3, y + 2)
                      for x in range(w)] for y in range(h)], dtype=np.float32)
    np.testing.assert_array_equal(got, want)
    k.close()
    mod.close()


def test_cluster_launch(dev):
    """Queue.launch(cluster=...): runs on sm_90, NotSupported on GPUs without clusters."""
    mod = dev.load_module_file(cubin_path(dev))
    k = mod.kernel("empty_kernel")
    with dev.create_queue() as q:
        if dev.info.sm_major < 9:
            with pytest.raises(tg.NotSupported, match="sm_90"):
                q.launch(k, grid=4, block=32, cluster=(2, 1, 1))
        else:
            with pytest.raises(tg.InvalidLaunch, match="divide"):
                q.launch(k, grid=5, block=32, cluster=2)
            q.launch(k, grid=4, block=32, cluster=(2, 1, 1))
        q.launch(k, grid=4, block=32, cluster=(1, 1, 1))
        q.synchronize(TIMEOUT_NS)
    k.close()
    mod.close()


def test_cluster_launch_in_cmdbuf(dev):
    """CmdBuf.launch(cluster=...) / set_launch(cluster=...): replays on sm_90 (a launch stays
    a cluster launch); NotSupported on GPUs without clusters, recording nothing."""
    mod = dev.load_module_file(cubin_path(dev))
    k = mod.kernel("empty_kernel")
    with dev.create_cmdbuf() as cb, dev.create_queue() as q:
        if dev.info.sm_major < 9:
            with pytest.raises(tg.NotSupported, match="tg_cmdbuf_launch"):
                cb.launch(k, grid=4, block=32, cluster=(2, 1, 1))
            assert cb.launch(k, grid=4, block=32) == 0
            cb.finish()
        else:
            with pytest.raises(tg.InvalidLaunch, match="divide"):
                cb.launch(k, grid=5, block=32, cluster=2)
            node = cb.launch(k, grid=4, block=32, cluster=(2, 1, 1))
            cb.finish()
            q.replay(cb, submit=True)
            q.synchronize(TIMEOUT_NS)
            cb.set_launch(node, grid=8, block=32, cluster=4)
            with pytest.raises(tg.InvalidArgument, match="cluster"):
                cb.set_launch(node, grid=8, block=32)
        q.replay(cb, submit=True)
        q.synchronize(TIMEOUT_NS)
    k.close()
    mod.close()


def test_malloc_heap_size_limit(dev):
    """Device.malloc_heap_size (TG_LIMIT_MALLOC_HEAP_SIZE): 8 MiB by default, settable until a
    module that calls malloc is loaded."""
    assert dev.malloc_heap_size == 8 << 20
    dev.malloc_heap_size = 4 << 20
    assert dev.malloc_heap_size == 4 << 20
    with pytest.raises(tg.InvalidArgument, match="1 KiB"):
        dev.malloc_heap_size = 100
    i = dev.info
    p = os.path.join(ROOT, "tests", "conformance", "fixtures",
                     f"malloc_device.sm_{i.sm_major}{i.sm_minor}.cubin")
    if not os.path.exists(p):
        pytest.skip("no malloc fixture for this SM")
    mod = dev.load_module_file(p)
    with pytest.raises(tg.InvalidArgument, match="cannot change"):
        dev.malloc_heap_size = 16 << 20
    assert dev.malloc_heap_size == 4 << 20
    mod.close()


def test_work_runs_without_an_explicit_submit(dev):
    """synchronize (queue and device) and a signal wait submit recorded work, as CUDA's
    synchronizing calls do after cuLaunchKernel."""
    mod = dev.load_module_file(cubin_path(dev))
    fill = mod.kernel("fill_u32")
    n = 4096
    with dev.alloc(4 * n, tg.BUF_ZEROED) as out, dev.create_queue() as q, \
            dev.create_signal() as s:
        view = out.numpy(np.uint32)
        q.launch(fill, grid=n // 256, block=256, args=(out, np.uint32(1), np.uint32(n)))
        time.sleep(0.02)
        assert (view == 0).all(), "recorded work ran before anything submitted it"
        q.synchronize(TIMEOUT_NS)
        assert (view == 1).all()
        q.launch(fill, grid=n // 256, block=256, args=(out, np.uint32(2), np.uint32(n)))
        dev.synchronize(TIMEOUT_NS)
        assert (view == 2).all()
        q.launch(fill, grid=n // 256, block=256, args=(out, np.uint32(3), np.uint32(n)))
        q.signal(s, 1)
        s.wait(1, TIMEOUT_NS)
        assert (view == 3).all()
        with pytest.raises(tg.Timeout) as e:
            s.wait(2, 1_000_000)
        assert "is of 1 (below 2)" in str(e.value)
        del view
    fill.close()
    mod.close()
