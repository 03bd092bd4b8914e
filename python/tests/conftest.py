import os
import sys

# Import the package from this source tree (python/tegragpu), not an installed copy.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
