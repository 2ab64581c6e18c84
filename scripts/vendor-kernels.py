#!/usr/bin/env python3
"""Which kernels the vendor's library runs for each shape, and for how long.

For each MxNxK (A row-major M x K, B given N x K, C = A B^T row-major, as
tilec's BF16 programs take them), runs torch's matmul (cuBLAS / cuBLASLt)
under the profiler and prints every kernel it launched: its name (which
names the vendor's tile, cluster and split-K), grid, block and median
time over the repetitions. Needs a GPU and PyTorch; used to see what
mechanism the vendor uses where tilec's picks lose (docs/findings.md).

usage: vendor-kernels.py [--dtype bf16|fp8] [--reps N] SHAPES_FILE|MxNxK... > kernels.json
"""
import argparse
import json
import statistics
import sys

import torch


def shapes_from(args):
    for a in args:
        if "x" in a and a.replace("x", "").isdigit():
            yield tuple(int(v) for v in a.split("x"))
        else:
            for line in open(a):
                line = line.split("#")[0].strip()
                if line:
                    yield tuple(int(v) for v in line.split()[0].split("x"))


def operands(m, n, k, dtype):
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    if dtype == "bf16":
        return lambda: a @ b.t()
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    return lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp8"])
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("shapes", nargs="+")
    args = p.parse_args()
    out = {"schema": "tilec-vendor-kernels/1", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "dtype": args.dtype, "shapes": []}
    for m, n, k in shapes_from(args.shapes):
        run = operands(m, n, k, args.dtype)
        for _ in range(5):
            run()
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(args.reps):
                run()
            torch.cuda.synchronize()
        kernels = {}
        for e in prof.events():
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            kernels.setdefault(e.name, []).append(e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
        rows = [{"name": name, "launches": len(t), "median_us": statistics.median(t)} for name, t in kernels.items()]
        # Grid and block, from the trace's kernel events.
        prof.export_chrome_trace("/tmp/vendor-trace.json")
        trace = json.load(open("/tmp/vendor-trace.json"))
        for ev in trace.get("traceEvents", []):
            if ev.get("cat") == "kernel":
                for r in rows:
                    if r["name"] == ev["name"] and "grid" not in r:
                        r["grid"] = ev["args"].get("grid")
                        r["block"] = ev["args"].get("block")
                        r["registers"] = ev["args"].get("registers per thread")
                        r["smem"] = ev["args"].get("shared memory")
        out["shapes"].append({"shape": f"{m}x{n}x{k}", "kernels": rows})
        total = sum(r["median_us"] * r["launches"] for r in rows) / args.reps
        print(f"{m}x{n}x{k}: {total:.1f} us", *(f"\n  {r['median_us']:.1f}us x{r['launches']//args.reps} grid={r.get('grid')} {r['name'][:160]}" for r in rows), file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
