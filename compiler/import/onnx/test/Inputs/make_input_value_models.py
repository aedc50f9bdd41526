"""Models for input_value.test. rate_switch: an If on a graph input (a
sample rate): 16000 doubles x, anything else sums it, so the two branches
have different types; w is an input with an initializer (a constant).
counted_loop: a Loop whose trip count is a graph input, doubling x on each
iteration. nested_loop: 300 iterations of a Loop of 300 iterations, more
body nodes than unrolling allows."""
import os
import sys

import onnx
from onnx import TensorProto, helper


def branch(name, node, out_shape):
    return helper.make_graph(
        [node], name, [],
        [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, out_shape)])


then_branch = branch("double", helper.make_node("Mul", ["x", "two"], ["doubled"]),
                     [1, "n"])
else_branch = branch("sum", helper.make_node("ReduceSum", ["x"], ["summed"],
                                             keepdims=0), [1])
graph = helper.make_graph(
    [helper.make_node("Equal", ["sr", "rate"], ["is_rate"], name="equal"),
     helper.make_node("If", ["is_rate"], ["y"], name="switch",
                      then_branch=then_branch, else_branch=else_branch),
     helper.make_node("Mul", ["x", "w"], ["z"], name="scale")],
    "rate_switch",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"]),
     helper.make_tensor_value_info("sr", TensorProto.INT64, []),
     helper.make_tensor_value_info("w", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, "n"])],
    initializer=[helper.make_tensor("rate", TensorProto.INT64, [], [16000]),
                 helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
                 helper.make_tensor("w", TensorProto.FLOAT, [1], [0.5])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, os.path.join(sys.argv[1], "rate_switch.onnx"))

body = helper.make_graph(
    [helper.make_node("Identity", ["c"], ["c_out"]),
     helper.make_node("Add", ["acc", "acc"], ["acc_out"])],
    "double", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
               helper.make_tensor_value_info("c", TensorProto.BOOL, []),
               helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2])])
graph = helper.make_graph(
    [helper.make_node("Loop", ["M", "", "x"], ["y"], name="repeat", body=body)],
    "counted_loop",
    [helper.make_tensor_value_info("M", TensorProto.INT64, []),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]),
          os.path.join(sys.argv[1], "counted_loop.onnx"))

def counted(name, inits, nodes, value):
    body = helper.make_graph(
        [helper.make_node("Identity", [name + "_c"], [name + "_c_out"])] + nodes,
        name + "_body", [helper.make_tensor_value_info(name + "_i", TensorProto.INT64, []),
                         helper.make_tensor_value_info(name + "_c", TensorProto.BOOL, []),
                         helper.make_tensor_value_info(value, TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(name + "_c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info(value + "_out", TensorProto.FLOAT, [2])],
        initializer=inits)
    return body


inner = counted("inner", [], [helper.make_node("Add", ["b", "b"], ["b_out"])], "b")
outer = counted("outer", [helper.make_tensor("m_inner", TensorProto.INT64, [], [300])], [helper.make_node("Loop", ["m_inner", "", "a"], ["a_out"],
                                                      body=inner)], "a")
graph = helper.make_graph(
    [helper.make_node("Constant", [], ["m"], value=helper.make_tensor("m", TensorProto.INT64, [], [300])),
     helper.make_node("Loop", ["m", "", "x"], ["y"], name="outer", body=outer)],
    "nested_loop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]),
          os.path.join(sys.argv[1], "nested_loop.onnx"))
