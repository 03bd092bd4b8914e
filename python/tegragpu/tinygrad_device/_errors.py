"""The device's exception and warning classes."""

from __future__ import annotations


class TegraError(RuntimeError):
    """A libtegragpu call made for tinygrad failed. The message names the kernel or copy and
    the library's error; ``__cause__`` is the :class:`tegragpu.Error`; ``status`` is its
    :class:`tegragpu.Status` (None when the error did not come from the library)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class TegraEmulatorWarning(UserWarning):
    """The TEGRA device opened the emulated Orin, which cannot run tinygrad's kernels."""
