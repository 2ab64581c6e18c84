#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: unit tests, the FileCheck
# suite, round trips, and PTX assembled by ptxas.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
TILEC_PTXAS="$(bash scripts/find-ptxas.sh)"
export TILEC_PTXAS
echo "ptxas: $TILEC_PTXAS"
cargo test --workspace --locked
