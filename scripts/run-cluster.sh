#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh scripts/gpu-variants-cluster.txt`:
# checks every clustered kernel (and its unclustered twin) on shapes whose tile count is odd in
# the clustered dimension (M = 1, M or N off the tile), runs racecheck and synccheck on small
# shapes, then times each kernel against its twin and cuBLAS at 4096^3 and 8192^3.
# Summary in $OUT/cluster.txt, JSON in $OUT/cluster-*.json.
# usage: OUT=/tmp/out bash run-cluster.sh
set -uo pipefail
cd "$(dirname "$0")"
. ./gpu-env.sh
{
  echo "== tilec-gpu-test (odd tile counts along M and N)"
  for a in artifacts/*/; do
    name=$(basename "$a")
    # FP8 rows of A and B are K bytes: TMA needs K to be a multiple of 16.
    case "$name" in
      *fp8*) shapes=1x2112x7168,300x600x208,640x1280x512,4095x4104x4112 ;;
      *) shapes=1x2112x7168,300x600x200,640x1280x520,129x2112x200,4095x4104x4104 ;;
    esac
    timeout 300 bin/tilec-gpu-test "$a" --shapes "$shapes" | grep -E "PASS|FAIL|error"
    echo "$name rc=${PIPESTATUS[0]}"
  done
  echo "== compute-sanitizer (3 x 3 tiles, and 2 x 1)"
  for tool in racecheck synccheck; do
    for a in artifacts/cl_*/; do
      # 256x256x2048: more K blocks than stages, so every stage is reused.
      shapes=384x768x256,256x256x512,256x256x2048
      timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 3 bin/tilec-gpu-test "$a" --shapes "$shapes" >/tmp/sanitize.log 2>&1
      echo "$tool $(basename "$a"): rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/sanitize.log | tr '\n' ' ')"
    done
  done
  echo "== tilec-bench: clustered against unclustered"
  for dtype in bf16 fp8; do
    arts=()
    for a in artifacts/*/; do
      case "$a" in *fp8*) [ "$dtype" = fp8 ] && arts+=(--artifact "$a") ;; *) [ "$dtype" = bf16 ] && arts+=(--artifact "$a") ;; esac
    done
    shapes=4096x4096x4096,8192x8192x8192
    [ "$dtype" = fp8 ] && shapes=4096x7168x16384,4096x4096x4096
    timeout 300 bin/tilec-bench "${arts[@]}" --shapes "$shapes" --dtypes "$dtype" --json "$out/cluster-$dtype.json"
    echo "bench $dtype rc=$?"
  done
} 2>&1 | tee "$out/cluster.txt"
