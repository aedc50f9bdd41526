#!/usr/bin/python3
"""Quantizes the float models of export_models.py into QDQ models with integer references.

For every model NAME, read from --models-dir (NAME.onnx and NAME.in0.npy as export_models.py
writes them), this writes into --out:
  NAME_qdq.onnx        the QDQ model (opset 13): QuantizeLinear/DequantizeLinear pairs on every
                       activation, weights as int8 initializers quantized symmetrically per
                       output channel behind DequantizeLinear (axis 0), biases as int32
                       initializers in the accumulator scale; the output is the last quantized
                       tensor itself (a trailing Softmax is left out: it stays float in Osprey
                       and its result would not be an integer)
  NAME_qdq.in0.npy     the float input (NAME.in0.npy)
  NAME_qdq.ref0.npy    the output computed by int8_reference.QdqInterpreter, Osprey's integer
                       arithmetic in numpy (docs/quantization.md)
  NAME_qdq.float0.npy  the float model's value of the same tensor, for the SNR of the int8 model
  NAME_qdq_f32.onnx, .in0.npy, .ref0.npy
                       the same model with its output dequantized (float32, so the bare-metal
                       model image can compare it), and the reference dequantized in float32:
                       still bit-exact, as DequantizeLinear is exact arithmetic
Activations are quantized asymmetrically per tensor from the minimum and maximum over a few
calibration inputs (NAME.in0.npy and three normal inputs), evaluated in float by
int8_reference.FloatInterpreter; MaxPool and Flatten keep their input's parameters, as common
quantizers do. BatchNormalization after Gemm is folded first. Activations are int8, or uint8 for
the models in UINT8_MODELS (both forms occur in practice).

Usage: make_qdq_models.py --models-dir DIR --out DIR [--models a,b] [--cached]
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import int8_reference as ref  # noqa: E402

MODELS = ("ds_cnn", "mobilenet_v1_025", "resnet8", "fc_autoencoder", "mobilenet_v2", "resnet18",
          "fc_odd")
UINT8_MODELS = ("fc_autoencoder",)
CALIBRATION_INPUTS = 3
OPSET = 13


def _fold_constants_and_batchnorm(model):
  """Constant nodes become initializers; BatchNormalization after Gemm folds into the Gemm.
  A value named "output" is renamed (the QDQ model's output takes that name)."""
  g = model.graph
  for n in g.node:
    n.input[:] = ["output_float" if i == "output" else i for i in n.input]
    n.output[:] = ["output_float" if o == "output" else o for o in n.output]
  for o in g.output:
    if o.name == "output":
      o.name = "output_float"
  inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
  producers = {n.output[0]: n for n in g.node}
  nodes = []
  for n in g.node:
    if n.op_type == "Constant":
      inits[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
      continue
    if n.op_type == "BatchNormalization" and producers.get(n.input[0]) is not None and \
        producers[n.input[0]].op_type == "Gemm":
      gemm = producers[n.input[0]]
      trans_b = any(a.name == "transB" and a.i for a in gemm.attribute)
      gamma, beta, mean, var = (inits[i] for i in n.input[1:5])
      eps = next((a.f for a in n.attribute if a.name == "epsilon"), 1e-5)
      scale = gamma / np.sqrt(var + eps)
      w = inits[gemm.input[1]]
      inits[gemm.input[1]] = (w * (scale[:, None] if trans_b else scale[None, :])).astype(np.float32)
      b = inits[gemm.input[2]] if len(gemm.input) > 2 else np.zeros_like(scale)
      inits[gemm.input[2]] = ((b - mean) * scale + beta).astype(np.float32)
      gemm.output[0] = n.output[0]
      continue
    nodes.append(n)
  del g.node[:]
  g.node.extend(nodes)
  del g.initializer[:]
  g.initializer.extend(numpy_helper.from_array(v, k) for k, v in inits.items())
  return model


def _activation_params(lo, hi, dtype):
  lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
  scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
  qmin = -128 if dtype == np.int8 else 0
  zp = int(np.clip(round(qmin - lo / float(scale)), qmin, qmin + 255))
  return scale, zp


def quantize(name, models_dir):
  model = _fold_constants_and_batchnorm(onnx.load(os.path.join(models_dir, name + ".onnx")))
  g = model.graph
  x0 = np.load(os.path.join(models_dir, name + ".in0.npy"))
  act_dtype = np.uint8 if name in UINT8_MODELS else np.int8
  act_onnx = TensorProto.UINT8 if act_dtype == np.uint8 else TensorProto.INT8
  inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}

  # The float tail: a Softmax producing the graph output is left out.
  nodes = list(g.node)
  output = g.output[0].name
  if nodes[-1].op_type == "Softmax" and nodes[-1].output[0] == output:
    output = nodes[-1].input[0]
    nodes = nodes[:-1]

  # Calibration ranges of every value.
  rng = np.random.default_rng(7)
  feeds = [x0] + [rng.standard_normal(x0.shape).astype(np.float32)
                  for _ in range(CALIBRATION_INPUTS)]
  interp = ref.FloatInterpreter(model)
  lo, hi = {}, {}
  for x in feeds:
    env = interp.run({g.input[0].name: x})
    for k, v in env.items():
      if k in inits or not isinstance(v, np.ndarray) or v.dtype != np.float32:
        continue
      lo[k] = min(lo.get(k, np.inf), float(v.min()))
      hi[k] = max(hi.get(k, -np.inf), float(v.max()))
  float_out = interp.run({g.input[0].name: x0})[output]

  # Which values get a QuantizeLinear/DequantizeLinear pair: the input and every op result,
  # except an op result that only a Relu/Clip reads (the activation's result is quantized).
  users = {}
  for n in nodes:
    for i in n.input:
      users.setdefault(i, []).append(n)
  params = {}
  input_name = g.input[0].name
  params[input_name] = _activation_params(lo[input_name], hi[input_name], act_dtype)
  for n in nodes:
    y = n.output[0]
    u = users.get(y, [])
    if n.op_type in ("Conv", "Gemm", "Add") and len(u) == 1 and u[0].op_type in ("Relu", "Clip") \
        and y != output:
      continue
    if n.op_type in ("MaxPool", "Flatten", "Reshape"):
      params[y] = params[n.input[0]]
    else:
      params[y] = _activation_params(lo[y], hi[y], act_dtype)

  new_nodes, new_inits = [], []
  for k, v in inits.items():
    new_inits.append(numpy_helper.from_array(v, k))

  def qdq(value):
    scale, zp = params[value]
    new_inits.append(numpy_helper.from_array(np.array(scale, np.float32), value + "_scale"))
    new_inits.append(numpy_helper.from_array(np.array(zp, act_dtype), value + "_zp"))
    q = value + "_q" if value != output else "output"
    new_nodes.append(helper.make_node("QuantizeLinear", [value, value + "_scale", value + "_zp"],
                                      [q], name=value + "_Q"))
    if value != output:
      new_nodes.append(helper.make_node("DequantizeLinear", [q, value + "_scale", value + "_zp"],
                                        [value + "_dq"], name=value + "_DQ"))

  def weights(w_name):
    """int8 per-channel symmetric weights behind a DequantizeLinear (axis 0)."""
    w = inits[w_name]
    flat = w.reshape(w.shape[0], -1)
    scale = (np.abs(flat).max(axis=1) / 127.0).astype(np.float32)
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(flat / scale[:, None]), -127, 127).astype(np.int8).reshape(w.shape)
    new_inits.append(numpy_helper.from_array(q, w_name + "_int8"))
    new_inits.append(numpy_helper.from_array(scale, w_name + "_wscale"))
    new_inits.append(numpy_helper.from_array(np.zeros_like(scale, np.int8), w_name + "_wzp"))
    new_nodes.append(helper.make_node(
        "DequantizeLinear", [w_name + "_int8", w_name + "_wscale", w_name + "_wzp"],
        [w_name + "_dq"], axis=0, name=w_name + "_DQ"))
    return scale

  def bias(b_name, accumulator_scale):
    b = inits[b_name]
    q = np.clip(np.rint(b / accumulator_scale), -(1 << 31), (1 << 31) - 1).astype(np.int32)
    new_inits.append(numpy_helper.from_array(q, b_name + "_int32"))
    new_inits.append(numpy_helper.from_array(accumulator_scale.astype(np.float32),
                                             b_name + "_bscale"))
    new_nodes.append(helper.make_node("DequantizeLinear", [b_name + "_int32", b_name + "_bscale"],
                                      [b_name + "_dq"], axis=0, name=b_name + "_DQ"))

  def read(value):
    return value + "_dq" if value in params else value

  qdq(input_name)
  for n in nodes:
    n = onnx.NodeProto.FromString(n.SerializeToString())
    data = list(n.input)
    if n.op_type in ("Conv", "Gemm"):
      trans_b = n.op_type == "Gemm" and any(a.name == "transB" and a.i for a in n.attribute)
      if n.op_type == "Gemm" and not trans_b:
        inits[data[1]] = np.ascontiguousarray(inits[data[1]].T)
        for a in list(n.attribute):
          if a.name == "transB":
            n.attribute.remove(a)
        n.attribute.append(helper.make_attribute("transB", 1))
      sw = weights(data[1])
      sx = params[data[0]][0]
      if len(data) > 2 and data[2]:
        bias(data[2], np.float32(sx) * sw)
        data[2] = data[2] + "_dq"
      data[1] = data[1] + "_dq"
      data[0] = read(data[0])
    else:
      data = [read(i) if i in params else i for i in data]
    del n.input[:]
    n.input.extend(data)
    new_nodes.append(n)
    if n.output[0] in params:
      qdq(n.output[0])

  out_info = helper.make_tensor_value_info("output", act_onnx, list(float_out.shape))
  graph = helper.make_graph(new_nodes, name + "_qdq", [g.input[0]], [out_info], new_inits)
  qmodel = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="osprey-qdq")
  qmodel.ir_version = 7
  onnx.checker.check_model(qmodel)
  reference = ref.QdqInterpreter(qmodel).run({input_name: x0})["output"]
  return qmodel, x0, reference, float_out.astype(np.float32)


