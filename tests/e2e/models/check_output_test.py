#!/usr/bin/python3
"""Checks that check_output.py accepts outputs within tolerance and rejects the rest."""
import os
import subprocess
import sys
import tempfile

import numpy as np

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_output.py")


def check(actual, ref, tolerance="1e-4"):
  with tempfile.TemporaryDirectory() as d:
    a, r = os.path.join(d, "a.npy"), os.path.join(d, "r.npy")
    np.save(a, actual)
    np.save(r, ref)
    return subprocess.run([sys.executable, CHECK, a, r, tolerance], capture_output=True,
                          text=True).returncode == 0


def main():
  rng = np.random.default_rng(0)
  ref = (rng.standard_normal((1, 1000)) * 2).astype(np.float32)
  scale = float(np.max(np.abs(ref)))
  cases = []

  def expect(name, ok, actual, reference=ref):
    cases.append((name, ok, check(actual, reference)))

  expect("identical", True, ref)
  near = ref.copy()
  near[0, 7] += 0.5e-4 * scale
  expect("one element at half the tolerance", True, near)
  far = ref.copy()
  far[0, 7] += 2e-4 * scale
  expect("one element at twice the tolerance", False, far)
  # Below magnitude 1 the tolerance is absolute: 1e-4, not 1e-4 of a tiny scale.
  small = np.full((1, 10), 1e-3, np.float32)
  expect("small output within 1e-4 absolute", True, small + np.float32(5e-5), small)
  expect("small output beyond 1e-4 absolute", False, small + np.float32(2e-4), small)
  nan = ref.copy()
  nan[0, 3] = np.nan
  expect("NaN", False, nan)
  expect("shape mismatch", False, ref.reshape(1000, 1))
  expect("dtype mismatch", False, ref.astype(np.float64))

  failed = [(name, ok, got) for name, ok, got in cases if ok != got]
  for name, ok, got in failed:
    print(f"FAIL {name}: expected {'pass' if ok else 'reject'}, got {'pass' if got else 'reject'}")
  print(f"{len(cases) - len(failed)} of {len(cases)} cases as expected")
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
