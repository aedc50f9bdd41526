#!/usr/bin/python3
"""Checks check_int8.py: equal integers pass, one differing unit, a type or shape mismatch and a
low SNR fail."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_int8 import check  # noqa: E402

ref = np.array([[-3, 0, 5, 127, -128]], np.int8)
floats = (ref.astype(np.float32) - 1) * 0.5
failures = []
ok, _ = check(ref.copy(), ref, floats, 0.5, 1, 5.0)
if not ok:
  failures.append("identical outputs rejected")
off = ref.copy()
off[0, 2] += 1
if check(off, ref, floats, 0.5, 1, 5.0)[0]:
  failures.append("a one-unit difference accepted")
if check(ref.astype(np.int16), ref, floats, 0.5, 1, 5.0)[0]:
  failures.append("a dtype mismatch accepted")
if check(ref.reshape(5, 1), ref, floats, 0.5, 1, 5.0)[0]:
  failures.append("a shape mismatch accepted")
if check(ref.copy(), ref, -floats, 0.5, 1, 5.0)[0]:
  failures.append("a negative SNR accepted")
if failures:
  sys.exit("; ".join(failures))
print("check_int8: ok")
