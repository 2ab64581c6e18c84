# Sourced by the GPU-machine scripts of a bundle (run-session.sh, run-sweep.sh, run-tp.sh):
# $out for logs ($OUT, else /tmp/out), cuBLAS and NCCL on the library path from the Python
# environment's nvidia packages, and the GPU's name, driver and clocks in $out/gpu.txt.
out=${OUT:-/tmp/out}
mkdir -p "$out"
roots=$(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)
lib=$(find $roots -name 'libcublas.so*' 2>/dev/null | head -1)
[ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib"):${LD_LIBRARY_PATH:-}
# NCCL ships as libnccl.so.2, a name cudarc does not try: link it as libnccl.so.
nccl=$(find $roots -name 'libnccl.so*' 2>/dev/null | head -1)
if [ -n "$nccl" ]; then
  mkdir -p /tmp/tilec-nccl
  ln -sf "$nccl" /tmp/tilec-nccl/libnccl.so
  export LD_LIBRARY_PATH=/tmp/tilec-nccl:${LD_LIBRARY_PATH:-}
fi
# NVLink multicast stays off: it can take a shared host's GPUs out of service.
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"

# timed_run DEADLINE CAP MARGIN RC_FILE LOG COMMAND...: runs COMMAND under `timeout` for at most
# CAP seconds and never past DEADLINE (epoch seconds), its output to LOG; RC_FILE gets
# `rc limit seconds`, or NOT_RUN when fewer than MARGIN seconds are left.
timed_run() {
  local deadline=$1 cap=$2 margin=$3 rc_file=$4 log=$5 left limit s0 rc
  shift 5
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt "$margin" ]; then
    echo NOT_RUN >"$rc_file"
    return
  fi
  limit=$cap
  [ "$left" -lt "$limit" ] && limit=$left
  s0=$EPOCHREALTIME
  timeout -k 10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  echo "$rc $limit $(awk -v a="$s0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')" >"$rc_file"
}
