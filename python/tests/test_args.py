"""Kernel arguments are checked against the kernel's parameter types (Kernel.pack).

The types come from a C++ kernel's mangled name (the demangler is tested on a table of names)
or from the declarations given to Module.kernel(name, param_types=...); extern "C" kernels are
checked by size. Refusals raise tegragpu.InvalidArgument naming the kernel, the parameter, its
C type and the value. Accepted arguments are launched on the emulated Orin (unless
TEGRAGPU_DEVICE says otherwise) and the kernel's view of them is read back: the C++ kernels
launched there are the fixture kernels of tests/fixtures/kernels.cu compiled without
``extern "C"`` (same code, so the emulator's reference kernels run them; mangled names). The
other C++ kernels here (echo, fill<T>, take) run only on a GPU; on the emulated Orin their
packed parameter blocks are checked byte by byte instead.
"""
import os
import struct

import numpy as np
import pytest

import tegragpu as tg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.environ.get("TEGRAGPU_DEVICE") or "emu"
TIMEOUT_NS = 30_000_000_000
M64 = (1 << 64) - 1

# The fixture kernels with C++ linkage: their mangled names carry the parameter types.
SAXPY = "_Z5saxpyfPKfPfj"                     # saxpy(float, const float*, float*, unsigned)
MIXED = "_Z12mixed_paramsasixPj5Mixedd"       # (signed char, short, int, long long, unsigned*,
#                                               Mixed, double)
FILL_U32 = "_Z8fill_u32Pjjj"
INCREMENT = "_Z9incrementPyy"                 # increment(unsigned long long*, unsigned long long)
VECTOR_ADD = "_Z10vector_addPKfS0_Pfj"        # S0_: the second const float*

# More C++ kernels (GPU only). echo writes each scalar argument to out[] as a 64-bit value
# (signed ones sign-extended, float and double as their bits).
EXTRA_SOURCE = r"""
namespace ns { struct Pair { int a; float b; }; }
__global__ void echo(bool b, signed char sc, unsigned char uc, short s, unsigned short us, int i,
                     unsigned u, long long ll, unsigned long long ull, float f, double d,
                     unsigned long long* out) {
    out[0] = b; out[1] = (unsigned long long)(long long)sc; out[2] = uc;
    out[3] = (unsigned long long)(long long)s; out[4] = us;
    out[5] = (unsigned long long)(long long)i; out[6] = u; out[7] = (unsigned long long)ll;
    out[8] = ull; out[9] = __float_as_uint(f);
    out[10] = (unsigned long long)__double_as_longlong(d);
}
template <class T> __global__ void fill(T* p, T v, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}
template __global__ void fill<float>(float*, float, unsigned);
template __global__ void fill<int>(int*, int, unsigned);
__global__ void take(const unsigned* src, unsigned* dst, ns::Pair pr) {
    dst[0] = src ? *src : 0xdeadu; dst[1] = (unsigned)pr.a; dst[2] = __float_as_uint(pr.b);
}
"""
ECHO = "_Z4echobahstijxyfdPy"
FILL_F = "_Z4fillIfEvPT_S0_j"   # fill<float>(float*, float, unsigned int): T_ and S0_
FILL_I = "_Z4fillIiEvPT_S0_j"
TAKE = "_Z4takePKjPjN2ns4PairE"
ECHO_TYPES = ["bool", "signed char", "unsigned char", "short", "unsigned short", "int",
              "unsigned int", "long long", "unsigned long long", "float", "double",
              "unsigned long long*"]


@pytest.fixture(scope="module")
def dev():
    with tg.Device(SPEC) as d:
        yield d


def compile_or_skip(dev, source):
    try:
        return dev.compile_cuda(source, ["--std=c++17"])
    except tg.LibraryMissingError as e:
        if os.environ.get("TEGRAGPU_REQUIRE_NVRTC") == "1":
            raise
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def cxx(dev):
    """tests/fixtures/kernels.cu with C++ linkage."""
    with open(os.path.join(ROOT, "tests", "fixtures", "kernels.cu")) as f:
        source = f.read()
    assert 'extern "C" __global__ void saxpy' in source
    return compile_or_skip(dev, source.replace('extern "C" __global__', "__global__"))


