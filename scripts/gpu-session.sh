#!/usr/bin/env bash
# Runs on the GPU machine from a bundle made by scripts/build-gpu-bundle.sh
# (copied into it as run-session.sh): correctness of every artifact, the
# benchmark against cuBLAS/cuBLASLt, and a look at the SASS. Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")"
. ./gpu-env.sh
date -u | tee -a "$out/gpu.txt"

echo "== correctness" | tee "$out/correctness.log"
for dir in artifacts/*/; do
  name=$(basename "$dir")
  shapes=()
  # A C stored by TMA needs rows of a multiple of 16 bytes (the runtime refuses N = 257 so):
  # such a kernel's odd shape takes N = 264, still not a multiple of its tile, as
  # tilec-gpu-test's default shapes do for it.
  odd=$(python3 -c 'import json, sys; print("129x264x192" if any(p.get("kind") == "tma" and p.get("tensor") == "C" for p in json.load(open(sys.argv[1]))["params"]) else "129x257x192")' "$dir/manifest.json")
  # B stored K x N needs N * 2 bytes to be a multiple of 16 for TMA.
  case "$name" in
    b_kn*) shapes=(--shapes 128x128x64,128x128x4096,4096x4096x4096,1000x1000x2000,136x264x192) ;;
    ws*) shapes=(--shapes 128x128x64,128x128x4096,4096x4096x4096,1000x1000x2000,$odd,8192x8192x8192) ;;
    # Deep K (each split's range), a K shorter than the splits (empty ranges), odd M.
    splitk*) shapes=(--shapes 128x128x64,1000x1000x2000,129x264x192,512x512x65536,300x520x65528) ;;
    # Resident scales: K loops of many chunks (the chunk is the selected shape's), odd M, N a multiple of 8.
    *_resident_*) shapes=(--shapes 128x128x64,128x128x4096,1000x1000x2000,129x264x192,5x4104x16384) ;;
  esac
  echo "===== $name" >>"$out/correctness.log"
  timeout 300 bin/tilec-gpu-test "$dir" "${shapes[@]}" >>"$out/correctness.log" 2>&1; echo "rc=$?" >>"$out/correctness.log"
done
grep -E "=====|PASS|FAIL|rc=" "$out/correctness.log" | grep -vE "^ +[0-9x]+ .*PASS" | tail -60

echo "== SASS"
for a in ${SASS_ARTIFACTS:-bf16_s4 ws2_128x256_p_s4 ws2_p_s3}; do
  ptxas --gpu-name sm_90a "artifacts/$a/kernel.ptx" -o "/tmp/$a.cubin" 2>&1 | head -3
  cuobjdump -sass "/tmp/$a.cubin" > "/tmp/$a.sass" 2>&1
  echo "$a: HGMMA $(grep -c HGMMA "/tmp/$a.sass"), WARPGROUP.ARRIVE $(grep -c 'WARPGROUP.ARRIVE' "/tmp/$a.sass"), WARPGROUP.DEPBAR $(grep -c 'WARPGROUP.DEPBAR' "/tmp/$a.sass"), WARPSYNC $(grep -c 'WARPSYNC' "/tmp/$a.sass")"
done

# K = 2048 is 32 BF16 or 16 FP8 K blocks, more than any kernel's stages: a
# K loop no longer than its stages never reuses one, and hides races between
# a stage's release and its refill (the FP8 scales' lane-0 release, 2026-11-25).
echo "== compute-sanitizer (small shapes, stages reused)"
for tool in racecheck synccheck memcheck; do
  for a in ${SANITIZE_ARTIFACTS:-bf16_s4 ws1_s4 ws2_p_s4}; do
    timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 3 bin/tilec-gpu-test "artifacts/$a" --shapes 256x256x512,256x256x2048 >/tmp/sanitize.log 2>&1
    rc=$?
    cat /tmp/sanitize.log >>"$out/sanitize.log"
    echo "$tool $a: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/sanitize.log | tr '\n' ' ')"
  done
done

# A workspace is per stream: the same split-K or stream-K kernel on 2 and 4 streams at once, every result
# checked against cuBLAS and bit for bit against the others.
echo "== split-K workspace on several streams at once"
for a in ${STREAMS_ARTIFACTS:-splitk_ws_512 splitk_ws_64x64 streamk_8192}; do
  for s in 2 4; do
    timeout 300 bin/tilec-gpu-test "artifacts/$a" --streams "$s" --rounds 1000 --shapes 512x512x8192,300x520x4096 >>"$out/streams.log" 2>&1
    echo "$a on $s streams: rc=$?"
  done
done

echo "== benchmark"
bench=()
for a in ${BENCH_ARTIFACTS:-bf16_s3 bf16_s4 t128x256_s3 t128x256_s4 t64x128_s6 ws1_s4 ws1_p_s4 ws2_s4 ws2_p_s4 ws2_s5 ws2_p_s5 ws2_128x256_s4 ws2_128x256_p_s4 ws_persistent_128x256_s4 a_regs_s4 a_regs_ws2_p_s4}; do bench+=(--artifact "artifacts/$a"); done
timeout 600 bin/tilec-bench "${bench[@]}" --shapes "${BENCH_SHAPES:-square}" --dtypes bf16 --json "$out/bench.json" >"$out/bench.log" 2>&1
echo "bench rc=$?"; tail -40 "$out/bench.log"

echo "== FP8 baselines (cuBLASLt e4m3: per-tensor scales, and block scales 1x128 / 128x128)"
# FP8_BASELINE=0 skips; FP8_SHAPES picks the shapes (default: the 20 benchmark shapes).
# Any artifacts/fp8*/ (FP8 kernels) are timed with the baselines in the same rounds.
if [ "${FP8_BASELINE:-1}" != 0 ]; then
  fp8=()
  for a in artifacts/fp8*/; do [ -d "$a" ] && fp8+=(--artifact "$a"); done
  timeout 600 bin/tilec-bench "${fp8[@]}" --dtypes fp8 --shapes "${FP8_SHAPES:-default}" --json "$out/bench-fp8.json" >"$out/bench-fp8.log" 2>&1
  echo "fp8 bench rc=$?"; grep -E "cublaslt-fp8|ERROR|FAIL" "$out/bench-fp8.log" | tail -24; tail -6 "$out/bench-fp8.log"
  # Block-scaled FP8 kernels: odd shapes (M not a multiple of 64, N straddling 128-column scale blocks).
  for a in artifacts/fp8_block*/; do
    [ -d "$a" ] || continue
    echo "===== $a" >>"$out/correctness-fp8.log"
    timeout 300 bin/tilec-gpu-test "$a" --shapes "${FP8_TEST_SHAPES:-128x128x128,129x200x300,1000x1000x2000,64x2112x7168,4096x4096x4096,4000x7000x1536}" >>"$out/correctness-fp8.log" 2>&1
    echo "tilec-gpu-test $a rc=$?"
  done
fi

echo "== grouped GEMM baselines (per-expert cuBLAS loop, cublasGemmGroupedBatchedEx, per-expert cuBLASLt FP8 block-scaled)"
# GROUPED=1 runs them (a few minutes: 12 problems, up to 32 experts of 4096x7168).
if [ "${GROUPED:-0}" != 0 ]; then
  timeout 600 bin/tilec-bench --grouped --reps "${GROUPED_REPS:-30}" --json "$out/bench-grouped.json" >"$out/bench-grouped.log" 2>&1
  echo "grouped bench rc=$?"; tail -44 "$out/bench-grouped.log"
fi
