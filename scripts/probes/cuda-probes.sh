#!/usr/bin/env bash
# Device machine: libcuda's device-to-device copy paths (scripts/probes/cuda_copy.cu) and, where
# Nsight Compute is installed, the launch configuration of libcuda's copy kernel.
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp}
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
echo "nvcc: $nvcc"; "$nvcc" --version | tail -1
"$nvcc" -O2 -arch=native -o /tmp/cuda_copy cuda_copy.cu || exit 1
[ -z "${SKIP_COPY:-}" ] && timeout -k 5 120 /tmp/cuda_copy "${REPS:-10}" 2>&1 | tee "$out/cuda_copy.txt"
bindir=$(dirname "$nvcc")
ncu=$(command -v ncu || ls "$bindir"/ncu /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: ${ncu:-none}"
if [ -n "${ncu:-}" ] && [ -n "${NCU:-}" ]; then
  timeout -k 5 180 "$ncu" --launch-count 4 --section LaunchStats --section Occupancy \
    /tmp/cuda_copy 1 2>&1 | grep -v '^==PROF==' | head -150 | tee "$out/ncu.txt"
fi
if [ -n "${VARIANTS:-}" ]; then
  "$nvcc" -O3 -arch=native -o /tmp/copy_variants copy_variants.cu -lcuda || exit 1
  python3 extract-libcuda-memcpy.py /tmp/lc.cubin
  timeout -k 5 200 /tmp/copy_variants "${REPS:-10}" /tmp/lc.cubin memcpy128 2>&1 | tee "$out/copy_variants.txt"
fi
