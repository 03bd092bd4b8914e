#!/usr/bin/env python3
"""Differential conformance suite: the same cubins run through libcuda and libtegragpu in one
process; outputs are compared byte for byte and kernel attributes field by field.

Usage (on a machine with an NVIDIA GPU, libcuda, nvcc and numpy):

    PYTHONPATH=python TEGRAGPU_LIBRARY=target/release/libtegragpu.so \\
        python3 tests/conformance/run.py --out /tmp/conformance \\
            --fixture /tmp/conformance/attrs.json --keep-cubins tests/conformance/fixtures

    python3 tests/conformance/run.py --no-tg      # libcuda only: validates the corpus

Steps: (1) compile every case with nvcc for the device's sm_XY and for sm_87 (cubins only; the
sm_87 ones are kept as fixtures), in parallel; (2) for every case: load the cubin in libcuda,
query its attributes, launch it, copy the outputs back; load the same cubin in libtegragpu
($TEGRAGPU_DEVICE, default "rm"), compare its attributes, launch it with the same inputs and
compare the outputs.

One line per case:
    PASS <id>
    FAIL <id>: <first mismatch or error>        FAIL <id> attrs: <field> cuda=<v> tg=<v>
    UNSUPPORTED <id>: <reason>                   (libtegragpu refused a may_refuse case, a
                                                  needed libtegragpu symbol is missing, or the
                                                  device's SM is below the case's min_sm)
    SKIP <id>: <reason>                          (libcuda itself cannot run the case)
and finally 'N passed, M failed[, K skipped]' (K = UNSUPPORTED + SKIP); exit status 1 when M > 0.
Lines starting with '#' are information. With --no-tg every case runs twice through libcuda
and the two runs are compared (determinism check); libcuda errors are then FAILs, not SKIPs.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import corpus  # noqa: E402

DEFAULT_STACK = 1024
TG_LIMIT_STACK_SIZE = 0
TG_LAUNCH_COOPERATIVE = 1


# =============================================================================================
# small helpers

def say(line):
    print(line, flush=True)


def one_line(s, limit=600):
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[:limit] + "..."


class CaseFail(Exception):
    """The case fails (message printed after 'FAIL <id>: ')."""


class CaseSkip(Exception):
    """libcuda cannot run the case."""


class CaseUnsupported(Exception):
    """libtegragpu refused (may_refuse) / a symbol is missing / SM too low."""


# =============================================================================================
# manifest evaluation

DTYPES = {
    "i8": ("b", "int8"), "u8": ("B", "uint8"), "i16": ("h", "int16"), "u16": ("H", "uint16"),
    "i32": ("i", "int32"), "u32": ("I", "uint32"), "i64": ("q", "int64"), "u64": ("Q", "uint64"),
    "f16": ("e", "float16"), "bf16": ("H", None), "f32": ("f", "float32"), "f64": ("d", "float64"),
}


def launch_ctx(c, dyn):
    g, b = c["grid"], c["block"]
    return dict(dyn=dyn, gx=g[0], gy=g[1], gz=g[2], bx=b[0], by=b[1], bz=b[2],
                threads=g[0] * g[1] * g[2] * b[0] * b[1] * b[2])


def evaluate(v, ctx):
    if isinstance(v, str):
        return eval(v, {"__builtins__": {}}, dict(ctx))  # manifest expressions only
    return v


def make_fill(fill, nbytes):
    """Bytes of length nbytes for a fill rule (see corpus.py)."""
    import numpy as np
    kind = fill[0]
    if kind == "zeros":
        return bytes(nbytes)
    if kind == "bytes":
        return np.random.default_rng(fill[1]).integers(0, 256, nbytes, dtype=np.uint8).tobytes()
    dt = fill[1]
    if dt not in DTYPES:
        raise ValueError(f"unknown dtype {dt}")
    item = struct.calcsize(DTYPES[dt][0])
    n = nbytes // item
    if kind == "const":
        arr = _as_dtype(np.full(n, fill[2], dtype=np.float64 if dt.startswith(("f", "bf")) else object), dt)
    elif kind == "iota":
        start, step = fill[2], fill[3]
        arr = _as_dtype(np.array([start + i * step for i in range(n)], dtype=object), dt)
    elif kind == "rand":
        _, _, seed, lo, hi = fill
        arr = _as_dtype(np.random.default_rng(seed).uniform(lo, hi, n), dt)
    elif kind == "randint":
        _, _, seed, lo, hi = fill
        rng = np.random.default_rng(seed)
        if dt == "u64":
            arr = rng.integers(lo, hi, n, dtype=np.uint64, endpoint=False)
        else:
            arr = _as_dtype(rng.integers(lo, hi, n, dtype=np.int64), dt)
    else:
        raise ValueError(f"unknown fill {fill!r}")
    data = arr.tobytes()
    return data + bytes(nbytes - len(data))


def _as_dtype(a, dt):
    import numpy as np
    if dt == "bf16":
        f = np.asarray(a, dtype=np.float32)
        u = f.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even
        return u.astype(np.uint16)
    npdt = np.dtype(DTYPES[dt][1])
    if npdt.kind in "iu":
        vals = [int(x) % (1 << (8 * npdt.itemsize)) for x in np.asarray(a, dtype=object).ravel()]
        return np.array(vals, dtype=np.uint64).astype(npdt.str.replace("i", "u")).view(npdt)
    return np.asarray(a, dtype=np.float64).astype(npdt)


def pack_scalar(dtype, value):
    fmt = DTYPES[dtype][0]
    if dtype == "bf16":
        raise ValueError("bf16 scalars are not supported")
    if fmt in "bhiqBHIQ":
        bits = 8 * struct.calcsize(fmt)
        value = int(value) % (1 << bits)
        fmt = fmt.upper()
    return struct.pack("<" + fmt, value)


def blob_bytes(size, seed):
    import numpy as np
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


class Prepared:
    """Inputs of one case, materialised once and given to both sides."""

    def __init__(self, c, dyn):
        self.c = c
        self.dyn = dyn
        ctx = launch_ctx(c, dyn)
        self.args = []  # per argument: dict(kind, size/raw/data, out)
        for i, a in enumerate(c["args"]):
            k = a["kind"]
            if k == "buf":
                size = int(evaluate(a["size"], ctx))
                if size <= 0:
                    raise CaseFail(f"manifest: argument {i} has size {size}")
                self.args.append(dict(kind="buf", size=size, data=make_fill(a["fill"], size),
                                      out=a["out"]))
            elif k == "scalar":
                self.args.append(dict(kind="scalar", raw=pack_scalar(a["dtype"], evaluate(a["value"], ctx))))
            elif k == "blob":
                self.args.append(dict(kind="blob", raw=blob_bytes(a["size"], a["seed"])))
            elif k == "tex":
                size = int(evaluate(a["size"], ctx))
                t = dict(a, kind="tex", size=size, data=make_fill(a["fill"], size))
                t.setdefault("fmt", "f32")
                t.setdefault("ch", 1)
                self.args.append(t)
            elif k == "surf":
                size = int(evaluate(a["size"], ctx))
                self.args.append(dict(kind="surf", size=size, out=True))
            elif k == "tensormap":
                size = 4 * a["rows"] * a["cols"]
                self.args.append(dict(kind="tensormap", size=size, data=make_fill(a["fill"], size),
                                      rows=a["rows"], cols=a["cols"], box=a["box"],
                                      by_pointer=a.get("by_pointer", False)))
            else:
                raise CaseFail(f"manifest: unknown argument kind {k}")
        self.consts = []
        for name, fill, nbytes in c["needs_constant"]:
            self.consts.append((name, make_fill(fill, nbytes)))

    def output_names(self):
        names = [f"arg{i}" for i, a in enumerate(self.args) if a.get("out")]
        names += [f"global {n}" for n, _ in self.c["read_globals"]]
        return names


def output_tolerance(c, name):
    """(dtype, rtol, atol) or None."""
    tol = c["tol"]
    if name.startswith("arg"):
        return tol.get(int(name[3:]))
    return tol.get(name[len("global "):])


# =============================================================================================
# compilation

def find_nvcc(explicit):
    for p in (explicit, os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc", shutil.which("nvcc")):
        if p and os.path.exists(p):
            return p
    return None


def is_rdc(c):
    return len(c["src"]) > 1 or bool(c["link"]) or "-rdc=true" in corpus.nvcc_flags(c)


def case_arch(c, target, device_arch=None):
    """The architecture a case is built for when the target is sm_XY, or None when the case
    does not build for it."""
    if target != device_arch and not c["fixture_arch"]:
        return None
    sm = int(target[3:])
    if c["min_sm"] > sm:
        return None
    if c["arch"]:
        return c["arch"] if int(re.sub(r"\D", "", c["arch"])) <= sm and sm // 10 == int(c["arch"][3]) else None
    return target


def compile_commands(c, arch, nvcc, workdir, out_path):
    """List of argv lists that build out_path."""
    num = arch[3:]
    gencode = f"-gencode=arch=compute_{num},code=sm_{num}"
    srcs = [os.path.join(HERE, "kernels", s) for s in c["src"]]
    flags = ["-std=c++17"] + [f for f in corpus.nvcc_flags(c) if f != "-rdc=true"]
    if not is_rdc(c):
        return [[nvcc, "-cubin", gencode] + flags + ["-o", out_path, srcs[0]]]
    cmds, objs = [], []
    for s in srcs:
        o = os.path.join(workdir, f"{c['id']}.{arch}.{os.path.basename(s)}.rdc.cubin")
        cmds.append([nvcc, "-cubin", "-rdc=true", gencode] + flags + ["-o", o, s])
        objs.append(o)
    libs = [f"-l{lib}" for lib in c["link"]]
    cudadir = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    libdirs = [f"-L{d}" for d in (os.path.join(cudadir, "lib64"),
                                  os.path.join(cudadir, "targets", "x86_64-linux", "lib"),
                                  os.path.join(cudadir, "targets", "sbsa-linux", "lib")) if os.path.isdir(d)]
    # Device link to a final (ET_EXEC) cubin. nvlink is what nvcc -dlink runs; the nvcc form is
    # the fallback (see compile_one).
    nvlink = os.path.join(os.path.dirname(nvcc), "nvlink")
    cmds.append(("link", [[nvlink, f"-arch=sm_{num}"] + libdirs + ["-o", out_path] + objs + libs,
                          [nvcc, "-dlink", "-cubin", gencode] + libdirs + ["-o", out_path] + objs + libs]))
    return cmds


def elf_type(path):
    try:
        with open(path, "rb") as f:
            h = f.read(18)
        if h[:4] != b"\x7fELF":
            return None
        return struct.unpack_from("<H", h, 16)[0]
    except OSError:
        return None


def compile_one(job):
    """job = (case id, arch, cmds, out_path, cmdfile, srcs). Returns (id, arch, ok, message);
    never raises."""
    try:
        return _compile_one(job)
    except Exception as e:
        return job[0], job[1], False, f"compile error: {e!r}"


def _compile_one(job):
    cid, arch, cmds, out_path, cmdfile, srcs = job
    cmdtext = json.dumps(cmds)
    try:
        if (os.path.exists(out_path) and os.path.exists(cmdfile) and open(cmdfile).read() == cmdtext
                and os.path.getmtime(out_path) >= max(os.path.getmtime(s) for s in srcs)
                and elf_type(out_path) == 2):
            return cid, arch, True, "cached"
    except OSError:
        pass
    log = []
    for cmd in cmds:
        if isinstance(cmd, tuple):  # alternatives for the device link
            errs = []
            for alt in cmd[1]:
                r = subprocess.run(alt, capture_output=True, text=True)
                log.append(" ".join(alt) + "\n" + r.stdout + r.stderr)
                if r.returncode == 0 and elf_type(out_path) == 2:
                    break
                errs.append(f"{os.path.basename(alt[0])}: rc={r.returncode} e_type={elf_type(out_path)} "
                            f"{(r.stdout + r.stderr).strip()[:400]}")
            else:
                return cid, arch, False, "device link failed: " + " | ".join(errs)
            continue
        r = subprocess.run(cmd, capture_output=True, text=True)
        log.append(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        if r.returncode != 0:
            return cid, arch, False, f"{' '.join(cmd)}: {(r.stdout + r.stderr).strip()}"
    if elf_type(out_path) != 2:
        return cid, arch, False, f"{out_path} is not a final (ET_EXEC) cubin (e_type {elf_type(out_path)})"
    with open(cmdfile, "w") as f:
        f.write(cmdtext)
    with open(out_path + ".log", "w") as f:
        f.write("\n".join(log))
    return cid, arch, True, "built"


def compile_all(cases, targets, nvcc, outdir, jobs):
    """{(case id, target): (ok, path or message, arch)}; targets[0] is the device's
    architecture, the others are fixture-only architectures."""
    from multiprocessing.pool import ThreadPool
    work = []
    result = {}
    for c in cases:
        for t in targets:
            arch = case_arch(c, t, targets[0])
            if arch is None:
                continue
            d = os.path.join(outdir, t)
            os.makedirs(d, exist_ok=True)
            out_path = os.path.join(d, f"{c['id']}.{arch}.cubin")
            cmds = compile_commands(c, arch, nvcc, d, out_path)
            srcs = [os.path.join(HERE, "kernels", s) for s in c["src"]]
            work.append((c["id"], t, cmds, out_path, out_path + ".cmd", srcs))
            result[(c["id"], t)] = (False, "not built", arch)
    t0 = time.time()
    with ThreadPool(max(1, jobs)) as pool:
        for cid, t, ok, msg in pool.imap_unordered(compile_one, work):
            arch = result[(cid, t)][2]
            path = os.path.join(outdir, t, f"{cid}.{arch}.cubin")
            result[(cid, t)] = (ok, path if ok else msg, arch)
    built = sum(1 for v in result.values() if v[0])
    say(f"# compiled {built}/{len(result)} cubins for {', '.join(targets)} in {time.time() - t0:.1f} s "
        f"({jobs} jobs) into {outdir}")
    return result


# =============================================================================================
# libcuda through ctypes

CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_LIMIT_STACK_SIZE = 0
CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_RESOURCE_TYPE_ARRAY = 0
CU_RESOURCE_TYPE_LINEAR = 2
CU_AD_FORMAT_FLOAT = 0x20
CUDA_ARRAY3D_SURFACE_LDST = 0x02
CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7
# errors after which the context is unusable until it is reset
CU_STICKY = {700, 701, 702, 714, 715, 716, 717, 718, 719, 720, 999}


class CudaError(Exception):
    def __init__(self, call, code, name, text):
        super().__init__(f"{call}: {name} ({code}): {text}")
        self.code = code


class _LaunchAttr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]


class _LaunchConfigEx(ctypes.Structure):
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_LaunchAttr)), ("numAttrs", ctypes.c_uint)]


class Cuda:
    def __init__(self):
        os.environ["CUDA_MODULE_LOADING"] = "EAGER"  # before cuInit: exact cuFuncGetAttribute values
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        self.call("cuInit", 0)
        d = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(d), 0)
        self.dev = d.value
        name = ctypes.create_string_buffer(256)
        self.call("cuDeviceGetName", name, 256, self.dev)
        self.name = name.value.decode()
        self.sm = (self.dev_attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                   self.dev_attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self.sm_count = self.dev_attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.optin = self.dev_attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.coop = self.dev_attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
        v = ctypes.c_int()
        self.call("cuDriverGetVersion", ctypes.byref(v))
        self.driver_version = v.value
        self.has_param_info = hasattr(self.lib, "cuFuncGetParamInfo")
        self.ctx = None
        self.retain()

    def fn(self, name):
        for n in (name + "_v2", name):
            if hasattr(self.lib, n):
                return getattr(self.lib, n)
        raise CudaError(name, -1, "symbol missing", f"libcuda has no {name}")

    def err(self, code):
        n, s = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(n))
        self.lib.cuGetErrorString(code, ctypes.byref(s))
        return (n.value or b"?").decode(), (s.value or b"?").decode()

    def call(self, name, *args):
        f = self.fn(name) if name in _V2 else getattr(self.lib, name)
        r = f(*args)
        if r != 0:
            raise CudaError(name, r, *self.err(r))

    def dev_attr(self, a):
        v = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(v), a, self.dev)
        return v.value

    def retain(self):
        ctx = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), self.dev)
        self.ctx = ctx
        self.call("cuCtxSetCurrent", ctx)

    def recover(self):
        """After an error: reset the primary context if it is broken (sticky errors)."""
        r = self.lib.cuCtxSynchronize()
        if r == 0:
            return False
        say(f"# libcuda context error {self.err(r)[0]} ({r}): resetting the primary context")
        try:
            self.fn("cuDevicePrimaryCtxRelease")(self.dev)
        except Exception:
            pass
        self.fn("cuDevicePrimaryCtxReset")(self.dev)
        self.retain()
        return True

    def func_attr(self, f, a):
        v = ctypes.c_int()
        self.call("cuFuncGetAttribute", ctypes.byref(v), a, f)
        return v.value

    def param_info(self, f):
        if not self.has_param_info:
            return None
        out = []
        for i in range(4096):
            off, size = ctypes.c_size_t(), ctypes.c_size_t()
            r = self.lib.cuFuncGetParamInfo(f, ctypes.c_size_t(i), ctypes.byref(off), ctypes.byref(size))
            if r != 0:
                break
            out.append([off.value, size.value])
        return out

    def occupancy(self, f, threads, dyn):
        n = ctypes.c_int()
        self.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", ctypes.byref(n), f,
                  ctypes.c_int(threads), ctypes.c_size_t(dyn))
        return n.value

    def alloc(self, size):
        p = ctypes.c_uint64()
        self.call("cuMemAlloc", ctypes.byref(p), ctypes.c_size_t(size))
        return p.value

    def free(self, p):
        self.fn("cuMemFree")(ctypes.c_uint64(p))

    def htod(self, dst, data):
        if data:
            self.call("cuMemcpyHtoD", ctypes.c_uint64(dst), data, ctypes.c_size_t(len(data)))

    def dtoh(self, src, size):
        b = ctypes.create_string_buffer(size)
        self.call("cuMemcpyDtoH", b, ctypes.c_uint64(src), ctypes.c_size_t(size))
        return b.raw

    def get_limit(self, which):
        v = ctypes.c_size_t()
        self.call("cuCtxGetLimit", ctypes.byref(v), which)
        return v.value

    def set_limit(self, which, value):
        self.call("cuCtxSetLimit", which, ctypes.c_size_t(value))

    def tensormap(self, addr, rows, cols, box):
        tm = (ctypes.c_ubyte * 128)()
        gdim = (ctypes.c_uint64 * 2)(cols, rows)
        gstride = (ctypes.c_uint64 * 1)(cols * 4)
        bdim = (ctypes.c_uint32 * 2)(box[0], box[1])
        estr = (ctypes.c_uint32 * 2)(1, 1)
        f = self.lib.cuTensorMapEncodeTiled
        f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p,
                      ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int]
        r = f(tm, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, ctypes.c_void_p(addr), gdim, gstride, bdim, estr,
              0, 0, 0, 0)
        if r != 0:
            raise CudaError("cuTensorMapEncodeTiled", r, *self.err(r))
        return bytes(tm)


_V2 = {"cuMemAlloc", "cuMemFree", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuModuleGetGlobal",
       "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxReset", "cuArray3DCreate", "cuMemcpyAtoH",
       "cuMemcpyHtoA", "cuArrayDestroy"}


def cuda_attributes(cu, f, c, dyn):
    """Attribute record of one kernel (fixture contents)."""
    a = {
        "sm": f"sm_{cu.sm[0]}{cu.sm[1]}",
        "num_regs": cu.func_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS),
        "shared_size_bytes": cu.func_attr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        "local_size_bytes": cu.func_attr(f, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        "max_threads_per_block": cu.func_attr(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        "const_size_bytes": cu.func_attr(f, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES),
    }
    # Opt in to the device maximum, then read the limit back.
    want = cu.optin - a["shared_size_bytes"]
    try:
        cu.call("cuFuncSetAttribute", f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, want)
    except CudaError:
        lo, hi = 0, want  # find the largest accepted value
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cu.lib.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, mid) == 0:
                lo = mid
            else:
                hi = mid - 1
        cu.lib.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, lo)
    a["max_dynamic_shared_size_bytes"] = cu.func_attr(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    a["params"] = cu.param_info(f)
    threads = c["block"][0] * c["block"][1] * c["block"][2]
    a["block_threads"] = threads
    a["dynamic_shared_bytes"] = dyn
    try:
        a["occupancy"] = cu.occupancy(f, threads, dyn)
    except CudaError as e:
        a["occupancy"] = None
        a["occupancy_error"] = str(e)
    return a


def resolve_dyn(c, static_shared, optin):
    if c["dyn"] == "max":
        return optin - static_shared
    return int(c["dyn"])


def arg_bytes_for(prep, i, addr_of):
    """Raw parameter bytes of argument i; addr_of(i) gives buffer/object handles."""
    a = prep.args[i]
    if a["kind"] in ("scalar", "blob"):
        return a["raw"]
    return addr_of(i)


def check_param_sizes(prep, params):
    """Compare the manifest's argument sizes with the kernel's parameter sizes."""
    if params is None:
        return
    if len(params) != len(prep.args):
        raise CaseFail(f"manifest: {len(prep.args)} arguments, the kernel has {len(params)} parameters")
    for i, (a, (_, size)) in enumerate(zip(prep.args, params)):
        if a["kind"] in ("scalar", "blob"):
            have = len(a["raw"])
        elif a["kind"] == "tensormap" and not a["by_pointer"]:
            have = 128
        else:
            have = 8
        if have != size:
            raise CaseFail(f"manifest: argument {i} is {have} bytes, parameter {i} is {size} bytes")


# Texture descriptions: CUarray_format / CUaddress_mode values and the tg_texture_desc fields.
TEX_FORMATS = {  # name: (CUarray_format, TG_TEXTURE_FORMAT_*, bytes)
    "u8": (0x01, 0, 1), "s8": (0x08, 1, 1), "u16": (0x02, 2, 2), "s16": (0x09, 3, 2),
    "u32": (0x03, 4, 4), "s32": (0x0a, 5, 4), "f16": (0x10, 6, 2), "f32": (0x20, 7, 4),
}
TEX_ADDRESS = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}  # CUaddress_mode = TG_ADDRESS_*
CU_RESOURCE_TYPE_PITCH2D = 3
CU_TRSF_READ_AS_INTEGER = 0x01
CU_TRSF_NORMALIZED_COORDINATES = 0x02


def tex_reads_int(a):
    """Whether the texture returns integers (CU_TRSF_READ_AS_INTEGER)."""
    return a["fmt"] in ("u32", "s32") or (a.get("read_int", False) and a["fmt"] != "f16"
                                           and a["fmt"] != "f32")


def cuda_texture_descs(ptr, a):
    """CUDA_RESOURCE_DESC and CUDA_TEXTURE_DESC for a "tex" argument over device memory ptr."""
    fmt = TEX_FORMATS[a["fmt"]][0]
    res = (ctypes.c_ubyte * 144)()
    if a.get("h"):
        struct.pack_into("<i", res, 0, CU_RESOURCE_TYPE_PITCH2D)
        struct.pack_into("<QiIQQQ", res, 8, ptr, fmt, a["ch"], a["w"], a["h"], a["pitch"])
    else:
        struct.pack_into("<i", res, 0, CU_RESOURCE_TYPE_LINEAR)
        struct.pack_into("<QiIQ", res, 8, ptr, fmt, a["ch"], a["size"])
    td = (ctypes.c_ubyte * 104)()
    addr = [TEX_ADDRESS[m] for m in a.get("addr", ("clamp", "clamp"))]
    flags = (CU_TRSF_READ_AS_INTEGER if tex_reads_int(a) else 0) | \
        (CU_TRSF_NORMALIZED_COORDINATES if a.get("ncoords") else 0)
    struct.pack_into("<iiiiI", td, 0, addr[0], addr[1], addr[1],
                     1 if a.get("filter") == "linear" else 0, flags)
    struct.pack_into("<4f", td, 40, *a.get("border", (0, 0, 0, 0)))
    return res, td


class _TgTextureDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_uint32),
                ("format", ctypes.c_uint32), ("channels", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("address_mode", ctypes.c_uint32 * 2),
                ("border_color", ctypes.c_float * 4), ("offset_bytes", ctypes.c_uint64),
                ("width", ctypes.c_uint64), ("height", ctypes.c_uint64),
                ("pitch_bytes", ctypes.c_uint64)]


def tg_texture_desc(a):
    """The tg_texture_desc for a "tex" argument (the same texture as cuda_texture_descs)."""
    d = _TgTextureDesc()
    d.struct_size = ctypes.sizeof(_TgTextureDesc)
    _, d.format, nbytes = TEX_FORMATS[a["fmt"]]
    d.channels = a["ch"]
    normf = not tex_reads_int(a) and a["fmt"] not in ("f16", "f32")
    d.flags = (1 if normf else 0) | (2 if a.get("ncoords") else 0) | \
        (4 if a.get("filter") == "linear" else 0)
    d.address_mode[:] = [TEX_ADDRESS[m] for m in a.get("addr", ("clamp", "clamp"))]
    d.border_color[:] = list(a.get("border", (0, 0, 0, 0)))
    if a.get("h"):
        d.kind, d.width, d.height, d.pitch_bytes = 2, a["w"], a["h"], a["pitch"]
    else:
        d.kind, d.width = 1, a["size"] // (nbytes * a["ch"])
    return d


def run_cuda(cu, c, cubin, prep_factory, want_attrs=True):
    """Run one case through libcuda. Returns (outputs {name: bytes}, attrs, prep)."""
    mod = ctypes.c_void_p()
    allocs, texs, surfs, arrays = [], [], [], []
    saved_stack = None
    try:
        if c["stack_limit"] and not c["stack_limit_after_load"]:
            saved_stack = cu.get_limit(CU_LIMIT_STACK_SIZE)
            cu.set_limit(CU_LIMIT_STACK_SIZE, c["stack_limit"])
        cu.call("cuModuleLoadData", ctypes.byref(mod), cubin)
        f = ctypes.c_void_p()
        cu.call("cuModuleGetFunction", ctypes.byref(f), mod, c["kernel"].encode())
        static = cu.func_attr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        dyn = resolve_dyn(c, static, cu.optin)
        attrs = cuda_attributes(cu, f, c, dyn) if want_attrs else None
        prep = prep_factory(dyn)
        check_param_sizes(prep, cu.param_info(f))
        if dyn > 0:
            cu.call("cuFuncSetAttribute", f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn)
        # globals written before the launch
        for name, data in prep.consts:
            p, n = ctypes.c_uint64(), ctypes.c_size_t()
            cu.call("cuModuleGetGlobal", ctypes.byref(p), ctypes.byref(n), mod, name.encode())
            if n.value < len(data):
                raise CaseFail(f"manifest: global {name} is {n.value} bytes, writing {len(data)}")
            cu.htod(p.value, data)
        handles = {}
        for i, a in enumerate(prep.args):
            k = a["kind"]
            if k == "buf":
                p = cu.alloc(a["size"])
                allocs.append(p)
                cu.htod(p, a["data"])
                handles[i] = p
            elif k == "tensormap":
                p = cu.alloc(a["size"])
                allocs.append(p)
                cu.htod(p, a["data"])
                tmap = cu.tensormap(p, a["rows"], a["cols"], a["box"])
                if a["by_pointer"]:
                    q = cu.alloc(len(tmap))
                    allocs.append(q)
                    cu.htod(q, tmap)
                    handles[i] = q
                else:
                    handles[i] = tmap
            elif k == "tex":
                p = cu.alloc(a["size"])
                allocs.append(p)
                cu.htod(p, a["data"])
                res, td = cuda_texture_descs(p, a)
                t = ctypes.c_uint64()
                cu.call("cuTexObjectCreate", ctypes.byref(t), res, td, None)
                texs.append(t.value)
                handles[i] = t.value
            elif k == "surf":
                desc = (ctypes.c_ubyte * 40)()
                struct.pack_into("<QQQiII", desc, 0, a["size"] // 4, 0, 0, CU_AD_FORMAT_FLOAT, 1,
                                 CUDA_ARRAY3D_SURFACE_LDST)
                arr = ctypes.c_void_p()
                cu.call("cuArray3DCreate", ctypes.byref(arr), desc)
                arrays.append(arr.value)
                cu.call("cuMemcpyHtoA", ctypes.c_void_p(arr.value), ctypes.c_size_t(0), bytes(a["size"]),
                        ctypes.c_size_t(a["size"]))
                res = (ctypes.c_ubyte * 144)()
                struct.pack_into("<i", res, 0, CU_RESOURCE_TYPE_ARRAY)
                struct.pack_into("<Q", res, 8, arr.value)
                s = ctypes.c_uint64()
                cu.call("cuSurfObjectCreate", ctypes.byref(s), res)
                surfs.append(s.value)
                handles[i] = (s.value, arr.value)

        def addr_of(i):
            h = handles[i]
            if isinstance(h, bytes):
                return h
            if isinstance(h, tuple):
                h = h[0]
            return struct.pack("<Q", h)

        raw = []
        for i in range(len(prep.args)):
            data = arg_bytes_for(prep, i, addr_of)
            raw.append(ctypes.create_string_buffer(data, len(data)))
        params = (ctypes.c_void_p * max(1, len(raw)))(*[ctypes.addressof(r) for r in raw])
        if c["stack_limit"] and c["stack_limit_after_load"]:
            saved_stack = cu.get_limit(CU_LIMIT_STACK_SIZE)
            cu.set_limit(CU_LIMIT_STACK_SIZE, c["stack_limit"])
        g, b = c["grid"], c["block"]
        if c["cluster"] and not c["cluster_compile_time"]:
            attrs_arr = (_LaunchAttr * 2)()
            n = 0
            if c["cluster"]:
                attrs_arr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
                struct.pack_into("<III", attrs_arr[n].value, 0, *c["cluster"])
                n += 1
            if c["cooperative"]:
                attrs_arr[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE
                struct.pack_into("<i", attrs_arr[n].value, 0, 1)
                n += 1
            cfg = _LaunchConfigEx(g[0], g[1], g[2], b[0], b[1], b[2], dyn, None, attrs_arr, n)
            cu.call("cuLaunchKernelEx", ctypes.byref(cfg), f, params, None)
        elif c["cooperative"]:
            cu.call("cuLaunchCooperativeKernel", f, g[0], g[1], g[2], b[0], b[1], b[2], dyn, None, params)
        else:
            cu.call("cuLaunchKernel", f, g[0], g[1], g[2], b[0], b[1], b[2], dyn, None, params, None)
        cu.call("cuCtxSynchronize")
        outs = {}
        for i, a in enumerate(prep.args):
            if a["kind"] == "buf" and a["out"]:
                outs[f"arg{i}"] = cu.dtoh(handles[i], a["size"])
            elif a["kind"] == "surf":
                hb = ctypes.create_string_buffer(a["size"])
                cu.call("cuMemcpyAtoH", hb, ctypes.c_void_p(handles[i][1]), ctypes.c_size_t(0),
                        ctypes.c_size_t(a["size"]))
                outs[f"arg{i}"] = hb.raw
        for name, nbytes in c["read_globals"]:
            p, n = ctypes.c_uint64(), ctypes.c_size_t()
            cu.call("cuModuleGetGlobal", ctypes.byref(p), ctypes.byref(n), mod, name.encode())
            outs[f"global {name}"] = cu.dtoh(p.value, min(nbytes, n.value))
        return outs, attrs, prep
    finally:
        if saved_stack is not None:
            try:
                cu.set_limit(CU_LIMIT_STACK_SIZE, saved_stack)
            except Exception:
                pass
        for t in texs:
            cu.lib.cuTexObjectDestroy(ctypes.c_uint64(t))
        for s in surfs:
            cu.lib.cuSurfObjectDestroy(ctypes.c_uint64(s))
        for a in arrays:
            try:
                cu.fn("cuArrayDestroy")(ctypes.c_void_p(a))
            except Exception:
                pass
        for p in allocs:
            cu.free(p)
        if mod.value:
            cu.lib.cuModuleUnload(mod)


# =============================================================================================
# libtegragpu

class _TgLaunchConfig(ctypes.Structure):
    """tg_launch_config with the flags and cluster fields (struct_size = sizeof)."""
    _fields_ = [("struct_size", ctypes.c_uint32), ("grid", ctypes.c_uint32 * 3),
                ("block", ctypes.c_uint32 * 3), ("dynamic_shared_bytes", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("cluster", ctypes.c_uint32 * 3)]


BASIC_CONFIG_SIZE = 32  # struct_size of the original tg_launch_config (no flags/cluster)
CMDBUF_COPY_BYTES = 4096  # the copies around a case's launch in a command buffer (--cmdbuf)


class Tg:
    def __init__(self, spec, buf_flags, wait_s, via_cmdbuf=False):
        try:
            import tegragpu
        except ImportError:
            sys.path.insert(0, os.path.join(REPO, "python"))
            import tegragpu
        self.tg = tegragpu
        self.lib = tegragpu._lib
        self.spec = spec
        self.buf_flags = buf_flags
        self.wait_ns = int(wait_s * 1e9)
        self.via_cmdbuf = via_cmdbuf
        self.sym = {}
        P = ctypes.POINTER
        for name, res, args in [
            ("tg_module_get_global", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, P(ctypes.c_uint64),
                                                    P(ctypes.c_void_p), P(ctypes.c_uint64)]),
            ("tg_device_set_limit", ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64]),
            ("tg_device_get_limit", ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, P(ctypes.c_uint64)]),
            ("tg_kernel_max_active_blocks", ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                                                           P(ctypes.c_uint32)]),
            ("tg_launch_args", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                              P(ctypes.c_void_p), ctypes.c_size_t]),
            ("tg_texture_create", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, P(ctypes.c_void_p)]),
            ("tg_texture_handle", ctypes.c_int, [ctypes.c_void_p, P(ctypes.c_uint64)]),
            ("tg_texture_destroy", ctypes.c_int, [ctypes.c_void_p]),
            ("tg_cmdbuf_launch", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_void_p, ctypes.c_size_t, P(ctypes.c_uint32)]),
        ]:
            try:
                f = self.lib[name]  # a fresh function object: the package's prototypes stay as they are
            except AttributeError:
                continue
            f.restype, f.argtypes = res, args
            self.sym[name] = f
        self.dev = self.q = self.sig = None
        self.scratch = ()
        self.seq = 0
        self.open()

    def need(self, name):
        if name not in self.sym:
            raise CaseUnsupported(f"symbol missing: {name} (not exported by {self.tg.library_path()})")
        return self.sym[name]

    def check(self, status):
        self.tg._check(status)

    def open(self):
        self.dev = self.tg.Device(self.spec)
        self.q = self.dev.create_queue()
        self.sig = self.dev.create_signal(0)
        self.seq = 0
        self.info = self.dev.info
        if self.via_cmdbuf:
            self.scratch = (self.dev.alloc(CMDBUF_COPY_BYTES, self.buf_flags),
                            self.dev.alloc(CMDBUF_COPY_BYTES, self.buf_flags))

    def reopen(self):
        for o in (*self.scratch, self.sig, self.q, self.dev):
            try:
                if o is not None:
                    o.close()
            except Exception:
                pass
        self.dev = self.q = self.sig = None
        self.scratch = ()
        self.open()

    def fault_text(self):
        try:
            f = self.dev.fault()
            if f:
                addr = f" address {f.address:#x}" if f.address is not None else ""
                return f"; fault code {f.code}{addr}: {f.message}"
        except Exception:
            pass
        return ""


def tg_status_text(e):
    st = e.status.name if hasattr(e.status, "name") else str(e.status)
    return f"{st}: {one_line(e.message, 400)}"


def tg_attributes(tg, k, c, dyn):
    a = k.attributes
    out = {
        "registers": a.registers, "static_shared_bytes": a.static_shared_bytes,
        "local_bytes_per_thread": a.local_bytes_per_thread,
        "max_threads_per_block": a.max_threads_per_block,
        "max_dynamic_shared_bytes": a.max_dynamic_shared_bytes, "num_params": a.num_params,
        "param_bytes": a.param_bytes, "params": [list(p) for p in k.params],
    }
    f = tg.sym.get("tg_kernel_max_active_blocks")
    if f is not None:
        n = ctypes.c_uint32()
        threads = c["block"][0] * c["block"][1] * c["block"][2]
        st = f(k.handle, threads, dyn, ctypes.byref(n))
        out["occupancy"] = n.value if st == 0 else f"error {st}"
    return out


def compare_attrs(ca, ta):
    """List of 'field cuda=<v> tg=<v>' strings."""
    diffs = []
    pairs = [("registers", "num_regs"), ("static_shared_bytes", "shared_size_bytes"),
             ("local_bytes_per_thread", "local_size_bytes"),
             ("max_threads_per_block", "max_threads_per_block"),
             ("max_dynamic_shared_bytes", "max_dynamic_shared_size_bytes")]
    for tk, ck in pairs:
        if ta[tk] != ca[ck]:
            diffs.append(f"{tk} cuda={ca[ck]} tg={ta[tk]}")
    cp = ca.get("params")
    if cp is not None:
        if ta["num_params"] != len(cp):
            diffs.append(f"num_params cuda={len(cp)} tg={ta['num_params']}")
        for i, (x, y) in enumerate(zip(cp, ta["params"])):
            if list(x) != list(y):
                diffs.append(f"param[{i}] (offset,size) cuda={tuple(x)} tg={tuple(y)}")
        end = max((o + s for o, s in cp), default=0)
        if ta["param_bytes"] != end:
            diffs.append(f"param_bytes cuda={end} tg={ta['param_bytes']}")
    if "occupancy" in ta and ca.get("occupancy") is not None and ta["occupancy"] != ca["occupancy"]:
        diffs.append(f"occupancy(block={ca['block_threads']},dyn={ca['dynamic_shared_bytes']}) "
                     f"cuda={ca['occupancy']} tg={ta['occupancy']}")
    return diffs


def tg_set_stack(tg, value):
    """Set TG_LIMIT_STACK_SIZE; returns the previous value (to restore)."""
    setf = tg.need("tg_device_set_limit")
    getf = tg.sym.get("tg_device_get_limit")
    prev = ctypes.c_uint64(DEFAULT_STACK)
    if getf is not None and getf(tg.dev.handle, TG_LIMIT_STACK_SIZE, ctypes.byref(prev)) != 0:
        prev = ctypes.c_uint64(DEFAULT_STACK)
    try:
        tg.check(setf(tg.dev.handle, TG_LIMIT_STACK_SIZE, value))
    except tg.tg.TegraGpuError as e:
        raise CaseFail(f"tg_device_set_limit(STACK_SIZE, {value}): {tg_status_text(e)}")
    return prev.value


def run_tg(tg, cu, c, cubin, prep, cuda_attrs):
    """Run one case through libtegragpu. Returns (outputs, attr diffs)."""
    TgErr = tg.tg.TegraGpuError
    np = __import__("numpy")
    objs = []
    saved_stack = None
    stage = "load"
    try:
        if c["stack_limit"] and not c["stack_limit_after_load"]:
            saved_stack = tg_set_stack(tg, c["stack_limit"])
        try:
            mod = tg.dev.load_module(cubin)
            objs.append(mod)
            stage = "get_kernel"
            k = mod.kernel(c["kernel"])
            objs.append(k)
        except TgErr as e:
            refused(c, f"tg_module_{'load' if stage == 'load' else 'get_kernel'}: {tg_status_text(e)}", e)
        ta = tg_attributes(tg, k, c, prep.dyn)
        diffs = compare_attrs(cuda_attrs, ta) if cuda_attrs else []
        kinds = {a["kind"] for a in prep.args}
        if "surf" in kinds:
            if diffs:
                raise CaseFail("attrs: " + "; ".join(diffs))
            raise CaseUnsupported("the harness cannot create surface objects for libtegragpu "
                                  "(the kernel loaded; attributes match)")
        for name, data in prep.consts:
            f = tg.need("tg_module_get_global")
            cpu, size = ctypes.c_void_p(), ctypes.c_uint64()
            try:
                tg.check(f(mod.handle, name.encode(), None, ctypes.byref(cpu), ctypes.byref(size)))
            except TgErr as e:
                raise CaseFail(f"tg_module_get_global({name}): {tg_status_text(e)}")
            if size.value < len(data) or not cpu.value:
                raise CaseFail(f"tg_module_get_global({name}): size {size.value}, cpu_ptr {cpu.value}")
            ctypes.memmove(cpu.value, data, len(data))
        if c["read_globals"]:
            tg.need("tg_module_get_global")
        bufs = {}
        for i, a in enumerate(prep.args):
            if a["kind"] in ("buf", "tensormap", "tex"):
                b = tg.dev.alloc(a["size"], tg.buf_flags)
                objs.append(b)
                v = b.numpy(np.uint8)
                v[:] = np.frombuffer(a["data"], dtype=np.uint8)
                del v
                bufs[i] = b
        texs = {}
        for i, a in enumerate(prep.args):
            if a["kind"] == "tex":
                create = tg.need("tg_texture_create")
                th = ctypes.c_void_p()
                desc = tg_texture_desc(a)
                try:
                    tg.check(create(ctypes.c_void_p(bufs[i].handle), ctypes.byref(desc),
                                    ctypes.byref(th)))
                except TgErr as e:
                    raise CaseFail(f"tg_texture_create: {tg_status_text(e)}")
                objs.append(_TgTexture(tg, th.value))
                value = ctypes.c_uint64()
                tg.check(tg.need("tg_texture_handle")(th, ctypes.byref(value)))
                texs[i] = value.value
        raw = []
        for i, a in enumerate(prep.args):
            if a["kind"] == "buf":
                raw.append(struct.pack("<Q", bufs[i].gpu_address))
            elif a["kind"] == "tex":
                raw.append(struct.pack("<Q", texs[i]))
            elif a["kind"] == "tensormap":
                tmap = cu.tensormap(bufs[i].gpu_address, a["rows"], a["cols"], a["box"])
                if a["by_pointer"]:
                    mb = tg.dev.alloc(len(tmap), tg.buf_flags)
                    objs.append(mb)
                    v = mb.numpy(np.uint8)
                    v[:] = np.frombuffer(tmap, dtype=np.uint8)
                    del v
                    raw.append(struct.pack("<Q", mb.gpu_address))
                else:
                    raw.append(tmap)
            else:
                raw.append(a["raw"])
        cbufs = [ctypes.create_string_buffer(r, len(r)) for r in raw]
        args = (ctypes.c_void_p * max(1, len(cbufs)))(*[ctypes.addressof(b) for b in cbufs])
        if c["stack_limit"] and c["stack_limit_after_load"]:
            saved_stack = tg_set_stack(tg, c["stack_limit"])
        cfg = _TgLaunchConfig()
        extended = bool(c["cooperative"] or c["cluster"])
        cfg.struct_size = ctypes.sizeof(_TgLaunchConfig) if extended else BASIC_CONFIG_SIZE
        cfg.grid[:] = c["grid"]
        cfg.block[:] = c["block"]
        cfg.dynamic_shared_bytes = prep.dyn
        cfg.flags = TG_LAUNCH_COOPERATIVE if c["cooperative"] else 0
        cfg.cluster[:] = c["cluster"] or (0, 0, 0)
        stage = "launch"
        if tg.via_cmdbuf:
            record_in_cmdbuf(tg, k, c, cfg, raw, objs)
        else:
            launch = tg.need("tg_launch_args")
            try:
                tg.check(launch(tg.q.handle, k.handle, ctypes.byref(cfg), args, len(prep.args)))
            except TgErr as e:
                refused(c, f"tg_launch_args: {tg_status_text(e)}", e)
        stage = "wait"
        tg.seq += 1
        try:
            tg.q.signal(tg.sig, tg.seq)
            tg.q.submit()
            tg.sig.wait(tg.seq, tg.wait_ns)
        except TgErr as e:
            raise CaseFail(f"libtegragpu {stage}: {tg_status_text(e)}{tg.fault_text()}") from TgFault()
        outs = {}
        for i, a in enumerate(prep.args):
            if a["kind"] == "buf" and a["out"]:
                v = bufs[i].numpy(np.uint8)
                outs[f"arg{i}"] = v.tobytes()
                del v
        for name, nbytes in c["read_globals"]:
            f = tg.need("tg_module_get_global")
            cpu, size = ctypes.c_void_p(), ctypes.c_uint64()
            try:
                tg.check(f(mod.handle, name.encode(), None, ctypes.byref(cpu), ctypes.byref(size)))
            except TgErr as e:
                raise CaseFail(f"tg_module_get_global({name}): {tg_status_text(e)}")
            if not cpu.value:
                raise CaseFail(f"tg_module_get_global({name}): no CPU mapping")
            outs[f"global {name}"] = ctypes.string_at(cpu.value, min(nbytes, size.value))
        return outs, diffs
    finally:
        if saved_stack is not None:
            try:
                tg.sym["tg_device_set_limit"](tg.dev.handle, TG_LIMIT_STACK_SIZE, saved_stack)
            except Exception:
                pass
        for o in reversed(objs):
            try:
                o.close()
            except Exception:
                pass


def record_in_cmdbuf(tg, k, c, cfg, raw, objs):
    """--cmdbuf: record [copy, the case's launch, copy] in a command buffer and replay it once
    on the queue (not submitted). The copies are launches of the built-in copy kernel, so the
    case's launch is both a chained successor (its constant bank prefetched by the copy before
    it) and a chained predecessor, as in a command buffer of several kernels. The launch is
    recorded with a zeroed parameter block and gets the case's parameters through
    tg_cmdbuf_set_params before the replay, so every case's parameter layout goes through the
    update path too."""
    TgErr = tg.tg.TegraGpuError
    params = bytearray(k.attributes.param_bytes)
    for i, ((off, size), r) in enumerate(zip(k.params, raw)):
        if len(r) != size:
            raise CaseFail(f"parameter {i}: {len(r)} bytes for a {size}-byte parameter")
        params[off:off + size] = r
    record = tg.need("tg_cmdbuf_launch")
    cb = tg.dev.create_cmdbuf()
    objs.append(cb)
    dst, src = tg.scratch
    cb.copy(dst, 0, src, 0, CMDBUF_COPY_BYTES)
    node = ctypes.c_uint32()
    data = bytes(params)
    zeros = bytes(len(data))
    try:
        tg.check(record(cb.handle, k.handle, ctypes.byref(cfg), zeros if zeros else None,
                        len(zeros), ctypes.byref(node)))
    except TgErr as e:
        refused(c, f"tg_cmdbuf_launch: {tg_status_text(e)}", e)
    cb.copy(src, 0, dst, 0, CMDBUF_COPY_BYTES)
    cb.finish()
    if data:
        try:
            cb.set_params(node.value, data, k)
        except TgErr as e:
            raise CaseFail(f"tg_cmdbuf_set_params: {tg_status_text(e)}")
    tg.q.replay(cb)


class _TgTexture:
    """A tg_texture handle, destroyed by close() with the case's other objects."""

    def __init__(self, tg, handle):
        self.tg, self.handle = tg, handle

    def close(self):
        if self.handle:
            self.tg.need("tg_texture_destroy")(ctypes.c_void_p(self.handle))
            self.handle = None


