#!/usr/bin/env python3
"""The status tables, made from the committed benchmark records: the README's (where tilec stands)
and docs/cost-model.md's (every set of shapes drawn fresh after a batch, by seed).

Each row names its records (docs/benchmarks/...) and how a figure is read from them: a judged
set of config selection's picks (tilec-judge/1, scripts/judge-picks.py), a tilec-bench run
(tilec-bench/3: the vendor's median time over ours, per shape) or a grouped run
(tilec-bench-grouped/1), or the printed rows of a checks record (tilec-checks/1) where a run
wrote no JSON. Ratios above 1 are ours faster.
usage: status-table.py               print the tables
       status-table.py --check FILE  exit 1 unless FILE holds, between each table's markers it has,
                                     that table (it must have at least one)
       status-table.py --write FILE  put them there"""
import argparse
import json
import math
import re
import statistics
import sys

# Each table's name, as its markers spell it: `<!-- NAME: made by ... -->` and `<!-- end of NAME -->`.
STATUS = "status table"
FRESH = "fresh-draws table"
# The judged picks of the current cost model, BF16 and FP8 in one file.
COST_MODEL = "docs/benchmarks/cost-model/2026-12-02-h200-judged-row-block-waits.json"
FRESH_BF16 = "docs/benchmarks/cost-model/2026-12-01-h200-judged-fresh-seed9.json"
FRESH_SEED14 = "docs/benchmarks/cost-model/2026-12-01-h200-judged-fresh-seed14-clusters-of-four.json"
FRESH_LATEST = "docs/benchmarks/cost-model/2026-12-01-h200-judged-fresh-seed15.json"
FRESH_SEED16 = "docs/benchmarks/cost-model/2026-12-01-h200-judged-fresh-seed16.json"
FRESH_SEED33 = "docs/benchmarks/cost-model/2026-12-01-h200-judged-fresh-seed33.json"
FRESH_SEED51 = "docs/benchmarks/cost-model/2026-12-01-h200-judged-fresh-seed51.json"
FRESH_SEED87 = "docs/benchmarks/cost-model/2026-12-01-h200-judged-fresh-seed87.json"
FRESH_DECODE_SEED21 = "docs/benchmarks/cost-model/2026-12-02-h200-judged-fresh-decode-seed21-row-block-waits.json"
FRESH_SEED90 = "docs/benchmarks/cost-model/2026-12-02-h200-judged-fresh-seed90-cluster-floor.json"
FRESH_SEED97 = "docs/benchmarks/cost-model/2026-12-02-h200-judged-fresh-seed97.json"
FRESH_DECODE_SEED97 = "docs/benchmarks/cost-model/2026-12-02-h200-judged-fresh-decode-seed97-row-block-waits.json"
FRESH_DECODE_SEED131 = "docs/benchmarks/cost-model/2026-12-02-h200-judged-fresh-decode-seed131-row-block-waits.json"
FRESH_SEED98 = "docs/benchmarks/cost-model/2026-12-02-h200-judged-fresh-seed98-cluster-floor.json"
FRESH_DECODE_SEED133 = "docs/benchmarks/cost-model/2026-12-02-h200-judged-fresh-decode-seed133.json"
EPILOGUE = "docs/benchmarks/epilogue/2026-11-29-h200-"
QUANTIZE = "docs/benchmarks/epilogue/2026-11-30-h200-fp8-quantize-picks.json"
GROUPED = "docs/benchmarks/checks/2026-12-01-h200-grouped-stream-k.json"
SEQUENCE = "docs/benchmarks/pdl/2026-11-30-h200-sequence-swapped-m"
DEEPGEMM = "docs/benchmarks/anchors/2026-12-01-h200-deepgemm-vs-tilec.json"
STREAM_CEILING = "docs/benchmarks/anchors/2026-12-01-h200-stream-ceiling-small-m.json"


def load(path):
    with open(path) as f:
        return json.load(f)


def geomean(ratios):
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios))


def judged(path, dtype, group, baseline):
    """Shape -> ratio of the picks judged in `path` for one dtype, group and baseline."""
    rows = load(path)["rows"]
    return {r["shape"]: r["ratios"][baseline] for r in rows if r["dtype"] == dtype and r["group"] == group and r["measured"] and baseline in r["ratios"]}


def untimed(path, dtype, group):
    """`; N picks not timed (shapes)` for the picks of one dtype and group that no
    measurements file of the judged record timed (judge-picks.py's unmeasured rows), else ''."""
    shapes = [r["shape"] for r in load(path)["rows"] if r["dtype"] == dtype and r["group"] == group and not r["measured"]]
    return f"; {len(shapes)} picks not timed ({', '.join(shapes)})" if shapes else ""


