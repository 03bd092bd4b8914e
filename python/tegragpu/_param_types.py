"""Kernel parameter types. A cubin records only each parameter's offset and size; the C type of a
C++ kernel's parameters is read from its Itanium-mangled name (``_Z5saxpyfPKfPfj`` =
``saxpy(float, const float*, float*, unsigned int)``) by the small demangler below, which reads
the parameter list only, or from the C declarations given as ``param_types=`` to
``Module.kernel``. Kernel.pack checks each argument against the type (see _packing.py)."""


class _DemangleError(ValueError):
    pass


class _CType:
    """A demangled type: ``spelling`` (C), ``kind`` ("builtin", "ptr", "ref", "class", "func",
    "array", "value": a template argument that is not a type) and ``code`` (the mangling code of
    a builtin type, or of the builtin a qualified type qualifies)."""

    __slots__ = ("spelling", "kind", "code")

    def __init__(self, spelling, kind, code=None):
        self.spelling, self.kind, self.code = spelling, kind, code


#: Mangling code -> (C spelling, what Kernel.pack checks, size in bytes on the GPU).
#: Checks: "int"/"uint" (range of a signed/unsigned integer), "char" (char: signed on x86-64,
#: unsigned on aarch64; -128..255 accepted), "bool", "float" (IEEE binary16/32/64 by size),
#: "bf16", "ptr" (an address); None: by size only.
_BUILTIN_TYPES = {
    "v": ("void", None, 0), "w": ("wchar_t", "int", 4), "b": ("bool", "bool", 1),
    "c": ("char", "char", 1), "a": ("signed char", "int", 1), "h": ("unsigned char", "uint", 1),
    "s": ("short", "int", 2), "t": ("unsigned short", "uint", 2), "i": ("int", "int", 4),
    "j": ("unsigned int", "uint", 4), "l": ("long", "int", 8), "m": ("unsigned long", "uint", 8),
    "x": ("long long", "int", 8), "y": ("unsigned long long", "uint", 8),
    "n": ("__int128", "int", 16), "o": ("unsigned __int128", "uint", 16),
    "f": ("float", "float", 4), "d": ("double", "float", 8), "e": ("long double", None, 0),
    "g": ("__float128", None, 0), "z": ("...", None, 0),
    "Dh": ("half", "float", 2), "DF16_": ("_Float16", "float", 2),
    "DF16b": ("std::bfloat16_t", "bf16", 2), "DF32_": ("_Float32", "float", 4),
    "DF64_": ("_Float64", "float", 8), "Di": ("char32_t", "uint", 4),
    "Ds": ("char16_t", "uint", 2), "Du": ("char8_t", "uint", 1),
    "Dn": ("decltype(nullptr)", "ptr", 8),
}
#: CUDA's scalar structs (cuda_fp16.h, cuda_bf16.h): checked as the scalar they hold.
_CLASS_SCALARS = {"__half": ("float", 2), "half": ("float", 2), "__nv_bfloat16": ("bf16", 2),
                  "nv_bfloat16": ("bf16", 2)}
_STD_SUBS = {"St": "std", "Sa": "std::allocator", "Sb": "std::basic_string",
             "Ss": "std::string", "Si": "std::istream", "So": "std::ostream",
             "Sd": "std::iostream"}


