"""TinyJit batches: :class:`TegraGraph` replays a batch of kernels (and copies, on one or several
TEGRA devices) from libtegragpu command buffers, or launches them from prepacked parameter
blocks."""

from __future__ import annotations

import ctypes
import os
import time

import tegragpu as tg

from . import _peer
from ._errors import TegraError
from ._program import TegraProgram
from ._tinygrad import DepsTracker, GraphRunner, MultiBuffer, MultiGraphRunner, Ops, \
    get_call_arg_uops


class _Entry:
    __slots__ = ("prg", "pbuf", "cfg", "cfg_ref", "vas", "vals", "node", "concurrent")


class _Copy:
    """A copy of a batch: ``dest`` ← ``src`` (TegraMemory), ``size`` bytes, run by ``dev``'s
    queue; ``dest_dev`` owns ``dest``."""
    __slots__ = ("dest", "src", "size", "dev", "dest_dev", "direct", "lane")


def _dims(e):
    """The launch dimensions of entry ``e``: (grid, block)."""
    return tuple(e.cfg.grid), tuple(e.cfg.block)


def cmdbuf_supported():
    """Whether the loaded package and library have command buffers (``tg_cmdbuf_*``,
    ``tg_queue_replay``)."""
    missing = getattr(tg, "missing_functions", ())
    return hasattr(tg, "CmdBuf") and hasattr(tg.Device, "create_cmdbuf") and \
        hasattr(tg.Queue, "replay") and "tg_cmdbuf_create" not in missing and \
        "tg_queue_replay" not in missing and "tg_cmdbuf_set_params" not in missing


def set_launch_supported():
    """Whether command buffers can also take new launch dimensions (``tg_cmdbuf_set_launch``),
    which batches with symbolic launch dimensions need."""
    return cmdbuf_supported() and hasattr(tg.CmdBuf, "set_launch") and \
        "tg_cmdbuf_set_launch" not in getattr(tg, "missing_functions", ())


# --------------------------------------------------------------------------------------------
# The plan of a batch over several devices (pure: tested without GPUs)

class PlanStep:
    """One step of a batch: ``items`` (indexes of the batch's calls, in launch order) run by
    queue ``dev`` (a lane: the graph uses (device, "compute"|"copy")), ``kind`` "kernels",
    "copy" or "mixed" (kernels and copies, in order on one queue). Before it, its queue waits
    for the steps ``waits`` (indexes into the plan) of other queues; after it, ``signal``: its
    queue releases its timeline (other queues wait for that)."""
    __slots__ = ("dev", "kind", "items", "waits", "signal", "index", "key")

    def __repr__(self):
        return (f"<PlanStep {self.index} {self.kind} on {self.dev!r}: {self.items} waits "
                f"{self.waits}{' signal' if self.signal else ''}>")