class TgFault(Exception):
    """Marks a libtegragpu failure after which the device is reopened."""


def refused(c, text, e):
    bad = {"DEVICE_FAULT", "TIMEOUT", "INTERNAL", "DEVICE_LOST"}
    st = e.status.name if hasattr(e.status, "name") else str(e.status)
    if c["expect_tg"] == "may_refuse" and st not in bad:
        raise CaseUnsupported(text)
    raise CaseFail(text) from (TgFault(True) if st in bad else None)


# =============================================================================================
# comparison

def first_mismatch(name, a, b, tol):
    """None when equal (or within tol), else a description."""
    if len(a) != len(b):
        return f"{name}: size cuda={len(a)} tg={len(b)}"
    if a == b:
        return None
    import numpy as np
    if tol:
        dt, rtol, atol = tol
        npdt = np.dtype(DTYPES[dt][1])
        x = np.frombuffer(a, dtype=npdt).astype(np.float64)
        y = np.frombuffer(b, dtype=npdt).astype(np.float64)
        ok = np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
        if ok.all():
            return None
        i = int(np.argmin(ok))
        return (f"{name} element {i} ({dt}, rtol={rtol}, atol={atol}): cuda={float(x[i])!r} tg={float(y[i])!r} "
                f"({int((~ok).sum())} of {len(ok)} elements outside the tolerance)")
    xa = np.frombuffer(a, dtype=np.uint8)
    xb = np.frombuffer(b, dtype=np.uint8)
    diff = np.nonzero(xa != xb)[0]
    i = int(diff[0])
    if len(a) % 4 == 0:
        w = i // 4
        ca = struct.unpack_from("<I", a, w * 4)[0]
        cb = struct.unpack_from("<I", b, w * 4)[0]
        where = f"byte {i} (32-bit word {w}): cuda=0x{ca:08x} tg=0x{cb:08x}"
    else:
        where = f"byte {i}: cuda=0x{a[i]:02x} tg=0x{b[i]:02x}"
    return f"{name} {where} ({len(diff)} of {len(a)} bytes differ)"