def with_float_output(qmodel):
  """|qmodel| with a DequantizeLinear after its QuantizeLinear output; and its (scale, zp)."""
  model = onnx.ModelProto()
  model.CopyFrom(qmodel)
  g = model.graph
  q = next(n for n in g.node if n.output[0] == "output")
  q.output[0] = "output_q"
  g.node.append(helper.make_node("DequantizeLinear", ["output_q", q.input[1], q.input[2]],
                                 ["output"], name="output_DQ"))
  shape = [d.dim_value for d in g.output[0].type.tensor_type.shape.dim]
  del g.output[:]
  g.output.append(helper.make_tensor_value_info("output", TensorProto.FLOAT, shape))
  onnx.checker.check_model(model)
  values = {t.name: numpy_helper.to_array(t) for t in g.initializer}
  return model, values[q.input[1]], values[q.input[2]]


def snr_db(reference, approx):
  noise = np.sum((reference.astype(np.float64) - approx) ** 2)
  signal = np.sum(reference.astype(np.float64) ** 2)
  return float("inf") if noise == 0 else 10 * np.log10(signal / noise)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--models-dir", required=True, help="export_models.py output")
  parser.add_argument("--out", required=True)
  parser.add_argument("--models", default=",".join(MODELS))
  parser.add_argument("--cached", action="store_true",
                      help="keep outputs newer than their float model and these scripts")
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  here = os.path.dirname(os.path.abspath(__file__))
  script_time = max(os.path.getmtime(os.path.join(here, f))
                    for f in ("make_qdq_models.py", "int8_reference.py"))
  for name in [m for m in args.models.split(",") if m]:
    base = os.path.join(args.out, name + "_qdq")
    files = [base + s for s in (".onnx", ".in0.npy", ".ref0.npy", ".float0.npy", "_f32.onnx",
                                "_f32.in0.npy", "_f32.ref0.npy")]
    src = os.path.join(args.models_dir, name + ".onnx")
    if args.cached and all(os.path.exists(f) and os.path.getmtime(f) > max(
        script_time, os.path.getmtime(src)) for f in files):
      continue
    qmodel, x0, reference, float_out = quantize(name, args.models_dir)
    onnx.save(qmodel, files[0])
    np.save(files[1], x0)
    np.save(files[2], reference)
    np.save(files[3], float_out)
    fmodel, scale, zp = with_float_output(qmodel)
    approx = ref.dequantize_linear(reference, scale, zp)
    onnx.save(fmodel, files[4])
    np.save(files[5], x0)
    np.save(files[6], approx.astype(np.float32))
    print(f"{name}: SNR of the integer reference vs float {snr_db(float_out, approx):.1f} dB",
          file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
