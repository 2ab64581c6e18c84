#!/usr/bin/env python3
"""Draws the cases of a differential GPU fuzz run: (program, shape, pinned config, schedule).

Each case is one kernel `tilec compile` builds and `tilec-gpu-test` checks on the GPU against
cuBLAS/cuBLASLt (or the FP64 product) with fresh random inputs, at the case's shape and at one
odd shape more (scripts/build-gpu-bundle.sh --fuzz builds them, run-fuzz.sh runs them;
docs/benchmarks/robustness/README.md). The draw, for a seed:

  - program: every example tilec-gpu-test checks (PROGRAMS), the plain BF16 and block-scaled
    FP8 GEMMs most often;
  - shape: M log-uniform from 1 to 16384, N from 8 to 16384, K from 128 to 8192 (the grouped
    programs: experts, uneven rows with empty and one-row experts, N and K alike, smaller);
    M any integer, N odd for half the cases (the epilogue then stores without TMA) where the
    program allows it, K a multiple of 8 (BF16) or 16 (FP8) for TMA's 16-byte rows, except one
    case in 50 that is left unaligned (a plain GEMM then runs on the runtime's padded copies of
    A and B, a grouped one is refused). The corners 1x8x128 and
    16384x16384x8192 come first, for both dtypes;
  - pins: most cases none; others `--cluster m|n`, `--param BLOCK_M|BLOCK_N|STAGES=...` (what
    the program leaves as a parameter), `--ranking rules`;
  - rank: `tilec compile --shape S PINS --explain` lists the twelve best candidates and how many
    more there are; a quarter of the cases take the pick (rank 1), most of the rest the listed
    candidate whose schedule features (pipeline, ws1, ws2, ping-pong, split-K through a cluster
    or a workspace, stream-K, clusters along M or N, deferred or chunked epilogue, TMA or
    direct stores, rasterised order) have been drawn least so far, and one in seven an unlisted
    rank (13 to the last);
  - targeted cases, after those: features the random draw listed fewer than 20 times (one in 50
    cases; the deferred epilogue, the rasterised order, one stage, FP8 scales prefetched into
    registers) get cases of their own, shapes (and pins) where config selection offers them.

The programs, shapes and pins come from one random stream and the ranks from another, so a seed
gives the same shapes whatever tilec ranks; the ranks (and so the kernels) are those of the
tilec that drew them, whose commit cases.json records. Cases in scripts/gpu-fuzz-regressions.txt
(shrunk reproducers of earlier failures, scripts/shrink-fuzz-case.py) come first, as written.

Writes DIR/cases.json (every case, its flags and check shapes) and DIR/variants.txt
(`NAME FILE - FLAGS`, scripts/build-gpu-bundle.sh's format).
usage: draw-fuzz-cases.py --seed S --count N [--out DIR] [--tilec PATH] [--jobs J]"""
import argparse
import importlib.util
import json
import math
import os
import random
import re
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("draw_shapes", ROOT / "scripts/draw-shapes.py")
draw_shapes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(draw_shapes)
log_uniform = draw_shapes.log_uniform
_spec = importlib.util.spec_from_file_location("fuzz_report", ROOT / "scripts/fuzz-report.py")
fuzz_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_report)
features, schedule_class, round_up = fuzz_report.features, fuzz_report.schedule_class, fuzz_report.round_up

