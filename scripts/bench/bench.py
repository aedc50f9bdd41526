#!/usr/bin/python3
"""Benchmarks exported models with Osprey and ONNX Runtime on this machine, side by side.

For each model: compile time of osprey-compile, then end-to-end latency (median of timed runs
after warm-up), process CPU time per call and peak resident set size of osprey-benchmark on
cpu-sync and on cpu-task with 1 and 2 workers, and of ONNX Runtime (onnxruntime-node, CPU
provider) with 1 and 2 intra-op threads. Every configuration runs in its own process; peak RSS is
that process's ru_maxrss. Prints Markdown tables and, with --json, writes the raw numbers.

Process CPU time per call (all threads of the process, median over the timed calls) is steadier
than wall time on a shared machine: time spent waiting for a core does not count.

With --rounds N every configuration of a model is measured N times, the configurations taking
turns (sync, task x1, task x2, ORT 1T, ORT 2T, then again), so a machine whose speed drifts
affects Osprey and ONNX Runtime alike. Each cell is then the median of the N per-round medians,
and the ratio column the median of the per-round ratios of Osprey cpu-sync to ORT 1T.

Models run in a fixed order: the reference set (mobilenet_v2, resnet18, efficientnet_b0,
bert_mini), then MLPerf Tiny (ds_cnn, mobilenet_v1_025, resnet8, fc_autoencoder), then any
other model named with --models. --models takes model names and the groups 'reference', 'tiny',
'default' (both) and 'all' (every model export_models.py knows).

Usage: bench.py --build DIR --models-dir DIR --ort-dir DIR [--models a,b] [--runs N]
                [--rounds N] [--export] [--json F]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT_SCRIPT = os.path.join(HERE, "..", "models", "export_models.py")

REFERENCE = ["mobilenet_v2", "resnet18", "efficientnet_b0", "bert_mini"]
MLPERF_TINY = ["ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder"]
DEFAULT = REFERENCE + MLPERF_TINY

# The Osprey configurations: (result key, device, task workers).
OSPREY_CONFIGS = [("sync", "cpu-sync", 0), ("task1", "cpu-task", 1), ("task2", "cpu-task", 2)]
ORT_THREADS = [1, 2]


def known_models():
  """Every model export_models.py can export, in its order."""
  out = subprocess.run([sys.executable, EXPORT_SCRIPT, "--list"], check=True,
                       capture_output=True, text=True).stdout
  return [line.strip() for line in out.splitlines() if line.strip()]


def select_models(spec, known):
  """Resolves a --models value to model names: reference set first, MLPerf Tiny, then others."""
  groups = {"reference": REFERENCE, "tiny": MLPERF_TINY, "default": DEFAULT, "all": known}
  wanted = []
  for item in [s.strip() for s in spec.split(",") if s.strip()]:
    if item in groups:
      wanted += groups[item]
    elif item in known:
      wanted.append(item)
    else:
      raise ValueError(f"unknown model or group '{item}' (groups: {', '.join(groups)}; "
                       f"models: {', '.join(known)})")
  order = DEFAULT + [m for m in known if m not in DEFAULT]
  return [m for m in order if m in wanted]


class Runner:
  """Runs children whose output goes to temporary files (no pipes: wait4 must reap exactly the
  child it started, so its ru_maxrss is that child's alone)."""

  def __init__(self):
    self._out = tempfile.TemporaryFile()
    self._err = tempfile.TemporaryFile()

  def run(self, cmd, env=None):
    """Runs cmd and returns (stdout, wall seconds, peak RSS KiB, CPU seconds) of that child."""
    out_fd, err_fd = self._out.fileno(), self._err.fileno()
    for fd in (out_fd, err_fd):
      os.ftruncate(fd, 0)
      os.lseek(fd, 0, os.SEEK_SET)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
      try:
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.execvpe(cmd[0], cmd, env or os.environ)
      finally:
        os._exit(127)
    _, status, rusage = os.wait4(pid, 0)
    seconds = time.monotonic() - start
    os.lseek(out_fd, 0, os.SEEK_SET)
    out = os.read(out_fd, 1 << 22).decode(errors="replace")
    os.lseek(err_fd, 0, os.SEEK_SET)
    err = os.read(err_fd, 1 << 22).decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
      detail = (err.strip() or out.strip() or f"exit status {code}")[-3000:]
      raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {detail}")
    return out, seconds, rusage.ru_maxrss, rusage.ru_utime + rusage.ru_stime


_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def osprey_latency(args, runner, model, module, device, workers):
  """Returns {ms, cpu_ms, rss_kb}: medians over --runs repetitions of about one call each."""
  cmd = [
      os.path.join(args.build, "bin", "osprey-benchmark"), f"--module={module}",
      f"--device={device}", "--function=main", f"--input=@{model}.in0.npy",
      f"--benchmark_repetitions={args.runs}", "--benchmark_min_time=0.001",
      "--benchmark_report_aggregates_only=true", "--benchmark_format=json"
  ]
  if workers:
    cmd.append(f"--task_workers={workers}")
  out, _, rss, _ = runner.run(cmd)
  benchmarks = json.loads(out)["benchmarks"]
  errors = [b["error_message"] for b in benchmarks if b.get("error_occurred")]
  if errors:
    raise RuntimeError(f"osprey-benchmark on {device}: {errors[0]}")
  median = [b for b in benchmarks if b.get("aggregate_name") == "median"][0]
  unit = _UNIT_MS[median["time_unit"]]
  # osprey-benchmark measures process CPU time (all threads), so cpu_time includes workers.
  return {"ms": median["real_time"] * unit, "cpu_ms": median["cpu_time"] * unit, "rss_kb": rss}


def ort_latency(args, runner, model, threads):
  """Returns {ms, cpu_ms, rss_kb} of ONNX Runtime with |threads| intra-op threads."""
  cmd = ["node", os.path.join(HERE, "ort_bench.js"), f"{model}.onnx", f"{model}.in0.npy",
         str(threads), str(args.runs), "5"]
  env = dict(os.environ, NODE_PATH=os.path.join(args.ort_dir, "node_modules"))
  out, _, rss, _ = runner.run(cmd, env)
  data = json.loads(out.strip().splitlines()[-1])
  return {"ms": data["median_ms"], "cpu_ms": data.get("median_cpu_ms"), "rss_kb": rss}


def bench_model(args, runner, name):
  model = os.path.join(args.models_dir, name)
  module = os.path.join(args.models_dir, name + ".bench.osp")
  row = {"model": name}
  if not os.path.exists(model + ".onnx"):
    row["error"] = row["ort_error"] = f"{model}.onnx not found (export it: bench.py --export)"
    return row
  try:
    _, row["compile_s"], row["compile_rss_kb"], row["compile_cpu_s"] = runner.run([
        os.path.join(args.build, "bin", "osprey-compile"), f"{model}.onnx", "--target=host",
        "-o", module
    ])
  except RuntimeError as e:
    row["error"] = " ".join(str(e).split())[:400]
  rounds = {}
  for _ in range(args.rounds):
    if "error" not in row:
      try:
        for key, device, workers in OSPREY_CONFIGS:
          rounds.setdefault(key, []).append(
              osprey_latency(args, runner, model, module, device, workers))
      except RuntimeError as e:
        row["error"] = " ".join(str(e).split())[:400]
    if "ort_error" not in row:
      for threads in ORT_THREADS:
        try:
          rounds.setdefault(f"ort{threads}", []).append(ort_latency(args, runner, model, threads))
        except RuntimeError as e:
          row["ort_error"] = " ".join(str(e).split())[:400]
          break
  for key, measured in rounds.items():
    if len(measured) == args.rounds:
      row[key] = combine_rounds(measured)
  if "sync" in row and "ort1" in row:
    row["sync_over_ort1"] = statistics.median(
        s["ms"] / o["ms"] for s, o in zip(rounds["sync"], rounds["ort1"]))
  return row


def combine_rounds(measured):
  """One configuration's result over rounds: median latencies, largest peak RSS, and (with
  several rounds) each round's wall-time median."""
  cpu = [m["cpu_ms"] for m in measured if m.get("cpu_ms") is not None]
  out = {"ms": statistics.median(m["ms"] for m in measured),
         "cpu_ms": statistics.median(cpu) if cpu else None,
         "rss_kb": max(m["rss_kb"] for m in measured)}
  if len(measured) > 1:
    out["rounds_ms"] = [m["ms"] for m in measured]
  return out


def _fmt_ms(value):
  if value is None:
    return "—"
  return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.1f}"


