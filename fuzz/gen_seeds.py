#!/usr/bin/env python3
"""Write the capi_sequence seed inputs (fuzz/seeds/capi_sequence/*.bin).

Each seed is a script of ops in the byte encoding harness/capi_sequence/op.rs reads (`op()`): an
op byte, then the bytes each choice of that op consumes. `L(i)` picks the i-th live handle of
the kind the op wants. The fuzzer mutates these into everything else; they only need to reach
the interesting states quickly (a launch that runs, a copy, a blocked GPU wait, several
devices).
"""
import os

def L(i=0):
    return [0, i]            # pick: live handle i
def D(i=0):
    return [31, i]           # pick: destroyed handle i
def u32(v):
    return [v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff]

DEV_OPEN = [0, 4, 1]
def alloc(dev=0, pages=0, zeroed=True):   # ARENA_MIN + 4096 * pages
    return [5] + L(dev) + [5, pages, 3 if zeroed else 2, 1]
def load(dev=0, which=0):                 # 0: kernels.sm_87, 9: globals.sm_87
    return [10] + L(dev) + [which, 2]
def kernel(mod=0, name=1):                # index into FIXTURE_KERNELS + GLOBALS_KERNELS + ...
    return [12] + L(mod) + [name, 1]
def queue(dev=0, copy=False):
    return [17] + L(dev) + [1 if copy else 3, 0]
def signal(dev=0, initial=0):
    return [31] + L(dev) + [4, initial, 1]
def launch(q=0, k=0, params=(), grid=0, block=3, args=False):
    """params: ('ptr', arena index) or ('n', value) per parameter of a fixture kernel; none
    for other kernels (launched with a zero parameter block)."""
    cfg = [0, grid, 1, block, 1, 0, 2, 2, 4, 1]
    p = []
    for kind, v in params:
        p += [2, v, 0] if kind == 'ptr' else [3, v]
    if params:
        p += [2]             # parameter block kept at its size
    tail = [1, 2, 1, 1] if args else [0, 1]
    return [19] + L(q) + L(k) + cfg + p + tail
def qsignal(q=0, s=0, v=1):
    return [25] + L(q) + L(s) + [4, v]
def qwait(q=0, s=0, v=1, block=False):
    return [26] + L(q) + L(s) + ([0, 4, v, 3] if block else [1, 4, v])
SUBMIT = [28, 0, 0]
def sync(q=0):
    return [30] + L(q) + [2, 99]
def swait(s=0, v=1):
    return [35] + L(s) + [4, v, 2, 50]
def sset(s=0, v=1):
    return [34] + L(s) + [4, v]
def copy(q=0, dst=0, src=1):
    return [24] + L(q) + L(dst) + L(src) + [3] + u32(0) + [3] + u32(0) + [2]
def destroy(op, i=0):
    return [op] + L(i)
VEC = [('ptr', 0), ('ptr', 0), ('ptr', 0), ('n', 64)]

seeds = {
    "launch_vector_add": alloc() + load() + kernel(name=1) + queue() + signal()
        + launch(params=VEC) + qsignal(v=1) + SUBMIT + swait(v=1) + sync(),
    "launch_args_fill": alloc() + load() + kernel(name=6) + queue() + signal()
        + launch(params=[('ptr', 0), ('n', 7), ('n', 64)], args=True) + qsignal(v=2)
        + SUBMIT + swait(v=2),
    "all_fixture_kernels": alloc() + load() + queue()
        + sum((kernel(name=i) for i in range(11)), [])
        + sum((launch(k=i, params=[('ptr', 0)] * 3 + [('n', 16)]) for i in range(11)), [])
        + SUBMIT + sync(),
    "copy_engine": alloc(pages=1) + alloc(pages=1) + queue(copy=True) + queue() + signal()
        + copy(q=0) + copy(q=1) + qsignal(q=0, v=3) + SUBMIT + swait(v=3),
    "blocked_wait_then_set": queue() + signal() + signal(initial=5) + qwait(v=9, block=True)
        + qsignal(s=1, v=7) + SUBMIT + sset(v=9) + swait(s=1, v=7) + sync(),
    "two_devices": DEV_OPEN + alloc(dev=1) + load(dev=1) + kernel() + queue(dev=0)
        + launch(params=VEC) + SUBMIT + destroy(1, 1) + sync(),
    "globals_module": load(which=9) + [15] + L() + [0, 1] + [15] + L() + [3, 1]
        + kernel(name=11) + queue() + launch() + SUBMIT + sync(),
    "destroy_then_use": alloc() + queue() + signal() + load() + kernel()
        + destroy(6) + destroy(18) + destroy(32) + destroy(11) + destroy(13)
        + [8] + D(0) + [28] + D(1) + [33] + D(2) + [1] + [14] + D(4) + [2]
        + destroy(1) + [2] + D(5) + [4, 1],
    "limits_and_occupancy": [16] + L() + [1, 0, 3] + load() + kernel(name=8) + queue()
        + [14] + L() + [2] + [16] + L() + [1, 1, 1] + alloc()
        + launch(k=0, params=[('ptr', 0), ('ptr', 0), ('n', 8)]) + SUBMIT + sync(),
}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "capi_sequence")
os.makedirs(out, exist_ok=True)
for name, ops in seeds.items():
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(bytes(b & 0xff for b in ops))
print(f"wrote {len(seeds)} seeds to {out}")
