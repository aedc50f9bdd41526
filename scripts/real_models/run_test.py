#!/usr/bin/python3
"""Checks run.py's comparison, expectations and inputs without models or network."""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402


class CompareTest(unittest.TestCase):

  def test_error_is_relative_to_the_output_scale(self):
    ref = np.array([100.0, -50.0, 3.0], np.float32)
    err, problem = run.compare(ref + np.float32(0.01), ref, 1.0)
    self.assertIsNone(problem)
    self.assertAlmostEqual(err, 1e-4, places=6)

  def test_scale_floor_applies_to_small_outputs(self):
    ref = np.array([1e-5, 2e-5], np.float32)
    err, _ = run.compare(ref + np.float32(1e-7), ref, 1.0)
    self.assertLess(err, 2e-7)
    err, _ = run.compare(ref + np.float32(1e-7), ref, 1e-6)
    self.assertGreater(err, 4e-3)

  def test_mismatches_are_infinite_errors(self):
    ref = np.zeros((2, 3), np.float32)
    self.assertEqual(run.compare(np.zeros((3, 2), np.float32), ref, 1.0)[0], float("inf"))
    self.assertEqual(run.compare(np.zeros((2, 3), np.float64), ref, 1.0)[0], float("inf"))
    nan = ref.copy()
    nan[0, 0] = np.nan
    self.assertIsNotNone(run.compare(nan, ref, 1.0)[1])
    self.assertIsNotNone(run.compare(ref, nan, 1.0)[1])
    self.assertIsNone(run.compare(nan, nan, 1.0)[1])
    inf = ref.copy()
    inf[1, 2] = np.inf
    self.assertIsNotNone(run.compare(-inf, inf, 1.0)[1])


class ExpectationTest(unittest.TestCase):
  model = {"expect": "refused", "expect_message": "unsupported operator"}

  def test_wrong_never_meets_an_expectation(self):
    for expect in ("match", "refused"):
      self.assertFalse(run.expectation_met(dict(self.model, expect=expect),
                                           {"status": "WRONG", "message": "x"}))

  def test_refusal_must_carry_the_recorded_message(self):
    self.assertTrue(run.expectation_met(
        self.model, {"status": "refused", "message": "error: 1 unsupported operator: If"}))
    self.assertFalse(run.expectation_met(self.model,
                                         {"status": "refused", "message": "error: other"}))
    self.assertFalse(run.expectation_met(dict(self.model, expect="match"),
                                         {"status": "refused", "message": "unsupported operator"}))
    self.assertFalse(run.expectation_met(self.model, {"status": "compiler crash",
                                                      "message": "unsupported operator"}))
    self.assertTrue(run.expectation_met(self.model, {"status": "matches"}))


class InputTest(unittest.TestCase):
  model = {"name": "m", "inputs": {"x": {"shape": [2, 8], "range": [-3.0, 5.0],
                                          "reference": {"kind": "ramp"}},
                                    "n": {"shape": [], "dtype": "int64", "value": 7}}}

  def test_cases_stay_in_range_and_are_reproducible(self):
    cases = run.case_names(self.model, 2)
    self.assertEqual(cases, ["reference", "random1", "random2", "zeros", "extremes"])
    for case in cases:
      v = run.input_value(self.model, "x", self.model["inputs"]["x"], case)
      self.assertEqual((v.dtype, v.shape), (np.float32, (2, 8)))
      self.assertTrue(np.all((v >= -3.0) & (v <= 5.0)), case)
      np.testing.assert_array_equal(
          v, run.input_value(self.model, "x", self.model["inputs"]["x"], case))
    extremes = run.input_value(self.model, "x", self.model["inputs"]["x"], "extremes")
    self.assertEqual(set(extremes.ravel().tolist()), {-3.0, 5.0})
    n = run.input_value(self.model, "n", self.model["inputs"]["n"], "random1")
    self.assertEqual((n.dtype, n.shape, int(n)), (np.int64, (), 7))

  def test_text_lines_reference_has_ink_and_paper(self):
    spec = {"shape": [1, 3, 48, 192], "range": [-1.0, 1.0],
            "reference": {"kind": "text_lines", "mean": [0.5] * 3, "std": [0.5] * 3}}
    v = run.reference_value(spec)
    self.assertAlmostEqual(float(v.max()), 1.0)
    self.assertLess(float(v.min()), -0.7)
    self.assertGreater(float((v < 0).mean()), 0.05)


if __name__ == "__main__":
  unittest.main()
