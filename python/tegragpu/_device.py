"""Opening a GPU: :class:`Device`, :func:`device_spec`, and what a device reports
(:class:`DeviceInfo`, :class:`FaultReport`, attributes, free memory); listing GPUs without
opening them (:func:`list_devices`, :func:`device_count`)."""

import ctypes
import os
from dataclasses import dataclass

from ._cdefs import _H, CDeviceInfo, CDeviceListing, CFaultReport, CTextureDesc
from ._cmdbuf import CmdBuf
from ._constants import (ADDRESS_MODES, DEFAULT_TIMEOUT_NS, DEVICE_ATTRIBUTES,
                         LIMIT_MALLOC_HEAP_SIZE, LIMIT_STACK_SIZE, TEXTURE_FORMATS, TEXTURE_LINEAR,
                         TEXTURE_LINEAR_FILTER, TEXTURE_NORMALIZED_COORDS, TEXTURE_PITCH2D,
                         TEXTURE_READ_NORMALIZED_FLOAT, Backend, QueueKind, Status)
from ._errors import InvalidArgument, NotFound, NotSupported, check
from ._handle import _Handle
from ._kernel import Module
from ._library import lib
from ._memory import Buffer, _int_arg
from ._queue import Queue
from ._signal import Signal
from ._texture import Texture


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    arch: int
    sm_major: int
    sm_minor: int
    sm_count: int
    memory_bytes: int
    va_bits: int
    backend: Backend
    emulated: bool


@dataclass(frozen=True)
class FaultReport:
    code: int
    address: "int | None"
    message: str


@dataclass(frozen=True)
class DeviceListing:
    """One GPU as :func:`list_devices` lists it (``tg_device_listing``)."""
    name: str
    #: 16 bytes.
    uuid: bytes
    #: ``"0000:00:06.0"``; ``"0000:00:00.0"`` for the integrated GPU of a Jetson.
    pci_bus_id: str
    backend: Backend
    emulated: bool
    #: The spec that opens exactly this GPU: ``Device(listing.spec)``.
    spec: str

    @property
    def uuid_str(self):
        """The UUID as NVIDIA's tools print it: ``GPU-8df2fb1b-8a63-901e-83b4-8be19bad4699``."""
        h = self.uuid.hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _spec_arg(spec):
    return None if spec is None else os.fsencode(spec)


def device_count(spec=None):
    """How many GPUs :func:`list_devices` lists (``tg_device_count``), without opening any."""
    n = ctypes.c_uint32()
    check(lib.tg_device_count(_spec_arg(spec), ctypes.byref(n)))
    return n.value


def list_devices(spec=None):
    """The GPUs, without opening any (``tg_device_list``), as :class:`DeviceListing` in the
    order of ``"rm:N"``. ``spec`` None: the GPUs a program that names no device can use
    (``TEGRAGPU_DEVICE`` restricts them: ``"rm"`` lists every GPU of the desktop driver,
    ``"rm:N"`` only the N-th, ``"emu"`` the emulated Orin); else the GPUs ``spec`` names."""
    count = ctypes.c_uint32()
    while True:
        cap = count.value
        arr = (CDeviceListing * max(cap, 1))()
        arr[0].struct_size = ctypes.sizeof(CDeviceListing)
        check(lib.tg_device_list(_spec_arg(spec), arr if cap else None, cap, ctypes.byref(count)))
        if count.value <= cap:
            break
    return [DeviceListing(e.name.decode(errors="replace"), bytes(e.uuid),
                          e.pci_bus_id.decode(errors="replace"), Backend(e.backend),
                          bool(e.emulated), e.spec.decode(errors="replace"))
            for e in arr[:count.value]]


def _attribute_number(attr):
    if isinstance(attr, str):
        if attr not in DEVICE_ATTRIBUTES:
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"Device.attribute: unknown attribute {attr!r} (one of "
                                  f"tegragpu.DEVICE_ATTRIBUTES)")
        return DEVICE_ATTRIBUTES[attr]
    return _int_arg(attr, "attr", "Device.attribute")


_NVGPU_CTRL = "/dev/nvgpu/igpu0/ctrl"
_SINGLE_DEVICE_SPECS = ("emu", "nvgpu")


