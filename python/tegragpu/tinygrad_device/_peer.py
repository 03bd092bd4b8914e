"""Several TEGRA devices: peer access between two of them, enabled on first use, and what it
allows (copies between their memories on the GPU, GPU waits on the other's timeline)."""

from __future__ import annotations

import logging
import os

import tegragpu as tg

_log = logging.getLogger("tegragpu.tinygrad_device")


def peer_copy_lane():
    """The queue copies between two devices run on: "compute" (the source's SMs, a copy
    kernel in order with its kernels; the default, ``TEGRA_PEER_COPY=sm``) or "copy" (the
    source's copy queue, on the engine the library picks for it; ``TEGRA_PEER_COPY=ce``)."""
    v = os.environ.get("TEGRA_PEER_COPY", "sm").strip().lower()
    if v in ("", "sm"):
        return "compute"
    if v == "ce":
        return "copy"
    raise ValueError(f"TEGRA_PEER_COPY={os.environ.get('TEGRA_PEER_COPY')!r}: expected "
                     "'sm' (the default: copies between devices on the SMs) or 'ce' (on the "
                     "copy engine)")


class PeerLink:
    """What device ``a`` can do with device ``b`` (``link(a, b)``): ``access`` (a's queues read
    and write b's memory: copies between them run on a's GPU), ``waits`` (a's queues wait on
    b's signals on the GPU; else the CPU waits), ``reason`` (the link, or why not)."""

    __slots__ = ("access", "waits", "reason", "noted")

    def __init__(self, access, waits, reason):
        self.access, self.waits, self.reason, self.noted = access, waits, reason, False

    def __repr__(self):
        return f"<PeerLink access={self.access} waits={self.waits} {self.reason!r}>"


def link(a, b):
    """The :class:`PeerLink` from TEGRA device ``a`` to ``b``. The first call for a pair asks
    the library and enables peer access ``a`` → ``b`` (``tg_device_enable_peer_access``: every
    buffer of ``b`` is mapped into ``a``'s GPU, now and as ``b`` allocates more)."""
    lk = a.peer_links.get(b)
    if lk is None:
        lk = a.peer_links[b] = _probe(a, b)
        _log.info("%s -> %s: %s", a.device, b.device, lk)
    return lk


def _probe(a, b):
    if a is b:
        return PeerLink(True, True, "same device")
    if os.environ.get("TEGRA_PEER") == "0":
        return PeerLink(False, False, "TEGRA_PEER=0")
    tda, tdb = a.tdev, b.tdev
    if not hasattr(tda, "enable_peer_access") or \
            "tg_device_enable_peer_access" in getattr(tg, "missing_functions", ()):
        return PeerLink(False, False, "the loaded libtegragpu has no peer access "
                                      "(tg_device_enable_peer_access)")
    try:
        can, why = tda.peer_access_info(tdb)
        if not can:
            return PeerLink(False, False, why)
        tda.enable_peer_access(tdb)
    except tg.Error as e:
        return PeerLink(False, False, f"{type(e).__name__}: {e}")
    # A GPU wait on b's timeline (value 0: passes at once) tells whether a's queues can wait on
    # b's signals: the library maps b's signal memory into a with the peer access.
    try:
        tg.check(tg.lib.tg_queue_wait(a.qh, b.tl.handle, 0))
    except tg.Error as e:
        return PeerLink(True, False, f"{why}; GPU waits on {b.device}'s signals refused "
                                     f"({type(e).__name__}: {e}): the CPU waits instead")
    return PeerLink(True, True, why)


def graph_ready(a, b):
    """Whether a TinyJit graph can hold a copy between ``a`` and ``b``: peer access and GPU
    waits in both directions (the copy runs on the source's GPU; each side waits for the
    other's work on the GPU)."""
    if a is b:
        return True
    ab, ba = link(a, b), link(b, a)
    return ab.access and ab.waits and ba.access and ba.waits


def note_host_path(src_dev, dest_dev, lk):
    """Log, once per pair, that copies from ``src_dev`` to ``dest_dev`` go through host
    memory, and why."""
    if not lk.noted:
        lk.noted = True
        _log.warning("%s -> %s: no peer access (%s); copies between them go through host "
                     "memory", src_dev.device, dest_dev.device, lk.reason)