@pytest.fixture(scope="module")
def extra(dev):
    return compile_or_skip(dev, EXTRA_SOURCE)


@pytest.fixture(scope="module")
def fixtures(dev):
    """The prebuilt fixture cubin (extern "C" kernels)."""
    i = dev.info
    p = os.path.join(ROOT, "tests", "fixtures", "cubin",
                     f"kernels.sm_{i.sm_major}{i.sm_minor}.cubin")
    if not os.path.exists(p):
        pytest.skip(f"no fixture cubin for sm_{i.sm_major}{i.sm_minor}")
    return dev.load_module_file(p)


def run(dev, kernel, args, grid=1, block=1):
    with dev.create_queue() as q:
        q.launch(kernel, grid, block, args)
        q.submit()
        q.synchronize(TIMEOUT_NS)


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def refusal(kernel, args):
    """The message of the InvalidArgument that packing (and launching) ``args`` raises."""
    with pytest.raises(tg.InvalidArgument) as e:
        kernel.pack(args)
    assert type(e.value) is tg.InvalidArgument  # not a bare OverflowError / struct.error
    return str(e.value)


# ---- the demangler ----------------------------------------------------------------------------

# (mangled name, function, parameter types): names from g++ and nvrtc (same ABI), checked
# against c++filt.
DEMANGLED = [
    (SAXPY, "saxpy", ["float", "const float*", "float*", "unsigned int"]),
    (MIXED, "mixed_params",
     ["signed char", "short", "int", "long long", "unsigned int*", "Mixed", "double"]),
    ("_Z4allbbcahstijlmxyfd", "allb",
     ["bool", "char", "signed char", "unsigned char", "short", "unsigned short", "int",
      "unsigned int", "long", "unsigned long", "long long", "unsigned long long", "float",
      "double"]),
    ("_Z3novv", "nov", []),
    # substitutions: S_ = float*; S_ = const float, S0_ = const float*
    ("_Z3addPfS_S_", "add", ["float*", "float*", "float*"]),
    (VECTOR_ADD, "vector_add", ["const float*", "const float*", "float*", "unsigned int"]),
    ("_Z2rsPfPKfS1_", "rs", ["float*", "const float*", "const float*"]),
    # cv-qualifiers: VKi is one candidate (S_), PVKi the next (S0_)
    ("_Z2cvPVKiPKiPViS0_", "cv",
     ["const volatile int*", "const int*", "volatile int*", "const volatile int*"]),
    ("_Z2ppPPfS0_PKPKfS4_", "pp",
     ["float**", "float**", "const float* const*", "const float* const*"]),
    # classes, namespaces, templates of classes
    ("_Z2st4DimsPS_PKS_S_", "st", ["Dims", "Dims*", "const Dims*", "Dims"]),
    ("_Z3nsfPN2ns3VecES0_NS_4ModeEPNS_3BoxIfEES4_", "nsf",
     ["ns::Vec*", "ns::Vec", "ns::Mode", "ns::Box<float>*", "ns::Box<float>"]),
    ("_Z2st4DimsPS_PKS_N2ns4ModeENS3_3BoxIfEEPS6_", "st",
     ["Dims", "Dims*", "const Dims*", "ns::Mode", "ns::Box<float>", "ns::Box<float>*"]),
    ("_ZN1k5innerEPiS0_PVKj", "k::inner", ["int*", "int*", "const volatile unsigned int*"]),
    (TAKE, "take", ["const unsigned int*", "unsigned int*", "ns::Pair"]),
    # template functions: return type first, T_ = the first template argument
    ("_Z2tkIfEvPT_iS0_", "tk<float>", ["float*", "int", "float"]),
    ("_Z3tk2IdLi4EEvPT_PKS0_j", "tk2<double, 4>", ["double*", "const double*", "unsigned int"]),
    ("_ZN2ns1kIfEEvPT_", "ns::k<float>", ["float*"]),
    (FILL_F, "fill<float>", ["float*", "float", "unsigned int"]),
    # references, half types, function and array pointers, std abbreviations, clone suffix
    ("_Z4refsRiRKfOf", "refs", ["int&", "const float&", "float&&"]),
    ("_Z2hfDF16_PDF16_PKDF16_", "hf", ["_Float16", "_Float16*", "const _Float16*"]),
    # builtin types are no candidates: S_ = _Float16*, S0_ = char16_t*; S_ = unsigned long long*
    ("_Z1fPDF16_S_PDsS0_", "f", ["_Float16*", "_Float16*", "char16_t*", "char16_t*"]),
    ("_Z1gPyS_bPbS0_", "g",
     ["unsigned long long*", "unsigned long long*", "bool", "bool*", "bool*"]),
    ("_Z1hDhPDh", "h", ["half", "half*"]),
    ("_Z2fpPFviEi", "fp", ["void (*)(int)", "int"]),
    ("_Z3arrPA4_i", "arr", ["int (*)[4]"]),
    ("_Z1fSt6vectorIiSaIiEE", "f", ["std::vector<int, std::allocator<int> >"]),
    ("_Z1fPKfS0_.part.0", "f", ["const float*", "const float*"]),
    ("_Z3wchwDsDinoe", "wch",
     ["wchar_t", "char16_t", "char32_t", "__int128", "unsigned __int128", "long double"]),
]


