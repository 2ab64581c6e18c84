#!/usr/bin/env python3
"""The differential GPU fuzz run's bookkeeping, on both machines (copied into the bundle).

  finish BUNDLE CASES_JSON   (build machine, scripts/build-gpu-bundle.sh --fuzz) records what
      tilec made of each drawn case (its manifest's config, or the refusal), settles the odd
      check shape's N where the kernel stores through TMA (16-byte rows), picks the sanitizer
      sample, and writes BUNDLE/cases.json, BUNDLE/fuzz-cases.tsv and
      BUNDLE/sanitize-cases.tsv (`NAME<TAB>FLAG<TAB>VALUE`, tilec-gpu-test's check flag).
  report BUNDLE LOGS OUT     (GPU machine, run-fuzz.sh) reads each case's tilec-gpu-test log
      and `rc limit seconds` line and writes OUT/fuzz-report.json (schema tilec-fuzz/1) and
      OUT/fuzz-summary.txt, which it prints.
  sanitize BUNDLE LOGS OUT   (GPU machine, run-fuzz-sanitize.sh) likewise for the
      compute-sanitizer runs: OUT/fuzz-sanitize.json (tilec-fuzz-sanitize/1), and the summary.
  merge OUT REPORT...        joins the reports of a run split over calls (FUZZ_SHARD).

Results of a case: PASS; FAIL (a wrong result, or the kernel or a check failed); HANG (no exit
within the case timeout); REFUSED (tilec refused to compile it, or the runtime refused the
shape: the error says which); CUT (stopped at the run's deadline, not judged); NOT_RUN (the
deadline came first); SKIPPED (no GPU); ENV (the GPU machine lacks something: cuBLAS, the GPU
the kernels were compiled for).
"""
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

SCHEMA = "tilec-fuzz/1"
SANITIZE_SCHEMA = "tilec-fuzz-sanitize/1"
SANITIZE_COUNT = 50
DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f8e4m3": 1, "i32": 4}
RUNTIME_REFUSAL = re.compile(r"TMA needs a multiple of 16|over the TMA limit|over the 2\^31 - 1|exceeds the device limits|do not interleave|has a zero dimension")
ENV_ERROR = re.compile(r"could not load |artifact compiled for|but the device is sm_|no CUDA-capable device|CUDA_ERROR_NO_DEVICE")
SHAPE_LINE = re.compile(r"^\s*(\d+x\d+x\d+|\d+x\d+|(?:contiguous|masked)\S*)\s.*?\b(PASS|FAIL)\b")
# compute-sanitizer names the vendor's reference kernels so: cuBLAS's and cuBLASLt's.
VENDOR_KERNEL = re.compile(r"nvjet|cublas|cutlass|xmma|gemmk|gemv|splitKreduce|sm90_xmma|Kernel2")



def report_header(schema, doc, out):
    """The fields every report of a fuzz run starts with: its schema, the draw's seed and
    commit (cases.json), the GPU as $OUT/gpu.txt names it, and the time it was written."""
    gpu = (out / "gpu.txt").read_text().strip() if (out / "gpu.txt").exists() else ""
    return {
        "schema": schema,
        "seed": doc["seed"],
        "gpu": gpu,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": doc.get("commit", ""),
    }

def features(config):
    """The schedule features of a config string (the manifest's or --explain's)."""
    words = config.split()
    feats = [next((w for w in words if w in ("pipeline", "ws1", "ws2", "pingpong")), "?")]
    feats.append("tma-store" if "epilogue=tma" in words else "direct-store")
    if any(w.startswith("splits=") for w in words):
        reduce = next((w.split("=", 1)[1] for w in words if w.startswith("split_reduce=")), "cluster")
        feats.append(f"split-k/{reduce}")
    for word, feat in (("stream_k=", "stream-k"), ("cluster=m", "cluster-m"), ("cluster=n", "cluster-n"), ("grouped=", "raster"), ("epilogue_cols=", "epilogue-chunked")):
        if any(w.startswith(word) for w in words):
            feats.append(feat)
    if "epilogue_deferred" in words:
        feats.append("epilogue-deferred")
    if "stages=1" in words:
        feats.append("one-stage")
    if "scales=prefetched" in words:
        feats.append("scales-prefetched")
    return feats