def plan_steps(devs, kinds, deps, concurrency=True):
    """The steps of a batch over several queues (of one device or several).

    ``devs[j]``: the queue that runs call ``j`` (any hashable); ``kinds[j]``: "kernel" or
    "copy"; ``deps[j]``: the earlier calls ``j`` depends on (it reads what they wrote, or writes
    what they read or wrote). Returns ``(levels, steps)``: a call's level is one more than its
    dependencies' highest (0 without); each queue runs its calls by (level, index), calls of
    one level being independent; the steps, in the order they are recorded, come by the level
    of their first call.

    A step waits, before its first call, for the steps of other queues that its calls depend
    on; a call that another queue depends on makes its step signal. Within a level a queue
    runs first the calls that depend on other queues, then the others, then those other
    queues depend on, so that one step holds a level's calls. A step takes a call only where
    everything that call needs from other queues has a lower level than the step's first call:
    those steps come earlier, so every wait names an earlier step, recording the steps in
    order knows each value waited for, and the queues cannot wait on each other in a circle.
    After a call other queues depend on, a step takes calls of a higher level only if other
    queues depend on them too (copies of one result to several devices share one signal), so
    a waiting queue waits for little more than what it needs."""
    n = len(devs)
    levels = [0] * n
    for j in range(n):
        for k in deps[j]:
            if not 0 <= k < j:
                raise ValueError(f"call {j} depends on call {k}, which is not earlier")
            levels[j] = max(levels[j], levels[k] + 1)
    if not concurrency:
        levels = list(range(n))
    targets = {k for j in range(n) for k in deps[j] if devs[k] != devs[j]}
    per_dev = {}
    for j in range(n):
        per_dev.setdefault(devs[j], []).append(j)
    steps, step_of = [], [None] * n
    for di, (d, calls) in enumerate(per_dev.items()):
        cur = None
        crosses = {j: [k for k in deps[j] if devs[k] != d] for j in calls}
        for j in sorted(calls, key=lambda j: (levels[j], 0 if crosses[j] else
                                              1 if j not in targets else 2, j)):
            cross = crosses[j]
            if cur is None or any(levels[k] >= cur.key[0] for k in cross) or \
                    (cur.signal and j not in targets and levels[j] > levels[cur.items[-1]]):
                cur = PlanStep()
                cur.dev, cur.kind, cur.items, cur.waits, cur.signal = d, None, [], [], False
                cur.key = (levels[j], di, j)
                steps.append(cur)
            kind = "copy" if kinds[j] == "copy" else "kernels"
            cur.kind = kind if cur.kind in (None, kind) else "mixed"
            cur.items.append(j)
            cur.waits.extend(cross)
            step_of[j] = cur
            if j in targets:
                cur.signal = True
    steps.sort(key=lambda s: s.key)
    for i, s in enumerate(steps):
        s.index = i
    # Waits by step; a wait for an earlier (or the same) step of a device this device already
    # waited for is implied (a device's timeline values grow step by step).
    waited = {}
    for s in steps:
        ws = sorted({step_of[k].index for k in s.waits})
        keep = []
        for w in ws:
            other = steps[w].dev
            if waited.get((s.dev, other), -1) < w:
                keep.append(w)
        for w in keep:
            waited[(s.dev, steps[w].dev)] = w
            if w >= s.index:  # cannot happen: the level of a dependency is lower
                raise AssertionError(f"step {s.index} waits for a later step {w}")
        s.waits = keep
    return levels, steps


# --------------------------------------------------------------------------------------------
# A run of kernels of one device: one command buffer

