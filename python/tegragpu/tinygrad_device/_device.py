"""The device: :class:`TegraDevice`, one libtegragpu device with a compute queue (launches,
device-to-device copies) and, on desktop GPUs, a copy queue (host staging copies)."""

from __future__ import annotations

import collections
import ctypes
import os
import warnings

import tegragpu as tg

from . import _peer
from ._allocator import TegraAllocator, TegraUnifiedAllocator, _mv_addr
from ._errors import TegraEmulatorWarning, TegraError
from ._graph import TegraGraph
from ._program import TegraProgram
from ._renderer import TegraCUDARenderer, TegraNVCCRenderer, TegraPTXRenderer
from ._tinygrad import Compiled


DEVICE_NAME = "TEGRA"


def _env_float(name, default):
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _timeout_ns():
    return int(_env_float("TEGRA_TIMEOUT_S", 300.0) * 1e9)


_STAGING_CHUNK = 32 << 20


def _open_tegragpu(index):
    """Open the libtegragpu device for ``TEGRA:index``."""
    if index == 0:
        return tg.Device()  # TEGRAGPU_DEVICE, else the GPU of this machine
    env = (os.environ.get("TEGRAGPU_DEVICE") or "").strip()
    return tg.Device(env.split(":", 1)[0] or None, index=index)


