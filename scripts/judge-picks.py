#!/usr/bin/env python3
"""Judges config selection's picks against measured kernels, without a GPU.

For each shape of the measurements files (schema tilec-measurements/1), asks `tilec compile
--shape S --explain` which config it picks now, finds that config among the measured kernels of
the shape, and reports its time against the vendor baselines timed in the same run: for BF16 the
faster of cuBLAS and cuBLASLt, for FP8 cuBLASLt block-scaled (the same math) and cuBLASLt
per-tensor FP8. A pick no file measured is listed as unmeasured, never guessed. Shapes are
grouped by the --group files (a name and a file of shapes, one MxNxK a line), the rest as
"other" (or, with --only-groups, left out: a measurements file that also times other sets' shapes
then adds nothing to a set's judgement); each group gets its geometric mean and its lowest ratio.
usage: judge-picks.py --tilec BIN [--ranking model|rules] [--group NAME=FILE]... [--only-groups] [--json OUT] MEASUREMENTS..."""
import argparse
import json
import math
import subprocess

PROGRAMS = {"bf16": "examples/gemm_bf16.tile", "fp8": "examples/gemm_fp8_blockscaled.tile"}
BASELINES = {"bf16": [("cublas", ["cublas", "cublaslt"])], "fp8": [("block-scaled", ["cublaslt-fp8-block"]), ("per-tensor", ["cublaslt-fp8"])]}


def pick(tilec, dtype, shape, ranking):
    """The config `tilec compile` picks for the shape, as --explain prints it (without sms=)."""
    out = subprocess.run([tilec, "compile", PROGRAMS[dtype], "--shape", shape, "--ranking", ranking, "--explain", "--emit=nv"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"tilec compile --shape {shape} failed:\n{out.stderr}")
    row = next(line for line in out.stderr.splitlines() if line.strip().startswith("1 "))
    config = row.split(None, 1)[1]
    return config[: config.index(" sms=")]


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tilec", required=True)
    parser.add_argument("--group", action="append", default=[], help="NAME=FILE of shapes")
    parser.add_argument("--ranking", default="model", choices=["model", "rules"], help="judge the model's picks (default) or the rules'")
    parser.add_argument("--only-groups", action="store_true", help="judge only the shapes the --group files list")
    parser.add_argument("--json")
    parser.add_argument("measurements", nargs="+")
    args = parser.parse_args()
    if args.only_groups and not args.group:
        parser.error("--only-groups needs at least one --group")
    groups = []
    for spec in args.group:
        name, path = spec.split("=", 1)
        groups.append((name, {line.strip() for line in open(path) if line.strip() and not line.startswith("#")}))
    measured = {}
    for path in args.measurements:
        for r in json.load(open(path))["records"]:
            key = (r["dtype"], f'{r["m"]}x{r["n"]}x{r["k"]}')
            measured.setdefault(key, {})[r["config"].split(" sms=")[0].strip()] = r
    rows = []
    for (dtype, shape), kernels in sorted(measured.items()):
        group = next((name for name, shapes in groups if shape in shapes), "other")
        if group == "other" and args.only_groups:
            continue
        config = pick(args.tilec, dtype, shape, args.ranking)
        record = kernels.get(config)
        ratios = {}
        if record:
            for label, names in BASELINES[dtype]:
                times = [record.get("baselines", {}).get(n) for n in names]
                times = [t for t in times if t]
                if times:
                    ratios[label] = min(times) / record["median_ms"]
        rows.append({"dtype": dtype, "shape": shape, "group": group, "config": config, "measured": bool(record), "ratios": ratios})
    summary = []
    for dtype in sorted({r["dtype"] for r in rows}):
        for group in [name for name, _ in groups] + ["other"]:
            members = [r for r in rows if r["dtype"] == dtype and r["group"] == group]
            if not members:
                continue
            for label, _ in BASELINES[dtype]:
                xs = [r["ratios"][label] for r in members if label in r["ratios"]]
                unmeasured = sum(not r["measured"] for r in members)
                entry = {"dtype": dtype, "group": group, "baseline": label, "shapes": len(members), "compared": len(xs), "unmeasured": unmeasured,
                         "geomean": geomean(xs) if xs else None, "lowest": min(xs) if xs else None}
                summary.append(entry)
                figures = f"geometric mean {entry['geomean']:.3f}, lowest {entry['lowest']:.3f}" if xs else "no baseline ran"
                print(f"{dtype} {group:<12} vs {label:<13} {len(xs):>3}/{len(members)} shapes: {figures}" + (f" ({unmeasured} picks unmeasured)" if unmeasured else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schema": "tilec-judge/1", "measurements": args.measurements, "summary": summary, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
