#!/usr/bin/env python3
"""The pick's regret in a sweep's measurements: per shape, the median time of the pick (artifact
S_r1) over the fastest kernel the same file timed at that shape, and how many shapes hold the
pick within a margin of it (issue 46: within 5% of the fastest of the top 8).

Each file is judged alone: a top-8 sweep's (scripts/build-gpu-bundle.sh --sweep 8) or a
confirmation run's (scripts/confirm-sweep.py: the pick beside the fastest other of the first
run, timed again).

usage: pick-regret.py [--margin 0.05] MEASUREMENTS.json..."""
import argparse
import json
import sys
from collections import defaultdict


def regrets(path):
    report = json.load(open(path))
    if report.get("schema") != "tilec-measurements/1":
        sys.exit(f"pick-regret: {path}: not a measurements file (schema {report.get('schema')!r})")
    shapes = defaultdict(dict)
    for record in report["records"]:
        shape, _, rank = record["artifact"].rpartition("_")
        shapes[shape][rank] = record["median_ms"]
    out = {}
    for shape, timed in shapes.items():
        if "r1" not in timed:
            print(f"pick-regret: {path}: {shape}: the pick (r1) was not timed; left out", file=sys.stderr)
            continue
        out[shape] = timed["r1"] / min(timed.values())
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--margin", type=float, default=0.05, help="the regret a pick may have (default 0.05)")
    parser.add_argument("measurements", nargs="+")
    args = parser.parse_args()
    for path in args.measurements:
        by_shape = regrets(path)
        misses = sorted(((r, s) for s, r in by_shape.items() if r > 1 + args.margin), reverse=True)
        within = len(by_shape) - len(misses)
        print(f"{path}: the pick within {args.margin:.0%} of the fastest on {within} of {len(by_shape)} shapes")
        for regret, shape in misses:
            print(f"  {shape}: {regret:.3f}")


main()
