#!/usr/bin/env python3
"""Times DeepGEMM's block-scaled FP8 GEMM, the anchor issue 47 cites, on the
GPU it runs on, beside cuBLASLt's FP8 through PyTorch.

DeepGEMM publishes its figures for an H800 as kernel durations from the
PyTorch profiler. This harness measures its kernel here three ways, so that
they compare with tilec's figures:

- `events`: single calls timed with CUDA events, inputs rotated so the L2
  does not hold them, in rounds interleaved with cuBLASLt's per-tensor FP8
  (`torch._scaled_mm`) and, where it runs, its block-scaled FP8: tilec-bench's
  method (DESIGN section 8), so the vendor's time is the common yardstick;
- `kineto`: DeepGEMM's own `bench_kineto` (its kernel's mean duration under
  the profiler, an 8 GB memset before each call), as its README's figures;
- `--launch-only`: each shape's calls and nothing else, for ncu.

Every shape is checked first: fresh random inputs, the output poisoned with
NaN, the result against the product of the dequantised inputs in FP32
(relative error under 1e-2, no NaN left).

The JSON (schema tilec-deepgemm-run/1, which tilec-report reads) names the
DeepGEMM and CUTLASS commits `--versions` gives.

usage: deepgemm_anchor.py [--compile-only | --launch-only] [--rounds N] [--json OUT --versions TEXT] MxNxK...
"""
import argparse
import json
import sys

import torch

import deep_gemm
from event_timing import ROTATION_BYTES, time_events
from deep_gemm.jit_kernels.gemm import get_best_configs

BLOCK = 128


def parse_shape(text):
    m, n, k = (int(v) for v in text.split("x"))
    if n % 64 or k % BLOCK:
        raise SystemExit(f"{text}: DeepGEMM needs N a multiple of 64 and K of 128")
    return m, n, k


