#!/usr/bin/python3
"""Writes one small single-operator ONNX model with non-f32 tensors for the
llvm-cpu typed code generation lit tests: make_typed_model.py NAME OUT.onnx."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I32, I64, B = (TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64,
                  TensorProto.BOOL)


def model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(
        nodes, "typed",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


MODELS = {
    # Embedding lookup: int64 ids index a constant table at run time.
    "gather": lambda: model(
        [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)],
        [("ids", I64, [5])], [("y", F, [5, 3])],
        [numpy_helper.from_array(
            np.arange(30, dtype=np.float32).reshape(10, 3), "table")]),
    "less": lambda: model(
        [helper.make_node("Less", ["a", "b"], ["y"])],
        [("a", F, [16]), ("b", F, [16])], [("y", B, [16])]),
    "cast_f32_i32": lambda: model(
        [helper.make_node("Cast", ["x"], ["y"], to=I32)],
        [("x", F, [16])], [("y", I32, [16])]),
    "tanh_f64": lambda: model(
        [helper.make_node("Tanh", ["x"], ["y"], name="tanh")],
        [("x", TensorProto.DOUBLE, [16])], [("y", TensorProto.DOUBLE, [16])]),
    "cast_i64_f32": lambda: model(
        [helper.make_node("Cast", ["x"], ["y"], to=F)],
        [("x", I64, [16])], [("y", F, [16])]),
    "div_i32": lambda: model(
        [helper.make_node("Div", ["a", "b"], ["y"])],
        [("a", I32, [16]), ("b", I32, [16])], [("y", I32, [16])]),
    "div_i64": lambda: model(
        [helper.make_node("Div", ["a", "b"], ["y"], name="div64")],
        [("a", I64, [16]), ("b", I64, [16])], [("y", I64, [16])]),
    "add_i64": lambda: model(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        [("a", I64, [16]), ("b", I64, [16])], [("y", I64, [16])]),
    "where": lambda: model(
        [helper.make_node("Where", ["c", "a", "b"], ["y"])],
        [("c", B, [16]), ("a", F, [16]), ("b", F, [16])], [("y", F, [16])]),
}

if __name__ == "__main__":
    onnx.save(MODELS[sys.argv[1]](), sys.argv[2])
