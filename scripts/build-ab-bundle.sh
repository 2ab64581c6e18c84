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
# table names that intermediate file, the base kernel's the program. The bundle
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

echo "== building tilec and tilec-runtime (release)"
cargo build --release -p tilec --bin tilec
cargo build --release -p tilec-runtime --bins
tilec=target/release/tilec

rm -rf "$out"
mkdir -p "$out/bin" "$out/artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
: >"$out/sweep.txt"
for shape in $(grep -v '^#' "$shapes"); do
  pipeline=$("$base" compile "$program" --shape "$shape" --dump-pass-pipeline -o "$work/o" 2>&1 | sed -n 's/^builtin.module(\(.*\))$/\1/p')
  select=${pipeline%%\},*}\}
  rest=${pipeline#*\},}
  if [ -z "$pipeline" ] || [ "$rest" = "$pipeline" ]; then
    echo "FAIL $shape: $base gave no pass pipeline after config selection" >&2
    failed=1
    continue
  fi
  if ! "$base" compile "$program" --shape "$shape" -o "$out/artifacts/${shape}_r2" >"$work/log" 2>&1 ||
     ! "$base" compile "$program" --pass-pipeline="$select" --emit=nv >"$work/$shape.tile" 2>"$work/log" ||
     ! "$tilec" compile "$work/$shape.tile" --pass-pipeline="$rest" -o "$out/artifacts/${shape}_r1" >>"$work/log" 2>&1; then
    echo "FAIL $shape:" >&2
    cat "$work/log" >&2
    failed=1
    continue
  fi
  config=$(sed -n 's/^ *"config": "\(.*\)",$/\1/p' "$out/artifacts/${shape}_r2/manifest.json")
  printf '%s %s_r1 %s\n%s %s_r2 %s\n' "$shape" "$shape" "$config" "$shape" "$shape" "$config" >>"$out/sweep.txt"
  echo "ok   $shape: $config"
done

for src in runtime/src/bin/*.rs; do
  cp "target/release/$(basename "$src" .rs)" "$out/bin/"
done
cp scripts/gpu-env.sh scripts/run-sweep.sh scripts/sweep-regret.py "$out/"
case "$program" in *fp8*) echo fp8 ;; *) echo bf16 ;; esac >"$out/sweep-dtype.txt"
du -sh "$out" | sed 's/^/bundle size: /'
exit $failed
