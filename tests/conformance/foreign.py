#!/usr/bin/env python3
"""Foreign-module sweep: every CUDA module found in other people's binaries (PyTorch, cuBLAS,
cuDNN, the CUDA toolkit's libraries, or any file given) is loaded through libcuda and through
libtegragpu in one process, and the two are compared: the load must succeed in libtegragpu
wherever it succeeds in libcuda, and every kernel libcuda lists must be found by name with the
same attributes (registers, static shared memory, local memory, max threads per block, max
dynamic shared memory after opting in, parameter offsets and sizes, occupancy of one block
size).

Usage (on a machine with an NVIDIA GPU and libcuda):

    PYTHONPATH=python TEGRAGPU_LIBRARY=target/release/libtegragpu.so \\
        python3 tests/conformance/foreign.py [--max-seconds 300] [PATH ...]

PATH: shared libraries or host objects (their `.nv_fatbin` section is split into its
fatbinaries, one per translation unit), fatbinaries, cubins, or folders searched for those.
Without PATH: torch's lib folder, the lib folders of pip's `nvidia` packages, and
/usr/local/cuda/lib64, where present.

Only fatbinaries holding a cubin the device can run are loaded (sm_XY with the device's major
version and a minor version not above it, or the arch-specific sm_XYa of exactly the device);
PTX-only ones would be JIT-compiled, which takes minutes for large libraries (`--ptx` loads them
too). Identical modules are loaded once.

One line per problem:
    FAIL <where>: libcuda loaded it, libtegragpu failed: <status>: <message>
    FAIL <where> <kernel>: libtegragpu has no such kernel: ...
    FAIL <where> <kernel> attrs: <field> cuda=<v> tg=<v>; ...
    REFUSED <where> [<kernel>]: <message>    (with -v) libtegragpu refused, with
                                             TG_ERROR_NOT_SUPPORTED, a module or kernel that
                                             libcuda runs (a feature docs/cuda-support.md lists
                                             as not supported)
    NOTE <where>: libcuda refused (<error>), libtegragpu loaded it
and a summary per input file and in total, with the refusals counted by reason. `--json FILE`
writes every module's outcome. Exit status 1 when anything FAILed, 2 when nothing could be
loaded.
"""

import argparse
import ctypes
import glob
import hashlib
import json
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FATBIN_MAGIC = 0xBA55ED50
ELF_MAGIC = b"\x7fELF"
ENTRY_PTX, ENTRY_ELF = 1, 2
FLAG_64BIT = 0x1
FLAG_ARCH_SPECIFIC = 0x10_0000  # sm_XYa
FLAG_FAMILY = 0x20_0000  # sm_XYf


class Container:
    """One fatbinary: its bytes and the (kind, arch, flags) of each entry."""

    def __init__(self, data, where):
        self.data = data
        self.where = where
        self.entries = entries_of(data)

    def runnable_cubin(self, sm):
        """True when the fatbinary holds a cubin the CUDA driver would pick for SM `sm`."""
        dev = sm[0] * 10 + sm[1]
        for kind, arch, flags in self.entries:
            if kind != ENTRY_ELF or not flags & FLAG_64BIT:
                continue
            if flags & FLAG_ARCH_SPECIFIC:
                if arch == dev:
                    return True
            elif arch // 10 == sm[0] and arch <= dev:
                return True
        return False

    def ptx(self, sm):
        dev = sm[0] * 10 + sm[1]
        return any(k == ENTRY_PTX and a <= dev for k, a, _ in self.entries)


def entries_of(data):
    """(kind, arch, flags) of every entry of one fatbinary container; ValueError if malformed."""
    if len(data) < 16:
        raise ValueError("fatbinary shorter than its 16-byte header")
    magic, _version, hsize, total = struct.unpack_from("<IHHQ", data, 0)
    if magic != FATBIN_MAGIC:
        raise ValueError(f"bad fatbinary magic {magic:#x}")
    out = []
    pos, end = hsize, hsize + total
    if end > len(data):
        raise ValueError(f"fatbinary claims {total} bytes of entries, {len(data) - hsize} present")
    while pos + 64 <= end:
        kind, _, ehsize, psize = struct.unpack_from("<HHIQ", data, pos)
        arch, = struct.unpack_from("<I", data, pos + 28)
        flags, = struct.unpack_from("<Q", data, pos + 40)
        if ehsize < 64 or ehsize + psize > end - pos:
            raise ValueError(f"entry at {pos}: header {ehsize} + payload {psize} past the end")
        out.append((kind, arch, flags))
        pos += ehsize + psize
    return out


