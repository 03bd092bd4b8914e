"""Texture objects over buffer memory: :class:`Texture` (made by ``Device.create_texture``)."""

import ctypes

from ._errors import check
from ._handle import _Handle
from ._library import lib


class Texture(_Handle):
    """A texture object over buffer memory (``tg_texture``; :meth:`Device.create_texture`)."""

    _destroy = "tg_texture_destroy"
    _what = "Texture"

    def __init__(self, handle, buf):
        super().__init__(handle)
        self.buffer = buf

    @property
    def value(self):
        """The 64-bit value to pass as the kernel's ``cudaTextureObject_t`` parameter."""
        v = ctypes.c_uint64()
        check(lib.tg_texture_handle(self.handle, ctypes.byref(v)))
        return v.value
