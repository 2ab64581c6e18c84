#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh --fuzz CASES_DIR`: the
# fuzz run's sanitizer pass, a call of its own after run-fuzz.sh. Runs compute-sanitizer
# racecheck, synccheck and memcheck over `tilec-gpu-test --no-timing` on the sample of kernels
# the bundle picked (sanitize-cases.tsv: 50 kernels covering the programs, schedule classes and
# features) at a small shape: three tiles each way, the last partial, K 2048 (more K blocks
# than stages, so stages are reused); grouped kernels an empty, a one-row and an off-tile expert.
# A kernel's three tools run one after the other, several kernels at once. Every sanitizer run is
# under `timeout`, none past SAN_BUDGET_S. The whole application is checked (cuBLAS's reference
# kernels too: their racecheck reports are counted apart, as in the earlier records); a report
# that names the tilec kernel, or no vendor kernel, is an error.
# $OUT gets fuzz-sanitize.json (schema tilec-fuzz-sanitize/1), fuzz-sanitize-summary.txt
# (printed last), fuzz-sanitize-logs.tgz and gpu.txt.
#   SAN_JOBS=8             kernels at once
#   SAN_BUDGET_S=480       seconds after which no sanitizer run starts or runs
#   SAN_TIMEOUT=240        seconds one sanitizer run may take before it counts as a hang
#   SAN_TOOLS="racecheck synccheck memcheck"
#   SAN_FROM=I             only the kernels from the I-th line of sanitize-cases.tsv
#   SAN_ONLY=NAME,...      only these kernels of the sample
# usage: OUT=/tmp/out bash run-fuzz-sanitize.sh
set -uo pipefail
t0=$(date +%s)
cd "$(dirname "$0")"
. ./gpu-env.sh
jobs=${SAN_JOBS:-8}
budget=${SAN_BUDGET_S:-480}
san_timeout=${SAN_TIMEOUT:-240}
tools=${SAN_TOOLS:-racecheck synccheck memcheck}
deadline=$((t0 + budget))
export SAN_TIMEOUT=$san_timeout SAN_TOOLS="$tools"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
[ -n "$sanitizer" ] || echo "NOTE: no compute-sanitizer on PATH or under /usr/local/cuda*: every run will fail"
work=$(mktemp -d /tmp/tilec-fuzz-san.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
# tar needs xz for this; Python's tarfile reads it without.
tar -C "$work" -xJf artifacts.tar.xz 2>/dev/null || python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' artifacts.tar.xz "$work" ||
  { echo "FAIL: cannot unpack artifacts.tar.xz"; exit 1; }
list=$work/sample.tsv
awk -F'\t' -v from="${SAN_FROM:-1}" -v only=",${SAN_ONLY:-}," '(only == ",," && NR >= from) || index(only, "," $1 ",")' sanitize-cases.tsv >"$list"
echo "== $(wc -l <"$list") kernels x ($tools) with ${sanitizer:-no compute-sanitizer}, $jobs kernels at once"

# NAME FLAG VALUE: each tool in turn; LOGS/NAME.TOOL.rc gets `rc limit seconds` (or NOT_RUN).
run_kernel() {
  local name=$1 flag=$2 value=$3 tool
  for tool in $tools; do
    timed_run "$deadline" "$san_timeout" 30 "$logs/$name.$tool.rc" "$logs/$name.$tool.log" \
      "${sanitizer:-compute-sanitizer}" --tool "$tool" bin/tilec-gpu-test "$work/artifacts/$name" --no-timing "$flag" "$value"
  done
}

while IFS=$'\t' read -r name flag value; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  run_kernel "$name" "$flag" "$value" </dev/null &
done <"$list"
wait
echo "== sanitizer runs done at $(($(date +%s) - t0)) s"
tar -C "$work" -czf "$out/fuzz-sanitize-logs.tgz" logs
python3 fuzz-report.py sanitize . "$logs" "$out"
