#!/usr/bin/env python3
"""Puts DeepGEMM's timings (deepgemm_anchor.py's JSON) beside tilec's picks
timed on the same machine (a tilec-measurements file, scripts/collect-measurements.py)
and writes one record: per shape each one's median time and its ratio to
cuBLASLt's per-tensor FP8 timed in the same process (the yardstick the two
runs share), DeepGEMM's kernel time under the profiler, the fraction of the
HBM roofline each reaches, and, where given, ncu's kernel durations of both
(`=== MxNxK` then `Duration us X` lines, as run-deepgemm.sh and ncu print them).

usage: compare-deepgemm.py --deepgemm DG.json --tilec TILEC.json [--ncu-deepgemm F] [--ncu-tilec F] -o OUT.json
"""
import argparse
import json
import re

from roofline import fp8_roofline_s, geomean

# The figures DeepGEMM's README publishes for an H800 (at its commit a6d97a1), TFLOP/s: the
# targets issue 47 names.
PUBLISHED_H800 = {(64, 2112, 7168): 206, (128, 2112, 7168): 352, (128, 4096, 7168): 533, (128, 7168, 2048): 510}


def ncu_durations(path):
    """{(m, n, k): [us, ...]} from `=== MxNxK` headers and ncu's Duration lines."""
    out, shape = {}, None
    if not path:
        return out
    for line in open(path):
        if line.startswith("=== "):
            shape = tuple(int(v) for v in line[4:].strip().split("x"))
            out[shape] = []
        m = re.match(r"\s+Duration\s+(\S+)\s+([\d.,]+)", line)
        if m and shape:
            scale = {"us": 1.0, "ms": 1e3, "ns": 1e-3}[m.group(1)]
            out[shape].append(float(m.group(2).replace(",", "")) * scale)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deepgemm", required=True)
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--ncu-deepgemm")
    ap.add_argument("--ncu-tilec")
    ap.add_argument("-o", required=True)
    args = ap.parse_args()
    dg = json.load(open(args.deepgemm))
    tilec = {(r["m"], r["n"], r["k"]): r for r in json.load(open(args.tilec))["records"]}
    ncu_dg, ncu_tilec = ncu_durations(args.ncu_deepgemm), ncu_durations(args.ncu_tilec)
    rows = []
    for d in dg["records"]:
        key = (d["m"], d["n"], d["k"])
        t = tilec.get(key)
        if t is None or d.get("check") != "pass":
            continue
        roof = fp8_roofline_s(*key)
        flops = 2 * key[0] * key[1] * key[2]
        ours_s, dg_s = t["median_ms"] * 1e-3, d["events_ms"]["deepgemm"] * 1e-3
        row = {
            "m": key[0], "n": key[1], "k": key[2],
            "tilec_config": t["config"], "deepgemm_config": d["config"],
            "tilec_ms": t["median_ms"], "tilec_per_tensor_ms": t["baselines"]["cublaslt-fp8"],
            "deepgemm_ms": d["events_ms"]["deepgemm"], "deepgemm_per_tensor_ms": d["events_ms"]["cublaslt_per_tensor"],
            "tilec_over_per_tensor": t["baselines"]["cublaslt-fp8"] / t["median_ms"],
            "deepgemm_over_per_tensor": d["events_ms"]["cublaslt_per_tensor"] / d["events_ms"]["deepgemm"],
            "tilec_roofline": roof / ours_s, "deepgemm_roofline": roof / dg_s,
            "deepgemm_kineto_tflops": flops / (d["kineto_ms"] * 1e-3) / 1e12 if "kineto_ms" in d else None,
        }
        if key in ncu_dg and key in ncu_tilec:
            row["ncu_deepgemm_us"] = min(ncu_dg[key])
            row["ncu_tilec_us"] = min(ncu_tilec[key])
            row["ncu_tilec_tflops"] = flops / (row["ncu_tilec_us"] * 1e-6) / 1e12
            row["ncu_deepgemm_tflops"] = flops / (row["ncu_deepgemm_us"] * 1e-6) / 1e12
        if key in PUBLISHED_H800:
            row["deepgemm_published_h800_tflops"] = PUBLISHED_H800[key]
        rows.append(row)
    summary = {}
    for name, pick in [("m_64_128", lambda r: r["m"] <= 128), ("m_4096", lambda r: r["m"] == 4096)]:
        group = [r for r in rows if pick(r)]
        summary[name] = {
            "shapes": len(group),
            "tilec_over_per_tensor": geomean([r["tilec_over_per_tensor"] for r in group]),
            "deepgemm_over_per_tensor": geomean([r["deepgemm_over_per_tensor"] for r in group]),
            "tilec_roofline": geomean([r["tilec_roofline"] for r in group]),
            "deepgemm_roofline": geomean([r["deepgemm_roofline"] for r in group]),
        }
    record = {"schema": "tilec-anchor-deepgemm/1", "gpu": dg["gpu"], "torch": dg["torch"], "tilec_set": json.load(open(args.tilec))["set"], "summary": summary, "records": rows}
    with open(args.o, "w") as f:
        json.dump(record, f, indent=1)
    print(f"{'shape':18} {'tilec/pt':>8} {'dg/pt':>7} {'roof tilec':>10} {'roof dg':>8} {'ncu tilec':>9} {'ncu dg':>7} {'dg kineto TF':>12} {'dg H800 TF':>10}")
    for r in rows:
        print(f"{r['m']}x{r['n']}x{r['k']:<8} {r['tilec_over_per_tensor']:8.3f} {r['deepgemm_over_per_tensor']:7.3f} {r['tilec_roofline']:10.3f} {r['deepgemm_roofline']:8.3f} "
              f"{r.get('ncu_tilec_us', float('nan')):9.1f} {r.get('ncu_deepgemm_us', float('nan')):7.1f} {r['deepgemm_kineto_tflops'] or float('nan'):12.0f} {r.get('deepgemm_published_h800_tflops', '')!s:>10}")
    for name, s in summary.items():
        print(name, {k: round(v, 3) if isinstance(v, float) else v for k, v in s.items()})


if __name__ == "__main__":
    main()