def bench(path, baseline, ours=lambda name: True):
    """Shape -> the named baseline's median time over ours (the run whose name `ours` accepts)."""
    out = {}
    for r in load(path)["results"]:
        runs = {x["name"]: x["stats"]["median_ms"] for x in r["runs"] if x.get("stats")}
        mine = [t for name, t in runs.items() if name.startswith("artifacts/") and ours(name)]
        if baseline in runs and len(mine) == 1:
            out[f"{r['m']}x{r['n']}x{r['k']}"] = runs[baseline] / mine[0]
    return out


def ours_ms(path, ours):
    """Shape -> the median time of the run whose name `ours` accepts, where one is."""
    out = {}
    for r in load(path)["results"]:
        mine = [x["stats"]["median_ms"] for x in r["runs"] if x["name"].startswith("artifacts/") and ours(x["name"]) and x.get("stats")]
        if len(mine) == 1:
            out[f"{r['m']}x{r['n']}x{r['k']}"] = mine[0]
    return out


def grouped(path, baseline, ours):
    """Problem label -> the baseline's median time over ours in a grouped run."""
    out = {}
    for r in load(path)["results"]:
        runs = {x["name"]: statistics.median(x["round_ms"]) for x in r["runs"]}
        out[r["label"]] = runs[baseline] / runs[ours]
    return out


def sequence(path, of, over):
    """`{M}` -> the median over rounds of `over`'s time over `of`'s in a sequence run
    (tilec-bench-sequence/1), keyed by the layer's M."""
    report = load(path)
    runs = {r["name"]: r["round_ms"] for r in report["runs"]}
    return {f"M = {report['steps'][0]['m']}": statistics.median(b / a for a, b in zip(runs[of], runs[over]))}


def checked_rows(path, kernel):
    """Problem -> ratio from a checks record's rows `PROBLEM: KERNEL MS ms, TF TFLOP/s, R of the
    cuBLAS loop` (a grouped run's printed table, kept where the run wrote no JSON)."""
    out = {}
    for run in load(path)["runs"]:
        for row in run.get("rows", []):
            problem, rest = row.split(": ", 1)
            words = rest.split()
            if words[0] == kernel:
                out[problem] = float(words[5])
    return out


def anchor(path, group):
    """tilec's and DeepGEMM's geometric means over one group of an anchor record
    (tilec-anchor-deepgemm/1, scripts/anchors/compare-deepgemm.py)."""
    g = load(path)["summary"][group]
    return (f"tilec {g['tilec_over_per_tensor']:.3f}, DeepGEMM {g['deepgemm_over_per_tensor']:.3f}; "
            f"of the roofline tilec {g['tilec_roofline']:.3f}, DeepGEMM {g['deepgemm_roofline']:.3f}")


def ceiling(path):
    """What a copy of the shapes' bytes and the vendor's GEMMs reach of the roofline, by
    dtype (tilec-stream-ceiling/1, scripts/anchors/stream_ceiling.py)."""
    g = load(path)["summary"]
    return "; ".join(f"{name}: copy {g[d]['copy_roofline']:.3f}, {vendor} {g[d]['vendor_roofline']:.3f}"
                     for d, name, vendor in (("fp8", "FP8", "cuBLASLt per-tensor"), ("bf16", "BF16", "cuBLAS")))


def fp8_fresh(path, group):
    """A fresh FP8 set against cuBLASLt's per-tensor FP8, and against its block-scaled FP8 on
    the shapes that one runs."""
    blocks = judged(path, "fp8", group, "block-scaled")
    return (summary(judged(path, "fp8", group, "per-tensor"))
            + f"; {geomean(list(blocks.values())):.3f} of cuBLASLt block-scaled on the {len(blocks)} it runs")


def fresh_draw(bf16_label, fp8_label, path, group):
    """A draw's two rows: its BF16 picks against the faster of cuBLAS and cuBLASLt, its FP8
    picks against cuBLASLt's per-tensor FP8 (and block-scaled FP8 where that one runs)."""
    return [
        (f"{bf16_label}, vs the faster of cuBLAS and cuBLASLt", summary(judged(path, "bf16", group, "cublas")), path),
        (f"{fp8_label}, vs cuBLASLt per-tensor FP8", fp8_fresh(path, group), "same"),
    ]


