"""libtegragpu's side of the conformance harness (run.py): the library through its Python
package (and ctypes for the calls the package does not wrap), its kernel attributes compared
with libcuda's, and one case run directly on a queue or through a command buffer (--cmdbuf)."""

import ctypes
import os
import struct
import sys

from cuda_side import TEX_ADDRESS, TEX_FORMATS, tex_reads_int
from harness import CaseFail, CaseUnsupported, one_line

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

DEFAULT_STACK = 1024
TG_LIMIT_STACK_SIZE = 0
TG_LAUNCH_COOPERATIVE = 1


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
