"""The package's ctypes declarations must match include/tegragpu.h, so they cannot drift:

- every ``tg_*`` function of the header is bound on ``tegragpu.lib`` with the same argument
  count, argument types and return type (C types parsed from the header's prototypes, mapped
  to ctypes), and the package binds nothing the header lacks;
- every struct of the header has a ctypes class (``tegragpu.STRUCTS``) with the same fields in
  the same order, and the C compiler agrees on each field's offset and size and on the
  struct's size (a small C program including the header prints ``offsetof``/``sizeof``);
- the enums and ``#define`` constants equal the package's ``Status``/``QueueKind``/``Backend``
  and constants, and each ``tg_status`` has its exception class.

The checker is run on edited copies of the header too, to prove that it notices an added
field, a changed field type, a changed prototype and a new function.

The struct layout needs a C compiler (``$CC``, cc, gcc or clang); without one that test is
skipped, unless TEGRAGPU_REQUIRE_CC=1 (scripts/test-all.sh sets it), which makes it a failure.
"""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

import tegragpu as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.environ.get("TEGRAGPU_HEADER") or os.path.join(ROOT, "include", "tegragpu.h")


# --------------------------------------------------------------------------------------------
# Parsing the header

def _strip(text):
    """The header without comments and preprocessor lines, extern "C" braces removed."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    text = "\n".join(lines)
    return re.sub(r'extern\s+"C"\s*\{', " ", text)


class Header:
    """What the checks need from a header: functions, structs, enums, opaque types, defines."""

    def __init__(self, path):
        self.path = path
        with open(path) as f:
            raw = f.read()
        self.defines = {m[1]: m[2] for m in re.finditer(
            r"^#define\s+(TG_\w+)\s+(\S+)", raw, re.M)}
        text = _strip(raw)
        self.problems = []
        self.enums = {}       # name -> {enumerator: value}
        for m in re.finditer(r"typedef\s+enum\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
            values = {}
            for item in m[2].split(","):
                item = item.strip()
                if not item:
                    continue
                name, _, value = item.partition("=")
                values[name.strip()] = int(value.strip(), 0)
            self.enums[m[1]] = values
        self.structs = {}     # name -> [(field, C type, array length or None)]
        for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
            fields = []
            for decl in m[2].split(";"):
                decl = " ".join(decl.split())
                if not decl:
                    continue
                fm = re.fullmatch(r"(.+?)\s*\b(\w+)\s*(?:\[(\d+)\])?", decl)
                if fm is None:
                    self.problems.append(f"struct {m[1]}: cannot parse field {decl!r}")
                    continue
                fields.append((fm[2], fm[1], int(fm[3]) if fm[3] else None))
            self.structs[m[1]] = fields
        self.callbacks = {}   # name -> (return C type, [C type of each argument])
        for m in re.finditer(r"typedef\s+([\w\s\*]+?)\s*\(\s*\*\s*(\w+)\s*\)\s*\((.*?)\)\s*;",
                             text, re.S):
            self.callbacks[m[2]] = (m[1], self._arg_types(m[2], m[3]))
        self.opaque = set(re.findall(r"typedef\s+struct\s+(\w+)\s+\w+\s*;", text))
        body = re.sub(r"typedef\s+(?:enum|struct)\s+\w+\s*\{.*?\}\s*\w+\s*;", " ", text,
                      flags=re.S)
        body = re.sub(r"typedef\s+struct\s+\w+\s+\w+\s*;", " ", body)
        body = re.sub(r"typedef\s+[\w\s\*]+?\(\s*\*\s*\w+\s*\)\s*\(.*?\)\s*;", " ", body,
                      flags=re.S)
        self.functions = {}   # name -> (return C type, [C type of each argument])
        for chunk in body.split(";"):
            if not re.search(r"\btg_\w+\s*\(", chunk):
                continue
            decl = " ".join(chunk.replace("}", " ").split())
            fm = re.fullmatch(r"([\w\s\*]+?)\s*\b(tg_\w+)\s*\((.*)\)", decl)
            if fm is None:
                self.problems.append(f"cannot parse declaration {decl!r}")
                continue
            self.functions[fm[2]] = (fm[1], self._arg_types(fm[2], fm[3]))

    def _arg_types(self, fname, text):
        args = [" ".join(a.split()) for a in text.split(",")]
        if args == ["void"]:
            return []
        types = []
        for a in args:
            am = re.fullmatch(r"(.*?[\s\*])(\w+)", a)
            if am is None:
                self.problems.append(f"{fname}: cannot parse argument {a!r}")
                continue
            types.append(am[1])
        return types


# --------------------------------------------------------------------------------------------
# C types to ctypes

_SCALARS = {
    "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64, "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16,
    "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "size_t": ctypes.c_size_t,
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
    "bool": ctypes.c_bool, "char": ctypes.c_char, "float": ctypes.c_float,
    "double": ctypes.c_double,
}


def to_ctypes(ctype, hdr):
    """The ctypes type the package must use for a C type of the header (None: unknown)."""
    t = re.sub(r"\bconst\b", " ", ctype)
    stars = t.count("*")
    base = " ".join(t.replace("*", " ").split())
    base = re.sub(r"^(struct|enum)\s+", "", base)
    if base in hdr.opaque:                 # handles: opaque pointers
        if stars == 0:
            return None
        out, stars = ctypes.c_void_p, stars - 1
    elif base in hdr.enums:                # C enums are ints (the compiler check confirms)
        out = ctypes.c_int
    elif base in hdr.callbacks:            # function pointers: CFUNCTYPE (cached by ctypes)
        ret, args = hdr.callbacks[base]
        parts = [None if " ".join(ret.split()) == "void" else to_ctypes(ret, hdr)]
        parts += [to_ctypes(a, hdr) for a in args]
        if any(p is None for p in parts[1:]):
            return None
        out = ctypes.CFUNCTYPE(*parts)
    elif base in hdr.structs:
        out = tg.STRUCTS.get(base)
        if out is None:
            return None
    elif base == "void":
        if stars == 0:
            return None
        out, stars = ctypes.c_void_p, stars - 1
    elif base == "char" and stars >= 1:    # C strings
        out, stars = ctypes.c_char_p, stars - 1
    elif base in _SCALARS:
        out = _SCALARS[base]
    else:
        return None
    for _ in range(stars):
        out = ctypes.POINTER(out)
    return out


def _name(t):
    return getattr(t, "__name__", repr(t))


# --------------------------------------------------------------------------------------------
# The checks: each returns a list of problems (empty = the package matches the header)

def function_problems(hdr):
    problems = list(hdr.problems)
    for name, (ret, args) in sorted(hdr.functions.items()):
        if name not in tg.SIGNATURES:
            problems.append(f"{name}: in the header, not declared in tegragpu.SIGNATURES")
            continue
        f = getattr(tg.lib, name, None)
        if f is None or not hasattr(f, "argtypes"):
            problems.append(f"{name}: declared, but not exported by {tg.library_path()}")
            continue
        want_ret = to_ctypes(ret, hdr)
        if want_ret is None:
            problems.append(f"{name}: no ctypes mapping for return type {ret!r}")
        elif f.restype is not want_ret:
            problems.append(f"{name}: returns {ret} ({_name(want_ret)}), restype is "
                            f"{_name(f.restype)}")
        have = list(f.argtypes or [])
        if len(have) != len(args):
            problems.append(f"{name}: the header has {len(args)} arguments, argtypes has "
                            f"{len(have)}")
            continue
        for i, (c, py) in enumerate(zip(args, have)):
            want = to_ctypes(c, hdr)
            if want is None:
                problems.append(f"{name}: argument {i}: no ctypes mapping for {c!r}")
            elif py is not want:
                problems.append(f"{name}: argument {i} is {c.strip()} ({_name(want)}), "
                                f"argtypes has {_name(py)}")
        if tg.SIGNATURES[name] != (f.restype, have):
            problems.append(f"{name}: tegragpu.SIGNATURES differs from what lib.{name} has")
    for name in sorted(set(tg.SIGNATURES) - set(hdr.functions)):
        problems.append(f"{name}: declared in tegragpu.SIGNATURES, not in the header")
    return problems


def _py_field_type(hdr, ctype, length):
    t = to_ctypes(ctype, hdr)
    if t is None:
        return None
    return t * length if length else t


def struct_decl_problems(hdr):
    """Names and types of the fields (no compiler needed)."""
    problems = []
    for sname, fields in sorted(hdr.structs.items()):
        cls = tg.STRUCTS.get(sname)
        if cls is None:
            problems.append(f"struct {sname}: no ctypes class in tegragpu.STRUCTS")
            continue
        py = cls._fields_
        if [f[0] for f in fields] != [f[0] for f in py]:
            problems.append(f"struct {sname}: fields {[f[0] for f in fields]} in the header, "
                            f"{[f[0] for f in py]} in {cls.__name__}")
            continue
        for (fname, ctype, length), (_, pytype) in zip(fields, py):
            want = _py_field_type(hdr, ctype, length)
            same = want is pytype or (
                want is not None and hasattr(want, "_length_") and hasattr(pytype, "_length_")
                and want._length_ == pytype._length_ and want._type_ is pytype._type_)
            if not same:
                problems.append(f"struct {sname}.{fname}: {ctype}{f'[{length}]' if length else ''}"
                                f" in the header, {_name(pytype)} in {cls.__name__}")
    for sname in sorted(set(tg.STRUCTS) - set(hdr.structs)):
        problems.append(f"struct {sname}: in tegragpu.STRUCTS, not in the header")
    return problems


def compiler():
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


def compiler_layout(hdr, cc, workdir):
    """``{struct: (sizeof, {field: (offsetof, sizeof)})}`` and ``{enum: sizeof}`` as the C
    compiler lays them out."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", f'#include "{os.path.abspath(hdr.path)}"',
             "int main(void) {"]
    for sname, fields in hdr.structs.items():
        lines.append(f'  printf("S {sname} %zu\\n", sizeof({sname}));')
        for fname, _, _ in fields:
            lines.append(f'  printf("F {sname} {fname} %zu %zu\\n", offsetof({sname}, {fname}), '
                         f"sizeof((({sname} *)0)->{fname}));")
    for ename in hdr.enums:
        lines.append(f'  printf("E {ename} %zu\\n", sizeof({ename}));')
    lines += ["  return 0;", "}"]
    src = os.path.join(workdir, "layout.c")
    exe = os.path.join(workdir, "layout")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([cc, "-std=c99", "-o", exe, src], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    assert r.returncode == 0, f"{cc} failed on the layout program:\n{r.stdout}"
    out = subprocess.run([exe], stdout=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    structs, enums = {}, {}
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "S":
            structs[parts[1]] = (int(parts[2]), {})
        elif parts[0] == "F":
            structs[parts[1]][1][parts[2]] = (int(parts[3]), int(parts[4]))
        else:
            enums[parts[1]] = int(parts[2])
    return structs, enums


def layout_problems(hdr, cc, workdir):
    problems = []
    structs, enums = compiler_layout(hdr, cc, workdir)
    for sname, (size, fields) in sorted(structs.items()):
        cls = tg.STRUCTS.get(sname)
        if cls is None:
            problems.append(f"struct {sname}: no ctypes class in tegragpu.STRUCTS")
            continue
        if ctypes.sizeof(cls) != size:
            problems.append(f"struct {sname}: sizeof is {size} in C, {ctypes.sizeof(cls)} in "
                            f"{cls.__name__}")
        py_names = [f[0] for f in cls._fields_]
        if list(fields) != py_names:
            problems.append(f"struct {sname}: fields {list(fields)} in C, {py_names} in "
                            f"{cls.__name__}")
        for fname, (off, fsize) in fields.items():
            d = getattr(cls, fname, None)
            if d is None:
                continue
            if (d.offset, d.size) != (off, fsize):
                problems.append(f"struct {sname}.{fname}: offset {off} size {fsize} in C, "
                                f"offset {d.offset} size {d.size} in {cls.__name__}")
    for ename, size in sorted(enums.items()):
        if size != ctypes.sizeof(ctypes.c_int):
            problems.append(f"enum {ename}: sizeof is {size} in C; the package passes it as int")
    return problems


_ENUM_CLASSES = {"tg_status": (tg.Status, ("TG_ERROR_", "TG_")),
                 "tg_queue_kind": (tg.QueueKind, ("TG_QUEUE_",)),
                 "tg_backend": (tg.Backend, ("TG_BACKEND_",)),
                 "tg_log_level": (tg.LogLevel, ("TG_LOG_",))}
_DEFINES = {"TG_BUF_CPU_CACHED": "BUF_CPU_CACHED", "TG_BUF_WRITE_COMBINED": "BUF_WRITE_COMBINED",
            "TG_BUF_ZEROED": "BUF_ZEROED", "TG_BUF_DEVICE_LOCAL": "BUF_DEVICE_LOCAL",
            "TG_TIMEOUT_INFINITE": "TIMEOUT_INFINITE", "TG_LAUNCH_COOPERATIVE": "LAUNCH_COOPERATIVE",
            "TG_LAUNCH_CONCURRENT": "LAUNCH_CONCURRENT", "TG_LAUNCH_SUBMIT": "LAUNCH_SUBMIT",
            "TG_LIMIT_STACK_SIZE": "LIMIT_STACK_SIZE", "TG_VERSION_MAJOR": "ABI_MAJOR",
            "TG_LIMIT_MALLOC_HEAP_SIZE": "LIMIT_MALLOC_HEAP_SIZE",
            "TG_TEXTURE_LINEAR": "TEXTURE_LINEAR", "TG_TEXTURE_PITCH2D": "TEXTURE_PITCH2D",
            "TG_TEXTURE_READ_NORMALIZED_FLOAT": "TEXTURE_READ_NORMALIZED_FLOAT",
            "TG_TEXTURE_NORMALIZED_COORDS": "TEXTURE_NORMALIZED_COORDS",
            "TG_TEXTURE_LINEAR_FILTER": "TEXTURE_LINEAR_FILTER"}
for _n, _v in [("U8", 0), ("S8", 1), ("U16", 2), ("S16", 3), ("U32", 4), ("S32", 5), ("F16", 6),
               ("F32", 7)]:
    _DEFINES[f"TG_TEXTURE_FORMAT_{_n}"] = f"_TEXTURE_FORMAT_{_n}"
    setattr(tg, f"_TEXTURE_FORMAT_{_n}", tg.TEXTURE_FORMATS[_n.lower()])
_DEFINES["TG_VALUE_64"] = "_VALUE_64"
_DEFINES["TG_VALUE_NO_BARRIER"] = "_VALUE_NO_BARRIER"
setattr(tg, "_VALUE_64", tg._constants.VALUE_64)
setattr(tg, "_VALUE_NO_BARRIER", tg._constants.VALUE_NO_BARRIER)
for _n, _v in tg._constants.VALUE_CONDS.items():
    _DEFINES[f"TG_VALUE_{_n.upper()}"] = f"_VALUE_{_n.upper()}"
    setattr(tg, f"_VALUE_{_n.upper()}", _v)
for _n in ("WRAP", "CLAMP", "MIRROR", "BORDER"):
    _DEFINES[f"TG_ADDRESS_{_n}"] = f"_ADDRESS_{_n}"
    setattr(tg, f"_ADDRESS_{_n}", tg.ADDRESS_MODES[_n.lower()])
for _n, _v in tg.DEVICE_ATTRIBUTES.items():
    _DEFINES[f"TG_DEVICE_ATTR_{_n.upper()}"] = f"_DEVICE_ATTR_{_n.upper()}"
    setattr(tg, f"_DEVICE_ATTR_{_n.upper()}", _v)


def constant_problems(hdr):
    problems = []
    for ename, values in sorted(hdr.enums.items()):
        if ename not in _ENUM_CLASSES:
            problems.append(f"enum {ename}: no Python enum for it")
            continue
        cls, prefixes = _ENUM_CLASSES[ename]
        py = {}
        for cname, v in values.items():
            short = cname
            for p in prefixes:
                if short.startswith(p):
                    short = short[len(p):]
                    break
            py[short] = v
        have = {m.name: m.value for m in cls}
        if py != have:
            problems.append(f"enum {ename}: {py} in the header, {have} in tegragpu.{cls.__name__}")
    for status in tg.Status:
        if status == tg.Status.OK:
            continue
        cls = tg.error_class(status)
        if cls is tg.Error or cls.status != status or not issubclass(cls, tg.Error):
            problems.append(f"{status!r}: no exception class of its own")
    for cname, value in sorted(hdr.defines.items()):
        if cname in ("TG_VERSION_MINOR", "TG_VERSION_PATCH"):
            continue
        if cname not in _DEFINES:
            problems.append(f"#define {cname}: no Python constant for it")
            continue
        v = int(value.rstrip("uUlL"), 0)
        if getattr(tg, _DEFINES[cname]) != v:
            problems.append(f"#define {cname} {value}: tegragpu.{_DEFINES[cname]} is "
                            f"{getattr(tg, _DEFINES[cname])}")
    want_version = "{}.{}.{}".format(*(int(hdr.defines[f"TG_VERSION_{p}"])
                                       for p in ("MAJOR", "MINOR", "PATCH")))
    if tg.__version__ != want_version:
        problems.append(f"TG_VERSION_* is {want_version}, tegragpu.__version__ {tg.__version__}")
    return problems


# --------------------------------------------------------------------------------------------
# Tests

@pytest.fixture(scope="module")
def header():
    if not os.path.exists(HEADER):
        pytest.skip(f"{HEADER} not found (run the tests from the repository, or set "
                    "TEGRAGPU_HEADER)")
    return Header(HEADER)


def need_cc():
    cc = compiler()
    if cc is None:
        if os.environ.get("TEGRAGPU_REQUIRE_CC") == "1":
            pytest.fail("no C compiler ($CC, cc, gcc, clang) and TEGRAGPU_REQUIRE_CC=1")
        pytest.skip("no C compiler ($CC, cc, gcc or clang) on PATH: struct layouts are not "
                    "checked against the compiler")
    return cc


def test_header_parses(header):
    assert header.problems == []
    # Sanity: the parser saw the whole API.
    assert len(header.functions) >= 40
    assert {"tg_device_info", "tg_launch_config"} <= set(header.structs)
    assert "tg_status" in header.enums and "tg_buf" in header.opaque
    assert "tg_log_fn" in header.callbacks


def test_functions_match_header(header):
    assert function_problems(header) == []


def test_struct_declarations_match_header(header):
    assert struct_decl_problems(header) == []


def test_struct_layouts_match_compiler(header, tmp_path):
    cc = need_cc()
    assert layout_problems(header, cc, str(tmp_path)) == []


def test_enums_and_constants_match_header(header):
    assert constant_problems(header) == []


def _edited(header, tmp_path, old, new, name):
    with open(header.path) as f:
        text = f.read()
    assert old in text, f"the header no longer contains {old!r}: update this test"
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return Header(str(path))


def test_checker_notices_drift(header, tmp_path):
    # A field added to a struct.
    h = _edited(header, tmp_path,
                "    uint32_t max_dynamic_shared_bytes;\n} tg_kernel_attributes;",
                "    uint32_t max_dynamic_shared_bytes;\n    uint32_t new_field;\n"
                "} tg_kernel_attributes;", "added_field.h")
    assert any("tg_kernel_attributes" in p and "new_field" in p for p in struct_decl_problems(h))
    # A field whose type changed (same names: only types and layout differ).
    h2 = _edited(header, tmp_path, "    uint32_t va_bits;", "    uint64_t va_bits;",
                 "changed_type.h")
    assert any("tg_device_info.va_bits" in p for p in struct_decl_problems(h2))
    # A prototype that gained an argument, and one whose argument type changed.
    h3 = _edited(header, tmp_path,
                 "enum tg_status tg_signal_timestamp(const struct tg_signal *signal, uint64_t *out);",
                 "enum tg_status tg_signal_timestamp(const struct tg_signal *signal, uint64_t *out, "
                 "uint32_t flags);", "more_args.h")
    assert any(p.startswith("tg_signal_timestamp: the header has 3 arguments")
               for p in function_problems(h3))
    h4 = _edited(header, tmp_path, "uint32_t *offset,", "uint64_t *offset,", "arg_type.h")
    assert any(p.startswith("tg_kernel_get_param: argument 2") for p in function_problems(h4))
    # A new function.
    h5 = _edited(header, tmp_path, "enum tg_status tg_queue_barrier(",
                 "enum tg_status tg_queue_new_thing(const struct tg_queue *queue);\n\n"
                 "enum tg_status tg_queue_barrier(", "new_function.h")
    assert any(p.startswith("tg_queue_new_thing: in the header, not declared")
               for p in function_problems(h5))
    # A new status.
    h6 = _edited(header, tmp_path, "TG_ERROR_DEVICE_LOST = 16,",
                 "TG_ERROR_DEVICE_LOST = 16,\n    TG_ERROR_SOMETHING_NEW = 17,", "new_status.h")
    assert any(p.startswith("enum tg_status") for p in constant_problems(h6))
    # The compiler sees the added field and the changed type too.
    cc = compiler()
    if cc is None:
        need_cc()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    layout = layout_problems(h, cc, str(tmp_path / "a"))
    assert any("tg_kernel_attributes: sizeof is 36 in C, 32" in p for p in layout), layout
    layout2 = layout_problems(h2, cc, str(tmp_path / "b"))
    assert any("tg_device_info.va_bits: offset" in p for p in layout2), layout2
