"""Packing kernel arguments: a packer per (check, size) takes a Python value for a parameter of
that C type and size, checks it and returns its bytes (Kernel.pack)."""

import struct
import sys as _sys  # numpy detection in Kernel.pack

from ._memory import _REGIONS


class _Refused(Exception):
    """An argument a parameter does not take (the reason); Kernel.pack names the parameter."""


_NUMPY = [None]


def _numpy():
    """The numpy module if the program has imported it (a numpy value implies it has), else
    None: the package does not import numpy itself."""
    np = _NUMPY[0]
    if np is None:
        np = _NUMPY[0] = _sys.modules.get("numpy")
    return np


def _describe_value(a):
    np = _numpy()
    if np is not None and isinstance(a, np.generic):
        return f"numpy.{a.dtype} {a!s}"
    r = repr(a)
    return f"{type(a).__name__} {r if len(r) <= 60 else r[:57] + '...'}"


def _int_range(check_, size):
    bits = 8 * size
    if check_ == "int":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if check_ == "uint":
        return 0, (1 << bits) - 1
    if check_ == "char":
        return -128, 255
    return -(1 << (bits - 1)), (1 << bits) - 1   # type unknown: either signedness


def _raw(a, size):
    """The bytes of a bytes-like object or of a numpy array or scalar, which must number
    ``size``; None if ``a`` is none of these."""
    if isinstance(a, (bytes, bytearray, memoryview)):
        raw = bytes(a)
    elif hasattr(a, "tobytes") and hasattr(a, "dtype"):
        raw = a.tobytes()
    else:
        return None
    if len(raw) != size:
        raise _Refused(f"has {len(raw)} bytes; the parameter has {size}")
    return raw


_FLOAT_FORMATS = {2: "<e", 4: "<f", 8: "<d"}


def _float_bytes(v, size, check_):
    """The IEEE bytes of ``v`` (an int or float) for a floating-point parameter of ``size``
    bytes (``check_`` "bf16": bfloat16, rounded to nearest even)."""
    try:
        if type(v) is not float:
            v = float(v)  # OverflowError for ints beyond the double range
        if check_ == "bf16":
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            if (bits & 0x7f800000) == 0x7f800000:
                return struct.pack("<H", (bits >> 16) | (0x40 if bits & 0x7fffff else 0))
            r = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16
            if (r & 0x7f80) == 0x7f80:
                raise OverflowError
            return struct.pack("<H", r)
        return struct.pack(_FLOAT_FORMATS[size], v)
    except OverflowError:
        raise _Refused("overflows (not finite in this floating-point type)") from None


_PACKERS = {}


def _packer(check_, size):
    """_make_packer(check_, size), made once per (check, size)."""
    fn = _PACKERS.get((check_, size))
    if fn is None:
        fn = _PACKERS[(check_, size)] = _make_packer(check_, size)
    return fn


