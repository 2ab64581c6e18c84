#!/usr/bin/env bash
# Prints the path of ptxas: $TILEC_PTXAS, PATH, or the one pip installed.
set -euo pipefail
if [ -n "${TILEC_PTXAS:-}" ]; then echo "$TILEC_PTXAS"; exit 0; fi
if command -v ptxas >/dev/null; then command -v ptxas; exit 0; fi
python3 - <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for root in roots:
    for path in sorted(glob.glob(os.path.join(root, "nvidia", "*", "bin", "ptxas"))):
        print(path)
        sys.exit(0)
sys.exit(1)
PY