@pytest.mark.parametrize("mangled,function,types", DEMANGLED, ids=[d[0] for d in DEMANGLED])
def test_demangler_reads_parameter_lists(mangled, function, types):
    assert tg._demangle(mangled) == (function, types)


@pytest.mark.parametrize("name", [
    "vector_add",           # extern "C"
    "_Z",                   # truncated
    "_Z3foo",               # no parameter list
    "_Z3fooPZ3barvE1S",     # local class
    "_Z1fDpT_",             # pack expansion
    "_Z1fS_",               # substitution with no candidate
    "_Z3fooPi3",            # identifier length beyond the end
    "_Z3fooXv",             # unknown type code
    "_Z1fvi",               # void among parameters
    "_ZN1AC1Ev",            # constructor
])
def test_demangler_gives_up_without_failing(name):
    assert tg._demangle(name) is None


def test_cxx_kernels_have_types_and_extern_c_kernels_none(cxx, fixtures):
    assert cxx.kernel(SAXPY).param_types == ["float", "const float*", "float*", "unsigned int"]
    assert cxx.kernel(INCREMENT).param_types == ["unsigned long long*", "unsigned long long"]
    assert fixtures.kernel("saxpy").param_types == [None] * 4
    assert "C type" in tg.Kernel.param_types.__doc__


# ---- refusals ---------------------------------------------------------------------------------

SAXPY_OK = (2.0, None, None, 8)
MIXED_OK = (-5, -300, -7, -2**40, None, bytes(16), 7.0)

NOT_INT = "is not an integer"
NEGATIVE = "is negative; the parameter is unsigned (0..4294967295)"
U32_RANGE = "is out of range (0..4294967295)"
OVERFLOW = "overflows (not finite in this floating-point type)"

# The refusals the issue names, on kernels that then run: (id, kernel, parameter index, C type,
# value, text of the value in the message, reason)
REQUIRED_REFUSALS = [
    ("float-for-unsigned", SAXPY, 3, "unsigned int", 3.5, "float 3.5", NOT_INT),
    ("negative-for-unsigned", SAXPY, 3, "unsigned int", -1, "int -1", NEGATIVE),
    ("2**40-for-unsigned", SAXPY, 3, "unsigned int", 2**40, f"int {2**40}", U32_RANGE),
    ("2**40-for-int", MIXED, 2, "int", 2**40, f"int {2**40}",
     "is out of range (-2147483648..2147483647)"),
    ("np.float32-for-unsigned", SAXPY, 3, "unsigned int", np.float32(3.5), "numpy.float32 3.5",
     NOT_INT),
    ("float-overflow-for-float", SAXPY, 0, "float", 1e39, "float 1e+39", OVERFLOW),
    # halfway between the largest float and 2**128 rounds (to even) to infinity
    ("float-tie-overflow-for-float", SAXPY, 0, "float", 3.4028235677973366e38,
     "float 3.4028235677973366e+38", OVERFLOW),
    ("np.int32(-1)-for-unsigned", SAXPY, 3, "unsigned int", np.int32(-1), "numpy.int32 -1",
     NEGATIVE),
    ("np.int64-for-unsigned", SAXPY, 3, "unsigned int", np.int64(8), "numpy.int64 8",
     "is a numpy integer of 8 bytes; the parameter has 4"),
    ("float-for-signed-char", MIXED, 0, "signed char", 1.0, "float 1.0", NOT_INT),
    ("128-for-signed-char", MIXED, 0, "signed char", 128, "int 128", "is out of range (-128..127)"),
    ("2**15-for-short", MIXED, 1, "short", 2**15, "int 32768", "is out of range (-32768..32767)"),
    ("2**63-for-long-long", MIXED, 3, "long long", 2**63, f"int {2**63}", "is out of range"),
    ("float-for-pointer", MIXED, 4, "unsigned int*", 4096.0, "float 4096.0",
     "is not a Buffer, BufferView, address (int >= 0) or None"),
    ("int-overflow-for-double", MIXED, 6, "double", 10**400, "int 100000", OVERFLOW),
]


