#!/usr/bin/env python3
"""Extract every fenced code block of README.md and run it, so the quick starts cannot rot.

usage: scripts/readme-check.py [--lib PATH] [--list] [MARKDOWN]

MARKDOWN defaults to README.md. --lib names the libtegragpu.so to test (default:
build/meson/libtegragpu.so, else target/release/libtegragpu.so). --list prints how each block
would be handled, without running anything. tests/readme.rs runs this script from
`cargo test` with the library cargo just built.

Every block runs on the emulated Orin (TEGRAGPU_DEVICE=emu), in a scratch copy of the
repository root: a temporary directory with links to include/, tests/, python/, scripts/ and
Cargo.toml, the library under test as build/meson/libtegragpu.so{,.0} and
target/release/libtegragpu.so, and the files the blocks name (a C or Python block whose first
line is a comment that starts with a file name, e.g. `/* quickstart.c: ...`, is also written
to that file there, for the sh blocks that build or run it).

How each block is handled, by its language:
  c          compiled with `cc -std=c99 -Wall -Wextra -Werror -pedantic` against include/ and
             the library, then run twice: in the scratch repository root, and in an empty
             directory (no tests/fixtures there, so the program must get its kernel another way,
             e.g. compile it at run time; skipped when libnvrtc is missing). When build/venv
             has libnvrtc, the empty-directory run has no VIRTUAL_ENV, CONDA_PREFIX,
             TEGRAGPU_NVRTC or TEGRAGPU_PYTHON_SITE: the library must find that venv itself.
             It must exit 0 and print its result.
  python     run the same two ways with a Python that has numpy ($TEGRAGPU_PYTHON, python3 on
             PATH, or build/venv/bin/python), python/ on PYTHONPATH, TEGRAGPU_LIBRARY set.
  sh, bash   a block whose commands are the entry points or build/install steps (run-main.sh,
             test-all.sh, .ci/run, meson, cargo, pip install) is checked, not run: `bash -n`,
             and every script it names exists (and is executable when run as a command).
             Any other block is run with `bash -e -o pipefail` in the scratch root, `python3`
             being the Python above. A block that mixes both kinds fails (split it).
  rust       a doctest: src/lib.rs includes README.md as documentation under `#[cfg(doctest)]`,
             so `cargo test --doc` (part of `cargo test`) compiles and runs every rust block
             against the crate on the emulated Orin. The checker verifies that the include is
             there (and fails a rust block in any other file, which nothing would run).
  text, none output samples: skipped, counted.
  anything else fails: a block the checker does not know how to handle cannot slip through.

Skips: no C compiler (unless TEGRAGPU_REQUIRE_CC=1), no Python with numpy (unless
TEGRAGPU_REQUIRE_NUMPY=1), no libnvrtc for the empty-directory run (unless
TEGRAGPU_REQUIRE_NVRTC is set).

Prints one line per block (and the output of what it ran) and a summary; exits 1 when a block
fails.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 300
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
# Links in the scratch repository root (python/tegragpu recognises a source tree by Cargo.toml
# and include/tegragpu.h).
LINKED = ["include", "tests", "python", "scripts", "Cargo.toml"]
# Commands of sh blocks that are checked, not run (entry points, builds, installs).
ENTRY_PATTERNS = [
    r"(^|[\s;&|(])(\./)?scripts/(run-main|test-all)\.sh\b",
    r"(^|[\s;&|(])(bash\s+)?\.ci/run\b",
    r"^meson\s",
    r"^cargo\s",
    r"^(python3?\s+-m\s+)?pip3?\s+install\b",
]
# Output that means "libnvrtc is not installed" (C: tg_status_str; Python: the exception class).
NVRTC_MISSING = re.compile(r"TG_ERROR_LIBRARY_MISSING|\bLibraryMissing(Error)?:")


def env_flag(name, truthy_if_set=False):
    v = os.environ.get(name, "")
    if truthy_if_set:
        return v not in ("", "0")
    return v == "1"


class Block:
    def __init__(self, line, lang, info, text):
        self.line = line          # 1-based line of the opening fence
        self.lang = lang
        self.info = info
        self.text = text
        self.filename = None      # file name the block declares in its first line, if any
        first = text.lstrip("\n").split("\n", 1)[0]
        m = re.match(r"^\s*(?:/\*|//|#)\s*([A-Za-z0-9_.-]+\.(?:c|py))\b", first)
        if m and lang in ("c", "python"):
            self.filename = m.group(1)


def parse_blocks(markdown):
    """Fenced blocks (``` or ~~~, any indentation up to 3 spaces, or inside list items)."""
    blocks = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang, rest = m.group(1), m.group(2), m.group(3), m.group(4)
        start = i
        body = []
        i += 1
        closed = False
        while i < len(lines):
            c = re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[i])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                closed = True
                break
            line = lines[i]
            if line.startswith(indent):
                line = line[len(indent):]
            body.append(line)
            i += 1
        i += 1
        b = Block(start + 1, lang.lower(), (lang + rest).strip(), "\n".join(body) + "\n")
        if not closed:
            b.lang = "<unclosed>"
        blocks.append(b)
    return blocks


def command_lines(script):
    """Non-empty, non-comment lines of a shell block (continuations joined)."""
    out = []
    cur = ""
    for raw in script.split("\n"):
        line = raw.rstrip()
        if cur:
            line = cur + " " + line.lstrip()
            cur = ""
        if line.endswith("\\"):
            cur = line[:-1]
            continue
        s = line.strip()
        if s and not s.startswith("#"):
            out.append(s)
    if cur.strip():
        out.append(cur.strip())
    return out


def strip_comment(cmd):
    """The command without a trailing `# comment` (outside quotes, roughly)."""
    q = None
    for k, ch in enumerate(cmd):
        if q:
            if ch == q:
                q = None
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (k == 0 or cmd[k - 1].isspace()):
            return cmd[:k].rstrip()
    return cmd


def is_entry(cmd):
    cmd = strip_comment(cmd)
    return any(re.search(p, cmd) for p in ENTRY_PATTERNS)


def classify(b):
    """(kind, detail) for a block; kind is one of c, python, entry, run, sample, unknown."""
    if b.lang in ("c",):
        return "c", ""
    if b.lang in ("python", "py", "python3"):
        return "python", ""
    if b.lang in ("sh", "bash", "shell"):
        cmds = command_lines(b.text)
        entry = [c for c in cmds if is_entry(c)]
        if not cmds:
            return "unknown", "empty shell block"
        if entry and len(entry) != len(cmds):
            other = [c for c in cmds if not is_entry(c)]
            return "unknown", ("mixes entry/build commands with commands to run (%s); split it"
                               % strip_comment(other[0]))
        return ("entry", "") if entry else ("run", "")
    if b.lang == "rust" or b.lang.startswith("rust,"):
        return "rust", ""
    if b.lang in ("", "text", "txt", "output"):
        return "sample", ""
    if b.lang == "<unclosed>":
        return "unknown", "fence is never closed"
    return "unknown", "no handler for language %r: add one to scripts/readme-check.py" % b.lang


# How src/lib.rs makes README.md's rust blocks doctests.
README_DOCTEST = 'include_str!("../README.md")'


class Runner:
    def __init__(self, lib, markdown=None):
        self.lib = os.path.abspath(lib)
        self.markdown = os.path.abspath(markdown or os.path.join(ROOT, "README.md"))
        self.tmp = tempfile.mkdtemp(prefix="tegragpu-readme-")
        self.repo = os.path.join(self.tmp, "repo")
        self.empty = os.path.join(self.tmp, "empty")
        self.bin = os.path.join(self.tmp, "bin")
        for d in (self.repo, self.empty, self.bin):
            os.makedirs(d)
        for d in LINKED:
            os.symlink(os.path.join(ROOT, d), os.path.join(self.repo, d))
        for d, names in (("build/meson", ["libtegragpu.so", "libtegragpu.so.0"]),
                         ("target/release", ["libtegragpu.so"])):
            os.makedirs(os.path.join(self.repo, d))
            for n in names:
                os.symlink(self.lib, os.path.join(self.repo, d, n))
        self.libdir = os.path.join(self.repo, "build", "meson")
        self.cc = shutil.which(os.environ.get("CC", "cc"))
        self.python = self.find_python()
        if self.python:
            # Wrappers, not links: a venv's python must be started by its own path.
            for n in ("python3", "python"):
                w = os.path.join(self.bin, n)
                with open(w, "w") as f:
                    f.write('#!/bin/sh\nexec "%s" "$@"\n' % self.python)
                os.chmod(w, 0o755)
        self.env = dict(os.environ)
        self.env.update({
            "TEGRAGPU_DEVICE": "emu",
            "PATH": self.bin + os.pathsep + os.environ.get("PATH", ""),
            "PYTHONDONTWRITEBYTECODE": "1",
        })
        self.env.pop("TEGRAGPU_LIBRARY", None)
        self.env.pop("PYTHONPATH", None)
        # The empty-directory run is a user's program run from anywhere. When the repository's
        # venv (scripts/env.sh) has libnvrtc, the library must find it on its own (it looks
        # beside itself: the links above resolve into the repository), with no venv activated
        # and no TEGRAGPU_NVRTC; otherwise the environment is kept (libnvrtc installed elsewhere).
        self.empty_unset = ()
        if glob.glob(os.path.join(
                ROOT, "build/venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12")):
            self.empty_unset = ("TEGRAGPU_NVRTC", "TEGRAGPU_PYTHON_SITE", "VIRTUAL_ENV",
                                "CONDA_PREFIX")

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    @staticmethod
    def find_python():
        cands = []
        if os.environ.get("TEGRAGPU_PYTHON"):
            cands.append(os.environ["TEGRAGPU_PYTHON"])
        for c in ("python3", os.path.join(ROOT, "build/venv/bin/python"), sys.executable):
            p = shutil.which(c) if os.sep not in c else (c if os.access(c, os.X_OK) else None)
            if p:
                cands.append(p)
        for p in cands:
            try:
                r = subprocess.run([p, "-c", "import numpy"], capture_output=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if r.returncode == 0:
                return os.path.abspath(p)
        return None

    def write_named(self, blocks):
        seen = {}
        for b in blocks:
            if b.filename:
                if b.filename in seen:
                    raise SystemExit("README blocks at lines %d and %d both name %s"
                                     % (seen[b.filename], b.line, b.filename))
                seen[b.filename] = b.line
                with open(os.path.join(self.repo, b.filename), "w") as f:
                    f.write(b.text)

    def run(self, argv, cwd, env=None):
        try:
            r = subprocess.run(argv, cwd=cwd, env=env or self.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
            return r.returncode, r.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            out = (e.output or b"").decode(errors="replace")
            return 124, out + "\n(timed out after %d s)" % TIMEOUT_S

    def program(self, b, argv):
        """Run a C or Python program in the scratch root and in an empty directory."""
        results = []
        skipped = ""
        rc, out = self.run(argv, self.repo)
        if rc != 0:
            return "fail", "exit %d in the repository root" % rc, out
        if not out.strip():
            return "fail", "prints nothing (a quick start must print its result)", out
        results.append(("repository root", out))
        rc, out2 = self.run(argv, self.empty, {k: v for k, v in self.env.items()
                                               if k not in self.empty_unset})
        if rc != 0 and NVRTC_MISSING.search(out2) \
                and not env_flag("TEGRAGPU_REQUIRE_NVRTC", truthy_if_set=True):
            results.append(("empty directory, skipped: no libnvrtc", out2))
            skipped = " (skipped there: no libnvrtc)"
        elif rc != 0:
            return "fail", "exit %d in an empty directory (no tests/fixtures)" % rc, \
                labelled(results + [("empty directory", out2)])
        else:
            results.append(("empty directory", out2))
        return "ok", "ran in the repository root and in an empty directory" + skipped, \
            labelled(results)

    def check_c(self, b):
        if not self.cc:
            if env_flag("TEGRAGPU_REQUIRE_CC"):
                return "fail", "no C compiler (cc) but TEGRAGPU_REQUIRE_CC=1", ""
            return "skip", "no C compiler (cc)", ""
        src = os.path.join(self.tmp, "block%d.c" % b.line)
        exe = os.path.join(self.tmp, "block%d" % b.line)
        with open(src, "w") as f:
            f.write(b.text)
        argv = [self.cc] + CFLAGS + ["-I", os.path.join(ROOT, "include"), src, "-o", exe,
                                     "-L", self.libdir, "-Wl,-rpath," + self.libdir, "-ltegragpu"]
        rc, out = self.run(argv, self.tmp)
        if rc != 0:
            return "fail", "does not compile: " + " ".join(argv[:len(CFLAGS) + 1]), out
        status, detail, out = self.program(b, [exe])
        return status, "compiled (cc %s); %s" % (" ".join(CFLAGS), detail), out

    def need_python(self):
        if self.python:
            return None
        if env_flag("TEGRAGPU_REQUIRE_NUMPY"):
            return ("fail", "no Python with numpy (set TEGRAGPU_PYTHON) but "
                    "TEGRAGPU_REQUIRE_NUMPY=1", "")
        return "skip", "no Python with numpy (set TEGRAGPU_PYTHON)", ""

    def check_python(self, b):
        missing = self.need_python()
        if missing:
            return missing
        src = os.path.join(self.tmp, "block%d.py" % b.line)
        with open(src, "w") as f:
            f.write(b.text)
        saved = self.env
        self.env = dict(saved, PYTHONPATH=os.path.join(self.repo, "python"),
                        TEGRAGPU_LIBRARY=self.lib)
        try:
            status, detail, out = self.program(b, [self.python, src])
        finally:
            self.env = saved
        return status, "%s; %s" % (os.path.basename(self.python), detail), out

    def check_entry(self, b):
        rc, out = self.run(["bash", "-n", "-c", b.text], self.tmp)
        if rc != 0:
            return "fail", "bash -n: syntax error", out
        named = []
        for cmd in command_lines(b.text):
            cmd = strip_comment(cmd)
            for m in re.finditer(r"(^|[\s;&|(])((?:\./)?(?:scripts|\.ci)/[\w./-]+)", cmd):
                path = m.group(2)
                full = os.path.join(ROOT, path[2:] if path.startswith("./") else path)
                if not os.path.isfile(full):
                    return "fail", "names %s, which does not exist" % path, ""
                before = cmd[:m.start(2)].strip()
                as_command = before == "" or before.endswith(("&&", "||", ";", "|", "("))
                if as_command and not os.access(full, os.X_OK):
                    return "fail", "runs %s, which is not executable" % path, ""
                named.append(path)
        what = ("scripts named exist: " + ", ".join(sorted(set(named)))) if named \
            else "names no scripts"
        return "ok", "checked, not run (entry/build commands): bash -n ok; " + what, ""

    def check_rust(self, b):
        readme = os.path.join(ROOT, "README.md")
        if self.markdown != readme:
            return "fail", ("rust blocks run as doctests of src/lib.rs, which includes README.md "
                            "only; nothing runs this one"), ""
        with open(os.path.join(ROOT, "src", "lib.rs")) as f:
            lib_rs = f.read()
        if README_DOCTEST not in lib_rs or "#[cfg(doctest)]" not in lib_rs:
            return "fail", ("src/lib.rs does not include README.md as doctests (%s under "
                            "#[cfg(doctest)]): nothing runs this block" % README_DOCTEST), ""
        return "ok", "a doctest of src/lib.rs: compiled and run by `cargo test --doc`", ""

    def check_run(self, b):
        if re.search(r"\bpython3?\b", b.text):
            missing = self.need_python()
            if missing:
                return missing
        script = os.path.join(self.tmp, "block%d.sh" % b.line)
        with open(script, "w") as f:
            f.write(b.text)
        rc, out = self.run(["bash", "-e", "-o", "pipefail", script], self.repo)
        if rc != 0:
            return "fail", "exit %d" % rc, out
        return "ok", "ran (bash -e) in the repository root", out


def labelled(results):
    parts = []
    for where, out in results:
        parts.append("[%s]\n%s" % (where, out.rstrip("\n")))
    return "\n".join(parts)


def default_lib():
    for p in ("build/meson/libtegragpu.so", "target/release/libtegragpu.so"):
        if os.path.exists(os.path.join(ROOT, p)):
            return os.path.join(ROOT, p)
    return None


def main(argv):
    lib = None
    listing = False
    path = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--lib":
            lib = args.pop(0)
        elif a.startswith("--lib="):
            lib = a.split("=", 1)[1]
        elif a == "--list":
            listing = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif path is None and not a.startswith("-"):
            path = a
        else:
            print("readme-check: unknown argument %r" % a, file=sys.stderr)
            return 2
    path = path or os.path.join(ROOT, "README.md")
    name = os.path.relpath(os.path.abspath(path), ROOT)
    if name.startswith(".."):
        name = path
    with open(path) as f:
        blocks = parse_blocks(f.read())

    if listing:
        for b in blocks:
            kind, detail = classify(b)
            print("%s:%d %-7s %-7s %s" % (name, b.line, b.lang or "-", kind,
                                          b.filename or detail))
        return 0

    lib = lib or default_lib()
    if not lib or not os.path.exists(lib):
        print("readme-check: no libtegragpu.so (build it, or pass --lib PATH)", file=sys.stderr)
        return 2
    print("readme-check: %s, %d blocks, library %s, TEGRAGPU_DEVICE=emu" % (name, len(blocks), lib))
    runner = Runner(lib, path)
    counts = {"ok": 0, "fail": 0, "skip": 0, "sample": 0}
    try:
        runner.write_named(blocks)
        for b in blocks:
            kind, detail = classify(b)
            out = ""
            if kind == "sample":
                status, detail = "sample", "output sample: skipped"
            elif kind == "unknown":
                status = "fail"
            else:
                status, detail, out = getattr(runner, "check_" + kind)(b)
            counts[status] += 1
            label = {"ok": "ok", "fail": "FAIL", "skip": "skip", "sample": "-"}[status]
            print("%s:%d %-7s %-4s %s%s" % (name, b.line, b.lang or "(none)", label,
                                          "[%s] " % b.filename if b.filename else "", detail))
            lines = out.rstrip("\n").split("\n") if out.strip() else []
            if status != "fail" and len(lines) > 12:
                lines = lines[:4] + ["... (%d lines)" % (len(lines) - 8)] + lines[-4:]
            for line in lines:
                print("    | " + line)
    finally:
        runner.close()
    print("readme-check: %d blocks: %d passed, %d failed, %d skipped, %d output samples"
          % (len(blocks), counts["ok"], counts["fail"], counts["skip"], counts["sample"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
