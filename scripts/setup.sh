#!/usr/bin/env bash
# Installs what building and testing tilec needs on a fresh Debian 12
# machine: LLVM/MLIR 22 (with FileCheck and mlir-opt) from Debian's
# bookworm-security suite, the -dev libraries the static LLVM/MLIR link pulls
# in, a C toolchain for the link, and ptxas from PyPI in a project-local
# virtual environment (.venv-tools/), so no system Python is changed. Safe to
# run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(llvm-22-dev libmlir-22-dev mlir-22-tools libclang-22-dev clang-22 libpolly-22-dev
          libzstd-dev libz3-dev libxml2-dev zlib1g-dev libcurl4-openssl-dev libedit-dev libffi-dev
          build-essential python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  # LLVM/MLIR 22 come from bookworm-security; a machine without that suite gets no llvm-22-dev.
  if ! grep -rqs "bookworm-security" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "setup: apt has no bookworm-security source; LLVM/MLIR 22 come from it, add:" >&2
    echo "  deb http://deb.debian.org/debian-security bookworm-security main" >&2
    exit 1
  fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# ptxas assembles our PTX in the codegen tests; PyPI ships it in nvidia-cuda-nvcc.
# Debian's Python refuses `pip install` outside a virtual environment.
if ! bash scripts/find-ptxas.sh >/dev/null 2>&1; then
  [ -x .venv-tools/bin/pip ] || /usr/bin/python3 -m venv .venv-tools
  .venv-tools/bin/pip install -q --disable-pip-version-check "nvidia-cuda-nvcc==13.0.*"
fi