def compare_outputs(c, ref, got, label=("cuda", "tg")):
    for name in ref:
        if name not in got:
            return f"{name}: missing on the {label[1]} side"
        m = first_mismatch(name, ref[name], got[name], output_tolerance(c, name))
        if m:
            if label != ("cuda", "tg"):
                m = m.replace("cuda=", f"{label[0]}=").replace(" tg=", f" {label[1]}=")
            return m
    return None


# =============================================================================================
# driver

class Counts:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def summary(self):
        s = f"{self.passed} passed, {self.failed} failed"
        if self.skipped:
            s += f", {self.skipped} skipped"
        return s


class Watchdog(threading.Thread):
    def __init__(self, seconds, counts, on_exit):
        super().__init__(daemon=True)
        self.seconds = seconds
        self.counts = counts
        self.on_exit = on_exit
        self.current = None
        self.lock = threading.Lock()

    def arm(self, cid):
        with self.lock:
            self.current = (cid, time.monotonic() + self.seconds)

    def disarm(self):
        with self.lock:
            self.current = None

    def run(self):
        while True:
            time.sleep(0.5)
            with self.lock:
                cur = self.current
            if cur and time.monotonic() > cur[1]:
                say(f"FAIL {cur[0]}: still running after {self.seconds} s (watchdog); stopping the run")
                self.counts.failed += 1
                try:
                    self.on_exit()
                except Exception:
                    pass
                say(self.counts.summary())
                sys.stdout.flush()
                os._exit(3)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="See the module docstring (head -40 tests/conformance/run.py) for the output format.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", metavar="REGEX", help="run only cases whose id matches (re.search)")
    ap.add_argument("--out", default="/tmp/conformance", metavar="DIR",
                    help="work directory for cubins and logs (default /tmp/conformance)")
    ap.add_argument("--fixture", metavar="FILE", help="write libcuda's kernel attributes here (JSON)")
    ap.add_argument("--keep-cubins", metavar="DIR",
                    help="copy the cubins here as <id>.sm_XY.cubin (device SM and sm_87)")
    ap.add_argument("--no-tg", action="store_true",
                    help="libcuda only: run every case twice and compare the runs (corpus check)")
    ap.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: $NVCC, /usr/local/cuda/bin/nvcc)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel compile jobs")
    ap.add_argument("--fixture-arch", default="sm_87",
                    help="extra architecture compiled (not run) for fixtures; 'none' to skip")
    ap.add_argument("--device", default=os.environ.get("TEGRAGPU_DEVICE", "rm"),
                    help="libtegragpu device spec (default $TEGRAGPU_DEVICE or 'rm')")
    ap.add_argument("--tg-buf-flags", type=int, default=0,
                    help="flags for tg_buf_alloc (0 = pinned host memory on desktop GPUs; 8 = device local)")
    ap.add_argument("--cmdbuf", action="store_true",
                    help="launch each case through a command buffer (recorded between two copies, "
                         "replayed once) instead of directly on the queue")
    ap.add_argument("--tg-timeout", type=float, default=10.0, help="seconds to wait for a libtegragpu launch")
    ap.add_argument("--watchdog", type=float, default=60.0, help="seconds before a hung case stops the run")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)

    cases = [c for c in corpus.CASES if not args.only or re.search(args.only, c["id"])]
    if args.list:
        for c in cases:
            extra = [k for k in ("cooperative",) if c[k]]
            if c["cluster"]:
                extra.append(f"cluster={c['cluster']}")
            if c["expect_tg"] != "ok":
                extra.append(c["expect_tg"])
            say(f"{c['id']:28s} {','.join(c['src']):40s} sm>={c['min_sm']} {' '.join(extra)}")
        return 0
    if not cases:
        say("no case matches --only")
        say("0 passed, 0 failed")
        return 0

    try:
        import gen_cases
        ok, msg = gen_cases.check()
        if not ok:
            say(f"# warning: {msg}")
    except Exception as e:  # never stop the run for this
        say(f"# warning: cannot check cases.txt: {e}")

    counts = Counts()
    fixture = {}

    def write_fixture():
        if args.fixture and fixture:
            os.makedirs(os.path.dirname(os.path.abspath(args.fixture)), exist_ok=True)
            with open(args.fixture, "w") as f:
                json.dump(fixture, f, indent=1, sort_keys=True)

    try:
        cu = Cuda()
    except Exception as e:
        say(f"# libcuda unavailable: {e}")
        for c in cases:
            say(f"SKIP {c['id']}: libcuda unavailable")
            counts.skipped += 1
        say(counts.summary())
        return 0
    dev_arch = f"sm_{cu.sm[0]}{cu.sm[1]}"
    say(f"# libcuda: {cu.name}, {dev_arch}, {cu.sm_count} SMs, driver API {cu.driver_version}, "
        f"opt-in shared memory per block {cu.optin} bytes, cuFuncGetParamInfo "
        f"{'yes' if cu.has_param_info else 'no'}")

    nvcc = find_nvcc(args.nvcc)
    if not nvcc:
        say("# nvcc not found (set --nvcc or $NVCC)")
        for c in cases:
            say(f"FAIL {c['id']}: nvcc not found")
            counts.failed += 1
        say(counts.summary())
        return 1
    ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    say(f"# nvcc: {nvcc} ({ver[-1] if ver else '?'})")
    targets = [dev_arch]
    if args.fixture_arch and args.fixture_arch != "none" and args.fixture_arch != dev_arch:
        targets.append(args.fixture_arch)
    os.makedirs(args.out, exist_ok=True)
    built = compile_all(cases, targets, nvcc, args.out, args.jobs)

    if args.keep_cubins:
        os.makedirs(args.keep_cubins, exist_ok=True)
        n = 0
        for (cid, t), (ok, path, arch) in sorted(built.items()):
            if ok:
                shutil.copyfile(path, os.path.join(args.keep_cubins, f"{cid}.{arch}.cubin"))
                n += 1
        say(f"# copied {n} cubins to {args.keep_cubins}")

    tg = None
    tg_error = None
    if not args.no_tg:
        try:
            tg = Tg(args.device, args.tg_buf_flags, args.tg_timeout, args.cmdbuf)
            i = tg.info
            say(f"# libtegragpu {'.'.join(map(str, tg.tg.version()))} from {tg.tg.library_path()}: "
                f"{i.name}, sm_{i.sm_major}{i.sm_minor}, backend {i.backend.name}; optional symbols: "
                + ", ".join(f"{n} {'yes' if n in tg.sym else 'MISSING'}" for n in
                            ("tg_module_get_global", "tg_device_set_limit", "tg_device_get_limit",
                             "tg_kernel_max_active_blocks")))
            if (i.sm_major, i.sm_minor) != cu.sm:
                say(f"# warning: libtegragpu reports sm_{i.sm_major}{i.sm_minor}, libcuda {dev_arch}")
        except Exception as e:
            tg_error = f"libtegragpu unavailable: {one_line(e)}"
            say(f"# {tg_error}")

    dog = Watchdog(args.watchdog, counts, write_fixture)
    dog.start()
    for c in cases:
        cid = c["id"]
        dog.arm(cid)
        try:
            status, text = run_one(c, cu, tg, tg_error, built, dev_arch, targets, args, fixture)
        except Exception as e:  # a harness bug: report it against the case, keep going
            status, text = "FAIL", f"harness error: {one_line(traceback.format_exc(), 1500)}"
        dog.disarm()
        if status == "PASS":
            counts.passed += 1
            say(f"PASS {cid}")
        elif status == "FAIL":
            counts.failed += 1
            sep = " " if text.startswith("attrs:") else ": "
            say(f"FAIL {cid}{sep}{one_line(text, 2000)}")
        else:
            counts.skipped += 1
            say(f"{status} {cid}: {one_line(text, 1000)}")
        # tg device reopen after a fault / lost device
        if tg is not None and status == "FAIL" and getattr(run_one, "tg_broken", False):
            try:
                tg.reopen()
                say("# libtegragpu device closed and reopened after the failure")
            except Exception as e:
                tg_error = f"libtegragpu reopen failed: {one_line(e)}"
                tg = None
                say(f"# {tg_error}")
        run_one.tg_broken = False
    write_fixture()
    say(counts.summary())
    return 1 if counts.failed else 0


