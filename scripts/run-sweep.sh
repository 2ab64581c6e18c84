#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh --sweep`: times each
# benchmark shape's candidate kernels (sweep.txt) against cuBLAS in one tilec-bench run per
# shape, then prints the config selection's regret per shape (sweep-regret.py).
# usage: bash run-sweep.sh [OUT_DIR]   (default results-sweep/)
set -uo pipefail
cd "$(dirname "$0")"
out=${1:-results-sweep}
mkdir -p "$out"
for shape in $(cut -d' ' -f1 sweep.txt | uniq); do
  arts=()
  for a in $(awk -v s="$shape" '$1 == s { print $2 }' sweep.txt); do arts+=(--artifact "artifacts/$a"); done
  echo "== $shape (${#arts[@]} flags for $(( ${#arts[@]} / 2 )) candidates)"
  bin/tilec-bench "${arts[@]}" --shapes "$shape" --dtypes bf16 --json "$out/$shape.json" >"$out/$shape.log" 2>&1
  echo "bench rc=$?"; tail -3 "$out/$shape.log"
done
python3 sweep-regret.py sweep.txt "$out"/*.json | tee "$out/regret.txt"
