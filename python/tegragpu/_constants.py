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
#: ``tg_queue_write_value`` / ``tg_queue_wait_value`` flags and conditions (see
#: :meth:`Queue.write_value` and :meth:`Queue.wait_value`).
VALUE_64 = 1
VALUE_NO_BARRIER = 2
VALUE_CONDS = {"eq": 0, "geq": 1, "geq_wrapping": 2, "and": 3, "nor": 4}
#: ``tg_texture_desc.kind``, ``.format``, ``.address_mode[i]`` and ``.flags`` values.
TEXTURE_LINEAR = 1
TEXTURE_PITCH2D = 2
TEXTURE_FORMATS = {"u8": 0, "s8": 1, "u16": 2, "s16": 3, "u32": 4, "s32": 5, "f16": 6, "f32": 7}
ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
TEXTURE_READ_NORMALIZED_FLOAT = 1
TEXTURE_NORMALIZED_COORDS = 2
TEXTURE_LINEAR_FILTER = 4
DEFAULT_TIMEOUT_NS = 30_000_000_000
#: ``tg_device_get_attribute`` attributes by name (``TG_DEVICE_ATTR_<NAME>``); see
#: :meth:`Device.attribute`.
DEVICE_ATTRIBUTES = {
    "max_threads_per_block": 1, "max_block_dim_x": 2, "max_block_dim_y": 3, "max_block_dim_z": 4,
    "max_grid_dim_x": 5, "max_grid_dim_y": 6, "max_grid_dim_z": 7,
    "max_shared_memory_per_block": 8, "max_shared_memory_per_block_optin": 9,
    "reserved_shared_memory_per_block": 10, "max_shared_memory_per_sm": 11,
    "total_constant_memory": 12, "warp_size": 13, "max_registers_per_block": 14,
    "max_registers_per_sm": 15, "max_threads_per_sm": 16, "max_blocks_per_sm": 17, "sm_count": 18,
    "compute_capability_major": 19, "compute_capability_minor": 20, "clock_rate_khz": 21,
    "memory_clock_rate_khz": 22, "memory_bus_width_bits": 23, "l2_cache_bytes": 24,
    "total_memory_bytes": 25, "integrated": 26, "can_map_host_memory": 27,
    "unified_addressing": 28, "concurrent_kernels": 29, "async_engine_count": 30,
    "ecc_enabled": 31, "pci_domain_id": 32, "pci_bus_id": 33, "pci_device_id": 34,
    "pci_vendor_device_id": 35, "pci_subsystem_id": 36, "cooperative_launch": 37,
    "cluster_launch": 38, "kernel_exec_timeout": 39, "compute_mode": 40, "max_pitch": 41,
    "texture_alignment": 42, "texture_pitch_alignment": 43, "max_texture_1d_linear_width": 44,
    "max_texture_2d_linear_width": 45, "max_texture_2d_linear_height": 46,
    "max_texture_2d_linear_pitch": 47, "global_l1_cache_supported": 48,
    "local_l1_cache_supported": 49, "virtual_address_bits": 50,
}


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
