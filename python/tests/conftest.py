import os
import sys

# Import the package from this source tree (python/tegragpu), not an installed copy, unless
# TEGRAGPU_TEST_INSTALLED=1 (scripts/check-python-package.sh: test what pip installed).
if os.environ.get("TEGRAGPU_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
