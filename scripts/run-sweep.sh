#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh --sweep`: checks each
# shape's pick (rank 1) on odd shapes (K and N stay multiples of 8: TMA needs 16-byte rows),
# times each benchmark shape's candidate kernels (sweep.txt) against cuBLAS in one tilec-bench
# run per shape, then prints the config selection's regret per shape (sweep-regret.py).
# Logs and JSON go to $OUT.
# usage: OUT=/tmp/out bash run-sweep.sh
set -uo pipefail
cd "$(dirname "$0")"
. ./gpu-env.sh

echo "== the picks on odd shapes (M = 1, odd M; M, N and K not multiples of the tile)"
for a in $(awk '$2 ~ /_r1$/ { print $2 }' sweep.txt); do
  bin/tilec-gpu-test "artifacts/$a" --shapes 1x2112x7168,129x2112x200,1000x1000x2000,4095x4104x4104 >"$out/check-$a.log" 2>&1
  echo "$a rc=$? $(grep -cw PASS "$out/check-$a.log") PASS $(grep -cw FAIL "$out/check-$a.log") FAIL"
done

echo "== sweep"
for shape in $(cut -d' ' -f1 sweep.txt | uniq); do
  arts=()
  for a in $(awk -v s="$shape" '$1 == s { print $2 }' sweep.txt); do arts+=(--artifact "artifacts/$a"); done
  bin/tilec-bench "${arts[@]}" --shapes "$shape" --dtypes bf16 --json "$out/sweep-$shape.json" >"$out/sweep-$shape.log" 2>&1
  echo "$shape: bench rc=$?"
done
python3 sweep-regret.py sweep.txt "$out"/sweep-*.json | tee "$out/regret.txt"
