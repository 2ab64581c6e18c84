#!/usr/bin/env python3
"""Seeds barrier bugs into the kernels config selection picks and counts
what the barrier verifier (nv-verify-barriers) makes of each.

For every family tilec emits (plain, warp-specialised, ping-pong,
persistent, clusters, split-K, stream-K, block-scaled FP8, grouped
contiguous and masked) it compiles config selection's pick for a few
shapes to nv IR with `tilec compile --emit nv --ranking rules`, checks that
the verifier accepts the kernel unwarned, then breaks it one synchronising
line at a time and runs `tile-opt --nv-verify-barriers` on each mutant:

  * delete: each line whose op has the `synchronising` trait in the ODS
    files and no result (a wait, an arrive, an expect-tx, a fence, a
    wgmma fence/commit, a CTA, warpgroup or cluster barrier, a TMA-store
    wait);
  * expect-tx: each `nv.mbarrier_expect_tx` with half its bytes;
  * phase: each `nv.mbarrier_wait` waiting for the other parity
    (`1 - phase`).

Each mutant is flagged (a located error of the pass), warned (it passes
with a located warning: unproven), silent (it passes with nothing said) or
invalid (rejected before the pass: the mutant is not well-formed IR, not a
barrier bug). The JSON report has the counts per family and bug class and
every silent and warned mutant, so each can be judged.

Usage: scripts/seed-barrier-bugs.py [--bin DIR] [--out FILE]
(DIR holds tilec and tile-opt; default $CARGO_TARGET_DIR/debug or
target/debug.)
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (family, example, shape, extra tilec flags). Shapes are ones at which
# config selection picks the family's schedule; `pingpong` is looked up
# among the ranked candidates (no shape has it as the pick).
KERNELS = [
    ("plain-pipelined", "gemm_bf16", "512x8192x8192", []),
    ("plain-pipelined", "gemm_bf16", "2048x2048x16384", []),
    ("warp-specialised-persistent", "gemm_bf16", "4096x4096x4096", []),
    ("warp-specialised-persistent", "gemm_bf16", "6144x6144x6144", []),
    ("ping-pong", "gemm_bf16", "8192x8192x8192", ["pingpong"]),
    ("stream-k", "gemm_bf16", "8192x8192x8192", []),
    ("split-k", "gemm_bf16", "64x2112x7168", []),
    ("split-k", "gemm_bf16", "64x4096x7168", []),
    ("split-k", "gemm_fp8_blockscaled", "64x2112x7168", []),
    ("clusters", "gemm_bf16", "4096x4096x4096", ["--cluster", "m"]),
    ("clusters", "gemm_bf16", "4096x4096x4096", ["--cluster", "n"]),
    ("clusters", "gemm_fp8_blockscaled", "8192x8192x8192", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled", "64x4096x4096", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled", "128x4096x4096", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled", "256x4096x4096", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled", "512x4096x4096", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled", "1024x4096x4096", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled", "2048x4096x4096", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled", "4096x4096x4096", []),
    ("fp8-blockscaled", "gemm_fp8_blockscaled_sa_k_major", "1024x4096x4096", []),
    ("grouped-contiguous", "grouped_contiguous_bf16", "1024x4096x4096", []),
    ("grouped-contiguous", "grouped_contiguous_bf16", "4096x4096x4096", []),
    ("grouped-contiguous", "grouped_contiguous_fp8", "1024x4096x4096", []),
    ("grouped-contiguous", "grouped_contiguous_fp8", "4096x4096x4096", []),
    ("grouped-masked", "grouped_masked_bf16", "1024x4096x4096", []),
    ("grouped-masked", "grouped_masked_bf16", "256x7168x2048", []),
    ("grouped-masked", "grouped_masked_fp8", "1024x4096x4096", []),
    ("grouped-masked", "grouped_masked_fp8", "4096x4096x4096", []),
]

OP_LINE = re.compile(r"^(\s*)((?:%[\w.]+(?:, %[\w.]+)* = )?)([a-z]+\.[a-z_]+)\b(.*)$")
LOCATED_ERROR = re.compile(r"^\S+:\d+:\d+: error: ", re.M)
LOCATED_WARNING = re.compile(r"^\S+:\d+:\d+: warning: ", re.M)


def synchronising_ops():
    """Ops whose ODS entry lists the `synchronising` trait."""
    ops = set()
    for ods in ROOT.glob("dialects/src/*/ops.ods"):
        name = None
        for line in ods.read_text().splitlines():
            m = re.match(r"^op ([a-z]+\.[a-z_]+) ", line)
            if m:
                name = m.group(1)
            elif line.startswith("}"):
                name = None
            elif name and re.match(r"^\s*traits:.*\bsynchronising\b", line):
                ops.add(name)
    return ops


def run(cmd, **kw):
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - start


def pingpong_candidate(tilec, example, shape):
    _, _, err, _ = run([tilec, "compile", str(ROOT / "examples" / f"{example}.tile"), "--shape", shape, "--ranking", "rules", "--explain", "--emit", "nv"])
    for line in err.splitlines():
        m = re.match(r"^\s+(\d+) .* pingpong ", line)
        if m:
            return m.group(1)
    return None


def compile_kernel(tilec, example, shape, flags):
    if flags == ["pingpong"]:
        rank = pingpong_candidate(tilec, example, shape)
        if rank is None:
            return None, "no ping-pong candidate"
        flags = ["--candidate", rank]
    cmd = [tilec, "compile", str(ROOT / "examples" / f"{example}.tile"), "--shape", shape, "--ranking", "rules", "--emit", "nv", *flags]
    rc, out, err, _ = run(cmd)
    if rc != 0:
        return None, err.strip().splitlines()[0] if err.strip() else f"exit {rc}"
    return out, err


def mutants(text, sync_ops):
    """(class, line number, description, mutated text) for each seeded bug."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = OP_LINE.match(line.rstrip("\n"))
        if not m:
            continue
        indent, results, op, rest = m.groups()
        where = i + 1
        if op in sync_ops and not results:
            yield ("delete " + op, where, line.strip(), "".join(lines[:i] + lines[i + 1 :]))
        if op == "nv.mbarrier_expect_tx":
            b = re.search(r"\], (\d+) ", rest)
            if b:
                half = int(b.group(1)) // 2
                changed = line.replace(f"], {b.group(1)} ", f"], {half} ", 1)
                yield ("expect-tx bytes halved", where, line.strip(), "".join(lines[:i] + [changed] + lines[i + 1 :]))
        if op == "nv.mbarrier_wait":
            p = re.match(r"^ (%[\w.]+\[[^\]]*\]), (%[\w.]+)(.*)$", rest)
            if p:
                flip = [f"{indent}%seed_one = tile.constant 1 : index\n", f"{indent}%seed_flip = tile.subi %seed_one, {p.group(2)} : index\n"]
                changed = f"{indent}{op} {p.group(1)}, %seed_flip{p.group(3)}\n"
                yield ("phase flipped", where, line.strip(), "".join(lines[:i] + flip + [changed] + lines[i + 1 :]))


