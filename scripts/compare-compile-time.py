#!/usr/bin/env python3
"""Whole-process compile time of two tilec binaries, run in turn.

    scripts/compare-compile-time.py BEFORE AFTER [--runs N] [--json OUT] [--before-commit C] [--after-commit C]

Each problem (the issue's two: BF16 at 4096^3, block-scaled FP8 at 4096x7168x16384) is
compiled with `tilec compile FILE --shape S -o DIR` by BEFORE and AFTER in turn, N + 1 times
each, the first pair left out as warm-up; the wall time is from spawn to exit. Prints each
binary's median, min and max and the median of the paired ratios AFTER / BEFORE, and with
--json writes them as a `tilec-checks/1` record. A compile that fails stops the comparison.
"""
import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time

PROBLEMS = [
    ("examples/gemm_bf16.tile", "4096x4096x4096"),
    ("examples/gemm_fp8_blockscaled.tile", "4096x7168x16384"),
]


def compile_ms(binary, source, shape, out):
    start = time.perf_counter()
    done = subprocess.run([binary, "compile", source, "--shape", shape, "-o", out], capture_output=True, text=True)
    elapsed = (time.perf_counter() - start) * 1e3
    if done.returncode != 0:
        sys.exit(f"{binary} compile {source} --shape {shape} failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--json")
    parser.add_argument("--before-commit", default="unknown")
    parser.add_argument("--after-commit", default="unknown")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for source, shape in PROBLEMS:
            times = {"before": [], "after": []}
            for i in range(args.runs + 1):
                pair = {name: compile_ms(binary, source, shape, out) for name, binary in (("before", args.before), ("after", args.after))}
                if i > 0:
                    for name, ms in pair.items():
                        times[name].append(ms)
            for name in ("before", "after"):
                t = times[name]
                rows.append(f"{source} --shape {shape}: {name} median {statistics.median(t):.1f} ms (min {min(t):.1f}, max {max(t):.1f}, {len(t)} runs)")
            ratios = [a / b for a, b in zip(times["after"], times["before"])]
            rows.append(f"{source} --shape {shape}: after/before, median of the paired ratios {statistics.median(ratios):.3f}")
    print("\n".join(rows))
    if args.json:
        record = {
            "schema": "tilec-checks/1",
            "gpu": "none (the 2-core build machine)",
            "date": datetime.date.today().isoformat(),
            "commit": f"before: {args.before_commit}; after: {args.after_commit}",
            "what": f"Whole-process compile time of `tilec compile FILE --shape S -o DIR`, the two release binaries run in turn (before, after, before, ...), {args.runs + 1} times each, the first pair left out as warm-up; wall time from spawn to exit (scripts/compare-compile-time.py).",
            "command": "tilec compile FILE --shape S -o DIR",
            "runs": [{"run": "the issue's two compile-time problems", "rows": rows}],
        }
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
