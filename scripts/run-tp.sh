#!/usr/bin/env bash
# On the GPU machine, in a bundle built by `scripts/build-gpu-bundle.sh scripts/gpu-variants-tp.txt`:
# checks the tensor-parallel GEMMs with one rank on small shapes (N and K off the tile), then,
# where the machine has two GPUs or more, checks and times both modes at the three shapes of
# gpu-variants-tp.txt on two ranks (bin/tilec-tp). Logs and JSON go to $OUT as one archive,
# the summary to $OUT/tp.txt.
# usage: OUT=/tmp/out bash run-tp.sh [bf16|fp8 ...]
#        (TP_TWO_RANKS_ONLY=1 skips the one-rank checks, TP_ONE_RANK_ONLY=1 the two-rank runs)
set -uo pipefail
cd "$(dirname "$0")"
. ./gpu-env.sh
work=$(mktemp -d)
dtypes=${*:-bf16 fp8}
gpus=$(nvidia-smi -L | grep -c '^GPU')
declare -A shape=([sq]=8192x8192x8192 [up]=8192x28672x8192 [down]=8192x8192x28672)
{
  echo "== one rank, small shapes"
  [ -n "${TP_TWO_RANKS_ONLY:-}" ] || for d in $dtypes; do
    for mode in ag rs; do
      # FP8 needs K (rs: K/2) on the 128-wide scale blocks; M divides into ranks x chunks.
      for s in 1024x1000x2048 512x4096x1024; do
        timeout 120 bin/tilec-tp --kernel "artifacts/tp_${d}_${mode}_sq" --mode "$mode" --shape "$s" --gpus 1 --chunks 1,4 --reps 3 --warmup 1 \
          >"$work/w1-$d-$mode-$s.log" 2>&1
        echo "$d $mode $s rc=$? $(grep -c pass "$work/w1-$d-$mode-$s.log") pass $(grep -c FAIL "$work/w1-$d-$mode-$s.log") FAIL"
      done
    done
  done
  if [ "$gpus" -ge 2 ] && [ -z "${TP_ONE_RANK_ONLY:-}" ]; then
    echo "== two ranks"
    for d in $dtypes; do
      for name in sq up down; do
        for mode in ag rs; do
          log="$work/w2-$d-$mode-$name.log"
          # The FP8 picks are persistent: also time their overlapped GEMMs over the SMs that
          # NCCL's 24 channels (seen on the H200 pair) leave free.
          sms=0; [ "$d" = fp8 ] && sms=0,24
          # The first run logs NCCL's set-up (channels, transport).
          debug=WARN; [ "$d$mode$name" = "${dtypes%% *}agsq" ] && debug=INFO
          NCCL_DEBUG=$debug timeout 240 bin/tilec-tp --kernel "artifacts/tp_${d}_${mode}_$name" --mode "$mode" --shape "${shape[$name]}" \
            --gpus 2 --chunks 1,2,4,8 --comm-sms "$sms" --json "$work/w2-$d-$mode-$name.json" >"$log" 2>&1
          echo "-- $d $mode $name ${shape[$name]} rc=$?"
          grep -v ' NCCL INFO ' "$log"
        done
      done
    done
  fi
} | tee "$out/tp.txt"
tar czf "$out/tp-logs.tgz" -C "$work" .
