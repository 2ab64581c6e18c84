#!/usr/bin/env bash
# Packs sweep bundles (each built by `scripts/build-gpu-bundle.sh --sweep` with its own
# TILEC_BUNDLE_DIR) into one folder that one GPU call runs: one copy of the runtime binaries a
# sweep runs, each bundle's kernels as one artifacts.tar.xz (PTX packs about tenfold: a call
# carries the working tree and DEST together in 64 MiB) with its sweep scripts, and run-all.sh,
# which unpacks and runs the bundles' sweeps in turn. A GPU call returns only a few files, so run-all.sh leaves everything in one archive,
# $OUT/sweeps.tgz (a folder a bundle: its NAME-regret.txt, NAME-logs.tgz, gpu.txt and the
# sweep's output, run.txt), rewritten after each bundle so that a call cut at its limit keeps
# what ran.
#
# usage: scripts/pack-sweeps.sh DEST BUNDLE...
#   then, on the GPU machine (carry DEST):
#   SWEEP_REPS=20 SWEEP_SECONDS=200 bash DEST/run-all.sh
# SWEEP_SECONDS caps each bundle's sweep (default 300 s); a sweep cut at its cap has its
# running kernel stopped before the next bundle's timing starts. SWEEP_REPS, SWEEP_CHECKS and
# SWEEP_TUNING pass to each bundle's run-sweep.sh (scripts/run-sweep.sh says what they do).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/pack-sweeps.sh DEST BUNDLE..." >&2; exit 2; }
dest=$1
shift
names=()
for b in "$@"; do
  for f in bin artifacts sweep.txt sweep-dtype.txt run-sweep.sh sweep-regret.py gpu-env.sh; do
    [ -e "$b/$f" ] || { echo "pack-sweeps: $b is not a sweep bundle (no $f; build it with scripts/build-gpu-bundle.sh --sweep)" >&2; exit 1; }
  done
  name=$(basename "$b")
  for n in "${names[@]}"; do
    [ "$n" != "$name" ] || { echo "pack-sweeps: two bundles are named $name; give each its own TILEC_BUNDLE_DIR name" >&2; exit 1; }
  done
  names+=("$name")
done
rm -rf "$dest"
mkdir -p "$dest/bin"
cp "$1/bin/tilec-bench" "$1/bin/tilec-gpu-test" "$dest/bin/"
for b in "$@"; do
  name=$(basename "$b")
  mkdir -p "$dest/$name"
  cp -r "$b"/{sweep.txt,sweep-dtype.txt,run-sweep.sh,sweep-regret.py,gpu-env.sh} "$dest/$name/"
  tar -C "$b" -cf - artifacts | xz -6 -T2 >"$dest/$name/artifacts.tar.xz"
  ln -s ../bin "$dest/$name/bin"
done
cat >"$dest/run-all.sh" <<EOF
#!/usr/bin/env bash
# Written by scripts/pack-sweeps.sh: runs the sweeps of ${names[*]} in turn, everything into \$OUT/sweeps.tgz.
set -uo pipefail
cd "\$(dirname "\$0")"
out=\${OUT:-/tmp/out}
mkdir -p "\$out"
work=\$(mktemp -d)
for name in ${names[*]}; do
  mkdir -p "\$work/\$name"
  [ -d "\$name/artifacts" ] || tar -C "\$name" -xJf "\$name/artifacts.tar.xz" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "\$name/artifacts.tar.xz" "\$name" ||
    { echo "\$name: cannot unpack artifacts.tar.xz"; continue; }
  (cd "\$name" && OUT="\$work/\$name" SWEEP_NAME="\$name" timeout "\${SWEEP_SECONDS:-300}" bash run-sweep.sh >"\$work/\$name/run.txt" 2>&1)
  echo "\$name: rc=\$?"
  # A sweep cut at its cap leaves its current kernel running: stop it before the next times anything.
  # Only the binaries, whose command lines start with bin/: unanchored, the pattern also matched
  # the shell of a GPU call whose command line named them, and killed the call.
  pkill -f '^bin/tilec-(bench|gpu-test) ' || true
  tar czf "\$out/sweeps.tgz" -C "\$work" .
done
EOF
chmod +x "$dest/run-all.sh"
echo "packed ${names[*]} into $dest ($(du -sh "$dest" | cut -f1); a GPU call carries at most 64 MiB)"