# name, weight, kind, dtype. kind: gemm (C[M,N]), b_kn (B stored K x N: N*2 bytes a row),
# gated (interleaved gate and up: N a multiple of 256), grouped_contiguous, grouped_masked,
# grouped_gated.
PROGRAMS = [
    ("gemm_bf16", 34, "gemm", "bf16"),
    ("gemm_fp8_blockscaled", 24, "gemm", "fp8"),
    ("gemm_fp8_blockscaled_sa_k_major", 3, "gemm", "fp8"),
    ("gemm_bf16_a_regs", 2, "gemm", "bf16"),
    ("gemm_bf16_b_kn", 3, "b_kn", "bf16"),
    ("gemm_bf16_unswizzled", 2, "gemm", "bf16"),
    ("gemm_bias_gelu", 5, "gemm", "bf16"),
    ("gemm_residual", 5, "gemm", "bf16"),
    ("gemm_fp8_quantize", 5, "gemm", "fp8"),
    ("mlp_swiglu", 4, "gated", "bf16"),
    ("grouped_contiguous_bf16", 2, "grouped_contiguous", "bf16"),
    ("grouped_contiguous_fp8", 2, "grouped_contiguous", "fp8"),
    ("grouped_contiguous_swiglu", 2, "grouped_gated", "bf16"),
    ("grouped_masked_bf16", 2, "grouped_masked", "bf16"),
    ("grouped_masked_fp8", 2, "grouped_masked", "fp8"),
]
REGRESSIONS = ROOT / "scripts/gpu-fuzz-regressions.txt"
EXPLAIN_ROW = re.compile(r"^\s+(\d+) (\S+x\S+ .*?) sms=\d+\s")
EXPLAIN_MORE = re.compile(r"^\s+\.\.\. (\d+) more")


def k_step(dtype):
    """K's step for 16-byte rows of A and B: 8 BF16 or 16 FP8 elements."""
    return 16 if dtype == "fp8" else 8


def draw_n(rng, kind, dtype, lo=8, hi=16384):
    n = log_uniform(rng, lo, hi)
    if kind in ("gated", "grouped_gated"):
        return round_up(n, 256)
    if kind == "b_kn" or rng.random() < 0.5:
        return round_up(n, 8)
    return n


def draw_k(rng, dtype, lo=128, hi=8192, misaligned=False):
    k = log_uniform(rng, lo, hi)
    if misaligned:
        return k | 1
    return round_up(k, k_step(dtype))


def draw_rows(rng, groups, hi):
    """Uneven valid rows of `groups` experts: one empty and one of a single row where there are
    three or more, the rest log-uniform up to `hi` (some empty)."""
    rows = [0 if rng.random() < 0.15 else log_uniform(rng, 1, hi) for _ in range(groups)]
    if groups >= 3:
        rows[0], rows[1] = 0, 1
        rng.shuffle(rows)
    if not any(rows):
        rows[-1] = log_uniform(rng, 1, hi)
    return rows


