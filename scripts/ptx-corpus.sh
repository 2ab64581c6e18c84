#!/usr/bin/env bash
# Compiles a corpus of kernels to PTX, one NAME.ptx (and NAME.err) per kernel in OUTDIR, so
# that two builds of tilec, or two back-end pipelines, can be compared byte for byte:
#
#   scripts/ptx-corpus.sh [--quick] OUTDIR [TILEC FLAGS...]
#
# The corpus: every kernel of the GPU variant lists (scripts/gpu-variants*.txt), and the pick
# of each GEMM example at every shape of docs/benchmarks/cost-model/shapes/ (benchmark,
# validation, deep K, decode). --quick compiles 16 kernels of different schedules, dtypes and
# epilogues instead (what scripts/prune-llvm-pipeline.py tries each pipeline on). TILEC FLAGS
# go to every compile (--llvm-pass-pipeline=..., --upstream-pass-pipeline=...); TILEC names
# the binary (default target/release/tilec). A kernel that does not compile leaves an empty
# NAME.ptx and its error in NAME.err.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
out=${1:?usage: scripts/ptx-corpus.sh [--quick] OUTDIR [TILEC FLAGS...]}; shift
tilec=${TILEC:-target/release/tilec}
mkdir -p "$out"

one() {  # NAME ARGS...
    local name=$1; shift
    "$tilec" compile "$@" --emit=ptx > "$out/$name.ptx" 2> "$out/$name.err" || true
}

if [ $quick = 1 ]; then
    one bf16_4096 examples/gemm_bf16.tile --shape 4096x4096x4096 "$@"
    one bf16_64 examples/gemm_bf16.tile --shape 64x2112x7168 "$@"
    one bf16_deep_k examples/gemm_bf16.tile --shape 512x512x65536 "$@"
    one bf16_odd examples/gemm_bf16.tile --shape 1051x320x1472 "$@"
    one bf16_decode examples/gemm_bf16.tile --shape 4x4096x14336 "$@"
    one bf16_one_stage examples/gemm_bf16.tile --pass-pipeline=tile-canonicalize,tile-assign-layouts,tile-lower-to-nv,tile-canonicalize --param BLOCK_M=128 --param BLOCK_N=128 "$@"
    one fp8_4096 examples/gemm_fp8_blockscaled.tile --shape 4096x7168x16384 "$@"
    one fp8_128 examples/gemm_fp8_blockscaled.tile --shape 128x2112x7168 "$@"
    one fp8_decode examples/gemm_fp8_blockscaled.tile --shape 4x3072x32576 "$@"
    one fp8_sa_k_major examples/gemm_fp8_blockscaled_sa_k_major.tile --shape 2048x2048x2048 "$@"
    one bias_gelu examples/gemm_bias_gelu.tile --shape 4096x4096x4096 "$@"
    one residual examples/gemm_residual.tile --shape 6190x2400x4016 "$@"
    one swiglu examples/mlp_swiglu.tile --shape 4096x28672x4096 "$@"
    one fp8_quantize examples/gemm_fp8_quantize.tile --shape 4096x7168x4096 "$@"
    one grouped_bf16 examples/grouped_contiguous_bf16.tile "$@"
    one grouped_masked_fp8 examples/grouped_masked_fp8.tile "$@"
    exit 0
fi

for list in scripts/gpu-variants.txt scripts/gpu-variants-cluster.txt scripts/gpu-variants-grouped.txt scripts/gpu-variants-tp.txt; do
    while read -r name file pipeline flags; do
        case "$name" in ''|'#'*) continue ;; esac
        # shellcheck disable=SC2086 # the flags are words
        if [ "$pipeline" = - ]; then
            one "variant_$name" "$file" $flags "$@"
        else
            one "variant_$name" "$file" --pass-pipeline="$pipeline" $flags "$@"
        fi
    done < "$list"
done
shapes=$(cat docs/benchmarks/cost-model/shapes/{benchmark,validation,deep-k,decode}.txt | grep -v '^#' | sort -u)
for example in gemm_bf16 gemm_fp8_blockscaled gemm_fp8_blockscaled_sa_k_major gemm_bias_gelu gemm_residual mlp_swiglu gemm_fp8_quantize; do
    for shape in $shapes; do
        one "${example}_$shape" "examples/$example.tile" --shape "$shape" "$@"
    done
done
