"""Shared pieces of the conformance harness (run.py): output lines, the case outcomes raised
by either side, the inputs of a case materialised from the manifest (corpus.py), and the
comparison of the two sides' outputs."""

import struct


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