def summary(ratios, named=()):
    """`G, lowest L (shape)` and `(S: r, ...)` for the shapes named; one shape's ratio alone."""
    if not ratios:
        raise SystemExit("a status row's records hold no ratio")
    if len(ratios) == 1:
        [(shape, ratio)] = ratios.items()
        return f"{ratio:.3f} ({shape})"
    text = f"{geomean(list(ratios.values())):.3f}"
    low = min(ratios, key=ratios.get)
    if low not in named:
        text += f", lowest {ratios[low]:.3f} ({low})"
    if named:
        text += " (" + ", ".join(f"{s}: {ratios[s]:.3f}" for s in named) + ")"
    return text


def rows():
    bf16 = lambda group: judged(COST_MODEL, "bf16", group, "cublas")
    fp8 = lambda group, baseline: judged(COST_MODEL, "fp8", group, baseline)
    plain = ours_ms(EPILOGUE + "fused-vs-plain.json", lambda name: "/plain_" in name)
    fused = ours_ms(EPILOGUE + "fused-vs-plain.json", lambda name: name.endswith("_r1"))
    fused_vs_plain = {s: plain[s] / fused[s] for s in fused}
    pick = lambda name: name.endswith("_r1")
    return [
        ("BF16, 60 validation shapes (`draw-shapes.py --seed 2`), vs the faster of cuBLAS and cuBLASLt", summary(bf16("validation")), COST_MODEL),
        *fresh_draw("BF16, 30 fresh shapes (`draw-shapes.py --seed 98`, drawn after the wait for each row block; the one pick the one-wave cluster floor moved timed again; the earlier draws: docs/cost-model.md, \"Fresh draws\")", "FP8 block-scaled, the same 30 fresh shapes", FRESH_SEED98, "fresh-seed98"),
        ("BF16, the 20 benchmark shapes (DESIGN section 8)", summary(bf16("benchmark"), ["4096x4096x4096", "8192x8192x8192"]), COST_MODEL),
        ("BF16, deep K", summary(bf16("deep-k"), ["512x512x65536", "1024x1024x16384"]), "same"),
        ("FP8 block-scaled, the 20 benchmark shapes, vs cuBLASLt block-scaled", summary(fp8("benchmark", "block-scaled")) + f"; {geomean(list(fp8('benchmark', 'per-tensor').values())):.3f} of per-tensor FP8", COST_MODEL),
        ("FP8 block-scaled, 60 validation shapes, vs cuBLASLt per-tensor FP8", summary(fp8("validation", "per-tensor")) + untimed(COST_MODEL, "fp8", "validation"), "same"),
        (f"the same against cuBLASLt block-scaled, on the {len(fp8('validation', 'block-scaled'))} of them it runs (it refuses the rest)", summary(fp8("validation", "block-scaled")), "same"),
        ("BF16 decode sizes, M 1 to 16 (`draw-shapes.py --decode --seed 4`, 24 shapes), vs the faster of cuBLAS and cuBLASLt", summary(bf16("decode")), COST_MODEL),
        ("FP8 block-scaled, the same decode sizes, vs cuBLASLt per-tensor FP8", summary(fp8("decode", "per-tensor")) if fp8("decode", "per-tensor") else "not judged: the current picks were not timed", COST_MODEL),
        (f"the same against cuBLASLt block-scaled, on the {len(fp8('decode', 'block-scaled'))} of them it runs (it refuses the rest)", summary(fp8("decode", "block-scaled")), "same"),
        *fresh_draw("BF16, 30 fresh decode sizes (`draw-shapes.py --decode --seed 133`, drawn after the wait for each row block)", "FP8 block-scaled, the same 30", FRESH_DECODE_SEED133, "fresh-decode-seed133"),
        ("BF16 GEMM + bias + GELU (`examples/gemm_bias_gelu.tile`), the 20 benchmark shapes, vs cuBLASLt `GELU_BIAS`", summary(bench(EPILOGUE + "bias-gelu-picks.json", "cublaslt-gelu-bias", pick)), EPILOGUE + "bias-gelu-picks.json"),
        ("the same against the plain BF16 pick (its time over the fused one's, runs back to back)", summary(fused_vs_plain, ["4096x4096x4096", "8192x8192x8192"]), EPILOGUE + "fused-vs-plain.json"),
        ("BF16 GEMM + residual (`examples/gemm_residual.tile`), the 20 shapes, vs cuBLASLt's `beta C`", summary(bench(EPILOGUE + "residual-picks.json", "cublaslt-residual", pick)), EPILOGUE + "residual-picks.json"),
        ("SwiGLU MLP in one GEMM (`examples/mlp_swiglu.tile`), M x 2H x K, vs two cuBLASLt GEMMs + an element-wise kernel", summary(bench(EPILOGUE + "swiglu-two-gemms.json", "cublaslt-2gemm+nvrtc-gated"), ["4096x28672x4096"]), EPILOGUE + "swiglu-two-gemms.json"),
        ("Grouped contiguous BF16 (`examples/grouped_contiguous_bf16.tile`), the 8 contiguous problems of the grouped benchmark in two draws of the experts' rows (`--seed 11`, `--seed 12`) and three more at 7168x2048, vs the per-expert cuBLAS loop", summary(checked_rows(GROUPED, "grouped_contiguous_bf16")), GROUPED),
        ("Grouped SwiGLU (`examples/grouped_contiguous_swiglu.tile`), vs per-expert cuBLAS loops per part + the element-wise kernel", summary(grouped(EPILOGUE + "grouped-swiglu.json", "cublas-loop-2gemm+nvrtc-gated", "gswiglu_c1")), EPILOGUE + "grouped-swiglu.json"),
        ("FP8 block-scaled + per-token FP8 quantisation (`examples/gemm_fp8_quantize.tile`), the six M = 4096 shapes, vs cuBLASLt block-scaled + a quantisation kernel", summary(bench(QUANTIZE, "cublaslt-fp8-block+nvrtc-quantize", pick)), QUANTIZE),
        ("A transformer layer's four BF16 GEMMs back to back (`tilec-bench --sequence`, four layers), programmatic dependent launch on over off", ", ".join(summary(sequence(f"{SEQUENCE}{m}.json", "tilec+pdl", "tilec")) for m in (8, 64, 4096)), SEQUENCE + "{8,64,4096}.json"),
        ("the same with programmatic launch, vs cuBLAS over the same sequence", ", ".join(summary(sequence(f"{SEQUENCE}{m}.json", "tilec+pdl", "cublas")) for m in (8, 64, 4096)), "same"),
        ("FP8 block-scaled, the 12 benchmark shapes with M = 64 and 128, beside DeepGEMM (commit 83aa960, built and run on the same machine, `scripts/anchors/`), each vs cuBLASLt per-tensor FP8 in its own run", anchor(DEEPGEMM, "m_64_128"), DEEPGEMM),
        ("the same at M = 4096 (the six shapes and 4096^3)", anchor(DEEPGEMM, "m_4096"), "same"),
        ("The same 12 shapes' bytes alone (A, B, C and the scales) moved by a copy kernel in a single call, and the vendor's GEMM, each timed the same way: the fraction of the HBM roofline a call that computes nothing reaches", ceiling(STREAM_CEILING), STREAM_CEILING),
        ("FP8 block-scaled + bias + ReLU, vs cuBLASLt per-tensor FP8 + an element-wise kernel", summary(bench(EPILOGUE + "fp8-bias-relu-4096.json", "cublaslt-fp8+nvrtc-epilogue"), ["4096x4096x4096"]), EPILOGUE + "fp8-bias-relu-4096.json"),
    ]