def _cell(row, key, field="ms"):
  return _fmt_ms(row[key].get(field)) if key in row else "—"


def _mib(kb, minus=0):
  return f"{(kb - minus) / 1024:.1f}"


def print_tables(results, header, node_rss):
  print(header + "\n")
  print("| Model | compile s | Osprey sync ms | task×1 ms | task×2 ms | ORT 1T ms | ORT 2T ms "
        "| sync / ORT 1T | Osprey sync RSS MiB | ORT 1T RSS MiB (net of node) |")
  print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
  for row in results:
    compile_s = f"{row['compile_s']:.2f}" if "compile_s" in row else "—"
    sync_rss = _mib(row["sync"]["rss_kb"]) if "sync" in row else "—"
    ort_rss = (f"{_mib(row['ort1']['rss_kb'])} ({_mib(row['ort1']['rss_kb'], node_rss)})"
               if "ort1" in row else "—")
    ratio = f"{row['sync_over_ort1']:.2f}" if "sync_over_ort1" in row else "—"
    print(f"| {row['model']} | {compile_s} | {_cell(row, 'sync')} | {_cell(row, 'task1')} | "
          f"{_cell(row, 'task2')} | {_cell(row, 'ort1')} | {_cell(row, 'ort2')} | {ratio} | "
          f"{sync_rss} | {ort_rss} |")
  print("\nProcess CPU time (all threads): osprey-compile in s, per call in ms (median of the "
        "timed calls):\n")
  print("| Model | compile CPU s | Osprey sync | task×1 | task×2 | ORT 1T | ORT 2T |")
  print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
  for row in results:
    compile_cpu = f"{row['compile_cpu_s']:.2f}" if "compile_cpu_s" in row else "—"
    cells = [_cell(row, key, "cpu_ms") for key in ("sync", "task1", "task2", "ort1", "ort2")]
    print(f"| {row['model']} | {compile_cpu} | " + " | ".join(cells) + " |")
  for row in results:
    if "error" in row:
      print(f"\n{row['model']}: Osprey: {row['error']}")
    if "ort_error" in row:
      print(f"\n{row['model']}: ONNX Runtime: {row['ort_error']}")


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--build", required=True, help="Osprey build directory (bin/ tools)")
  parser.add_argument("--models-dir", required=True, help="exported models (export_models.py)")
  parser.add_argument("--ort-dir", required=True, help="npm prefix holding onnxruntime-node")
  parser.add_argument("--models", default="default",
                      help="comma-separated model names or groups (reference, tiny, default, all)")
  parser.add_argument("--runs", type=int, default=25, help="timed runs per configuration")
  parser.add_argument("--rounds", type=int, default=1,
                      help="times each configuration is measured, configurations taking turns")
  parser.add_argument("--export", action="store_true",
                      help="export the selected models first (cached: export_models.py --cached)")
  parser.add_argument("--json", help="write raw results here")
  args = parser.parse_args()
  if args.runs < 1:
    parser.error("--runs must be at least 1")
  if args.rounds < 1:
    parser.error("--rounds must be at least 1")
  try:
    names = select_models(args.models, known_models())
  except ValueError as e:
    parser.error(str(e))
  if not names:
    parser.error("--models selects no model")
  if args.export:
    subprocess.run([sys.executable, EXPORT_SCRIPT, "--out", args.models_dir, "--models",
                    ",".join(names), "--opsets", "17", "--cached"], check=True)

  runner = Runner()
  env = dict(os.environ, NODE_PATH=os.path.join(args.ort_dir, "node_modules"))
  base_out, _, node_rss, _ = runner.run(
      ["node", os.path.join(HERE, "ort_bench.js"), "--baseline"], env)
  ort_version = json.loads(base_out.strip().splitlines()[-1]).get("version", "?")
  with open("/proc/loadavg") as f:
    load_before = f.read().split()[:3]

  results = []
  for name in names:
    row = bench_model(args, runner, name)
    results.append(row)
    print(f"{name}: {json.dumps(row)}", file=sys.stderr, flush=True)

  with open("/proc/loadavg") as f:
    load_after = f.read().split()[:3]
  header = (f"ONNX Runtime {ort_version} (node baseline RSS {node_rss / 1024:.1f} MiB, "
            f"subtracted in 'net of node'); load average before {' '.join(load_before)}, "
            f"after {' '.join(load_after)}; median of {args.runs} runs"
            + (f", median of {args.rounds} interleaved rounds" if args.rounds > 1 else ""))
  print()
  print_tables(results, header, node_rss)
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"ort_version": ort_version, "node_baseline_rss_kb": node_rss,
                 "load_before": load_before, "load_after": load_after, "runs": args.runs,
                 "rounds": args.rounds,
                 "results": results}, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main())