def run_one(c, cu, tg, tg_error, built, dev_arch, targets, args, fixture):
    """(status, text) for one case."""
    run_one.tg_broken = False
    sm = cu.sm[0] * 10 + cu.sm[1]
    # the fixture-arch build must work too
    fixture_problem = None
    for t in targets[1:]:
        ok, msg, arch = built.get((c["id"], t), (True, None, None))
        if not ok:
            fixture_problem = f"{t} build failed: {one_line(msg, 800)}"
    if c["min_sm"] > sm:
        return "UNSUPPORTED", f"needs sm_{c['min_sm']}, the device is {dev_arch}"
    ok, path, arch = built.get((c["id"], dev_arch), (False, "not built", None))
    if not ok:
        return "FAIL", f"{arch or dev_arch} build failed: {one_line(path, 1500)}"
    if fixture_problem:
        return "FAIL", fixture_problem
    if c["cooperative"] and not cu.coop:
        return "SKIP", "the device does not support cooperative launches"
    with open(path, "rb") as f:
        cubin = f.read()

    def factory(dyn):
        return Prepared(c, dyn)

    # ---- libcuda
    try:
        ref, cattrs, prep = run_cuda(cu, c, cubin, factory)
    except CaseFail as e:
        return "FAIL", str(e)
    except CudaError as e:
        broke = cu.recover()
        text = f"libcuda: {e}" + (" (context reset)" if broke else "")
        return ("FAIL" if args.no_tg else "SKIP"), text
    if cattrs is not None:
        fixture[f"{os.path.basename(path)}:{c['kernel']}"] = cattrs

    if args.no_tg:
        try:
            ref2, _, _ = run_cuda(cu, c, cubin, factory, want_attrs=False)
        except (CudaError, CaseFail) as e:
            cu.recover()
            return "FAIL", f"libcuda second run: {e}"
        m = compare_outputs(c, ref, ref2, label=("run1", "run2"))
        if m:
            return "FAIL", f"libcuda is not deterministic for this case: {m}"
        return "PASS", ""

    # ---- libtegragpu
    if tg is None:
        return "FAIL", tg_error or "libtegragpu unavailable"
    try:
        got, diffs = run_tg(tg, cu, c, cubin, prep, cattrs)
    except CaseUnsupported as e:
        return "UNSUPPORTED", str(e)
    except CaseFail as e:
        cause = e.__cause__
        if isinstance(cause, TgFault):
            run_one.tg_broken = True
        return "FAIL", str(e)
    except tg.tg.TegraGpuError as e:
        st = e.status.name if hasattr(e.status, "name") else str(e.status)
        if st in ("DEVICE_FAULT", "DEVICE_LOST", "TIMEOUT", "INTERNAL"):
            run_one.tg_broken = True
        return "FAIL", f"libtegragpu: {tg_status_text(e)}{tg.fault_text()}"
    m = compare_outputs(c, ref, got)
    if m:
        return "FAIL", m + (f"; attrs: {'; '.join(diffs)}" if diffs else "")
    if diffs:
        return "FAIL", "attrs: " + "; ".join(diffs)
    return "PASS", ""


run_one.tg_broken = False

if __name__ == "__main__":
    sys.exit(main())