@pytest.mark.parametrize("name,index,ctype,value,text,reason",
                         [r[1:] for r in REQUIRED_REFUSALS], ids=[r[0] for r in REQUIRED_REFUSALS])
def test_refusals_name_kernel_parameter_type_and_value(cxx, dev, name, index, ctype, value,
                                                       text, reason):
    k = cxx.kernel(name)
    function = tg._demangle(name)[0]
    with dev.alloc(4096, tg.BUF_ZEROED) as buf:
        good = list(SAXPY_OK if name == SAXPY else MIXED_OK)
        good = [buf if a is None else a for a in good]
        bad = list(good)
        bad[index] = value
        msg = refusal(k, bad)
        assert msg.startswith(f"{name} ({function}): parameter {index} ({ctype}): {text}"), msg
        assert reason in msg
        # Queue.launch refuses the same way and records nothing; the good arguments then run
        with dev.create_queue() as q:
            with pytest.raises(tg.InvalidArgument, match=f"parameter {index} "):
                q.launch(k, 1, 32, bad)
            q.launch(k, 1, 32, good)
            q.submit()
            q.synchronize(TIMEOUT_NS)
        if name == MIXED:
            assert buf.numpy(np.uint32)[2] == (-7) & 0xffffffff


ECHO_OK = (True, -5, 200, -300, 60000, -2**31, 2**32 - 1, -2**63, 2**64 - 1, 1.5, -2.25)

# (id, parameter index, value, text of the value in the message)
ECHO_REFUSALS = [
    ("np.float64-overflow-for-float", 9, np.float64(1e300), "numpy.float64 1e+300"),
    ("np.uint8-for-unsigned", 6, np.uint8(1), "numpy.uint8 1"),
    ("float-for-long-long", 7, 1.0, "float 1.0"),
    ("2**64-for-unsigned-long-long", 8, 2**64, f"int {2**64}"),
    ("-1-for-unsigned-long-long", 8, -1, "int -1"),
    ("256-for-unsigned-char", 2, 256, "int 256"),
    ("-129-for-signed-char", 1, -129, "int -129"),
    ("-1-for-unsigned-short", 4, -1, "int -1"),
    ("2-for-bool", 0, 2, "int 2"),
    ("float-for-bool", 0, 1.0, "float 1.0"),
    ("np.float32-for-bool", 0, np.float32(1), "numpy.float32 1.0"),
    ("string-for-int", 5, "7", "str '7'"),
    ("bool-for-float", 9, True, "bool True"),
    ("complex-for-double", 10, np.complex64(1), "numpy.complex64"),
    ("negative-address", 11, -8, "int -8"),
    ("2**64-address", 11, 2**64, f"int {2**64}"),
    ("bytes-of-wrong-size", 6, b"abc", "bytes b'abc'"),
]


@pytest.mark.parametrize("index,value,text", [r[1:] for r in ECHO_REFUSALS],
                         ids=[r[0] for r in ECHO_REFUSALS])
