"""The library's log messages: the level, and a Python callback instead of stderr."""

from ._cdefs import LogFn
from ._constants import LogLevel
from ._errors import check
from ._library import lib


_log_callback = None  # the LogFn object the library holds (kept alive here)


def set_log_level(level):
    """``tg_set_log_level``: produce messages of ``level`` (a :class:`LogLevel`) and above;
    overrides ``$TEGRAGPU_LOG``."""
    check(lib.tg_set_log_level(int(level)))


def set_log_callback(fn):
    """Route the library's log messages to ``fn(level, target, message)`` (a
    :class:`LogLevel` and two str) instead of stderr; None restores stderr. ``fn`` may be
    called from any thread, the library's own included; exceptions it raises are ignored."""
    global _log_callback
    if fn is None:
        check(lib.tg_set_log_callback(LogFn(), None))  # NULL: back to stderr
        _log_callback = None
        return

    def trampoline(level, target, message, user):
        try:
            lvl = LogLevel(level) if level in LogLevel._value2member_map_ else level
            fn(lvl, (target or b"").decode(errors="replace"),
               (message or b"").decode(errors="replace"))
        except BaseException:
            pass

    cb = LogFn(trampoline)
    check(lib.tg_set_log_callback(cb, None))
    _log_callback = cb  # replaced only after the library stopped calling the old one