def grouped_problem(rng, kind, dtype, small=False):
    """A grouped problem string (tilec-gpu-test --grouped-problems) and its flattened GEMM shape."""
    groups = rng.randint(1, 8 if small else 16)
    n = draw_n(rng, kind, dtype, 8, 2048 if small else 7168)
    k = draw_k(rng, dtype, 16 if small else 128, 2048 if small else 7168)
    hi = 300 if small else 2048
    rows = draw_rows(rng, groups, hi)
    if kind == "grouped_masked":
        m_max = max(rows) + rng.choice([0, 0, 1, 7, 64])
        m_max = round_up(m_max, 8) if dtype == "fp8" else max(m_max, 1)
        problem = f"masked/{m_max}:{n}x{k}:" + ",".join(map(str, rows))
        m = groups * m_max
    else:
        problem = f"contiguous:{n}x{k}:" + ",".join(map(str, rows))
        m = max(128, sum(-(-r // 128) * 128 for r in rows))
    return problem, (m, n, k)


def draw_shape(rng, kind, dtype, misaligned):
    m = log_uniform(rng, 1, 16384)
    n = draw_n(rng, kind, dtype)
    k = draw_k(rng, dtype, misaligned=misaligned)
    return m, n, k


def extra_shape(rng, kind, dtype):
    """The odd shape each kernel is checked at besides its own: small to medium, M odd, K down
    to a fraction of one K block. N's alignment for a TMA store is settled when the kernel's
    config is known (build-gpu-bundle.sh --fuzz)."""
    m = log_uniform(rng, 1, 2048) | 1
    n = draw_n(rng, kind, dtype, 8, 4096)
    k = draw_k(rng, dtype, 16, 4096)
    return m, n, k


def program_params(path):
    text = path.read_text()
    return [p for p in ("BLOCK_M", "BLOCK_N", "BLOCK_K") if re.search(rf"tile\.param {p}\b|{p}x|x{p}", text)]


def draw_pins(rng, params, dtype):
    r = rng.random()
    if r < 0.60:
        return []
    if r < 0.74:
        pins = ["--cluster", rng.choice("mn")]
        if "BLOCK_N" in params and rng.random() < 0.3:
            pins += ["--param", f"BLOCK_N={rng.choice([64, 128, 192, 256])}"]
        return pins
    if r < 0.84 and "BLOCK_N" in params:
        values = [v for v in range(16, 257, 16)] if dtype == "bf16" else [64, 96, 128, 160, 176, 192, 224, 256]
        return ["--param", f"BLOCK_N={rng.choice(values)}"]
    if r < 0.88 and "BLOCK_M" in params:
        return ["--param", f"BLOCK_M={rng.choice([64, 128, 256])}"]
    if r < 0.93:
        return ["--param", f"STAGES={rng.randint(1, 8)}"]
    return ["--ranking", "rules"]


def explain(tilec, case):
    cmd = [tilec, "compile", case["file"], "--shape", "x".join(map(str, case["shape"])), *case["pins"], "--explain"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    rows, more = [], 0
    for line in p.stderr.splitlines():
        if m := EXPLAIN_ROW.match(line):
            rows.append((int(m.group(1)), m.group(2).strip()))
        elif m := EXPLAIN_MORE.match(line):
            more = int(m.group(1))
    said = [line for line in p.stderr.splitlines() if "error:" in line] or [f"exit {p.returncode}"]
    error = "" if p.returncode == 0 else said[0]
    return rows, len(rows) + more, error


def choose_rank(rng, rows, total, seen):
    """A quarter the pick, one in seven an unlisted rank, else the listed candidate whose
    features were drawn least (ties and near-ties broken at random)."""
    r = rng.random()
    if not rows:
        return None, None
    if r < 0.25:
        return rows[0]
    if r < 0.39 and total > len(rows):
        return rng.randint(len(rows) + 1, total), None
    score = lambda cfg: sum(1.0 / (1 + seen[f]) for f in features(cfg))
    weights = [score(cfg) ** 3 + 1e-9 for _, cfg in rows]
    return rng.choices(rows, weights=weights)[0]


def regressions():
    """Cases of scripts/gpu-fuzz-regressions.txt: `NAME FILE CHECK FLAGS...`, CHECK being
    `shapes=MxNxK[,...]` or `grouped=PROBLEM[;...]`."""
    out = []
    if not REGRESSIONS.exists():
        return out
    for line in REGRESSIONS.read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        name, file, check, *flags = words
        kind, value = check.split("=", 1)
        program = Path(file).stem
        dtype = next((d for p, _, _, d in PROGRAMS if p == program), "bf16")
        case = {"name": f"reg-{name}", "program": program, "file": file, "dtype": dtype, "regression": True, "flags": flags, "pins": [], "rank": None}
        shape = flags[flags.index("--shape") + 1] if "--shape" in flags else None
        case["shape"] = [int(x) for x in shape.split("x")] if shape else None
        if kind == "grouped":
            case["check"] = {"grouped": value.split(";")}
        else:
            case["check"] = {"shapes": value.split(",")}
        out.append(case)
    return out


def estimate_s(case):
    """Rough seconds of one tilec-gpu-test run on the H200 (process, JIT, cuBLAS handles, host
    inputs and comparisons), for keeping the run within its budget."""
    total = 1.2
    for s in case["check"].get("shapes", []):
        m, n, k = map(int, s.split("x"))
        total += (m * k + n * k) * 8e-9 + m * n * 3.5e-8 + (m * n * k * 2e-9 if m * n * k <= 1 << 28 else 0)
    for p in case["check"].get("grouped", []):
        form, nk, rows = p.split(":")
        n, k = map(int, nk.split("x"))
        total += 0.3 + sum(int(r) for r in rows.split(",")) * (n + k) * 4e-8
    return total


def draw(seed, count, tilec, jobs):
    shapes_rng = random.Random(seed)
    ranks_rng = random.Random(seed * 1_000_003 + 17)
    weights = [w for _, w, _, _ in PROGRAMS]
    params = {p: program_params(ROOT / f"examples/{p}.tile") for p, _, _, _ in PROGRAMS}
    cases = []
    corners = [("gemm_bf16", (1, 8, 128)), ("gemm_bf16", (16384, 16384, 8192)), ("gemm_fp8_blockscaled", (1, 8, 128)), ("gemm_fp8_blockscaled", (16384, 16384, 8192))]
    for i in range(count):
        if i < len(corners):
            program, shape = corners[i]
            _, _, kind, dtype = next(p for p in PROGRAMS if p[0] == program)
        else:
            program, _, kind, dtype = shapes_rng.choices(PROGRAMS, weights=weights)[0]
        case = {"name": f"c{i:04d}-{program}", "program": program, "file": f"examples/{program}.tile", "dtype": dtype, "kind": kind}
        if kind.startswith("grouped"):
            problem, shape = grouped_problem(shapes_rng, kind, dtype)
            extra, _ = grouped_problem(shapes_rng, kind, dtype, small=True)
            case["check"] = {"grouped": [problem, extra]}
        else:
            misaligned = i >= len(corners) and shapes_rng.random() < 0.02
            if i >= len(corners):
                shape = draw_shape(shapes_rng, kind, dtype, misaligned)
            case["misaligned_k"] = misaligned
            case["check"] = {"shapes": ["x".join(map(str, shape)), "x".join(map(str, extra_shape(shapes_rng, kind, dtype)))]}
        case["shape"] = list(shape)
        case["pins"] = [] if i < len(corners) else draw_pins(shapes_rng, params[program], dtype)
        cases.append(case)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        explained = list(pool.map(lambda c: explain(tilec, c), cases))
    seen = Counter()
    for case, (rows, total, error) in zip(cases, explained):
        rank, config = choose_rank(ranks_rng, rows, total, seen)
        case["candidates"] = total
        if error:
            case["explain_error"] = error
        case["rank"] = rank
        case["planned_config"] = config
        if config:
            seen.update(features(config))
        flags = ["--shape", "x".join(map(str, case["shape"])), *case["pins"]]
        if rank is not None and rank != 1:
            flags += ["--candidate", str(rank)]
        case["flags"] = flags
    cases += targeted(shapes_rng, ranks_rng, tilec, seen, len(cases))
    return regressions() + cases


# Features the random draw lists rarely, each with programs, a shape sampler and pins where
# config selection offers it: the deferred epilogue only for a BF16 pick over four waves of
# 128x256 tiles and 64 K blocks; the rasterised order behind the persistent picks of large
# shapes; one stage where K is one K block; FP8 scales prefetched into registers where a pinned
# stage count leaves no room to stage them.
TARGETS = {
    "epilogue-deferred": (["gemm_bf16", "gemm_bias_gelu", "gemm_residual"], lambda rng, dtype: (log_uniform(rng, 2048, 8192), round_up(log_uniform(rng, 2048, 8192), 8), round_up(log_uniform(rng, 4096, 8192), 8)), lambda rng: []),
    "raster": (["gemm_bf16", "gemm_fp8_blockscaled"], lambda rng, dtype: (log_uniform(rng, 4096, 12288), log_uniform(rng, 4096, 12288), round_up(log_uniform(rng, 512, 4096), k_step(dtype))), lambda rng: []),
    "one-stage": (["gemm_bf16", "gemm_fp8_blockscaled"], lambda rng, dtype: (log_uniform(rng, 1, 4096), log_uniform(rng, 8, 4096), round_up(log_uniform(rng, 8, 128 if dtype == "fp8" else 64), k_step(dtype))), lambda rng: []),
    "scales-prefetched": (["gemm_fp8_blockscaled", "gemm_fp8_blockscaled_sa_k_major", "gemm_fp8_quantize"], lambda rng, dtype: (log_uniform(rng, 1, 4096), log_uniform(rng, 128, 16384), round_up(log_uniform(rng, 256, 2048), 16)), lambda rng: ["--param", f"STAGES={rng.choice([1, 4, 6])}"]),
}
def targeted(shapes_rng, ranks_rng, tilec, seen, first):
    """Cases for the TARGETS features drawn fewer than 20 times (one in 50 of the random cases,
    at most 20): shapes from the
    feature's sampler until `--explain` lists a candidate with it (at most eight tries a case
    wanted), that candidate's rank. They follow the random cases; which shapes they take depends
    on the ranking, as the ranks do."""
    cases = []
    for feat, (programs, sample, pins) in TARGETS.items():
        want = min(20, first // 50) - seen[feat]
        for _ in range(8 * max(want, 0)):
            if want <= 0:
                break
            program = shapes_rng.choice(programs)
            _, _, kind, dtype = next(p for p in PROGRAMS if p[0] == program)
            m, n, k = sample(shapes_rng, dtype)
            if m * n > 1 << 27:
                continue
            case = {"name": f"c{first + len(cases):04d}-{program}", "program": program, "file": f"examples/{program}.tile", "dtype": dtype, "kind": kind, "target": feat, "shape": [m, n, k], "pins": pins(shapes_rng)}
            case["check"] = {"shapes": [f"{m}x{n}x{k}", "x".join(map(str, extra_shape(shapes_rng, kind, dtype)))]}
            rows, total, _ = explain(tilec, case)
            hits = [r for r in rows if feat in features(r[1])]
            if not hits:
                continue
            rank, config = ranks_rng.choice(hits)
            case.update(candidates=total, rank=rank, planned_config=config, misaligned_k=False)
            case["flags"] = ["--shape", f"{m}x{n}x{k}", *case["pins"]] + (["--candidate", str(rank)] if rank != 1 else [])
            seen.update(features(config))
            cases.append(case)
            want -= 1
    return cases


def git(*args):
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--out", default=".device/fuzz-cases", help="folder for cases.json and variants.txt")
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    parser.add_argument("--tilec", default=f"{target}/release/tilec")
    parser.add_argument("--jobs", type=int, default=2, help="tilec --explain runs at once")
    args = parser.parse_args()
    if not os.access(args.tilec, os.X_OK):
        sys.exit(f"draw-fuzz-cases: no tilec at {args.tilec} (cargo build --release -p tilec --bin tilec, or --tilec)")
    cases = draw(args.seed, args.count, args.tilec, args.jobs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    doc = {
        "schema": "tilec-fuzz-cases/1",
        "seed": args.seed,
        "count": args.count,
        "commit": commit + ("-dirty" if dirty else ""),
        "tilec": subprocess.run([args.tilec, "--version"], capture_output=True, text=True).stdout.strip(),
        "command": "scripts/draw-fuzz-cases.py " + " ".join(sys.argv[1:]),
        "estimated_gpu_s": round(sum(estimate_s(c) for c in cases)),
        "cases": cases,
    }
    (out / "cases.json").write_text(json.dumps(doc, indent=1) + "\n")
    with open(out / "variants.txt", "w") as f:
        f.write(f"# draw-fuzz-cases.py --seed {args.seed} --count {args.count} at {doc['commit']}\n")
        for c in cases:
            f.write(f"{c['name']} {c['file']} - {' '.join(c['flags'])}\n")
    by_program = Counter(c["program"] for c in cases)
    print(f"{len(cases)} cases (seed {args.seed}) in {out}/cases.json; tilec-gpu-test about {doc['estimated_gpu_s']} s of GPU-machine time in all")
    for p, n in sorted(by_program.items(), key=lambda x: -x[1]):
        print(f"  {n:5} {p}")
    planned = Counter(schedule_class(c["planned_config"]) for c in cases if c.get("planned_config"))
    print(f"  listed configs drawn ({sum(planned.values())}; the rest are unlisted ranks or refused explains):")
    for cls, n in planned.most_common():
        print(f"  {n:5} {cls}")


if __name__ == "__main__":
    main()
