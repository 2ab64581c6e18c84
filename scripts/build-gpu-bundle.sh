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
#   .device/fuzz/run-fuzz.sh                   (with --fuzz) the differential fuzz run: every drawn
#   .device/fuzz/run-fuzz-sanitize.sh          kernel checked against the vendor, then a sample of
#                                              them under compute-sanitizer (docs/benchmarks/robustness)
#
# usage: scripts/build-gpu-bundle.sh [VARIANTS_FILE]
#        scripts/build-gpu-bundle.sh --sweep [CANDIDATES [PROGRAM [SHAPES_FILE]]]
#        scripts/build-gpu-bundle.sh --sweep-clusters [PROGRAM]
#        scripts/build-gpu-bundle.sh --fuzz CASES_DIR
#   --sweep compiles, for each of the 20 benchmark shapes, the config selection's pick and
#   the next CANDIDATES-1 configurations of its ranking (default 8 in all; `tilec compile
#   PROGRAM --shape S --explain` lists them) as artifacts `S_rR` (R = rank, r1 = the pick),
#   lists them in sweep.txt, and adds run-sweep.sh, which times each shape's candidates in
#   one tilec-bench run and prints the pick's regret (its time over the fastest
#   candidate's) and every candidate's ratio to the faster baseline. PROGRAM is
#   examples/gemm_bf16.tile (default) or the block-scaled FP8
#   examples/gemm_fp8_blockscaled.tile, timed against the FP8 baselines. SHAPES_FILE lists
#   other shapes, MxNxK a line (scripts/draw-shapes.py draws them), instead of the 20.
#   --sweep-clusters does the same for three kernels a shape: the pick (`S_r1`) and the pick
#   with its CTAs pinned into 2-CTA clusters along M (`S_m`, multicasting B) and along N
#   (`S_n`, multicasting A), `tilec compile --cluster m|n`.
#   VARIANTS_FILE (default scripts/gpu-variants.txt) lists one artifact a line:
#   `NAME FILE PIPELINE [FLAGS...]`, compiled with
#   `tilec compile FILE --pass-pipeline=PIPELINE FLAGS...` (tilec's default pipeline, config
#   selection first, when PIPELINE is `-`); FLAGS pin the block sizes of a parametric program
#   (`--param BLOCK_N=256`) or give the shape (`--shape MxNxK`); `#` starts a comment.
#   --fuzz compiles the cases scripts/draw-fuzz-cases.py drew into CASES_DIR (its variants.txt)
#   into .device/fuzz: a case tilec refuses is recorded (refused.tsv, then cases.json) and is no
#   build failure; scripts/fuzz-report.py finish records each kernel's config and picks the
#   sanitizer sample, and the artifacts travel as one artifacts.tar.xz that run-fuzz.sh unpacks.
#   TILEC_BUNDLE_PROFILE=debug uses debug builds (faster to build; the kernels are the same).
#   TILEC_SWEEP_FLAGS='--ranking rules' adds tilec flags to every kernel of a sweep.
#   TILEC_SWEEP_BASELINE=BIN also compiles each shape's pick with another tilec binary (the
#   build before a change) as S_r0, timed beside the candidates and left out of the odd-shape
#   checks: a change's before and after in one interleaved run. It comes before S_r1 in
#   sweep.txt, so that a config both builds pick is judged by the new build's time
#   (scripts/judge-picks.py takes the later of two records of a config).
#   TILEC_BUNDLE_DIR=DIR builds the bundle in DIR instead of .device/bundle, so that several
#   bundles (a BF16 and an FP8 sweep, say) travel in one GPU call.
#   TILEC_TARGET=h100 compiles every kernel for that GPU (`tilec compile --target`; default
#   tilec's default target): the runtime refuses a kernel compiled for another GPU it knows.
#   A kernel whose PTX ptxas rejects, or that spills, serialises wgmma (C7519/C7517) or has its
#   setmaxnreg ignored (C7508), fails the build; C7514 (wgmma serialised by accumulator reads)
#   is reported.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
profile=${TILEC_BUNDLE_PROFILE:-release}
out=${TILEC_BUNDLE_DIR:-.device/bundle}
sweep=0
fuzz=0
benchmark_shapes() {
  printf '4096x4096x4096\n8192x8192x8192\n'
  for m in 64 128 4096; do
    for nk in 2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048; do echo "${m}x$nk"; done
  done
}
if [ "${1:-}" = --sweep ] || [ "${1:-}" = --sweep-clusters ]; then
  sweep=1
  variants=$(mktemp)
  trap 'rm -f "$variants"' EXIT
  if [ "$1" = --sweep ]; then
    candidates=${2:-8}
    program=${3:-examples/gemm_bf16.tile}
    shapes_file=${4:-}
    if [ -n "$shapes_file" ]; then grep -v '^#' "$shapes_file"; else benchmark_shapes; fi | while read -r shape; do
      [ -n "${TILEC_SWEEP_BASELINE:-}" ] && echo "${shape}_r0 $program - --shape $shape ${TILEC_SWEEP_FLAGS:-}"
      for r in $(seq 1 "$candidates"); do
        echo "${shape}_r$r $program - --shape $shape --candidate $r ${TILEC_SWEEP_FLAGS:-}"
      done
    done >"$variants"
  else
    program=${2:-examples/gemm_bf16.tile}
    benchmark_shapes | while read -r shape; do
      echo "${shape}_r1 $program - --shape $shape"
      for along in m n; do echo "${shape}_$along $program - --shape $shape --cluster $along"; done
    done >"$variants"
  fi
elif [ "${1:-}" = --fuzz ]; then
  fuzz=1
  cases=${2:?usage: build-gpu-bundle.sh --fuzz CASES_DIR (scripts/draw-fuzz-cases.py --out CASES_DIR)}
  variants=$cases/variants.txt
  out=${TILEC_BUNDLE_DIR:-.device/fuzz}
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

