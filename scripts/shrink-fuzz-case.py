#!/usr/bin/env python3
"""Shrinks a failing case of a fuzz run (scripts/run-fuzz.sh) to a minimal reproducer.

A kernel serves every shape at run time, so shrinking needs no recompile: on the GPU, the
failing kernel is checked at ever smaller shapes, each of M, N and K halved in turn (down to
one row, N's and K's steps: 16-byte TMA rows, whole gate and up runs) while the check still
fails (FAIL or HANG, twice tried: one failure is enough); a grouped kernel's problem likewise
loses experts and halves N, K and each expert's rows. Three steps:

  1. bundle CASES_OR_REPORT NAME... [--out DIR]   (build machine) compiles each named case
     again with its flags (scripts/build-gpu-bundle.sh), checks that it is the kernel the report
     names (its config), and adds this script, fuzz-report.py and run-shrink.sh. CASES_OR_REPORT
     is the fuzz bundle's cases.json or a fuzz-report.json. Default DIR .device/fuzz-shrink.
  2. gpu DIR    (GPU machine, `OUT=/tmp/out bash DIR/run-shrink.sh`) shrinks each case within
     SHRINK_BUDGET_S (480) seconds, writes $OUT/shrink.json and prints the minimal shapes.
  3. write-test SHRINK_JSON   (build machine) writes for each reproduced case a lit test,
     tests/lit/fuzz/NAME.tile, that pins the compile (the flags still give that config), and
     appends the GPU check at the minimal shape to scripts/gpu-fuzz-regressions.txt, which
     every later fuzz bundle checks first (draw-fuzz-cases.py).

A failure fixed before it could be shrunk (no GPU time left) is kept as it failed:
  unshrunk REPORT NAME...   (build machine) does what write-test does with the failing check of
     the run's report (the check shape that failed, or the grouped problem being checked) in
     place of a minimal one.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def load_report_module(where):
    spec = importlib.util.spec_from_file_location("fuzz_report", where / "fuzz-report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- 1. bundle (build machine) ----


def bundle(source, names, out):
    doc = json.loads(Path(source).read_text())
    cases = {c["name"]: c for c in doc["cases"]}
    missing = [n for n in names if n not in cases]
    if missing:
        sys.exit(f"shrink-fuzz-case: no case {', '.join(missing)} in {source}")
    out = Path(out)
    variants = out.with_name(out.name + "-variants.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    variants.write_text("".join(f"{n} examples/{cases[n]['program']}.tile - {' '.join(cases[n]['flags'])}\n" for n in names))
    env = dict(os.environ, TILEC_BUNDLE_DIR=str(out))
    subprocess.run([str(ROOT / "scripts/build-gpu-bundle.sh"), str(variants)], cwd=ROOT, env=env, check=True)
    fr = load_report_module(HERE)
    chosen = []
    for n in names:
        c = dict(cases[n])
        manifest = json.loads((out / "artifacts" / n / "manifest.json").read_text())
        if c.get("config") and manifest.get("config") != c["config"]:
            sys.exit(f"shrink-fuzz-case: {n}: the flags now give [{manifest.get('config')}], the run checked [{c['config']}]: tilec changed since; shrink with that tilec")
        c["config"], c["entry"], c["n_step"] = manifest.get("config"), manifest["entry"], fr.n_step(manifest)
        gated = any(v.get("op") == "acc_part" for v in manifest.get("epilogue", {}).get("values", []))
        c["n_step"] = 256 if gated else c["n_step"]
        c["k_step"] = 16 if c["dtype"] == "fp8" else 8
        if "check" in c and isinstance(c["check"], list):  # a report's case: [flag, value]
            c["check_flag"], c["check_value"] = c["check"]
        chosen.append(c)
    (out / "shrink-cases.json").write_text(json.dumps({"seed": doc.get("seed"), "commit": doc.get("commit"), "cases": chosen}, indent=1) + "\n")
    shutil.copy(HERE / "shrink-fuzz-case.py", out)
    shutil.copy(HERE / "fuzz-report.py", out)
    (out / "run-shrink.sh").write_text(
        "#!/usr/bin/env bash\n# On the GPU machine: shrinks the failing fuzz cases of shrink-cases.json (scripts/shrink-fuzz-case.py).\n"
        "# usage: OUT=/tmp/out bash run-shrink.sh\nset -uo pipefail\ncd \"$(dirname \"$0\")\"\n. ./gpu-env.sh\nOUT=$out python3 shrink-fuzz-case.py gpu .\n"
    )
    variants.unlink()
    print(f"shrink bundle for {', '.join(names)} in {out}: run `OUT=/tmp/out bash {out}/run-shrink.sh` on the GPU machine")


# ---- 2. gpu (GPU machine) ----


class Checker:
    def __init__(self, where, fr, case, deadline):
        self.where, self.fr, self.case, self.deadline = where, fr, case, deadline
        self.tries = []
        self.timeout = int(os.environ.get("SHRINK_CASE_TIMEOUT", "120"))

    def fails(self, value, repeats=2):
        """Whether the kernel fails (FAIL or HANG) at `value` (one shape or grouped problem)."""
        for _ in range(repeats):
            left = int(self.deadline - time.time())
            if left < 15:
                raise TimeoutError
            limit = min(self.timeout, left)
            cmd = [str(self.where / "bin/tilec-gpu-test"), str(self.where / "artifacts" / self.case["name"]), "--no-timing", self.case["check_flag"], value]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
                log, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                log, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), 124
            result, error = self.fr.judge(log, rc, limit, self.timeout)
            self.tries.append({"check": value, "result": result, "error": error[:300]})
            if result in ("FAIL", "HANG"):
                self.last_failure = {"check": value, "result": result, "log": log[-3000:]}
                return True
        return False


def smaller_shapes(shape, case):
    """Each of M, N and K halved (rounded up to its step), the ones that change."""
    m, n, k = shape
    ns, ks = case["n_step"], case["k_step"]
    out = []
    for cand in ((max(1, m // 2), n, k), (m, max(ns, (n // 2 + ns - 1) // ns * ns), k), (m, n, max(ks, (k // 2 + ks - 1) // ks * ks))):
        if cand != shape:
            out.append(cand)
    return out


def smaller_problems(problem, case):
    """A grouped problem with an expert dropped, or N, K or every expert's rows halved."""
    form, nk, rows = problem.split(":")
    n, k = map(int, nk.split("x"))
    rows = [int(r) for r in rows.split(",")]
    ns, ks = case["n_step"], case["k_step"]
    text = lambda f, n, k, r: f"{f}:{n}x{k}:" + ",".join(map(str, r))
    out = [text(form, n, k, rows[:i] + rows[i + 1 :]) for i in range(len(rows)) if len(rows) > 1]
    out.append(text(form, max(ns, (n // 2 + ns - 1) // ns * ns), k, rows))
    out.append(text(form, n, max(ks, (k // 2 + ks - 1) // ks * ks), rows))
    out.append(text(form, n, k, [r // 2 if r > 1 else r for r in rows]))
    return [p for p in out if p != problem]


def shrink_case(where, fr, case, deadline):
    check = Checker(where, fr, case, deadline)
    grouped = case["check_flag"] == "--grouped-problems"
    values = case["check_value"].split(";" if grouped else ",")
    result = {"name": case["name"], "program": case["program"], "flags": case["flags"], "config": case["config"], "check_flag": case["check_flag"], "original": values}
    try:
        start = next((v for v in values if check.fails(v)), None)
        if start is None:
            result.update(reproduced=False, tries=check.tries)
            return result
        current = start if grouped else tuple(map(int, start.split("x")))
        progress = True
        while progress:
            progress = False
            for cand in smaller_problems(current, case) if grouped else smaller_shapes(current, case):
                value = cand if grouped else "x".join(map(str, cand))
                if check.fails(value):
                    current, progress = cand, True
                    break
        complete = True
    except TimeoutError:
        complete = False
    minimal = current if grouped else "x".join(map(str, current))
    result.update(reproduced=True, complete=complete, minimal=minimal, failure=check.last_failure, tries=check.tries)
    return result


def gpu(where):
    where = Path(where)
    fr = load_report_module(where)
    doc = json.loads((where / "shrink-cases.json").read_text())
    deadline = time.time() + int(os.environ.get("SHRINK_BUDGET_S", "480"))
    results = []
    for case in doc["cases"]:
        r = shrink_case(where, fr, case, deadline)
        results.append(r)
        if r["reproduced"]:
            print(f"{r['name']}: fails at {r['minimal']} ({r['failure']['result']}{'' if r['complete'] else ', budget ran out before the shape stopped shrinking'}) after {len(r['tries'])} checks")
        else:
            print(f"{r['name']}: NOT reproduced at {', '.join(r['original'])} ({len(r['tries'])} checks)")
    gpu_name = (Path(os.environ.get("OUT", "/tmp/out")) / "gpu.txt")
    out = Path(os.environ.get("OUT", "/tmp/out"))
    out.mkdir(parents=True, exist_ok=True)
    rep = {"schema": "tilec-fuzz-shrink/1", "seed": doc.get("seed"), "commit": doc.get("commit"), "gpu": gpu_name.read_text().strip() if gpu_name.exists() else "", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cases": results}
    (out / "shrink.json").write_text(json.dumps(rep, indent=1) + "\n")


# ---- 3. write-test (build machine) ----


def unshrunk(report, names):
    """A shrink report whose `minimal` is the failing check of each named case of a fuzz report."""
    doc = json.loads(Path(report).read_text())
    cases = {c["name"]: c for c in doc["cases"]}
    missing = [n for n in names if n not in cases]
    if missing:
        sys.exit(f"shrink-fuzz-case: no case {', '.join(missing)} in {report}")
    results = []
    for n in names:
        c = cases[n]
        if c["result"] not in ("FAIL", "HANG"):
            sys.exit(f"shrink-fuzz-case: {n} did not fail in {report} ({c['result']})")
        flag, value = c["check"]
        values = value.split(";" if flag == "--grouped-problems" else ",")
        checked = [line.split()[0] for line in c.get("checks", [])]
        failed = [line.split()[0] for line in c.get("checks", []) if " FAIL" in line]
        # The check that failed; where the run stopped before printing it, the first one not passed.
        minimal = failed[0] if failed else next((v for v in values if v not in checked), values[-1])
        failure = {"check": minimal, "result": c["result"], "log": c.get("error", "")}
        results.append({"name": n, "program": c["program"], "flags": c["flags"], "config": c["config"], "check_flag": flag, "original": values, "reproduced": True, "shrunk": False, "minimal": minimal, "failure": failure})
    write_test_of({"seed": doc.get("seed"), "commit": doc.get("commit"), "gpu": doc.get("gpu", ""), "date": doc.get("date", ""), "cases": results})


def write_test(shrink_json):
    write_test_of(json.loads(Path(shrink_json).read_text()))


def write_test_of(rep):
    regressions = ROOT / "scripts/gpu-fuzz-regressions.txt"
    lines = regressions.read_text().splitlines() if regressions.exists() else []
    for r in (r for r in rep["cases"] if r.get("reproduced")):
        name = f"s{rep.get('seed')}-{r['name']}"
        first = next((line for line in r["failure"]["log"].splitlines() if "FAIL" in line or "error" in line), r["failure"]["result"])
        check = ("grouped=" if r["check_flag"] == "--grouped-problems" else "shapes=") + r["minimal"]
        flags = " ".join(r["flags"])
        test = ROOT / "tests/lit/fuzz" / f"{name}.tile"
        test.parent.mkdir(parents=True, exist_ok=True)
        found = "the smallest\n// check shrink-fuzz-case.py found that still fails" if r.get("shrunk", True) else "the run's\n// failing check (fixed before it could be shrunk)"
        test.write_text(
            f"// Fuzz reproducer: seed {rep.get('seed')}, case {r['name']} ({rep['date']}, {rep['gpu'].splitlines()[-1] if rep['gpu'] else 'GPU'}).\n"
            f"// `tilec compile examples/{r['program']}.tile {flags}` gives the kernel\n// [{r['config']}], which {r['failure']['result']}ed on the GPU at {r['minimal']}, {found}:\n//   {' '.join(first.split())[:300]}\n"
            f"// Every fuzz bundle checks it there first (scripts/gpu-fuzz-regressions.txt, `{name}`):\n"
            f"//   tilec-gpu-test ARTIFACT --no-timing {r['check_flag']} '{r['minimal']}'\n"
            "// This test pins that the flags still give that kernel: where config selection changes,\n"
            "// find flags that do (`tilec compile --explain`) and change both.\n"
            f"// RUN: %tilec compile %S/../../../examples/{r['program']}.tile {flags} -o %t && %FileCheck %s < %t/manifest.json\n"
            f'// CHECK: "config": "{r["config"]}"\n'
        )
        line = f"{name} examples/{r['program']}.tile {check} {flags}"
        lines = [x for x in lines if not x.startswith(name + " ")] + [line]
        print(f"wrote {test.relative_to(ROOT)} and the GPU check `{line}`")
    regressions.write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle", help="build a shrink bundle for failing cases")
    b.add_argument("source", help="the fuzz bundle's cases.json or a fuzz-report.json")
    b.add_argument("names", nargs="+")
    b.add_argument("--out", default=".device/fuzz-shrink")
    g = sub.add_parser("gpu", help="shrink on the GPU machine")
    g.add_argument("dir")
    w = sub.add_parser("write-test", help="write the reproducers of shrink.json")
    w.add_argument("shrink_json")
    u = sub.add_parser("unshrunk", help="write reproducers of a fuzz report's failing cases at their failing check")
    u.add_argument("report")
    u.add_argument("names", nargs="+")
    args = parser.parse_args()
    if args.cmd == "bundle":
        bundle(args.source, args.names, args.out)
    elif args.cmd == "gpu":
        gpu(args.dir)
    elif args.cmd == "unshrunk":
        unshrunk(args.report, args.names)
    else:
        write_test(args.shrink_json)


if __name__ == "__main__":
    main()
