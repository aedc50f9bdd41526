#!/usr/bin/env python3
"""Mutation campaign: feeds mutated modules to osprey-run and mutated ONNX
models to osprey-compile, and counts how each run ended.

Every run must end cleanly: exit 0 (the mutation was harmless) or exit 1 with
an error message. A run killed by a signal is a crash; a run still going
after --timeout seconds is a hang. Both are listed with the input kept under
--out so they can be replayed.

  mutate_modules.py --bin build/bin --modules a.osp b.osp --onnx m.onnx \\
      --module-runs 2000 --onnx-runs 300 --out /tmp/campaign

Modules run twice as often with --verify_digest=executables as with the
default check: a mutated module is almost always refused by its whole-file
digest, and runs that check only the executables are what exercise the
loader, verifier and interpreter on everything else (bytecode, tables,
weights, dispatch parameters). Runs with no check at all would execute
mutated machine code, which no runtime can make safe (docs/security.md).
"""
import argparse
import collections
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time


def mutate(data, rng):
    """One of several mutations of |data| (bytes), as a new bytes object."""
    data = bytearray(data)
    kind = rng.choice(["flip", "flip", "bytes", "word", "truncate", "splice", "zero"])
    if not data:
        return bytes(data), kind
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == "bytes":
        for _ in range(rng.randint(1, 16)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == "word":
        # An interesting 32-bit value (sizes, counts, offsets) somewhere.
        value = rng.choice([0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000,
                            0xFFFFFFFF, len(data), len(data) + 1, rng.randrange(1 << 32)])
        i = rng.randrange(max(1, len(data) - 3))
        data[i:i + 4] = value.to_bytes(4, "little")[:len(data) - i]
    elif kind == "truncate":
        del data[rng.randrange(len(data)):]
    elif kind == "splice":
        i, j = sorted(rng.randrange(len(data)) for _ in range(2))
        k = rng.randrange(len(data))
        data[k:k] = data[i:j][:4096]
    elif kind == "zero":
        i = rng.randrange(len(data))
        n = rng.randint(1, 64)
        data[i:i + n] = bytes(min(n, len(data) - i))
    return bytes(data), kind


def run(command, timeout):
    """(outcome, detail): ok, error, crash, hang or unexpected."""
    try:
        proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", ""
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode < 0:
        return "crash", "signal %d" % -proc.returncode
    if proc.returncode == 0:
        return "ok", ""
    if proc.returncode == 1 and err.strip():
        return "error", err.strip().splitlines()[0][:160]
    return "unexpected", "exit %d: %s" % (proc.returncode, err.strip()[:160])


def campaign(name, inputs, runs, make_command, suffix, args, rng, counts, problems):
    work = tempfile.mkdtemp(prefix="mutate-")
    try:
        for n in range(runs):
            source = inputs[n % len(inputs)]
            with open(source, "rb") as f:
                mutated, kind = mutate(f.read(), rng)
            path = os.path.join(work, "input" + suffix)
            with open(path, "wb") as f:
                f.write(mutated)
            command, mode = make_command(path, source, n)
            outcome, detail = run(command, args.timeout)
            counts[(name, mode, outcome)] += 1
            if outcome in ("crash", "hang", "unexpected"):
                keep = os.path.join(args.out, "%s-%d-%s%s" % (name, n, outcome, suffix))
                shutil.copy(path, keep)
                problems.append((name, mode, outcome, detail, os.path.basename(source), kind,
                                 keep, " ".join(command)))
    finally:
        shutil.rmtree(work)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="folder with osprey-run, osprey-compile")
    parser.add_argument("--modules", nargs="*", default=[], help="compiled .osp modules")
    parser.add_argument("--inputs", nargs="*", default=[],
                        help="for each module, its input .npy files joined with ','")
    parser.add_argument("--onnx", nargs="*", default=[], help="ONNX models")
    parser.add_argument("--module-runs", type=int, default=2000)
    parser.add_argument("--onnx-runs", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="mutation-campaign")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    counts = collections.Counter()
    problems = []
    run_tool = os.path.join(args.bin, "osprey-run")
    compile_tool = os.path.join(args.bin, "osprey-compile")
    inputs = dict(zip(args.modules, args.inputs))
    start = time.time()

    def module_command(path, source, n):
        mode = "module" if n % 3 == 0 else "executables"
        command = [run_tool, "--module=" + path, "--print_outputs=false",
                   "--deadline_ms=10000", "--max_memory=256M", "--verify_digest=" + mode]
        for npy in filter(None, inputs.get(source, "").split(",")):
            command.append("--input=@" + npy)
        return command, mode

    def onnx_command(path, source, n):
        return [compile_tool, path, "-o", path + ".osp"], "compile"

    if args.modules:
        campaign("module", args.modules, args.module_runs, module_command, ".osp", args, rng,
                 counts, problems)
    if args.onnx:
        campaign("onnx", args.onnx, args.onnx_runs, onnx_command, ".onnx", args, rng, counts,
                 problems)

    print("runs by tool, mode and outcome (%.0f s):" % (time.time() - start))
    for key in sorted(counts):
        print("  %-7s %-10s %-10s %6d" % (key + (counts[key],)))
    for tool in ("module", "onnx"):
        total = sum(v for k, v in counts.items() if k[0] == tool)
        crashes = sum(v for k, v in counts.items() if k[0] == tool and k[2] == "crash")
        hangs = sum(v for k, v in counts.items() if k[0] == tool and k[2] == "hang")
        other = sum(v for k, v in counts.items() if k[0] == tool and k[2] == "unexpected")
        if total:
            print("%s: %d runs, %d crashes, %d hangs, %d unexpected exits" %
                  (tool, total, crashes, hangs, other))
    for p in problems:
        print("PROBLEM %s/%s %s (%s) from %s by %s: %s\n  %s" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
