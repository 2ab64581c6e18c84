#!/usr/bin/env bash
# Builds tilec-bench (release) and bundles it with compiled artifact dirs for
# the GPU machine, which has no Rust toolchain.
#
#   scripts/bench-bundle.sh [--dest DIR] [ARTIFACT_DIR...]
#
# DIR defaults to <main worktree>/.device/bench: the device tool sends the
# main worktree (/work/main), not a linked worktree such as /work/wt-bench, so
# the bundle goes there even when this runs from a linked worktree.
# `.device/` is git-ignored (.git/info/exclude), hence the carry below.
# The bundle: tilec-bench (stripped), artifacts/<name>/{kernel.ptx,manifest.json},
# run.sh (finds cuBLAS, sets LD_LIBRARY_PATH, writes bench.{json,log} to $OUT).
# Draw the JSON on the build machine: tilec-report plot bench.json -o bench.svg
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

dest=""
arts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) [ $# -ge 2 ] || usage; dest="$2"; shift 2 ;;
    --dest=*) dest="${1#--dest=}"; shift ;;
    -h|--help) usage ;;
    -*) echo "bench-bundle: unknown option $1" >&2; usage ;;
    *) arts+=("$1"); shift ;;
  esac
done

repo=$(git rev-parse --show-toplevel)
main_wt=$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)")
[ -n "$dest" ] || dest="$main_wt/.device/bench"

# Check the artifact dirs before building.
for a in ${arts[@]+"${arts[@]}"}; do
  for f in kernel.ptx manifest.json; do
    [ -f "$a/$f" ] || { echo "bench-bundle: $a has no $f" >&2; exit 2; }
  done
done

cd "$repo"
cargo build --release --locked -p tilec-runtime --bin tilec-bench
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
bin="$target_dir/release/tilec-bench"
[ -x "$bin" ] || { echo "bench-bundle: $bin not built" >&2; exit 1; }

# Only ever remove a previous bundle (never an arbitrary directory).
if [ -n "$(ls -A "$dest" 2>/dev/null)" ] && [ ! -f "$dest/.tilec-bench-bundle" ]; then
  echo "bench-bundle: $dest exists and is not a bench bundle; refusing to overwrite" >&2
  exit 2
fi
rm -rf "$dest"
mkdir -p "$dest/artifacts"
touch "$dest/.tilec-bench-bundle"
cp "$bin" "$dest/tilec-bench"
command -v strip >/dev/null && strip "$dest/tilec-bench" || true

names=()
for a in ${arts[@]+"${arts[@]}"}; do
  base=$(basename "$(cd "$a" && pwd)")
  name="$base"; i=2
  while [ -e "$dest/artifacts/$name" ]; do name="${base}_$i"; i=$((i + 1)); done
  mkdir -p "$dest/artifacts/$name"
  cp "$a/kernel.ptx" "$a/manifest.json" "$dest/artifacts/$name/"
  names+=("$name")
done

cat > "$dest/run.sh" <<'EOF'
#!/bin/bash
# Runs tilec-bench on the GPU machine with every bundled artifact; extra
# arguments go to tilec-bench (e.g. --baseline-only, --shapes square).
# Writes bench.json and bench.log to $OUT (or here).
cd "$(dirname "$0")"
OUT=${OUT:-.}
# cuBLAS 13 from the CUDA 13 wheels (see runtime/scripts/run_gpu.sh); else
# search the Python nvidia packages; ldconfig's /usr/local/cuda copy is the fallback.
LIB=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
if [ ! -e "$LIB/libcublasLt.so.13" ]; then
  ROOTS=$(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)
  L=$(find $ROOTS -name 'libcublasLt.so*' 2>/dev/null | head -1)
  LIB=${L:+$(dirname "$L")}
fi
[ -n "$LIB" ] && export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu --format=csv 2>&1 | tail -2
ARTS=()
for a in artifacts/*/; do [ -f "$a/manifest.json" ] && ARTS+=(--artifact "${a%/}"); done
./tilec-bench "${ARTS[@]}" --json "$OUT/bench.json" "$@" > "$OUT/bench.log" 2>&1
rc=$?
cat "$OUT/bench.log"
echo "tilec-bench exit status $rc"
exit $rc
EOF
chmod +x "$dest/run.sh"

echo "bundle: $dest ($(du -sh "$dest" | cut -f1)): tilec-bench, ${#names[@]} artifact(s)${names[*]:+: ${names[*]}}"
rel="${dest#"$main_wt"/}"
if [ "$rel" != "$dest" ]; then
  echo "run on the GPU machine (device tool, from $main_wt), carry [\"$rel\"]:"
  echo "  bash $rel/run.sh                  # add e.g. --baseline-only or --shapes square --dtypes bf16"
else
  echo "note: $dest is outside the main worktree $main_wt; the device tool will not send it"
  echo "  bash $dest/run.sh"
fi
echo "by hand: LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib ./tilec-bench --artifact artifacts/NAME --json \$OUT/bench.json"
echo "then here: cargo run --release -p tilec-report -- plot bench.json -o bench.svg"
