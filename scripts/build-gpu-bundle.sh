#!/usr/bin/env bash
# Builds everything a GPU run needs into .device/bundle/ (git-ignored, see DESIGN section 7):
#
#   .device/bundle/bin/tilec-gpu-test          release runtime binary (cudarc, no MLIR/LLVM)
#   .device/bundle/artifacts/<name>/           kernel.ptx + manifest.json, compiled here by tilec
#   .device/bundle/ptxas/<name>.txt            `ptxas -v` report of each kernel (when ptxas is found)
#   .device/bundle/run-gpu-tests.sh            runs tilec-gpu-test on every artifact (args passed on)
#
# usage: scripts/build-gpu-bundle.sh [KERNEL.tile ...]
#   Without arguments, compiles the nv-level bf16 GEMMs that tilec-gpu-test can check (A[M,K],
#   B[N,K] -> C[M,N]). Artifact names are the file names without `.tile` (and without `_nv`).
#   TILEC_BUNDLE_PROFILE=debug uses debug builds (faster to build; the kernels are the same).
#   A kernel whose PTX ptxas rejects, or that spills or serialises wgmma (C7519/C7517), fails
#   the build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
profile=${TILEC_BUNDLE_PROFILE:-release}
out=.device/bundle

kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
  kernels=(
    tests/lit/nv/gemm_bf16_nv.tile
    tests/lit/codegen/gemm_bf16_bk32_sw64.tile
    tests/lit/codegen/gemm_bf16_bk16_sw32.tile
    tests/lit/codegen/gemm_bf16_noswizzle.tile
    tests/lit/codegen/gemm_bf16_bn64.tile
    tests/lit/codegen/gemm_bf16_bm64.tile
    tests/lit/codegen/gemm_bf16_bm64_bn256.tile
    tests/lit/codegen/gemm_bf16_2stage.tile
    tests/lit/codegen/gemm_bf16_8warps_bn256.tile
  )
  # Not in the default list: gemm_bf16_b_kn*.tile (B stored K x N) and gemm_f16.tile compile and
  # assemble too, but tilec-gpu-test only knows bf16 A[M,K] x B[N,K]^T.
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
for k in "${kernels[@]}"; do
  name=$(basename "$k" .tile)
  name=${name%_nv}
  dir="$out/artifacts/$name"
  if ! "$tilec" compile "$k" -o "$dir"; then
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
    if grep -qE 'C7519|C7517' "$log" || ! grep -q ' 0 bytes spill stores, 0 bytes spill loads' "$log"; then
      echo "FAIL $name: ptxas reports spills or wgmma serialisation (see $log)" >&2
      failed=1
      continue
    fi
    echo "ok   $name: $(grep -o 'Used [0-9]* registers' "$log"), no spills"
  else
    echo "ok   $name"
  fi
done

# Every binary of tilec-runtime (runtime/src/bin/*.rs): they link neither MLIR nor LLVM.
for src in runtime/src/bin/*.rs; do
  cp "target/$profile/$(basename "$src" .rs)" "$out/bin/"
done

cat >"$out/run-gpu-tests.sh" <<'EOF'
#!/usr/bin/env bash
# Runs tilec-gpu-test on every artifact of this bundle; extra arguments (e.g. --shapes) are passed on.
# cuBLAS may live in a Python environment: export LD_LIBRARY_PATH=.../nvidia/cu13/lib first.
cd "$(dirname "$0")"
status=0
for dir in artifacts/*/; do
  name=$(basename "$dir")
  echo "===== $name"
  bin/tilec-gpu-test "$dir" "$@" || status=1
done
exit $status
EOF
chmod +x "$out/run-gpu-tests.sh"

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