class _Segment:
    """Kernels of one device launched together: recorded into one command buffer, or launched
    from their prepacked parameter blocks. ``js``: the graph's entry indexes, in launch
    order. ``copies`` (graph indexes to :class:`_Copy`): copies among ``js``, recorded into
    the command buffer as copy nodes (the device's SMs; into or out of a peer's memory where
    peer access allows); a segment with copies exists only with its command buffer
    (:func:`_make_runs` splits it otherwise)."""

    def __init__(self, graph, dev, js, copies=None):
        # No reference to the graph: a cycle would leave the graph's buffers to the garbage
        # collector, which may finalize their libtegragpu buffers before tinygrad caches them.
        copies = copies or {}
        self.entries, self.dev, self.js = graph.entries, dev, js
        kjs = [j for j in js if j not in copies]
        ordered = [graph.entries[j] for j in kjs]
        self.launches = tuple((e.prg, e.pbuf, e.cfg_ref) for e in ordered)
        self.names = tuple(f"copy {copies[j].dev.device} -> {copies[j].dest_dev.device}"
                           if j in copies else graph.entries[j].prg.name for j in js)
        self.updatable = [j for j in kjs if j in graph.updatable_set]
        self.dims_updatable = [j for j in kjs if j in graph.launch_dims_replace]
        self.cmdbuf, self.cmdbuf_note, self.cb_fence = None, None, 0
        self.cb_params, self.cb_dims = {}, {}
        if dev is None or (self.dims_updatable and not set_launch_supported()) or \
                dev.sync_each or os.environ.get("TEGRA_CMDBUF", "1") == "0" or \
                not cmdbuf_supported():
            self.cmdbuf_note = "kernels launched one by one"
            return
        cb = None
        try:
            cb = dev.tdev.create_cmdbuf()
            for j in js:
                c = copies.get(j)
                if c is not None:
                    cb.copy(c.dest.region, 0, c.src.region, 0, c.size)
                    continue
                e = graph.entries[j]
                # Symbolic dimensions were evaluated with the variables at 0 here; a replay
                # sets the real ones (tg_cmdbuf_set_launch) before it runs.
                g, b = (tuple(max(int(x), 1) for x in d) for d in _dims(e))
                e.node = cb.launch_packed(e.prg.kernel, g, b,
                                          bytes(e.pbuf)[:e.prg.param_bytes],
                                          concurrent=e.concurrent)
            cb.finish()
        except tg.Error as err:
            if cb is not None:
                cb.close()
            self.cmdbuf_note = f"no command buffer ({type(err).__name__}: {err})"
            return
        self.cmdbuf = cb
        self.cb_params = {j: bytes(graph.entries[j].pbuf)[:graph.entries[j].prg.param_bytes]
                          for j in kjs}
        self.cb_dims = {j: None if j in graph.launch_dims_replace else _dims(graph.entries[j])
                        for j in kjs}
        self.cmdbuf_note = f"command buffer of {len(kjs)} launches" + \
            (f" and {len(js) - len(kjs)} copies" if len(kjs) < len(js) else "")

    def idle(self):
        dev = self.dev
        return self.cb_fence <= dev.tl_done or dev.tl.value >= self.cb_fence

    def run(self, wait, fence=True):
        """Replay (or launch) the kernels with the entries' current parameters (``fence``:
        release the device's timeline after a replay, which tells when the command buffer is
        idle again; else the caller sets ``cb_fence``)."""
        cb, entries = self.cmdbuf, self.entries
        if cb is not None:
            changed = []
            for j in self.updatable:
                e = entries[j]
                p = bytes(e.pbuf)[:e.prg.param_bytes]
                if p != self.cb_params[j]:
                    changed.append((j, p))
            resized = [j for j in self.dims_updatable if _dims(entries[j]) != self.cb_dims[j]]
            if not (changed or resized) or self.idle():
                for j, p in changed:
                    e = entries[j]
                    try:
                        cb.set_params(e.node, p, e.prg.kernel)
                    except tg.Error as err:
                        raise self.dev._error(f"updating the parameters of kernel {e.prg.name} "
                                              "in the command buffer", err) from err
                    self.cb_params[j] = p
                for j in resized:
                    e = entries[j]
                    g, b = _dims(e)
                    try:
                        cb.set_launch(e.node, g, b, kernel=e.prg.kernel,
                                      concurrent=e.concurrent)
                    except tg.Error as err:
                        raise self.dev._error(
                            f"setting the launch dimensions of kernel {e.prg.name} (grid {g}, "
                            f"block {b}) in the command buffer", err, [e.prg.name]) from err
                    self.cb_dims[j] = (g, b)
                return self.dev._replay(self, wait, fence)
        return self.dev._launch_packed(self.launches, wait, None)


def _make_runs(graph, dev, js):
    """The runs of a step's calls ``js`` on ``dev``'s compute queue, in order: segments
    (:class:`_Segment`: kernels, and the copies a command buffer can hold) and copies recorded
    on the queue (:class:`_Copy`). A copy goes into the segment's command buffer unless its
    buffers change between replays (an input of the batch), it would go through the host, or
    the library refuses it there (then the segment is split around its copies)."""
    runs, group, held = [], [], {}

    def flush():
        if not group:
            return
        seg = _Segment(graph, dev, list(group), dict(held))
        if held and seg.cmdbuf is None:
            # no command buffer with these copies: kernels in segments, copies on the queue
            part = []
            for j in group:
                if j in held:
                    if part:
                        runs.append(_Segment(graph, dev, part))
                        part = []
                    runs.append(held[j])
                else:
                    part.append(j)
            if part:
                runs.append(_Segment(graph, dev, part))
        else:
            runs.append(seg)
        group.clear()
        held.clear()

    for j in js:
        c = graph.copies.get(j)
        if c is not None and (j in graph.updatable_set or not c.direct or c.lane != "compute"
                              or c.dest.region is None or c.src.region is None or
                              (c.dev is c.dest_dev and c.dest.base is c.src.base)):
            flush()
            runs.append(c)
            continue
        if c is not None:
            held[j] = c
        group.append(j)
    flush()
    return runs


