"""Loaded code: :class:`Module` and :class:`Kernel` (attributes, parameter types, packing)."""

import ctypes
from dataclasses import dataclass

from ._cdefs import _H, CKernelAttributes
from ._constants import Status
from ._errors import InvalidArgument, InvalidLaunch, check
from ._handle import _Handle
from ._library import lib
from ._packing import _Refused, _describe_value, _packer
from ._param_types import _check_of, _Demangler, _DemangleError, _parse_c_decl


@dataclass(frozen=True)
class KernelAttributes:
    num_params: int
    param_bytes: int
    registers: int
    static_shared_bytes: int
    local_bytes_per_thread: int
    max_threads_per_block: int
    max_dynamic_shared_bytes: int


class Module(_Handle):
    _destroy = "tg_module_destroy"
    _what = "Module"

    def kernel(self, name, param_types=None):
        """The kernel ``name`` (as the cubin spells it: mangled for a C++ kernel).
        ``param_types``: optional C declarations of its parameters, one per parameter, e.g.
        ``["const float* x", "float* y", "unsigned n"]`` (None entries: unknown), for kernels
        whose name carries no types (``extern "C"``); see :attr:`Kernel.param_types`."""
        h = _H()
        check(lib.tg_module_get_kernel(self.handle, name.encode(), ctypes.byref(h)))
        return Kernel(h.value, name, param_types)

    def global_address(self, name):
        """``(gpu_address, size_bytes)`` of a ``__device__`` / ``__constant__`` variable."""
        va, size = ctypes.c_uint64(), ctypes.c_uint64()
        check(lib.tg_module_get_global(self.handle, name.encode(), ctypes.byref(va), None,
                                       ctypes.byref(size)))
        return va.value, size.value

    def global_view(self, name, dtype="uint8"):
        """A writable numpy view of a ``__device__`` / ``__constant__`` variable's memory
        (valid while the module is loaded). Getting the view makes every queue drop the GPU's
        constant and data caches before its next launch."""
        import numpy as np
        cpu, size = ctypes.c_void_p(), ctypes.c_uint64()
        check(lib.tg_module_get_global(self.handle, name.encode(), None, ctypes.byref(cpu),
                                       ctypes.byref(size)))
        raw = (ctypes.c_uint8 * size.value).from_address(cpu.value)
        return np.frombuffer(raw, dtype=np.uint8).view(dtype)


