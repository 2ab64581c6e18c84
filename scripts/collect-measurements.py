#!/usr/bin/env python3
"""Gathers the kernels a sweep timed into one measurements file for `tilec calibrate`.

Each SWEEP argument is DTYPE:SWEEP_TXT:LOGS, where SWEEP_TXT is a bundle's sweep.txt (shape,
artifact, config a line; scripts/build-gpu-bundle.sh --sweep writes it) and LOGS the folder or
.tgz of tilec-bench JSON reports run-sweep.sh left (NAME-logs.tgz). A kernel that failed its
check or did not run is left out. The output (schema tilec-measurements/1) holds, per kernel,
the shape, dtype, config, median time, each vendor baseline's median in the same run (those that ran
and passed their check) and the fastest of them.
usage: collect-measurements.py --gpu GPU_TXT --set NAME -o OUT.json SWEEP..."""
import argparse
import io
import json
import os
import tarfile


def reports(logs):
    """(name, report) for every tilec-bench JSON in a folder or archive."""
    if os.path.isdir(logs):
        for name in sorted(os.listdir(logs)):
            if name.endswith(".json"):
                with open(os.path.join(logs, name)) as f:
                    yield name, json.load(f)
        return
    with tarfile.open(logs) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.name.endswith(".json"):
                yield member.name, json.load(io.TextIOWrapper(tar.extractfile(member)))


def collect(dtype, sweep_txt, logs):
    configs = {}
    with open(sweep_txt) as f:
        for line in f:
            shape, artifact, *config = line.split(maxsplit=2)
            configs[artifact] = config[0].strip() if config else ""
    records = []
    for _, report in reports(logs):
        for result in report["results"]:
            ok = lambda run: run.get("stats") and not run.get("error") and (run.get("check") or {}).get("pass", True)
            baselines = {run["name"]: run["stats"]["median_ms"] for run in result["runs"] if run["kind"].lower() != "ours" and "reference" not in run["name"] and ok(run)}
            vendor = list(baselines.values())
            for run in result["runs"]:
                if run["kind"].lower() != "ours" or not ok(run):
                    continue
                artifact = run["name"].rstrip("/").rsplit("/", 1)[-1]
                if artifact not in configs:
                    continue
                records.append({
                    "dtype": dtype,
                    "m": result["m"], "n": result["n"], "k": result["k"],
                    "artifact": artifact,
                    "config": configs[artifact],
                    "median_ms": run["stats"]["median_ms"],
                    "vendor_ms": min(vendor) if vendor else None,
                    "baselines": baselines,
                })
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", required=True, help="gpu.txt of the run (nvidia-smi's name, driver, clocks)")
    parser.add_argument("--set", required=True, help="what the shapes are, e.g. 'training: draw-shapes.py --seed 1 --count 30'")
    parser.add_argument("-o", required=True)
    parser.add_argument("sweeps", nargs="+")
    args = parser.parse_args()
    records = []
    for sweep in args.sweeps:
        dtype, sweep_txt, logs = sweep.split(":")
        records += collect(dtype, sweep_txt, logs)
    with open(args.gpu) as f:
        gpu = f.read().strip()
    with open(args.o, "w") as f:
        json.dump({"schema": "tilec-measurements/1", "gpu": gpu, "set": args.set, "records": records}, f, indent=1)
    print(f"{len(records)} kernels into {args.o}")


if __name__ == "__main__":
    main()
