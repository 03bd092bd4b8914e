"""The base class of every object that owns a C handle."""

from ._constants import Status
from ._errors import InvalidHandle, check
from ._library import lib


def _closed_error(what):
    return InvalidHandle(Status.INVALID_HANDLE, f"{what} is closed")


class _Handle:
    """Owns one C handle; ``close()`` destroys it (idempotent); also a context manager."""

    _destroy = None
    _what = "handle"

    def __init__(self, handle):
        self._h = handle

    @property
    def handle(self):
        """The raw C handle (an int) to pass to :data:`lib` functions; raises
        :class:`InvalidHandle` once closed."""
        if self._h is None:
            raise _closed_error(self._what)
        return self._h

    def close(self):
        h, self._h = self._h, None
        if h is not None:
            check(getattr(lib, self._destroy)(h))

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
