"""C types of include/tegragpu.h (must match it; python/tests/test_header_decls.py checks them)
and the prototype of every function (:data:`SIGNATURES`)."""

import ctypes


#: Every handle type (``tg_device*``, ``tg_buf*``, ...) is passed as an opaque pointer.
Handle = ctypes.c_void_p


class CDeviceInfo(ctypes.Structure):
    """``tg_device_info``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char * 64),
        ("arch", ctypes.c_uint32),
        ("sm_major", ctypes.c_uint32),
        ("sm_minor", ctypes.c_uint32),
        ("sm_count", ctypes.c_uint32),
        ("memory_bytes", ctypes.c_uint64),
        ("va_bits", ctypes.c_uint32),
        ("backend", ctypes.c_int),
        ("emulated", ctypes.c_bool),
    ]


class CFaultReport(ctypes.Structure):
    """``tg_fault_report``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("code", ctypes.c_uint32),
        ("has_address", ctypes.c_bool),
        ("address", ctypes.c_uint64),
        ("message", ctypes.c_char * 256),
    ]


class CKernelAttributes(ctypes.Structure):
    """``tg_kernel_attributes``."""
    _fields_ = [(n, ctypes.c_uint32) for n in (
        "struct_size", "num_params", "param_bytes", "registers", "static_shared_bytes",
        "local_bytes_per_thread", "max_threads_per_block", "max_dynamic_shared_bytes")]


class CDeviceListing(ctypes.Structure):
    """``tg_device_listing``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char * 64),
        ("uuid", ctypes.c_uint8 * 16),
        ("pci_bus_id", ctypes.c_char * 32),
        ("backend", ctypes.c_int),
        ("emulated", ctypes.c_bool),
        ("spec", ctypes.c_char * 32),
    ]


class CLaunchConfig(ctypes.Structure):
    """``tg_launch_config``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("grid", ctypes.c_uint32 * 3),
        ("block", ctypes.c_uint32 * 3),
        ("dynamic_shared_bytes", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("cluster", ctypes.c_uint32 * 3),
    ]