def device_spec(spec=None, index=None):
    """The spec string :class:`Device` passes to ``tg_device_open`` for ``spec`` and ``index``
    (None = no spec: the GPU of this machine).

    ``index`` picks one of several GPUs driven by the desktop driver: ``index=N`` (no spec, or
    ``"rm"``) opens ``"rm:N"``. Exceptions: without a spec on a Jetson (``/dev/nvgpu`` present),
    ``index=0`` opens its one integrated GPU (``"nvgpu"``); ``"emu"`` and ``"nvgpu"`` have one
    device each, so only ``index=0`` is accepted there (:class:`NotFound` otherwise).
    """
    if index is None:
        return spec
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f"Device: index must be an int >= 0, got {index!r}")
    if spec is None:
        if index == 0 and os.path.exists(_NVGPU_CTRL):
            return "nvgpu"
        return f"rm:{index}"
    if spec in _SINGLE_DEVICE_SPECS:
        if index != 0:
            raise NotFound(Status.NOT_FOUND,
                           f'Device: "{spec}" has one device (index 0); there is no index {index}')
        return spec
    if ":" in spec:
        if spec.rpartition(":")[2] == str(index):
            return spec
        raise InvalidArgument(Status.INVALID_ARGUMENT,
                              f'Device: spec "{spec}" already names a device; index={index} '
                              "conflicts with it")
    return f"{spec}:{index}"


