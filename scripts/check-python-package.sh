#!/usr/bin/env bash
# Check that the Python package installs and works from a clean virtual environment:
#   1. a fresh venv in a temporary directory (no system site-packages);
#   2. pip install ./python (+ pytest): numpy must come in as a declared dependency;
#   3. import tegragpu from outside the tree against the library that TEGRAGPU_LIBRARY names
#      (default: build/meson/libtegragpu.so, else target/release/libtegragpu.so), check that
#      every module of python/tegragpu was installed, and run a copy on the emulated Orin;
#   4. pytest python/tests with that venv's interpreter, testing the installed package
#      (TEGRAGPU_TEST_INSTALLED=1 keeps conftest.py from importing the source tree);
#   5. a wheel with the library bundled (TEGRAGPU_BUNDLE_LIBRARY), installed into the venv and
#      imported with TEGRAGPU_LIBRARY unset: the copy inside the package must be found.
# Needs the network for PyPI (numpy, pytest, setuptools for the isolated build). Offline: set
# TEGRAGPU_WHEELHOUSE to a directory of wheels made with
#   pip download -d wheelhouse numpy pytest setuptools wheel
# Environment: PYTHON (default python3) makes the venv; TEGRAGPU_LIBRARY as above.
# The last line is "check-python-package: OK" or "check-python-package: FAILED (<step>)".
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"

fail() {
  echo "check-python-package: FAILED ($*)"
  exit 1
}
step() { printf '\n--- %s\n' "$*"; }

LIB="${TEGRAGPU_LIBRARY:-}"
if [ -z "$LIB" ]; then
  for c in build/meson/libtegragpu.so target/release/libtegragpu.so; do
    if [ -f "$c" ]; then LIB="$ROOT/$c"; break; fi
  done
fi
[ -n "$LIB" ] && [ -f "$LIB" ] || fail "no library: build it (meson compile -C build/meson, or cargo build --release) or set TEGRAGPU_LIBRARY"
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/tegragpu-pkg.XXXXXX")" || fail "mktemp"
trap 'rm -rf "$TMP"' EXIT
VENV="$TMP/venv"
VPY="$VENV/bin/python"

step "fresh venv ($PYTHON -m venv, no system site-packages) in $VENV"
"$PYTHON" -m venv "$VENV" || fail "python -m venv (Debian/Ubuntu: apt-get install python3-venv)"
"$VPY" -c 'import sys; assert sys.prefix != sys.base_prefix' || fail "not a venv"
if "$VPY" -c 'import numpy' 2>/dev/null; then fail "numpy importable before the install: not a clean venv"; fi

# A copy of python/ without in-tree build leftovers (pip builds in the source directory).
mkdir -p "$TMP/src"
cp -r python/pyproject.toml python/setup.py python/README.md python/LICENSE-MIT python/LICENSE-APACHE python/tegragpu "$TMP/src/" || fail "copy python/"
rm -rf "$TMP/src/tegragpu/_lib" "$TMP/src/tegragpu/__pycache__"

PIP=("$VPY" -m pip --disable-pip-version-check)
if [ -n "${TEGRAGPU_WHEELHOUSE:-}" ]; then
  step "offline install from $TEGRAGPU_WHEELHOUSE"
  PIP_FROM=(--no-index --find-links "$TEGRAGPU_WHEELHOUSE")
  "${PIP[@]}" install -q "${PIP_FROM[@]}" setuptools wheel || fail "pip install setuptools wheel (offline)"
  BUILD=(--no-build-isolation)
else
  PIP_FROM=()
  BUILD=()
fi

step "pip install ./python pytest"
"${PIP[@]}" install -q "${PIP_FROM[@]+"${PIP_FROM[@]}"}" "${BUILD[@]+"${BUILD[@]}"}" "$TMP/src" pytest \
  || fail "pip install ./python (no network? set TEGRAGPU_WHEELHOUSE, see the top of this script)"
