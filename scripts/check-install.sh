#!/usr/bin/env bash
# check-install.sh: `meson install` into a temporary DESTDIR, then check what it installed
# (docs/install.md): the library's three names and their links, soname, debug info stripped and
# split into $libdir/.debug (its .gnu_debuglink name and CRC, and gdb finding it), the static
# library, the tools, the header, and a C program built with pkg-config against the installed
# files, dynamically and statically, that opens the emulated GPU. Registered as the meson test
# "install" (meson.build), which passes:
#
#   usage: check-install.sh BUILDDIR
#   env:   TG_MESON (meson; default: meson on PATH)
#          TG_PREFIX TG_LIBDIR TG_BINDIR TG_INCLUDEDIR  (meson's options)
#          TG_VERSION (project version)  TG_DEBUGINFO (split|strip|keep, the effective one)
#          TG_CC (C compiler command)  TG_PKG_CONFIG (pkg-config; none: exit 77, skipped)
#          TG_OBJCOPY (objcopy for the library's architecture; default: objcopy)
#          TG_KEEP_INSTALL=1 keeps the DESTDIR (its path is printed)
# Exits 0 if every check passed, 1 otherwise (each failure is printed as "FAIL: ...").
set -uo pipefail

[ $# = 1 ] || { sed -n '2,15p' "$0"; exit 2; }
BUILDDIR="$(cd "$1" && pwd)"
MESON=("${TG_MESON:-meson}")
case "${MESON[0]}" in *.py) MESON=(python3 "${MESON[0]}") ;; esac
: "${TG_PREFIX:?}" "${TG_LIBDIR:?}" "${TG_BINDIR:?}" "${TG_INCLUDEDIR:?}" "${TG_VERSION:?}"
DEBUGINFO="${TG_DEBUGINFO:-split}"
read -r -a CC <<<"${TG_CC:-cc}"
PKG_CONFIG="${TG_PKG_CONFIG:-pkg-config}"
MAJOR="${TG_VERSION%%.*}"
SO_FULL="libtegragpu.so.$TG_VERSION"
SO_MAJOR="libtegragpu.so.$MAJOR"

under_prefix() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$TG_PREFIX" "$1" ;; esac; }

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
# (grep -c, not -q: with pipefail, -q's early exit would make the writer's SIGPIPE the answer)
has_section() { [ "$(readelf -SW "$1" 2>/dev/null | grep -cF " $2 ")" -gt 0 ]; }

DEST="$(mktemp -d "${TMPDIR:-/tmp}/tegragpu-install.XXXXXX")"
# `meson install` rewrites meson-logs/install-log.txt, which `ninja uninstall` reads: put back the
# log of the last real install.
LOG="$BUILDDIR/meson-logs/install-log.txt"
if [ -f "$LOG" ]; then cp -p "$LOG" "$DEST.install-log"; fi
cleanup() {
  if [ -f "$DEST.install-log" ]; then mv -f "$DEST.install-log" "$LOG"; else rm -f "$LOG"; fi
  if [ "${TG_KEEP_INSTALL:-0}" = 1 ]; then echo "DESTDIR kept: $DEST"; else rm -rf "$DEST"; fi
}
trap cleanup EXIT

echo "+ ${MESON[*]} install -C $BUILDDIR --no-rebuild --destdir $DEST"
if ! "${MESON[@]}" install -C "$BUILDDIR" --no-rebuild --quiet --destdir "$DEST"; then
  echo "FAIL: meson install"
  exit 1
fi
LIB="$DEST$(under_prefix "$TG_LIBDIR")"
BIN="$DEST$(under_prefix "$TG_BINDIR")"
INC="$DEST$(under_prefix "$TG_INCLUDEDIR")"
echo "installed (DESTDIR=$DEST, debug info: $DEBUGINFO):"
find "$DEST" -mindepth 1 -type f -printf '  %10s  /%P\n' | sort -k2
find "$DEST" -mindepth 1 -type l -printf '  %10s  /%P -> %l\n' | sort -k2

# --- the shared library: names, links, soname --------------------------------------------------
if [ -f "$LIB/$SO_FULL" ] && [ ! -L "$LIB/$SO_FULL" ]; then ok "$SO_FULL is a file"
else fail "$LIB/$SO_FULL is missing or not a regular file"; fi
for pair in "$SO_MAJOR:$SO_FULL" "libtegragpu.so:$SO_MAJOR"; do
  link="${pair%%:*}" target="${pair#*:}"
  if [ -L "$LIB/$link" ] && [ "$(readlink "$LIB/$link")" = "$target" ]; then ok "$link -> $target"
  else fail "$LIB/$link should be a symlink to $target (is: $(readlink "$LIB/$link" 2>/dev/null || echo 'not a link'))"; fi
