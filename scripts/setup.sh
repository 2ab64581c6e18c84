#!/usr/bin/env bash
# Installs what building and testing tilec needs on a fresh Debian 12
# machine: LLVM/MLIR 22 (with FileCheck and mlir-opt), the -dev libraries the
# static LLVM/MLIR link pulls in, and ptxas from PyPI. Safe to run again.
set -euo pipefail

packages=(llvm-22-dev libmlir-22-dev mlir-22-tools libclang-22-dev clang-22 libpolly-22-dev
          libzstd-dev libz3-dev libxml2-dev zlib1g-dev libcurl4-openssl-dev libedit-dev libffi-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# ptxas assembles our PTX in the codegen tests; PyPI ships it in nvidia-cuda-nvcc.
if ! bash "$(dirname "$0")/find-ptxas.sh" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check "nvidia-cuda-nvcc==13.0.*"
fi