# tilec ARGS for kernel NAME; a sweep keeps the ranking it explains (on stderr) in
# explain/NAME.txt for sweep.txt, and shows it only when the compile fails; a fuzz case's
# refusal goes to refused.tsv, its first error line.
compile_kernel() {
  local name=$1
  shift
  local tilec=$tilec
  [[ $name == *_r0 ]] && tilec=${TILEC_SWEEP_BASELINE:-$tilec}
  if [ "$fuzz" = 1 ]; then
    "$tilec" "$@" 2>"$out/explain/$name.txt" && return 0
    printf '%s\t%s\n' "$name" "$(grep -m1 'error' "$out/explain/$name.txt" || head -1 "$out/explain/$name.txt")" >>"$out/refused.tsv"
    return 1
  elif [ "$sweep" = 1 ]; then
    "$tilec" "$@" --explain 2>"$out/explain/$name.txt" || { cat "$out/explain/$name.txt" >&2; return 1; }
  else
    "$tilec" "$@"
  fi
}

rm -rf "$out"
mkdir -p "$out/bin" "$out/artifacts" "$out/ptxas" "$out/explain"
failed=0
while read -r name file pipeline flags; do
  case "$name" in ''|'#'*) continue ;; esac
  dir="$out/artifacts/$name"
  args=(compile "$file" -o "$dir")
  [ -n "${TILEC_TARGET:-}" ] && args+=(--target "$TILEC_TARGET")
  [ -n "$pipeline" ] && [ "$pipeline" != - ] && args+=("--pass-pipeline=$pipeline")
  # shellcheck disable=SC2206 # FLAGS are words by design
  [ -n "$flags" ] && args+=($flags)
  if ! compile_kernel "$name" "${args[@]}"; then
    if [ "$fuzz" = 1 ]; then
      echo "refused $name: $(tail -1 "$out/refused.tsv" | cut -f2)"
      continue
    fi
    echo "FAIL $name: tilec compile" >&2
    failed=1
    continue
  fi
  if [ -n "$ptxas" ]; then
    log="$out/ptxas/$name.txt"
    if ! "$ptxas" --gpu-name sm_90a -v "$dir/kernel.ptx" -o /dev/null >"$log" 2>&1; then
      echo "FAIL $name: ptxas rejected the PTX (see $log)" >&2
      [ "$fuzz" = 1 ] && printf '%s\tptxas rejected the PTX\n' "$name" >>"$out/refused.tsv" && rm -rf "$dir" && continue
      failed=1
      continue
    fi
    if grep -qE 'C7519|C7517|C7508' "$log" || ! grep -q ' 0 bytes spill stores, 0 bytes spill loads' "$log"; then
      echo "FAIL $name: ptxas reports spills, wgmma serialisation or ignored setmaxnreg (see $log)" >&2
      [ "$fuzz" = 1 ] && printf '%s\tptxas: spills, wgmma serialisation or ignored setmaxnreg\n' "$name" >>"$out/refused.tsv" && rm -rf "$dir" && continue
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
  # sweep.txt: SHAPE ARTIFACT CONFIG, one compiled kernel a line, in the order compiled; the
  # config is its rank's row of the ranking its compile explained (explain/ARTIFACT.txt).
  while read -r name _ _ flags; do
    [ -d "$out/artifacts/$name" ] || continue
    rank=1
    [[ $flags =~ --candidate\ ([0-9]+) ]] && rank=${BASH_REMATCH[1]}
    [[ $flags =~ --shape\ ([0-9x]+) ]] && shape=${BASH_REMATCH[1]}
    echo "$shape $name $(awk -v r="$rank" '$1 == r { for (i = 2; i <= NF && $i !~ /^[0-9]+$/; i++) printf "%s ", $i }' "$out/explain/$name.txt")"
  done <"$variants" >"$out/sweep.txt"
  case "$program" in *fp8*) echo fp8 ;; *) echo bf16 ;; esac >"$out/sweep-dtype.txt"
  cp scripts/run-sweep.sh "$out/run-sweep.sh"
  cp scripts/sweep-regret.py "$out/sweep-regret.py"
fi

# Offline check: every artifact loads and validates (without libcuda the test prints SKIPPED).
echo "== offline check of the bundle"
shopt -s nullglob
artifacts=("$out"/artifacts/*/)
if [ ${#artifacts[@]} -eq 0 ]; then
  echo "FAIL: no kernel compiled, the bundle has no artifact" >&2
  failed=1
fi
for dir in "${artifacts[@]}"; do
  if ! msg=$("$out/bin/tilec-gpu-test" "$dir" 2>&1); then
    echo "FAIL $(basename "$dir"): tilec-gpu-test rejected the artifact: $msg" >&2
    failed=1
  else
    echo "$msg" | tail -1
  fi
done
if [ "$fuzz" = 1 ]; then
  cp scripts/run-fuzz.sh scripts/run-fuzz-sanitize.sh scripts/fuzz-report.py "$out/"
  python3 scripts/fuzz-report.py finish "$out" "$cases/cases.json" || failed=1
  # PTX compresses about tenfold: the artifacts travel as one archive, unpacked in /tmp there.
  tar -C "$out" -cf - artifacts | xz -6 -T2 >"$out/artifacts.tar.xz"
  rm -rf "$out/artifacts" "$out/explain"
  # Only tilec-gpu-test runs there.
  find "$out/bin" -type f ! -name tilec-gpu-test -delete
  rm -f "$out"/run-session.sh "$out"/run-tp.sh "$out"/run-grouped.sh "$out"/run-cluster.sh
fi
du -sh "$out" | sed 's/^/bundle size: /'
exit $failed