class TegraGraph(MultiGraphRunner):
    """Replays a TinyJit batch: kernels and copies, on one TEGRA device or several.

    With command buffers (libtegragpu's ``tg_cmdbuf``, when the library has them): the
    kernels are recorded once into command buffers; a replay is one ``tg_queue_replay`` +
    submit per command buffer, like a CUDA graph launch. Parameter blocks that change between
    replays (other input buffers, variables) are written with ``tg_cmdbuf_set_params`` when
    the command buffer's earlier replays have finished; otherwise that replay launches the
    kernels directly (no waiting). Launch dimensions that depend on symbolic variables are set
    the same way (``tg_cmdbuf_set_launch``; with a library without it, such batches launch
    directly). Without (``TEGRA_CMDBUF=0``, older library): parameter blocks and launch
    configurations are packed once; a replay patches them and records every ``tg_launch``.

    Several devices, or copies (a ``MultiGraphRunner``, as tinygrad's CUDA graph): the batch is
    split into steps per queue (:func:`plan_steps`; each device's compute queue and copy
    queue). On a compute queue a step is a command buffer of its kernels and copies (the
    device's SMs; into or out of a peer's memory too), with copies whose buffers change between
    replays recorded on the queue (``tg_queue_copy``); on a copy queue (``TEGRA_PEER_COPY=ce``)
    its copies. A step that depends on another queue's step waits for it on the GPU
    (``tg_queue_wait`` on that queue's timeline, released after the step); nothing waits on
    the CPU. Copies between two devices are taken into a batch only where both have peer
    access to each other and GPU waits on each other's signals (:func:`_peer.graph_ready`);
    other copies stay outside the batch (tinygrad runs them on their own)."""

    def __init__(self, linear, input_uops=()):
        super().__init__(linear, input_uops)
        self._build()

    @staticmethod
    def supports_uop(batch_devs, new_call):
        """Which calls a batch takes (tinygrad asks while splitting a JIT into batches):
        kernels, and copies between TEGRA devices with peer access both ways
        (``TEGRA_MULTIGRAPH=0``: one device's kernels only, like a plain GraphRunner)."""
        if os.environ.get("TEGRA_MULTIGRAPH") == "0":
            return GraphRunner.supports_uop(batch_devs, new_call)
        if not MultiGraphRunner.supports_uop(batch_devs, new_call):
            return False
        if new_call.src[0].op is Ops.COPY:
            from tinygrad.device import Device
            names = [x for b in get_call_arg_uops(new_call)
                     for x in (b.device if isinstance(b.device, tuple) else (b.device,))]
            devs = list({id(d): d for d in (Device[x] for x in names)}.values())
            for i, a in enumerate(devs):
                if getattr(a, "tdev", None) is None:
                    return False
                for b in devs[i + 1:]:
                    if not _peer.graph_ready(a, b):
                        return False
        return True

    # ---- building

    def _build(self):
        """Pack every launch of ``self.calls`` (set up by tinygrad's GraphRunner) and plan the
        replay."""
        self.dev = None
        self.entries = []
        self.updatable = sorted({j for j, r in enumerate(self.uop_replace) if r} |
                                self.var_vals_replace.keys() | self.launch_dims_replace.keys())
        self.updatable_set = set(self.updatable)
        devs = {id(rt.dev): rt.dev for rt in self.runtimes if isinstance(rt, TegraProgram)}
        if any(rt is None for rt in self.runtimes) or len(devs) > 1:
            self._build_multi()
        else:
            self._build_single()

    def _pack(self, rt, ast, bufs, device_vars):
        if not isinstance(rt, TegraProgram):
            raise TegraError(f"TegraGraph: {getattr(ast, 'op', ast)} is not a TEGRA kernel")
        gs, ls = ast.arg.launch_dims({v: 0 for v in self.vars} | device_vars)
        e = _Entry()
        e.prg = rt
        e.pbuf = (ctypes.c_ubyte * max(rt.param_bytes, 1))()
        e.cfg = tg.CLaunchConfig(struct_size=ctypes.sizeof(tg.CLaunchConfig))
        e.cfg_ref = ctypes.byref(e.cfg)
        e.vas = [b._buf.va for b in bufs]
        e.vals = [device_vars.get(x.expr, 0) for x in ast.arg.vars]
        rt.pack_into(e.pbuf, e.vas, e.vals)
        TegraProgram.set_dims(e.cfg, gs, ls)
        e.concurrent = False
        return e

    def _build_single(self):
        """One device, kernels only: one command buffer."""
        # Dependencies from tinygrad's buffer lists: a kernel depends on every earlier kernel
        # that wrote what it reads or writes, or read what it writes. Kernels are launched level
        # by level (a kernel's level is one more than its dependencies' highest); the kernels of
        # one level are independent, so all but the first get LAUNCH_CONCURRENT, as a CUDA graph
        # runs nodes without an edge between them.
        concurrency = os.environ.get("TEGRA_CONCURRENT", "1") != "0" and \
            hasattr(tg, "LAUNCH_CONCURRENT")
        accesses, levels = [], []
        for (dev_idx, ast, bufs, device_vars), rt in zip(self.calls, self.runtimes):
            e = self._pack(rt, ast, bufs, device_vars)
            self.dev = rt.dev
            outs = set(getattr(ast.arg, "outs", None) or range(len(bufs)))
            writes = {id(b.base) for i, b in enumerate(bufs) if i in outs}
            reads = {id(b.base) for i, b in enumerate(bufs) if i not in outs}
            level = 0
            for (r, w), lv in zip(accesses, levels):
                if w & (reads | writes) or r & writes:
                    level = max(level, lv + 1)
            accesses.append((reads, writes))
            levels.append(level if concurrency else len(levels))
            self.entries.append(e)
        # Launch order: by level, the captured order within a level.
        self.order = sorted(range(len(self.entries)), key=lambda j: (levels[j], j))
        for k, j in enumerate(self.order):
            e = self.entries[j]
            e.concurrent = k > 0 and levels[self.order[k - 1]] == levels[j]
            e.cfg.flags = tg.LAUNCH_CONCURRENT if e.concurrent else 0
        self.steps, self.devices, self.pairs = None, [self.dev], ()
        self.segments = [_Segment(self, self.dev, list(self.order))]

    def _build_multi(self):
        """Kernels and copies, one device or several: the steps of :func:`plan_steps`."""
        from tinygrad.device import Device
        concurrency = os.environ.get("TEGRA_CONCURRENT", "1") != "0" and \
            hasattr(tg, "LAUNCH_CONCURRENT")
        tracker = getattr(self, "deps", None) or DepsTracker()
        devs, kinds, deps = [], [], []
        self.copies = {}
        for j, ((dev_idx, ast, bufs, device_vars), rt) in enumerate(zip(self.calls,
                                                                        self.runtimes)):
            if rt is not None:
                e = self._pack(rt, ast, bufs, device_vars)
                d, kind, write = rt.dev, "kernel", list(getattr(ast.arg, "outs", None) or
                                                        range(len(bufs)))
            else:
                if getattr(ast, "op", None) is not Ops.COPY:
                    raise TegraError(f"TegraGraph: {getattr(ast, 'op', ast)} is neither a "
                                     "TEGRA kernel nor a copy")
                dest, src = bufs[0], bufs[1]
                c = _Copy()
                c.dest, c.src, c.size = dest._buf, src._buf, dest.nbytes
                c.dev, c.dest_dev = Device[src.device], Device[dest.device]
                for x in (c.dev, c.dest_dev):
                    if getattr(x, "tdev", None) is None:
                        raise TegraError(f"TegraGraph: a copy {src.device} -> {dest.device} "
                                         "is not between TEGRA devices")
                c.direct = c.dev is c.dest_dev or _peer.graph_ready(c.dev, c.dest_dev)
                # Between devices: the source's SMs or its copy engine (TEGRA_PEER_COPY);
                # within one device: its SMs, in order with its kernels.
                between = c.direct and c.dev is not c.dest_dev
                c.lane = _peer.peer_copy_lane() if between else "compute"
                self.copies[j] = c
                e = None
                d, kind, write = c.dev, "copy", [0]
            self.entries.append(e)
            devs.append((d, "compute" if e is not None else c.lane))
            kinds.append(kind)
            deps.append(sorted(x[0] for x in tracker.access_resources(bufs, write, (j,))))
        self.dev = devs[0][0]
        # The plan's lanes: (device, "compute") and (device, "copy"), one queue each.
        # what the plan was made from, by device name (for --info and tests)
        self.plan_input = ([(d.device, lane) for d, lane in devs], kinds, deps)
        self.levels, self.steps = plan_steps(devs, kinds, deps, concurrency)
        self.devices = list({id(d): d for d, _ in devs}.values())
        self.copy_lanes = list({id(d): d for d, lane in devs if lane == "copy"}.values())
        # Copies into another device's memory: before the batch, the copying queue waits for
        # that device's earlier work (it may still use the memory); after it, that device's
        # next work waits for the batch's copies.
        self.pairs = tuple({(id(c.dev), c.lane, id(c.dest_dev)): (c.dev, c.lane, c.dest_dev)
                            for c in self.copies.values()
                            if c.dev is not c.dest_dev}.values())
        # Each step's runs: on a compute lane, segments (command buffers with the kernels and
        # the copies they can hold) and copies on the queue; on a copy lane, copies.
        self.segments, self.step_runs = [], []
        for s in self.steps:
            prev = None
            for j in s.items:
                e = self.entries[j]
                if e is None:
                    prev = None
                    continue
                e.concurrent = prev is not None and self.levels[prev] == self.levels[j] \
                    and concurrency
                e.cfg.flags = tg.LAUNCH_CONCURRENT if e.concurrent else 0
                prev = j
            if s.dev[1] == "compute":
                runs = _make_runs(self, s.dev[0], list(s.items))
            else:
                runs = [self.copies[j] for j in s.items]
            self.segments.extend(r for r in runs if isinstance(r, _Segment))
            self.step_runs.append(runs)

    # ---- what tests and --info look at (one-device batches)

    @property
    def cmdbuf(self):
        return self.segments[0].cmdbuf if len(self.segments) == 1 else None

    @property
    def cmdbuf_note(self):
        if len(self.segments) == 1 and self.steps is None:
            return self.segments[0].cmdbuf_note
        copies = getattr(self, "copies", {})
        held = sum(len(s.js) - len(s.launches) for s in self.segments)
        return (f"{len(self.steps or ())} steps on {len(self.devices)} devices: "
                f"{sum(s.cmdbuf is not None for s in self.segments)} of {len(self.segments)} "
                f"kernel runs in command buffers, {len(copies)} copies"
                f"{f' ({held} in command buffers)' if held else ''}")

    @property
    def launches(self):
        return tuple(x for s in self.segments for x in s.launches)

    @property
    def names(self):
        return tuple(x for s in self.segments for x in s.names)

    @property
    def cb_dims(self):
        return self.segments[0].cb_dims if self.segments else {}

    # ---- replay

    def _update(self, input_uops, var_vals):
        """Put the replay's input buffers, variables and launch dimensions into the entries."""
        for j in self.updatable:
            e, dev_idx = self.entries[j], self.calls[j][0]
            for pos, iidx in self.uop_replace[j]:
                b = input_uops[iidx].buffer
                if isinstance(b, MultiBuffer):
                    b = b.bufs[dev_idx]
                if e is None:
                    c = self.copies[j]
                    if pos == 0:
                        c.dest = b._buf
                    else:
                        c.src = b._buf
                else:
                    e.vas[pos] = b._buf.va
        for j, i, v in self.updated_vars(var_vals):
            self.entries[j].vals[i] = v
        for j, gs, ls in self.updated_launch_dims(var_vals):
            TegraProgram.set_dims(self.entries[j].cfg, gs, ls)
        for j in self.updatable:
            e = self.entries[j]
            if e is not None:
                e.prg.pack_into(e.pbuf, e.vas, e.vals)

    def __call__(self, input_uops, var_vals, wait=False):
        self._update(input_uops, var_vals)
        if self.steps is None:
            return self.segments[0].run(wait)
        return self._run_steps(wait)

    def _run_copy(self, c):
        """Record copy ``c`` on its queue (its lane)."""
        d = c.dev
        if c.dest.region is None or c.src.region is None:
            raise TegraError(f"TegraGraph: a copy {d.device} -> {c.dest_dev.device} of a buffer "
                             "made from external_ptr (libtegragpu has no buffer for it)")
        same = c.dev is c.dest_dev and c.dest.base is c.src.base
        if same and c.dest.offset == c.src.offset:
            return  # a buffer (or view) onto itself: nothing to move
        if same and c.dest.offset < c.src.offset + c.size and \
                c.src.offset < c.dest.offset + c.size:
            # Overlapping ranges of one buffer (the GPU copy refuses them): through the host,
            # after the work recorded so far; the steps after it see the result.
            d.allocator._transfer(c.dest, c.src, c.size, d, d)
            d.synchronize()
        elif c.direct:
            d._record_peer_copy(c.dest, c.src, c.size, c.dest_dev, c.lane)
            d.inflight.append(f"copy {d.device} -> {c.dest_dev.device}")
            if c.lane == "compute":
                d.unsignaled = True
            if d.sync_each:
                if c.lane == "copy":
                    d._release_copy()
                d.synchronize()
        else:
            # No peer access both ways (the batch was made without asking supports_uop): the
            # transfer's own path, then every later step sees its result.
            c.dest_dev.allocator._transfer(c.dest, c.src, c.size, d, c.dest_dev)
            c.dest_dev.synchronize()

    def _run_steps(self, wait):
        """Record every step on its device's queue, with the GPU waits between the queues and
        devices, then submit all."""
        t0 = time.perf_counter() if wait else 0.0
        for d in self.devices:
            if d._faulted is not None:
                raise TegraError(f"{d.device}: the device faulted earlier: {d._faulted}")
            d._before_compute()
        for d in self.copy_lanes:
            d._copy_queue()
            d._wait_on("copy", d, "compute", d._fence(), "its work before a batch")
        for x, lane, z in self.pairs:
            x._wait_for_device(z, f"{z.device}'s work before a batch", lane)
        steps, values, copied = self.steps, [0] * len(self.steps), set()
        for s, runs in zip(steps, self.step_runs):
            d, lane = s.dev
            for w in s.waits:
                od, olane = steps[w].dev
                d._wait_on(lane, od, olane, values[w], "a step of the batch")
            for r in runs:
                if type(r) is _Segment:
                    # recorded, submitted with the queue's next release (a step's signal, or
                    # the release after the batch, which also tells when it is idle again)
                    r.run(False, False)
                else:
                    self._run_copy(r)
                    if lane == "copy":
                        copied.add(d)
            if s.signal:
                if lane == "compute":
                    values[s.index] = d._fence()
                else:
                    values[s.index] = d._release_copy()
                    copied.discard(d)
        for d in self.devices:
            v = d._fence()
            for seg in self.segments:
                if seg.dev is d:
                    seg.cb_fence = v
        for d in copied:
            d._release_copy()
        for d in self.copy_lanes:
            # the device's next kernel must not overwrite what the batch's copies still read
            d.compute_waits_copy = max(d.compute_waits_copy, d.copy_value)
        for x, lane, z in self.pairs:
            z._note_peer_write(x, lane, x.tl_value if lane == "compute" else x.copy_value)
        if not wait:
            return None
        for d in self.devices:
            d.synchronize()
        return time.perf_counter() - t0
