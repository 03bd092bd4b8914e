"""libcuda's side of the conformance harness (run.py): libcuda through ctypes, kernel
attributes as libcuda reports them (the fixture contents), and one case run through libcuda.
Also the texture descriptions both sides share."""

import ctypes
import os
import struct

from harness import CaseFail, say


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


# Texture descriptions: CUarray_format / CUaddress_mode values and the tg_texture_desc fields
# (tg_side.tg_texture_desc).
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
