#!/usr/bin/env python3
"""Differential conformance suite: the same cubins run through libcuda and libtegragpu in one
process; outputs are compared byte for byte and kernel attributes field by field.

Usage (on a machine with an NVIDIA GPU, libcuda, nvcc and numpy):

    PYTHONPATH=python TEGRAGPU_LIBRARY=target/release/libtegragpu.so \\
        python3 tests/conformance/run.py --out /tmp/conformance \\
            --fixture /tmp/conformance/attrs.json --keep-cubins tests/conformance/fixtures

    python3 tests/conformance/run.py --no-tg      # libcuda only: validates the corpus

Steps: (1) compile every case with nvcc for the device's sm_XY and for sm_87 (cubins only; the
sm_87 ones are kept as fixtures), in parallel; (2) for every case: load the cubin in libcuda,
query its attributes, launch it, copy the outputs back; load the same cubin in libtegragpu
($TEGRAGPU_DEVICE, default "rm"), compare its attributes, launch it with the same inputs and
compare the outputs.

This file is the driver; its pieces are beside it: harness.py (output lines, case outcomes, the
inputs from the manifest, output comparison), compile_cases.py (step 1), cuda_side.py and
tg_side.py (step 2: each library's side of a case).

One line per case:
    PASS <id>
    FAIL <id>: <first mismatch or error>        FAIL <id> attrs: <field> cuda=<v> tg=<v>
    UNSUPPORTED <id>: <reason>                   (libtegragpu refused a may_refuse case, a
                                                  needed libtegragpu symbol is missing, or the
                                                  device's SM is below the case's min_sm)
    SKIP <id>: <reason>                          (libcuda itself cannot run the case)
and finally 'N passed, M failed[, K skipped]' (K = UNSUPPORTED + SKIP); exit status 1 when M > 0.
Lines starting with '#' are information. With --no-tg every case runs twice through libcuda
and the two runs are compared (determinism check); libcuda errors are then FAILs, not SKIPs.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import corpus  # noqa: E402
from compile_cases import compile_all, find_nvcc  # noqa: E402
from cuda_side import Cuda, CudaError, run_cuda  # noqa: E402
from harness import CaseFail, CaseUnsupported, Prepared, compare_outputs, one_line, say  # noqa: E402
from tg_side import Tg, TgFault, run_tg, tg_status_text  # noqa: E402


class Counts:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def summary(self):
        s = f"{self.passed} passed, {self.failed} failed"
        if self.skipped:
            s += f", {self.skipped} skipped"
        return s


class Watchdog(threading.Thread):
    def __init__(self, seconds, counts, on_exit):
        super().__init__(daemon=True)
        self.seconds = seconds
        self.counts = counts
        self.on_exit = on_exit
        self.current = None
        self.lock = threading.Lock()

    def arm(self, cid):
        with self.lock:
            self.current = (cid, time.monotonic() + self.seconds)

    def disarm(self):
        with self.lock:
            self.current = None

    def run(self):
        while True:
            time.sleep(0.5)
            with self.lock:
                cur = self.current
            if cur and time.monotonic() > cur[1]:
                say(f"FAIL {cur[0]}: still running after {self.seconds} s (watchdog); stopping the run")
                self.counts.failed += 1
                try:
                    self.on_exit()
                except Exception:
                    pass
                say(self.counts.summary())
                sys.stdout.flush()
                os._exit(3)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="See the module docstring (head -40 tests/conformance/run.py) for the output format.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", metavar="REGEX", help="run only cases whose id matches (re.search)")
    ap.add_argument("--out", default="/tmp/conformance", metavar="DIR",
                    help="work directory for cubins and logs (default /tmp/conformance)")
    ap.add_argument("--fixture", metavar="FILE", help="write libcuda's kernel attributes here (JSON)")
    ap.add_argument("--keep-cubins", metavar="DIR",
                    help="copy the cubins here as <id>.sm_XY.cubin (device SM and sm_87)")
    ap.add_argument("--no-tg", action="store_true",
                    help="libcuda only: run every case twice and compare the runs (corpus check)")
    ap.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: $NVCC, /usr/local/cuda/bin/nvcc)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="parallel compile jobs")
    ap.add_argument("--fixture-arch", default="sm_87",
                    help="extra architecture compiled (not run) for fixtures; 'none' to skip")
    ap.add_argument("--device", default=os.environ.get("TEGRAGPU_DEVICE", "rm"),
                    help="libtegragpu device spec (default $TEGRAGPU_DEVICE or 'rm')")
    ap.add_argument("--tg-buf-flags", type=int, default=0,
                    help="flags for tg_buf_alloc (0 = pinned host memory on desktop GPUs; 8 = device local)")
    ap.add_argument("--cmdbuf", action="store_true",
                    help="launch each case through a command buffer (recorded between two copies, "
                         "replayed once) instead of directly on the queue")
    ap.add_argument("--tg-timeout", type=float, default=10.0, help="seconds to wait for a libtegragpu launch")
    ap.add_argument("--watchdog", type=float, default=60.0, help="seconds before a hung case stops the run")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)

    cases = [c for c in corpus.CASES if not args.only or re.search(args.only, c["id"])]
    if args.list:
        for c in cases:
            extra = [k for k in ("cooperative",) if c[k]]
            if c["cluster"]:
                extra.append(f"cluster={c['cluster']}")
            if c["expect_tg"] != "ok":
                extra.append(c["expect_tg"])
            say(f"{c['id']:28s} {','.join(c['src']):40s} sm>={c['min_sm']} {' '.join(extra)}")
        return 0
    if not cases:
        say("no case matches --only")
        say("0 passed, 0 failed")
        return 0

    try:
        import gen_cases
        ok, msg = gen_cases.check()
        if not ok:
            say(f"# warning: {msg}")
    except Exception as e:  # never stop the run for this
        say(f"# warning: cannot check cases.txt: {e}")

    counts = Counts()
    fixture = {}

    def write_fixture():
        if args.fixture and fixture:
            os.makedirs(os.path.dirname(os.path.abspath(args.fixture)), exist_ok=True)
            with open(args.fixture, "w") as f:
                json.dump(fixture, f, indent=1, sort_keys=True)

    try:
        cu = Cuda()
    except Exception as e:
        say(f"# libcuda unavailable: {e}")
        for c in cases:
            say(f"SKIP {c['id']}: libcuda unavailable")
            counts.skipped += 1
        say(counts.summary())
        return 0
    dev_arch = f"sm_{cu.sm[0]}{cu.sm[1]}"
    say(f"# libcuda: {cu.name}, {dev_arch}, {cu.sm_count} SMs, driver API {cu.driver_version}, "
        f"opt-in shared memory per block {cu.optin} bytes, cuFuncGetParamInfo "
        f"{'yes' if cu.has_param_info else 'no'}")

    nvcc = find_nvcc(args.nvcc)
    if not nvcc:
        say("# nvcc not found (set --nvcc or $NVCC)")
        for c in cases:
            say(f"FAIL {c['id']}: nvcc not found")
            counts.failed += 1
        say(counts.summary())
        return 1
    ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    say(f"# nvcc: {nvcc} ({ver[-1] if ver else '?'})")
    targets = [dev_arch]
    if args.fixture_arch and args.fixture_arch != "none" and args.fixture_arch != dev_arch:
        targets.append(args.fixture_arch)
    os.makedirs(args.out, exist_ok=True)
    built = compile_all(cases, targets, nvcc, args.out, args.jobs)

    if args.keep_cubins:
        os.makedirs(args.keep_cubins, exist_ok=True)
        n = 0
        for (cid, t), (ok, path, arch) in sorted(built.items()):
            if ok:
                shutil.copyfile(path, os.path.join(args.keep_cubins, f"{cid}.{arch}.cubin"))
                n += 1
        say(f"# copied {n} cubins to {args.keep_cubins}")

    tg = None
    tg_error = None
    if not args.no_tg:
        try:
            tg = Tg(args.device, args.tg_buf_flags, args.tg_timeout, args.cmdbuf)
            i = tg.info
            say(f"# libtegragpu {'.'.join(map(str, tg.tg.version()))} from {tg.tg.library_path()}: "
                f"{i.name}, sm_{i.sm_major}{i.sm_minor}, backend {i.backend.name}; optional symbols: "
                + ", ".join(f"{n} {'yes' if n in tg.sym else 'MISSING'}" for n in
                            ("tg_module_get_global", "tg_device_set_limit", "tg_device_get_limit",
                             "tg_kernel_max_active_blocks")))
            if (i.sm_major, i.sm_minor) != cu.sm:
                say(f"# warning: libtegragpu reports sm_{i.sm_major}{i.sm_minor}, libcuda {dev_arch}")
        except Exception as e:
            tg_error = f"libtegragpu unavailable: {one_line(e)}"
            say(f"# {tg_error}")

    dog = Watchdog(args.watchdog, counts, write_fixture)
    dog.start()
    for c in cases:
        cid = c["id"]
        dog.arm(cid)
        try:
            status, text = run_one(c, cu, tg, tg_error, built, dev_arch, targets, args, fixture)
        except Exception:  # a harness bug: report it against the case, keep going
            status, text = "FAIL", f"harness error: {one_line(traceback.format_exc(), 1500)}"
        dog.disarm()
        if status == "PASS":
            counts.passed += 1
            say(f"PASS {cid}")
        elif status == "FAIL":
            counts.failed += 1
            sep = " " if text.startswith("attrs:") else ": "
            say(f"FAIL {cid}{sep}{one_line(text, 2000)}")
        else:
            counts.skipped += 1
            say(f"{status} {cid}: {one_line(text, 1000)}")
        # tg device reopen after a fault / lost device
        if tg is not None and status == "FAIL" and getattr(run_one, "tg_broken", False):
            try:
                tg.reopen()
                say("# libtegragpu device closed and reopened after the failure")
            except Exception as e:
                tg_error = f"libtegragpu reopen failed: {one_line(e)}"
                tg = None
                say(f"# {tg_error}")
        run_one.tg_broken = False
    write_fixture()
    say(counts.summary())
    return 1 if counts.failed else 0


def run_one(c, cu, tg, tg_error, built, dev_arch, targets, args, fixture):
    """(status, text) for one case."""
    run_one.tg_broken = False
    sm = cu.sm[0] * 10 + cu.sm[1]
    # the fixture-arch build must work too
    fixture_problem = None
    for t in targets[1:]:
        ok, msg, arch = built.get((c["id"], t), (True, None, None))
        if not ok:
            fixture_problem = f"{t} build failed: {one_line(msg, 800)}"
    if c["min_sm"] > sm:
        return "UNSUPPORTED", f"needs sm_{c['min_sm']}, the device is {dev_arch}"
    ok, path, arch = built.get((c["id"], dev_arch), (False, "not built", None))
    if not ok:
        return "FAIL", f"{arch or dev_arch} build failed: {one_line(path, 1500)}"
    if fixture_problem:
        return "FAIL", fixture_problem
    if c["cooperative"] and not cu.coop:
        return "SKIP", "the device does not support cooperative launches"
    with open(path, "rb") as f:
        cubin = f.read()

    def factory(dyn):
        return Prepared(c, dyn)

    # ---- libcuda
    try:
        ref, cattrs, prep = run_cuda(cu, c, cubin, factory)
    except CaseFail as e:
        return "FAIL", str(e)
    except CudaError as e:
        broke = cu.recover()
        text = f"libcuda: {e}" + (" (context reset)" if broke else "")
        return ("FAIL" if args.no_tg else "SKIP"), text
    if cattrs is not None:
        fixture[f"{os.path.basename(path)}:{c['kernel']}"] = cattrs

    if args.no_tg:
        try:
            ref2, _, _ = run_cuda(cu, c, cubin, factory, want_attrs=False)
        except (CudaError, CaseFail) as e:
            cu.recover()
            return "FAIL", f"libcuda second run: {e}"
        m = compare_outputs(c, ref, ref2, label=("run1", "run2"))
        if m:
            return "FAIL", f"libcuda is not deterministic for this case: {m}"
        return "PASS", ""

    # ---- libtegragpu
    if tg is None:
        return "FAIL", tg_error or "libtegragpu unavailable"
    try:
        got, diffs = run_tg(tg, cu, c, cubin, prep, cattrs)
    except CaseUnsupported as e:
        return "UNSUPPORTED", str(e)
    except CaseFail as e:
        cause = e.__cause__
        if isinstance(cause, TgFault):
            run_one.tg_broken = True
        return "FAIL", str(e)
    except tg.tg.TegraGpuError as e:
        st = e.status.name if hasattr(e.status, "name") else str(e.status)
        if st in ("DEVICE_FAULT", "DEVICE_LOST", "TIMEOUT", "INTERNAL"):
            run_one.tg_broken = True
        return "FAIL", f"libtegragpu: {tg_status_text(e)}{tg.fault_text()}"
    m = compare_outputs(c, ref, got)
    if m:
        return "FAIL", m + (f"; attrs: {'; '.join(diffs)}" if diffs else "")
    if diffs:
        return "FAIL", "attrs: " + "; ".join(diffs)
    return "PASS", ""


run_one.tg_broken = False

if __name__ == "__main__":
    sys.exit(main())
