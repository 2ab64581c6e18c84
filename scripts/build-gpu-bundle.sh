#!/usr/bin/env bash
# Builds everything a GPU run needs into .device/bundle/ (git-ignored, see DESIGN section 7):
#
#   .device/bundle/bin/tilec-gpu-test          release runtime binary (cudarc, no MLIR/LLVM)
#   .device/bundle/artifacts/<name>/           kernel.ptx + manifest.json, compiled here by tilec
#   .device/bundle/ptxas/<name>.txt            `ptxas -v` report of each kernel (when ptxas is found)
#   .device/bundle/run-session.sh              scripts/gpu-session.sh: correctness, SASS, benchmark
#
#   .device/bundle/run-sweep.sh                (with --sweep) times every shape's candidates
#   .device/bundle/run-tp.sh                   checks and times the tensor-parallel GEMMs (bin/tilec-tp)
#                                              on the kernels of scripts/gpu-variants-tp.txt
#   .device/bundle/run-grouped.sh              checks and times the grouped GEMMs on the kernels of
#                                              scripts/gpu-variants-grouped.txt
#   .device/bundle/run-cluster.sh              checks, sanitizes and times the clustered kernels of
#                                              scripts/gpu-variants-cluster.txt against their twins
#
# usage: scripts/build-gpu-bundle.sh [VARIANTS_FILE]
#        scripts/build-gpu-bundle.sh --sweep [CANDIDATES [PROGRAM]]
#   --sweep compiles, for each of the 20 benchmark shapes, the config selection's pick and
#   the next CANDIDATES-1 configurations of its ranking (default 8 in all; `tilec compile
#   PROGRAM --shape S --explain` lists them) as artifacts `S_rR` (R = rank, r1 = the pick),
#   lists them in sweep.txt, and adds run-sweep.sh, which times each shape's candidates in
#   one tilec-bench run and prints the pick's regret (its time over the fastest
#   candidate's). PROGRAM is examples/gemm_bf16.tile (default) or the block-scaled FP8
#   examples/gemm_fp8_blockscaled.tile, timed against the FP8 baselines.
#   VARIANTS_FILE (default scripts/gpu-variants.txt) lists one artifact a line:
#   `NAME FILE PIPELINE [FLAGS...]`, compiled with
#   `tilec compile FILE --pass-pipeline=PIPELINE FLAGS...` (tilec's default pipeline, config
#   selection first, when PIPELINE is `-`); FLAGS pin the block sizes of a parametric program
#   (`--param BLOCK_N=256`) or give the shape (`--shape MxNxK`); `#` starts a comment.
#   TILEC_BUNDLE_PROFILE=debug uses debug builds (faster to build; the kernels are the same).
#   A kernel whose PTX ptxas rejects, or that spills, serialises wgmma (C7519/C7517) or has its
#   setmaxnreg ignored (C7508), fails the build; C7514 (wgmma serialised by accumulator reads)
#   is reported.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
profile=${TILEC_BUNDLE_PROFILE:-release}
out=.device/bundle
sweep=0
if [ "${1:-}" = --sweep ]; then
  sweep=1
  candidates=${2:-8}
  program=${3:-examples/gemm_bf16.tile}
  variants=$(mktemp)
  trap 'rm -f "$variants"' EXIT
  for m in 64 128 4096; do
    for nk in 2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048; do echo "${m}x$nk"; done
  done | cat <(printf '4096x4096x4096\n8192x8192x8192\n') - | while read -r shape; do
    for r in $(seq 1 "$candidates"); do
      echo "${shape}_r$r $program - --shape $shape --candidate $r"
    done
  done >"$variants"
else
  variants=${1:-scripts/gpu-variants.txt}
fi

flag=()
[ "$profile" = release ] && flag=(--release)
echo "== building tilec and tilec-runtime ($profile)"
cargo build "${flag[@]}" -p tilec --bin tilec
cargo build "${flag[@]}" -p tilec-runtime --bins
tilec=target/$profile/tilec

