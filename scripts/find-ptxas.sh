#!/usr/bin/env bash
# Prints the path of ptxas: $TILEC_PTXAS, PATH, the project's .venv-tools/
# (scripts/setup.sh installs it there), or a pip install of nvidia-cuda-nvcc
# in the python3 on PATH.
set -euo pipefail
if [ -n "${TILEC_PTXAS:-}" ]; then echo "$TILEC_PTXAS"; exit 0; fi
if command -v ptxas >/dev/null; then command -v ptxas; exit 0; fi
root="$(cd "$(dirname "$0")/.." && pwd)"
for path in "$root"/.venv-tools/lib/python3*/site-packages/nvidia/*/bin/ptxas; do
  if [ -x "$path" ]; then echo "$path"; exit 0; fi
done
command -v python3 >/dev/null || exit 1
python3 - <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for root in roots:
    for path in sorted(glob.glob(os.path.join(root, "nvidia", "*", "bin", "ptxas"))):
        print(path)
        sys.exit(0)
sys.exit(1)
PY
