#!/usr/bin/env python3
"""GPU time per launch of fixture kernels through libtegragpu and through libcuda: the same cubin,
the same launches, the same buffer sizes (device memory), one process per library.

    python3 scripts/kernel-time-vs-cuda.py            # both, side by side
    python3 scripts/kernel-time-vs-cuda.py ours|cuda  # one side only

Ours is timed with GPU timestamps of signals around REPS launches (Queue.timed), libcuda's with
events around the same launches. Needs a desktop GPU, libcuda and the package on PYTHONPATH
(TEGRAGPU_LIBRARY for the library). A kernel much slower through libtegragpu than through
libcuda points at launch state (shared-memory carveout, caches, local memory), not the code.
"""
import ctypes
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 2048
REPS = 20
# name, grid, block, dynamic shared bytes, arguments (buffers a, b, c)
CASES = [
    ("matmul_tiled", (N // 16, N // 16, 1), (16, 16, 1), 0, lambda b: [b[0], b[1], b[2], N]),
    ("reduce_sum", (N * N // 256, 1, 1), (256, 1, 1), 1024, lambda b: [b[0], b[2], N * N]),
    ("vector_add", (N * N // 256, 1, 1), (256, 1, 1), 0, lambda b: [b[0], b[1], b[2], N * N]),
]


def cubin(sm):
    with open(os.path.join(ROOT, "tests", "fixtures", "cubin", f"kernels.sm_{sm}.cubin"), "rb") as f:
        return f.read()


def ours():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tegragpu as tg
    dev = tg.Device()
    info = dev.info
    m = dev.load_module(cubin(f"{info.sm_major}{info.sm_minor}"))
    bufs = [dev.alloc(N * N * 4, tg.BUF_DEVICE_LOCAL) for _ in range(3)]
    q = dev.create_queue()
    out = {}
    for name, grid, block, smem, args in CASES:
        k = m.kernel(name)
        p = k.pack(args(bufs))
        for _ in range(3):
            q.launch_packed(k, grid, block, p, smem)
        q.synchronize()
        with q.timed() as t:
            for _ in range(REPS):
                q.launch_packed(k, grid, block, p, smem)
        out[name] = t.elapsed_ns / REPS / 1e3
    return out


def cuda():
    cu = ctypes.CDLL("libcuda.so.1")

    def ck(r, what):
        if r != 0:
            raise RuntimeError(f"{what}: CUresult {r}")
    ck(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    major, minor = ctypes.c_int(), ctypes.c_int()
    ck(cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), "major")
    ck(cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev), "minor")
    ctx = ctypes.c_void_p()
    ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), cubin(f"{major.value}{minor.value}")), "cuModuleLoadData")
    bufs = []
    for _ in range(3):
        p = ctypes.c_uint64()
        ck(cu.cuMemAlloc_v2(ctypes.byref(p), N * N * 4), "cuMemAlloc")
        bufs.append(p.value)
    e0, e1 = ctypes.c_void_p(), ctypes.c_void_p()
    ck(cu.cuEventCreate(ctypes.byref(e0), 0), "cuEventCreate")
    ck(cu.cuEventCreate(ctypes.byref(e1), 0), "cuEventCreate")
    out = {}
    for name, grid, block, smem, args in CASES:
        f = ctypes.c_void_p()
        ck(cu.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()), "cuModuleGetFunction")
        vals = [ctypes.c_uint64(a) if a in bufs else ctypes.c_uint32(a) for a in args(bufs)]
        arr = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
                                              for v in vals])

        def launch():
            ck(cu.cuLaunchKernel(f, *grid, *block, smem, None, arr, None), "cuLaunchKernel")
        for _ in range(3):
            launch()
        ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        ck(cu.cuEventRecord(e0, None), "cuEventRecord")
        for _ in range(REPS):
            launch()
        ck(cu.cuEventRecord(e1, None), "cuEventRecord")
        ck(cu.cuEventSynchronize(e1), "cuEventSynchronize")
        ms = ctypes.c_float()
        ck(cu.cuEventElapsedTime(ctypes.byref(ms), e0, e1), "cuEventElapsedTime")
        out[name] = ms.value * 1e3 / REPS
    return out


def main():
    if len(sys.argv) > 1:
        r = ours() if sys.argv[1] == "ours" else cuda()
        print(json.dumps(r))
        return
    res = {}
    for side in ("cuda", "ours"):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), side],
                           stdout=subprocess.PIPE, universal_newlines=True, check=True)
        res[side] = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"{'kernel':14s} {'libcuda us':>11s} {'tegragpu us':>12s} {'ratio':>7s}")
    for name, *_ in CASES:
        c, o = res["cuda"][name], res["ours"][name]
        print(f"{name:14s} {c:11.2f} {o:12.2f} {o / c:7.3f}")


if __name__ == "__main__":
    main()
