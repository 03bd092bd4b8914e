#!/usr/bin/env python3
"""Meson build step: build libtegragpu and its tools with cargo, put them in the meson build dir.

usage: meson-cargo-build.py --cargo CARGO --manifest-dir DIR --target-dir DIR --version X.Y.Z
           --so OUT --so-major OUT --so-full OUT --static OUT [--bin NAME=OUT ...]
           [--debuginfo split|strip|keep] [--debug OUT] [--objcopy PROG] [--strip PROG]
           [--rust-target TRIPLE]

Runs one `cargo build --release --lib --bin NAME...` (at build time, never at configure time)
with CARGO_TARGET_DIR set, after checking that Cargo.toml's package version is X.Y.Z (meson's
project version). Then, from target/release (target/TRIPLE/release with --rust-target, which is
passed to cargo as --target: a cross build):

  --so, --so-major  libtegragpu.so as built (soname libtegragpu.so.MAJOR, set by build.rs, debug
                    info kept): what the C examples, the tests and TEGRAGPU_LIBRARY use in the
                    build tree. Not installed.
  --so-full         libtegragpu.so.X.Y.Z, the installed shared library
  --static          libtegragpu.a, the installed static library
  --bin NAME=OUT    the installed tools
  --debug           libtegragpu.so.X.Y.Z.debug (--debuginfo split only)

--debuginfo (what happens to the installed files):
  split  (default) the shared library's debug info goes to the --debug file
         (objcopy --only-keep-debug), the library is stripped (strip --strip-unneeded; the
         dynamic symbols stay) and points at that file (objcopy --add-gnu-debuglink);
         the static library and the tools lose their debug info (strip --strip-debug:
         the symbol tables stay, so static linking and backtraces still work)
  strip  as split, but the shared library's debug info is dropped, not kept
  keep   plain copies, debug info included
The static library also loses the LLVM bitcode that Rust's std objects embed (.llvmbc, .llvmcmd:
only rustc's LTO reads it; C linkers discard it).

Files whose contents did not change are left alone, time stamp included, so an unchanged
library does not relink the examples.
"""
import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile


def copy_if_changed(src, dst, mode=None):
    # Unchanged: leave the file and its time stamp alone. The rule has restat = 1 (meson's custom
    # commands), so ninja then does not relink what links against it.
    if os.path.exists(dst) and filecmp.cmp(src, dst, shallow=False):
        return
    tmp = dst + ".tmp"
    shutil.copy2(src, tmp)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, dst)


def cargo_package_version(manifest):
    """The [package] version of Cargo.toml."""
    with open(manifest, "rb") as f:
        data = f.read()
    try:
        import tomllib  # Python >= 3.11
        return tomllib.loads(data.decode()).get("package", {}).get("version")
    except ImportError:
        pass
    section = None
    for line in data.decode().splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^\[([^\]]+)\]$", line)
        if m:
            section = m.group(1).strip()
            continue
        m = re.match(r'^version\s*=\s*"([^"]*)"$', line)
        if m and section == "package":
            return m.group(1)
    return None


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout)
        sys.exit("meson-cargo-build: `%s` failed (exit %d)" % (" ".join(cmd), p.returncode))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cargo", required=True)
    ap.add_argument("--manifest-dir", required=True)
    ap.add_argument("--target-dir", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--so", required=True)
    ap.add_argument("--so-major", required=True)
    ap.add_argument("--so-full", required=True)
    ap.add_argument("--static", required=True)
    ap.add_argument("--bin", action="append", default=[], metavar="NAME=OUT")
    ap.add_argument("--debuginfo", choices=["split", "strip", "keep"], default="split")
    ap.add_argument("--debug")
    ap.add_argument("--objcopy")
    ap.add_argument("--strip")
    ap.add_argument("--rust-target")
    a = ap.parse_args()
    if a.debuginfo == "split" and not (a.debug and a.objcopy and a.strip):
        ap.error("--debuginfo split needs --debug, --objcopy and --strip")
    if a.debuginfo == "strip" and not a.strip:
        ap.error("--debuginfo strip needs --strip")
    bins = []
    for b in a.bin:
        name, sep, out = b.partition("=")
        if not sep or not name or not out:
            ap.error("--bin takes NAME=OUT, not %r" % b)
        bins.append((name, out))

    manifest = os.path.join(a.manifest_dir, "Cargo.toml")
    have = cargo_package_version(manifest)
    if have != a.version:
        sys.exit("meson-cargo-build: version mismatch: meson.build project() says %s, %s says %s;"
                 " make them equal" % (a.version, manifest, have))

    cmd = [a.cargo, "build", "--release", "--lib"]
    for name, _ in bins:
        cmd += ["--bin", name]
    if a.rust_target:
        cmd += ["--target", a.rust_target]
    cmd += ["--manifest-path", manifest]
    env = dict(os.environ, CARGO_TARGET_DIR=a.target_dir)
    print("+ CARGO_TARGET_DIR=%s %s" % (a.target_dir, " ".join(cmd)), flush=True)
    rc = subprocess.call(cmd, env=env)
    if rc != 0:
        sys.exit(rc)

    release = os.path.join(a.target_dir, *([a.rust_target] if a.rust_target else []), "release")
    so = os.path.join(release, "libtegragpu.so")
    static = os.path.join(release, "libtegragpu.a")
    # The build tree's copies, for the examples and tests: as built.
    copy_if_changed(so, a.so)
    copy_if_changed(so, a.so_major)

    if a.debuginfo == "keep":
        copy_if_changed(so, a.so_full)
        copy_if_changed(static, a.static, 0o644)
        for name, out in bins:
            copy_if_changed(os.path.join(release, name), out)
        return

    outdir = os.path.dirname(os.path.abspath(a.so_full))
    with tempfile.TemporaryDirectory(prefix=".strip-", dir=outdir) as tmp:
        so_full = os.path.join(tmp, os.path.basename(a.so_full))
        if a.debuginfo == "split":
            # The debuglink records the debug file's base name: give it its installed name.
            dbg = os.path.join(tmp, os.path.basename(a.debug))
            run([a.objcopy, "--only-keep-debug", so, dbg])
            run([a.strip, "--strip-unneeded", "-o", so_full, so])
            run([a.objcopy, "--add-gnu-debuglink=" + dbg, so_full])
            copy_if_changed(dbg, a.debug, 0o644)
        else:
            run([a.strip, "--strip-unneeded", "-o", so_full, so])
        copy_if_changed(so_full, a.so_full)

        st = os.path.join(tmp, "libtegragpu.a")
        run([a.strip, "--strip-debug", "--remove-section=.llvmbc", "--remove-section=.llvmcmd",
             "-o", st, static])
        copy_if_changed(st, a.static, 0o644)

        for name, out in bins:
            b = os.path.join(tmp, name)
            run([a.strip, "--strip-debug", "-o", b, os.path.join(release, name)])
            copy_if_changed(b, out)


if __name__ == "__main__":
    main()
