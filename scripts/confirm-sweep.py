#!/usr/bin/env python3
"""Builds a confirmation bundle for a top-k sweep: per shape, the pick (S_r1) and its rival,
the fastest other candidate of the first run, so that a second, independent run times the two
again side by side.

The fastest of k candidates timed once is biased fast (the winner of k noisy medians), and the
pick's regret against it biased high; the same is true the other way where the pick won. A rival
chosen by the first run and timed again in a second judges the pick without that bias. Where
the first run's pick is its fastest, the rival is the second fastest.

usage: confirm-sweep.py BUNDLE MEASUREMENTS.json DEST
  BUNDLE: a bundle built by `scripts/build-gpu-bundle.sh --sweep` (its sweep.txt and artifacts/)
  MEASUREMENTS.json: that sweep's kernels (scripts/collect-measurements.py)
  DEST: the confirmation bundle, a copy of BUNDLE with only the kept artifacts; pack it with
  scripts/pack-sweeps.sh and run it as any sweep (SWEEP_CHECKS=0: the kernels were checked)."""
import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path


def fail(message):
    print(f"confirm-sweep: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    if len(sys.argv) != 4:
        fail("usage: confirm-sweep.py BUNDLE MEASUREMENTS.json DEST")
    bundle, measurements, dest = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    sweep = bundle / "sweep.txt"
    if not sweep.is_file() or not (bundle / "artifacts").is_dir():
        fail(f"{bundle} is not a sweep bundle (no sweep.txt or artifacts/)")
    report = json.loads(measurements.read_text())
    if report.get("schema") != "tilec-measurements/1":
        fail(f"{measurements}: not a measurements file (schema {report.get('schema')!r})")

    lines = {}
    for number, line in enumerate(sweep.read_text().splitlines(), 1):
        fields = line.split(maxsplit=2)
        if len(fields) < 2:
            fail(f"{sweep}:{number}: expected 'SHAPE ARTIFACT CONFIG'")
        lines[fields[1]] = (fields[0], line, fields[2].strip() if len(fields) > 2 else "")

    times = defaultdict(dict)
    for record in report["records"]:
        artifact = record["artifact"]
        if artifact not in lines:
            fail(f"{measurements}: artifact {artifact} is not in {sweep}: another bundle's measurements")
        shape, _, config = lines[artifact]
        if record["config"].strip() != config:
            fail(f"{artifact}: timed as '{record['config']}', built as '{config}': the bundle was built by another ranking")
        times[shape][artifact] = record["median_ms"]

    kept = []
    for shape, timed in times.items():
        pick = f"{shape}_r1"
        if pick not in timed:
            print(f"confirm-sweep: {shape}: the pick was not timed (failed or did not run); left out", file=sys.stderr)
            continue
        others = sorted((ms, a) for a, ms in timed.items() if a != pick)
        if not others:
            print(f"confirm-sweep: {shape}: no other candidate was timed; left out", file=sys.stderr)
            continue
        kept += [pick, others[0][1]]

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(bundle, dest, ignore=shutil.ignore_patterns("artifacts", "ptxas", "explain"))
    (dest / "artifacts").mkdir()
    for artifact in kept:
        shutil.copytree(bundle / "artifacts" / artifact, dest / "artifacts" / artifact)
    order = [a for a in lines if a in set(kept)]
    (dest / "sweep.txt").write_text("".join(lines[a][1] + "\n" for a in order))
    print(f"{len(kept) // 2} shapes, {len(kept)} kernels into {dest}")


main()