def _make_packer(check_, size):
    """A function packing one argument for a parameter of ``size`` bytes checked as ``check_``
    (see _BUILTIN_TYPES; None: by size only); it returns ``size`` bytes or raises _Refused."""
    lo, hi = _int_range(check_, size)

    def numpy_int(a):
        if a.dtype.kind not in "iu":
            raise _Refused("is not an integer")
        if a.dtype.itemsize != size:
            raise _Refused(f"is a numpy integer of {a.dtype.itemsize} bytes; the parameter "
                           f"has {size}")
        return int(a)

    def other_int(a):
        """An int from an int subclass (IntEnum...); raw bytes are handled by the caller."""
        if isinstance(a, int):
            return int(a)
        raise _Refused("is not an integer" if isinstance(a, float) else
                       "cannot be passed for this parameter")

    if check_ in ("int", "uint", "char"):
        unsigned = check_ == "uint"

        def pack_int(a):
            t = type(a)
            if t is not int and t is not bool:
                np = _numpy()
                if np is not None and isinstance(a, np.generic):
                    a = numpy_int(a)
                else:
                    raw = _raw(a, size)
                    if raw is not None:
                        return raw
                    a = other_int(a)
            if a < lo or a > hi:
                if a < 0 and unsigned:
                    raise _Refused(f"is negative; the parameter is unsigned (0..{hi})")
                raise _Refused(f"is out of range ({lo}..{hi})")
            return a.to_bytes(size, "little", signed=a < 0)
        return pack_int

    if check_ == "bool":
        def pack_bool(a):
            if a is True or a is False:
                return b"\x01" if a else b"\x00"
            np = _numpy()
            if np is not None and isinstance(a, np.generic):
                v = bool(a) if a.dtype.kind == "b" else int(a) if a.dtype.kind in "iu" else None
            else:
                raw = _raw(a, size)
                if raw is not None:
                    return raw
                v = int(a) if isinstance(a, int) else None
            if v is None or v not in (0, 1):
                raise _Refused("is not a bool (True, False, 0 or 1)")
            return b"\x01" if v else b"\x00"
        return pack_bool

    if check_ in ("float", "bf16"):
        def pack_float(a):
            t = type(a)
            if t is float or t is int:
                return _float_bytes(a, size, check_)
            np = _numpy()
            if np is not None and isinstance(a, np.generic):
                k = a.dtype.kind
                if k == "f":
                    if a.dtype.itemsize == size and check_ == "float":
                        return a.tobytes()
                    return _float_bytes(float(a), size, check_)
                if k in "iu":
                    return _float_bytes(int(a), size, check_)
                raise _Refused("is not a real number")
            raw = _raw(a, size)
            if raw is not None:
                return raw
            if isinstance(a, bool):
                raise _Refused("is a bool, not a number")
            if isinstance(a, (int, float)):
                return _float_bytes(a, size, check_)
            raise _Refused("cannot be passed for this parameter")
        return pack_float

    if check_ == "ptr":
        not_address = "is not a Buffer, BufferView, address (int >= 0) or None"

        def pack_ptr(a):
            if isinstance(a, _REGIONS):
                return a.gpu_address.to_bytes(8, "little")
            if a is None:
                return bytes(8)
            t = type(a)
            if t is not int:
                np = _numpy()
                if np is not None and isinstance(a, np.generic):
                    if a.dtype.kind not in "iu":
                        raise _Refused(not_address)
                    a = int(a)
                elif t is bool:
                    raise _Refused(not_address)
                else:
                    raw = _raw(a, size)
                    if raw is not None:
                        return raw
                    if not isinstance(a, int):
                        raise _Refused(not_address)
                    a = int(a)
            if a < 0:
                raise _Refused("is negative; an address is >= 0")
            if a > 0xFFFF_FFFF_FFFF_FFFF:
                raise _Refused("is out of range for a 64-bit address")
            return a.to_bytes(8, "little")
        return pack_ptr

    # Type unknown (extern "C" kernels, class/struct/enum types, names the demangler does not
    # read): by size only, as earlier versions packed.
    def pack_any(a):
        t = type(a)
        if t is int or t is bool:
            if a < lo or a > hi:
                raise _Refused(f"is out of range for {size} bytes ({lo}..{hi})")
            return a.to_bytes(size, "little", signed=a < 0)
        if isinstance(a, _REGIONS):
            if size != 8:
                raise _Refused(f"is an address (8 bytes); the parameter has {size}")
            return a.gpu_address.to_bytes(8, "little")
        raw = _raw(a, size)  # numpy scalars too: their bytes
        if raw is not None:
            return raw
        if isinstance(a, float):
            if size not in (4, 8):
                raise _Refused(f"is a float; a float needs a 4- or 8-byte parameter, this one "
                               f"has {size}")
            return _float_bytes(a, size, "float")
        if isinstance(a, int):
            return pack_any(int(a))
        raise _Refused("cannot be passed for this parameter")
    return pack_any
