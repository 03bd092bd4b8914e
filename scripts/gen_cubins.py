#!/usr/bin/env python3
"""Regenerate the committed cubin fixtures from tests/fixtures/kernels.cu with libnvrtc.

The emulated GPU identifies kernels by the exact bytes of their code, and tests/nvrtc.rs
recompiles kernels.cu at test time and compares with these fixtures. Both therefore require the
exact nvrtc build pinned below and the fixed option list in OPTIONS.

Setup:   pip install nvidia-cuda-nvrtc-cu12==12.9.86
Run:     python3 scripts/gen_cubins.py            (writes tests/fixtures/cubin/*)
         python3 scripts/gen_cubins.py --check    (recompiles, fails if a fixture differs)
Library: found via $TEGRAGPU_NVRTC (a path to libnvrtc.so.12), else the pip package location.

Only the Python standard library (ctypes) is used.
"""
import ctypes
import glob
import hashlib
import os
import site
import sys
import sysconfig

PIP_PACKAGE = "nvidia-cuda-nvrtc-cu12"
PIP_VERSION = "12.9.86"
NVRTC_VERSION = (12, 9)  # what nvrtcVersion() must report for PIP_VERSION
# Options common to every target; the arch option is appended per target. Keep in sync with
# tests/nvrtc.rs (FIXTURE_OPTIONS).
OPTIONS = ["--std=c++17"]
ARCHES = ["sm_87", "sm_90", "sm_100"]
# The built-in kernels (src/builtin/*.cu) are embedded in the library for every architecture of
# the arch table (src/hw/arch.rs).
BUILTIN_ARCHES = ["sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTDIR = os.path.join(ROOT, "tests", "fixtures", "cubin")
BUILTIN_DIR = os.path.join(ROOT, "src", "builtin")
# (source file, program name given to nvrtcCreateProgram, output stem, output dir, arches)
SOURCES = [
    (os.path.join(ROOT, "tests", "fixtures", "kernels.cu"), "kernels.cu", "kernels", OUTDIR, ARCHES),
    (os.path.join(OUTDIR, "globals.cu"), "globals.cu", "globals", OUTDIR, ARCHES),
    (os.path.join(BUILTIN_DIR, "copy.cu"), "copy.cu", "copy", BUILTIN_DIR, BUILTIN_ARCHES),
    (os.path.join(BUILTIN_DIR, "syscalls.cu"), "syscalls.cu", "syscalls", BUILTIN_DIR, BUILTIN_ARCHES),
]
# Sources compiled as relocatable device code with extra options, then device-linked with
# nvJitLink (pip nvidia-nvjitlink-cu12, same version as nvrtc): the syscall functions must keep
# the standard calling convention and fit the 24 registers ptxas gives their callers.
LINKED = {"syscalls": ["-rdc=true", "--maxrregcount=24"]}
NVJITLINK_PACKAGE = "nvidia-nvjitlink-cu12"


def find_nvrtc():
    env = os.environ.get("TEGRAGPU_NVRTC")
    if env:
        return env
    dirs = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs.append(sysconfig.get_paths()["purelib"])
    for d in dirs:
        p = os.path.join(d, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")
        if os.path.exists(p):
            return p
    sys.exit(f"libnvrtc.so.12 not found; run: pip install {PIP_PACKAGE}=={PIP_VERSION}")


def find_nvjitlink():
    env = os.environ.get("TEGRAGPU_NVJITLINK")
    if env:
        return env
    here = os.path.dirname(os.path.dirname(os.path.dirname(find_nvrtc())))  # .../nvidia
    p = os.path.join(here, "nvjitlink", "lib", "libnvJitLink.so.12")
    if os.path.exists(p):
        return p
    sys.exit(f"libnvJitLink.so.12 not found; run: pip install {NVJITLINK_PACKAGE}=={PIP_VERSION}")


class NvJitLink:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.path = path

    def link(self, cubin, arch):
        L, h = self.lib, ctypes.c_void_p()
        opts = (ctypes.c_char_p * 1)(f"-arch={arch}".encode())
        # The versioned entry points nvJitLink.h maps its API to (12.9 here).
        rc = getattr(L, "__nvJitLinkCreate_12_9")(ctypes.byref(h), 1, opts)
        if rc != 0:
            raise RuntimeError(f"nvJitLinkCreate(-arch={arch}) failed: {rc}")
        try:
            rc = L.nvJitLinkAddData(h, 1, cubin, ctypes.c_size_t(len(cubin)), b"syscalls")  # CUBIN
            if rc == 0:
                rc = L.nvJitLinkComplete(h)
            if rc != 0:
                n = ctypes.c_size_t()
                L.nvJitLinkGetErrorLogSize(h, ctypes.byref(n))
                log = ctypes.create_string_buffer(n.value + 1)
                L.nvJitLinkGetErrorLog(h, log)
                raise RuntimeError(f"nvJitLink {arch} failed ({rc}): {log.value.decode(errors='replace')}")
            n = ctypes.c_size_t()
            L.nvJitLinkGetLinkedCubinSize(h, ctypes.byref(n))
            out = ctypes.create_string_buffer(n.value)
            L.nvJitLinkGetLinkedCubin(h, out)
            return out.raw[: n.value]
        finally:
            getattr(L, "__nvJitLinkDestroy_12_9")(ctypes.byref(h))


def pip_version():
    try:
        from importlib import metadata
        return metadata.version(PIP_PACKAGE)
    except Exception:  # not installed through pip (TEGRAGPU_NVRTC)
        return None


class Nvrtc:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.path = path
        L = self.lib
        L.nvrtcGetErrorString.restype = ctypes.c_char_p
        L.nvrtcGetErrorString.argtypes = [ctypes.c_int]
        L.nvrtcVersion.argtypes = [ctypes.POINTER(ctypes.c_int)] * 2
        L.nvrtcCreateProgram.argtypes = [
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)]
        L.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        L.nvrtcCompileProgram.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                          ctypes.POINTER(ctypes.c_char_p)]
        L.nvrtcGetProgramLogSize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        L.nvrtcGetProgramLog.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        L.nvrtcGetCUBINSize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        L.nvrtcGetCUBIN.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        L.nvrtcGetSupportedArchs.argtypes = [ctypes.POINTER(ctypes.c_int)]
        L.nvrtcGetNumSupportedArchs.argtypes = [ctypes.POINTER(ctypes.c_int)]

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed: {self.lib.nvrtcGetErrorString(rc).decode()}")

    def version(self):
        a, b = ctypes.c_int(), ctypes.c_int()
        self.check(self.lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b)), "nvrtcVersion")
        return (a.value, b.value)

    def supported_arches(self):
        n = ctypes.c_int()
        self.check(self.lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        arr = (ctypes.c_int * n.value)()
        self.check(self.lib.nvrtcGetSupportedArchs(arr), "nvrtcGetSupportedArchs")
        return list(arr)

    def compile(self, source, name, options):
        prog = ctypes.c_void_p()
        self.check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0,
                                               None, None), "nvrtcCreateProgram")
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            rc = self.lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            self.check(self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)),
                       "nvrtcGetProgramLogSize")
            log = ctypes.create_string_buffer(size.value)
            self.check(self.lib.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
            if rc != 0:
                raise RuntimeError(f"nvrtcCompileProgram({' '.join(options)}) failed: "
                                   f"{self.lib.nvrtcGetErrorString(rc).decode()}\n"
                                   f"{log.value.decode(errors='replace')}")
            self.check(self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
            buf = ctypes.create_string_buffer(size.value)
            self.check(self.lib.nvrtcGetCUBIN(prog, buf), "nvrtcGetCUBIN")
            return buf.raw[: size.value], log.value.decode(errors="replace")
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


def main():
    check_only = "--check" in sys.argv[1:]
    nv = Nvrtc(find_nvrtc())
    ver = nv.version()
    if ver != NVRTC_VERSION:
        sys.exit(f"{nv.path}: nvrtcVersion() = {ver}, expected {NVRTC_VERSION} "
                 f"(pip install {PIP_PACKAGE}=={PIP_VERSION})")
    pv = pip_version()
    if pv is not None and pv != PIP_VERSION and "TEGRAGPU_NVRTC" not in os.environ:
        sys.exit(f"{PIP_PACKAGE} {pv} is installed, expected {PIP_VERSION} "
                 f"(pip install {PIP_PACKAGE}=={PIP_VERSION})")
    supported = nv.supported_arches()

    os.makedirs(OUTDIR, exist_ok=True)
    rows = []
    failed = False
    jl = None
    for path, prog_name, stem, outdir, arches in SOURCES:
        with open(path, "rb") as f:
            source = f.read()
        for arch in arches:
            num = int(arch[3:])
            if num not in supported:
                print(f"{arch}: not supported by this nvrtc, skipped")
                continue
            options = [f"--gpu-architecture={arch}"] + OPTIONS + LINKED.get(stem, [])
            first, log = nv.compile(source, prog_name, options)
            second, _ = nv.compile(source, prog_name, options)
            if stem in LINKED:
                jl = jl or NvJitLink(find_nvjitlink())
                first, second = jl.link(first, arch), jl.link(second, arch)
                options = options + ["+ nvJitLink"]
            if first != second:
                sys.exit(f"{stem} {arch}: nvrtc output is not deterministic (two compiles differ)")
            if log.strip():
                print(f"{stem} {arch} compiler log:\n{log}")
            name = f"{stem}.{arch}.cubin"
            out = os.path.join(outdir, name)
            digest = hashlib.sha256(first).hexdigest()
            rows.append((os.path.relpath(out, OUTDIR), prog_name, options, len(first), digest))
            if check_only:
                try:
                    with open(out, "rb") as f:
                        same = f.read() == first
                except FileNotFoundError:
                    same = False
                print(f"{out}: {'same' if same else 'DIFFERS'}")
                failed |= not same
            else:
                with open(out, "wb") as f:
                    f.write(first)
                print(f"wrote {out} ({len(first)} bytes, sha256 {digest})")
    if check_only:
        sys.exit(1 if failed else 0)
    write_readme(ver, rows)


def write_readme(ver, rows):
    lines = [
        "# Cubin fixtures",
        "",
        "Generated by `scripts/gen_cubins.py` from `tests/fixtures/kernels.cu` (kernels shared with",
        "the emulator and the integration tests) and `tests/fixtures/cubin/globals.cu` (relocations,",
        "`__device__`/`__constant__` data, jump tables; loader tests only), and the library's",
        "built-in kernels from `src/builtin/copy.cu` and its device-side printf and assert from",
        "`src/builtin/syscalls.cu` (embedded in the library; written next to their source; the",
        "syscalls are compiled with `-rdc=true` and device-linked with nvJitLink from pip",
        f"`{NVJITLINK_PACKAGE}=={PIP_VERSION}`). Do not edit the `.cubin` files by hand.",
        "",
        f"- Compiler: libnvrtc from pip `{PIP_PACKAGE}=={PIP_VERSION}` "
        f"(`nvrtcVersion()` = {ver[0]}.{ver[1]}).",
        "- Program name passed to `nvrtcCreateProgram`: the source's file name (`kernels.cu`,",
        "  `globals.cu`); no headers.",
        f"- Options: `--gpu-architecture=<arch>` followed by `{' '.join(OPTIONS)}`; "
        "everything else is nvrtc's default (-O3 device code, no debug info, no -lineinfo).",
        "- Output: `nvrtcGetCUBIN`. Compiling twice gives identical bytes (the script checks).",
        "",
        "| file | program | options | bytes | sha256 |",
        "|---|---|---|---|---|",
    ]
    for name, prog_name, options, size, digest in rows:
        lines.append(f"| `{name}` | `{prog_name}` | `{' '.join(options)}` | {size} | `{digest}` |")
    lines += [
        "",
        "Regenerate (needs exactly this nvrtc: the emulated GPU identifies kernels by their code",
        "bytes, and `tests/nvrtc.rs` recompiles the sources and compares with these files):",
        "",
        "```sh",
        f"pip install {PIP_PACKAGE}=={PIP_VERSION}",
        "python3 scripts/gen_cubins.py          # rewrite the fixtures and this README",
        "python3 scripts/gen_cubins.py --check  # verify the committed fixtures",
        "```",
        "",
        "`TEGRAGPU_NVRTC=/path/to/libnvrtc.so.12` selects a specific library file.",
        "",
    ]
    with open(os.path.join(OUTDIR, "README.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