def previous_op(text, line):
    """The op line before line `line` (1-based): what a deleted line followed."""
    for earlier in reversed(text.splitlines()[: line - 1]):
        m = OP_LINE.match(earlier)
        if m and m.group(3) not in ("tile.muli", "tile.addi", "tile.subi", "tile.constant"):
            return earlier.strip()
    return ""


def verify(tile_opt, path):
    rc, _, err, secs = run([tile_opt, path, "--nv-verify-barriers"])
    if rc == 0:
        return ("warned" if LOCATED_WARNING.search(err) else "silent"), err, secs
    if "note: pass 'nv-verify-barriers' failed" in err and LOCATED_ERROR.search(err):
        return "flagged", err, secs
    return "invalid", err, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--bin", type=Path, default=target / "debug")
    ap.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks/barrier-verifier/seeded-bugs.json")
    ap.add_argument("--family", help="only the kernels of this family")
    args = ap.parse_args()
    tilec, tile_opt = str(args.bin / "tilec"), str(args.bin / "tile-opt")
    sync_ops = synchronising_ops()
    totals = Counter()
    by_family = defaultdict(Counter)
    by_class = defaultdict(Counter)
    kernels, unflagged, slowest = [], [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for family, example, shape, flags in KERNELS:
            if args.family and family != args.family:
                continue
            name = f"{example} {shape} {' '.join(flags)}".strip()
            text, compile_err = compile_kernel(tilec, example, shape, flags)
            entry = {"family": family, "kernel": name}
            if text is None:
                entry["skipped"] = compile_err
                kernels.append(entry)
                print(f"{name}: not compiled: {compile_err}", file=sys.stderr)
                continue
            config = re.search(r"tile\.config = (\{[^}]*\})", text)
            entry["config"] = config.group(1) if config else None
            kernel = Path(tmp) / "kernel.tile"
            kernel.write_text(text)
            baseline, err, _ = verify(tile_opt, str(kernel))
            # The kernel as compiled must verify with nothing said.
            entry["baseline"] = "clean" if baseline == "silent" else baseline
            entry["compile_warnings"] = len(LOCATED_WARNING.findall(compile_err))
            if baseline != "silent":
                entry["baseline_message"] = err.strip().splitlines()[0]
            counts = Counter()
            for cls, line, what, mutated in mutants(text, sync_ops):
                mutant = Path(tmp) / "mutant.tile"
                mutant.write_text(mutated)
                verdict, err, secs = verify(tile_opt, str(mutant))
                slowest = max(slowest, secs)
                counts[verdict] += 1
                if verdict != "invalid":
                    totals[verdict] += 1
                    by_family[family][verdict] += 1
                    by_class[cls][verdict] += 1
                if verdict in ("silent", "warned", "invalid"):
                    first = err.strip().splitlines()[0] if err.strip() else ""
                    after = previous_op(text, line)
                    unflagged.append({"kernel": name, "class": cls, "line": line, "op": what[:160], "after": after[:160], "verdict": verdict, "message": first[:400]})
            entry["mutants"] = dict(counts)
            kernels.append(entry)
            print(f"{name}: baseline {baseline}, {dict(counts)}", file=sys.stderr)
    seeded = sum(totals.values())
    report = {
        "schema": "tilec-barrier-seeded-bugs/1",
        "what": "Synchronising lines deleted (and expect-tx bytes halved, wait phases flipped) one at a time from config selection's picks; each mutant run through tile-opt --nv-verify-barriers",
        "command": "scripts/seed-barrier-bugs.py",
        "seeded": seeded,
        "flagged": totals["flagged"],
        "warned": totals["warned"],
        "silent": totals["silent"],
        "flagged_share": round(totals["flagged"] / seeded, 4) if seeded else None,
        "slowest_run_seconds": round(slowest, 2),
        "by_family": {f: dict(c) for f, c in sorted(by_family.items())},
        "by_class": {c: dict(v) for c, v in sorted(by_class.items())},
        "silent_by_preceding_op": dict(Counter(re.sub(r"[ %\[].*", "", u["after"]) for u in unflagged if u["verdict"] == "silent")),
        "kernels": kernels,
        "not_flagged": unflagged,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{seeded} seeded: {totals['flagged']} flagged, {totals['warned']} warned, {totals['silent']} silent -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
