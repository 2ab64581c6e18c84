#!/usr/bin/env bash
# The main job: compile examples/gemm_bf16.tile to PTX and an artifact; where
# an NVIDIA driver is present, run the kernel against cuBLAS and print TFLOP/s.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --bin tilec && cargo build --release -p tilec-runtime --bin tilec-gpu-test
out=target/artifacts/gemm_bf16
./target/release/tilec compile examples/gemm_bf16.tile -o "$out"
echo "artifact: $out ($(wc -c < "$out/kernel.ptx") bytes of PTX)"
grep -c 'wgmma.mma_async' "$out/kernel.ptx" | sed 's/^/wgmma.mma_async instructions: /'
ptxas="$(bash scripts/find-ptxas.sh)"
"$ptxas" --gpu-name sm_90a -v "$out/kernel.ptx" -o /dev/null
# Runs the kernel where libcuda exists; elsewhere it says SKIPPED and exits 0.
./target/release/tilec-gpu-test "$out" --shapes 4096x4096x4096,1000x1000x2000
