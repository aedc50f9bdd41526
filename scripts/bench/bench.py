#!/usr/bin/python3
"""Benchmarks exported models with Osprey and ONNX Runtime on this machine, side by side.

For each model: compile time of osprey-compile, then end-to-end latency (median of timed runs
after warm-up) and peak resident set size of osprey-benchmark on cpu-sync and on cpu-task with 1
and 2 workers, and of ONNX Runtime (onnxruntime-node, CPU provider) with 1 and 2 intra-op
threads. Every configuration runs in its own process; peak RSS is that process's ru_maxrss.
Prints a Markdown table and, with --json, writes the raw numbers.

Usage: bench.py --build DIR --models-dir DIR --ort-dir DIR [--models a,b] [--runs N] [--json F]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_with_rss(cmd, env=None):
  """Runs cmd in a child and returns (stdout, seconds, peak RSS KiB of exactly that child)."""
  start = time.monotonic()
  pid = os.fork()
  if pid == 0:
    try:
      os.dup2(_child_out, 1)
      os.dup2(_child_err, 2)
      os.execvpe(cmd[0], cmd, env or os.environ)
    finally:
      os._exit(127)
  _, status, rusage = os.wait4(pid, 0)
  seconds = time.monotonic() - start
  os.lseek(_child_out, 0, os.SEEK_SET)
  out = os.read(_child_out, 1 << 22).decode()
  os.lseek(_child_err, 0, os.SEEK_SET)
  err = os.read(_child_err, 1 << 22).decode()
  os.ftruncate(_child_out, 0)
  os.ftruncate(_child_err, 0)
  os.lseek(_child_out, 0, os.SEEK_SET)
  os.lseek(_child_err, 0, os.SEEK_SET)
  if os.waitstatus_to_exitcode(status) != 0:
    raise RuntimeError(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
  return out, seconds, rusage.ru_maxrss


_child_out = None
_child_err = None


def osprey_latency(args, model, module, device, workers):
  cmd = [
      os.path.join(args.build, "bin", "osprey-benchmark"), f"--module={module}",
      f"--device={device}", "--function=main", f"--input=@{model}.in0.npy",
      f"--benchmark_repetitions={args.runs}", "--benchmark_min_time=0.001",
      "--benchmark_report_aggregates_only=true", "--benchmark_format=json"
  ]
  if workers:
    cmd.append(f"--task_workers={workers}")
  out, _, rss = run_with_rss(cmd)
  data = json.loads(out)
  median = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"][0]
  assert median["time_unit"] == "us", median["time_unit"]
  return median["real_time"] / 1000.0, rss


def ort_latency(args, model, threads):
  cmd = ["node", os.path.join(HERE, "ort_bench.js"), f"{model}.onnx", f"{model}.in0.npy",
         str(threads), str(args.runs), "5"]
  env = dict(os.environ, NODE_PATH=os.path.join(args.ort_dir, "node_modules"))
  out, _, rss = run_with_rss(cmd, env)
  data = json.loads(out.strip().splitlines()[-1])
  return data["median_ms"], rss


def main():
  global _child_out, _child_err
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--build", required=True, help="Osprey build directory (bin/ tools)")
  parser.add_argument("--models-dir", required=True, help="exported models (export_models.py)")
  parser.add_argument("--ort-dir", required=True, help="npm prefix holding onnxruntime-node")
  parser.add_argument("--models", default="mobilenet_v2,resnet18")
  parser.add_argument("--runs", type=int, default=25)
  parser.add_argument("--json", help="write raw results here")
  args = parser.parse_args()
  # Children write into temporary files (no pipes: wait4 must reap exactly one child).
  out_f = tempfile.TemporaryFile()
  err_f = tempfile.TemporaryFile()
  _child_out, _child_err = out_f.fileno(), err_f.fileno()

  env = dict(os.environ, NODE_PATH=os.path.join(args.ort_dir, "node_modules"))
  base_out, _, node_rss = run_with_rss(
      ["node", os.path.join(HERE, "ort_bench.js"), "--baseline"], env)
  ort_version = json.loads(base_out.strip().splitlines()[-1]).get("version", "?")
  with open("/proc/loadavg") as f:
    load_before = f.read().split()[:3]

  results = []
  for name in [m for m in args.models.split(",") if m]:
    model = os.path.join(args.models_dir, name)
    module = os.path.join(args.models_dir, name + ".bench.osp")
    row = {"model": name}
    try:
      _, compile_s, compile_rss = run_with_rss([
          os.path.join(args.build, "bin", "osprey-compile"), f"{model}.onnx", "--target=host",
          "-o", module
      ])
      row["compile_s"], row["compile_rss_kb"] = compile_s, compile_rss
      row["sync_ms"], row["sync_rss_kb"] = osprey_latency(args, model, module, "cpu-sync", 0)
      row["task1_ms"], row["task1_rss_kb"] = osprey_latency(args, model, module, "cpu-task", 1)
      row["task2_ms"], row["task2_rss_kb"] = osprey_latency(args, model, module, "cpu-task", 2)
    except RuntimeError as e:
      row["error"] = str(e).strip().splitlines()[-1][:300]
    try:
      row["ort1_ms"], row["ort1_rss_kb"] = ort_latency(args, model, 1)
      row["ort2_ms"], row["ort2_rss_kb"] = ort_latency(args, model, 2)
    except RuntimeError as e:
      row["ort_error"] = str(e).strip().splitlines()[-1][:300]
    results.append(row)
    print(f"{name}: {row}", file=sys.stderr)

  with open("/proc/loadavg") as f:
    load_after = f.read().split()[:3]

  def ms(row, key):
    return f"{row[key]:.2f}" if key in row else "—"

  def mb(row, key, minus=0):
    return f"{(row[key] - minus) / 1024:.1f}" if key in row else "—"

  print(f"\nONNX Runtime {ort_version} (node baseline RSS {node_rss / 1024:.1f} MiB, "
        f"subtracted in 'ORT net'); load average before {' '.join(load_before)}, "
        f"after {' '.join(load_after)}; median of {args.runs} runs\n")
  print("| Model | compile s | Osprey sync ms | task×1 ms | task×2 ms | ORT 1T ms | ORT 2T ms "
        "| Osprey sync RSS MiB | ORT 1T RSS MiB (net) |")
  print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
  for row in results:
    compile_s = f"{row['compile_s']:.2f}" if "compile_s" in row else "—"
    ort_rss = (f"{mb(row, 'ort1_rss_kb')} ({mb(row, 'ort1_rss_kb', node_rss)})"
               if "ort1_rss_kb" in row else "—")
    print(f"| {row['model']} | {compile_s} | {ms(row, 'sync_ms')} | {ms(row, 'task1_ms')} | "
          f"{ms(row, 'task2_ms')} | {ms(row, 'ort1_ms')} | {ms(row, 'ort2_ms')} | "
          f"{mb(row, 'sync_rss_kb')} | {ort_rss} |")
  for row in results:
    if "error" in row:
      print(f"\n{row['model']}: Osprey: {row['error']}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"ort_version": ort_version, "node_baseline_rss_kb": node_rss,
                 "load_before": load_before, "load_after": load_after, "runs": args.runs,
                 "results": results}, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main())