def fresh_rows():
    """The sets drawn fresh after earlier batches, each judged with the picks it was last timed with."""
    return [
        ("BF16, 60 fresh shapes (`draw-shapes.py --seed 9`, drawn after the model was fitted; the four picks later changes moved, timed again beside the old), vs the faster of cuBLAS and cuBLASLt", summary(judged(FRESH_BF16, "bf16", "fresh-seed9", "cublas")), FRESH_BF16),
        *fresh_draw("BF16, 40 fresh shapes (`draw-shapes.py --seed 14`; its lowest shapes were studied for the latest changes)", "FP8 block-scaled, the same 40 shapes", FRESH_SEED14, "fresh-seed14"),
        *fresh_draw("BF16, 40 fresh shapes (`draw-shapes.py --seed 15`, drawn before clusters of four, which moved none of their picks)", "FP8 block-scaled, the same 40 fresh shapes", FRESH_LATEST, "fresh-seed15"),
        *fresh_draw("BF16, 40 more fresh shapes (`draw-shapes.py --seed 16`, drawn before clusters of four, which moved none of their picks)", "FP8 block-scaled, the same 40 fresh shapes", FRESH_SEED16, "fresh-seed16"),
        *fresh_draw("BF16, 24 fresh shapes (`draw-shapes.py --seed 33`, drawn after clusters of four)", "FP8 block-scaled, the same 24 fresh shapes", FRESH_SEED33, "fresh-seed33"),
        *fresh_draw("BF16, 24 fresh shapes (`draw-shapes.py --seed 51`, drawn after barrier waits as loops and chunked epilogues of 64-byte swizzled rows)", "FP8 block-scaled, the same 24 fresh shapes", FRESH_SEED51, "fresh-seed51"),
        *fresh_draw("BF16, 24 fresh shapes (`draw-shapes.py --seed 87`, drawn after tail descriptors and paired promotions)", f"FP8 block-scaled, the {len(judged(FRESH_SEED87, 'fp8', 'fresh-seed87', 'per-tensor'))} of the same shapes timed before two calls' limits", FRESH_SEED87, "fresh-seed87"),
        *fresh_draw("BF16, 30 fresh shapes (`draw-shapes.py --seed 90`, drawn after the cluster hand-over term; the first-wave L2 merging term moved none of their picks, the one-wave cluster floor one BF16 pick, timed again)", "FP8 block-scaled, the same 30 fresh shapes", FRESH_SEED90, "fresh-seed90"),
        *fresh_draw("BF16, 60 fresh decode sizes (`draw-shapes.py --decode --seed 21`, drawn after the cluster hand-over term; the first-wave L2 merging term moved none of their picks, the wait for each row block 7 FP8 picks, timed again)", "FP8 block-scaled, the same 60", FRESH_DECODE_SEED21, "fresh-decode-seed21"),
        *fresh_draw("BF16, 30 fresh decode sizes (`draw-shapes.py --decode --seed 97`, drawn after the first-wave L2 merging term; the 5 FP8 picks the wait for each row block moved timed again)", "FP8 block-scaled, the same 30", FRESH_DECODE_SEED97, "fresh-decode-seed97"),
        *fresh_draw("BF16, 30 fresh shapes (`draw-shapes.py --seed 97`, drawn after the first-wave L2 merging term; no later change moved their picks)", "FP8 block-scaled, the same 30 fresh shapes", FRESH_SEED97, "fresh-seed97"),
        *fresh_draw("BF16, 30 fresh decode sizes (`draw-shapes.py --decode --seed 131`, drawn before the wait for each row block; the 4 FP8 picks it moved timed again)", "FP8 block-scaled, the same 30", FRESH_DECODE_SEED131, "fresh-decode-seed131"),
    ]


