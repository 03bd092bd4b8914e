"""Timeline signals: :class:`Signal`."""

import ctypes

from ._constants import DEFAULT_TIMEOUT_NS
from ._errors import check
from ._handle import _Handle
from ._library import lib


class Signal(_Handle):
    """A 64-bit timeline signal."""

    _destroy = "tg_signal_destroy"
    _what = "Signal"

    @property
    def value(self):
        v = ctypes.c_uint64()
        check(lib.tg_signal_value(self.handle, ctypes.byref(v)))
        return v.value

    @property
    def timestamp(self):
        """GPU time (ns) written with the signal's last GPU release (:meth:`Queue.signal`);
        0 before the first. Compare it only with timestamps of the same device; read it after
        waiting for the release you care about (a later release overwrites it)."""
        v = ctypes.c_uint64()
        check(lib.tg_signal_timestamp(self.handle, ctypes.byref(v)))
        return v.value

    def set(self, value):
        check(lib.tg_signal_set(self.handle, value))

    def wait(self, value, timeout_ns=DEFAULT_TIMEOUT_NS):
        """Wait until the value is ≥ ``value``. A release of such a value that is recorded
        on a queue (:meth:`Queue.signal`, a command buffer replay) but not submitted is
        submitted first (``tg_signal_wait``); :class:`Timeout` says where the release stands."""
        check(lib.tg_signal_wait(self.handle, value, timeout_ns))