"${PIP[@]}" show tegragpu | sed -n 's/^\(Name\|Version\|Requires\|Location\): /  \1: /p'
"$VPY" -c 'import numpy; print("  numpy", numpy.__version__, "(installed as a dependency)")' \
  || fail "numpy was not installed as a dependency"

step "import tegragpu (TEGRAGPU_LIBRARY=$LIB) outside the tree"
(cd "$TMP" && TEGRAGPU_LIBRARY="$LIB" "$VPY" - "$ROOT" <<'PYEOF'
import os, sys
import numpy as np
import tegragpu as tg
root = sys.argv[1]
assert not os.path.abspath(tg.__file__).startswith(os.path.join(root, "python") + os.sep), tg.__file__
assert tg.__file__.startswith(sys.prefix), tg.__file__
assert tg.library_source() == "TEGRAGPU_LIBRARY", tg.library_source()
# Every module of the source package is installed (pyproject.toml lists each package directory).
def modules(pkg):
    return {os.path.relpath(os.path.join(d, f), pkg) for d, _, fs in os.walk(pkg)
            for f in fs if f.endswith(".py")}
missing = modules(os.path.join(root, "python", "tegragpu")) - modules(os.path.dirname(tg.__file__))
assert not missing, f"not installed: {sorted(missing)}"
with tg.Device("emu") as dev, dev.alloc(1 << 16) as a, dev.alloc(1 << 16) as b, \
        dev.create_queue(tg.QueueKind.COPY) as q:
    a.numpy(np.uint32)[:] = np.arange(1 << 14)
    with q.timed() as t:
        q.copy(b, 0, a, 0, 1 << 16)
    assert (b.numpy(np.uint32) == np.arange(1 << 14)).all()
print(f"  tegragpu {tg.__version__} from {os.path.dirname(tg.__file__)}; library {tg.library_path()} "
      f"({'.'.join(map(str, tg.version()))}); copy took {t.elapsed_ns} ns of GPU time")
PYEOF
) || fail "import tegragpu"

step "pytest python/tests (installed package)"
# The clean venv has no tinygrad: its tests skip here (they run in stage 3 proper).
TEGRAGPU_REQUIRE_TINYGRAD=0 TEGRAGPU_TEST_INSTALLED=1 TEGRAGPU_LIBRARY="$LIB" "$VPY" -m pytest -q -rs -p no:cacheprovider python/tests \
  || fail "pytest"

step "wheel with the library bundled (TEGRAGPU_BUNDLE_LIBRARY=$LIB)"
TEGRAGPU_BUNDLE_LIBRARY="$LIB" "${PIP[@]}" wheel -q --no-deps "${PIP_FROM[@]+"${PIP_FROM[@]}"}" \
  "${BUILD[@]+"${BUILD[@]}"}" -w "$TMP/dist" "$TMP/src" || fail "pip wheel with TEGRAGPU_BUNDLE_LIBRARY"
WHEEL="$(ls "$TMP"/dist/tegragpu-*.whl 2>/dev/null | head -n1)"
[ -n "$WHEEL" ] || fail "no wheel built"
echo "  $(basename "$WHEEL")"
case "$(basename "$WHEEL")" in *-none-any.whl) fail "a wheel with a bundled library must not be tagged any" ;; esac
"${PIP[@]}" install -q --no-deps --force-reinstall "$WHEEL" || fail "pip install the bundled wheel"
(cd "$TMP" && env -u TEGRAGPU_LIBRARY "$VPY" - <<'PYEOF'
import os, sys
import tegragpu as tg
assert tg.library_source() == "package", (tg.library_source(), tg.library_path())
assert tg.library_path() == os.path.join(os.path.dirname(tg.__file__), "_lib", "libtegragpu.so.0")
with tg.Device("emu") as dev:
    assert dev.info.emulated
print(f"  bundled library found: {tg.library_path()}")
PYEOF
) || fail "import tegragpu from the bundled wheel"

echo
echo "check-python-package: OK"
