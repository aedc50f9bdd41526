#!/usr/bin/python3
"""Writes float models and calibration directories for the osprey-compile --quantize tests.

Into --out:
  ptq_small.onnx        a float CNN, input x: 1x3x8x8 (Conv+Relu, depthwise Conv+Relu, residual
                        Add, MaxPool, Conv, GlobalAveragePool, Flatten, Gemm with transB=0), output
                        logits 1x10
  ptq_small_calib/      calibration samples for it (one .npy per sample): normal values, zeros,
                        large values of both signs, and a ramp through negatives and positives
  ptq_two_inputs.onnx   inputs a, b: 1x16; Add, Relu, MatMul with constant weights; output y
  ptq_two_inputs_calib/ one subdirectory per sample holding a.npy and b.npy
  ptq_qdq.onnx          an already quantized model (QuantizeLinear/DequantizeLinear around a Relu)
  bad_shape/x.npy, bad_dtype/x.npy, empty/   calibration directories with a wrong shape, a wrong
                        element type (float64), and no sample
With --calibrate-from FILE.npy (and --out DIR) it writes only a calibration directory for a model
whose input is shaped like FILE: FILE itself, three normal samples and a zero sample.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save_model(nodes, inputs, outputs, inits, name, out):
  graph = helper.make_graph(nodes, name, inputs, outputs,
                            [numpy_helper.from_array(v, k) for k, v in inits.items()])
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                            producer_name="osprey-ptq-test")
  model.ir_version = 7
  onnx.checker.check_model(model)
  onnx.save(model, os.path.join(out, name + ".onnx"))


def small_cnn(out, rng):
  f = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
  inits = {"w1": f(8, 3, 3, 3), "b1": f(8), "w2": f(8, 1, 3, 3), "b2": f(8),
           "w3": f(16, 8, 1, 1), "b3": f(16), "wfc": f(16, 10), "bfc": f(10)}
  nodes = [
      helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
      helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
      helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8,
                       name="dwconv"),
      helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
      helper.make_node("Add", ["r1", "r2"], ["sum"], name="residual"),
      helper.make_node("MaxPool", ["sum"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                       name="pool"),
      helper.make_node("Conv", ["p", "w3", "b3"], ["c3"], name="conv3"),
      helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
      helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="gap"),
      helper.make_node("Flatten", ["g"], ["flat"], name="flatten"),
      helper.make_node("Gemm", ["flat", "wfc", "bfc"], ["logits"], name="fc"),
  ]
  _save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
              inits, "ptq_small", out)
  calib = os.path.join(out, "ptq_small_calib")
  os.makedirs(calib, exist_ok=True)
  shape = (1, 3, 8, 8)
  samples = [rng.standard_normal(shape) for _ in range(4)]
  samples.append(np.zeros(shape))
  samples.append(np.where(rng.random(shape) < 0.5, -4.0, 4.0))   # extremes of both signs
  samples.append(np.linspace(-3, 3, int(np.prod(shape))).reshape(shape))
  for i, s in enumerate(samples):
    np.save(os.path.join(calib, f"sample{i}.npy"), s.astype(np.float32))


def two_inputs(out, rng):
  inits = {"w": (rng.standard_normal((16, 8)) * 0.3).astype(np.float32)}
  nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add"),
           helper.make_node("Relu", ["s"], ["r"], name="relu"),
           helper.make_node("MatMul", ["r", "w"], ["y"], name="matmul")]
  _save_model(nodes, [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16])
                      for n in ("a", "b")],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits,
              "ptq_two_inputs", out)
  calib = os.path.join(out, "ptq_two_inputs_calib")
  for i in range(4):
    d = os.path.join(calib, f"sample{i}")
    os.makedirs(d, exist_ok=True)
    for n in ("a", "b"):
      np.save(os.path.join(d, n + ".npy"), rng.standard_normal((1, 16)).astype(np.float32))


def already_quantized(out):
  inits = {"s": np.array(0.1, np.float32), "z": np.array(0, np.int8)}
  nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant"),
           helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dequant"),
           helper.make_node("Relu", ["d"], ["y"], name="relu")]
  _save_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])], inits,
              "ptq_qdq", out)


def bad_dirs(out):
  for d in ("bad_shape", "bad_dtype", "empty"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
  np.save(os.path.join(out, "bad_shape", "x.npy"), np.zeros((1, 3, 8, 9), np.float32))
  np.save(os.path.join(out, "bad_dtype", "x.npy"), np.zeros((1, 3, 8, 8), np.float64))


def calibration_for(path, out, rng):
  x = np.load(path)
  os.makedirs(out, exist_ok=True)
  np.save(os.path.join(out, "sample0.npy"), x)
  for i in range(3):
    np.save(os.path.join(out, f"sample{i + 1}.npy"), rng.standard_normal(x.shape).astype(x.dtype))
  np.save(os.path.join(out, "sample4.npy"), np.zeros_like(x))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--out", required=True)
  parser.add_argument("--calibrate-from", help="write only a calibration directory for this input")
  args = parser.parse_args()
  rng = np.random.default_rng(11)
  if args.calibrate_from:
    calibration_for(args.calibrate_from, args.out, rng)
    return 0
  os.makedirs(args.out, exist_ok=True)
  small_cnn(args.out, rng)
  two_inputs(args.out, rng)
  already_quantized(args.out)
  bad_dirs(args.out)
  return 0


if __name__ == "__main__":
  sys.exit(main())
