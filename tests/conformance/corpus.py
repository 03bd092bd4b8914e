"""The conformance corpus: every case run through libcuda and libtegragpu by run.py.

Pure Python (no numpy), so that gen_cases.py can read it anywhere. Each case is a dict made by
``case()``; the fields are:

  id            unique name, also the stable cubin name (<id>.sm_XY.cubin)
  src           kernel source file(s) under kernels/; a list means separate compilation
                (-rdc=true) and a device link into one final cubin
  kernel        the extern "C" kernel launched
  flags         compiler flags that nvcc and nvrtc both accept (-G, -lineinfo, --maxrregcount=N,
                --use_fast_math); nvcc_flags / nvrtc_flags are added for one compiler only
  link          libraries for the device link (e.g. ["cudadevrt"])
  arch          architecture override ("sm_90a"); default: the device's sm_XY
  min_sm        lowest SM version (80, 90) the case runs on; sm_90 cases are skipped for sm_87
  nvrtc         False when nvrtc cannot build the case (separate compilation / device link)
  grid, block   launch shape (3-tuples)
  dyn           dynamic shared memory bytes, or "max": the device's opt-in maximum per block
                minus the kernel's static shared memory (queried from libcuda)
  args          kernel arguments, in order (see buf/out/scalar/blob/tex/surf/tensormap below)
  tol           {argument index or global name: (dtype, rtol, atol)} for outputs that are not
                compared bit for bit (only float atomics; each such case says why)
  cooperative   needs a cooperative launch (all blocks co-resident, grid-wide sync)
  cluster       thread-block cluster shape given at launch (3-tuple); cluster_compile_time=True
                when the kernel declares it with __cluster_dims__ (libcuda then launches it with
                plain cuLaunchKernel; libtegragpu still gets the shape in tg_launch_config)
  stack_limit   bytes of stack per thread, set before the module is loaded (restored after the
                case); with stack_limit_after_load=True it is set after the kernel has been
                looked up, just before the launch (both orders are valid with libcuda)
  needs_constant  [(global name, fill, nbytes)]: globals (__constant__ or __device__) the harness
                writes before the launch, through cuModuleGetGlobal / tg_module_get_global
  read_globals  [(global name, nbytes)]: globals read back after the launch and compared
  expect_tg     "ok" (libtegragpu must run it) or "may_refuse" (it may refuse with a status:
                printf, malloc, dynamic parallelism, textures, surfaces)
  fixture_arch  False when the case cannot be built for the fixture architecture (sm_87) with
                the x86-64 toolkit (cudadevrt has no sm_87 code there)
  notes         free text

Sizes (buffer bytes) and scalar values may be strings: Python expressions evaluated by run.py
with the names dyn (dynamic shared bytes of the launch), gx, gy, gz (grid), bx, by, bz (block)
and threads (total threads of the launch).

Fill rules (inputs, and initial contents of outputs):
  ("zeros",)                          all zero
  ("const", dtype, value)             every element = value
  ("iota", dtype, start, step)        start, start+step, ...
  ("rand", dtype, seed, lo, hi)       uniform reals in [lo, hi) (f16/bf16/f32/f64)
  ("randint", dtype, seed, lo, hi)    uniform integers in [lo, hi)
  ("bytes", seed)                     uniform random bytes
dtypes: i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64. Random streams come from
numpy.random.default_rng(seed), so inputs are the same on every run and machine.
"""

ZEROS = ("zeros",)


def const(dtype, value):
    return ("const", dtype, value)


def iota(dtype="i32", start=0, step=1):
    return ("iota", dtype, start, step)


def rand(dtype, seed, lo=-1.0, hi=1.0):
    return ("rand", dtype, seed, lo, hi)


def randint(dtype, seed, lo, hi):
    return ("randint", dtype, seed, lo, hi)


def rbytes(seed):
    return ("bytes", seed)


def buf(size, fill=ZEROS, out=False):
    """A device buffer passed by its address. ``out``: compared after the launch."""
    return {"kind": "buf", "size": size, "fill": fill, "out": out}


def out(size, fill=ZEROS):
    """An output buffer (initial contents ``fill``, compared after the launch)."""
    return buf(size, fill, out=True)


def scalar(dtype, value):
    return {"kind": "scalar", "dtype": dtype, "value": value}


def blob(size, seed):
    """A by-value struct parameter of ``size`` bytes, filled with random bytes from ``seed``."""
    return {"kind": "blob", "size": size, "seed": seed}


def tex(size, fill, fmt="f32", ch=1, w=None, h=None, pitch=None, filter="point",
        ncoords=False, read_int=False, addr=("clamp", "clamp"), border=(0.0, 0.0, 0.0, 0.0)):
    """A texture object over a buffer of ``size`` bytes filled with ``fill``.

    Linear (``tex1Dfetch``) over the whole buffer unless ``h`` is given; then pitch-linear 2-D,
    ``w`` x ``h`` elements, rows ``pitch`` bytes apart (``tex2D``). ``fmt`` is the channel type
    (u8 s8 u16 s16 u32 s32 f16 f32), ``ch`` the channels (1, 2, 4); ``filter`` point or linear;
    ``ncoords`` normalized coordinates; ``read_int`` reads 8/16-bit integers as integers
    (else as normalized floats; 32-bit integers always read as integers); ``addr`` the x and y
    address modes (wrap clamp mirror border); ``border`` the border color."""
    return {"kind": "tex", "size": size, "fill": fill, "fmt": fmt, "ch": ch, "w": w, "h": h,
            "pitch": pitch, "filter": filter, "ncoords": ncoords, "read_int": read_int,
            "addr": list(addr), "border": list(border)}


def surf(size):
    """A surface object over a 1-D float CUDA array of ``size`` bytes; compared after the launch."""
    return {"kind": "surf", "size": size, "out": True}


