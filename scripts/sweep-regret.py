#!/usr/bin/env python3
"""Regret of config selection from a sweep: per shape, the pick's (rank 1) median time over
the fastest passing candidate's, and the ratio of each to the faster cuBLAS baseline.
usage: sweep-regret.py sweep.txt RESULT.json..."""
import json
import math
import sys

configs = {}
for line in open(sys.argv[1]):
    shape, name, *config = line.split(maxsplit=2)
    configs[name] = config[0].strip() if config else ""

rows = []
for path in sys.argv[2:]:
    report = json.load(open(path))
    for result in report["results"]:
        shape = f'{result["m"]}x{result["n"]}x{result["k"]}'
        ours, base = {}, []
        for run in result["runs"]:
            ok = run.get("stats") and not run.get("error") and (run.get("check") or {}).get("pass", True)
            if not ok:
                continue
            ms = run["stats"]["median_ms"]
            if str(run["kind"]).lower() == "ours":
                ours[run["name"].rstrip("/").rsplit("/", 1)[-1]] = ms
            else:
                base.append(ms)
        pick = f"{shape}_r1"
        if pick not in ours or not ours:
            rows.append((shape, None, None, None, None, "pick failed or missing"))
            continue
        best = min(ours, key=ours.get)
        base_ms = min(base) if base else math.nan
        rows.append((shape, ours[pick] / ours[best], base_ms / ours[pick], base_ms / ours[best], best, configs.get(best, "")))

print(f'{"shape":<18} {"regret":>7} {"pick/cuBLAS":>11} {"best/cuBLAS":>11}  best candidate')
within = 0
for shape, regret, pick_ratio, best_ratio, best, note in rows:
    if regret is None:
        print(f"{shape:<18} {'-':>7} {'-':>11} {'-':>11}  {note}")
        continue
    within += regret <= 1.05
    print(f"{shape:<18} {regret:>7.3f} {pick_ratio:>11.3f} {best_ratio:>11.3f}  {best} {note}")
ratios = [r[2] for r in rows if r[2] and not math.isnan(r[2])]
if ratios:
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"pick within 5% of the best candidate on {within} of {len(rows)} shapes; geometric mean of pick/cuBLAS {geo:.3f}")
