#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: unit tests, the FileCheck
# suite, round trips, and PTX assembled by ptxas.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
TILEC_PTXAS="$(bash scripts/find-ptxas.sh)"
export TILEC_PTXAS
echo "ptxas: $TILEC_PTXAS"
# Whatever cannot run here (no GPU, no ptxas) appends a line to this file
# (tilec-cli's report_skip); the count closes the output, so a skip never
# reads as a pass.
TILEC_SKIP_LOG="$(mktemp)"
export TILEC_SKIP_LOG
family_dir="$(mktemp -d)"
trap 'rm -rf "$family_dir" "$TILEC_SKIP_LOG"' EXIT
# The README's status table and docs/cost-model.md's fresh draws are the committed records' (scripts/status-table.py).
python3 scripts/status-table.py --check README.md
python3 scripts/status-table.py --check docs/cost-model.md
# The scripts' own tests (scripts/test_*.py).
python3 -m unittest discover -s scripts -p 'test_*.py'
# Incremental caches would add over a GB under target/ for a build run once.
export CARGO_INCREMENTAL=0
cargo test --workspace --locked
# The API docs build without a warning (broken intra-doc links included).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
# The Rust examples: build IR in code, a registered pass, a kernel family,
# and the runtime launching one of its kernels (a skip without a GPU).
cargo run --locked --example tilec -- build-ir
cargo run --locked --example tilec -- custom-pass
cargo run --locked --example tilec -- family "$family_dir"
cargo run --locked -p tilec-runtime --example launch -- "$family_dir/k0"
skipped="$(wc -l < "$TILEC_SKIP_LOG")"
echo "tests: $skipped skipped"
sed 's/^/  skipped: /' "$TILEC_SKIP_LOG"
