#!/bin/bash
# One GPU session for the tilec runtime: device facts, cuBLAS discovery,
# the naive GEMM fixtures (plain and with a residual), the TMA copy fixture, and
# a rejected shape.
# Expects beside it: tilec-gpu-test, tilec-runtime-unit (the release unit-test
# binary) and fixtures/ (copies of runtime/tests/fixtures). Its first run is
# written up in docs/archive/gpu-journal.md.
cd "$(dirname "$0")"
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== python nvidia.cublas:"; python3 -c "import nvidia.cublas as m; print(m.__path__)" 2>&1
ROOTS=$(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)
LIB=$(find $ROOTS -name 'libcublas.so*' 2>/dev/null | head -1)
echo "libcublas found at: $LIB"; ls $(dirname "$LIB") 2>/dev/null | grep -i cublas
echo "== ldconfig cublas:"; ldconfig -p | grep -i cublas | head -3
echo "== without LD_LIBRARY_PATH (LD_LIBRARY_PATH was '$LD_LIBRARY_PATH')"
env -u LD_LIBRARY_PATH ./tilec-gpu-test fixtures/naive_gemm --shapes 128x128x64; echo "rc=$?"
export LD_LIBRARY_PATH=$(dirname "$LIB"):$LD_LIBRARY_PATH
echo "== unit tests (GPU smoke)"; ./tilec-runtime-unit gpu_smoke --nocapture 2>&1 | tail -5
echo "== naive_gemm"; ./tilec-gpu-test fixtures/naive_gemm; echo "rc=$?"
echo "== naive_gemm_residual (C = bf16(0.5 A B^T + 2 R))"; ./tilec-gpu-test fixtures/naive_gemm_residual; echo "rc=$?"
echo "== tma_copy"; ./tilec-gpu-test fixtures/tma_copy --shapes 64x64,128x128,129x264,64x8,1000x1008,4096x4096,8192x8192; echo "rc=$?"
echo "== tma_copy, shape that must be rejected (row of 257 bf16 = 514 B)"
./tilec-gpu-test fixtures/tma_copy --shapes 129x257; echo "rc=$?"