done
stray="$(cd "$LIB" && ls -d libtegragpu* 2>/dev/null | grep -vxF -e "$SO_FULL" -e "$SO_MAJOR" -e libtegragpu.so -e libtegragpu.a || true)"
[ -z "$stray" ] || fail "unexpected files in $LIB: $stray"
soname="$(readelf -dW "$LIB/$SO_FULL" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')"
if [ "$soname" = "$SO_MAJOR" ]; then ok "soname $soname"; else fail "soname is '$soname', not $SO_MAJOR"; fi
nexp="$(nm -D --defined-only "$LIB/$SO_FULL" 2>/dev/null | grep -c ' T tg_' || true)"
if [ "$nexp" -ge 20 ]; then ok "$nexp tg_* functions exported"; else fail "only $nexp tg_* functions exported"; fi

# --- debug info ---------------------------------------------------------------------------------
DBG="$LIB/.debug/$SO_FULL.debug"
if [ "$DEBUGINFO" = keep ]; then
  has_section "$LIB/$SO_FULL" .debug_info && ok "$SO_FULL keeps .debug_info (keep)" \
    || fail "$SO_FULL has no .debug_info although install_debuginfo=keep"
else
  for f in "$LIB/$SO_FULL" "$LIB/libtegragpu.a" "$BIN/tegragpu-info" "$BIN/tegragpu-bench"; do
    if has_section "$f" .debug_info; then fail "$f still has .debug_info"
    else ok "no .debug_info in ${f#"$DEST"}"; fi
  done
  if has_section "$LIB/libtegragpu.a" .llvmbc; then fail "libtegragpu.a still has .llvmbc"; fi
fi
if [ "$DEBUGINFO" = split ]; then
  if [ -f "$DBG" ] && has_section "$DBG" .debug_info; then ok "${DBG#"$DEST"} has .debug_info"
  else fail "$DBG is missing or has no .debug_info"; fi
  # The .gnu_debuglink section: the debug file's name, NUL padding to 4 bytes, its CRC-32.
  sec="$DEST/debuglink.bin"
  if "${TG_OBJCOPY:-objcopy}" --dump-section .gnu_debuglink="$sec" "$LIB/$SO_FULL" /dev/null 2>/dev/null; then
    if msg="$(python3 - "$sec" "$DBG" "$SO_FULL.debug" 2>&1 <<'PYEOF'
import struct, sys, zlib
sec, dbg, want = open(sys.argv[1], "rb").read(), sys.argv[2], sys.argv[3]
name = sec[:sec.index(b"\0")].decode()
crc = struct.unpack("<I", sec[-4:])[0]
actual = zlib.crc32(open(dbg, "rb").read()) & 0xffffffff
if name != want:
    sys.exit("debuglink names %r, not %r" % (name, want))
if crc != actual:
    sys.exit("debuglink CRC %#010x, the debug file's is %#010x" % (crc, actual))
print("debuglink %s, CRC %#010x matches" % (name, crc))
PYEOF
)"; then ok "$msg"; else fail "$msg"; fi
  else
    fail "$SO_FULL has no .gnu_debuglink section"
  fi
  id_so="$(readelf -nW "$LIB/$SO_FULL" 2>/dev/null | sed -n 's/.*Build ID: //p')"
  id_dbg="$(readelf -nW "$DBG" 2>/dev/null | sed -n 's/.*Build ID: //p')"
  if [ "$id_so" = "$id_dbg" ]; then ok "build-id ${id_so:-(none)} matches"
  else fail "build-id of $SO_FULL ($id_so) != debug file's ($id_dbg)"; fi
  # gdb finds the debug file through the link ($libdir/.debug is on its search path).
  if command -v gdb >/dev/null 2>&1; then
    out="$(gdb -nx -batch -ex 'info line tg_device_open' "$LIB/$SO_FULL" 2>&1)"
    if grep -q '^Line [0-9]* of ".*\.rs"' <<<"$out"; then ok "gdb: $(head -n1 <<<"$out")"
    else fail "gdb does not find line info for tg_device_open: $(tr -s "\n" " " <<<"${out:-(no output)}")"; fi
  else
    echo "note: no gdb; skipped checking that gdb finds the debug info"
  fi
elif [ -e "$DBG" ]; then
  fail "$DBG installed although install_debuginfo=$DEBUGINFO"
fi

# --- static library, tools, header --------------------------------------------------------------
if [ "$(nm "$LIB/libtegragpu.a" 2>/dev/null | grep -c ' T tg_device_open$')" = 1 ]; then ok "libtegragpu.a defines tg_device_open"
else fail "$LIB/libtegragpu.a missing or without tg_device_open"; fi
for t in tegragpu-info tegragpu-bench; do
  [ -x "$BIN/$t" ] && ok "$t installed" || fail "$BIN/$t missing or not executable"
