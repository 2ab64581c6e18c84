#!/usr/bin/env bash
# Builds a bundle that times a change to the passes or the lowering at fixed configs: for each
# shape, the kernel another build of tilec (BASE_TILEC, e.g. one built in a worktree at an
# earlier commit) picks, and the same configuration built by this checkout's tilec, so that
# the two differ only by what the change did to the kernel, not by the pick.
#
#   scripts/build-ab-bundle.sh BASE_TILEC PROGRAM SHAPES_FILE
#
# The base build's pick for shape S is S_r2; this build's kernel of the same config is S_r1,
# made from the base build's IR after config selection (`--pass-pipeline=tile-select-config{..}
# --emit=nv`) and the rest of the base build's pipeline (`--dump-pass-pipeline`); its line
# table names that intermediate file, the base kernel's the program. The r1 kernels are built
# by scripts/build-gpu-bundle.sh, so ptxas checks them (spills fail the build) and the
# runtime binaries validate them offline, as for any bundle. The bundle
# (TILEC_BUNDLE_DIR, default .device/ab) is a sweep bundle: sweep.txt lists both kernels of
# each shape under the base build's config, and run-sweep.sh on the GPU machine times them in
# one tilec-bench run per shape (checking the r1 kernels on odd shapes first unless
# SWEEP_CHECKS=0) and prints r1 and r2 against the vendor per shape and in geometric mean.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ $# -ne 3 ]; then
  echo "usage: scripts/build-ab-bundle.sh BASE_TILEC PROGRAM SHAPES_FILE" >&2
  exit 2
fi
base=$1 program=$2 shapes=$3
out=${TILEC_BUNDLE_DIR:-.device/ab}
[ -x "$base" ] || { echo "build-ab-bundle.sh: $base is not an executable tilec" >&2; exit 2; }
[ -r "$program" ] || { echo "build-ab-bundle.sh: cannot read $program" >&2; exit 2; }
[ -r "$shapes" ] || { echo "build-ab-bundle.sh: cannot read $shapes" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# This build's kernels go through scripts/build-gpu-bundle.sh (ptxas, the runtime binaries,
# the offline check), as a variants list of each config's IR after selection and the passes
# after it; the base build's picks join the bundle after it.
: >"$work/variants.txt"
configs=()
for shape in $(grep -v '^#' "$shapes"); do
  pipeline=$("$base" compile "$program" --shape "$shape" --dump-pass-pipeline -o "$work/o" 2>&1 | sed -n 's/^builtin.module(\(.*\))$/\1/p')
  select=${pipeline%%\},*}\}
  rest=${pipeline#*\},}
  if [ -z "$pipeline" ] || [ "$rest" = "$pipeline" ] || [[ $rest == *" "* ]]; then
    echo "build-ab-bundle.sh: $base gave no pass pipeline after config selection for $shape" >&2
    exit 1
  fi
  "$base" compile "$program" --pass-pipeline="$select" --emit=nv >"$work/$shape.tile"
  echo "${shape}_r1 $work/$shape.tile $rest" >>"$work/variants.txt"
  configs+=("$shape")
done
TILEC_BUNDLE_DIR=$out TILEC_BUNDLE_PROFILE=release scripts/build-gpu-bundle.sh "$work/variants.txt"

: >"$out/sweep.txt"
for shape in "${configs[@]}"; do
  "$base" compile "$program" --shape "$shape" -o "$out/artifacts/${shape}_r2" >/dev/null
  config=$(sed -n 's/^ *"config": "\(.*\)",$/\1/p' "$out/artifacts/${shape}_r2/manifest.json")
  printf '%s %s_r1 %s\n%s %s_r2 %s\n' "$shape" "$shape" "$config" "$shape" "$shape" "$config" >>"$out/sweep.txt"
done
cp scripts/run-sweep.sh scripts/sweep-regret.py "$out/"
case "$program" in *fp8*) echo fp8 ;; *) echo bf16 ;; esac >"$out/sweep-dtype.txt"
