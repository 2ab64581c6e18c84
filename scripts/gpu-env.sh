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
