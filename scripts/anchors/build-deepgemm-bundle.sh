#!/usr/bin/env bash
# Builds .device/deepgemm/ (git-ignored): DeepGEMM's block-scaled FP8 GEMM, the anchor
# issue 47 cites, ready to compile and time on the GPU machine, beside tilec's picks.
#
#   .device/deepgemm/deepgemm.tar.xz       DeepGEMM's Python package at $DEEPGEMM_COMMIT, with
#                                          the CUTLASS headers its submodule pins (it compiles
#                                          its kernels with nvcc at run time)
#   .device/deepgemm/deepgemm_anchor.py    the harness (scripts/anchors/deepgemm_anchor.py, with
#                                          event_timing.py, the timing it shares)
#   .device/deepgemm/run-deepgemm.sh       scripts/anchors/run-deepgemm.sh
#   .device/deepgemm/shapes.txt            the shapes, MxNxK a line
#
# usage: DEEPGEMM_GIT=DIR CUTLASS_GIT=DIR scripts/anchors/build-deepgemm-bundle.sh SHAPES_FILE
#   DEEPGEMM_GIT and CUTLASS_GIT are git directories (clones or bare) of
#   github.com/deepseek-ai/DeepGEMM and github.com/NVIDIA/cutlass holding the commits below.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shapes=${1:?usage: build-deepgemm-bundle.sh SHAPES_FILE}
# The version behind DeepGEMM's published H800 figures that issue 47 cites, its JIT in Python
# (docs/benchmarks/README.md, "Anchors").
DEEPGEMM_COMMIT=${DEEPGEMM_COMMIT:-83aa960}
: "${DEEPGEMM_GIT:?the DeepGEMM git directory}" "${CUTLASS_GIT:?the CUTLASS git directory}"
dest=${TILEC_BUNDLE_DIR:-$root/.device/deepgemm}
rm -rf "$dest"
mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

git -C "$DEEPGEMM_GIT" archive "$DEEPGEMM_COMMIT" deep_gemm | tar -x -C "$work"
cutlass=$(git -C "$DEEPGEMM_GIT" ls-tree "$DEEPGEMM_COMMIT" third-party/cutlass | awk '{ print $3 }')
[ -n "$cutlass" ] || { echo "error: $DEEPGEMM_COMMIT pins no CUTLASS submodule" >&2; exit 1; }
git -C "$CUTLASS_GIT" cat-file -e "$cutlass^{commit}" 2>/dev/null || { echo "error: $CUTLASS_GIT lacks CUTLASS commit $cutlass, which DeepGEMM $DEEPGEMM_COMMIT pins" >&2; exit 1; }
# DeepGEMM's setup links CUTLASS's cute/ and cutlass/ into its include folder; copy them there.
git -C "$CUTLASS_GIT" archive "$cutlass" include/cute include/cutlass | tar -x -C "$work"
mv "$work/include/cute" "$work/include/cutlass" "$work/deep_gemm/include/"
tar -cJf "$dest/deepgemm.tar.xz" -C "$work" deep_gemm
printf 'DeepGEMM %s, CUTLASS %s\n' "$(git -C "$DEEPGEMM_GIT" rev-parse "$DEEPGEMM_COMMIT")" "$cutlass" >"$dest/versions.txt"

cp "$root/scripts/anchors/deepgemm_anchor.py" "$root/scripts/anchors/event_timing.py" "$root/scripts/anchors/run-deepgemm.sh" "$dest/"
grep -v '^#' "$shapes" | awk 'NF { print $1 }' >"$dest/shapes.txt"
echo "built $dest: $(wc -l <"$dest/shapes.txt") shapes, $(du -sh "$dest" | cut -f1)"
