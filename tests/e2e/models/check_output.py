#!/usr/bin/python3
"""Compares a model output written by osprey-run with its reference.

check_output.py ACTUAL.npy REFERENCE.npy TOLERANCE
Passes when every element satisfies |actual - ref| <= TOLERANCE * max(1, max|ref|): the error is
measured against the scale of the whole output, because randomly initialized deep networks can
produce logits in the hundreds where float32 accumulation error grows with that scale.
"""
import sys

import numpy as np

actual = np.load(sys.argv[1])
ref = np.load(sys.argv[2])
tolerance = float(sys.argv[3])
if actual.dtype != ref.dtype or actual.shape != ref.shape:
  sys.exit(f"{sys.argv[1]}: {actual.dtype}{actual.shape} != reference {ref.dtype}{ref.shape}")
if not np.all(np.isfinite(actual)):
  sys.exit(f"{sys.argv[1]}: non-finite values")
scale = max(1.0, float(np.max(np.abs(ref))))
err = np.abs(actual.astype(np.float64) - ref.astype(np.float64))
worst = int(np.argmax(err))
bad = int(np.count_nonzero(err > tolerance * scale))
msg = (f"{sys.argv[1]}: max abs error {err.flat[worst]:.3g} at element {worst} "
       f"(reference scale {scale:.3g}, tolerance {tolerance:g} x scale)")
if bad:
  sys.exit(f"{msg}: {bad} of {err.size} elements differ")
print(msg + ": ok")
