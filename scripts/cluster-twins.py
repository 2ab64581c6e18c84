#!/usr/bin/env python3
"""Clustered twins in committed measurements: every persistent, unsplit kernel timed in 2-CTA
clusters beside the same config without them, in the same run (one measurements file), with
the unclustered time over the clustered one (> 1: the cluster is faster). Pairs of more than
one wave are grouped by what the clustering policy (`prefers_clusters`,
passes/src/selection/clusters.rs) looks at: the schedule, block N against one scale block, a
long K (at least 32 K blocks), waves (at least 3), and whether the operands' rows start off
the L2's 32-byte sectors (K bytes of a row not a multiple of 32). Files the cost model was
fitted on (`--training`, the calibration's inputs listing) are kept apart from the others.

usage: cluster-twins.py --dtype fp8 --training passes/src/cost_model/calibration/h200.inputs.txt
                        -o OUT.json MEASUREMENTS.json...
"""
import argparse
import collections
import json
import math
import re

SMS = 132
SCALE_BLOCK_N = 128
LONG_K_BLOCKS = 32
SECTOR_BYTES = 32


def twins(path, dtype):
    """(shape, clustered config, unclustered/clustered time) for each twin pair in one file."""
    report = json.load(open(path))
    if not isinstance(report, dict) or report.get("schema") != "tilec-measurements/1":
        return []
    times = collections.defaultdict(dict)
    for r in report.get("records", []):
        if r.get("dtype") == dtype and "timing only" not in r["config"]:
            times[(r["m"], r["n"], r["k"])][r["config"]] = r["median_ms"]
    bare = lambda c: re.sub(r" sms=\d+", "", re.sub(r" cluster=\w+", "", c))
    found = []
    for shape, configs in times.items():
        by_bare = {bare(c): t for c, t in configs.items() if "cluster=" not in c}
        for c, t in configs.items():
            if "cluster=" in c and "persistent" in c and "splits=" not in c and bare(c) in by_bare:
                found.append((shape, c, by_bare[bare(c)] / t))
    return found


def features(shape, config, dtype):
    bm, bn, bk = map(int, config.split()[0].split("x"))
    m, n, k = shape
    if "swapped" in config:
        m, n = n, m
    tiles = math.ceil(m / bm) * math.ceil(n / bn)
    k_blocks = math.ceil(k / bk)
    row_bytes = k * (1 if dtype == "fp8" else 2)
    return {
        "schedule": re.search(r"warps=\d+ (\S+)", config).group(1),
        "wide": bn > SCALE_BLOCK_N,
        "waves": tiles / SMS,
        "long_k": k_blocks >= LONG_K_BLOCKS,
        "rows_off_sectors": row_bytes % SECTOR_BYTES != 0,
    }


def group_of(f):
    if f["schedule"] != "ws2":
        return f'{f["schedule"]}'
    if not f["wide"]:
        return "ws2, one scale block wide or narrower"
    if f["long_k"]:
        return "ws2 wide, long K, at least 3 waves" if f["waves"] > 2 else "ws2 wide, long K, under 3 waves"
    return "ws2 wide, short K, rows off the sectors" if f["rows_off_sectors"] else "ws2 wide, short K, rows on the sectors"


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", choices=["bf16", "fp8"], required=True)
    ap.add_argument("--training", required=True, help="the calibration's inputs listing (h200.inputs.txt)")
    ap.add_argument("-o", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    training = {line[1:].strip() for line in open(args.training) if line[:1] in "+-" and line[1:2] == " "}
    pairs = collections.defaultdict(list)
    for path in args.files:
        for shape, config, gain in twins(path, args.dtype):
            pairs[(shape, config)].append((path, gain))
    rows = []
    for (shape, config), seen in sorted(pairs.items()):
        f = features(shape, config, args.dtype)
        if f["waves"] <= 1:
            continue
        side = "training" if any(p in training for p, _ in seen) else "other"
        gain = geomean([g for _, g in seen])
        rows.append({"shape": "x".join(map(str, shape)), "config": config, "set": side, "group": group_of(f),
                     "waves": round(f["waves"], 2), "gain": round(gain, 4), "files": sorted({p for p, _ in seen})})
    summary = []
    for side in ["training", "other"]:
        for group in sorted({r["group"] for r in rows}):
            gains = [r["gain"] for r in rows if r["set"] == side and r["group"] == group]
            if gains:
                summary.append({"set": side, "group": group, "pairs": len(gains), "gain_geomean": round(geomean(gains), 4),
                                "faster_by_5pct": sum(g > 1.05 for g in gains), "slower_by_5pct": sum(g < 1 / 1.05 for g in gains)})
    json.dump({"schema": "tilec-cluster-twins/1", "dtype": args.dtype, "summary": summary, "pairs": rows}, open(args.o, "w"), indent=1)
    for s in summary:
        print(f'{s["set"]:9} {s["group"]:42} {s["pairs"]:3} pairs  clusters {s["gain_geomean"]:.3f}x  '
              f'{s["faster_by_5pct"]} over 5% faster, {s["slower_by_5pct"]} over 5% slower')


main()
