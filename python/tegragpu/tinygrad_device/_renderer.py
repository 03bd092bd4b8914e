"""Renderers: tinygrad's, minus TF32 tensor cores (tinygrad leaves those out for "CUDA" and
"NV" only, by device name; float32 matmuls must not silently lose precision on TEGRA either).
Each renderer carries the compiler that makes the code the device loads."""

from __future__ import annotations

from ._tinygrad import ALLOW_TF32, CUDARenderer, NVCCRenderer, PTXRenderer, dtypes


class _NoTF32:
    @property
    def tensor_cores(self):
        tcs = self.__dict__.get("_tegra_tcs", [])
        return tcs if ALLOW_TF32 else [tc for tc in tcs if tc.dtype_in != dtypes.float]

    @tensor_cores.setter
    def tensor_cores(self, value):
        self.__dict__["_tegra_tcs"] = value


class TegraCUDARenderer(_NoTF32, CUDARenderer):
    """tinygrad's CUDA C renderer; its NVRTC compiler makes a cubin for the device's sm_XY
    (the target device is TEGRA, so tinygrad asks NVRTC for SASS, not PTX)."""


class TegraNVCCRenderer(_NoTF32, NVCCRenderer):
    """tinygrad's CUDA C renderer compiled with nvcc to a cubin (``DEV=TEGRA:NVCC``)."""


class TegraPTXRenderer(_NoTF32, PTXRenderer):
    """tinygrad's PTX renderer; the PTX text goes to ``tg_module_load``, which compiles it with
    the library's PTX JIT (the NVIDIA driver's PTX compiler or nvJitLink) (``DEV=TEGRA:PTX``)."""

    def __init__(self, target):
        from dataclasses import replace
        from tinygrad.runtime.support.compiler_cuda import PTXCompiler
        # PTXRenderer picks nvJitLink (cubin) for every device but CUDA; we want the PTX text.
        super().__init__(replace(target, device="CUDA"))
        self.target = target
        self.compiler = PTXCompiler(target.arch, cache_key="tegra_ptx")