class Kernel(_Handle):
    _destroy = "tg_kernel_destroy"
    _what = "Kernel"

    def __init__(self, handle, name, param_types=None):
        super().__init__(handle)
        self.name = name
        a = CKernelAttributes(struct_size=ctypes.sizeof(CKernelAttributes))
        check(lib.tg_kernel_get_attributes(handle, ctypes.byref(a)))
        self.attributes = KernelAttributes(
            a.num_params, a.param_bytes, a.registers, a.static_shared_bytes,
            a.local_bytes_per_thread, a.max_threads_per_block, a.max_dynamic_shared_bytes)
        params = []
        for i in range(a.num_params):
            off, size = ctypes.c_uint32(), ctypes.c_uint32()
            check(lib.tg_kernel_get_param(handle, i, ctypes.byref(off), ctypes.byref(size)))
            params.append((off.value, size.value))
        #: (offset, size) of each parameter in the packed parameter block.
        self.params = params
        self._set_param_types(param_types)

    @property
    def param_types(self):
        """The C type of each parameter, as :meth:`pack` checks arguments against them: a list
        with a string per parameter (``"unsigned int"``, ``"const float*"``) or None where the
        type is unknown.

        A cubin records only each parameter's offset and size. The types come from the
        ``param_types`` declarations given to :meth:`Module.kernel`, else from the kernel's
        mangled name: a C++ kernel's name carries its parameter list (``_Z5saxpyfPKfPfj`` is
        ``saxpy(float, const float*, float*, unsigned int)``), read by a small demangler
        (builtin, pointer, reference, const/volatile, class and enum types, template
        parameters, substitutions). An ``extern "C"`` kernel's name carries none, and a name the
        demangler does not read gives none: every entry is None, and :meth:`pack` checks such
        parameters by size only. A class, struct, union or enum type (``"Dims"``,
        ``"ns::Box<float>"``) is named but checked by size only, as an unknown type is; CUDA's
        ``__half`` and ``__nv_bfloat16`` are checked as the 16-bit floats they hold. A type
        whose size differs from the cubin's parameter size is also checked by size only.
        """
        return self._param_types

    def _set_param_types(self, declared):
        n = len(self.params)
        types, names = [None] * n, [None] * n
        self._signature = None  # the demangled function name
        if declared is not None:
            declared = list(declared)
            if len(declared) != n:
                raise InvalidArgument(
                    Status.INVALID_ARGUMENT,
                    f"{self.name}: param_types has {len(declared)} entries; the kernel has "
                    f"{n} parameters")
            for i, d in enumerate(declared):
                if d is not None:
                    try:
                        types[i], names[i] = _parse_c_decl(str(d))
                    except ValueError as e:
                        raise InvalidArgument(Status.INVALID_ARGUMENT,
                                              f"{self.name}: param_types[{i}]: {e}") from None
        elif self.name.startswith("_Z"):
            try:
                fname, parsed = _Demangler(self.name).parse()
            except (_DemangleError, IndexError, ValueError, RecursionError):
                parsed = None  # not read: size-only checks
            if parsed is not None and len(parsed) == n:
                types = parsed
                self._signature = fname
        self._param_types = [t.spelling if t is not None else None for t in types]
        self._param_names = names
        self._packers = [(off, size, _packer(_check_of(t, size), size))
                         for t, (off, size) in zip(types, self.params)]
        self._param_bytes = self.attributes.param_bytes

    def max_active_blocks(self, block_threads, shared_bytes=0):
        """Blocks of ``block_threads`` threads one SM runs at once (occupancy)."""
        n = ctypes.c_uint32()
        check(lib.tg_kernel_max_active_blocks(self.handle, block_threads, shared_bytes,
                                              ctypes.byref(n)))
        return n.value

    def pack(self, args):
        """Pack Python values into the kernel's parameter block, checking each against the
        parameter's C type (:attr:`param_types`); a value the parameter does not take raises
        :class:`InvalidArgument` naming the kernel, the parameter (index, and name if
        declared), its C type and the value.

        - integer types (``int``, ``unsigned int``, ``long long``, ``char``...): an ``int``
          (or ``bool``) within the type's range, or a numpy integer scalar of the parameter's
          size (also range-checked: ``np.int32(-1)`` for an ``unsigned int`` is refused).
          Floats, negative values for unsigned types and values out of range are refused.
        - ``bool``: ``True``, ``False``, 0 or 1 (Python or numpy).
        - ``float``, ``double``, ``half``/``__half``, ``_Float16``, ``__nv_bfloat16``: an
          ``int`` or ``float`` or a numpy integer or floating scalar, converted as C++ converts;
          a finite value the type cannot hold as a finite number (``1e39`` for ``float``) is
          refused.
        - pointers and references: a :class:`Buffer` or :class:`BufferView` (its GPU address),
          an ``int`` address (0 to 2**64 - 1), or None (null).
        - type unknown (``extern "C"`` kernels, class/struct/enum types, names the demangler
          does not read): by size only, as earlier versions did: an ``int`` within
          -2**(8n-1) .. 2**(8n)-1 for an n-byte parameter, packed little-endian; a ``float``
          as float32 (4 bytes) or float64 (8 bytes); a numpy scalar as its bytes; a
          :class:`Buffer`/:class:`BufferView` as its address (8 bytes).
        - any parameter: ``bytes``/``bytearray``/``memoryview`` or a numpy array (not a
          scalar) of exactly the parameter's size is packed as is, unchecked (the escape hatch,
          e.g. for structs).
        """
        packers = self._packers
        if len(args) != len(packers):
            raise InvalidLaunch(
                Status.INVALID_LAUNCH,
                f"{self.name}: takes {len(packers)} parameters, got {len(args)}")
        block = bytearray(self._param_bytes)
        i = 0
        try:
            for i, (off, size, fn) in enumerate(packers):
                block[off:off + size] = fn(args[i])
        except _Refused as e:
            raise self._refusal(i, args[i], e) from None
        return bytes(block)

    def _refusal(self, i, a, why):
        size = self.params[i][1]
        ctype = self.param_types[i] or f"{size} bytes, type unknown"
        hint = ""
        if not self.name.startswith("_Z") and not any(self.param_types):
            hint = ("; an extern \"C\" kernel's name carries no types: "
                    "Module.kernel(name, param_types=[...]) declares them")
        name = self._param_names[i]
        where = f"{self.name} ({self._signature})" if self._signature else self.name
        return InvalidArgument(
            Status.INVALID_ARGUMENT,
            f"{where}: parameter {i}{f' {name!r}' if name else ''} ({ctype}): "
            f"{_describe_value(a)} {why}{hint}")