def schedule_class(config):
    """One label a config: its schedule and the features that change the kernel's structure."""
    f = features(config)
    return "+".join([f[0]] + [x for x in f[2:] if x != "one-stage"] + [f[1]])


def round_up(x, step):
    return max(step, -(-x // step) * step)


# ---- finish (build machine) ----


def n_step(manifest):
    """N's step for the kernel's TMA tensors whose rows run along N (C, Q, a K x N B)."""
    tensors = {t["name"]: t for t in manifest["tensors"]}
    step = 1
    for p in manifest.get("params", []):
        t = tensors.get(p.get("tensor")) if p.get("kind") == "tma" else None
        if t and t["shape"] and t["shape"][-1] == "N":
            step = max(step, 16 // DTYPE_BYTES.get(t["dtype"], 1))
    return step


def aligned_check(check, step):
    """The case's check flag and value, the odd shape's N rounded up to `step`."""
    if "grouped" in check:
        problems = []
        for p in check["grouped"]:
            form, nk, rows = p.split(":")
            n, k = map(int, nk.split("x"))
            problems.append(f"{form}:{round_up(n, step)}x{k}:{rows}")
        return "--grouped-problems", ";".join(problems)
    shapes = []
    for s in check["shapes"]:
        m, n, k = map(int, s.split("x"))
        shapes.append(f"{m}x{round_up(n, step) if step > 1 else n}x{k}")
    return "--shapes", ",".join(shapes)


def sanitize_check(case, config):
    """A small check for compute-sanitizer: three tiles (the last partial) each way, K of 2048
    (more K blocks than any kernel's stages, so every stage is reused); grouped kernels an
    empty, a one-row and an off-tile expert."""
    bm, bn, _ = (int(x) for x in config.split()[0].split("x"))
    step = case["n_step"]
    gated = case.get("kind") in ("gated", "grouped_gated")
    n = 768 if gated else round_up(2 * bn + 3, step)
    if "grouped" in case["check"]:
        form = case["check"]["grouped"][0].split(":")[0]
        if form.startswith("masked"):
            m_max = round_up(bm + 9, 8)
            return "--grouped-problems", f"masked/{m_max}:{n}x1024:0,1,{m_max},{bm - 7}"
        return "--grouped-problems", f"contiguous:{n}x1024:0,1,{bm + 3},77"
    return "--shapes", f"{2 * bm + 1}x{n}x2048"


def sample_for_sanitizer(cases, count):
    """`count` compiled cases covering the most programs, schedule classes and features:
    greedily the case adding the most not yet covered, covering again once all are."""
    pool = [c for c in cases if c.get("config") and not c.get("regression")]
    keys = lambda c: {"program:" + c["program"], "class:" + c["class"]} | {f"{c['dtype']}:{f}" for f in c["features"]}
    chosen, covered = [], set()
    while pool and len(chosen) < count:
        gain = [len(keys(c) - covered) for c in pool]
        if max(gain) == 0:
            covered = set()
            continue
        best = gain.index(max(gain))
        c = pool.pop(best)
        covered |= keys(c)
        chosen.append(c)
    return chosen


def finish(bundle, cases_json):
    bundle = Path(bundle)
    doc = json.loads(Path(cases_json).read_text())
    refused = {}
    refused_file = bundle / "refused.tsv"
    if refused_file.exists():
        for line in refused_file.read_text().splitlines():
            name, _, why = line.partition("\t")
            refused[name] = why
    rows = []
    for case in doc["cases"]:
        art = bundle / "artifacts" / case["name"]
        if (art / "manifest.json").exists():
            manifest = json.loads((art / "manifest.json").read_text())
            case["config"] = manifest.get("config", "")
            case["entry"] = manifest["entry"]
            case["class"] = schedule_class(case["config"])
            case["features"] = features(case["config"])
            case["n_step"] = n_step(manifest)
            flag, value = aligned_check(case["check"], case["n_step"])
            case["check_flag"], case["check_value"] = flag, value
            rows.append((case["name"], flag, value))
        else:
            case["result"] = "REFUSED"
            case["error"] = "tilec compile: " + refused.get(case["name"], "no artifact")
    sample = sample_for_sanitizer(doc["cases"], SANITIZE_COUNT)
    for c in sample:
        c["sanitize"] = list(sanitize_check(c, c["config"]))
    doc["schema"] = "tilec-fuzz-bundle/1"
    doc["built"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (bundle / "cases.json").write_text(json.dumps(doc, indent=1) + "\n")
    (bundle / "fuzz-cases.tsv").write_text("".join(f"{n}\t{f}\t{v}\n" for n, f, v in rows))
    (bundle / "sanitize-cases.tsv").write_text("".join(f"{c['name']}\t{c['sanitize'][0]}\t{c['sanitize'][1]}\n" for c in sample))
    compiled = [c for c in doc["cases"] if c.get("config")]
    print(f"fuzz bundle: {len(doc['cases'])} cases (seed {doc['seed']}), {len(compiled)} compiled, {len(doc['cases']) - len(compiled)} refused; {len(sample)} in the sanitizer sample")
    print(mix(compiled))
    print("sanitizer sample: " + ", ".join(sorted(Counter(c["class"] for c in sample))))


def mix(cases):
    """The case mix: compiled kernels per program and per schedule class."""
    lines = ["per program:"]
    for p, n in Counter(c["program"] for c in cases).most_common():
        lines.append(f"  {n:5} {p}")
    lines.append("per schedule (class):")
    for p, n in Counter(c["class"] for c in cases).most_common():
        lines.append(f"  {n:5} {p}")
    lines.append("per feature (BF16 / FP8 kernels):")
    per = Counter((c["dtype"], f) for c in cases for f in c["features"])
    for f in sorted({f for _, f in per}, key=lambda f: -(per[("bf16", f)] + per[("fp8", f)])):
        lines.append(f"  {per[('bf16', f)]:5} {per[('fp8', f)]:5} {f}")
    return "\n".join(lines)


# ---- report (GPU machine) ----


def read_rc(path):
    """`rc limit seconds` as run-fuzz.sh writes it, or NOT_RUN."""
    try:
        words = path.read_text().split()
    except OSError:
        return None
    if not words or words[0] == "NOT_RUN":
        return "NOT_RUN", 0, 0.0
    return int(words[0]), int(words[1]), float(words[2])


def judge(log, rc, limit, timeout):
    """(result, error) of a tilec-gpu-test run."""
    if rc in (124, 137):
        if limit < timeout:
            return "CUT", f"stopped at the run's deadline after {limit} s"
        return "HANG", f"no exit within {limit} s (timeout)"
    if "SKIPPED" in log and rc == 0:
        return "SKIPPED", "no libcuda"
    # Exit 0 is tilec-gpu-test's word that every shape passed (a line may still say why
    # cuBLASLt's second opinion was not run).
    if rc == 0 and re.search(r"tilec-gpu-test: all \d+ shapes PASS", log):
        return "PASS", ""
    failing = [line.strip() for line in log.splitlines() if re.search(r"\bFAIL\b|error:|panicked", line)]
    text = "\n".join(failing) or log.strip()[-400:] or f"exit {rc}"
    if ENV_ERROR.search(log):
        return "ENV", text[:600]
    # A shape line `MxNxK ... FAIL` is a wrong result; `MxNxK FAIL: why` an error.
    wrong = [line for line in failing if SHAPE_LINE.match(line) and "FAIL:" not in line]
    if failing and not wrong and all(RUNTIME_REFUSAL.search(line) for line in failing):
        passed = any(SHAPE_LINE.match(line) and "PASS" in line for line in log.splitlines())
        return ("PASS" if passed else "REFUSED"), "runtime: " + text[:600]
    if rc == 0:
        return "FAIL", "exit 0 but: " + text[:600]
    return "FAIL", text[:600]


def report(bundle, logs, out):
    bundle, logs, out = Path(bundle), Path(logs), Path(out)
    doc = json.loads((bundle / "cases.json").read_text())
    timeout = int(os.environ.get("FUZZ_CASE_TIMEOUT", "150"))
    shard = os.environ.get("FUZZ_SHARD", "")
    cases = []
    for c in doc["cases"]:
        entry = {k: c.get(k) for k in ("name", "program", "dtype", "shape", "flags", "rank", "config", "class", "features", "target")}
        entry["regression"] = bool(c.get("regression"))
        if c.get("result") == "REFUSED":
            entry.update(result="REFUSED", error=c["error"], checks=[])
            cases.append(entry)
            continue
        entry["check"] = [c["check_flag"], c["check_value"]]
        got = read_rc(logs / f"{c['name']}.rc")
        if got is None:
            continue  # another shard's case, or FUZZ_ONLY left it out
        rc, limit, secs = got
        if rc == "NOT_RUN":
            entry.update(result="NOT_RUN", error="the run's deadline came first", checks=[])
        else:
            log = (logs / f"{c['name']}.log").read_text(errors="replace") if (logs / f"{c['name']}.log").exists() else ""
            result, error = judge(log, rc, limit, timeout)
            entry.update(result=result, error=error, rc=rc, seconds=round(secs, 2))
            entry["checks"] = [" ".join(line.split()) for line in log.splitlines() if SHAPE_LINE.match(line)]
        cases.append(entry)
    rep = {
        **report_header(SCHEMA, doc, out),
        "tilec": doc.get("tilec", ""),
        "draw": doc.get("command", ""),
        "shard": shard,
        "jobs": int(os.environ.get("FUZZ_JOBS", "8")),
        "case_timeout_s": timeout,
        "wall_s": int(os.environ.get("FUZZ_WALL_S", "0")),
        "what": "each kernel checked by tilec-gpu-test --no-timing at its case shape and one odd shape, fresh random inputs, poisoned outputs: "
        "BF16 against cuBLAS and cuBLASLt (and the FP64 product up to 2^27 MACs), block-scaled FP8 against the FP64 product or cuBLAS on the dequantised inputs "
        "(cuBLASLt block-scaled beside it), fused epilogues and grouped GEMMs against the FP64 product through the epilogue on sampled rows",
        "cases": cases,
    }
    rep["summary"] = summarize(cases)
    order = [line.split("\t")[0] for line in (bundle / "fuzz-cases.tsv").read_text().splitlines()]
    undone = {c["name"] for c in cases if c["result"] in ("NOT_RUN", "CUT")}
    rep["summary"]["rerun_from"] = next((i + 1 for i, n in enumerate(order) if n in undone), None)
    (out / "fuzz-report.json").write_text(json.dumps(rep, indent=1) + "\n")
    text = summary_text(rep)
    (out / "fuzz-summary.txt").write_text(text + "\n")
    print(text)


def summarize(cases):
    results = Counter(c["result"] for c in cases)
    refused = Counter(("runtime" if c["error"].startswith("runtime") else "compile") for c in cases if c["result"] == "REFUSED")
    checked = [c for c in cases if c["result"] in ("PASS", "FAIL", "HANG")]
    per_class = defaultdict(Counter)
    for c in checked:
        per_class[c["class"]][c["result"]] += 1
    per_program = defaultdict(Counter)
    for c in checked:
        per_program[c["program"]][c["result"]] += 1
    return {
        "results": dict(results),
        "kernels_checked": len(checked),
        "wrong_or_failed": results["FAIL"],
        "hangs": results["HANG"],
        "refused": dict(refused),
        "per_program": {p: dict(v) for p, v in sorted(per_program.items())},
        "per_class": {p: dict(v) for p, v in sorted(per_class.items())},
        "slowest_s": max((c.get("seconds", 0) for c in checked if c["result"] != "HANG"), default=0),
    }


def summary_text(rep):
    s = rep["summary"]
    r = s["results"]
    lines = [f"tilec fuzz, seed {rep['seed']}, {rep['commit'][:12]}, {rep['date']}{', shard ' + rep['shard'] if rep['shard'] else ''}: {rep['gpu'].splitlines()[-1] if rep['gpu'] else 'no GPU named'}"]
    lines.append("results: " + ", ".join(f"{k} {v}" for k, v in sorted(r.items())))
    lines.append(f"refused: compile {s['refused'].get('compile', 0)}, runtime {s['refused'].get('runtime', 0)}")
    lines.append("per program (PASS/FAIL/HANG): " + "; ".join(f"{p} {v.get('PASS', 0)}/{v.get('FAIL', 0)}/{v.get('HANG', 0)}" for p, v in s["per_program"].items()))
    lines.append(f"schedule classes checked: {len(s['per_class'])}; slowest case {s['slowest_s']} s")
    for c in rep["cases"]:
        if c["result"] in ("FAIL", "HANG", "ENV") or c.get("error", "").startswith("runtime"):
            lines.append(f"  {c['result']} {c['name']} {' '.join(c['flags'] or [])} [{c.get('config')}] {' '.join(c.get('check') or [])}: {c['error'].splitlines()[0][:300] if c['error'] else ''}")
    if s.get("rerun_from"):
        lines.append(f"not run or cut at the deadline: {r.get('NOT_RUN', 0) + r.get('CUT', 0)} cases; run them in another call with FUZZ_FROM={s['rerun_from']} (then fuzz-report.py merge)")
    ok = s["kernels_checked"] >= 1000 and s["wrong_or_failed"] == 0 and s["hangs"] == 0
    lines.append(f"VERDICT: {s['kernels_checked']} kernels checked, {s['wrong_or_failed']} wrong or failed, {s['hangs']} hangs" + (" -- criterion met (>= 1000, 0, 0)" if ok else " -- criterion NOT met"))
    return "\n".join(lines)


def merge(out, reports):
    """One report of several calls' (FUZZ_SHARD, FUZZ_FROM; SAN_FROM): a run's result wins over
    NOT_RUN and CUT."""
    reps = [json.loads(Path(p).read_text()) for p in reports]
    sanitize = reps[0]["schema"] == SANITIZE_SCHEMA
    items, key = ("runs", lambda r: (r["artifact"], r["tool"])) if sanitize else ("cases", lambda c: c["name"])
    merged = {}
    for rep in reps:
        for x in rep[items]:
            if key(x) not in merged or merged[key(x)]["result"] in ("NOT_RUN", "CUT"):
                merged[key(x)] = x
    rep = dict(reps[0], merged_from=[f"{r['date']} {r.get('shard', '')}".strip() for r in reps])
    rep[items] = sorted(merged.values(), key=key)
    if sanitize:
        runs = rep["runs"]
        kernels = {r["artifact"] for r in runs}
        clean = {k for k in kernels if all(r["result"] == "CLEAN" for r in runs if r["artifact"] == k)}
        rep["summary"] = {"runs": dict(Counter(r["result"] for r in runs)), "kernels": len(kernels), "kernels_clean_under_all_tools": len(clean), "classes": sorted({r["class"] for r in runs})}
        Path(out).write_text(json.dumps(rep, indent=1) + "\n")
        print(f"{len(clean)} of {len(kernels)} kernels clean under {', '.join(rep['tools'])}: {rep['summary']['runs']}")
        return
    rep["summary"] = summarize(rep["cases"])
    Path(out).write_text(json.dumps(rep, indent=1) + "\n")
    print(summary_text(rep))


# ---- sanitize (GPU machine) ----


def sanitizer_blocks(text):
    """compute-sanitizer's reports (each a first line and its indented lines) and summary lines."""
    blocks, summaries, cur = [], [], None
    for line in text.splitlines():
        if not line.startswith("========="):
            continue
        body = line[9:]
        if not body.strip():
            cur = None
            continue
        if body.startswith("  ") and cur is not None:
            cur.append(body.strip())
            continue
        body = body.strip()
        cur = None
        if re.match(r"(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application returned|This tool|Note:)", body):
            if "SUMMARY" in body:
                summaries.append(body)
            continue
        cur = [body]
        blocks.append(cur)
    return blocks, summaries


def sanitize(bundle, logs, out):
    bundle, logs, out = Path(bundle), Path(logs), Path(out)
    doc = json.loads((bundle / "cases.json").read_text())
    tools = os.environ.get("SAN_TOOLS", "racecheck synccheck memcheck").split()
    timeout = int(os.environ.get("SAN_TIMEOUT", "240"))
    runs = []
    for c in (c for c in doc["cases"] if c.get("sanitize")):
        if not any((logs / f"{c['name']}.{tool}.rc").exists() for tool in tools):
            continue  # not in this call (SAN_FROM, SAN_ONLY)
        for tool in tools:
            got = read_rc(logs / f"{c['name']}.{tool}.rc")
            entry = {"artifact": c["name"], "program": c["program"], "tool": tool, "config": c["config"], "class": c["class"], "check": c["sanitize"]}
            if got is None or got[0] == "NOT_RUN":
                entry.update(result="NOT_RUN")
                runs.append(entry)
                continue
            rc, limit, secs = got
            log = (logs / f"{c['name']}.{tool}.log").read_text(errors="replace")
            blocks, summaries = sanitizer_blocks(log)
            ours = [b for b in blocks if c["entry"] in " ".join(b)]
            vendor = [b for b in blocks if b not in ours and VENDOR_KERNEL.search(" ".join(b))]
            other = [b for b in blocks if b not in ours and b not in vendor]
            passed = re.search(r"tilec-gpu-test: all \d+ shapes PASS", log) is not None
            if rc in (124, 137):
                result = "HANG" if limit >= timeout else "CUT"
            elif not summaries:
                result = "INCOMPLETE"
            elif ours or other:
                result = "ERRORS"
            elif not passed:
                result = "CHECK_FAILED"
            else:
                result = "CLEAN"
            entry.update(
                result=result,
                rc=rc,
                seconds=round(secs, 1),
                kernel_check="PASS" if passed else "FAIL",
                summary=summaries[-1] if summaries else "",
                errors_in_tilec_kernel=len(ours),
                errors_elsewhere=len(other),
                reports_in_vendor_kernels=len(vendor),
                first_error=" | ".join((ours or other or [[]])[0])[:600],
            )
            if result in ("INCOMPLETE", "HANG", "CUT"):
                # Why the tool did not finish (compute-sanitizer refuses some machines' GPUs: "Device not supported").
                said = [line.strip() for line in log.splitlines() if re.search(r"error|not supported|refused", line, re.I)]
                entry["first_error"] = (said[0] if said else log.strip()[-300:])[:600]
            runs.append(entry)
    per = Counter(r["result"] for r in runs)
    kernels = {r["artifact"] for r in runs}
    clean_kernels = {k for k in kernels if all(r["result"] == "CLEAN" for r in runs if r["artifact"] == k)}
    rep = {
        **report_header(SANITIZE_SCHEMA, doc, out),
        "what": "compute-sanitizer on a sample of the fuzz run's kernels of different schedules, tilec-gpu-test --no-timing at a small shape (three tiles each way, "
        "the last partial, K 2048): an error counts where a report names the tilec kernel or no vendor kernel; reports in cuBLAS's and cuBLASLt's reference kernels are counted apart",
        "tools": tools,
        "summary": {"runs": dict(per), "kernels": len(kernels), "kernels_clean_under_all_tools": len(clean_kernels), "classes": sorted({r["class"] for r in runs})},
        "runs": runs,
    }
    (out / "fuzz-sanitize.json").write_text(json.dumps(rep, indent=1) + "\n")
    lines = [f"tilec fuzz sanitizers, seed {rep['seed']}, {rep['commit'][:12]}: " + ", ".join(f"{k} {v}" for k, v in sorted(per.items()))]
    for r in runs:
        if r["result"] != "CLEAN":
            lines.append(f"  {r['result']} {r['tool']} {r['artifact']} [{r['config']}] {' '.join(r['check'])}: {r.get('summary', '')} {r.get('first_error', '')[:300]}")
    rest = [i + 1 for i, c in enumerate(c for c in doc["cases"] if c.get("sanitize")) if any(r["artifact"] == c["name"] and r["result"] == "NOT_RUN" for r in runs)]
    if rest:
        lines.append(f"not run (the budget ran out): {len(rest)} kernels; run them in another call with SAN_FROM={rest[0]}")
    ok = len(clean_kernels) >= 50 and len(clean_kernels) == len(kernels)
    lines.append(f"VERDICT: {len(clean_kernels)} of {len(kernels)} kernels clean under {', '.join(tools)} ({len(rep['summary']['classes'])} schedule classes)" + (" -- criterion met" if ok else " -- criterion NOT met"))
    text = "\n".join(lines)
    (out / "fuzz-sanitize-summary.txt").write_text(text + "\n")
    print(text)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("finish", "report", "sanitize", "merge"):
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "merge":
        merge(args[0], args[1:])
    else:
        {"finish": finish, "report": report, "sanitize": sanitize}[cmd](*args)


if __name__ == "__main__":
    main()
