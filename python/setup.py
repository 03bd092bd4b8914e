"""Build hook for the tegragpu package; the metadata is in pyproject.toml.

TEGRAGPU_BUNDLE_LIBRARY=/path/to/libtegragpu.so (at build time) copies that library into the
package as tegragpu/_lib/libtegragpu.so.0, where ``import tegragpu`` looks for it after
$TEGRAGPU_LIBRARY; the wheel is then tagged for this platform (py3-none-<platform>) instead of
py3-none-any. Example:

    TEGRAGPU_BUNDLE_LIBRARY=$PWD/build/meson/libtegragpu.so python -m pip wheel --no-deps ./python -w dist
"""
import os
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 ships bdist_wheel; older ones use the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

BUNDLE = os.environ.get("TEGRAGPU_BUNDLE_LIBRARY", "")
HERE = os.path.dirname(os.path.abspath(__file__))
IN_TREE = os.path.join(HERE, "tegragpu", "_lib", "libtegragpu.so.0")
SONAME = "libtegragpu.so.0"


def bundling():
    return bool(BUNDLE) or os.path.exists(IN_TREE)


class BuildPy(build_py):
    def run(self):
        super().run()
        if BUNDLE:
            if not os.path.isfile(BUNDLE):
                raise SystemExit(f"TEGRAGPU_BUNDLE_LIBRARY={BUNDLE}: no such file")
            dest = os.path.join(self.build_lib, "tegragpu", "_lib")
            os.makedirs(dest, exist_ok=True)
            # copyfile follows symlinks (libtegragpu.so -> .so.0 -> .so.0.1.0).
            shutil.copyfile(BUNDLE, os.path.join(dest, SONAME))
            os.chmod(os.path.join(dest, SONAME), 0o755)
            print(f"tegragpu: bundled {BUNDLE} as tegragpu/_lib/{SONAME}")


class BinaryDistribution(Distribution):
    """With a bundled library the wheel is a platform wheel (files in platlib, not purelib)."""

    def has_ext_modules(self):
        return bundling()


cmdclass = {"build_py": BuildPy}

if bdist_wheel is not None:
    class BdistWheel(bdist_wheel):
        def get_tag(self):
            python, abi, plat = super().get_tag()
            if bundling():
                return "py3", "none", plat  # ctypes only: any CPython 3, this platform
            return python, abi, plat

    cmdclass["bdist_wheel"] = BdistWheel

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
