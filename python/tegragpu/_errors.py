"""Exceptions: :class:`Error` and one subclass per ``tg_status``; :func:`check` raises the one
for a status."""

from ._constants import Status
from ._library import lib


class Error(Exception):
    """A libtegragpu call failed.

    ``status`` is the :class:`Status` (a plain int for values this package does not know),
    ``message`` the library's description naming the call and the values involved
    (``tg_last_error_message()``), e.g. ``"tg_buf_alloc: size_bytes is 0"``. Each ``tg_status``
    has its own subclass (``InvalidHandle``, ``OutOfMemory``, ...); the class attribute
    ``status`` of a subclass is the status it stands for.
    """

    status = None

    def __init__(self, status, message=None):
        if message is None:
            message = _status_text(status)
        super().__init__(message)
        self.status = Status(status) if status in Status._value2member_map_ else status
        self.message = message

    def __str__(self):
        return self.message

    @property
    def call(self):
        """The name of the failed call the message starts with (``"tg_buf_alloc"``), or None."""
        head, sep, _ = self.message.partition(":")
        return head if sep and head and " " not in head else None


class InvalidArgument(Error, ValueError):
    """``TG_ERROR_INVALID_ARGUMENT``: an argument is out of range, malformed or inconsistent."""
    status = Status.INVALID_ARGUMENT


class NullPointer(Error, ValueError):
    """``TG_ERROR_NULL_POINTER``: a required pointer argument was NULL."""
    status = Status.NULL_POINTER


class InvalidHandle(Error):
    """``TG_ERROR_INVALID_HANDLE``: a handle is NULL, destroyed or of the wrong type (also: a
    Python object used after ``close()``)."""
    status = Status.INVALID_HANDLE


class OutOfMemory(Error, MemoryError):
    """``TG_ERROR_OUT_OF_MEMORY``: host or GPU memory, VA space or a ring is exhausted."""
    status = Status.OUT_OF_MEMORY


class NotFound(Error, LookupError):
    """``TG_ERROR_NOT_FOUND``: a named object (device, kernel, file) does not exist."""
    status = Status.NOT_FOUND


class NotSupported(Error):
    """``TG_ERROR_NOT_SUPPORTED``: not supported by this device, backend or build."""
    status = Status.NOT_SUPPORTED


class Timeout(Error, TimeoutError):
    """``TG_ERROR_TIMEOUT``: a wait ran past its timeout."""
    status = Status.TIMEOUT


class DeviceFault(Error):
    """``TG_ERROR_DEVICE_FAULT``: the GPU reported a fault (see :meth:`Device.fault`)."""
    status = Status.DEVICE_FAULT


class Os(Error, OSError):
    """``TG_ERROR_OS``: a system call to the kernel driver failed."""
    status = Status.OS


class InvalidCubin(Error):
    """``TG_ERROR_INVALID_CUBIN``: malformed code, or none for this GPU."""
    status = Status.INVALID_CUBIN


class InvalidLaunch(Error, ValueError):
    """``TG_ERROR_INVALID_LAUNCH``: the launch does not fit the kernel."""
    status = Status.INVALID_LAUNCH


class Compile(Error):
    """``TG_ERROR_COMPILE``: run-time compilation failed; the message carries the log."""
    status = Status.COMPILE


class LibraryMissing(Error):
    """``TG_ERROR_LIBRARY_MISSING``: an optional shared library (libnvrtc) is not installed."""
    status = Status.LIBRARY_MISSING


class UnsupportedDriver(Error):
    """``TG_ERROR_UNSUPPORTED_DRIVER``: the kernel driver's version is not supported."""
    status = Status.UNSUPPORTED_DRIVER


class Internal(Error):
    """``TG_ERROR_INTERNAL``: a bug in libtegragpu."""
    status = Status.INTERNAL


class DeviceLost(Error):
    """``TG_ERROR_DEVICE_LOST``: the device is unusable after a fault; reopen it."""
    status = Status.DEVICE_LOST


_ERRORS = {cls.status: cls for cls in (
    InvalidArgument, NullPointer, InvalidHandle, OutOfMemory, NotFound, NotSupported, Timeout,
    DeviceFault, Os, InvalidCubin, InvalidLaunch, Compile, LibraryMissing, UnsupportedDriver,
    Internal, DeviceLost)}


# The names of earlier versions of this package (the same classes).
TegraGpuError = Error
InvalidArgumentError = InvalidArgument
NullPointerError = NullPointer
InvalidHandleError = InvalidHandle
OutOfMemoryError = OutOfMemory
NotFoundError = NotFound
NotSupportedError = NotSupported
GpuTimeoutError = Timeout
DeviceFaultError = DeviceFault
OsError = Os
InvalidCubinError = InvalidCubin
InvalidLaunchError = InvalidLaunch
CompileError = Compile
LibraryMissingError = LibraryMissing
UnsupportedDriverError = UnsupportedDriver
InternalError = Internal
DeviceLostError = DeviceLost


def error_class(status):
    """The exception class for a ``tg_status`` (:class:`Error` itself for unknown values)."""
    return _ERRORS.get(status, Error)


def _status_text(status):
    try:
        return lib.tg_status_str(int(status)).decode()
    except Exception:
        return f"status {status}"


def status_str(status):
    """The library's description of a status code."""
    return lib.tg_status_str(int(status)).decode()


def last_error_message():
    """``tg_last_error_message()``: the message of the last failed call on this thread."""
    return (lib.tg_last_error_message() or b"").decode(errors="replace")


def check(status, call=""):
    """Raise the exception for ``status`` (a ``tg_status`` returned by a :data:`lib` call);
    return None for ``TG_OK``.

    The exception is the subclass of :class:`Error` for the status (:func:`error_class`), its
    message ``tg_last_error_message()``, which names the failed C call. ``call``, when given
    and the message does not already start with it, is put in front (``"call: message"``).
    Call it right after the failing call, on the same thread: the message is thread-local and
    replaced by the next failure.
    """
    if status == 0:
        return
    msg = last_error_message() or _status_text(status)
    if call and not msg.startswith(call):
        msg = f"{call}: {msg}"
    raise error_class(status)(status, msg)


_check = check