def test_more_refusals(extra, dev, index, value, text):
    k = extra.kernel(ECHO)
    assert k.param_types == ECHO_TYPES
    with dev.alloc(8 * 11) as out:
        args = list(ECHO_OK) + [out]
        k.pack(args)  # the good arguments pack
        args[index] = value
        msg = refusal(k, args)
        assert msg.startswith(f"{ECHO} (echo): parameter {index} ({ECHO_TYPES[index]}): {text}")


@pytest.mark.parametrize("name,index,value,ctype,text", [
    (FILL_F, 1, 1e39, "float", "float 1e+39"),
    (FILL_F, 1, float(2**128), "float", "float 3.402823669209385e+38"),
    (FILL_I, 1, 2.5, "int", "float 2.5"),
    (FILL_I, 1, np.float32(2), "int", "numpy.float32 2.0"),
    (FILL_F, 2, -1, "unsigned int", "int -1"),
    (TAKE, 0, 1.0, "const unsigned int*", "float 1.0"),
    (TAKE, 0, True, "const unsigned int*", "bool True"),
    (TAKE, 2, b"\0" * 4, "ns::Pair",
     "bytes b'\\x00\\x00\\x00\\x00' has 4 bytes; the parameter has 8"),
])
def test_template_and_struct_kernels_refuse(extra, dev, name, index, value, ctype, text):
    k = extra.kernel(name)
    with dev.alloc(64) as buf:
        args = [buf, 0, 1] if name != TAKE else [buf, buf, bytes(8)]
        k.pack(args)
        args[index] = value
        assert f"parameter {index} ({ctype}): {text}" in refusal(k, args)


def test_extern_c_kernels_are_checked_by_size(fixtures, dev):
    """No types in an extern "C" name: ints must fit the size (either signedness), a float is
    packed as float32/float64 by size, as earlier versions did."""
    k = fixtures.kernel("fill_u32")   # fill_u32(unsigned* p, unsigned value, unsigned n)
    assert k.param_types == [None, None, None]
    with dev.alloc(64) as buf:
        block = k.pack((buf, 3.5, -1))
        assert block[8:12] == struct.pack("<f", 3.5)          # type unknown: float32 bits
        assert block[12:16] == b"\xff\xff\xff\xff"             # -1 fits 4 bytes
        assert k.pack((buf, 2**32 - 1, -2**31))[8:16] == struct.pack("<Ii", 2**32 - 1, -2**31)
        for value in (2**40, 2**32, -2**31 - 1):
            msg = refusal(k, (buf, value, 1))
            assert msg.startswith("fill_u32: parameter 1 (4 bytes, type unknown): ")
            assert f"int {value} is out of range" in msg and "param_types" in msg
        assert "parameter 1 (4 bytes, type unknown): numpy.int64 1 has 8 bytes" in \
            refusal(k, (buf, np.int64(1), 1))
        assert "parameter 2 (4 bytes, type unknown): float 1e+39 overflows" in \
            refusal(k, (buf, 1, 1e39))
        with pytest.raises(tg.InvalidLaunch, match="takes 3 parameters, got 2"):
            k.pack((buf, 1))


def test_declared_types_check_extern_c_kernels(fixtures, dev):
    k = fixtures.kernel("fill_u32", param_types=["unsigned* p", "unsigned value", "unsigned n"])
    assert k.param_types == ["unsigned int*", "unsigned int", "unsigned int"]
    with dev.alloc(4 * 64, tg.BUF_ZEROED) as buf:
        for value, text in ((3.5, "float 3.5"), (-1, "int -1"),
                            (np.float32(3.5), "numpy.float32 3.5"), (2**40, f"int {2**40}")):
            assert f"fill_u32: parameter 1 'value' (unsigned int): {text}" in \
                refusal(k, (buf, value, 64))
        run(dev, k, (buf, np.uint32(0xfedcba98), 64), block=64)
        v = buf.numpy(np.uint32)
        assert (v == 0xfedcba98).all()
        run(dev, k, (buf, 7, np.uint32(3)), block=64)
        assert list(v[:4]) == [7, 7, 7, 0xfedcba98]
        del v
    with pytest.raises(tg.InvalidArgument, match="param_types has 2 entries; the kernel has 3"):
        fixtures.kernel("fill_u32", param_types=["unsigned* p", "unsigned n"])
    with pytest.raises(tg.InvalidArgument, match=r"param_types\[1\]: cannot read"):
        fixtures.kernel("fill_u32", param_types=["unsigned* p", "unsigned long short v", None])
    # None entries stay unknown (checked by size)
    k = fixtures.kernel("fill_u32", param_types=["unsigned* p", None, "unsigned n"])
    assert k.param_types == ["unsigned int*", None, "unsigned int"]
    assert k.pack((None, 3.5, 1))[8:12] == struct.pack("<f", 3.5)


