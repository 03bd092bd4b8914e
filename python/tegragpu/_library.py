"""Finding and loading libtegragpu (the lookup order is in the package's docstring), and the
prototype of every function set on :data:`lib`."""

import ctypes
import os
import shutil
import subprocess

from ._cdefs import SIGNATURES
from ._constants import ABI_MAJOR, Status


_SONAME = "libtegragpu.so.0"
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class LibraryNotFoundError(ImportError):
    """No libtegragpu could be loaded. ``tried`` lists ``(where, what happened)``."""

    def __init__(self, message, tried=()):
        super().__init__(message)
        self.tried = list(tried)


# Raised while the package is being imported, before tegragpu/__init__.py names the module of its
# classes "tegragpu": named here, so that the traceback says tegragpu.LibraryNotFoundError.
LibraryNotFoundError.__module__ = "tegragpu"


def _pkg_config_libdir():
    """``(libdir, None)`` from ``pkg-config --variable=libdir tegragpu``, or ``(None, why)``."""
    exe = shutil.which("pkg-config")
    if exe is None:
        return None, "pkg-config is not installed"
    try:
        r = subprocess.run([exe, "--variable=libdir", "tegragpu"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, universal_newlines=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"pkg-config failed: {e}"
    libdir = r.stdout.strip()
    if r.returncode != 0 or not libdir:
        return None, "no tegragpu.pc on PKG_CONFIG_PATH"
    return libdir, None


def _source_root(pkg_dir):
    """The source tree this package lies in (python/tegragpu), or None when installed."""
    root = os.path.dirname(os.path.dirname(pkg_dir))
    if os.path.exists(os.path.join(root, "Cargo.toml")) and \
            os.path.exists(os.path.join(root, "include", "tegragpu.h")):
        return root
    return None


def _candidates(environ=None, pkg_dir=None, pkg_config=_pkg_config_libdir):
    """The lookup order: a list of ``(source, path, note)``; ``path`` is None where the step
    has nothing to try (``note`` says why). ``source`` is one of "TEGRAGPU_LIBRARY",
    "package", "pkg-config", "system", "source tree"."""
    environ = os.environ if environ is None else environ
    pkg_dir = _PKG_DIR if pkg_dir is None else pkg_dir
    env = environ.get("TEGRAGPU_LIBRARY")
    if env:
        return [("TEGRAGPU_LIBRARY", env, None)]
    out = [("package", os.path.join(pkg_dir, "_lib", _SONAME), None)]
    libdir, why = pkg_config()
    if libdir is None:
        out.append(("pkg-config", None, why))
    else:
        out.append(("pkg-config", os.path.join(libdir, _SONAME), None))
    out.append(("system", _SONAME, None))
    root = _source_root(pkg_dir)
    if root is None:
        out.append(("source tree", None, "not running from a source tree"))
    else:
        for d in ("build/meson", "target/release"):
            out.append(("source tree", os.path.join(root, d, "libtegragpu.so"), None))
    return out


def _load(environ=None, pkg_dir=None, pkg_config=_pkg_config_libdir):
    """Load the library: ``(CDLL, path, source)``; raises :class:`LibraryNotFoundError`."""
    tried = []
    for source, path, note in _candidates(environ, pkg_dir, pkg_config):
        if path is None:
            tried.append((source, note))
            continue
        if os.path.sep in path and not os.path.exists(path):
            tried.append((f"{source}: {path}", "no such file"))
        else:
            try:
                return ctypes.CDLL(path), path, source
            except OSError as e:
                why = str(e)
                if why.startswith(path + ": "):
                    why = why[len(path) + 2:]
                tried.append((f"{source}: {path}", why))
        if source == "TEGRAGPU_LIBRARY":
            raise LibraryNotFoundError(
                f"TEGRAGPU_LIBRARY={path} cannot be loaded ({tried[-1][1]}); point it at a "
                "libtegragpu.so (e.g. target/release/libtegragpu.so after cargo build --release) "
                "or unset it to search the package, pkg-config and the system", tried)
    detail = "".join(f"\n  {where}: {why}" for where, why in tried)
    raise LibraryNotFoundError(
        f"libtegragpu not found ({len(tried)} places tried). Fix: set TEGRAGPU_LIBRARY to the "
        "library's path, install it (meson install; pkg-config tegragpu), or install a wheel "
        f"with the library bundled (docs/python.md). Tried:{detail}", tried)


def _tell_python_site(environ=None):
    """Put this interpreter's prefix and package directories (``sys.prefix``,
    ``site.getsitepackages()``, ``site.getusersitepackages()``) first in
    ``$TEGRAGPU_PYTHON_SITE``, where the library looks for libnvrtc and nvJitLink installed with
    pip (``nvidia/*/lib``) when it first needs them: a venv's python finds its wheels without
    activation."""
    import site
    import sys
    environ = os.environ if environ is None else environ
    dirs = [sys.prefix]
    for get in ("getsitepackages", "getusersitepackages"):
        try:
            got = getattr(site, get)()
        except Exception:  # an old virtualenv's site module, a disabled user site
            continue
        dirs += [got] if isinstance(got, str) else list(got)
    dirs += environ.get("TEGRAGPU_PYTHON_SITE", "").split(os.pathsep)
    environ["TEGRAGPU_PYTHON_SITE"] = os.pathsep.join(
        d for i, d in enumerate(dirs) if d and d not in dirs[:i])


_tell_python_site()
lib, _lib_path, _lib_source = _load()
#: Earlier private name of :data:`lib`.
_lib = lib

#: Functions of the header that the loaded library does not export (an older library); calling
#: one raises :class:`NotSupported`.
missing_functions = []


def _missing(name):
    def call(*args, **kwargs):
        from ._errors import NotSupported  # _errors imports this module
        raise NotSupported(Status.NOT_SUPPORTED,
                           f"{name}: not exported by {_lib_path} (an older libtegragpu "
                           f"{'.'.join(map(str, version()))}); update the library")
    call.__name__ = name
    return call


for _name, (_res, _args) in SIGNATURES.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        missing_functions.append(_name)
        setattr(lib, _name, _missing(_name))
        continue
    _f.restype = _res
    _f.argtypes = _args

_lib_version = lib.tg_version()
if _lib_version >> 16 != ABI_MAJOR:
    raise ImportError(
        f"{_lib_path} is libtegragpu {_lib_version >> 16}.{(_lib_version >> 8) & 0xff}."
        f"{_lib_version & 0xff}; this package needs ABI major {ABI_MAJOR}")


def version():
    """The loaded library's version as (major, minor, patch)."""
    return (_lib_version >> 16, (_lib_version >> 8) & 0xFF, _lib_version & 0xFF)


def library_path():
    """Path (or soname, when the system loader found it) of the loaded shared library."""
    return _lib_path


def library_source():
    """Which lookup step found the library: "TEGRAGPU_LIBRARY", "package", "pkg-config",
    "system" or "source tree"."""
    return _lib_source
