#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh --sweep` or
# `--sweep-clusters`: checks each shape's pick (rank 1) and pinned variants (S_m, S_n), each
# config once, on odd shapes (K and N stay multiples of 8: TMA needs 16-byte rows),
# times each benchmark shape's candidate kernels (sweep.txt) against cuBLAS in one tilec-bench
# run per shape, then prints the config selection's regret per shape (sweep-regret.py).
# Logs and JSON go to $OUT. Every GPU command runs under `timeout`: a kernel that hangs
# costs minutes of the lease, not the whole call (rc 124 in the log).
# SWEEP_CHECKS=0 leaves out the odd-shape checks (tilec-bench still checks every kernel at its
# shape), SWEEP_REPS=N times N rounds instead of tilec-bench's default, and SWEEP_NAME=NAME
# names the files in $OUT (NAME-regret.txt, NAME-logs.tgz; default sweep), so that several
# bundles' sweeps can run in one call. SWEEP_TUNING=1 also records each shape's fastest checked
# candidate in $OUT/NAME-tuning.json (`tilec-bench --tuning`), the tuning file `tilec compile
# --tuning` reads.
# usage: OUT=/tmp/out bash run-sweep.sh
set -uo pipefail
cd "$(dirname "$0")"
. ./gpu-env.sh
# Per-shape logs and JSON stay here; $out gets the summary and one archive of them.
work=$(mktemp -d)

dtype=$(cat sweep-dtype.txt)
name=${SWEEP_NAME:-sweep}
reps=()
[ -n "${SWEEP_REPS:-}" ] && reps=(--reps "$SWEEP_REPS")
tuning=()
[ "${SWEEP_TUNING:-0}" = 1 ] && tuning=(--tuning "$out/$name-tuning.json")
[ "${SWEEP_CHECKS:-1}" = 0 ] || {
echo "== the $dtype picks (and pinned variants) on odd shapes (M = 1, odd M; M, N and K not multiples of the tile)"
# A kernel serves every shape, so a config two shapes pick is checked once (the first shape's).
for a in $(awk '($2 ~ /_r1$/ || $2 !~ /_r[0-9]+$/) { config = $0; sub(/^[^ ]+ [^ ]+ /, "", config); if (!(config in seen)) { seen[config] = 1; print $2 } }' sweep.txt); do
  # FP8 rows of A and B are K bytes: TMA needs K to be a multiple of 16 there.
  if [ "$dtype" = fp8 ]; then shapes=1x2112x7168,129x2112x208,1000x1000x2000,4095x4104x4112,129x200x384; else shapes=1x2112x7168,129x2112x200,1000x1000x2000,4095x4104x4104; fi
  timeout 180 bin/tilec-gpu-test "artifacts/$a" --shapes "$shapes" >"$work/check-$a.log" 2>&1
  echo "$a rc=$? $(grep -cw PASS "$work/check-$a.log") PASS $(grep -cw FAIL "$work/check-$a.log") FAIL"
done
}

echo "== sweep"
for shape in $(cut -d' ' -f1 sweep.txt | uniq); do
  arts=()
  for a in $(awk -v s="$shape" '$1 == s { print $2 }' sweep.txt); do arts+=(--artifact "artifacts/$a"); done
  timeout 300 bin/tilec-bench "${arts[@]}" --shapes "$shape" --dtypes "$dtype" "${reps[@]}" --json "$work/sweep-$shape.json" "${tuning[@]}" >"$work/sweep-$shape.log" 2>&1
  echo "$shape: bench rc=$?"
  # Only a few files come back from a GPU run: the logs and JSON travel as one archive,
  # rewritten after every shape so that a run cut by its call's limit keeps what it timed.
  tar czf "$out/$name-logs.tgz" -C "$work" .
done
python3 sweep-regret.py sweep.txt "$work"/sweep-*.json | tee "$out/$name-regret.txt"
tar czf "$out/$name-logs.tgz" -C "$work" .