done
v="$("$BIN/tegragpu-info" --version 2>&1)"
if [ "$v" = "tegragpu-info $TG_VERSION" ]; then ok "tegragpu-info --version: $v"
else fail "tegragpu-info --version printed '$v', expected 'tegragpu-info $TG_VERSION'"; fi
"$BIN/tegragpu-bench" --help >/dev/null 2>&1 && ok "tegragpu-bench --help" || fail "tegragpu-bench --help failed"
[ -f "$INC/tegragpu.h" ] && ok "tegragpu.h installed" || fail "$INC/tegragpu.h missing"

# The build tree keeps the unstripped library the examples, tests and TEGRAGPU_LIBRARY use.
if has_section "$BUILDDIR/libtegragpu.so" .debug_info && [ -f "$BUILDDIR/$SO_MAJOR" ]; then
  ok "build tree: libtegragpu.so (with debug info) and $SO_MAJOR"
else fail "build tree: $BUILDDIR/libtegragpu.so (with debug info) or $SO_MAJOR missing"; fi

# --- a C program against the installed files, through pkg-config --------------------------------
if ! command -v "$PKG_CONFIG" >/dev/null 2>&1; then
  echo "no pkg-config: skipped the C program checks"
  [ "$fails" = 0 ] && exit 77
  echo "$fails check(s) failed"; exit 1
fi
W="$DEST/work"
mkdir -p "$W"
cat >"$W/app.c" <<'EOF'
#include <tegragpu.h>
#include <stdio.h>

int main(void) {
    tg_device *dev = NULL;
    uint32_t v = tg_version();
    if (tg_device_open("emu", &dev) != TG_OK) {
        fprintf(stderr, "tg_device_open(\"emu\"): %s\n", tg_last_error_message());
        return 1;
    }
    printf("%u.%u.%u\n", v >> 16, (v >> 8) & 0xff, v & 0xff);
    return tg_device_close(dev) == TG_OK ? 0 : 1;
}
EOF
pc() { PKG_CONFIG_PATH="$LIB/pkgconfig" "$PKG_CONFIG" --define-variable=prefix="$DEST$TG_PREFIX" "$@" tegragpu; }
modv="$(pc --modversion 2>&1)"
[ "$modv" = "$TG_VERSION" ] && ok "pkg-config --modversion $modv" || fail "pkg-config --modversion: '$modv'"
read -r -a flags <<<"$(pc --cflags --libs)"
echo "+ ${CC[*]} app.c -o app ${flags[*]}"
if "${CC[@]}" "$W/app.c" -o "$W/app" "${flags[@]}"; then
  needed="$(readelf -dW "$W/app" | sed -n 's/.*Shared library: \[\(libtegragpu[^]]*\)\].*/\1/p')"
  [ "$needed" = "$SO_MAJOR" ] && ok "app needs $needed" || fail "app needs '$needed', not $SO_MAJOR"
  # ldd's own mechanism, run by the program's dynamic loader (so it also works for a program of
  # another architecture that binfmt_misc runs, as in scripts/test-aarch64.sh).
  resolved="$(LD_TRACE_LOADED_OBJECTS=1 LD_LIBRARY_PATH="$LIB" "$W/app" 2>/dev/null | sed -n 's/.*libtegragpu[^ ]* => \([^ ]*\) .*/\1/p')"
  [ "$resolved" = "$LIB/$SO_MAJOR" ] && ok "app loads the installed library" \
    || fail "app loads '$resolved', not $LIB/$SO_MAJOR"
  if out="$(LD_LIBRARY_PATH="$LIB" "$W/app" 2>&1)" && [ "$out" = "$TG_VERSION" ]; then
    ok "app (shared) opened emu, library version $out"
  else fail "app (shared): '$out'"; fi
else
  fail "cannot build app.c with: $(pc --cflags --libs)"
fi
# Statically: libtegragpu.a plus pkg-config's private libraries.
read -r -a sflags <<<"$(pc --cflags --libs --static)"
slibs=()
for f in "${sflags[@]}"; do [ "$f" = -ltegragpu ] && slibs+=("$LIB/libtegragpu.a") || slibs+=("$f"); done
echo "+ ${CC[*]} app.c -o app_static ${slibs[*]}"
if "${CC[@]}" "$W/app.c" -o "$W/app_static" "${slibs[@]}"; then
  if [ "$(readelf -dW "$W/app_static" | grep -c 'libtegragpu')" != 0 ]; then fail "app_static still needs libtegragpu.so"; fi
  if out="$("$W/app_static" 2>&1)" && [ "$out" = "$TG_VERSION" ]; then
    ok "app (static) opened emu, library version $out"
  else fail "app (static): '$out'"; fi
else
  fail "cannot link app.c statically with: ${slibs[*]}"
fi

if [ "$fails" = 0 ]; then echo "install: all checks passed"; exit 0; fi
echo "$fails check(s) failed"
exit 1