def split_containers(section, where):
    """The fatbinaries of a `.nv_fatbin` section (back to back, zero padding between)."""
    out, pos = [], 0
    while pos < len(section):
        if section[pos] == 0:
            pos += 1
            continue
        if pos + 16 > len(section):
            raise ValueError(f"{where}: {len(section) - pos} stray bytes at {pos}")
        _, _, hsize, total = struct.unpack_from("<IHHQ", section, pos)
        size = hsize + total
        out.append(Container(bytes(section[pos:pos + size]), f"{where}#{len(out)}"))
        pos += size
    return out


def elf_section(data, name):
    """Bytes of section `name` of a 64-bit little-endian ELF file, or None."""
    if data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(data):
        return None

    def sh(i):
        b = shoff + i * shentsize
        nm, = struct.unpack_from("<I", data, b)
        typ, = struct.unpack_from("<I", data, b + 4)
        off, size = struct.unpack_from("<QQ", data, b + 0x18)
        return nm, typ, off, size

    _, _, stroff, strsize = sh(shstrndx)
    want = name.encode()
    for i in range(shnum):
        nm, typ, off, size = sh(i)
        end = data.find(b"\0", stroff + nm, stroff + strsize)
        if data[stroff + nm:end] == want and typ != 8:  # not SHT_NOBITS
            return memoryview(data)[off:off + size]
    return None


