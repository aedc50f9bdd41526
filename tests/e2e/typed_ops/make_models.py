#!/usr/bin/python3
"""Writes the typed-tensor e2e models with numpy reference outputs.

Per model MODEL: OUT/MODEL.onnx, inputs OUT/MODEL.in<i>.npy and references
OUT/MODEL.ref<i>.npy (compared by osprey-run). Models:
  embedding:      int64 token ids -> Gather from an embedding table (run-time
                  indices, negative ids count from the end), a padding mask
                  from Equal and Cast, and a bool output from Less.
  int_arith:      int32 arithmetic with ONNX semantics (Div truncates toward
                  zero), Cast f32 -> int32 (truncation) and int32 -> f32,
                  Where with a run-time bool condition, int64 outputs.
  embedding_oob:  the embedding model with an id past the table; osprey-run
                  must fail with an error naming the dispatch region.
  gather_elements_oob: GatherElements with a run-time index past the data
                  (and one below -D); fails the same way.
"""

import argparse
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def save(out, name, model, inputs, refs):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    for i, a in enumerate(inputs):
        np.save(os.path.join(out, "%s.in%d.npy" % (name, i)), a)
    for i, a in enumerate(refs):
        np.save(os.path.join(out, "%s.ref%d.npy" % (name, i)), a)


def embedding_model(table):
    vocab, dim = table.shape
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
        helper.make_node("Equal", ["ids", "pad_id"], ["is_pad"]),
        helper.make_node("Cast", ["is_pad"], ["pad_f"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "pad_f"], ["keep"]),
        helper.make_node("Unsqueeze", ["keep", "axes"], ["keep3"]),
        helper.make_node("Mul", ["emb", "keep3"], ["y"]),
        helper.make_node("Less", ["ids", "pad_id"], ["negative"]),
    ]
    graph = helper.make_graph(
        nodes, "embedding",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6, dim]),
         helper.make_tensor_value_info("negative", TensorProto.BOOL, [2, 6])],
        [numpy_helper.from_array(table, "table"),
         numpy_helper.from_array(np.array(0, np.int64), "pad_id"),
         numpy_helper.from_array(np.array(1, np.float32), "one"),
         numpy_helper.from_array(np.array([2], np.int64), "axes")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def embedding_ref(table, ids):
    emb = np.take(table, ids, axis=0)
    keep = (ids != 0).astype(np.float32)[:, :, None]
    return [emb * keep, ids < 0]


def int_arith_model():
    nodes = [
        helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT32),
        helper.make_node("Div", ["xi", "d"], ["q"]),
        helper.make_node("Mul", ["q", "d"], ["qd"]),
        helper.make_node("Sub", ["xi", "qd"], ["r"]),
        helper.make_node("Greater", ["r", "zero"], ["pos"]),
        helper.make_node("Where", ["pos", "xi", "q"], ["w"]),
        helper.make_node("Cast", ["w"], ["w64"], to=TensorProto.INT64),
        helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes, "int_arith",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8]),
         helper.make_tensor_value_info("d", TensorProto.INT32, [8])],
        [helper.make_tensor_value_info("w64", TensorProto.INT64, [3, 8]),
         helper.make_tensor_value_info("rf", TensorProto.FLOAT, [3, 8])],
        [numpy_helper.from_array(np.array(0, np.int32), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def int_arith_ref(x, d):
    xi = np.trunc(x).astype(np.int32)
    q = (np.trunc(xi / d)).astype(np.int32)
    r = xi - q * d
    w = np.where(r > 0, xi, q)
    return [w.astype(np.int64), r.astype(np.float32)]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.RandomState(11)

    table = rng.randn(40, 8).astype(np.float32)
    model = embedding_model(table)
    ids = np.array([[5, 39, 0, -1, 17, 0], [-40, 2, 2, 38, 0, 11]], np.int64)
    save(args.out, "embedding", model, [ids], embedding_ref(table, ids))
    bad = ids.copy()
    bad[1, 3] = 40
    save(args.out, "embedding_oob", model, [bad], embedding_ref(table, ids))

    data = rng.randn(4, 3).astype(np.float32)
    idx = np.array([[0, 3, -4], [5, 1, 2]], np.int64)
    graph = helper.make_graph(
        [helper.make_node("GatherElements", ["data", "idx"], ["y"], axis=0)],
        "gather_elements_oob",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(data, "data")])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    save(args.out, "gather_elements_oob", model, [idx],
         [np.zeros((2, 3), np.float32)])

    x = (rng.randn(3, 8) * 20).astype(np.float32)
    d = np.array([3, -3, 7, -7, 1, -1, 5, 2], np.int32)
    save(args.out, "int_arith", int_arith_model(), [x, d],
         int_arith_ref(x, d))
    return 0


if __name__ == "__main__":
    main()
