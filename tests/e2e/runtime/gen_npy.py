"""Writes the .npy inputs and expected outputs of the runtime e2e tests with
NumPy, so the tools' .npy reader is checked against NumPy's writer."""
import sys

import numpy as np

out_dir = sys.argv[1]
a = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
# Big-endian on disk: the reader must byte-swap.
b = np.array([10.0, 20.0, 30.0, 40.0], dtype=">f4")
np.save(f"{out_dir}/a.npy", a)
np.save(f"{out_dir}/b.npy", b)
np.save(f"{out_dir}/expected_add.npy", (a + b.astype(np.float32)).astype(np.float32))
np.save(f"{out_dir}/expected_scale.npy", (a * np.float32(2.5)).astype(np.float32))
np.save(f"{out_dir}/wrong_shape.npy", np.ones((2, 2), dtype=np.float32))
np.save(f"{out_dir}/wrong_type.npy", np.ones((4,), dtype=np.int32))

# cpu_npu: the NPU computes clamp(2 * max(x, 0)) of 64 int8 values (zeros,
# negatives, both extremes and values whose double saturates).
x = np.array([-128, -127, -1, 0, 1, 63, 64, 127] + list(range(-56, 56, 2)), dtype=np.int8)
assert x.size == 64
np.save(f"{out_dir}/x_i8.npy", x)
np.save(f"{out_dir}/expected_relu2.npy",
        np.clip(2 * np.maximum(x.astype(np.int32), 0), -128, 127).astype(np.int8))
