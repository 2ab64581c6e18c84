#!/usr/bin/env bash
# On the GPU machine, in a bundle built by scripts/anchors/build-deepgemm-bundle.sh: unpacks
# DeepGEMM, compiles its kernel for every shape (in parallel: nvcc takes tens of seconds a
# kernel), checks and times each (deepgemm_anchor.py) and runs the kernels of the shapes
# DG_NCU names (MxNxK,...) under ncu (caches flushed, clocks left to the GPU). Output goes to
# $OUT: deepgemm.json, deepgemm.log, deepgemm-ncu.txt.
# usage: OUT=/tmp/out [DG_JOBS=16] [DG_ROUNDS=30] [DG_NCU=MxNxK,...] bash run-deepgemm.sh
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp/out}
mkdir -p "$out"
work=$(mktemp -d)
tar -xJf deepgemm.tar.xz -C "$work"
export PYTHONPATH=$work:${PYTHONPATH:-}
export DG_CACHE_DIR=$work/cache
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
[ -n "$nvcc" ] || { echo "error: no nvcc on this machine" | tee "$out/deepgemm.log"; exit 1; }
# CUDA 13's cudaTypedefs.h names the encoder's type by its version only; the pinned DeepGEMM
# names it without: an nvcc wrapper defines the old name (DeepGEMM finds nvcc by this variable).
printf '#!/bin/sh\nexec "%s" -DPFN_cuTensorMapEncodeTiled=PFN_cuTensorMapEncodeTiled_v12000 "$@"\n' "$nvcc" >"$work/nvcc"
chmod +x "$work/nvcc"
export DG_NVCC_COMPILER=$work/nvcc
{ cat versions.txt; "$nvcc" --version | tail -1; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; } | tee "$out/deepgemm.log"

jobs=${DG_JOBS:-16}
mapfile -t shapes <shapes.txt
echo "== compiling ${#shapes[@]} kernels, $jobs at a time" | tee -a "$out/deepgemm.log"
s0=$(date +%s)
printf '%s\n' "${shapes[@]}" | xargs -P "$jobs" -I{} timeout 300 python3 deepgemm_anchor.py --compile-only {} >>"$out/deepgemm.log" 2>&1
echo "compiled in $(( $(date +%s) - s0 )) s" | tee -a "$out/deepgemm.log"

echo "== checks and timing" | tee -a "$out/deepgemm.log"
timeout 400 python3 deepgemm_anchor.py --rounds "${DG_ROUNDS:-30}" --json "$out/deepgemm.json" --versions "$(head -1 versions.txt)" "${shapes[@]}" 2>&1 | tee -a "$out/deepgemm.log"
echo "rc=${PIPESTATUS[0]}" | tee -a "$out/deepgemm.log"

if [ -n "${DG_NCU:-}" ]; then
  for s in ${DG_NCU//,/ }; do
    echo "=== $s"
    timeout 120 ncu --clock-control none --cache-control all --kernel-name regex:fp8_gemm --launch-skip 1 --launch-count 2 \
      --section SpeedOfLight python3 deepgemm_anchor.py --launch-only "$s" 2>&1 | grep -E 'fp8_gemm|Duration|SM Frequency|Memory Throughput|DRAM Throughput'
  done >"$out/deepgemm-ncu.txt" 2>&1
fi