class _Demangler:
    """Reads ``_Z<name><parameter types>`` (the Itanium C++ ABI) far enough for kernel names:
    plain, namespaced and template functions; builtin, pointer, reference, cv-qualified,
    class/enum, template-parameter, function and array types; substitutions. Anything else
    (local names, operators, expressions, pack expansions, vendor qualifiers) raises
    _DemangleError."""

    def __init__(self, s):
        self.s, self.i = s, 0
        self.subs = []          # substitution candidates, in order (S_, S0_, S1_, ...)
        self.targs = None       # the function's template arguments (T_, T0_, ...)

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def fail(self, why):
        raise _DemangleError(f"{self.s!r} at {self.i}: {why}")

    def number(self):
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        if j == self.i:
            self.fail("expected a number")
        return int(self.s[j:self.i])

    def source_name(self):
        n = self.number()
        if n <= 0 or self.i + n > len(self.s):
            self.fail("bad identifier length")
        name = self.s[self.i:self.i + n]
        self.i += n
        return name

    def seq_id(self, prefix):
        """``<prefix>_`` = 0, ``<prefix><base-36 n>_`` = n + 1 (S_, S0_, ... / T_, T0_, ...)."""
        j = self.i
        while self.i < len(self.s) and self.s[self.i] != "_":
            c = self.s[self.i]
            if not (c.isdigit() or "A" <= c <= "Z"):
                self.fail(f"bad {prefix} index")
            self.i += 1
        if self.i >= len(self.s):
            self.fail(f"unterminated {prefix}")
        digits = self.s[j:self.i]
        self.i += 1
        return int(digits, 36) + 1 if digits else 0

    def substitution(self):
        """``S...``: a previous candidate or a std:: abbreviation (the caller is at 'S')."""
        two = self.peek(2)
        if two in _STD_SUBS:
            self.i += 2
            return two, _CType(_STD_SUBS[two], "class")
        self.i += 1
        k = self.seq_id("S")
        if k >= len(self.subs):
            self.fail(f"substitution S{k} beyond the {len(self.subs)} candidates")
        return None, self.subs[k]

    def unqualified(self):
        c = self.peek()
        if c.isdigit():
            return self.source_name()
        self.fail("only plain identifiers are read (no operators, constructors, lambdas)")

    def template_args(self):
        self.i += 1  # 'I'
        args = []
        while self.peek() != "E":
            c = self.peek()
            if not c:
                self.fail("unterminated template arguments")
            if c == "L":
                self.i += 1
                if self.peek(2) == "_Z":
                    self.fail("template argument names an entity")
                t = self.type()
                j = self.i
                while self.i < len(self.s) and self.s[self.i] != "E":
                    self.i += 1
                if self.i >= len(self.s):
                    self.fail("unterminated literal")
                v = self.s[j:self.i]
                self.i += 1
                if t.code == "b" and v in ("0", "1"):
                    v = ("false", "true")[int(v)]
                elif v.startswith("n"):
                    v = "-" + v[1:]
                args.append(_CType(v, "value"))
            elif c == "J":
                self.fail("template argument packs are not read")
            elif c == "X":
                self.fail("template argument expressions are not read")
            else:
                args.append(self.type())
        self.i += 1
        return args

    @staticmethod
    def with_args(name, args):
        inner = ", ".join(a.spelling for a in args)
        return f"{name}<{inner}{' ' if inner.endswith('>') else ''}>"

    def name(self, function):
        """A name; returns (spelling, template arguments or None). ``function``: the kernel's
        own name, which is no substitution candidate (its template prefix is)."""
        c = self.peek()
        if c == "N":
            return self.nested(function)
        if c == "Z":
            self.fail("local names are not read")
        if c == "S":
            abbrev, t = self.substitution()
            name = t.spelling
            if abbrev == "St":
                name = "std::" + self.unqualified()
                if self.peek() == "I" or not function:
                    self.subs.append(_CType(name, "class"))
            elif function and self.peek() != "I":
                self.fail("a substitution as a function name")
            # else: a substitution or abbreviation is no new candidate
        else:
            name = self.unqualified()
            if self.peek() == "I" or not function:
                self.subs.append(_CType(name, "class"))
        if self.peek() == "I":
            args = self.template_args()
            name = self.with_args(name, args)
            if not function:
                self.subs.append(_CType(name, "class"))
            return name, args
        return name, None

    def nested(self, function):
        self.i += 1  # 'N'
        while self.peek() in ("r", "V", "K", "R", "O"):
            if self.peek() in ("R", "O"):
                self.fail("member function ref-qualifiers are not read")
            self.i += 1
        cur, args = "", None
        while self.peek() != "E":
            c = self.peek()
            if not c:
                self.fail("unterminated nested name")
            if c == "S":
                if cur:
                    self.fail("a substitution inside a nested name")
                _, t = self.substitution()
                cur = t.spelling
                args = None
                continue  # a substitution is no new candidate
            if c == "I":
                if not cur:
                    self.fail("template arguments without a name")
                args = self.template_args()
                cur = self.with_args(cur, args)
            else:
                part = self.unqualified()
                cur = f"{cur}::{part}" if cur else part
                args = None
            if not (function and self.peek() == "E"):
                self.subs.append(_CType(cur, "class"))
        self.i += 1
        return cur, args

    def type(self):
        s, c = self.s, self.peek()
        if not c:
            self.fail("expected a type")
        if c in "rVK":
            quals = []
            while self.peek() in ("r", "V", "K"):
                quals.append({"r": "__restrict__", "V": "volatile", "K": "const"}[self.peek()])
                self.i += 1
            inner = self.type()
            q = " ".join(reversed(quals))  # mangled r V K; written const volatile __restrict__
            if inner.kind in ("ptr", "ref"):
                sp = f"{inner.spelling} {q}"
            else:
                sp = f"{q} {inner.spelling}"
            t = _CType(sp, inner.kind, inner.code)
        elif c in "PRO":
            self.i += 1
            inner = self.type()
            mark = {"P": "*", "R": "&", "O": "&&"}[c]
            kind = "ptr" if c == "P" else "ref"
            if inner.kind == "func":
                ret, params = inner.code
                t = _CType(f"{ret} ({mark})({params})", kind)
            elif inner.kind == "array":
                elem, dim = inner.code
                t = _CType(f"{elem} ({mark})[{dim}]", kind)
            else:
                t = _CType(inner.spelling + mark, kind)
        elif c == "F":
            self.i += 1
            if self.peek() == "Y":
                self.i += 1
            ret = self.type()
            params = []
            while self.peek() not in ("E", ""):
                if self.peek() in ("R", "O") and self.s[self.i + 1:self.i + 2] == "E":
                    self.i += 1
                    continue
                params.append(self.type())
            if self.peek() != "E":
                self.fail("unterminated function type")
            self.i += 1
            if len(params) == 1 and params[0].code == "v":
                params = []
            ps = ", ".join(p.spelling for p in params)
            t = _CType(f"{ret.spelling} ({ps})", "func", (ret.spelling, ps))
        elif c == "A":
            self.i += 1
            dim = str(self.number()) if self.peek().isdigit() else ""
            if self.peek() != "_":
                self.fail("array dimension expressions are not read")
            self.i += 1
            elem = self.type()
            t = _CType(f"{elem.spelling}[{dim}]", "array", (elem.spelling, dim))
        elif c == "T":
            self.i += 1
            k = self.seq_id("T")
            if self.targs is None or k >= len(self.targs):
                self.fail(f"template parameter T{k} unknown")
            t = self.targs[k]
            if self.peek() == "I":
                self.subs.append(t)
                t = _CType(self.with_args(t.spelling, self.template_args()), "class")
        elif c == "S" and s[self.i:self.i + 2] not in _STD_SUBS:
            _, t = self.substitution()
            if self.peek() == "I":
                t = _CType(self.with_args(t.spelling, self.template_args()), "class")
            else:
                return t  # a substitution is no new candidate
        elif c in "NS" or c.isdigit():
            name, _ = self.name(function=False)
            return _CType(name, "class")  # name() recorded the candidates
        elif c == "D":
            for code in ("DF16_", "DF16b", "DF32_", "DF64_", "Dh", "Di", "Ds", "Du", "Dn"):
                if s.startswith(code, self.i):
                    self.i += len(code)
                    return _CType(_BUILTIN_TYPES[code][0], "builtin", code)
            self.fail("this D type (pack expansion, decltype, vector) is not read")
        elif c == "u":
            self.i += 1
            t = _CType(self.source_name(), "class")
        elif c in _BUILTIN_TYPES:
            self.i += 1
            return _CType(_BUILTIN_TYPES[c][0], "builtin", c)  # builtins are no candidates
        else:
            self.fail(f"type code {c!r} is not read")
        self.subs.append(t)
        return t

    def parse(self):
        """(function name, [_CType of each parameter])."""
        if not self.s.startswith("_Z"):
            self.fail("not a mangled name")
        self.i = 2
        name, targs = self.name(function=True)
        if targs is not None:
            self.targs = targs
            self.type()  # a template function's name is followed by its return type
        params = []
        while self.i < len(self.s) and self.s[self.i] != ".":  # ".part.0" etc.: clone suffixes
            params.append(self.type())
        if not params:
            self.fail("no parameter list")
        if len(params) == 1 and params[0].code == "v":
            params = []
        elif any(p.code == "v" and p.kind == "builtin" for p in params):
            self.fail("void among parameters")
        return name, params