def modules_in_file(path):
    """([Container or ('cubin', bytes, where)], note)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] == struct.pack("<I", FATBIN_MAGIC):
        return split_containers(data, os.path.basename(path)), None
    if data[:4] == ELF_MAGIC:
        if len(data) > 0x12 and struct.unpack_from("<H", data, 0x12)[0] == 190:  # EM_CUDA
            return [("cubin", data, os.path.basename(path))], None
        sec = elf_section(data, ".nv_fatbin")
        if sec is None:
            return [], "no .nv_fatbin section"
        return split_containers(sec, os.path.basename(path)), None
    return [], "not an ELF file or fatbinary"


def reason_of(text):
    """A refusal message without the names and offsets that differ from module to module."""
    for key, reason in (("texture or surface", "texture or surface objects"),
                        (".nv.prototype", "calls between device-linked -rdc files"),
                        ("malloc", "device-side malloc/free"),
                        ("cluster", "thread-block clusters"),
                        ("dynamic parallelism", "dynamic parallelism")):
        if key in text:
            return reason
    return one_line_reason(text)


def one_line_reason(text):
    return text.split(":")[0] + ": " + text.split(":")[-1].strip()[:120]


def default_paths():
    paths = []
    try:
        import importlib.util
        spec = importlib.util.find_spec("torch")
        if spec and spec.origin:
            paths.append(os.path.join(os.path.dirname(spec.origin), "lib"))
        spec = importlib.util.find_spec("nvidia")
        if spec and spec.submodule_search_locations:
            for root in spec.submodule_search_locations:
                paths += sorted(glob.glob(os.path.join(root, "*", "lib")))
    except Exception:
        pass
    if os.path.isdir("/usr/local/cuda/lib64"):
        paths.append("/usr/local/cuda/lib64")
    return [p for p in paths if os.path.isdir(p)]


def expand(paths):
    files, seen = [], set()
    for p in paths:
        if os.path.isdir(p):
            cand = sorted(glob.glob(os.path.join(p, "*.so*")) + glob.glob(os.path.join(p, "*.cubin"))
                          + glob.glob(os.path.join(p, "*.fatbin")))
        else:
            cand = [p]
        for c in cand:
            r = os.path.realpath(c)
            if os.path.isfile(r) and r not in seen:
                seen.add(r)
                files.append(c)
    return files


class Stats:
    def __init__(self):
        self.modules = self.skipped_noarch = self.dup = self.both_ok = 0
        self.tg_refused = self.cuda_refused = self.both_refused = 0
        self.kernels = self.kernel_fail = self.kernel_refused = 0

    def add(self, o):
        for k, v in vars(o).items():
            setattr(self, k, getattr(self, k) + v)

    def line(self):
        return (f"{self.modules} modules loaded by both or compared ({self.dup} duplicates, "
                f"{self.skipped_noarch} without a cubin for this GPU skipped): {self.both_ok} loaded "
                f"by both, {self.tg_refused} refused only by libtegragpu, {self.cuda_refused} "
                f"refused only by libcuda, {self.both_refused} refused by both; {self.kernels} "
                f"kernels compared, {self.kernel_fail} with differences, {self.kernel_refused} "
                f"refused as not supported")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--device", default=os.environ.get("TEGRAGPU_DEVICE", "rm"))
    ap.add_argument("--max-seconds", type=float, default=300.0,
                    help="stop starting new modules after this long (default 300)")
    ap.add_argument("--per-file", type=int, default=0, help="at most this many modules per file")
    ap.add_argument("--ptx", action="store_true", help="also load PTX-only fatbinaries (JIT)")
    ap.add_argument("--json", help="write every module's outcome here")
    ap.add_argument("--block", type=int, default=128, help="block size of the occupancy check")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every REFUSED line")
    args = ap.parse_args(argv)

    from cuda_side import Cuda, CudaError, cuda_attributes
    from harness import one_line
    from tg_side import compare_attrs
    import tegragpu

    def tg_attrs(k, block):
        """libtegragpu's side of tg_side.compare_attrs."""
        a = k.attributes
        out = {"registers": a.registers, "static_shared_bytes": a.static_shared_bytes,
               "local_bytes_per_thread": a.local_bytes_per_thread,
               "max_threads_per_block": a.max_threads_per_block,
               "max_dynamic_shared_bytes": a.max_dynamic_shared_bytes,
               "num_params": a.num_params, "param_bytes": a.param_bytes,
               "params": [list(p) for p in k.params]}
        try:
            out["occupancy"] = k.max_active_blocks(block, 0)
        except tegragpu.Error as e:
            out["occupancy"] = f"error {e.status.name}"
        return out

    paths = args.paths or default_paths()
    files = expand(paths)
    if not files:
        print("no input files (give paths, or install torch / the CUDA toolkit)")
        return 2
    cu = Cuda()
    dev = tegragpu.Device(args.device)
    print(f"# libcuda {cu.driver_version} on {cu.name} (sm_{cu.sm[0]}{cu.sm[1]}); libtegragpu "
          f"{tegragpu.version()} from {tegragpu.library_path()}, device {args.device!r}")
    lib = cu.lib
    have_enum = hasattr(lib, "cuModuleEnumerateFunctions")
    if not have_enum:
        print("# libcuda lacks cuModuleEnumerateFunctions (CUDA < 12.4): kernels are not compared")
    lib.cuFuncGetName.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p]
    t0 = time.monotonic()
    total, seen, records, failed = Stats(), set(), [], False
    reasons = {}
    out_of_time = False

    for path in files:
        if out_of_time:
            break
        try:
            mods, note = modules_in_file(path)
        except (ValueError, struct.error) as e:
            print(f"FAIL {os.path.basename(path)}: the sweep could not split it: {e}")
            failed = True
            continue
        if note:
            continue
        st = Stats()
        done = 0
        for m in mods:
            if time.monotonic() - t0 > args.max_seconds:
                out_of_time = True
                break
            if args.per_file and done >= args.per_file:
                break
            if isinstance(m, tuple):
                data, where = m[1], m[2]
            else:
                data, where = m.data, m.where
                if not m.runnable_cubin(cu.sm) and not (args.ptx and m.ptx(cu.sm)):
                    st.skipped_noarch += 1
                    continue
            h = hashlib.sha1(data).digest()
            if h in seen:
                st.dup += 1
                continue
            seen.add(h)
            done += 1
            st.modules += 1
            rec = {"where": where, "bytes": len(data)}
            buf = ctypes.create_string_buffer(data, len(data))
            cmod = ctypes.c_void_p()
            r = lib.cuModuleLoadData(ctypes.byref(cmod), buf)
            rec["cuda"] = "ok" if r == 0 else cu.err(r)[0]
            try:
                tmod = dev.load_module(data)
                rec["tg"] = "ok"
            except tegragpu.Error as e:
                tmod = None
                rec["tg"] = f"{e.status.name}: {one_line(e.message, 300)}"
            if r != 0 and tmod is None:
                st.both_refused += 1
            elif r != 0:
                st.cuda_refused += 1
                print(f"NOTE {where}: libcuda refused ({rec['cuda']}), libtegragpu loaded it")
            elif tmod is None:
                st.tg_refused += 1
                if rec["tg"].startswith("NOT_SUPPORTED"):
                    reasons[reason_of(rec["tg"])] = reasons.get(reason_of(rec["tg"]), 0) + 1
                    if args.verbose:
                        print(f"REFUSED {where}: {rec['tg']}")
                else:
                    failed = True
                    print(f"FAIL {where}: libcuda loaded it, libtegragpu failed: {rec['tg']}")
            else:
                st.both_ok += 1
                if have_enum:
                    n = ctypes.c_uint()
                    cu.call("cuModuleGetFunctionCount", ctypes.byref(n), cmod)
                    fns = (ctypes.c_void_p * n.value)()
                    cu.call("cuModuleEnumerateFunctions", fns, n, cmod)
                    rec["kernels"] = n.value
                    bad = []
                    for f in fns:
                        nm = ctypes.c_char_p()
                        cu.call("cuFuncGetName", ctypes.byref(nm), ctypes.c_void_p(f))
                        name = nm.value.decode()
                        st.kernels += 1
                        block = min(args.block, cu.func_attr(ctypes.c_void_p(f), 0))
                        try:
                            ca = cuda_attributes(cu, ctypes.c_void_p(f), {"block": (block, 1, 1)}, 0)
                        except CudaError as e:
                            print(f"# {where} {name}: libcuda attributes: {e}")
                            continue
                        try:
                            k = tmod.kernel(name)
                        except tegragpu.Error as e:
                            text = f"{e.status.name}: {one_line(e.message, 300)}"
                            if e.status == tegragpu.Status.NOT_SUPPORTED:
                                st.kernel_refused += 1
                                reasons[reason_of(text)] = reasons.get(reason_of(text), 0) + 1
                                if args.verbose:
                                    print(f"REFUSED {where} {name}: {text}")
                                continue
                            st.kernel_fail += 1
                            failed = True
                            bad.append(name)
                            print(f"FAIL {where} {name}: libtegragpu has no such kernel: {text}")
                            continue
                        ta = tg_attrs(k, block)
                        k.close()
                        diffs = compare_attrs(ca, ta)
                        if diffs:
                            st.kernel_fail += 1
                            failed = True
                            bad.append(name)
                            print(f"FAIL {where} {name} attrs: {'; '.join(diffs)} (registers "
                                  f"{ca['num_regs']}, static shared {ca['shared_size_bytes']}, "
                                  f"max threads {ca['max_threads_per_block']})")
                    rec["kernel_failures"] = bad
            if tmod is not None:
                tmod.close()
            if r == 0:
                lib.cuModuleUnload(cmod)
            records.append(rec)
        if st.modules or st.skipped_noarch:
            print(f"# {os.path.basename(path)}: {st.line()}")
        total.add(st)
    el = time.monotonic() - t0
    print(f"# total after {el:.0f} s{' (time limit reached)' if out_of_time else ''}: {total.line()}")
    for r, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"# refused {n}x: {r}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": cu.name, "sm": list(cu.sm), "records": records,
                       "out_of_time": out_of_time}, f, indent=1)
    if total.modules == 0:
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
