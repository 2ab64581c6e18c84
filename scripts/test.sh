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
# The API docs build without a warning (broken intra-doc links included).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
# The Rust examples: build IR in code, a registered pass, a kernel family,
# and the runtime launching one of its kernels (SKIPPED without a GPU).
family_dir="$(mktemp -d)"
trap 'rm -rf "$family_dir"' EXIT
cargo run --locked --example tilec -- build-ir
cargo run --locked --example tilec -- custom-pass
cargo run --locked --example tilec -- family "$family_dir"
cargo run --locked -p tilec-runtime --example launch -- "$family_dir/k0"