def _demangle(name):
    """``(function name, [C type of each parameter])`` for an Itanium-mangled name, or None for
    a name that is not mangled or that the demangler does not read."""
    try:
        fname, params = _Demangler(name).parse()
    except (_DemangleError, IndexError, ValueError, RecursionError):
        return None
    return fname, [p.spelling for p in params]


def _check_of(t, size):
    """What Kernel.pack checks (see _BUILTIN_TYPES) for a parameter of ``size`` bytes of type
    ``t`` (a _CType, or None: unknown); None: by size only."""
    if t is None:
        return None
    if t.kind in ("ptr", "ref"):
        return "ptr" if size == 8 else None
    if t.kind == "builtin":
        _, check_, tsize = _BUILTIN_TYPES[t.code]
    elif t.kind == "class" and t.spelling in _CLASS_SCALARS:
        check_, tsize = _CLASS_SCALARS[t.spelling]
    else:
        return None
    return check_ if tsize == size else None  # the cubin disagrees with the type: size only


# param_types= of Module.kernel: C declarations ("const float* x", "unsigned n") -> _CType, name
_C_QUALIFIERS = ("const", "volatile", "restrict", "__restrict__", "__restrict")
_C_TYPEDEFS = {
    "int8_t": "a", "uint8_t": "h", "int16_t": "s", "uint16_t": "t", "int32_t": "i",
    "uint32_t": "j", "int64_t": "l", "uint64_t": "m", "size_t": "m", "ssize_t": "l",
    "ptrdiff_t": "l", "intptr_t": "l", "uintptr_t": "m", "_Bool": "b", "bool": "b",
    "float": "f", "double": "d", "_Float16": "DF16_", "char16_t": "Ds", "char32_t": "Di",
    "char8_t": "Du", "wchar_t": "w", "void": "v",
}
_C_INT_WORDS = {"signed", "unsigned", "char", "short", "int", "long"}