ptxas=$(scripts/find-ptxas.sh 2>/dev/null || true)
[ -n "$ptxas" ] || echo "NOTE: no ptxas found (TILEC_PTXAS, PATH, pip): kernels are not assembled here"

rm -rf "$out"
mkdir -p "$out/bin" "$out/artifacts" "$out/ptxas"
failed=0
while read -r name file pipeline flags; do
  case "$name" in ''|'#'*) continue ;; esac
  dir="$out/artifacts/$name"
  args=(compile "$file" -o "$dir")
  [ -n "$pipeline" ] && [ "$pipeline" != - ] && args+=("--pass-pipeline=$pipeline")
  # shellcheck disable=SC2206 # FLAGS are words by design
  [ -n "$flags" ] && args+=($flags)
  if ! "$tilec" "${args[@]}"; then
    echo "FAIL $name: tilec compile" >&2
    failed=1
    continue
  fi
  if [ -n "$ptxas" ]; then
    log="$out/ptxas/$name.txt"
    if ! "$ptxas" --gpu-name sm_90a -v "$dir/kernel.ptx" -o /dev/null >"$log" 2>&1; then
      echo "FAIL $name: ptxas rejected the PTX (see $log)" >&2
      failed=1
      continue
    fi
    if grep -qE 'C7519|C7517|C7508' "$log" || ! grep -q ' 0 bytes spill stores, 0 bytes spill loads' "$log"; then
      echo "FAIL $name: ptxas reports spills, wgmma serialisation or ignored setmaxnreg (see $log)" >&2
      failed=1
      continue
    fi
    echo "ok   $name: $(grep -o 'Used [0-9]* registers' "$log"), no spills$(grep -q C7514 "$log" && echo ', C7514 (accumulator reads serialise wgmma)')"
  else
    echo "ok   $name"
  fi
done < "$variants"

# Every binary of tilec-runtime (runtime/src/bin/*.rs): they link neither MLIR nor LLVM.
for src in runtime/src/bin/*.rs; do
  cp "target/$profile/$(basename "$src" .rs)" "$out/bin/"
done

cp scripts/gpu-session.sh "$out/run-session.sh"
cp scripts/gpu-env.sh "$out/gpu-env.sh"
cp scripts/run-tp.sh "$out/run-tp.sh"
cp scripts/run-grouped.sh "$out/run-grouped.sh"
cp scripts/run-cluster.sh "$out/run-cluster.sh"
if [ "$sweep" = 1 ]; then
  # sweep.txt: SHAPE ARTIFACT CONFIG, one compiled candidate a line, in rank order; the
  # configs come from --explain (explain/SHAPE.txt keeps the whole ranking).
  mkdir -p "$out/explain"
  for shape in $(grep -o -- '--shape [0-9x]*' "$variants" | cut -d' ' -f2 | uniq); do
    "$tilec" compile "$program" --shape "$shape" --explain 2>"$out/explain/$shape.txt"
    for dir in "$out/artifacts/${shape}"_r*/; do
      name=$(basename "$dir")
      rank=${name##*_r}
      echo "$rank $shape $name $(awk -v r="$rank" '$1 == r { for (i = 2; i <= NF && $i !~ /^[0-9]+$/; i++) printf "%s ", $i }' "$out/explain/$shape.txt")"
    done | sort -n | cut -d' ' -f2-
  done >"$out/sweep.txt"
  case "$program" in *fp8*) echo fp8 ;; *) echo bf16 ;; esac >"$out/sweep-dtype.txt"
  cp scripts/run-sweep.sh "$out/run-sweep.sh"
  cp scripts/sweep-regret.py "$out/sweep-regret.py"
fi

# Offline check: every artifact loads and validates (without libcuda the test prints SKIPPED).
echo "== offline check of the bundle"
for dir in "$out"/artifacts/*/; do
  if ! msg=$("$out/bin/tilec-gpu-test" "$dir" 2>&1); then
    echo "FAIL $(basename "$dir"): tilec-gpu-test rejected the artifact: $msg" >&2
    failed=1
  else
    echo "$msg" | tail -1
  fi
done
du -sh "$out" | sed 's/^/bundle size: /'
exit $failed