class CTextureDesc(ctypes.Structure):
    """``tg_texture_desc``."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("kind", ctypes.c_uint32),
        ("format", ctypes.c_uint32),
        ("channels", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("address_mode", ctypes.c_uint32 * 2),
        ("border_color", ctypes.c_float * 4),
        ("offset_bytes", ctypes.c_uint64),
        ("width", ctypes.c_uint64),
        ("height", ctypes.c_uint64),
        ("pitch_bytes", ctypes.c_uint64),
    ]


#: ``tg_log_fn``: ``void (*)(tg_log_level level, const char *target, const char *message,
#: void *user)``.
LogFn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)

#: The C structs of the header by their C name.
STRUCTS = {
    "tg_device_info": CDeviceInfo,
    "tg_fault_report": CFaultReport,
    "tg_kernel_attributes": CKernelAttributes,
    "tg_launch_config": CLaunchConfig,
    "tg_texture_desc": CTextureDesc,
    "tg_device_listing": CDeviceListing,
}
# Earlier private names.
_DeviceInfo, _FaultReport, _KernelAttributes, _LaunchConfig = (
    CDeviceInfo, CFaultReport, CKernelAttributes, CLaunchConfig)

_H = Handle
_P = ctypes.POINTER
_u32, _u64, _size, _int = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int
_st = ctypes.c_int  # tg_status (and every other enum) is an int

#: ``name: (restype, argtypes)`` of every function in include/tegragpu.h, as set on :data:`lib`.
SIGNATURES = {
    "tg_version": (_u32, []),
    "tg_status_str": (ctypes.c_char_p, [_st]),
    "tg_last_error_message": (ctypes.c_char_p, []),
    "tg_device_open": (_st, [ctypes.c_char_p, _P(_H)]),
    "tg_device_close": (_st, [_H]),
    "tg_device_get_info": (_st, [_H, _P(CDeviceInfo)]),
    "tg_device_synchronize": (_st, [_H, _u64]),
    "tg_device_get_fault": (_st, [_H, _P(CFaultReport)]),
    "tg_device_count": (_st, [ctypes.c_char_p, _P(_u32)]),
    "tg_device_list": (_st, [ctypes.c_char_p, _P(CDeviceListing), _u32, _P(_u32)]),
    "tg_device_get_attribute": (_st, [_H, _u32, _P(ctypes.c_int64)]),
    "tg_device_memory_info": (_st, [_H, _P(_u64), _P(_u64)]),
    "tg_buf_alloc": (_st, [_H, _u64, _u32, _P(_H)]),
    "tg_buf_free": (_st, [_H]),
    "tg_buf_cpu_ptr": (_st, [_H, _P(ctypes.c_void_p)]),
    "tg_buf_gpu_address": (_st, [_H, _P(_u64)]),
    "tg_buf_size": (_st, [_H, _P(_u64)]),
    "tg_buf_export_dmabuf": (_st, [_H, _P(_int)]),
    "tg_buf_export_fd": (_st, [_H, _P(_int), _P(_u64)]),
    "tg_buf_import_fd": (_st, [_H, _int, _u64, _u32, _P(_H)]),
    "tg_buf_register_host": (_st, [_H, ctypes.c_void_p, _u64, _u32, _P(_H)]),
    "tg_module_load": (_st, [_H, ctypes.c_void_p, _size, _P(_H)]),
    "tg_module_load_file": (_st, [_H, ctypes.c_char_p, _P(_H)]),
    "tg_module_compile_cuda": (_st, [_H, ctypes.c_char_p, _P(ctypes.c_char_p), _size, _P(_H)]),
    "tg_module_destroy": (_st, [_H]),
    "tg_module_get_kernel": (_st, [_H, ctypes.c_char_p, _P(_H)]),
    "tg_kernel_destroy": (_st, [_H]),
    "tg_kernel_get_attributes": (_st, [_H, _P(CKernelAttributes)]),
    "tg_kernel_get_param": (_st, [_H, _u32, _P(_u32), _P(_u32)]),
    "tg_kernel_max_active_blocks": (_st, [_H, _u32, _u32, _P(_u32)]),
    "tg_module_get_global": (_st, [_H, ctypes.c_char_p, _P(_u64), _P(ctypes.c_void_p),
                                   _P(_u64)]),
    "tg_device_set_limit": (_st, [_H, _u32, _u64]),
    "tg_device_get_limit": (_st, [_H, _u32, _P(_u64)]),
    "tg_queue_create": (_st, [_H, _int, _P(_H)]),
    "tg_queue_create_with_depth": (_st, [_H, _int, _u32, _P(_H)]),
    "tg_queue_create_owned": (_st, [_H, _int, _u32, _P(_H)]),
    "tg_queue_destroy": (_st, [_H]),
    "tg_queue_abort": (_st, [_H]),
    "tg_launch": (_st, [_H, _H, _P(CLaunchConfig), ctypes.c_void_p, _size]),
    "tg_launch_args": (_st, [_H, _H, _P(CLaunchConfig), _P(ctypes.c_void_p), _size]),
    "tg_queue_copy": (_st, [_H, _H, _u64, _H, _u64, _u64]),
    "tg_queue_signal": (_st, [_H, _H, _u64]),
    "tg_queue_wait": (_st, [_H, _H, _u64]),
    "tg_queue_barrier": (_st, [_H]),
    "tg_queue_submit": (_st, [_H]),
    "tg_queue_synchronize": (_st, [_H, _u64]),
    "tg_queue_fill": (_st, [_H, _H, _u64, _u32, _u32, _u64]),
    "tg_queue_write_value": (_st, [_H, _H, _u64, _u64, _u32]),
    "tg_queue_wait_value": (_st, [_H, _H, _u64, _u64, _u32, _u32]),
    "tg_queue_write": (_st, [_H, _H, _u64, ctypes.c_void_p, _u64]),
    "tg_queue_read": (_st, [_H, ctypes.c_void_p, _H, _u64, _u64]),
    "tg_signal_create": (_st, [_H, _u64, _P(_H)]),
    "tg_signal_create_in_buffer": (_st, [_H, _u64, _P(_H)]),
    "tg_signal_destroy": (_st, [_H]),
    "tg_signal_value": (_st, [_H, _P(_u64)]),
    "tg_signal_timestamp": (_st, [_H, _P(_u64)]),
    "tg_signal_set": (_st, [_H, _u64]),
    "tg_signal_wait": (_st, [_H, _u64, _u64]),
    "tg_cmdbuf_create": (_st, [_H, _P(_H)]),
    "tg_cmdbuf_create_owned": (_st, [_H, _P(_H)]),
    "tg_queue_replay_submit": (_st, [_H, _H]),
    "tg_cmdbuf_destroy": (_st, [_H]),
    "tg_cmdbuf_launch": (_st, [_H, _H, _P(CLaunchConfig), ctypes.c_void_p, _size, _P(_u32)]),
    "tg_cmdbuf_copy": (_st, [_H, _H, _u64, _H, _u64, _u64, _P(_u32)]),
    "tg_cmdbuf_signal": (_st, [_H, _H, _u64, _P(_u32)]),
    "tg_cmdbuf_wait": (_st, [_H, _H, _u64, _P(_u32)]),
    "tg_cmdbuf_barrier": (_st, [_H, _P(_u32)]),
    "tg_cmdbuf_finish": (_st, [_H]),
    "tg_cmdbuf_set_params": (_st, [_H, _u32, _H, ctypes.c_void_p, _size]),
    "tg_cmdbuf_set_launch": (_st, [_H, _u32, _H, _P(CLaunchConfig)]),
    "tg_cmdbuf_set_value": (_st, [_H, _u32, _u64]),
    "tg_queue_replay": (_st, [_H, _H]),
    "tg_texture_create": (_st, [_H, _P(CTextureDesc), _P(_H)]),
    "tg_texture_handle": (_st, [_H, _P(_u64)]),
    "tg_texture_destroy": (_st, [_H]),
    "tg_set_log_callback": (_st, [LogFn, ctypes.c_void_p]),
    "tg_set_log_level": (_st, [_int]),
    "tg_device_can_access_peer": (_st, [_H, _H, _P(ctypes.c_bool), ctypes.c_char_p, _size]),
    "tg_device_enable_peer_access": (_st, [_H, _H]),
}