def tensormap(rows, cols, box, fill, by_pointer=False):
    """A CUtensorMap describing a rows x cols row-major f32 matrix in a hidden input buffer filled
    with ``fill``; ``box`` = (box_cols, box_rows). Passed by value (128 bytes), or with
    ``by_pointer`` as the address of a device buffer holding the 128-byte map."""
    return {"kind": "tensormap", "rows": rows, "cols": cols, "box": box, "fill": fill,
            "by_pointer": by_pointer}


_DEFAULTS = dict(
    flags=(), nvcc_flags=(), nvrtc_flags=(), link=(), arch=None, min_sm=80, nvrtc=True,
    grid=(1, 1, 1), block=(1, 1, 1), dyn=0, args=(), tol=None, cooperative=False, cluster=None,
    cluster_compile_time=False, stack_limit=None, stack_limit_after_load=False,
    needs_constant=(), read_globals=(),
    expect_tg="ok", fixture_arch=True, notes="",
)


def _dim3(v):
    if isinstance(v, int):
        return (v, 1, 1)
    t = tuple(v)
    return t + (1,) * (3 - len(t))


def case(id, src, kernel=None, **kw):
    unknown = set(kw) - set(_DEFAULTS)
    if unknown:
        raise ValueError(f"case {id}: unknown fields {sorted(unknown)}")
    c = dict(_DEFAULTS)
    c.update(kw)
    c["id"] = id
    c["src"] = [src] if isinstance(src, str) else list(src)
    c["kernel"] = kernel or id
    c["grid"] = _dim3(c["grid"])
    c["block"] = _dim3(c["block"])
    c["tol"] = dict(c["tol"] or {})
    for k in ("flags", "nvcc_flags", "nvrtc_flags", "link", "args", "needs_constant",
              "read_globals"):
        c[k] = list(c[k])
    if len(c["src"]) > 1 or c["link"]:
        c["nvrtc"] = False
    return c


def nvcc_flags(c):
    return list(c["flags"]) + list(c["nvcc_flags"])


def nvrtc_flags(c):
    return ["-std=c++17"] + list(c["flags"]) + list(c["nvrtc_flags"])


# A few shapes used by many cases.
N512 = dict(grid=4, block=128)            # 512 threads
N4K = dict(grid=16, block=256)            # 4096 threads


def w4(n):
    """Bytes of n 4-byte words."""
    return 4 * n


