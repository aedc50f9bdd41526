"""Models of the ai.onnx.preview.training domain for training_domain.test:
a Momentum step, the same with a default-domain node the model does not
import, and a Momentum with an unknown mode."""
import os
import sys

import onnx
from onnx import TensorProto, helper

DOMAIN = "ai.onnx.preview.training"


def momentum_model(extra_nodes=(), mode="standard"):
    node = helper.make_node("Momentum", ["R", "T", "X", "G", "V"],
                            ["X_new", "V_new"], name="momentum",
                            domain=DOMAIN, alpha=0.9, beta=0.5,
                            norm_coefficient=0.0, mode=mode)
    tensor = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [3])
    graph = helper.make_graph(
        [node] + list(extra_nodes), "training",
        [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("T", TensorProto.INT64, []),
         tensor("X"), tensor("G"), tensor("V")],
        [tensor("X_new"), tensor("V_new")] +
        ([tensor("Y")] if extra_nodes else []))
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid(DOMAIN, 1)])


out = sys.argv[1]
onnx.save(momentum_model(), os.path.join(out, "momentum.onnx"))
onnx.save(momentum_model([helper.make_node("Relu", ["X_new"], ["Y"], name="relu")]),
          os.path.join(out, "default_node.onnx"))
onnx.save(momentum_model(mode="heavy_ball"), os.path.join(out, "bad_mode.onnx"))
