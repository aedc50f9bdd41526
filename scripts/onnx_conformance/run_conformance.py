#!/usr/bin/python3
"""Compiles and runs materialized ONNX node test cases with Osprey.

For every case of the selected families in MANIFEST (see materialize.py):
  kind "run":         osprey-compile --target=host, then osprey-run on the
                      device against the reference outputs; pass or fail.
  kind "unsupported": element types Osprey does not compile; osprey-compile
                      must reject the model with an error (exit code 1, no
                      crash) and write no module.
  kind "reject":      invalid models (e.g. out-of-range constant indices);
                      osprey-compile must reject them the same way, with an
                      error naming the node.
  kind "skip":        not a tensor-only single-op model; counted only.
A failing case fails the run unless it matches an entry of the expected-failure
list; a listed case that passes also fails the run. A per-operator summary
table is printed at the end.
"""

import argparse
import fnmatch
import json
import os
import subprocess
import sys


def load_expected_failures(path):
    entries = []
    with open(path) as f:
        for line in f:
            text = line.split("#", 1)
            pattern = text[0].strip()
            if not pattern:
                continue
            reason = text[1].strip() if len(text) > 1 else ""
            entries.append((pattern, reason))
    return entries


def expected_reason(name, entries):
    for pattern, reason in entries:
        if fnmatch.fnmatchcase(name, pattern):
            return reason or "(no reason)"
    return None


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def run_case(args, case):
    case_dir = os.path.join(args.cases, case["name"])
    module = os.path.join(args.work, case["name"] + ".osp")
    if os.path.exists(module):
        os.remove(module)
    compile_cmd = [args.compile, os.path.join(case_dir, "model.onnx"),
                   "--target=host", "-o", module]
    try:
        proc = subprocess.run(compile_cmd, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return False, "osprey-compile timed out"
    if case["kind"] in ("unsupported", "reject"):
        names_node = case["kind"] == "unsupported" or "node '" in proc.stderr
        if proc.returncode == 1 and not os.path.exists(module) and names_node:
            return True, last_line(proc.stderr)
        return False, "expected a clean rejection (%s), got exit code %d: %s" % (
            case["reason"], proc.returncode, last_line(proc.stderr))
    if proc.returncode != 0:
        return False, "compile: " + last_line(proc.stderr)
    run_cmd = [args.run, "--module=" + module, "--device=" + args.device,
               "--function=main", "--tolerance=%g" % args.tolerance]
    for i in range(case["inputs"]):
        run_cmd.append("--input=@" + os.path.join(case_dir, "input_%d.npy" % i))
    for i in range(case["outputs"]):
        run_cmd.append("--expected_output=@" +
                       os.path.join(case_dir, "output_%d.npy" % i))
    try:
        proc = subprocess.run(run_cmd, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return False, "osprey-run timed out"
    if proc.returncode != 0:
        return False, "run: " + last_line(proc.stderr + proc.stdout)
    return True, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", required=True, help="materialized cases")
    parser.add_argument("--work", required=True, help="folder for modules")
    parser.add_argument("--compile", required=True, help="osprey-compile")
    parser.add_argument("--run", required=True, help="osprey-run")
    parser.add_argument("--device", default="cpu-sync")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--family", action="append",
                        help="families to run (default: all)")
    parser.add_argument("--filter", default="*", help="case name pattern")
    parser.add_argument("--expected-failures", required=True)
    parser.add_argument("--json", help="write per-case results here")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    with open(os.path.join(args.cases, "manifest.json")) as f:
        manifest = json.load(f)
    xfails = load_expected_failures(args.expected_failures)
    cases = [c for c in manifest
             if (not args.family or c["family"] in args.family) and
             fnmatch.fnmatchcase(c["name"], args.filter)]
    if not cases:
        print("no cases selected")
        return 1

    table = {}  # op -> counts
    problems = []
    results = []
    for case in cases:
        row = table.setdefault(case["op"], {"passed": 0, "failed": 0,
                                            "xfail": 0, "unsupported": 0,
                                            "rejected": 0, "skipped": 0})
        if case["kind"] == "skip":
            row["skipped"] += 1
            results.append({"name": case["name"], "op": case["op"],
                            "result": "skipped", "detail": case["reason"]})
            continue
        ok, detail = run_case(args, case)
        reason = expected_reason(case["name"], xfails)
        if case["kind"] == "unsupported" and ok:
            result = "unsupported"
        elif case["kind"] == "reject" and ok:
            result = "rejected"
        elif ok and reason is None:
            result = "passed"
        elif ok:
            result = "unexpected-pass"
            problems.append("%s: passes but is listed as expected failure (%s)"
                            % (case["name"], reason))
        elif reason is not None:
            result = "xfail"
        else:
            result = "failed"
            problems.append("%s: %s" % (case["name"], detail))
        key = {"unexpected-pass": "passed"}.get(result, result)
        row[key] += 1
        results.append({"name": case["name"], "op": case["op"],
                        "result": result, "detail": detail})
        print("%-16s %s%s" % (result.upper(), case["name"],
                              (": " + detail) if result in ("failed", "xfail")
                              else ""))

    print()
    print("| Operator | passed | failed | expected failures | unsupported types "
          "| invalid, rejected | skipped |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    totals = [0] * 6
    for op in sorted(table):
        r = table[op]
        counts = [r["passed"], r["failed"], r["xfail"], r["unsupported"],
                  r["rejected"], r["skipped"]]
        totals = [a + b for a, b in zip(totals, counts)]
        print("| %s | %s |" % (op, " | ".join(str(c) for c in counts)))
    print("| **total** | %s |" % " | ".join(str(c) for c in totals))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if problems:
        print("\n%d problem(s):" % len(problems))
        for p in problems:
            print("  " + p)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
