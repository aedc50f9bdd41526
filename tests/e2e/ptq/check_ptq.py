#!/usr/bin/python3
"""Checks osprey-compile --quantize=int8 on one float model end to end.

Compiles MODEL as a float module and, with --quantize=int8 --calibration=DIR
--quantize-report, as an int8 one (printing the IR after fuse-qdq), then:
  - the IR after fuse-qdq holds the integer ops named by --expect-ops and no float op named by
    --no-float-ops (those must all have become integer);
  - the int8 module runs on every --devices entry on every calibration sample, all devices give
    the same values, and the SNR against the float module over all samples is at least --floor dB;
  - the JSON report has the method, the sample count, per output snr_db and max_abs_error that
    agree with what this script measures, and per quantized tensor a positive scale and an int8
    zero point.
Single-input models only (one .npy per sample in DIR).
"""

import argparse
import glob
import json
import math
import os
import subprocess
import sys

import numpy as np


def run(cmd):
  result = subprocess.run(cmd, capture_output=True, text=True)
  if result.returncode != 0:
    sys.exit(f"FAILED ({result.returncode}): {' '.join(cmd)}\n{result.stdout}\n{result.stderr}")
  return result


def snr_db(ref, approx):
  noise = float(np.sum((ref - approx) ** 2))
  signal = float(np.sum(ref ** 2))
  return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--compile", required=True)
  p.add_argument("--run", required=True)
  p.add_argument("--model", required=True)
  p.add_argument("--calibration", required=True)
  p.add_argument("--work", required=True, help="directory for modules and outputs")
  p.add_argument("--floor", type=float, required=True, help="lowest acceptable SNR in dB")
  p.add_argument("--devices", default="cpu-sync,cpu-task", help="devices separated by ';'")
  p.add_argument("--compile-args", default="")
  p.add_argument("--method", default="minmax")
  p.add_argument("--expect-ops", default="QConv")
  p.add_argument("--no-float-ops", default="Conv")
  args = p.parse_args()

  os.makedirs(args.work, exist_ok=True)
  stem = os.path.join(args.work, os.path.splitext(os.path.basename(args.model))[0])
  float_module, int8_module, report = stem + ".float.osp", stem + ".int8.osp", stem + ".json"
  run([args.compile, args.model, "-o", float_module])
  extra = args.compile_args.split()
  compiled = run([args.compile, args.model, "-o", int8_module, "--quantize=int8",
                  "--calibration=" + args.calibration, "--calibration-method=" + args.method,
                  "--quantize-report=" + report, "--print-ir-after=fuse-qdq"] + extra)
  ir = compiled.stderr
  for op in filter(None, args.expect_ops.split(",")):
    if f"= {op}(" not in ir:
      sys.exit(f"FAILED: no {op} in the IR after fuse-qdq:\n{ir}")
  for op in filter(None, args.no_float_ops.split(",")):
    if f"= {op}(" in ir:
      sys.exit(f"FAILED: a float {op} is left in the IR after fuse-qdq:\n{ir}")

  samples = sorted(glob.glob(os.path.join(args.calibration, "*.npy")))
  if not samples:
    sys.exit(f"FAILED: no samples in {args.calibration}")
  floats, per_device = [], {}
  for k, sample in enumerate(samples):
    out = f"{stem}.float.{k}.npy"
    run([args.run, "--module=" + float_module, "--device=cpu-sync", "--input=@" + sample,
         "--output=@" + out])
    floats.append(np.load(out).astype(np.float64))
    for device in args.devices.split(";"):
      out = f"{stem}.int8.{device.replace(',', '_')}.{k}.npy"
      cmd = [args.run, "--module=" + int8_module, "--device=" + device, "--input=@" + sample,
             "--output=@" + out]
      if device.startswith("cpu-task"):
        cmd.append("--task_workers=2")
      run(cmd)
      per_device.setdefault(device, []).append(np.load(out).astype(np.float64))
  f = np.concatenate([x.ravel() for x in floats])
  first = None
  for device, outs in per_device.items():
    q = np.concatenate([x.ravel() for x in outs])
    if first is not None and not np.array_equal(first, q):
      sys.exit(f"FAILED: {device} differs from {args.devices.split(';')[0]}")
    first = q
  snr = snr_db(f, first)
  max_err = float(np.max(np.abs(f - first)))
  print(f"{os.path.basename(args.model)}: int8 against float over {len(samples)} samples: "
        f"SNR {snr:.1f} dB (floor {args.floor}), max abs error {max_err:.4g}")
  if not snr >= args.floor:
    sys.exit(f"FAILED: SNR {snr:.1f} dB is below the floor {args.floor} dB")

  with open(report) as fh:
    r = json.load(fh)
  problems = []
  if r.get("method", {}).get("name") != args.method.split(":")[0]:
    problems.append(f"method {r.get('method')}")
  if r.get("calibration_samples") != len(samples):
    problems.append(f"calibration_samples {r.get('calibration_samples')} != {len(samples)}")
  outs = r.get("outputs", [])
  if len(outs) != 1:
    problems.append(f"{len(outs)} outputs in the report, expected 1")
  else:
    o = outs[0]
    if o.get("snr_db") is None or abs(o["snr_db"] - snr) > 0.05:
      problems.append(f"snr_db {o.get('snr_db')} != measured {snr:.3f}")
    if abs(o.get("max_abs_error", -1) - max_err) > 1e-5 * max(1.0, max_err):
      problems.append(f"max_abs_error {o.get('max_abs_error')} != measured {max_err}")
  tensors = r.get("tensors", [])
  if not tensors:
    problems.append("no quantized tensors listed")
  for t in tensors:
    if not (t["scale"] > 0 and -128 <= t["zero_point"] <= 127 and t["min"] <= t["max"]):
      problems.append(f"bad tensor entry {t}")
  if problems:
    sys.exit("FAILED: report " + report + ": " + "; ".join(problems))
  return 0


if __name__ == "__main__":
  sys.exit(main())
