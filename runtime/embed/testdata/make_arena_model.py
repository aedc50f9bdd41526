"""Writes a small ONNX model whose compiled form needs a transient arena,
plus its float32 output for fixed inputs.

  make_arena_model.py OUT.onnx OUT_EXPECTED.bin

Inputs a, b: 4xf32; output y = softmax((a + b) . W) + a with a fixed 4x4 W.
The test feeds a = [1, 2, 3, 4], b = [0.5, -1, 0.25, -2].
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

W = (np.arange(16, dtype=np.float32).reshape(4, 4) - 7.5) / 16.0
A = np.array([1, 2, 3, 4], dtype=np.float32)
B = np.array([0.5, -1, 0.25, -2], dtype=np.float32)


def main():
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"]),
        helper.make_node("Reshape", ["s", "shape14"], ["s2"]),
        helper.make_node("MatMul", ["s2", "w"], ["m"]),
        helper.make_node("Reshape", ["m", "shape4"], ["m1"]),
        helper.make_node("Softmax", ["m1"], ["p"], axis=0),
        helper.make_node("Add", ["p", "a"], ["y"]),
    ]
    initializers = [
        numpy_helper.from_array(W, "w"),
        numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "shape14"),
        numpy_helper.from_array(np.array([4], dtype=np.int64), "shape4"),
    ]
    graph = helper.make_graph(
        nodes, "arena_model",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, sys.argv[1])

    m = ((A + B).astype(np.float64) @ W.astype(np.float64))
    p = np.exp(m - m.max())
    p /= p.sum()
    (p + A).astype(np.float32).tofile(sys.argv[2])


if __name__ == "__main__":
    main()
