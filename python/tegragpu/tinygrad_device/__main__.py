"""``python -m tegragpu.tinygrad_device``: the runner, :func:`tegragpu.tinygrad_device.main`.
Importing the package first registers the device; the classes live in its modules, not in
``__main__`` (tinygrad pickles some of them into its compile worker processes)."""

import sys

from tegragpu.tinygrad_device import main

if __name__ == "__main__":
    sys.exit(main())