def _c_int_code(words):
    if not words or not set(words) <= _C_INT_WORDS or words.count("long") > 2 or \
            len(set(words)) != len(words) - max(words.count("long") - 1, 0) or \
            ("signed" in words and "unsigned" in words):
        return None
    u, longs = "unsigned" in words, words.count("long")
    if "char" in words:
        return None if set(words) - {"char", "signed", "unsigned"} else \
            ("h" if u else "a" if "signed" in words else "c")
    if "short" in words:
        return None if longs else ("t" if u else "s")
    if longs:
        return ("m" if u else "l") if longs == 1 else ("y" if u else "x")
    return "j" if u else "i"


def _parse_c_decl(decl):
    """A C parameter declaration ("const float* x", "unsigned n", "Dims d") -> (_CType, name or
    None). Unknown type names are kept as a class type (checked by size only)."""
    import re
    toks = [m.group(1).replace(" ", "") for m in
            re.finditer(r"\s*([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|\*|&&|&|\S)", decl)]
    if not toks or any(not (t[0].isalpha() or t[0] == "_" or t in ("*", "&", "&&"))
                       for t in toks):
        raise ValueError(f"cannot read the C declaration {decl!r}")
    name = None
    last = toks[-1]
    if last not in ("*", "&", "&&") and last not in _C_QUALIFIERS and last not in _C_TYPEDEFS \
            and last not in _C_INT_WORDS and len([t for t in toks if t not in _C_QUALIFIERS]) > 1:
        name = last
        toks = toks[:-1]
    marks = [j for j, t in enumerate(toks) if t in ("*", "&", "&&")]
    base_end = marks[0] if marks else len(toks)
    quals = [t for t in toks[:base_end] if t in _C_QUALIFIERS]
    words = [t for t in toks[:base_end] if t not in _C_QUALIFIERS]
    if not words:
        raise ValueError(f"no type in the C declaration {decl!r}")
    if words == ["long", "double"]:
        code = "e"
    elif len(words) > 1 or words[0] in _C_INT_WORDS:
        code = _c_int_code(words)
        if code is None:
            raise ValueError(f"cannot read the C type in {decl!r}")
    else:
        code = _C_TYPEDEFS.get(words[0])
    # int words are spelled as the demangler spells them; typedef and class names as written
    base = _BUILTIN_TYPES[code][0] if code and set(words) <= _C_INT_WORDS | {"double"} \
        else " ".join(words)
    spelling = " ".join([q for q in ("const", "volatile") if q in quals] + [base])
    if code is not None and not marks:
        t = _CType(spelling, "builtin", code)
    elif code is None and not marks:
        t = _CType(spelling, "class")
    else:
        for t_ in toks[base_end:]:
            if t_ in ("*", "&", "&&"):
                spelling += t_
            elif t_ in ("const", "volatile"):
                spelling += " " + t_
        t = _CType(spelling, "ref" if toks[marks[-1]] != "*" else "ptr")
    return t, name
