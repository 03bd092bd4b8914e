#!/usr/bin/env python3
"""Meson build step: build libtegragpu with cargo and copy the artifacts into the meson build dir.

usage: meson-cargo-build.py CARGO MANIFEST_DIR CARGO_TARGET_DIR OUT_SO OUT_SO_MAJOR OUT_A

Runs `cargo build --release --lib` (at build time, never at configure time) with
CARGO_TARGET_DIR set, then copies target/release/libtegragpu.so (soname libtegragpu.so.0, set by
build.rs) to OUT_SO and OUT_SO_MAJOR, and libtegragpu.a to OUT_A. Files whose contents did not
change are left alone, so an unchanged library does not relink the examples.
"""
import filecmp
import os
import shutil
import subprocess
import sys


def copy_if_changed(src, dst):
    if os.path.exists(dst) and filecmp.cmp(src, dst, shallow=False):
        os.utime(dst)
        return
    tmp = dst + ".tmp"
    shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    cargo, manifest_dir, target_dir, out_so, out_so_major, out_a = sys.argv[1:]
    env = dict(os.environ, CARGO_TARGET_DIR=target_dir)
    cmd = [cargo, "build", "--release", "--lib", "--manifest-path",
           os.path.join(manifest_dir, "Cargo.toml")]
    print("+ CARGO_TARGET_DIR=%s %s" % (target_dir, " ".join(cmd)), flush=True)
    rc = subprocess.call(cmd, env=env)
    if rc != 0:
        sys.exit(rc)
    release = os.path.join(target_dir, "release")
    copy_if_changed(os.path.join(release, "libtegragpu.so"), out_so)
    copy_if_changed(os.path.join(release, "libtegragpu.so"), out_so_major)
    copy_if_changed(os.path.join(release, "libtegragpu.a"), out_a)


if __name__ == "__main__":
    main()
