#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh scripts/gpu-variants-grouped.txt`:
# checks every grouped kernel with tilec-gpu-test on its form's default problems (uneven experts,
# empty ones, N off the tile), then times them all with `tilec-bench --grouped` on the benchmark's
# problems against the per-expert cuBLAS and cuBLASLt loops and cublasGemmGroupedBatchedEx.
# Summary in $OUT/grouped.txt, JSON in $OUT/grouped.json.
# usage: OUT=/tmp/out bash run-grouped.sh
set -uo pipefail
cd "$(dirname "$0")"
. ./gpu-env.sh
{
  echo "== tilec-gpu-test"
  for a in artifacts/grouped_*/; do
    timeout 300 bin/tilec-gpu-test "$a" | grep -E "PASS|FAIL|error|problems"
    echo "$(basename "$a") rc=${PIPESTATUS[0]}"
  done
  echo "== tilec-bench --grouped"
  arts=()
  for a in artifacts/grouped_*/; do arts+=(--artifact "$a"); done
  timeout 420 bin/tilec-bench --grouped "${arts[@]}" --reps 20 --json "$out/grouped.json"
  echo "bench rc=$?"
} 2>&1 | tee "$out/grouped.txt"