class TegraDevice(Compiled):
    """tinygrad's ``TEGRA`` device: one libtegragpu device, a compute queue (launches,
    device-to-device copies) and, on desktop GPUs, a copy queue (host staging copies)."""

    def __init__(self, device=DEVICE_NAME):
        index = int(device.split(":")[1]) if ":" in device else 0
        try:
            self.tdev = _open_tegragpu(index)
            self.info = self.tdev.info
        except tg.Error as e:
            raise TegraError(f"{device}: cannot open the libtegragpu device "
                             f"(TEGRAGPU_DEVICE={os.environ.get('TEGRAGPU_DEVICE')!r}, library "
                             f"{tg.library_path()}): {type(e).__name__}: {e}", e.status) from e
        info = self.info
        self.emulated = bool(info.emulated)
        unified = getattr(info, "unified_memory", None)
        self.unified = bool(unified) if unified is not None else \
            (self.emulated or info.backend == tg.Backend.NVGPU)
        if os.environ.get("TEGRA_STAGED_COPIES") == "1":
            self.unified = False  # the desktop copy path everywhere (for tests)
        self.sync_each = self.emulated or os.environ.get("TEGRA_SYNC") == "1"
        try:
            self.q = self.tdev.create_queue(tg.QueueKind.COMPUTE)
            self.qh = self.q.handle
            self.tl = self.tdev.create_signal(0)       # compute timeline
            self.ts = (self.tdev.create_signal(0), self.tdev.create_signal(0))  # timing
        except tg.Error as e:
            raise TegraError(f"{device}: cannot create a queue: {e}", e.status) from e
        self.tl_value = self.tl_done = 0
        self.ts_value = 0
        self.unsignaled = False     # compute work recorded since the last timeline release
        self.copy_q = self.copy_tl = None
        self.copy_value = self.copy_done = 0
        self.compute_waits_copy = 0  # copy timeline value the next compute work must wait for
        self.staging = []           # [buffer, copy timeline value that frees it]
        self.inflight = collections.deque(maxlen=64)  # kernel names since the last sync
        self.peer_links = {}        # other TegraDevice -> _peer.PeerLink
        # (other TegraDevice, its lane "compute"/"copy") -> that lane's timeline value the next
        # work here waits for (it copied into this device's memory)
        self.peer_waits = {}
        self._faulted = None
        if self.emulated:
            warnings.warn(f"{device} is the emulated Orin ({tg.library_path()}): allocation and "
                          "copies work, tinygrad kernels cannot run there (the emulator knows "
                          "only the library's test kernels) and fail with TegraError",
                          TegraEmulatorWarning, stacklevel=2)
        graph = None if self.emulated or os.environ.get("TEGRA_GRAPH", "1") == "0" else TegraGraph
        allocator = (TegraUnifiedAllocator if self.unified else TegraAllocator)(self)
        super().__init__(device, allocator,
                         [TegraCUDARenderer, TegraPTXRenderer, TegraNVCCRenderer],
                         TegraProgram, graph, arch=f"sm_{info.sm_major}{info.sm_minor}")

    def __repr__(self):
        return f"<TegraDevice {self.device} {self.info.name} {self.arch} spec={self.tdev.spec!r}>"

    # ---- errors

    def _error(self, what, e, kernels=None):
        """A TegraError for the tegragpu.Error ``e`` raised while doing ``what``."""
        status = getattr(e, "status", None)
        msg = f"{self.device}: {what} failed: {type(e).__name__}: {e}"
        if isinstance(e, (tg.DeviceFault, tg.DeviceLost)):
            names = list(kernels if kernels is not None else self.inflight)
            if names:
                if len(names) == 1:
                    msg = f"{self.device}: kernel {names[0]} faulted: {e}"
                else:
                    shown = ", ".join(names[-8:])
                    msg = (f"{self.device}: GPU fault while running the {len(names)} kernels "
                           f"launched since the last synchronization (last: {shown}); "
                           f"{what}: {e} (TEGRA_SYNC=1 names the exact kernel)")
            if self.emulated:
                msg += (". The emulated Orin (TEGRAGPU_DEVICE=emu) runs only libtegragpu's own "
                        "test kernels, not tinygrad's: run tinygrad kernels on a real GPU")
            msg += ". The device refuses new work after a fault: restart the process"
            self._faulted = msg
        return TegraError(msg, status)

    def _raise_status(self, st, what, kernels=None):
        try:
            tg.check(st)
        except tg.Error as e:
            raise self._error(what, e, kernels) from e

    # ---- ordering

    def _fence(self):
        """Release the compute timeline after the work recorded so far; its value."""
        if self.peer_waits:
            self._fold_peer_waits()
        if self.unsignaled:
            self.tl_value += 1
            lib = tg.lib
            st = lib.tg_queue_signal(self.qh, self.tl.handle, self.tl_value)
            if st == 0:
                st = lib.tg_queue_submit(self.qh)
            if st:
                self._raise_status(st, "recording a timeline release")
            self.unsignaled = False
        return self.tl_value

    def _before_compute(self):
        if self.peer_waits:
            self._fold_peer_waits()
        if self.compute_waits_copy:
            st = tg.lib.tg_queue_wait(self.qh, self.copy_tl.handle, self.compute_waits_copy)
            if st:
                self._raise_status(st, "recording a wait for the copy queue")
            self.compute_waits_copy = 0

    # ---- ordering between devices (and between a device's two queues)
    #
    # A device has two lanes: "compute" (the compute queue, its timeline ``tl``) and "copy" (the
    # copy queue, ``copy_tl``). Work of another device is waited for on the GPU (a wait on that
    # device's timeline signal, which peer access maps into this GPU) where the library allows
    # it (``_peer.link(...).waits``), else on the CPU.

    def _lane_queue(self, lane):
        return self.qh if lane == "compute" else self._copy_queue().handle

    def _record_wait(self, lane, signal, value, what):
        """Record a GPU wait on queue ``lane`` until ``signal`` (of this device or of a peer)
        reaches ``value``."""
        st = tg.lib.tg_queue_wait(self._lane_queue(lane), signal.handle, value)
        if st:
            self._raise_status(st, f"recording a wait for {what}")
        if lane == "compute":
            self.unsignaled = True  # the next release here comes after the wait

    def _wait_on(self, lane, other, olane, value, what):
        """Order the work recorded next on this device's ``lane`` after ``other``'s lane
        ``olane`` reaches ``value`` (``other`` may be this device)."""
        if olane == "compute":
            sig, done = other.tl, other.tl_done
        else:
            sig, done = other.copy_tl, other.copy_done
        if value <= done:
            return
        if sig.value >= value:
            if olane == "compute":
                other.tl_done = max(other.tl_done, value)
            else:
                other.copy_done = max(other.copy_done, value)
            return
        if other is self or _peer.link(self, other).waits:
            self._record_wait(lane, sig, value, f"{other.device} ({olane})")
        else:
            other._wait(sig, value, f"waiting for {other.device}'s {olane} queue (for "
                                    f"{self.device}: {what})")
            if olane == "compute":
                other.tl_done = max(other.tl_done, value)
            else:
                other.copy_done = max(other.copy_done, value)

    def _wait_for_peer(self, other, value, what):
        """Order the work recorded next on the compute queue after ``other``'s compute
        timeline reaches ``value``."""
        self._wait_on("compute", other, "compute", value, what)

    def _wait_for_device(self, other, what, lane="compute"):
        """Order the work recorded next on ``lane`` after everything recorded so far on
        ``other``'s queues (its compute queue, and its copy queue)."""
        self._wait_on(lane, other, "compute", other._fence(), what)
        if other.copy_value > other.copy_done:
            self._wait_on(lane, other, "copy", other.copy_value, what)

    def _fold_peer_waits(self):
        """Put the waits for other devices' copies into this device's memory in front of the
        work recorded next on the compute queue."""
        waits = list(self.peer_waits.items())
        self.peer_waits.clear()
        for (other, olane), value in waits:
            self._wait_on("compute", other, olane, value, "its copy into this device's memory")

    def _note_peer_write(self, writer, olane, value):
        """``writer``'s lane ``olane`` writes this device's memory until it reaches ``value``:
        this device's next work waits for it."""
        key = (writer, olane)
        if value > self.peer_waits.get(key, 0):
            self.peer_waits[key] = value

    def _release_copy(self):
        """Release the copy timeline after the copy queue's work recorded so far (and submit);
        its value."""
        cq = self._copy_queue()
        self.copy_value += 1
        try:
            cq.signal(self.copy_tl, self.copy_value)
            cq.submit()
        except tg.Error as e:
            raise self._error("releasing the copy timeline", e) from e
        return self.copy_value

    def _wait(self, signal, value, what, timeout_ns=None, kernels=None):
        try:
            signal.wait(value, _timeout_ns() if timeout_ns is None else timeout_ns)
        except tg.Error as e:
            raise self._error(what, e, kernels) from e

    def synchronize(self):
        v = self._fence()
        if v > self.tl_done:
            self._wait(self.tl, v, "waiting for the compute queue")
            self.tl_done = v
        if self.copy_value > self.copy_done:
            self._wait(self.copy_tl, self.copy_value, "waiting for the copy queue")
            self.copy_done = self.copy_value
        self.inflight.clear()

    # ---- launches

    def _launch_packed(self, launches, wait, timeout):
        """Record ``(program, parameter block, launch config ref)`` launches and submit them;
        with ``wait``, return their GPU time in seconds."""
        if self._faulted is not None:
            raise TegraError(f"{self.device}: the device faulted earlier: {self._faulted}")
        lib, qh = tg.lib, self.qh
        self._before_compute()
        if wait:
            self.ts_value += 1
            st = lib.tg_queue_signal(qh, self.ts[0].handle, self.ts_value)
            if st:
                self._raise_status(st, "recording the start timestamp")
        launch, submit, inflight, sync_each = lib.tg_launch, lib.tg_queue_submit, \
            self.inflight, self.sync_each
        for k, (prg, pbuf, cfg_ref) in enumerate(launches):
            st = launch(qh, prg.khandle, cfg_ref, pbuf, prg.param_bytes)
            if st:
                self._launch_failed(prg, cfg_ref, st)
            inflight.append(prg.name)
            if sync_each:
                self.unsignaled = True
                v = self._fence()
                self._wait(self.tl, v, f"running kernel {prg.name}", kernels=[prg.name])
                self.tl_done = v
                inflight.clear()
            elif k & 7 == 7:
                submit(qh)  # long batches: let the GPU start on what is recorded
        self.unsignaled = True
        if wait:
            st = lib.tg_queue_signal(qh, self.ts[1].handle, self.ts_value)
            if st == 0:
                st = lib.tg_queue_submit(qh)
            if st:
                self._raise_status(st, "recording the end timestamp")
            tns = None if timeout is None else int(timeout * 1e6)
            self._wait(self.ts[1], self.ts_value, "waiting for a timed launch", tns)
            self.inflight.clear()
            return (self.ts[1].timestamp - self.ts[0].timestamp) * 1e-9
        if not self.sync_each:
            st = lib.tg_queue_submit(qh)
            if st:
                self._raise_status(st, "submitting")
        return None

    def _replay(self, graph, wait, fence=True):
        """Replay ``graph``'s command buffer (one ``tg_queue_replay`` + submit); with ``wait``,
        return its GPU time in seconds. ``fence``: release the timeline after it (its value is
        ``graph.cb_fence``, when the command buffer is idle again); else only record it: the
        caller submits it with a later release and sets ``cb_fence``."""
        if self._faulted is not None:
            raise TegraError(f"{self.device}: the device faulted earlier: {self._faulted}")
        lib, qh = tg.lib, self.qh
        self._before_compute()
        if wait:
            self.ts_value += 1
            st = lib.tg_queue_signal(qh, self.ts[0].handle, self.ts_value)
            if st:
                self._raise_status(st, "recording the start timestamp")
        st = lib.tg_queue_replay(qh, graph.cmdbuf.handle)
        if st:
            self._raise_status(st, f"replaying a command buffer of {len(graph.names)} kernels",
                               list(graph.names))
        self.inflight.extend(graph.names)
        self.unsignaled = True
        if fence or wait:
            graph.cb_fence = self._fence()  # submits; tells when the command buffer is idle
        if wait:
            st = lib.tg_queue_signal(qh, self.ts[1].handle, self.ts_value)
            if st == 0:
                st = lib.tg_queue_submit(qh)
            if st:
                self._raise_status(st, "recording the end timestamp")
            self._wait(self.ts[1], self.ts_value, "waiting for a timed replay",
                       kernels=list(graph.names))
            self.inflight.clear()
            return (self.ts[1].timestamp - self.ts[0].timestamp) * 1e-9
        return None

    def _launch_failed(self, prg, cfg_ref, st):
        cfg = cfg_ref._obj
        try:
            tg.check(st)
        except tg.Error as e:
            raise self._error(
                f"launching kernel {prg.name} (grid {tuple(cfg.grid)}, block {tuple(cfg.block)}, "
                f"{prg.param_bytes} parameter bytes)", e, [prg.name]) from e

    # ---- copies

    def _gpu_copy(self, dest, src, sz):
        """Device-to-device copy on the compute queue (ordered with the launches)."""
        self._before_compute()
        try:
            self.q.copy(dest.region, 0, src.region, 0, sz)
            self.q.submit()
        except tg.Error as e:
            raise self._error(f"copying {sz} bytes on the GPU", e) from e
        self.unsignaled = True
        if self.sync_each:
            self.synchronize()

    def _record_peer_copy(self, dest, src, sz, dest_dev, lane="compute"):
        """Record a copy from ``src`` (this device's memory) to ``dest`` (``dest_dev``'s: this
        device's or a peer's) on queue ``lane``: the compute queue (the SMs; ordered with the
        launches) or the copy queue (the copy engine)."""
        # The library checks the ranges against the buffers (tinygrad's views lie inside them)
        qh = self.qh if lane == "compute" else self._copy_queue().handle
        st = tg.lib.tg_queue_copy(qh, dest.base.handle, dest.offset, src.base.handle,
                                  src.offset, sz)
        if st:
            self._raise_status(st, f"copying {sz} bytes from {self.device} to "
                                   f"{dest_dev.device} on the {lane} queue")

    def _peer_copy(self, dest, src, sz, dest_dev):
        """``sz`` bytes from ``src`` (this device's) to ``dest`` (``dest_dev``'s, which this
        device has peer access to), on this device's GPU, by its SMs on the compute queue
        (``TEGRA_PEER_COPY=ce``: by its copy engine, on the copy queue). Ordered on the GPU: after this
        device's work recorded so far (it may write ``src``) and after ``dest_dev``'s (it may
        still use ``dest``); ``dest_dev``'s next work waits for the copy, and so does this
        device's next kernel (``src`` is not overwritten before the copy has read it)."""
        lane = _peer.peer_copy_lane()
        self._before_compute()
        if lane == "copy":
            self._copy_queue()
            self._wait_on("copy", self, "compute", self._fence(), "a copy of its memory")
        self._wait_for_device(dest_dev, f"a copy into {dest_dev.device}", lane)
        self._record_peer_copy(dest, src, sz, dest_dev, lane)
        self.inflight.append(f"copy {self.device} -> {dest_dev.device}")
        if lane == "copy":
            v = self._release_copy()
            self.compute_waits_copy = v
        else:
            self.unsignaled = True
            v = self._fence()
        dest_dev._note_peer_write(self, lane, v)
        if self.sync_each:
            self.synchronize()

    def _copy_queue(self):
        if self.copy_q is None:
            try:
                self.copy_q = self.tdev.create_queue(tg.QueueKind.COPY)
                self.copy_tl = self.tdev.create_signal(0)
            except tg.Error as e:
                raise self._error("creating the copy queue", e) from e
        return self.copy_q

    def _stage(self, k, size):
        """Staging buffer ``k`` (pinned host memory of at least ``size`` bytes), free to use."""
        while len(self.staging) <= k:
            self.staging.append([None, 0])
        ent = self.staging[k]
        if ent[1] > self.copy_done:
            self._wait(self.copy_tl, ent[1], "waiting for a staging buffer")
            self.copy_done = max(self.copy_done, ent[1])
        if ent[0] is None or ent[0].size < size:
            if ent[0] is not None:
                ent[0].close()
            try:
                ent[0] = self.tdev.alloc(max(size, 1 << 20), tg.BUF_CPU_CACHED)
            except tg.Error as e:
                raise self._error("allocating a staging buffer", e) from e
        return ent

    def _copy_on_copy_queue(self, dst, dst_off, src, src_off, n, wait_compute):
        cq = self._copy_queue()
        try:
            if wait_compute:
                cq.wait(self.tl, wait_compute)
            cq.copy(dst, dst_off, src, src_off, n)
            self.copy_value += 1
            cq.signal(self.copy_tl, self.copy_value)
            cq.submit()
        except tg.Error as e:
            raise self._error(f"copying {n} bytes on the copy queue", e) from e
        return self.copy_value

    def _staged_copyin(self, dest, src):
        """Host → video memory: CPU into a staging buffer, the copy engine from there. Ordered
        after the kernels recorded so far, and before the ones recorded next; returns without
        waiting (the staging buffers are reused once their copy is done)."""
        n = src.nbytes
        addr, keep = _mv_addr(src)
        fence = self._fence()  # earlier kernels may still read dest
        chunk = min(n, _STAGING_CHUNK)
        for i, off in enumerate(range(0, n, chunk)):
            m = min(chunk, n - off)
            ent = self._stage(i % 2, chunk)
            ctypes.memmove(ent[0].cpu_ptr, addr + off, m)
            ent[1] = self._copy_on_copy_queue(dest.region, off, ent[0], 0, m,
                                              fence if fence > self.tl_done else 0)
        del keep
        self.compute_waits_copy = self.copy_value

    def _staged_copyout(self, dest, src):
        """Video memory → host: the copy engine into a staging buffer after the kernels recorded
        so far, then the CPU from there."""
        n = dest.nbytes
        addr, keep = _mv_addr(dest)
        fence = self._fence()
        chunk = min(n, _STAGING_CHUNK)
        for off in range(0, n, chunk):
            m = min(chunk, n - off)
            ent = self._stage(0, chunk)
            ent[1] = v = self._copy_on_copy_queue(ent[0], 0, src.region, off, m,
                                                  fence if fence > self.tl_done else 0)
            self._wait(self.copy_tl, v, "copying to the host")
            self.copy_done = max(self.copy_done, v)
            ctypes.memmove(addr + off, ent[0].cpu_ptr, m)
        del keep

    def finalize(self):
        try:
            self.synchronize()
        except Exception:
            pass