def quantise_rows(x):
    """FP8 e4m3 with one scale per row per 128 of K (A's block scaling)."""
    m, k = x.shape
    groups = x.view(m, k // BLOCK, BLOCK)
    amax = groups.abs().amax(dim=2).clamp(min=1e-4)
    q = (groups * (448.0 / amax).unsqueeze(2)).to(torch.float8_e4m3fn).view(m, k)
    return q, (amax / 448.0).float()


def quantise_blocks(x):
    """FP8 e4m3 with one scale per 128x128 block (B's block scaling)."""
    n, k = x.shape
    nb = (n + BLOCK - 1) // BLOCK
    padded = torch.zeros(nb * BLOCK, k, device=x.device, dtype=x.dtype)
    padded[:n] = x
    blocks = padded.view(nb, BLOCK, k // BLOCK, BLOCK)
    amax = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-4)
    q = (blocks * (448.0 / amax)[:, None, :, None]).to(torch.float8_e4m3fn).view(nb * BLOCK, k)[:n].contiguous()
    return q, (amax / 448.0).float()


class Operands:
    """One input set: DeepGEMM's operands, cuBLASLt's, and the output."""

    def __init__(self, m, n, k):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        self.a, self.sa = quantise_rows(a)
        self.b, self.sb = quantise_blocks(b)
        # DeepGEMM takes A's scales column-major with M padded for TMA.
        self.sa_tma = deep_gemm.get_col_major_tma_aligned_tensor(self.sa)
        self.out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        self.one = torch.ones((), device="cuda", dtype=torch.float32)
        # cuBLASLt's block-scaled FP8 through PyTorch: A's scales M-major,
        # B's as the transposed view of the (N/128) x (K/128) blocks.
        self.sa_m_major = self.sa.t().contiguous().t()

    def bytes(self):
        return self.a.numel() + self.b.numel() + 4 * (self.sa.numel() + self.sb.numel()) + 2 * self.out.numel()

    def deepgemm(self):
        deep_gemm.gemm_fp8_fp8_bf16_nt((self.a, self.sa_tma), (self.b, self.sb), self.out)

    def per_tensor(self):
        return torch._scaled_mm(self.a, self.b.t(), scale_a=self.one, scale_b=self.one, out_dtype=torch.bfloat16)

    def block_scaled(self):
        return torch._scaled_mm(self.a, self.b.t(), scale_a=self.sa_m_major, scale_b=self.sb.t(), out_dtype=torch.bfloat16)

    def reference(self):
        m, k = self.a.shape
        n = self.b.shape[0]
        a = self.a.float() * self.sa.repeat_interleave(BLOCK, dim=1)
        sb = self.sb.repeat_interleave(BLOCK, dim=0)[:n].repeat_interleave(BLOCK, dim=1)
        return a @ (self.b.float() * sb).t()


def check(ops):
    ops.out.fill_(float("nan"))
    ops.deepgemm()
    torch.cuda.synchronize()
    out = ops.out.float()
    if torch.isnan(out).any():
        return f"NaN left in the output ({int(torch.isnan(out).sum())} elements)"
    ref = ops.reference()
    err = ((out - ref).norm() / ref.norm()).item()
    return None if err < 1e-2 else f"relative error {err:.3e}"


def block_scaled_runs(ops):
    try:
        got = ops.block_scaled().float()
    except RuntimeError as e:
        return str(e).splitlines()[0]
    ref = ops.reference()
    err = ((got - ref).norm() / ref.norm()).item()
    return None if err < 1e-2 else f"relative error {err:.3e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shapes", nargs="+")
    ap.add_argument("--compile-only", action="store_true", help="compile each shape's kernel (fills DeepGEMM's cache) and stop")
    ap.add_argument("--launch-only", action="store_true", help="run each shape's kernel a few times, nothing else (for ncu)")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--versions", default="unknown", help="the DeepGEMM and CUTLASS commits, for the JSON")
    args = ap.parse_args()
    shapes = [parse_shape(s) for s in args.shapes]
    sms = deep_gemm.get_num_sms()
    records = []
    failed = 0
    for m, n, k in shapes:
        name = f"{m}x{n}x{k}"
        _, block_m, block_n, stages, (multicast, on_a), _ = get_best_configs(m, n, k, 1, sms)
        config = f"{block_m}x{block_n}x128 stages={stages} multicast={multicast}{'(A)' if multicast > 1 and on_a else '(B)' if multicast > 1 else ''}"
        ops = Operands(m, n, k)
        if args.compile_only:
            ops.deepgemm()
            torch.cuda.synchronize()
            print(f"{name}: compiled {config}", flush=True)
            continue
        if args.launch_only:
            for _ in range(3):
                ops.deepgemm()
            torch.cuda.synchronize()
            continue
        problem = check(ops)
        record = {"m": m, "n": n, "k": k, "config": config, "check": problem or "pass"}
        if problem:
            failed += 1
            print(f"{name}: FAIL {problem}", flush=True)
            records.append(record)
            continue
        sets = [ops] + [Operands(m, n, k) for _ in range(max(1, ROTATION_BYTES // ops.bytes()))]
        contenders = {"deepgemm": Operands.deepgemm, "cublaslt_per_tensor": Operands.per_tensor}
        refused = block_scaled_runs(ops)
        if refused is None:
            contenders["cublaslt_block_scaled"] = Operands.block_scaled
        medians, samples = time_events(sets, contenders, args.rounds)
        record["events_ms"] = medians
        record["events_samples_ms"] = samples
        if refused is not None:
            record["cublaslt_block_scaled_refused"] = refused
        flops = 2 * m * n * k
        try:
            kernel_s = deep_gemm.bench_kineto(ops.deepgemm, "fp8_gemm", suppress_kineto_output=True)
            record["kineto_ms"] = kernel_s * 1e3
            kineto = f"kineto {kernel_s * 1e6:.1f} us ({flops / kernel_s / 1e12:.0f} TFLOP/s)"
        except Exception as e:  # the profiler needs CUPTI, which some machines lack
            record["kineto_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
            kineto = f"kineto failed: {record['kineto_error']}"
        dg = medians["deepgemm"]
        line = (f"{name}: {config} pass; events: deepgemm {dg * 1e3:.1f} us ({flops / dg / 1e9:.0f} TFLOP/s), "
                f"per-tensor {medians['cublaslt_per_tensor'] * 1e3:.1f} us (ratio {medians['cublaslt_per_tensor'] / dg:.3f})")
        if "cublaslt_block_scaled" in medians:
            line += f", block-scaled {medians['cublaslt_block_scaled'] * 1e3:.1f} us (ratio {medians['cublaslt_block_scaled'] / dg:.3f})"
        line += f"; {kineto}"
        print(line, flush=True)
        records.append(record)
    if args.json:
        gpu = torch.cuda.get_device_name()
        with open(args.json, "w") as f:
            json.dump({"schema": "tilec-deepgemm-run/1", "gpu": gpu, "torch": torch.__version__, "versions": args.versions, "deep_gemm_sms": sms, "records": records}, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
