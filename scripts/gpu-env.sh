# Sourced by the GPU-machine scripts of a bundle (run-session.sh, run-sweep.sh):
# $out for logs ($OUT, else /tmp/out), cuBLAS on the library path from the Python
# environment's nvidia packages, and the GPU's name, driver and clocks in $out/gpu.txt.
out=${OUT:-/tmp/out}
mkdir -p "$out"
roots=$(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)
lib=$(find $roots -name 'libcublas.so*' 2>/dev/null | head -1)
[ -n "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib"):${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
