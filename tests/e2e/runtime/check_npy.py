"""Checks that a .npy file written by osprey-run loads in NumPy and equals
the expected array: check_npy.py ACTUAL EXPECTED."""
import sys

import numpy as np

actual = np.load(sys.argv[1])
expected = np.load(sys.argv[2])
if actual.dtype != expected.dtype or actual.shape != expected.shape:
    sys.exit(f"{sys.argv[1]}: {actual.dtype}{actual.shape} != {expected.dtype}{expected.shape}")
if not np.array_equal(actual, expected):
    sys.exit(f"{sys.argv[1]}: {actual} != {expected}")
print(f"{sys.argv[1]} matches {sys.argv[2]}: {actual}")
