#!/usr/bin/python3
"""Writes one small ONNX model with a 3x3 convolution (constant weights and
bias, ReLU) for the Winograd lit tests: make_winograd_model.py NAME OUT.onnx.
NAME is CHANNELS_MAP_STRIDE, e.g. 32_28_1 (32 -> 32 channels, 28x28 map)."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(channels, size, stride):
    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (channels, channels, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, channels).astype(np.float32)
    out = (size + 2 - 3) // stride + 1
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[stride, stride]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "wino",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [1, channels, out, out])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


if __name__ == "__main__":
    channels, size, stride = (int(v) for v in sys.argv[1].split("_"))
    onnx.save(model(channels, size, stride), sys.argv[2])
