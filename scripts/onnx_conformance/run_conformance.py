#!/usr/bin/python3
"""Compiles and runs materialized ONNX node test cases with Osprey.

For every case of the selected families in MANIFEST (see materialize.py):
  kind "run":         osprey-compile --target=host, then osprey-run on the
                      device against the reference outputs (with the case's
                      own tolerance when the manifest gives one); pass or
                      fail.
  kind "unsupported": element types Osprey does not compile; osprey-compile
                      must reject the model with an error (exit code 1, no
                      crash) and write no module.
  kind "reject":      invalid models (e.g. out-of-range constant indices);
                      osprey-compile must reject them the same way, with an
                      error naming the node.
  kind "skip":        sequence or optional values; counted as not run.
With --bind-inputs every input is given to osprey-compile (--input-value)
instead of osprey-run, so whatever the compiler can fold is computed by its
constant evaluator and checked against the same references (only kind
"run").
Cases of operators outside Osprey's list (family "other"), multi-node
function expansions, or every case with --survey, may also be refused cleanly; a wrong value or a crash is never
accepted. A failing case fails the run unless it matches an entry of the
expected-failure list (wrong values and crashes cannot be listed); a listed
case that passes also fails the run. A per-operator table and the totals per
outcome (passed, refused, run-refused, wrong, error, crashed, not run) are
printed at the end.
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


def input_names(case_dir):
    """The graph inputs of a case's model that take a value (not those with
    an initializer), in order."""
    import onnx
    graph = onnx.load(os.path.join(case_dir, "model.onnx"),
                      load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    return [i.name for i in graph.input if i.name not in inits]


def run_case(args, case):
    """Compiles and runs one case. Returns (outcome, detail); outcome is
    "passed", "refused" (osprey-compile rejected the model cleanly: exit 1,
    no module), "run-refused" (osprey-run failed cleanly without comparing),
    "wrong" (an output differs from the reference), "error" (compile or run
    failed otherwise where a result was required) or "crashed" (a signal,
    another exit code, or a timeout)."""
    case_dir = os.path.join(args.cases, case["name"])
    module = os.path.join(args.work, case["name"] + ".osp")
    if os.path.exists(module):
        os.remove(module)
    compile_cmd = [args.compile, os.path.join(case_dir, "model.onnx"),
                   "--target=host", "-o", module]
    if args.bind_inputs:
        for i, name in enumerate(input_names(case_dir)[:case["inputs"]]):
            compile_cmd.append("--input-value=%s=@%s" % (
                name, os.path.join(case_dir, "input_%d.npy" % i)))
    try:
        proc = subprocess.run(compile_cmd, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return "crashed", "osprey-compile timed out"
    if proc.returncode not in (0, 1):
        return "crashed", "osprey-compile exit code %d: %s" % (
            proc.returncode, last_line(proc.stderr))
    if proc.returncode == 1:
        if os.path.exists(module):
            return "error", "osprey-compile failed but wrote a module"
        return "refused", last_line(proc.stderr)
    if case["kind"] in ("unsupported", "reject"):
        return "error", "expected a clean rejection (%s), but it compiled" % (
            case["reason"])
    run_cmd = [args.run, "--module=" + module, "--device=" + args.device,
               "--function=main",
               "--tolerance=%g" % case.get("tolerance", args.tolerance)]
    for i in range(0 if args.bind_inputs else case["inputs"]):
        run_cmd.append("--input=@" + os.path.join(case_dir, "input_%d.npy" % i))
    for i in range(case["outputs"]):
        run_cmd.append("--expected_output=@" +
                       os.path.join(case_dir, "output_%d.npy" % i))
    try:
        proc = subprocess.run(run_cmd, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return "crashed", "osprey-run timed out"
    if proc.returncode == 0:
        return "passed", ""
    if proc.returncode != 1:
        return "crashed", "osprey-run exit code %d: %s" % (
            proc.returncode, last_line(proc.stderr + proc.stdout))
    if "[FAIL]" in proc.stdout:
        fails = [l for l in proc.stdout.splitlines() if "[FAIL]" in l]
        return "wrong", fails[0][:200]
    return "run-refused", last_line(proc.stderr + proc.stdout)


def judge(case, outcome, detail, survey):
    """Whether |outcome| is acceptable for |case|: a case of a listed
    operator must pass (or, for an invalid or unsupported-type model, be
    refused); in a survey (operators outside the list) a clean refusal is
    acceptable too. A wrong value or a crash never is."""
    if case["kind"] == "reject":
        return outcome == "refused" and "node '" in detail
    if case["kind"] == "unsupported":
        return outcome == "refused"
    if outcome == "passed":
        return True
    return survey and outcome in ("refused", "run-refused")


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
    parser.add_argument("--bind-inputs", action="store_true",
                        help="give every input to osprey-compile "
                             "(--input-value): the compiler folds what it "
                             "can, which checks its constant evaluator "
                             "against the same references")
    parser.add_argument("--survey", action="store_true",
                        help="accept clean refusals in every family (they "
                        "are always accepted in family 'other')")
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
    totals = {}
    problems = []
    results = []
    for case in cases:
        row = table.setdefault(case["op"], {"passed": 0, "failed": 0,
                                            "xfail": 0, "refused": 0,
                                            "skipped": 0})
        survey = (args.survey or case["family"] == "other" or
                  case.get("survey", False))
        # Bound inputs change what an invalid model's refusal depends on.
        if case["kind"] == "skip" or (args.bind_inputs and case["kind"] != "run"):
            row["skipped"] += 1
            totals["not run"] = totals.get("not run", 0) + 1
            results.append({"name": case["name"], "op": case["op"],
                            "result": "skipped",
                            "detail": case.get("reason", "inputs bound")})
            continue
        outcome, detail = run_case(args, case)
        totals[outcome] = totals.get(outcome, 0) + 1
        ok = judge(case, outcome, detail, survey)
        reason = expected_reason(case["name"], xfails)
        if ok and outcome == "passed":
            result = "passed" if reason is None else "unexpected-pass"
        elif ok:
            result = "refused"
        elif reason is not None and outcome not in ("wrong", "crashed"):
            result = "xfail"
        else:
            result = "failed"
        if result == "unexpected-pass":
            problems.append("%s: passes but is listed as expected failure (%s)"
                            % (case["name"], reason))
        elif result == "failed":
            problems.append("%s: %s: %s" % (case["name"], outcome, detail))
        key = {"unexpected-pass": "passed"}.get(result, result)
        row[key] += 1
        results.append({"name": case["name"], "op": case["op"],
                        "result": result, "outcome": outcome,
                        "detail": detail})
        print("%-16s %s%s" % (result.upper(), case["name"],
                              (": " + detail) if result != "passed" and detail
                              else ""))

    print()
    print("| Operator | passed | failed | expected failures | refused "
          "| not run |")
    print("| --- | --- | --- | --- | --- | --- |")
    sums = [0] * 5
    for op in sorted(table):
        r = table[op]
        counts = [r["passed"], r["failed"], r["xfail"], r["refused"],
                  r["skipped"]]
        sums = [a + b for a, b in zip(sums, counts)]
        print("| %s | %s |" % (op, " | ".join(str(c) for c in counts)))
    print("| **total** | %s |" % " | ".join(str(c) for c in sums))
    print()
    print("outcomes: " + ", ".join("%s %d" % (k, totals[k])
                                   for k in sorted(totals)))
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
