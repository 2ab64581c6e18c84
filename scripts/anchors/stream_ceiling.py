#!/usr/bin/env python3
"""Times what the GPU's memory system gives a single call that only moves a
GEMM's bytes, the ceiling of issue 47's roofline fractions.

The roofline of a memory-bound GEMM is its bytes (A, B, C and, for
block-scaled FP8, the scales) over the HBM bandwidth the datasheet gives.
A call that reads those bytes and writes C's and computes nothing is as
fast as any GEMM of that shape can be; this harness times such a copy (a
Triton kernel, each program moving one block of 16-byte words, grids of
thousands of programs so every SM keeps many loads in flight), in two
block sizes, beside cuBLASLt's per-tensor FP8 and cuBLAS's BF16 GEMM of the
same shape, and a launch that moves nothing (a call's own cost: no call
beats the roofline plus it), each call timed as tilec-bench times one
(event_timing.py); the bytes are counted as roofline.py counts them.

The JSON (schema tilec-stream-ceiling/1, which tilec-report reads) has, per
shape and dtype, the median times and the fraction of the roofline each
reaches; the summary their geometric means.

usage: stream_ceiling.py [--rounds N] [--hbm-bytes-per-s B] [--json OUT] MxNxK...
"""
import argparse
import json
import sys

import torch
import triton
import triton.language as tl

from event_timing import ROTATION_BYTES, time_events
from roofline import HBM_BYTES_PER_S, gemm_bytes, geomean

# Words (four bytes) a program moves, each size a contender: the ceiling is the faster.
PROGRAM_WORDS = (2048, 8192)


@triton.jit
def copy_words(src, n_src, dst, n_dst, WORDS: tl.constexpr):
    """Reads words [pid * WORDS, +WORDS) of `src` and writes those below
    `n_dst` to `dst`: the grid reads all of `src` and writes all of `dst`."""
    offs = tl.program_id(0) * WORDS + tl.arange(0, WORDS)
    v = tl.load(src + offs, mask=offs < n_src, other=0)
    tl.store(dst + offs, v, mask=offs < n_dst)


@triton.jit
def nothing(dst):
    """A launch that moves no bytes: what a single call costs by itself."""
    pass


def parse_shape(text):
    m, n, k = (int(v) for v in text.split("x"))
    if k % 16:
        raise SystemExit(f"{text}: K must be a multiple of 16 (FP8 rows of 16-byte multiples)")
    return m, n, k


class Operands:
    """One input set: the GEMM's operands and a copy's source and output of
    the same byte counts."""

    def __init__(self, m, n, k, dtype):
        self.dtype = dtype
        read, written = gemm_bytes(m, n, k, dtype)
        self.src = torch.empty(-(-read // 4), dtype=torch.int32, device="cuda")
        self.dst = torch.empty(-(-written // 4), dtype=torch.int32, device="cuda")
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(n, k, device="cuda")
        if dtype == "bf16":
            self.a, self.b = a.to(torch.bfloat16), b.to(torch.bfloat16)
        else:
            self.a, self.b = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
            self.one = torch.ones((), device="cuda")

    def bytes(self):
        return 4 * (self.src.numel() + self.dst.numel()) + self.a.nbytes + self.b.nbytes

    def copy(self, words):
        grid = (triton.cdiv(max(self.src.numel(), self.dst.numel()), words),)
        copy_words[grid](self.src, self.src.numel(), self.dst, self.dst.numel(), WORDS=words, num_warps=8)

    def empty(self):
        nothing[(1,)](self.dst)

    def vendor(self):
        if self.dtype == "bf16":
            return torch.mm(self.a, self.b.t())
        return torch._scaled_mm(self.a, self.b.t(), scale_a=self.one, scale_b=self.one, out_dtype=torch.bfloat16)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--hbm-bytes-per-s", type=float, default=HBM_BYTES_PER_S, help="the datasheet bandwidth the roofline takes (the H200's)")
    ap.add_argument("--json")
    args = ap.parse_args()
    vendor_name = {"fp8": "cublaslt_per_tensor", "bf16": "cublas"}
    records = []
    for m, n, k in (parse_shape(s) for s in args.shapes):
        for dtype in ("fp8", "bf16"):
            read, written = gemm_bytes(m, n, k, dtype)
            roofline_ms = (read + written) / args.hbm_bytes_per_s * 1e3
            first = Operands(m, n, k, dtype)
            sets = [first] + [Operands(m, n, k, dtype) for _ in range(max(1, ROTATION_BYTES // first.bytes()))]
            contenders = {f"copy_{w}": (lambda w: lambda ops: ops.copy(w))(w) for w in PROGRAM_WORDS}
            contenders[vendor_name[dtype]] = Operands.vendor
            contenders["empty"] = Operands.empty
            medians, _ = time_events(sets, contenders, args.rounds)
            copy_ms = min(medians[f"copy_{w}"] for w in PROGRAM_WORDS)
            vendor_ms = medians[vendor_name[dtype]]
            # No call that moves the bytes beats the roofline plus a call's own cost.
            record = {
                "m": m, "n": n, "k": k, "dtype": dtype, "read_bytes": read, "written_bytes": written,
                "roofline_ms": roofline_ms, "events_ms": medians,
                "copy_roofline": roofline_ms / copy_ms, "vendor_roofline": roofline_ms / vendor_ms,
                "bound_roofline": roofline_ms / (roofline_ms + medians["empty"]),
            }
            records.append(record)
            print(f"{m}x{n}x{k} {dtype}: {(read + written) / 1e6:.1f} MB, roofline {roofline_ms * 1e3:.1f} us; "
                  f"copy {copy_ms * 1e3:.1f} us ({record['copy_roofline']:.3f} of it), "
                  f"{vendor_name[dtype]} {vendor_ms * 1e3:.1f} us ({record['vendor_roofline']:.3f}); "
                  f"an empty call {medians['empty'] * 1e3:.1f} us (bound {record['bound_roofline']:.3f})", flush=True)
        del sets, first
        torch.cuda.empty_cache()
    summary = {}
    for dtype in ("fp8", "bf16"):
        rows = [r for r in records if r["dtype"] == dtype]
        summary[dtype] = {
            "shapes": len(rows),
            "copy_roofline": geomean([r["copy_roofline"] for r in rows]),
            "vendor_roofline": geomean([r["vendor_roofline"] for r in rows]),
            "bound_roofline": geomean([r["bound_roofline"] for r in rows]),
        }
        print(f"{dtype}: copy {summary[dtype]['copy_roofline']:.3f} of the roofline, {vendor_name[dtype]} {summary[dtype]['vendor_roofline']:.3f}, "
              f"roofline plus an empty call {summary[dtype]['bound_roofline']:.3f} (geomeans of {len(rows)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "schema": "tilec-stream-ceiling/1", "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                "triton": triton.__version__, "hbm_bytes_per_s": args.hbm_bytes_per_s, "summary": summary, "records": records,
            }, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
