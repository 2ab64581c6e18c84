#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh --fuzz CASES_DIR`: the
# differential fuzz run's main pass. Unpacks the kernels into /tmp and checks each with
# `tilec-gpu-test --no-timing` at its case shape and one odd shape (fuzz-cases.tsv) against
# cuBLAS/cuBLASLt or the FP64 product, fresh random inputs and poisoned outputs each, several
# checks at once. Each check runs under `timeout`: one that does not exit in FUZZ_CASE_TIMEOUT
# seconds is a HANG. No check starts after FUZZ_BUDGET_S seconds and none runs past them, so the
# call ends on time with a report whatever happens (a case stopped by the deadline is CUT, one
# never started NOT_RUN: run those with FUZZ_SHARD or FUZZ_ONLY in another call).
# $OUT gets fuzz-report.json (schema tilec-fuzz/1: seed, GPU, date, commit, every case's program,
# shape, config, result and error), fuzz-summary.txt (printed last), fuzz-logs.tgz and gpu.txt.
#   FUZZ_JOBS=8            checks at once (separate processes, each its own CUDA context)
#   FUZZ_BUDGET_S=470      seconds after which no check starts or runs
#   FUZZ_CASE_TIMEOUT=150  seconds a check may take before it counts as a hang
#   FUZZ_SHARD=I/N         only every N-th case from the I-th (1-based), to split the run over calls
#   FUZZ_FROM=I            only the cases from the I-th line of fuzz-cases.tsv (the summary says
#                          where a run cut short by its budget stopped)
#   FUZZ_ONLY=NAME,...     only these cases
# usage: OUT=/tmp/out bash run-fuzz.sh
set -uo pipefail
t0=$(date +%s)
cd "$(dirname "$0")"
. ./gpu-env.sh
jobs=${FUZZ_JOBS:-8}
budget=${FUZZ_BUDGET_S:-470}
case_timeout=${FUZZ_CASE_TIMEOUT:-150}
deadline=$((t0 + budget))
export FUZZ_JOBS=$jobs FUZZ_CASE_TIMEOUT=$case_timeout
work=$(mktemp -d /tmp/tilec-fuzz.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
# tar needs xz for this; Python's tarfile reads it without.
tar -C "$work" -xJf artifacts.tar.xz 2>/dev/null || python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' artifacts.tar.xz "$work" ||
  { echo "FAIL: cannot unpack artifacts.tar.xz"; exit 1; }
case "$(head -1 "$out/gpu.txt" 2>/dev/null; tail -1 "$out/gpu.txt" 2>/dev/null)" in
  *H200*) ;;
  *) echo "NOTE: the kernels were compiled for the H200 (tilec's default target); tilec-gpu-test refuses them on another GPU it knows" ;;
esac

list=$work/cases.tsv
shard=${FUZZ_SHARD:-1/1}
awk -F'\t' -v i="${shard%/*}" -v n="${shard#*/}" -v from="${FUZZ_FROM:-1}" -v only=",${FUZZ_ONLY:-}," \
  '(only == ",," && NR >= from && (NR - i) % n == 0) || index(only, "," $1 ",")' fuzz-cases.tsv >"$list"
total=$(wc -l <"$list")
echo "== $total kernels (shard $shard), $jobs at once, a check at most ${case_timeout} s, none past ${budget} s"

# NAME FLAG VALUE: one check; LOGS/NAME.rc gets `rc limit seconds` (or NOT_RUN).
run_case() {
  local name=$1 flag=$2 value=$3
  timed_run "$deadline" "$case_timeout" 20 "$logs/$name.rc" "$logs/$name.log" bin/tilec-gpu-test "$work/artifacts/$name" --no-timing "$flag" "$value"
}

started=0
while IFS=$'\t' read -r name flag value; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  run_case "$name" "$flag" "$value" </dev/null &
  started=$((started + 1))
  if [ $((started % 100)) = 0 ]; then
    echo "  $started of $total started at $(($(date +%s) - t0)) s; $(grep -lw FAIL "$logs"/*.log 2>/dev/null | wc -l) with a FAIL line so far"
  fi
done <"$list"
wait
export FUZZ_WALL_S=$(($(date +%s) - t0))
echo "== checks done at $FUZZ_WALL_S s"
tar -C "$work" -czf "$out/fuzz-logs.tgz" logs
python3 fuzz-report.py report . "$logs" "$out"