@pytest.mark.parametrize("decl,ctype,name", [
    ("unsigned n", "unsigned int", "n"),
    ("unsigned int", "unsigned int", None),
    ("const float* __restrict__ x", "const float*", "x"),
    ("float* const p", "float* const", "p"),
    ("long long", "long long", None),
    ("unsigned long long v", "unsigned long long", "v"),
    ("signed char c", "signed char", "c"),
    ("char", "char", None),
    ("short int s", "short", "s"),
    ("uint32_t n", "uint32_t", "n"),
    ("double", "double", None),
    ("Dims d", "Dims", "d"),
    ("const ns::Dims* d", "const ns::Dims*", "d"),
    ("int& r", "int&", "r"),
])
def test_declarations_are_read(decl, ctype, name):
    t, n = tg._parse_c_decl(decl)
    assert (t.spelling, n) == (ctype, name)


# ---- accepted arguments -----------------------------------------------------------------------

def mixed_expected(a, b, c, d, s_bytes, e):
    si, sf, sd = struct.unpack("<ifd", s_bytes)
    m = 0xffffffff
    return [a & m, b & m, c & m, d & m, (d >> 32) & m, si & m, f32_bits(sf),
            f64_bits(sd) & m, f64_bits(sd) >> 32, f64_bits(e) & m, f64_bits(e) >> 32]


def test_scalars_of_every_size_launch(cxx, dev):
    """mixed_params(signed char, short, int, long long, unsigned*, Mixed, double) writes its
    arguments to out: Python ints at both ends of each range, numpy scalars of each size (either
    signedness, value in range), ints and float32 for the double, a struct as bytes."""
    k = cxx.kernel(MIXED)
    s = struct.pack("<ifd", -3, 1.25, -6.5)
    cases = [
        ((-128, -2**15, -2**31, -2**63), 7.0, 7.0),
        ((127, 2**15 - 1, 2**31 - 1, 2**63 - 1), -0.0, -0.0),
        ((np.int8(-5), np.int16(-300), np.int32(-7), np.int64(-2**40)), np.float64(2.5), 2.5),
        ((np.uint8(100), np.uint16(1000), np.uint32(70000), np.uint64(2**40)), 3, 3.0),
        ((True, False, np.int32(0), 0), np.float32(0.1), float(np.float32(0.1))),
        ((1, 2, 3, 4), 2**60 + 1, float(2**60)),  # an int converts as C++ converts it
    ]
    with dev.alloc(64, tg.BUF_ZEROED) as out:
        for ints, e, e_value in cases:
            run(dev, k, (*ints, out, s, e))
            assert list(out.numpy(np.uint32)[:11]) == \
                mixed_expected(*(int(v) for v in ints), s, e_value), ints


