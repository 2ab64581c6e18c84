#!/usr/bin/env python3
"""Regret of config selection from a sweep: per shape, the pick's (rank 1) median time over
the fastest passing candidate's, and the ratio of each to the faster cuBLAS baseline. For
FP8 sweeps the pick is also given against each cuBLASLt FP8 baseline (block-scaled, the same
math, and per-tensor, less work). A second table gives every kernel's ratio to the faster
baseline, named by the suffix of its artifact after the shape (r2, m, ...).
usage: sweep-regret.py sweep.txt RESULT.json..."""
import json
import math
import sys

configs = {}
for line in open(sys.argv[1]):
    shape, name, *config = line.split(maxsplit=2)
    configs[name] = config[0].strip() if config else ""

FP8_BASELINES = ["cublaslt-fp8-block", "cublaslt-fp8"]


def geomean(xs):
    xs = [x for x in xs if x and not math.isnan(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


rows = []
each = []
for path in sys.argv[2:]:
    report = json.load(open(path))
    for result in report["results"]:
        shape = f'{result["m"]}x{result["n"]}x{result["k"]}'
        ours, base = {}, {}
        for run in result["runs"]:
            ok = run.get("stats") and not run.get("error") and (run.get("check") or {}).get("pass", True)
            if not ok:
                continue
            ms = run["stats"]["median_ms"]
            if str(run["kind"]).lower() == "ours":
                ours[run["name"].rstrip("/").rsplit("/", 1)[-1]] = ms
            elif "reference" not in run["name"]:
                base[run["name"]] = ms
        pick = f"{shape}_r1"
        if base:
            each.append((shape, {name.removeprefix(shape + "_"): min(base.values()) / ms for name, ms in ours.items()}))
        if pick not in ours:
            rows.append((shape, None, None, None, None, {}, "pick failed or missing"))
            continue
        best = min(ours, key=ours.get)
        base_ms = min(base.values()) if base else math.nan
        per_base = {b: base[b] / ours[pick] for b in FP8_BASELINES if b in base}
        rows.append((shape, ours[pick] / ours[best], base_ms / ours[pick], base_ms / ours[best], best, per_base, configs.get(best, "")))

fp8 = any(r[5] for r in rows)
extra = "".join(f" {'pick/' + b[9:]:>14}" for b in FP8_BASELINES) if fp8 else ""
print(f'{"shape":<18} {"regret":>7} {"pick/base":>9} {"best/base":>9}{extra}  best candidate')
within = 0
for shape, regret, pick_ratio, best_ratio, best, per_base, note in rows:
    if regret is None:
        print(f"{shape:<18} {'-':>7} {'-':>9} {'-':>9}  {note}")
        continue
    within += regret <= 1.05
    cols = "".join(f" {per_base.get(b, math.nan):>14.3f}" for b in FP8_BASELINES) if fp8 else ""
    print(f"{shape:<18} {regret:>7.3f} {pick_ratio:>9.3f} {best_ratio:>9.3f}{cols}  {best} {note}")
measured = [r for r in rows if r[2]]
if measured:
    print(f"pick within 5% of the best candidate on {within} of {len(rows)} shapes; geometric mean of pick/faster baseline {geomean([r[2] for r in measured]):.3f}")
    for b in FP8_BASELINES if fp8 else []:
        print(f"geometric mean of pick/{b}: {geomean([r[5].get(b, math.nan) for r in measured]):.3f}; "
              f"M = 4096 shapes: {geomean([r[5].get(b, math.nan) for r in measured if r[0].startswith('4096x') and r[0] != '4096x4096x4096'] ):.3f}")

if each:
    print("\nevery kernel / faster baseline (a kernel that failed or did not run is left out)")
    for shape, ratios in each:
        print(f"{shape:<18} " + " ".join(f"{name}={ratio:.3f}" for name, ratio in sorted(ratios.items())))
    for name in sorted({n for _, ratios in each for n in ratios}):
        print(f"geometric mean of {name}/faster baseline over {sum(name in r for _, r in each)} shapes: {geomean([r.get(name, math.nan) for _, r in each]):.3f}")
