"""Tests of the tinygrad device TEGRA over several devices: the plan of a multi-device batch,
transfers between devices, the graph over two devices, on the emulated Orin unless
TEGRAGPU_DEVICE names another device. The emulated Orin has one GPU and no peer access: a second
TEGRA device here is a second emulated Orin ("TEGRA:5"), and where a test needs peer access, the
two primitives the device uses for it across devices (a GPU wait on the other's signal, a copy
into the other's memory) are replaced by CPU equivalents that log what was recorded. The tests
named two_gpus run on two real GPUs (TEGRAGPU_DEVICE=rm on a machine with two or more) and are
skipped elsewhere.

Needs tinygrad 0.14.0 (pip install tinygrad==0.14.0); skipped without it.
"""
import ctypes
import warnings

import numpy as np
import pytest

from tinygrad_common import (  # noqa: F401  (dev is a fixture)
    SPEC, _FakeAst, _FakeInfo, _FakeUop, _FakeVar, _elf, _fixture_cubin, copyin, dev, td)

import tegragpu as tg  # noqa: E402
from tinygrad import Device, Tensor, dtypes  # noqa: E402
from tinygrad.device import Buffer  # noqa: E402
from tinygrad.uop.ops import Ops  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::tegragpu.tinygrad_device.TegraEmulatorWarning")


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
            targets = {k for j in range(n) for k in deps[j] if devs[k] != devs[j]}
            assert sorted(j for s in steps for j in s.items) == list(range(n))
            for s in steps:
                assert all(devs[j] == s.dev for j in s.items)
                assert all(w < s.index and steps[w].dev != s.dev for w in s.waits), s
                ks = {"copy" if kinds[j] == "copy" else "kernels" for j in s.items}
                assert s.kind == (ks.pop() if len(ks) == 1 else "mixed"), s
                # what a step's calls need from other queues has a lower level than its first
                # call; from the first call another queue depends on, the step signals and
                # takes calls of higher levels only if other queues depend on them too
                lv0 = levels[s.items[0]]
                assert all(levels[k] < lv0 for j in s.items for k in deps[j]
                           if devs[k] != s.dev), s
                first = [i for i, j in enumerate(s.items) if j in targets]
                assert s.signal == bool(first), s
                if first:
                    after = s.items[first[0]:]
                    assert all(j in targets or levels[j] == levels[p]
                               for p, j in zip(after, after[1:])), s
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
    # each copy joins the kernel before it on its queue, and that step signals
    assert got == [(0, "mixed", [0, 1], [], True), (1, "kernels", [5], [], False),
                   (1, "mixed", [2, 3], [0], True), (0, "kernels", [4], [2], False)], got
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
    # A GPU wait for TEGRA:5's fill, unless the fill had already completed when the copy was
    # recorded (then TEGRA:5's timeline is marked done up to it and no wait is needed).
    if dev2.tl_done >= dev2.tl_value:
        assert [x[:3] for x in log] in ([("copy", "TEGRA", lane)],
                                        [("wait", "TEGRA", lane), ("copy", "TEGRA", lane)]), log
    else:
        assert [x[:3] for x in log] == [("wait", "TEGRA", lane), ("copy", "TEGRA", lane)], log
    if log[0][0] == "wait":
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
    # (sm: a copy shares its step with the kernel before it on the compute queue)
    if cl == "copy":
        assert [(s.dev[0].device, s.dev[1], s.kind) for s in g.steps] == [
            ("TEGRA", "compute", "kernels"), ("TEGRA", cl, "copy"),
            ("TEGRA:5", "compute", "kernels"), ("TEGRA:5", cl, "copy"),
            ("TEGRA", "compute", "kernels")], g.steps
        assert [s.waits for s in g.steps] == [[], [0], [1], [2], [3]], g.steps
    else:
        assert [(s.dev[0].device, s.dev[1], s.kind) for s in g.steps] == [
            ("TEGRA", "compute", "mixed"), ("TEGRA:5", "compute", "mixed"),
            ("TEGRA", "compute", "kernels")], g.steps
        assert [s.waits for s in g.steps] == [[], [0], [1]], g.steps
    # the emulated Orins have no real peer access: the library refuses the second copy in a
    # command buffer, so it is recorded on the queue (the first copy's source is an input)
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
    # one queue: one step; the copies between distinct buffers go into the command buffer with
    # the kernel, those within one buffer (a no-op, and overlapping halves) onto the queue
    assert [(s.kind, s.items, s.waits) for s in g.steps] == [("mixed", [0, 1, 2, 3, 4], [])]
    if td.cmdbuf_supported():
        assert "1 kernel runs in command buffers, 4 copies (2 in command buffers)" in \
            g.cmdbuf_note, g.cmdbuf_note
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
