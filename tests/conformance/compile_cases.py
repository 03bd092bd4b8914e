"""Compilation of the conformance cases (run.py, step 1): nvcc (and nvlink for relocatable
device code) builds one final cubin per case and architecture, in parallel, cached by command
line and source times."""

import json
import os
import re
import shutil
import struct
import subprocess
import time

import corpus
from harness import say

HERE = os.path.dirname(os.path.abspath(__file__))


def find_nvcc(explicit):
    for p in (explicit, os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc", shutil.which("nvcc")):
        if p and os.path.exists(p):
            return p
    return None


def is_rdc(c):
    return len(c["src"]) > 1 or bool(c["link"]) or "-rdc=true" in corpus.nvcc_flags(c)


def case_arch(c, target, device_arch=None):
    """The architecture a case is built for when the target is sm_XY, or None when the case
    does not build for it."""
    if target != device_arch and not c["fixture_arch"]:
        return None
    sm = int(target[3:])
    if c["min_sm"] > sm:
        return None
    if c["arch"]:
        return c["arch"] if int(re.sub(r"\D", "", c["arch"])) <= sm and sm // 10 == int(c["arch"][3]) else None
    return target


def compile_commands(c, arch, nvcc, workdir, out_path):
    """List of argv lists that build out_path."""
    num = arch[3:]
    gencode = f"-gencode=arch=compute_{num},code=sm_{num}"
    srcs = [os.path.join(HERE, "kernels", s) for s in c["src"]]
    flags = ["-std=c++17"] + [f for f in corpus.nvcc_flags(c) if f != "-rdc=true"]
    if not is_rdc(c):
        return [[nvcc, "-cubin", gencode] + flags + ["-o", out_path, srcs[0]]]
    cmds, objs = [], []
    for s in srcs:
        o = os.path.join(workdir, f"{c['id']}.{arch}.{os.path.basename(s)}.rdc.cubin")
        cmds.append([nvcc, "-cubin", "-rdc=true", gencode] + flags + ["-o", o, s])
        objs.append(o)
    libs = [f"-l{lib}" for lib in c["link"]]
    cudadir = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    libdirs = [f"-L{d}" for d in (os.path.join(cudadir, "lib64"),
                                  os.path.join(cudadir, "targets", "x86_64-linux", "lib"),
                                  os.path.join(cudadir, "targets", "sbsa-linux", "lib")) if os.path.isdir(d)]
    # Device link to a final (ET_EXEC) cubin. nvlink is what nvcc -dlink runs; the nvcc form is
    # the fallback (see compile_one).
    nvlink = os.path.join(os.path.dirname(nvcc), "nvlink")
    cmds.append(("link", [[nvlink, f"-arch=sm_{num}"] + libdirs + ["-o", out_path] + objs + libs,
                          [nvcc, "-dlink", "-cubin", gencode] + libdirs + ["-o", out_path] + objs + libs]))
    return cmds


def elf_type(path):
    try:
        with open(path, "rb") as f:
            h = f.read(18)
        if h[:4] != b"\x7fELF":
            return None
        return struct.unpack_from("<H", h, 16)[0]
    except OSError:
        return None


def compile_one(job):
    """job = (case id, arch, cmds, out_path, cmdfile, srcs). Returns (id, arch, ok, message);
    never raises."""
    try:
        return _compile_one(job)
    except Exception as e:
        return job[0], job[1], False, f"compile error: {e!r}"


def _compile_one(job):
    cid, arch, cmds, out_path, cmdfile, srcs = job
    cmdtext = json.dumps(cmds)
    try:
        if (os.path.exists(out_path) and os.path.exists(cmdfile) and open(cmdfile).read() == cmdtext
                and os.path.getmtime(out_path) >= max(os.path.getmtime(s) for s in srcs)
                and elf_type(out_path) == 2):
            return cid, arch, True, "cached"
    except OSError:
        pass
    log = []
    for cmd in cmds:
        if isinstance(cmd, tuple):  # alternatives for the device link
            errs = []
            for alt in cmd[1]:
                r = subprocess.run(alt, capture_output=True, text=True)
                log.append(" ".join(alt) + "\n" + r.stdout + r.stderr)
                if r.returncode == 0 and elf_type(out_path) == 2:
                    break
                errs.append(f"{os.path.basename(alt[0])}: rc={r.returncode} e_type={elf_type(out_path)} "
                            f"{(r.stdout + r.stderr).strip()[:400]}")
            else:
                return cid, arch, False, "device link failed: " + " | ".join(errs)
            continue
        r = subprocess.run(cmd, capture_output=True, text=True)
        log.append(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        if r.returncode != 0:
            return cid, arch, False, f"{' '.join(cmd)}: {(r.stdout + r.stderr).strip()}"
    if elf_type(out_path) != 2:
        return cid, arch, False, f"{out_path} is not a final (ET_EXEC) cubin (e_type {elf_type(out_path)})"
    with open(cmdfile, "w") as f:
        f.write(cmdtext)
    with open(out_path + ".log", "w") as f:
        f.write("\n".join(log))
    return cid, arch, True, "built"


def compile_all(cases, targets, nvcc, outdir, jobs):
    """{(case id, target): (ok, path or message, arch)}; targets[0] is the device's
    architecture, the others are fixture-only architectures."""
    from multiprocessing.pool import ThreadPool
    work = []
    result = {}
    for c in cases:
        for t in targets:
            arch = case_arch(c, t, targets[0])
            if arch is None:
                continue
            d = os.path.join(outdir, t)
            os.makedirs(d, exist_ok=True)
            out_path = os.path.join(d, f"{c['id']}.{arch}.cubin")
            cmds = compile_commands(c, arch, nvcc, d, out_path)
            srcs = [os.path.join(HERE, "kernels", s) for s in c["src"]]
            work.append((c["id"], t, cmds, out_path, out_path + ".cmd", srcs))
            result[(c["id"], t)] = (False, "not built", arch)
    t0 = time.time()
    with ThreadPool(max(1, jobs)) as pool:
        for cid, t, ok, msg in pool.imap_unordered(compile_one, work):
            arch = result[(cid, t)][2]
            path = os.path.join(outdir, t, f"{cid}.{arch}.cubin")
            result[(cid, t)] = (ok, path if ok else msg, arch)
    built = sum(1 for v in result.values() if v[0])
    say(f"# compiled {built}/{len(result)} cubins for {', '.join(targets)} in {time.time() - t0:.1f} s "
        f"({jobs} jobs) into {outdir}")
    return result