def table(made):
    # The records are named by the date of their run: the header spans them.
    dates = sorted({d for _, _, source in made for d in re.findall(r"\d{4}-\d{2}-\d{2}", source)})
    span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    lines = [f"| set (NVIDIA H200, {span}: the dates of the records) | tilec | source |", "|---|---|---|"]
    previous = None
    for label, figure, source in made:
        shown = "same" if source == previous or source == "same" else f"`{source}`"
        previous = source if source != "same" else previous
        lines.append(f"| {label} | {figure} | {shown} |")
    return "\n".join(lines)


def markers(name):
    return f"<!-- {name}: made by scripts/status-table.py from the records it names; do not edit -->", f"<!-- end of {name} -->"


def between_markers(text, name):
    """(head, table, tail) of `text` around the named table's markers, or None where it has neither."""
    begin, end = markers(name)
    if begin not in text and end not in text:
        return None
    if text.count(begin) != 1 or text.count(end) != 1:
        raise SystemExit(f"the file needs exactly one '{begin}' and one '{end}' line")
    head, rest = text.split(begin + "\n", 1)
    body, tail = rest.split(end, 1)
    return head, body.rstrip("\n"), tail


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", metavar="FILE")
    group.add_argument("--write", metavar="FILE")
    args = parser.parse_args()
    tables = {STATUS: table(rows()), FRESH: table(fresh_rows())}
    if not (args.check or args.write):
        print("\n\n".join(tables.values()))
        return
    path = args.check or args.write
    with open(path) as f:
        text = f.read()
    found = [name for name in tables if between_markers(text, name)]
    if not found:
        sys.exit(f"{path}: holds no status table's markers ({', '.join(markers(name)[0] for name in tables)})")
    for name in found:
        head, body, tail = between_markers(text, name)
        if args.check and body != tables[name]:
            sys.exit(f"{path}: the {name} differs from the records' (scripts/status-table.py --write {path} remakes it)")
        begin, end = markers(name)
        text = head + begin + "\n" + tables[name] + "\n" + end + tail
    if args.check:
        print(f"{path}: the {' and the '.join(found)} {'match' if len(found) > 1 else 'matches'} the records")
        return
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