class Device(_Handle):
    """An open GPU.

    ``spec``: None = the GPU of this machine, ``"emu"`` = the emulated Orin, ``"nvgpu"``,
    ``"rm"``, ``"rm:N"``. ``index``: which GPU of several (see :func:`device_spec`):
    ``Device(index=1)`` opens ``"rm:1"``. The environment variable ``TEGRAGPU_DEVICE`` is read
    by the C library (see docs/python.md). Objects created from a device keep it open after
    ``close()``.
    """

    _destroy = "tg_device_close"
    _what = "Device"

    def __init__(self, spec=None, index=None):
        s = device_spec(spec, index)
        h = _H()
        check(lib.tg_device_open(None if s is None else s.encode(), ctypes.byref(h)))
        super().__init__(h.value)
        #: The spec passed to ``tg_device_open`` (None: the GPU of this machine).
        self.spec = s
        #: The ``index`` argument (None when not given).
        self.index = index

    def __repr__(self):
        return f"<tegragpu.Device spec={self.spec!r}{' closed' if self.closed else ''}>"

    @property
    def info(self):
        i = CDeviceInfo(struct_size=ctypes.sizeof(CDeviceInfo))
        check(lib.tg_device_get_info(self.handle, ctypes.byref(i)))
        return DeviceInfo(i.name.decode(errors="replace"), i.arch, i.sm_major, i.sm_minor,
                          i.sm_count, i.memory_bytes, i.va_bits, Backend(i.backend),
                          bool(i.emulated))

    def alloc(self, size_bytes, flags=0):
        """Allocate ``size_bytes`` of GPU memory (see the BUF_* flags). The CPU mapping is not
        requested here: it is made on the first CPU access (:attr:`Buffer.cpu_ptr`,
        :meth:`Buffer.numpy`, :meth:`Buffer.read`, :meth:`Buffer.write`)."""
        h = _H()
        check(lib.tg_buf_alloc(self.handle, size_bytes, flags, ctypes.byref(h)))
        return Buffer(h.value, flags)

    def import_fd(self, fd, size=0):
        """A :class:`Buffer` over memory another driver or process exported as ``fd``
        (``tg_buf_import_fd``): Jetson: a dma-buf; desktop: an RM export fd, e.g. from
        :meth:`Buffer.export_fd` or CUDA's ``cuMemExportToShareableHandle`` with
        ``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``. ``size``: the bytes to cover from the
        start (0: the whole object). ``fd`` stays the caller's: close it when you like."""
        fd = _int_arg(fd, "fd", "Device.import_fd")
        if fd >= 2 ** 31:
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"Device.import_fd: fd {fd} is not a file descriptor")
        size = _int_arg(size, "size", "Device.import_fd")
        h = _H()
        check(lib.tg_buf_import_fd(self.handle, fd, size, 0, ctypes.byref(h)))
        return Buffer(h.value)

    def register_host(self, obj):
        """Map the memory of ``obj`` (any writable, contiguous buffer: a numpy array, a
        bytearray, a ctypes array) for the GPU, pinning it (``tg_buf_register_host``, like
        ``cuMemHostRegister``): a :class:`Buffer` over the whole 4 KiB pages around it, at the
        GPU address equal to its CPU address, so kernels take the address of ``obj`` itself
        (``Buffer.gpu_address`` is that of the first page). The buffer keeps ``obj`` alive;
        freeing it unmaps and unpins the memory. Desktop GPUs only; elsewhere
        :class:`NotSupported` with the reason."""
        where = "Device.register_host"
        try:
            mv = memoryview(obj)
        except TypeError:
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"{where}: {type(obj).__name__} does not expose its memory "
                                  "(buffer protocol)") from None
        if mv.readonly or not mv.contiguous or mv.nbytes == 0:
            raise InvalidArgument(Status.INVALID_ARGUMENT,
                                  f"{where}: the memory must be writable, contiguous and not "
                                  f"empty (readonly={mv.readonly}, contiguous={mv.contiguous}, "
                                  f"{mv.nbytes} bytes)")
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mv.cast("B")))
        h = _H()
        check(lib.tg_buf_register_host(self.handle, ctypes.c_void_p(addr), mv.nbytes, 0,
                                       ctypes.byref(h)))
        b = Buffer(h.value)
        b._registered = obj  # the memory must outlive the mapping
        return b

    def load_module(self, cubin):
        """Load a cubin (or fatbin, or PTX) from bytes."""
        data = bytes(cubin)
        h = _H()
        check(lib.tg_module_load(self.handle, data, len(data), ctypes.byref(h)))
        return Module(h.value)

    def load_module_file(self, path):
        h = _H()
        check(lib.tg_module_load_file(self.handle, os.fsencode(path), ctypes.byref(h)))
        return Module(h.value)

    def compile_cuda(self, source, options=()):
        """Compile CUDA C with libnvrtc for this device and load it."""
        opts = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
        h = _H()
        check(lib.tg_module_compile_cuda(self.handle, source.encode(),
                                         opts if options else None, len(options),
                                         ctypes.byref(h)))
        return Module(h.value)

    def create_queue(self, kind=QueueKind.COMPUTE, depth=None, owned=False):
        """A compute or copy queue; `depth` (power of two, 16..65536; default 1024) is how many
        submissions/launches may be in flight before recording waits for the GPU. `owned=True`:
        only the calling thread may use (and drop) the queue; its calls take no lock
        (``tg_queue_create_owned``)."""
        h = _H()
        if owned:
            check(lib.tg_queue_create_owned(self.handle, int(kind), int(depth or 0),
                                            ctypes.byref(h)))
        elif depth is None:
            check(lib.tg_queue_create(self.handle, int(kind), ctypes.byref(h)))
        else:
            check(lib.tg_queue_create_with_depth(self.handle, int(kind), int(depth),
                                                 ctypes.byref(h)))
        return Queue(h.value, self)

    def create_signal(self, initial=0):
        h = _H()
        check(lib.tg_signal_create(self.handle, initial, ctypes.byref(h)))
        return Signal(h.value)

    def create_texture(self, buf, width, format="f32", channels=1, height=None, pitch=None,
                       offset=0, filter="point", normalized_coords=False,
                       read_normalized_float=False, address=("clamp", "clamp"),
                       border=(0.0, 0.0, 0.0, 0.0)):
        """A :class:`Texture` over ``buf`` (a :class:`Buffer`; ``tg_texture_create``).

        Linear (``tex1Dfetch``) with ``width`` elements unless ``height`` is given; then
        pitch-linear 2-D (``tex2D``) of ``height`` rows ``pitch`` bytes apart. ``format``: one of
        :data:`TEXTURE_FORMATS` (channel type); ``channels`` 1, 2 or 4; ``offset`` bytes into
        ``buf`` (32-byte aligned); ``filter`` ``"point"`` or ``"linear"``; ``address``: x and y
        modes from :data:`ADDRESS_MODES`; ``border``: RGBA for ``"border"``. Pass
        :attr:`Texture.value` as the kernel's ``cudaTextureObject_t`` argument."""
        d = CTextureDesc()
        d.struct_size = ctypes.sizeof(CTextureDesc)
        if format not in TEXTURE_FORMATS:
            raise ValueError(f"format {format!r} is not one of {sorted(TEXTURE_FORMATS)}")
        if filter not in ("point", "linear"):
            raise ValueError(f"filter {filter!r} is neither 'point' nor 'linear'")
        d.format, d.channels = TEXTURE_FORMATS[format], int(channels)
        d.flags = ((TEXTURE_READ_NORMALIZED_FLOAT if read_normalized_float else 0)
                   | (TEXTURE_NORMALIZED_COORDS if normalized_coords else 0)
                   | (TEXTURE_LINEAR_FILTER if filter == "linear" else 0))
        modes = [ADDRESS_MODES.get(m) for m in address]
        if len(modes) != 2 or None in modes:
            raise ValueError(f"address {address!r}: two of {sorted(ADDRESS_MODES)}")
        d.address_mode[:] = modes
        d.border_color[:] = [float(c) for c in border]
        d.offset_bytes, d.width = int(offset), int(width)
        if height is None:
            d.kind = TEXTURE_LINEAR
        else:
            d.kind, d.height, d.pitch_bytes = TEXTURE_PITCH2D, int(height), int(pitch or 0)
        h = _H()
        check(lib.tg_texture_create(buf.handle, ctypes.byref(d), ctypes.byref(h)))
        return Texture(h.value, buf)

    def create_cmdbuf(self, owned=False):
        """An empty :class:`CmdBuf` (command buffer) on this device. `owned=True`: only the
        calling thread may use (and drop) it; its calls take no lock
        (``tg_cmdbuf_create_owned``)."""
        h = _H()
        if owned:
            check(lib.tg_cmdbuf_create_owned(self.handle, ctypes.byref(h)))
        else:
            check(lib.tg_cmdbuf_create(self.handle, ctypes.byref(h)))
        return CmdBuf(h.value, self)

    def synchronize(self, timeout_ns=DEFAULT_TIMEOUT_NS):
        """Submit what is recorded on the device's queues (every shared queue, and this
        thread's owned queues), then wait for all submitted work (``tg_device_synchronize``)."""
        check(lib.tg_device_synchronize(self.handle, timeout_ns))

    def peer_access_info(self, other):
        """``(can_access, reason)``: whether this device can read and write ``other``'s memory
        once peer access is enabled, and why not (naming both GPUs and what the driver
        reported) or, when it can, the link (``tg_device_can_access_peer``)."""
        can = ctypes.c_bool()
        reason = ctypes.create_string_buffer(1024)
        check(lib.tg_device_can_access_peer(self.handle, other.handle, ctypes.byref(can),
                                            ctypes.cast(reason, ctypes.c_char_p),
                                            ctypes.sizeof(reason)))
        return bool(can.value), reason.value.decode(errors="replace")

    def can_access_peer(self, other):
        """Whether this device can read and write ``other``'s memory once peer access is
        enabled (two desktop GPUs joined by NVLink or a PCIe peer path; never on Jetson Orin or
        the emulated Orin). :meth:`peer_access_info` says why not."""
        return self.peer_access_info(other)[0]

    def enable_peer_access(self, other):
        """Let this device's queues and kernels use ``other``'s memory: its buffers, those
        allocated later included, are mapped into this device's GPU, and :meth:`Queue.copy` on
        this device's queues accepts them (``tg_device_enable_peer_access``). One-way; raises
        :class:`NotSupported` with the reason where there is no peer path."""
        check(lib.tg_device_enable_peer_access(self.handle, other.handle))

    @property
    def stack_limit(self):
        """Stack bytes per GPU thread for kernels taken from now on (default 1024)."""
        v = ctypes.c_uint64()
        check(lib.tg_device_get_limit(self.handle, LIMIT_STACK_SIZE, ctypes.byref(v)))
        return v.value

    @stack_limit.setter
    def stack_limit(self, value):
        check(lib.tg_device_set_limit(self.handle, LIMIT_STACK_SIZE, int(value)))

    @property
    def malloc_heap_size(self):
        """Bytes of the heap ``malloc`` in kernels allocates from (default 8 MiB); set it before
        loading a module that calls ``malloc``."""
        v = ctypes.c_uint64()
        check(lib.tg_device_get_limit(self.handle, LIMIT_MALLOC_HEAP_SIZE, ctypes.byref(v)))
        return v.value

    @malloc_heap_size.setter
    def malloc_heap_size(self, value):
        check(lib.tg_device_set_limit(self.handle, LIMIT_MALLOC_HEAP_SIZE, int(value)))

    count = staticmethod(device_count)
    list = staticmethod(list_devices)

    def attribute(self, attr):
        """One device attribute (``tg_device_get_attribute``): a name of
        :data:`DEVICE_ATTRIBUTES` (``"sm_count"``) or its number. Raises :class:`NotSupported`
        for an attribute the library cannot know for this device."""
        v = ctypes.c_int64()
        check(lib.tg_device_get_attribute(self.handle, _attribute_number(attr),
                                          ctypes.byref(v)))
        return v.value

    def attributes(self):
        """Every attribute the library knows for this device: ``{name: value}`` (the ones that
        are :class:`NotSupported` here are left out)."""
        out = {}
        for name in DEVICE_ATTRIBUTES:
            try:
                out[name] = self.attribute(name)
            except NotSupported:
                pass
        return out

    def memory_info(self):
        """``(free_bytes, total_bytes)`` of the memory buffers come from, now
        (``tg_device_memory_info``, like ``cuMemGetInfo``)."""
        free, total = ctypes.c_uint64(), ctypes.c_uint64()
        check(lib.tg_device_memory_info(self.handle, ctypes.byref(free), ctypes.byref(total)))
        return free.value, total.value

    def fault(self):
        """The sticky fault report, or None if the device has not faulted."""
        r = CFaultReport(struct_size=ctypes.sizeof(CFaultReport))
        st = lib.tg_device_get_fault(self.handle, ctypes.byref(r))
        if st == Status.NOT_FOUND:
            return None
        check(st)
        return FaultReport(r.code, r.address if r.has_address else None,
                           r.message.decode(errors="replace"))
