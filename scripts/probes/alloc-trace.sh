#!/usr/bin/env bash
# Device machine: the ioctls behind libcuda's cuMemAlloc + cuMemFree of 256 MiB
# (ioctl_trace.c preloaded into cuda_alloc.c, and into tg_alloc.c: alone, with a neighbouring
# buffer, with a queue), then 100 GiB of 10 GiB buffers. Output to stdout and $OUT/alloc_trace.txt.
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
inc=$(dirname "$(dirname "$nvcc")")/include
gcc -O2 -shared -fPIC -o /tmp/libioctl_trace.so ioctl_trace.c -ldl || exit 1
gcc -O2 -I"$inc" -o /tmp/cuda_alloc cuda_alloc.c -lcuda -ldl || exit 1
LD_PRELOAD=/tmp/libioctl_trace.so timeout -k 5 60 /tmp/cuda_alloc 2>&1 | tee "$out/alloc_trace.txt"
if [ -f ../../.device/lib/libtegragpu.so ]; then
  gcc -O2 -I../../include -o /tmp/tg_alloc tg_alloc.c -L../../.device/lib -ltegragpu -ldl || exit 1
  for a in "" anchor queue; do
    echo "== tg_alloc $a"
    LD_LIBRARY_PATH=../../.device/lib LD_PRELOAD=/tmp/libioctl_trace.so timeout -k 5 60 /tmp/tg_alloc $a 2>&1 | tee -a "$out/alloc_trace.txt"
  done
fi
if [ -x /tmp/tg_alloc ]; then
  echo "== tg_alloc big (100 GiB in 10 GiB buffers, then with libcuda in the process)"
  LD_LIBRARY_PATH=../../.device/lib timeout -k 5 120 /tmp/tg_alloc big || exit 1
  WITH_CUDA=1 LD_LIBRARY_PATH=../../.device/lib timeout -k 5 120 /tmp/tg_alloc big || exit 1
fi
