"""The header's constants and enums: ``TG_*`` defines, ``tg_status``, ``tg_log_level``,
``tg_queue_kind``, ``tg_backend``."""

import enum


#: Major version of the C ABI this package was written for; must equal the library's.
ABI_MAJOR = 0

BUF_CPU_CACHED = 1
BUF_WRITE_COMBINED = 2
BUF_ZEROED = 4
BUF_DEVICE_LOCAL = 8
TIMEOUT_INFINITE = 0xFFFF_FFFF_FFFF_FFFF
LAUNCH_COOPERATIVE = 1
LAUNCH_CONCURRENT = 2
LAUNCH_SUBMIT = 4
LIMIT_STACK_SIZE = 0
LIMIT_MALLOC_HEAP_SIZE = 2
#: ``tg_texture_desc.kind``, ``.format``, ``.address_mode[i]`` and ``.flags`` values.
TEXTURE_LINEAR = 1
TEXTURE_PITCH2D = 2
TEXTURE_FORMATS = {"u8": 0, "s8": 1, "u16": 2, "s16": 3, "u32": 4, "s32": 5, "f16": 6, "f32": 7}
ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
TEXTURE_READ_NORMALIZED_FLOAT = 1
TEXTURE_NORMALIZED_COORDS = 2
TEXTURE_LINEAR_FILTER = 4
DEFAULT_TIMEOUT_NS = 30_000_000_000


class Status(enum.IntEnum):
    """``tg_status`` values (stable)."""
    OK = 0
    INVALID_ARGUMENT = 1
    NULL_POINTER = 2
    INVALID_HANDLE = 3
    OUT_OF_MEMORY = 4
    NOT_FOUND = 5
    NOT_SUPPORTED = 6
    TIMEOUT = 7
    DEVICE_FAULT = 8
    OS = 9
    INVALID_CUBIN = 10
    INVALID_LAUNCH = 11
    COMPILE = 12
    LIBRARY_MISSING = 13
    UNSUPPORTED_DRIVER = 14
    INTERNAL = 15
    DEVICE_LOST = 16


class LogLevel(enum.IntEnum):
    """``tg_log_level``: from quiet to verbose; a level shows its own messages and those of the
    levels above it."""
    OFF = 0
    ERROR = 1
    WARN = 2
    INFO = 3
    DEBUG = 4
    TRACE = 5


class QueueKind(enum.IntEnum):
    """``tg_queue_kind``."""
    COMPUTE = 0
    COPY = 1


class Backend(enum.IntEnum):
    """``tg_backend``."""
    NVGPU = 0
    RM = 1
