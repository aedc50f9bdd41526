#!/usr/bin/python3
"""Compares the integer output of a quantized model with its integer reference.

check_int8.py ACTUAL.npy REFERENCE.npy FLOAT.npy MODEL.onnx [--min-snr DB]
Passes when ACTUAL equals REFERENCE element for element (same dtype and shape) and the output,
dequantized with the scale and zero point of the model's output QuantizeLinear, has a
signal-to-noise ratio against FLOAT (the float model's value) of at least --min-snr dB (default 5:
a floor that catches a broken quantization, not a quality target). Prints the bit-exact count and
the SNR.
"""
import argparse
import sys

import numpy as np


def output_quantization(model_path):
  import onnx  # pylint: disable=import-outside-toplevel
  from onnx import numpy_helper  # pylint: disable=import-outside-toplevel
  model = onnx.load(model_path)
  out = model.graph.output[0].name
  inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
  q = next(n for n in model.graph.node if n.output[0] == out)
  return float(inits[q.input[1]]), int(inits[q.input[2]])


def snr_db(reference, approx):
  noise = float(np.sum((reference.astype(np.float64) - approx) ** 2))
  signal = float(np.sum(reference.astype(np.float64) ** 2))
  return float("inf") if noise == 0 else 10 * np.log10(signal / noise)


def check(actual, ref, float_out, scale, zp, min_snr):
  """Returns (ok, message)."""
  if actual.dtype != ref.dtype or actual.shape != ref.shape:
    return False, f"{actual.dtype}{actual.shape} != reference {ref.dtype}{ref.shape}"
  same = int(np.count_nonzero(actual == ref))
  approx = (actual.astype(np.float32) - np.float32(zp)) * np.float32(scale)
  snr = snr_db(float_out, approx.astype(np.float64))
  msg = f"bit-exact {same}/{ref.size}, SNR vs float {snr:.1f} dB"
  if same != ref.size:
    worst = int(np.argmax(np.abs(actual.astype(np.int64) - ref.astype(np.int64))))
    return False, msg + f" (element {worst}: {actual.flat[worst]} vs {ref.flat[worst]})"
  if not snr >= min_snr:
    return False, msg + f" below {min_snr} dB"
  return True, msg


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("actual")
  parser.add_argument("reference")
  parser.add_argument("float")
  parser.add_argument("model")
  parser.add_argument("--min-snr", type=float, default=5.0)
  args = parser.parse_args()
  scale, zp = output_quantization(args.model)
  ok, msg = check(np.load(args.actual), np.load(args.reference), np.load(args.float), scale, zp,
                  args.min_snr)
  print(f"{args.actual}: {msg}")
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())