def test_floats_and_counts_launch(cxx, dev):
    """saxpy(float a, const float* x, float* y, unsigned n): a as int, float, np.float32 and
    np.float64 (converted, rounded as C++ rounds); n as int, np.uint32 and np.int32; y as
    Buffer, BufferView and int address."""
    k = cxx.kernel(SAXPY)
    n = 300
    with dev.alloc(4 * n) as x, dev.alloc(4 * (n + 64)) as y:
        xs, ys = x.numpy(np.float32), y.numpy(np.float32)
        xs[:] = np.arange(n)
        for a, a_value, count, y_arg, at in (
                (3, 3.0, n, y, 0),
                (0.1, np.float32(0.1), np.uint32(n), y.view(256), 64),
                (np.float32(-1.5), -1.5, np.int32(n), y.gpu_address, 0),
                (np.float64(1e-50), 0.0, np.uint32(n - 1), y, 0),          # underflows to 0
                (16777217, 16777216.0, n, y, 0),                           # rounds as C++ does
                (3.4028235e38, np.finfo(np.float32).max, n, y, 0)):  # rounds to the max
            ys[:] = 1.0
            run(dev, k, (a, x, y_arg, count), grid=(n + 127) // 128, block=128)
            m = int(count)
            with np.errstate(over="ignore"):  # a * x + y is one fused multiply-add
                want = (np.float64(np.float32(a_value)) * np.arange(m) + 1).astype(np.float32)
            np.testing.assert_array_equal(ys[at:at + m], want)
            assert (ys[at + m:] == 1.0).all() and (ys[:at] == 1.0).all()
        del xs, ys


def test_pointers_launch(cxx, dev):
    """increment(unsigned long long* p, unsigned long long by): p as Buffer, BufferView, int and
    numpy addresses; by as int (wrapping at 2**64 in the kernel) and np.uint64."""
    k = cxx.kernel(INCREMENT)
    with dev.alloc(64, tg.BUF_ZEROED) as buf:
        v = buf.numpy(np.uint64)
        run(dev, k, (buf, 5))
        run(dev, k, (buf.view(8), np.uint64(2**64 - 1)))
        run(dev, k, (buf.gpu_address + 16, 2**64 - 1))
        run(dev, k, (np.uint64(buf.gpu_address + 24), np.uint64(9)))
        run(dev, k, (buf, 2**64 - 1))     # 5 + (2**64 - 1) wraps to 4
        assert list(v[:5]) == [4, 2**64 - 1, 2**64 - 1, 9, 0]
        del v
        assert k.pack((None, 0)) == bytes(16)
        assert k.pack((0, 1)) == bytes(8) + b"\x01" + bytes(7)


def test_bytes_and_arrays_pass_unchecked(cxx, dev):
    """The escape hatch: bytes-like objects and numpy arrays (not scalars) of the parameter's
    size are packed as they are, for any type."""
    k = cxx.kernel(MIXED)
    s = struct.pack("<ifd", 9, -2.0, 0.5)
    with dev.alloc(64, tg.BUF_ZEROED) as out:
        args = (b"\xfb", np.array([-300], np.int16), bytearray(struct.pack("<i", -7)),
                memoryview(struct.pack("<q", 5)), out, np.frombuffer(s, np.uint8), 1.0)
        run(dev, k, args)
        assert list(out.numpy(np.uint32)[:11]) == mixed_expected(-5, -300, -7, 5, s, 1.0)


def test_vector_add_with_declared_types(fixtures, dev):
    """The common launch, typed by declaration: Buffers and a numpy or Python count."""
    k = fixtures.kernel("vector_add",
                        ["const float* a", "const float* b", "float* c", "unsigned n"])
    n = 1000
    with dev.alloc(4 * n) as a, dev.alloc(4 * n) as b, dev.alloc(4 * n, tg.BUF_ZEROED) as c:
        a.numpy(np.float32)[:] = np.arange(n)
        b.numpy(np.float32)[:] = 0.5
        for count in (np.uint32(n), n):
            run(dev, k, (a, b, c, count), grid=(n + 255) // 256, block=256)
            np.testing.assert_array_equal(c.numpy(np.float32), np.arange(n) + 0.5)
        with pytest.raises(tg.InvalidArgument, match=r"parameter 3 'n' \(unsigned int\): "
                                                      r"float 1000.0 is not an integer"):
            run(dev, k, (a, b, c, float(n)), grid=4, block=256)


def test_echo_packs_each_type(extra, dev):
    """Every scalar type, packed from Python values and from numpy scalars; on a GPU the echo
    kernel also runs (the emulated Orin has no reference for it)."""
    k = extra.kernel(ECHO)
    with dev.alloc(8 * 11, tg.BUF_ZEROED) as out:
        want = struct.pack("<?bBxhHiIqQfxxxxdQ", True, -5, 200, -300, 60000, -2**31, 2**32 - 1,
                           -2**63, 2**64 - 1, 1.5, -2.25, out.gpu_address)
        py = ECHO_OK + (out,)
        numpy = (np.bool_(True), np.int8(-5), np.uint8(200), np.int16(-300), np.uint16(60000),
                 np.int32(-2**31), np.uint32(2**32 - 1), np.int64(-2**63), np.uint64(2**64 - 1),
                 np.float32(1.5), np.float64(-2.25), out)
        assert k.pack(py) == want
        assert k.pack(numpy) == want
        assert k.pack((1, 0, 0, 0, 0, 0, 0, 0, 0, 3, np.float32(0.5), 0))[32:48] == \
            struct.pack("<fxxxxd", 3.0, 0.5)
        if not dev.info.emulated:
            run(dev, k, py)
            m = M64
            assert list(out.numpy(np.uint64)) == [
                1, -5 & m, 200, -300 & m, 60000, -2**31 & m, 2**32 - 1, -2**63 & m, 2**64 - 1,
                f32_bits(1.5), f64_bits(-2.25)]


def test_template_and_struct_kernels_pack(extra, dev):
    ff, fi, take = extra.kernel(FILL_F), extra.kernel(FILL_I), extra.kernel(TAKE)
    assert ff.param_types == ["float*", "float", "unsigned int"]
    assert fi.param_types == ["int*", "int", "unsigned int"]
    with dev.alloc(64, tg.BUF_ZEROED) as buf:
        assert ff.pack((buf, 2, 16))[8:16] == struct.pack("<fI", 2.0, 16)
        assert fi.pack((buf, np.int32(-3), np.uint32(16)))[8:16] == struct.pack("<iI", -3, 16)
        pair = struct.pack("<if", -7, 2.5)
        assert take.pack((None, buf, pair)) == bytes(8) + struct.pack("<Q", buf.gpu_address) + pair
        if not dev.info.emulated:
            run(dev, ff, (buf, 2, 16), block=16)
            assert (buf.numpy(np.float32) == 2.0).all()


def test_half_and_bfloat16_params(fixtures, dev):
    """Declared 16-bit float types: converted with overflow checks. mixed_params' second
    parameter is 2 bytes; the kernel writes it back as a sign-extended short, i.e. the bits."""
    decl = ["signed char a", None, "int c", "long long d", "unsigned* out", "Mixed s", "double e"]
    half = fixtures.kernel("mixed_params", decl[:1] + ["__half b"] + decl[2:])
    bf16 = fixtures.kernel("mixed_params", decl[:1] + ["__nv_bfloat16 b"] + decl[2:])
    assert half.param_types[1] == "__half" and bf16.param_types[1] == "__nv_bfloat16"
    s = bytes(16)

    def bits16(b):
        return b - 0x10000 if b & 0x8000 else b

    with dev.alloc(64, tg.BUF_ZEROED) as out:
        for k, b, want in ((half, 1.5, 0x3e00), (half, np.float32(-2), 0xc000),
                           (half, 65504, 0x7bff), (half, np.float16(0.5), 0x3800),
                           (bf16, 1.0, 0x3f80), (bf16, -2, 0xc000),
                           (bf16, 1.00390625, 0x3f80),      # a tie: rounds to even
                           (bf16, 1.01171875, 0x3f82),      # a tie: rounds to even (up)
                           (bf16, float("inf"), 0x7f80)):
            run(dev, k, (1, b, 2, 3, out, s, 0.0))
            assert out.numpy(np.uint32)[1] == bits16(want) & 0xffffffff, (b, hex(want))
    for k, b, text in ((half, 65520.0, "float 65520.0"), (half, 1e6, "float 1000000.0"),
                       (bf16, 3.4e38, "float 3.4e+38"), (bf16, 1e39, "float 1e+39")):
        msg = refusal(k, (1, b, 2, 3, 0, s, 0.0))
        assert f"parameter 1 'b' ({k.param_types[1]}): {text} overflows" in msg
    # a declared type whose size is not the parameter's: checked by size only
    k = fixtures.kernel("mixed_params", decl[:1] + ["float b"] + decl[2:])
    assert k.param_types[1] == "float"
    assert "parameter 1 'b' (float): float 1.5 is a float; a float needs a 4- or 8-byte " \
        "parameter, this one has 2" in refusal(k, (1, 1.5, 2, 3, 0, s, 0.0))
    assert k.pack((1, -1, 2, 3, 0, s, 0.0))[2:4] == b"\xff\xff"