CASES = [
    # ---------------------------------------------------------------- warp intrinsics
    case("warp_shfl", "warp_shfl.cu", **N512,
         args=[buf(w4(512), randint("i32", 1, -1_000_000, 1_000_000)), out(w4(512 * 8))]),
    case("warp_shfl_up_down", "warp_shfl_up_down.cu", **N512,
         args=[buf(w4(512), randint("i32", 2, -1000, 1000)), out(w4(512 * 8))]),
    case("warp_shfl_xor", "warp_shfl_xor.cu", **N512,
         args=[buf(w4(512), rand("f32", 3, -10, 10)), out(w4(512 * 5))]),
    case("warp_vote", "warp_vote.cu", **N512,
         args=[buf(w4(512), randint("i32", 4, -100, 100)), out(w4(512 * 8))]),
    case("warp_match", "warp_match.cu", **N512,
         args=[buf(w4(512), randint("i32", 5, 0, 64)), out(w4(512 * 6))]),
    case("warp_reduce", "warp_reduce.cu", **N512, min_sm=80,
         args=[buf(w4(512), randint("i32", 6, -2**31, 2**31)), out(w4(512 * 10))]),
    case("warp_activemask", "warp_activemask.cu", **N512,
         args=[buf(w4(512), randint("i32", 7, 0, 1000)), out(w4(512 * 4))]),
    case("partial_warp", "partial_warp.cu", grid=3, block=100,
         notes="block of 100 threads: the last warp has 4 lanes",
         args=[buf(w4(300), randint("i32", 8, -1000, 1000)), out(w4(300 * 3))]),

    # ---------------------------------------------------------------- parameters
    case("param_8000", "param_8000.cu", grid=4, block=256,
         args=[blob(8000, 10), out(w4(2001))]),
    case("param_32000", "param_32000.cu", grid=8, block=256,
         notes="32012 bytes of parameters (limit 32764 on sm_70+ with CUDA 12.1+)",
         args=[blob(32000, 11), out(w4(8002)), scalar("i32", 0x5A5A1234)]),
    case("param_4096", "param_4096.cu", grid=4, block=256,
         args=[blob(4088, 12), out(w4(1022))]),
    case("param_mixed", "param_mixed.cu", grid=1, block=32,
         args=[scalar("i8", -5), scalar("i16", -1234), scalar("i32", 123456789),
               scalar("i64", -9876543210123), scalar("f32", 3.25), scalar("f64", -2.5e100),
               buf(8, randint("i32", 13, -1000, 1000)), blob(16, 14), scalar("u8", 200),
               blob(16, 15), scalar("i8", 77), scalar("u64", 0xFEDCBA9876543210),
               out(w4(20))]),
    case("param_many", "param_many.cu", grid=1, block=64,
         args=[scalar("i32", 1), scalar("f32", 2.5), scalar("i8", -3), scalar("i64", 2**40 + 5),
               scalar("i16", -300), scalar("f64", 6.125), scalar("i32", -7), scalar("u8", 250),
               scalar("f32", -9.75), scalar("i32", 10), scalar("i64", -11), scalar("i8", 12),
               scalar("i32", 13), scalar("f32", 14.5), scalar("i16", 15), scalar("i32", 16),
               scalar("f64", -17.0625), scalar("i32", 18), scalar("i8", 19), scalar("u32", 2**31 + 20),
               scalar("f32", 21.25), scalar("i64", -(2**50) - 22), scalar("i32", 23), scalar("i16", -24),
               scalar("i8", 25), scalar("i32", 26), scalar("f32", 27.0), scalar("f64", 1e-300),
               scalar("i32", 29), scalar("u16", 65000), scalar("i32", -31), scalar("i8", -32),
               out(8 * 64)]),

    # ---------------------------------------------------------------- stack
    case("recursion_fib", "recursion_fib.cu", grid=2, block=128,
         notes="recursion depth < 16 fits the default 1 KiB stack",
         args=[buf(w4(256), randint("i32", 20, 0, 16)), out(w4(256))]),
    case("recursion_deep", "recursion_deep.cu", grid=4, block=128, stack_limit=8192,
         notes="40 frames of ~128 bytes: needs the stack limit raised to 8 KiB per thread",
         args=[buf(w4(512), randint("u32", 21, 0, 2**32)), out(w4(512)), scalar("u32", 40)]),
    case("recursion_deep_late_limit", "recursion_deep.cu", "recursion_deep", grid=4, block=128,
         stack_limit=8192, stack_limit_after_load=True,
         notes="as recursion_deep, but the stack limit is raised after the kernel was looked up",
         args=[buf(w4(512), randint("u32", 21, 0, 2**32)), out(w4(512)), scalar("u32", 40)]),
    case("local_array", "local_array.cu", **N512,
         args=[buf(w4(512), randint("i32", 22, 0, 1 << 20)),
               buf(w4(512), randint("i32", 23, -100000, 100000)), out(w4(512))]),
    case("local_struct", "local_struct.cu", **N512,
         args=[buf(w4(512), randint("i32", 24, -1000, 1000)), out(8 * 512)]),
    case("abi_stack_args", "abi_stack_args.cu", **N512,
         args=[buf(w4(512), randint("i32", 25, -1000, 1000)), out(w4(512 * 4))]),

    # ---------------------------------------------------------------- shared memory
    case("smem_static_2064", "smem_static_2064.cu", grid=8, block=256,
         args=[buf(8 * 2064, rbytes(30)), out(8 * 2064)]),
    case("smem_static_100", "smem_static_100.cu", grid=4, block=64,
         args=[buf(w4(4 * 25), randint("i32", 31, -1000, 1000)), out(w4(4 * 64))]),
    case("smem_static_12", "smem_static_12.cu", grid=4, block=128,
         args=[buf(w4(512), randint("i32", 32, -1000, 1000)), out(w4(12))]),
    case("smem_static_48k", "smem_static_48k.cu", grid=2, block=1024,
         args=[buf(w4(2 * 12288), rand("f32", 33, -4, 4)), out(w4(2 * 12288))]),
    case("smem_dynamic_small", "smem_dynamic.cu", "smem_dynamic", grid=4, block=128, dyn=1028,
         args=[buf("gx*dyn", randint("u32", 34, 0, 2**32)), out("gx*dyn"), scalar("u32", "dyn//4")]),
    case("smem_dynamic_max", "smem_dynamic.cu", "smem_dynamic", grid=2, block=1024, dyn="max",
         notes="dynamic shared memory = device opt-in maximum (cuFuncSetAttribute first)",
         args=[buf("gx*dyn", randint("u32", 35, 0, 2**32)), out("gx*dyn"), scalar("u32", "dyn//4")]),
    case("smem_static_dynamic_max", "smem_static_dynamic.cu", "smem_static_dynamic", grid=2, block=512, dyn="max",
         notes="2064 bytes static + (opt-in maximum - 2064) dynamic",
         args=[buf("gx*dyn", randint("u32", 36, 0, 2**31)), out("gx*dyn"), scalar("u32", "dyn//4")]),
    case("atomic_shared", "atomic_shared.cu", grid=4, block=256,
         args=[buf(w4(1024), randint("i32", 37, -1_000_000, 1_000_000)), out(w4(4 * 16))]),
    case("fences_volatile", "fences_volatile.cu", grid=4, block=64,
         args=[buf(w4(128), randint("i32", 38, -1000, 1000)), out(w4(128))]),

    # ---------------------------------------------------------------- tinygrad-style kernels
    case("r_16_16", "r_16_16.cu", grid=16, block=16,
         args=[out(w4(16)), buf(w4(16 * 64), rand("f32", 40))]),
    case("r_32_8_4", "r_32_8_4.cu", grid=32, block=8,
         args=[out(w4(32)), buf(w4(32 * 128), rand("f32", 41))]),
    case("r_64_32_max", "r_64_32_max.cu", grid=64, block=32,
         args=[out(w4(64)), out(w4(64)), buf(w4(64 * 256), rand("f32", 42, -10, 10))]),
    case("r_8_32_half", "r_8_32_half.cu", grid=8, block=32,
         args=[out(2 * 8), out(w4(8)), buf(2 * 8 * 256, rand("f16", 43, -2, 2))]),
    case("E_1024_4", "E_1024_4.cu", grid=4, block=256,
         args=[out(w4(4096)), buf(w4(4096), rand("f32", 44, -3, 3)),
               buf(w4(4096), rand("f32", 45, -3, 3))]),

    # ---------------------------------------------------------------- atomics
    case("atomic_add_int", "atomic_add_int.cu", **N4K,
         args=[buf(w4(4096), randint("i32", 50, -1_000_000, 1_000_000)), out(w4(25)),
               out(w4(8))]),
    case("atomic_add_u64", "atomic_add_u64.cu", **N4K,
         args=[buf(8 * 4096, randint("u64", 51, 0, 2**64)), out(8 * 10)]),
    case("atomic_add_float_exact", "atomic_add_float_exact.cu", **N4K,
         notes="integer-valued float/double addends: every partial sum is exact, any order "
               "gives the same bits, so compared exactly",
         args=[buf(w4(4096), randint("i32", 52, 0, 2**31)), out(4 * 4), out(8 * 4)]),
    case("atomic_add_float", "atomic_add_float.cu", **N4K,
         notes="random real addends: each atomicAdd rounds, and the order in which 512 atomics "
               "on one address land is not specified, so two runs (even on libcuda alone) can "
               "differ in the last bits; compared with a tolerance",
         tol={1: ("f32", 1e-5, 2e-3), 2: ("f64", 1e-12, 1e-9)},
         args=[buf(w4(4096), rand("f32", 53)), out(4 * 8), out(8 * 8)]),
    case("atomic_cas", "atomic_cas.cu", **N4K,
         args=[buf(w4(4096), randint("i32", 54, 0, 2**31)), out(4 * 4), out(8 * 4), out(4 * 8)]),
    case("atomic_cas16", "atomic_cas16.cu", grid=8, block=256,
         notes="16-bit atomicCAS on unsigned short (sm_70+)",
         args=[buf(w4(2048), randint("i32", 55, 0, 1000)), out(2 * 8)]),
    case("atomic_exch", "atomic_exch.cu", **N4K,
         args=[buf(w4(4096), randint("i32", 56, -2**31, 2**31)), out(w4(4096), iota("i32", 7, 3)),
               out(w4(4096)), out(8 * 4096, randint("u64", 57, 0, 2**64)),
               out(4 * 4096, rand("f32", 58)), out(4 * 2)]),
    case("atomic_minmax", "atomic_minmax.cu", **N4K,
         args=[buf(w4(4096), randint("i32", 59, -2**31, 2**31)),
               out(4 * 8, randint("i32", 60, -2**31, 2**31)),
               out(4 * 8, randint("u32", 61, 0, 2**32)),
               out(8 * 8, randint("i64", 62, -2**63, 2**63)),
               out(8 * 8, randint("u64", 63, 0, 2**64))]),
    case("atomic_bitwise", "atomic_bitwise.cu", **N4K,
         args=[buf(w4(4096), randint("i32", 64, -2**31, 2**31)),
               out(4 * 5, randint("u32", 65, 0, 2**32)), out(8 * 3, randint("u64", 66, 0, 2**64))]),
    case("atomic_half2", "atomic_half2.cu", grid=4, block=256,
         notes="small integer addends (partial sums <= 768 are exact in half): compared exactly",
         args=[buf(w4(1024), randint("i32", 67, 0, 2**31)), out(4 * 4), out(2 * 4)]),
    case("atomic_bf162", "atomic_bf162.cu", grid=4, block=256,
         notes="0/1 addends (partial sums <= 128 are exact in bfloat16): compared exactly",
         args=[buf(w4(1024), randint("i32", 68, 0, 2**31)), out(4 * 8), out(2 * 8)]),

    # ---------------------------------------------------------------- math
    case("double_math", "double_math.cu", **N512,
         args=[buf(8 * 512, rand("f64", 70, -100, 100)), buf(8 * 512, rand("f64", 71, 0.5, 50)),
               out(8 * 512 * 14)]),
    case("float_math", "float_math.cu", **N512,
         args=[buf(w4(512), rand("f32", 72, -8, 8)), buf(w4(512), rand("f32", 73, 0.25, 4)),
               out(w4(512 * 16))]),
    case("float_math_fast", "float_math.cu", "float_math", flags=["--use_fast_math"], **N512,
         notes="same source as float_math, built with --use_fast_math",
         args=[buf(w4(512), rand("f32", 72, -8, 8)), buf(w4(512), rand("f32", 73, 0.25, 4)),
               out(w4(512 * 16))]),
    case("fast_math", "fast_math.cu", **N512,
         notes="fast-math intrinsics are deterministic on one GPU: compared exactly",
         args=[buf(w4(512), rand("f32", 74, -8, 8)), buf(w4(512), rand("f32", 75, 0.25, 4)),
               out(w4(512 * 16))]),
    case("int_div64", "int_div64.cu", **N512,
         args=[buf(8 * 512, randint("i64", 76, -2**63, 2**63)),
               buf(8 * 512, randint("i64", 77, -2**40, 2**40)), out(8 * 512 * 12)]),
    case("half_arith", "half_arith.cu", **N512,
         args=[buf(2 * 512, rand("f16", 78, -4, 4)), buf(2 * 512, rand("f16", 79, 0.25, 4)),
               out(2 * 512 * 12), out(w4(512))]),
    case("bf16_arith", "bf16_arith.cu", **N512,
         args=[buf(2 * 512, rand("bf16", 80, -4, 4)), buf(2 * 512, rand("bf16", 81, 0.25, 4)),
               out(2 * 512 * 10), out(w4(512 * 2))]),
    case("half_ptx", "half_ptx.cu", **N512,
         args=[buf(4 * 512, rand("f16", 82, -4, 4)), buf(4 * 512, rand("f16", 83, -4, 4)),
               buf(w4(512), rand("f32", 84, -100, 100)), out(w4(512 * 7))]),

    # ---------------------------------------------------------------- tensor cores, async copies
    case("wmma_16x16x16", "wmma_16x16x16.cu", grid=4, block=32,
         args=[buf(2 * 4 * 16 * 64, rand("f16", 90)), buf(2 * 4 * 64 * 16, rand("f16", 91)),
               buf(4 * 4 * 256, rand("f32", 92)), out(4 * 4 * 256)]),
    case("mma_sync_ldmatrix", "mma_sync_ldmatrix.cu", grid=4, block=32,
         args=[buf(2 * 4 * 256, rand("f16", 93)), buf(2 * 4 * 128, rand("f16", 94)),
               buf(2 * 4 * 128, rand("f16", 95)), buf(4 * 4 * 128, rand("f32", 96)),
               out(4 * 4 * 384), out(4 * 4 * 32 * 8)]),
    case("mma_int8", "mma_int8.cu", grid=4, block=32,
         args=[buf(4 * 512, randint("i8", 97, -128, 128)), buf(4 * 256, randint("i8", 98, -128, 128)),
               buf(4 * 4 * 128, randint("i32", 99, -100000, 100000)), out(4 * 4 * 128)]),
    case("cp_async_ptx", "cp_async_ptx.cu", grid=2, block=256,
         args=[buf(16 * 512, rbytes(100)), buf(8 * 512, rbytes(101)), buf(4 * 512, rbytes(102)),
               out(w4(512 * 8))]),
    case("cp_async_pipeline", "cp_async_pipeline.cu", grid=4, block=128,
         args=[buf(16 * 4 * 1024, rand("f32", 103)), out(w4(4 * 128))]),
    case("mbarrier_ptx", "mbarrier_ptx.cu", grid=4, block=256,
         args=[buf(w4(1024), randint("i32", 104, -1000, 1000)), out(w4(1024))]),
    case("cuda_barrier", "cuda_barrier.cu", grid=4, block=128,
         args=[buf(w4(4 * 512), randint("i32", 105, -100000, 100000)), out(w4(4 * 128))]),

    # ---------------------------------------------------------------- sm_90 only
    case("tma_bulk", "tma_bulk.cu", min_sm=90, grid=4, block=128,
         args=[buf(w4(4 * 2048), randint("i32", 110, -100000, 100000)), out(w4(4 * 2048))]),
    case("tma_tensor_2d", "tma_tensor_2d.cu", min_sm=90, grid=(4, 4), block=128,
         notes="tensor map encoded with libcuda's cuTensorMapEncodeTiled for both sides' buffers",
         args=[tensormap(128, 128, (32, 32), rand("f32", 111)), out(4 * 128 * 128)]),
    case("tma_tensor_2d_global", "tma_tensor_2d_global.cu", min_sm=90, grid=(4, 4), block=128,
         notes="as tma_tensor_2d, with the tensor map in global memory passed by pointer",
         args=[tensormap(128, 128, (32, 32), rand("f32", 111), by_pointer=True), out(4 * 128 * 128)]),
    case("cluster_dsmem_cg", "cluster_dsmem_cg.cu", min_sm=90, grid=8, block=256,
         cluster=(2, 1, 1), cluster_compile_time=True,
         notes="compile-time thread-block clusters (__cluster_dims__), cluster.sync, "
               "distributed shared memory",
         args=[buf(w4(8 * 256), randint("i32", 112, -100000, 100000)), out(w4(8 * 256))]),
    case("cluster_ptx", "cluster_ptx.cu", min_sm=90, grid=8, block=128, cluster=(4, 1, 1),
         notes="cluster shape given at launch (cuLaunchKernelEx / tg_launch_config.cluster), "
               "cluster special registers, barrier.cluster, mapa, ld.shared::cluster",
         args=[buf(w4(8 * 128), randint("i32", 113, -100000, 100000)), out(w4(8 * 128 * 2))]),
    *[case(f"cluster_ptx_{n}", "cluster_ptx.cu", "cluster_ptx", min_sm=90, grid=g, block=128,
           cluster=(n, 1, 1),
           notes=f"clusters of {n} blocks given at launch (the grid in clusters, 1/{n} in the "
                 "constant bank, distributed shared memory across the cluster)",
           args=[buf(w4(g * 128), randint("i32", seed, -100000, 100000)), out(w4(g * 128 * 2))])
      for n, g, seed in [(3, 12, 154), (8, 16, 155)]],
    case("cbank_self_address", "cbank_self_address.cu", min_sm=90, grid=2, block=32,
         notes="constant bank 0's own address at 0xc0 and the parameter block's at 0x198",
         args=[scalar("u64", 7), out(2 * 8 * 64)]),
    case("sm90_misc", "sm90_misc.cu", min_sm=90, grid=2, block=64,
         args=[buf(w4(128), randint("u32", 114, 0, 2**31)), out(w4(128 * 6))]),
    case("sm90a_setmaxnreg", "sm90a_setmaxnreg.cu", min_sm=90, arch="sm_90a", grid=2, block=256,
         notes="architecture-specific sm_90a cubin",
         args=[buf(w4(512), randint("i32", 115, -1000, 1000)), out(w4(512))]),

    # ---------------------------------------------------------------- cooperative groups
    case("cg_block", "cg_block.cu", grid=(2, 2), block=(16, 8, 2),
         args=[buf(w4(1024), randint("i32", 120, -1000, 1000)), out(w4(1024 * 4))]),
    case("cg_tiled_reduce", "cg_tiled_reduce.cu", **N512,
         args=[buf(w4(512), randint("i32", 121, -1000, 1000)), out(w4(512 * 8))]),
    case("cg_coalesced", "cg_coalesced.cu", **N512,
         args=[buf(w4(512), randint("i32", 122, 0, 1000)), out(w4(512 * 3)), out(w4(5))]),
    case("cg_grid_sync", "cg_grid_sync.cu", grid=16, block=256, cooperative=True,
         notes="grid.sync(): cooperative launch, 16 blocks of 256 are co-resident on any GPU here",
         args=[out(w4(4096)), out(w4(4096)), scalar("i32", 3)]),

    # ---------------------------------------------------------------- features libtegragpu may refuse
    case("printf_device", "printf_device.cu", grid=2, block=64,
         notes="vprintf syscall (the library's built-in syscall module); launched with flag=0 "
               "so nothing is printed (python/tests/test_syscalls.py compares printed text)",
         args=[buf(w4(128), randint("i32", 130, -1000, 1000)), out(w4(128)), scalar("i32", 0)]),
    case("malloc_device", "malloc_device.cu", grid=2, block=64,
         notes="device heap (malloc/free syscalls)",
         args=[buf(w4(128), randint("i32", 131, -1000, 1000)), out(w4(128))]),
    case("malloc_stress", "malloc_stress.cu", grid=8, block=256,
         notes="device heap: many threads, several sizes, free and allocate again, a request "
               "larger than the heap",
         args=[buf(w4(2048), randint("u32", 156, 0, 2**31)), out(w4(2 * 2048))]),
    case("cdp_parent", "cdp_parent.cu", grid=4, block=32, expect_tg="may_refuse",
         nvcc_flags=["-rdc=true"], link=["cudadevrt"], fixture_arch=False,
         notes="dynamic parallelism: -rdc=true, device-linked with cudadevrt (the x86-64 "
               "CUDA 13 libcudadevrt.a has no sm_87 code, so no sm_87 fixture)",
         args=[out(w4(128)), scalar("i32", 1000)]),
    case("texture_object", "texture_object.cu", grid=4, block=256,
         notes="texture object over linear memory (tex1Dfetch<float>)",
         args=[tex(4 * 1024, rand("f32", 132, -5, 5)), out(w4(1024)), scalar("i32", 1024)]),
    # tex2D over a 45 x 23 pitch-linear image sampled on a 64 x 40 grid that reaches past every
    # edge: unnormalized u = -3.3 + 0.83 x, v = -2.6 + 0.7 y; normalized u = -0.31 + 0.026 x,
    # v = -0.27 + 0.04 y.
    *[case(id, "texture_sampling.cu", kernel, grid=(1, 40), block=64,
           notes="texture object over pitch-linear memory: " + notes,
           args=[tex(192 * 23, fill, **{**dict(w=45, h=23, pitch=192), **t}), out(64 * 40 * osize),
                 scalar("i32", 64), scalar("i32", 40)]
           + ([scalar("f32", 0.026), scalar("f32", 0.04), scalar("f32", -0.31), scalar("f32", -0.27)]
              if t.get("ncoords") else
              [scalar("f32", 0.83), scalar("f32", 0.7), scalar("f32", -3.3), scalar("f32", -2.6)]))
      for id, kernel, osize, fill, t, notes in [
          ("tex2d_point_clamp_f32", "tex2d_f1", 4, rand("f32", 134, -5, 5), {},
           "float, nearest texel, clamp"),
          ("tex2d_linear_border_f32", "tex2d_f1", 4, rand("f32", 135, -5, 5),
           dict(filter="linear", addr=("border", "border"), border=(0.5, 0, 0, 0)),
           "float, bilinear, border color"),
          ("tex2d_linear_wrap_norm_f32x4", "tex2d_f4", 16, rand("f32", 136, -5, 5),
           dict(ch=4, w=11, pitch=192, filter="linear", ncoords=True, addr=("wrap", "wrap")),
           "float4, bilinear, normalized coordinates, wrap"),
          ("tex2d_mirror_norm_u8x4", "tex2d_f4", 16, randint("u8", 137, 0, 256),
           dict(fmt="u8", ch=4, filter="linear", ncoords=True, addr=("mirror", "clamp")),
           "uchar4 read as normalized floats, bilinear, mirror"),
          ("tex2d_point_s16x2", "tex2d_s2", 4, randint("i16", 138, -30000, 30000),
           dict(fmt="s16", ch=2, read_int=True), "short2 read as integers, nearest texel"),
          ("tex2d_linear_f16", "tex2d_f1", 4, rand("f16", 139, -5, 5),
           dict(fmt="f16", filter="linear", addr=("clamp", "border"), border=(-1.5, 0, 0, 0)),
           "half read as float, bilinear, clamp and border"),
          ("tex2d_point_s16_normf", "tex2d_f1", 4, randint("i16", 144, -32768, 32768),
           dict(fmt="s16"), "short read as normalized float (signed), nearest texel"),
          ("tex2d_point_i32", "tex2d_i1", 4, randint("i32", 145, -2**31, 2**31),
           dict(fmt="s32", read_int=True, addr=("border", "clamp"), border=(7.0, 0, 0, 0)),
           "int, nearest texel, border"),
          ("tex2d_f1_as_f4", "tex2d_f4", 16, rand("f32", 146, -5, 5), {},
           "a one-channel float texture fetched as float4 (the missing channels)"),
          ("tex2d_point_norm_clamp_f32", "tex2d_f1", 4, rand("f32", 152, -5, 5),
           dict(ncoords=True), "float, nearest texel, normalized coordinates, clamp"),
          ("tex2d_linear_norm_s8x4", "tex2d_f4", 16, randint("i8", 153, -128, 128),
           dict(fmt="s8", ch=4, filter="linear", ncoords=True, addr=("wrap", "mirror")),
           "char4 read as normalized floats (signed), bilinear, wrap and mirror"),
      ]],
    *[case(id, "texture_gather.cu", kernel, grid=(1, 40), block=64,
           notes="texture object over pitch-linear memory: " + notes,
           args=[tex(192 * 23, fill, **{**dict(w=45, h=23, pitch=192), **t}), out(64 * 40 * osize),
                 scalar("i32", 64), scalar("i32", 40), scalar("f32", 0.83), scalar("f32", 0.7),
                 scalar("f32", -3.3), scalar("f32", -2.6)])
      for id, kernel, osize, fill, t, notes in [
          ("tex2d_gather_u8x4", "tex2d_gather", 32, randint("u8", 157, 0, 256),
           dict(fmt="u8", ch=4, addr=("clamp", "border"), border=(0.25, 0.5, 0, 1)),
           "tex2Dgather of components 0 and 1, uchar4 as normalized floats, clamp and border"),
          ("tex2d_lod_f32x2", "tex2d_lod", 8, rand("f32", 158, -5, 5),
           dict(ch=2, w=23, filter="linear"),
           "tex2DLod at level 0 and tex2D of a float2 texture, bilinear"),
      ]],
    *[case(id, "texture_sampling.cu", kernel, grid=4, block=64,
           notes="texture object over linear memory: " + notes,
           args=[tex(size, fill, **t), out(256 * osize), scalar("i32", 256)])
      for id, kernel, osize, size, fill, t, notes in [
          ("tex1d_fetch_f32x2", "tex1d_f2", 8, 8 * 200, rand("f32", 147, -5, 5), dict(ch=2),
           "float2 elements, fetches before the start and past the end"),
          ("tex1d_fetch_f32x4", "tex1d_f4", 16, 16 * 251, rand("f32", 148, -5, 5), dict(ch=4),
           "float4 elements"),
          ("tex1d_fetch_u8x4", "tex1d_uc4", 4, 4 * 256, randint("u8", 149, 0, 256),
           dict(fmt="u8", ch=4, read_int=True), "uchar4 read as integers"),
          ("tex1d_fetch_u16_normf", "tex1d_f1", 4, 2 * 240, randint("u16", 150, 0, 65536),
           dict(fmt="u16"), "ushort read as normalized float"),
          ("tex1d_fetch_u8x2_as_f4", "tex1d_f4", 16, 2 * 256, randint("u8", 151, 0, 256),
           dict(fmt="u8", ch=2), "uchar2 read as normalized float4 (the missing channels)"),
      ]],
    case("surface_object", "surface_object.cu", grid=4, block=256, expect_tg="may_refuse",
         notes="surface object over a CUDA array; libtegragpu refuses the kernel (SULD/SUST "
               "instructions: surface objects are not supported)",
         args=[surf(4 * 1024), buf(w4(1024), rand("f32", 133, -5, 5)), scalar("i32", 1024)]),

    # ---------------------------------------------------------------- inline PTX
    case("ptx_addc", "ptx_addc.cu", **N512,
         args=[buf(16 * 512, randint("u32", 140, 0, 2**32)), buf(16 * 512, randint("u32", 141, 0, 2**32)),
               out(w4(512 * 14))]),
    case("ptx_bits", "ptx_bits.cu", **N512,
         args=[buf(w4(512), randint("u32", 142, 0, 2**32)), buf(w4(512), randint("u32", 143, 0, 2**32)),
               out(w4(512 * 16))]),
    case("ptx_sregs", "ptx_sregs.cu", grid=(2, 3), block=(16, 4), dyn=256,
         notes="%dynamic_smem_size and %total_smem_size must match libcuda's launch",
         args=[out(w4(6 * 64 * 13))]),

    # ---------------------------------------------------------------- launch shapes
    case("grid_1m", "grid_1m.cu", grid=1 << 20, block=32,
         args=[out(w4(1 << 20)), scalar("u32", 0x9E3779B9)]),
    case("grid_3d", "grid_3d.cu", grid=(13, 7, 5), block=(8, 4, 2),
         args=[out(w4(455 * 64 * 3))]),
    case("grid_ymax", "grid_ymax.cu", grid=(1, 65535, 2), block=32,
         args=[out(w4(65535 * 2))]),
    case("block_1024", "block_1024.cu", grid=4, block=1024,
         args=[buf(w4(4096), randint("i32", 150, -1000, 1000)), out(w4(16))]),
    case("block_3d_max", "block_3d_max.cu", grid=2, block=(4, 4, 64),
         args=[buf(w4(2048), randint("i32", 151, -100000, 100000)), out(w4(2048))]),
    case("block_2d_32x32", "block_3d_max.cu", "block_3d_max", grid=2, block=(32, 32),
         args=[buf(w4(2048), randint("i32", 152, -100000, 100000)), out(w4(2048))]),
    case("launch_bounds_256_2", "launch_bounds_256_2.cu", grid=4, block=256,
         args=[buf(w4(1024 * 48), rand("f32", 153, -0.5, 0.5)), out(w4(1024 * 48))]),
    case("large_buffer", "large_buffer.cu", grid=(1024, 4), block=256,
         notes="64 MiB in, 64 MiB out",
         args=[buf(64 << 20, rbytes(154)), out(64 << 20), scalar("u64", (64 << 20) // 16)]),
    case("vec_types", "vec_types.cu", **N512,
         args=[buf(16 * 512, rbytes(155)), out(32 * 512)]),

    # ---------------------------------------------------------------- globals and constants
    case("device_globals", "device_globals.cu", **N512,
         read_globals=[("g_zero", 256), ("g_counter", 8)],
         args=[buf(w4(512), randint("i32", 160, 0, 2**31)), out(w4(514))]),
    case("global_readback", "global_readback.cu", grid=1, block=32,
         notes="no parameters at all; results read back from __device__ globals",
         read_globals=[("g_flag", 4), ("g_table", 128), ("g_sum", 8)], args=[]),
    case("constant_written", "constant_written.cu", **N512,
         needs_constant=[("coef", rand("f32", 161), 256), ("ctab", randint("i32", 162, -2**31, 2**31), 1024)],
         args=[buf(w4(512), rand("f32", 163)), out(w4(512)), out(w4(512))]),
    case("constant_init", "constant_init.cu", **N512,
         args=[buf(w4(512), randint("i32", 164, -100000, 100000)), out(w4(512))]),

    # ---------------------------------------------------------------- indirect control flow
    case("func_ptr_table", "func_ptr_table.cu", **N512,
         args=[buf(w4(512), randint("i32", 170, 0, 1 << 20)), buf(w4(512), randint("i32", 171, -1000, 1000)),
               buf(w4(512), randint("i32", 172, -1000, 1000)), out(w4(1024))]),
    case("virtual_calls", "virtual_calls.cu", **N512,
         args=[buf(w4(512), randint("i32", 173, 0, 256)), buf(w4(512), rand("f32", 174, 0, 10)),
               out(w4(512)), out(w4(512))]),
    case("switch_jumptable", "switch_jumptable.cu", **N512,
         args=[buf(w4(512), randint("u32", 175, 0, 2**32)), out(w4(512))]),

    # ---------------------------------------------------------------- build variants
    case("build_default", "build_variants.cu", "build_variants", **N512,
         args=[buf(w4(512), rand("f32", 180, -2, 2)), buf(w4(512), randint("i32", 181, 0, 1000)),
               out(w4(512))]),
    case("build_G", "build_variants.cu", "build_variants", flags=["-G"], **N512,
         notes="device debug build (-G): calls through CALL.ABS (40-bit absolute target)",
         args=[buf(w4(512), rand("f32", 180, -2, 2)), buf(w4(512), randint("i32", 181, 0, 1000)),
               out(w4(512))]),
    case("build_lineinfo", "build_variants.cu", "build_variants", flags=["-lineinfo"], **N512,
         args=[buf(w4(512), rand("f32", 180, -2, 2)), buf(w4(512), randint("i32", 181, 0, 1000)),
               out(w4(512))]),
    case("build_maxrreg32", "build_variants.cu", "build_variants", flags=["--maxrregcount=32"], **N512,
         args=[buf(w4(512), rand("f32", 180, -2, 2)), buf(w4(512), randint("i32", 181, 0, 1000)),
               out(w4(512))]),
    case("reg_heavy", "reg_heavy.cu", grid=4, block=256,
         args=[buf(w4(1024 * 48), rand("f32", 153, -0.5, 0.5)), out(w4(1024 * 48))]),
    case("reg_heavy_maxrreg32", "reg_heavy.cu", "reg_heavy", flags=["--maxrregcount=32"],
         grid=4, block=256,
         notes="register-heavy kernel squeezed to 32 registers: spills to local memory",
         args=[buf(w4(1024 * 48), rand("f32", 153, -0.5, 0.5)), out(w4(1024 * 48))]),
    # Register-limited block sizes: a block passes the hardware's register check only with its
    # warps rounded up to a multiple of the SM's 4 register sub-partitions (88 registers per
    # thread allow 640 threads, not 736; 80 allow 768, not 800), and each sub-partition holds
    # the warps its quarter of the register file fits (occupancy).
    case("reg_pressure", "reg_pressure.cu", grid=4, block=512,
         notes="no register cap: 112-114 registers, at most 512 threads per block",
         args=[buf(w4(2048 * 96), rand("f32", 190, -0.5, 0.5)), out(w4(2048 * 96))]),
    case("reg_pressure_maxrreg88", "reg_pressure.cu", "reg_pressure", flags=["--maxrregcount=88"],
         grid=4, block=640, notes="88 registers: the largest block is 640 threads",
         args=[buf(w4(2560 * 96), rand("f32", 191, -0.5, 0.5)), out(w4(2560 * 96))]),
    case("reg_pressure_maxrreg88_b64", "reg_pressure.cu", "reg_pressure",
         flags=["--maxrregcount=88"], grid=40, block=64,
         notes="88 registers, 2-warp blocks: 10 blocks per SM (5 warps per sub-partition)",
         args=[buf(w4(2560 * 96), rand("f32", 192, -0.5, 0.5)), out(w4(2560 * 96))]),
    case("reg_pressure_maxrreg80", "reg_pressure.cu", "reg_pressure", flags=["--maxrregcount=80"],
         grid=4, block=768, notes="80 registers: the largest block is 768 threads",
         args=[buf(w4(3072 * 96), rand("f32", 193, -0.5, 0.5)), out(w4(3072 * 96))]),
    # Named barriers held per block limit the blocks an SM runs at once (occupancy); NCCL's
    # kernels declare 16.
    case("named_barriers_2", "named_barriers.cu", "named_barriers", flags=["-DNB=2"],
         grid=4, block=32, notes="2 named barriers (EIATTR_NUM_BARRIERS 2), 32-thread blocks",
         args=[buf(w4(128), randint("i32", 202, -1000, 1000)), out(w4(128))]),
    case("named_barriers_3", "named_barriers.cu", "named_barriers", flags=["-DNB=3"],
         grid=4, block=32, notes="3 named barriers (EIATTR_NUM_BARRIERS 3), 32-thread blocks",
         args=[buf(w4(128), randint("i32", 203, -1000, 1000)), out(w4(128))]),
    case("named_barriers_5", "named_barriers.cu", "named_barriers", flags=["-DNB=5"],
         grid=4, block=32, notes="5 named barriers (EIATTR_NUM_BARRIERS 5), 32-thread blocks",
         args=[buf(w4(128), randint("i32", 205, -1000, 1000)), out(w4(128))]),
    case("named_barriers_8", "named_barriers.cu", "named_barriers", flags=["-DNB=8"],
         grid=4, block=32, notes="8 named barriers (EIATTR_NUM_BARRIERS 8), 32-thread blocks",
         args=[buf(w4(128), randint("i32", 208, -1000, 1000)), out(w4(128))]),
    case("named_barriers_16", "named_barriers.cu", "named_barriers", flags=["-DNB=16"],
         grid=4, block=32, notes="16 named barriers (EIATTR_NUM_BARRIERS 16), 32-thread blocks",
         args=[buf(w4(128), randint("i32", 216, -1000, 1000)), out(w4(128))]),
    case("rdc_dlink", ["rdc_main.cu", "rdc_lib.cu"], "rdc_main", **N512,
         notes="-rdc=true per file, then a device link (nvcc -dlink -cubin) to one final cubin; "
               "the kernel calls the other file's function with CALL.ABS (its target is placed "
               "on a 4 KiB boundary)",
         args=[buf(w4(512), randint("i32", 182, -1000, 1000)), out(w4(512))]),
]


def by_id():
    d = {}
    for c in CASES:
        if c["id"] in d:
            raise ValueError(f"duplicate case id {c['id']}")
        d[c["id"]] = c
    return d


by_id()  # validates uniqueness at import
