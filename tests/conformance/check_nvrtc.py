#!/usr/bin/env python3
"""Compile every nvrtc-compatible corpus case with libnvrtc (no GPU, no nvcc needed): cubin for
sm_87 (cases with min_sm <= 87) and sm_90, and PTX for sm_90.

    source scripts/env.sh; tg_setup        # exports TEGRAGPU_NVRTC (pip nvidia-cuda-nvrtc-cu12)
    python3 tests/conformance/check_nvrtc.py [--include DIR ...] [--only REGEX] [--out DIR]

libnvrtc comes from $TEGRAGPU_NVRTC. Sources with '#include <...>' need the CUDA headers: pass
--include (repeatable) or set TEGRAGPU_CUDA_INCLUDE (':'-separated); by default the headers of
the pip wheels nvidia-cuda-runtime-cu12, nvidia-cuda-cccl-cu12 and nvidia-cuda-nvcc-cu12 next to
libnvrtc are used when present, then /usr/local/cuda/include. Without headers those cases are
reported as SKIP. Ends with 'N passed, M failed[, K skipped]'.
"""
import argparse
import ctypes
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402


def default_include_dirs(nvrtc_path):
    env = os.environ.get("TEGRAGPU_CUDA_INCLUDE")
    if env:
        return [d for d in env.split(":") if d]
    dirs = []
    # .../site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 -> .../site-packages/nvidia
    nv = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(nvrtc_path or "/x/x/x/x"))))
    for pkg in ("cuda_runtime", "cuda_cccl", "cuda_nvcc"):
        d = os.path.join(nv, pkg, "include")
        if os.path.isdir(d):
            dirs.append(d)
    if not dirs and os.path.isdir("/usr/local/cuda/include"):
        dirs.append("/usr/local/cuda/include")
    return dirs


class Nvrtc:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)

    def compile(self, src, name, opts, want_ptx=False):
        """(ok, bytes or log)."""
        lib = self.lib
        prog = ctypes.c_void_p()
        r = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
        if r != 0:
            return False, f"nvrtcCreateProgram: {lib.nvrtcGetErrorString(r).decode()}"
        try:
            arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
            rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
            n = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            log = ctypes.create_string_buffer(max(n.value, 1))
            lib.nvrtcGetProgramLog(prog, log)
            if rc != 0:
                return False, log.value.decode(errors="replace")
            get_size, get = ((lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if want_ptx
                             else (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN))
            size = ctypes.c_size_t()
            get_size(prog, ctypes.byref(size))
            data = ctypes.create_string_buffer(size.value)
            get(prog, data)
            return True, data.raw
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


def needs_headers(src):
    return re.search(r"^\s*#\s*include\s*<", src, re.M) is not None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--include", action="append", default=None, help="CUDA include directory")
    ap.add_argument("--only", help="regex on case ids")
    ap.add_argument("--out", help="write the cubins/PTX here (<id>.sm_XY.cubin, <id>.compute_90.ptx)")
    args = ap.parse_args()
    path = os.environ.get("TEGRAGPU_NVRTC")
    if not path:
        print("TEGRAGPU_NVRTC is not set (source scripts/env.sh; tg_setup)")
        return 2
    nv = Nvrtc(path)
    inc = args.include if args.include is not None else default_include_dirs(path)
    print(f"# nvrtc {nv.version[0]}.{nv.version[1]} from {path}; include dirs: {inc or 'none'}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    passed = failed = skipped = 0
    for c in corpus.CASES:
        if args.only and not re.search(args.only, c["id"]):
            continue
        if not c["nvrtc"]:
            print(f"SKIP {c['id']}: not buildable with nvrtc (separate compilation / device link)")
            skipped += 1
            continue
        src = open(os.path.join(HERE, "kernels", c["src"][0])).read()
        incflags = []
        if needs_headers(src):
            if not inc:
                print(f"SKIP {c['id']}: needs CUDA headers, none found")
                skipped += 1
                continue
            incflags = [f"--include-path={d}" for d in inc]
        base = corpus.nvrtc_flags(c) + incflags
        targets = []
        if c["min_sm"] <= 87 and not c["arch"]:
            targets.append(("sm_87", False))
        arch90 = c["arch"] or "sm_90"
        targets.append((arch90, False))
        targets.append(("compute_" + arch90[3:], True))
        errors = []
        for arch, ptx in targets:
            ok, res = nv.compile(src, c["src"][0], [f"--gpu-architecture={arch}"] + base, want_ptx=ptx)
            if not ok:
                errors.append(f"{arch}: {res.strip()}")
                continue
            if not ptx and res[:4] != b"\x7fELF":
                errors.append(f"{arch}: output is not an ELF cubin")
            if not ptx and b".text." + c["kernel"].encode() + b"\0" not in res:
                errors.append(f"{arch}: no .text.{c['kernel']} section in the cubin")
            if ptx and c["kernel"].encode() not in res:
                errors.append(f"{arch}: kernel {c['kernel']} not in the PTX")
            if args.out:
                ext = "ptx" if ptx else "cubin"
                with open(os.path.join(args.out, f"{c['id']}.{arch}.{ext}"), "wb") as f:
                    f.write(res.rstrip(b"\0") if ptx else res)
        if errors:
            print(f"FAIL {c['id']}: " + " | ".join(e.replace("\n", " ") for e in errors)[:2000])
            failed += 1
        else:
            print(f"PASS {c['id']} ({', '.join(a for a, _ in targets)})")
            passed += 1
    tail = f", {skipped} skipped" if skipped else ""
    print(f"{passed} passed, {failed} failed{tail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
