#!/usr/bin/env python3
"""GPU time of 100 launches replayed from a command buffer, plain and as thread-block clusters
(sm_90), between two signals' GPU timestamps; then 500 replays of a chain of cluster and plain
fills whose results are checked. Needs an sm_90 GPU and the tegragpu package.

    PYTHONPATH=python TEGRAGPU_LIBRARY=.device/lib/libtegragpu.so.0 \\
        python3 scripts/probes/cmdbuf_cluster_chain.py
    TEGRAGPU_CMDBUF_CHAIN=0 ...   # the same with a wait for idle before every launch
"""
import os
import statistics
import sys

import numpy as np
import tegragpu as tg

TIMEOUT_NS = 5_000_000_000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    dev = tg.Device(os.environ.get("TEGRAGPU_DEVICE", "rm"))
    if dev.info.sm_major < 9:
        print(f"needs sm_90 or later; {dev.info.name} is sm_{dev.info.sm_major}{dev.info.sm_minor}")
        return 2
    mod = dev.load_module_file(os.path.join(ROOT, "tests/fixtures/cubin/kernels.sm_90.cubin"))
    empty, fill = mod.kernel("empty_kernel"), mod.kernel("fill_u32")
    a, b, done = dev.create_signal(0), dev.create_signal(0), dev.create_signal(0)
    q = dev.create_queue()
    chain = os.environ.get("TEGRAGPU_CMDBUF_CHAIN", "1") != "0"
    print(f"{dev.info.name}; command-buffer chaining {'on' if chain else 'off (TEGRAGPU_CMDBUF_CHAIN=0)'}")
    for cluster in (None, (2, 1, 1)):
        cb = dev.create_cmdbuf()
        na = cb.signal(a, 1)
        for _ in range(100):
            cb.launch(empty, grid=8, block=32, cluster=cluster)
        nb = cb.signal(b, 1)
        cb.finish()
        us = []
        for r in range(1, 301):
            cb.set_value(na, r)
            cb.set_value(nb, r)
            q.replay(cb, submit=True)
            b.wait(r, TIMEOUT_NS)
            us.append((b.timestamp - a.timestamp) / 1e3)
        what = f"clusters of {cluster[0]}" if cluster else "plain"
        print(f"100 launches ({what}), GPU time p50 of 280 replays: {statistics.median(us[20:]):.1f} us")
        cb.close()
    n = 8192
    x = dev.alloc(n * 4)
    cb = dev.create_cmdbuf()
    f1 = cb.launch(fill, grid=n // 256, block=256, args=(x, np.uint32(0), np.uint32(n)), cluster=(4, 1, 1))
    f2 = cb.launch(fill, grid=1, block=256, args=(x, np.uint32(0), np.uint32(256)))
    f3 = cb.launch(fill, grid=n // 256, block=256, args=(x, np.uint32(0), np.uint32(n // 2)), cluster=(2, 1, 1))
    s = cb.signal(done, 0)
    cb.finish()
    bad = 0
    for r in range(1, 501):
        cb.set_args(f1, (x, np.uint32(r), np.uint32(n)))
        cb.set_args(f2, (x, np.uint32(r + 1), np.uint32(256)))
        cb.set_args(f3, (x, np.uint32(r + 2), np.uint32(n // 2)))
        cb.set_value(s, r)
        q.replay(cb, submit=True)
        done.wait(r, TIMEOUT_NS)
        want = np.full(n, r, np.uint32)
        want[: n // 2] = r + 2
        bad += not np.array_equal(x.numpy(np.uint32)[:n], want)
    print(f"cluster fill, plain fill, cluster fill: {bad} of 500 replays wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
