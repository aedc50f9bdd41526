#!/usr/bin/python3
"""Builds the small ONNX models used by the compiler importer tests.

Usage: make_compiler_test_models.py --out DIR

Every model is built with onnx.helper (no framework needed) and uses fixed
random seeds, so the files are identical from run to run.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out_dir, name, check=False):
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name))


def make_model(nodes, inputs, outputs, initializers, name, opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)],
        producer_name="osprey-tests")


def const(rng, name, shape, scale=0.5):
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * scale).astype(np.float32), name)


def conv_bn_relu(out_dir):
    rng = np.random.default_rng(1)
    inits = [
        const(rng, "w", (8, 3, 3, 3)),
        const(rng, "b", (8,)),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "gamma"),
        const(rng, "beta", (8,)),
        const(rng, "mean", (8,)),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float32), "var"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv0",
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization",
                         ["c", "gamma", "beta", "mean", "var"], ["bn"],
                         name="bn0", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["y"], name="relu0"),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
        "conv_bn_relu")
    save(model, out_dir, "conv_bn_relu.onnx")


def gemm(out_dir):
    rng = np.random.default_rng(2)
    inits = [const(rng, "w", (10, 16)), const(rng, "bias", (10,))]
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w", "bias"], ["y"], name="fc",
                         transB=1, alpha=1.0, beta=1.0),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
        "gemm")
    save(model, out_dir, "gemm.onnx")


def transformer_block(out_dir):
    """Single-head self-attention + MLP with LayerNormalization (opset 17)."""
    rng = np.random.default_rng(3)
    seq, dim, hidden = 8, 16, 32
    inits = [
        const(rng, "wq", (dim, dim)), const(rng, "wk", (dim, dim)),
        const(rng, "wv", (dim, dim)), const(rng, "wo", (dim, dim)),
        const(rng, "w1", (dim, hidden)), const(rng, "w2", (hidden, dim)),
        numpy_helper.from_array(np.ones(dim, np.float32), "ln_scale"),
        numpy_helper.from_array(np.zeros(dim, np.float32), "ln_bias"),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(dim), np.float32), "inv_sqrt_d"),
    ]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln_scale", "ln_bias"],
                         ["ln"], name="ln0", axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["ln", "wk"], ["k"], name="k_proj"),
        helper.make_node("MatMul", ["ln", "wv"], ["v"], name="v_proj"),
        helper.make_node("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        helper.make_node("Mul", ["scores", "inv_sqrt_d"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["attn", "v"], ["ctx"], name="av"),
        helper.make_node("MatMul", ["ctx", "wo"], ["o"], name="o_proj"),
        helper.make_node("Add", ["x", "o"], ["res1"], name="residual1"),
        helper.make_node("MatMul", ["res1", "w1"], ["h"], name="fc1"),
        helper.make_node("Erf", ["h"], ["h_erf"], name="gelu_erf"),
        helper.make_node("Mul", ["h", "h_erf"], ["h_act"], name="gelu_mul"),
        helper.make_node("MatMul", ["h_act", "w2"], ["mlp"], name="fc2"),
        helper.make_node("Add", ["res1", "mlp"], ["y"], name="residual2"),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
        "transformer_block", opset=17)
    save(model, out_dir, "transformer_block.onnx")


def unsupported_ops(out_dir):
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("LpNormalization", ["a"], ["b"], name="lpnorm0"),
        helper.make_node("NonZero", ["b"], ["y"], name="nonzero0"),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)], [],
        "unsupported")
    save(model, out_dir, "unsupported_ops.onnx")


def bad_group(out_dir):
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="Conv_17", group=3)]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [const(rng, "w", (6, 2, 3, 3))], "bad_group")
    save(model, out_dir, "bad_group.onnx", check=False)


def old_opset_ops(out_dir):
    """Opset 11 forms: Squeeze/Unsqueeze/ReduceMean axes and Split as attributes."""
    nodes = [
        helper.make_node("Unsqueeze", ["x"], ["u"], name="unsq", axes=[0]),
        helper.make_node("Split", ["u"], ["s0", "s1"], name="split", axis=2,
                         split=[1, 3]),
        helper.make_node("ReduceMean", ["s1"], ["m"], name="mean", axes=[2],
                         keepdims=1),
        helper.make_node("Squeeze", ["m"], ["y"], name="sq", axes=[0]),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [],
        "old_opset", opset=11)
    save(model, out_dir, "opset11_axes_attrs.onnx")


def shape_chain(out_dir):
    """Reshape whose target shape is computed with Shape/Gather/Concat."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="gather", axis=0),
        helper.make_node("Concat", ["batch", "minus_one"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    inits = [
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
        "shape_chain")
    save(model, out_dir, "shape_chain.onnx")


def external_data(out_dir):
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    data_name = "external_weights.bin"
    with open(os.path.join(out_dir, data_name), "wb") as f:
        f.write(b"\0" * 16)  # the tensor starts at a non-zero offset
        f.write(w.tobytes())
    tensor = TensorProto()
    tensor.name = "w"
    tensor.data_type = TensorProto.FLOAT
    tensor.dims.extend([4, 4])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", data_name), ("offset", "16"), ("length", "64")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [tensor],
        "external_data")
    save(model, out_dir, "external_data.onnx", check=False)
    # Same model pointing past the end of the data file.
    stored = model.graph.initializer[0]
    stored.external_data[1].value = "32"
    save(model, out_dir, "external_data_truncated.onnx", check=False)
    # Same model pointing outside the model folder.
    stored.external_data[1].value = "16"
    stored.external_data[0].value = "../escape.bin"
    save(model, out_dir, "external_data_escape.onnx", check=False)


def many_ops(out_dir):
    """Exercises attribute handling across the supported op list."""
    rng = np.random.default_rng(6)
    inits = [
        const(rng, "dw", (4, 1, 3, 3)),
        const(rng, "ct", (4, 2, 2, 2)),
        numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
        numpy_helper.from_array(np.array([1], np.int64), "s_start"),
        numpy_helper.from_array(np.array([3], np.int64), "s_end"),
        numpy_helper.from_array(np.array([1], np.int64), "s_axes"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "red_axes"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "dw"], ["dwc"], name="depthwise", group=4,
                         auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Clip", ["dwc", "lo", "hi"], ["clip"], name="relu6"),
        helper.make_node("HardSwish", ["clip"], ["hs"], name="hswish"),
        helper.make_node("MaxPool", ["hs"], ["mp"], name="maxpool",
                         kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node("Pad", ["mp", "pads"], ["padded"], name="pad", mode="constant"),
        helper.make_node("Resize", ["padded", "", "scales"], ["up"], name="resize",
                         mode="nearest"),
        helper.make_node("ConvTranspose", ["up", "ct"], ["ctr"], name="deconv",
                         strides=[2, 2]),
        helper.make_node("Slice", ["ctr", "s_start", "s_end", "s_axes"], ["sl"],
                         name="slice"),
        helper.make_node("ReduceSum", ["sl", "red_axes"], ["rs"], name="rsum",
                         keepdims=0),
        helper.make_node("Cast", ["rs"], ["y"], name="cast", to=TensorProto.DOUBLE),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)], inits,
        "many_ops")
    save(model, out_dir, "many_ops.onnx")


def old_opset(out_dir):
    # Opset 9 forms the version converter rewrites: Upsample (-> Resize) and
    # BatchNormalization.
    rng = np.random.default_rng(9)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in (
        ("scale", rng.uniform(0.5, 1.5, 2)), ("bias", rng.standard_normal(2)),
        ("mean", rng.standard_normal(2)), ("var", rng.uniform(0.5, 1.5, 2)),
        ("scales", np.array([1.0, 1.0, 2.0, 2.0])))]
    nodes = [
        helper.make_node("BatchNormalization",
                         ["x", "scale", "bias", "mean", "var"], ["bn"],
                         name="bn"),
        helper.make_node("Upsample", ["bn", "scales"], ["up"], name="up",
                         mode="nearest"),
        helper.make_node("Relu", ["up"], ["y"], name="relu"),
    ]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                              [1, 2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6])],
        inits, "opset9", opset=9)
    save(model, out_dir, "opset9.onnx")
    # A node the opset-9 checker rejects (Relu with two inputs): the
    # converter never sees it.
    nodes = [helper.make_node("Relu", ["x", "x"], ["y"], name="relu")]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [],
        "opset9_invalid", opset=9)
    save(model, out_dir, "opset9_invalid.onnx")
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    model = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [],
        "opset22", opset=22)
    save(model, out_dir, "opset22.onnx")


def malformed(out_dir):
    with open(os.path.join(out_dir, "malformed.onnx"), "wb") as f:
        f.write(b"\x08\x07\x12\xff\xff\xff\xff\x0fthis is not a model")
    # A model in ONNX's text format instead of a binary ModelProto.
    with open(os.path.join(out_dir, "text_model.onnx"), "w") as f:
        f.write('<ir_version: 8, opset_import: ["" : 17]>\n'
                'agraph (float[N] x) => (float[N] y) {\n  y = Relu(x)\n}\n')
    # A node list whose third node has a field with wire type 7.
    model = make_model(
        [helper.make_node("Relu", ["x"], ["a"], name="r0"),
         helper.make_node("Relu", ["a"], ["b"], name="r1"),
         helper.make_node("Relu", ["b"], ["y"], name="r2")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [],
        "bad_wire_type")
    data = bytearray(model.SerializeToString())
    name = data.find(b"\x1a\x02r2")  # NodeProto.name (field 3) of the third node
    assert name > 0
    data[name] = (3 << 3) | 7  # Field 3 with the nonexistent wire type 7.
    with open(os.path.join(out_dir, "bad_wire_type.onnx"), "wb") as f:
        f.write(data)
    # An input dimension of -3: neither a size nor an unknown dimension.
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, -3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [], "negative_dim")
    save(model, out_dir, "negative_dim.onnx", check=False)
    # A Reshape to dimensions whose product overflows 64 bits (found by the
    # ONNX import fuzzer).
    model = make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 48, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(
            np.array([1, 720575940379279363, 1090521620, 8], np.int64), "shape")],
        "reshape_overflow")
    save(model, out_dir, "reshape_overflow.onnx")
    # A Resize scale whose output extent does not fit 64 bits (fuzzer too).
    model = make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1, 1e30, 1], np.float32), "scales")],
        "resize_overflow")
    save(model, out_dir, "resize_overflow.onnx")
    # A Resize to an empty axis (fuzzer too): floor(4 * 0.1) = 0.
    model = make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1, 0.1, 1], np.float32), "scales")],
        "resize_empty")
    save(model, out_dir, "resize_empty.onnx")
    # A node name with a terminal escape sequence and an invalid UTF-8 byte,
    # on a node whose input is never defined (so the name is echoed).
    model = make_model(
        [helper.make_node("Relu", ["nowhere"], ["y"], name="\x1b[2Jevil#")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [], "escape_name")
    data = model.SerializeToString().replace(b"evil#", b"evil\xff")
    with open(os.path.join(out_dir, "escape_name.onnx"), "wb") as f:
        f.write(data)


def tensor_info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def malformed_graphs(out_dir):
    """Graphs that are well-formed protobuf but not valid models."""
    rng = np.random.default_rng(7)
    # A Conv whose input has rank 2: must be rejected by our shape rules
    # before ONNX's own shape inference (which crashes on it) runs.
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv_rank")]
    save(make_model(nodes, [tensor_info("x", [3, 8])], [tensor_info("y", None)],
                    [const(rng, "w", (4, 3, 3, 3))], "wrong_rank"),
         out_dir, "wrong_rank.onnx")
    # An INT attribute stored as a string.
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv_attr",
                              group="two")]
    save(make_model(nodes, [tensor_info("x", [1, 3, 8, 8])], [tensor_info("y", None)],
                    [const(rng, "w", (4, 3, 3, 3))], "bad_attr_kind"),
         out_dir, "bad_attr_kind.onnx")
    # An attribute the op does not have in the model's opset: opset 18 takes
    # ReduceMean axes as an input, so the attribute would be ignored.
    nodes = [helper.make_node("ReduceMean", ["x"], ["y"], name="mean_attr", axes=[1])]
    save(make_model(nodes, [tensor_info("x", [2, 3])], [tensor_info("y", None)], [],
                    "undefined_attr", opset=18), out_dir, "undefined_attr.onnx")
    # Two nodes defining the same value.
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu0"),
        helper.make_node("Neg", ["x"], ["r"], name="neg0"),
        helper.make_node("Add", ["r", "r"], ["y"], name="add0"),
    ]
    save(make_model(nodes, [tensor_info("x", [2, 3])], [tensor_info("y", None)], [],
                    "duplicate_output"), out_dir, "duplicate_output.onnx")
    # Two graph inputs with one name.
    nodes = [helper.make_node("Add", ["x", "x"], ["y"], name="add0")]
    save(make_model(nodes, [tensor_info("x", [2, 3]), tensor_info("x", [2, 3])],
                    [tensor_info("y", None)], [], "duplicate_input"),
         out_dir, "duplicate_input.onnx")
    # A weight that is neither an initializer nor a graph input.
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv_nw")]
    save(make_model(nodes, [tensor_info("x", [1, 3, 8, 8])], [tensor_info("y", None)],
                    [], "missing_initializer"), out_dir, "missing_initializer.onnx")
    # A graph output no node produces.
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu0")]
    save(make_model(nodes, [tensor_info("x", [2, 3])], [tensor_info("y", None)], [],
                    "dangling_output"), out_dir, "dangling_output.onnx")
    # An initializer whose element count wraps around to 0 bytes (2^62 x 4
    # floats) with an empty payload.
    huge = TensorProto()
    huge.name, huge.data_type = "w", TensorProto.FLOAT
    huge.dims.extend([1 << 62, 4])
    huge.raw_data = b""
    nodes = [helper.make_node("Add", ["x", "w"], ["y"], name="add0")]
    save(make_model(nodes, [tensor_info("x", [1, 4])], [tensor_info("y", None)], [huge],
                    "huge_initializer"), out_dir, "huge_initializer.onnx")
    # A graph output declared with a shape the node does not produce.
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu_out")]
    save(make_model(nodes, [tensor_info("x", [2, 3])], [tensor_info("y", [4, 4])], [],
                    "bad_output_shape"), out_dir, "bad_output_shape.onnx")
    # A valid model cut in the middle of its weights.
    data = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [tensor_info("x", [2, 16])], [tensor_info("y", None)],
        [const(rng, "w", (16, 16))], "truncated").SerializeToString()
    with open(os.path.join(out_dir, "truncated.onnx"), "wb") as f:
        f.write(data[:len(data) // 2])


def io_names(out_dir):
    """Input and output names that are not identifiers, and outputs that
    passes forward to other values (Identity of an intermediate, one value
    returned twice)."""
    nodes = [
        helper.make_node("Relu", ["input:0"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["logits-out"], name="id0"),
        helper.make_node("Identity", ["r"], ["copy"], name="id1"),
        helper.make_node("Neg", ["second in"], ["neg"], name="neg"),
    ]
    save(make_model(nodes, [tensor_info("input:0", [2, 3]), tensor_info("second in", [4])],
                    [tensor_info("neg", None), tensor_info("logits-out", None),
                     tensor_info("copy", None)], [], "io_names"),
         out_dir, "io_names.onnx")


def auto_pad_late(out_dir):
    """A SAME_UPPER Conv whose input shape is known only after the Reshape
    target (Shape -> Gather -> Concat) is folded."""
    rng = np.random.default_rng(8)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "i0"], ["n"], name="gather", axis=0),
        helper.make_node("Concat", ["n", "rest"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
        helper.make_node("Conv", ["r", "w"], ["y"], name="conv_same",
                         auto_pad="SAME_UPPER", strides=[2, 2]),
    ]
    inits = [
        numpy_helper.from_array(np.array([0], np.int64), "i0"),
        numpy_helper.from_array(np.array([3, 16, 8], np.int64), "rest"),
        const(rng, "w", (2, 3, 3, 3)),
    ]
    save(make_model(nodes, [tensor_info("x", [1, 48, 8])], [tensor_info("y", None)],
                    inits, "auto_pad_late"), out_dir, "auto_pad_late.onnx")


def external_saved(out_dir):
    """Weights written by onnx.save(save_as_external_data=True) into a file
    beside the model, in a folder of its own."""
    rng = np.random.default_rng(9)
    folder = os.path.join(out_dir, "external_saved")
    os.makedirs(folder, exist_ok=True)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "b"], ["y"], name="bias"),
    ]
    model = make_model(nodes, [tensor_info("x", [2, 8])], [tensor_info("y", None)],
                       [const(rng, "w", (8, 4)), const(rng, "b", (4,))],
                       "external_saved")
    onnx.save(model, os.path.join(folder, "model.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="model.weights",
              size_threshold=0)


def opset_forms(out_dir):
    """Operands that opsets 13 and 18 moved from attributes to inputs."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    # Opset 13: Squeeze/Unsqueeze axes, Split sizes and ReduceSum axes as
    # inputs; Clip with only a max.
    nodes = [
        helper.make_node("Unsqueeze", ["x", "u_axes"], ["u"], name="unsq"),
        helper.make_node("Split", ["u", "sizes"], ["s0", "s1"], name="split", axis=2),
        helper.make_node("ReduceSum", ["s1", "r_axes"], ["rs"], name="rsum", keepdims=1),
        helper.make_node("Squeeze", ["rs", "q_axes"], ["sq"], name="sq"),
        helper.make_node("Clip", ["sq", "", "hi"], ["y"], name="clip_max"),
    ]
    inits = [i64("u_axes", [0]), i64("sizes", [1, 3]), i64("r_axes", [-1]),
             i64("q_axes", [0, 2]), f32("hi", 6.0)]
    save(make_model(nodes, [tensor_info("x", [3, 4])], [tensor_info("y", None)], inits,
                    "opset13_forms", opset=13), out_dir, "opset13_forms.onnx")
    # Opset 18: Split num_outputs, ReduceMean/ReduceMax axes as inputs, Pad
    # and Resize for some axes only.
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1, num_outputs=2),
        helper.make_node("ReduceMean", ["a", "m_axes"], ["m"], name="mean", keepdims=0),
        helper.make_node("ReduceMax", ["b", "x_axes"], ["mx"], name="max", keepdims=1),
        helper.make_node("Pad", ["x", "pads", "", "p_axes"], ["p"], name="pad",
                         mode="constant"),
        helper.make_node("Resize", ["x", "", "scales"], ["rs"], name="resize_scales",
                         mode="nearest", axes=[-1]),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["rz"], name="resize_sizes",
                         mode="linear", axes=[1, 2]),
    ]
    inits = [i64("m_axes", [1]), i64("x_axes", [0, -1]), i64("pads", [1, 2, 0, 3]),
             i64("p_axes", [-1, 0]), f32("scales", [2.0]), i64("sizes", [10, 2])]
    save(make_model(nodes, [tensor_info("x", [2, 5, 4])],
                    [tensor_info("m", None), tensor_info("mx", None), tensor_info("p", None),
                     tensor_info("rs", None), tensor_info("rz", None)],
                    inits, "opset18_forms", opset=18), out_dir, "opset18_forms.onnx")
    # Opset-18 Resize options the lowering does not implement.
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize_keep",
                              mode="nearest", keep_aspect_ratio_policy="not_larger")]
    save(make_model(nodes, [tensor_info("x", [1, 1, 2, 3])], [tensor_info("y", None)],
                    [i64("sizes", [1, 1, 4, 4])], "resize_keep_aspect", opset=18),
         out_dir, "resize_keep_aspect.onnx")


def gelu_erf(out_dir):
    """GELU as exporters write it for opsets without a Gelu operator."""
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"], name="gelu_div"),
        helper.make_node("Erf", ["d"], ["e"], name="gelu_erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="gelu_add"),
        helper.make_node("Mul", ["x", "a"], ["m"], name="gelu_mul"),
        helper.make_node("Mul", ["m", "half"], ["y"], name="gelu_half"),
    ]
    inits = [f32("sqrt2", np.sqrt(2.0)), f32("one", 1.0), f32("half", 0.5)]
    save(make_model(nodes, [tensor_info("x", [2, 8])], [tensor_info("y", None)], inits,
                    "gelu_erf"), out_dir, "gelu_erf.onnx")


def softmax_opset11(out_dir):
    """Opset-11 Softmax: the default axis 1 normalizes over axes 1 and 2
    together (the input is coerced to 2-D)."""
    nodes = [helper.make_node("Softmax", ["x"], ["y"], name="softmax")]
    save(make_model(nodes, [tensor_info("x", [2, 3, 4])], [tensor_info("y", None)], [],
                    "softmax_opset11", opset=11), out_dir, "softmax_opset11.onnx")


def pad_negative(out_dir):
    """Pad whose negative entries remove elements (crop the start of axis 0
    and the end of axis 1, pad the other sides)."""
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_crop", mode="edge")]
    pads = numpy_helper.from_array(np.array([-1, 2, 1, -2], np.int64), "pads")
    save(make_model(nodes, [tensor_info("x", [4, 5])], [tensor_info("y", None)], [pads],
                    "pad_negative"), out_dir, "pad_negative.onnx")


def dynamic_batch(out_dir):
    """A symbolic batch dimension "N" on the input (pinned with
    osprey-compile --input-shape)."""
    nodes = [helper.make_node("Relu", ["x:in"], ["y"], name="relu0")]
    save(make_model(nodes, [tensor_info("x:in", ["N", 3])], [tensor_info("y", ["N", 3])], [],
                    "dynamic_batch"), out_dir, "dynamic_batch.onnx")


def mbconv_silu(out_dir):
    """An EfficientNet-style block: 1x1 expansion + SiLU, 3x3 depthwise +
    SiLU, squeeze-excitation (pooling, two 1x1 convolutions, sigmoid, scale),
    1x1 projection and the residual add (then a ReLU as the output)."""
    rng = np.random.default_rng(7)
    inits = [
        const(rng, "we", (48, 8, 1, 1)), const(rng, "be", (48,)),
        const(rng, "wd", (48, 1, 3, 3)), const(rng, "bd", (48,)),
        const(rng, "w1", (4, 48, 1, 1)), const(rng, "b1", (4,)),
        const(rng, "w2", (48, 4, 1, 1)), const(rng, "b2", (48,)),
        const(rng, "wp", (8, 48, 1, 1)), const(rng, "bp", (8,)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "we", "be"], ["e"], name="expand"),
        helper.make_node("Sigmoid", ["e"], ["es"], name="expand_sigmoid"),
        helper.make_node("Mul", ["e", "es"], ["ea"], name="expand_silu"),
        helper.make_node("Conv", ["ea", "wd", "bd"], ["d"], name="depthwise",
                         pads=[1, 1, 1, 1], group=48),
        helper.make_node("Sigmoid", ["d"], ["ds"], name="dw_sigmoid"),
        helper.make_node("Mul", ["d", "ds"], ["da"], name="dw_silu"),
        helper.make_node("GlobalAveragePool", ["da"], ["p"], name="pool"),
        helper.make_node("Conv", ["p", "w1", "b1"], ["f1"], name="fc1"),
        helper.make_node("Sigmoid", ["f1"], ["f1s"], name="fc1_sigmoid"),
        helper.make_node("Mul", ["f1", "f1s"], ["f1a"], name="fc1_silu"),
        helper.make_node("Conv", ["f1a", "w2", "b2"], ["f2"], name="fc2"),
        helper.make_node("Sigmoid", ["f2"], ["s"], name="scale_sigmoid"),
        helper.make_node("Mul", ["da", "s"], ["sc"], name="scale"),
        helper.make_node("Conv", ["sc", "wp", "bp"], ["pr"], name="project"),
        helper.make_node("Add", ["pr", "x"], ["r"], name="residual"),
        helper.make_node("Relu", ["r"], ["y"], name="relu"),
    ]
    save(make_model(nodes, [tensor_info("x", [1, 8, 12, 12])], [tensor_info("y", None)],
                    inits, "mbconv_silu"), out_dir, "mbconv_silu.onnx")


def qdq_npu_mixed(out_dir):
    """A QDQ model whose int8 layers can go to the NPU with a float Softmax
    between them (it stays on the CPU), at opsets 13 and 19: conv 3x3 + relu,
    softmax over channels, conv 1x1, residual add, max pool, and a fully
    connected layer behind a flatten. Also writes an input holding zeros,
    negatives and values past the quantization range on both sides."""
    rng = np.random.default_rng(11)
    inits = []
    nodes = []

    def scalar(name, value, dtype):
        inits.append(numpy_helper.from_array(np.array(value, dtype), name))

    def qdq(value, scale, zp):
        scalar(value + "_s", scale, np.float32)
        scalar(value + "_z", zp, np.int8)
        nodes.append(helper.make_node("QuantizeLinear",
                                      [value, value + "_s", value + "_z"],
                                      [value + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear",
                                      [value + "_q", value + "_s", value + "_z"],
                                      [value + "_dq"]))
        return value + "_dq"

    def weights(name, shape, in_scale):
        w = rng.integers(-127, 128, size=shape).astype(np.int8)
        scale = (rng.uniform(0.002, 0.02, size=shape[0])).astype(np.float32)
        inits.append(numpy_helper.from_array(w, name + "_int8"))
        inits.append(numpy_helper.from_array(scale, name + "_ws"))
        inits.append(numpy_helper.from_array(np.zeros(shape[0], np.int8), name + "_wz"))
        nodes.append(helper.make_node("DequantizeLinear",
                                      [name + "_int8", name + "_ws", name + "_wz"],
                                      [name + "_dq"], axis=0))
        b = rng.integers(-2000, 2000, size=shape[0]).astype(np.int32)
        inits.append(numpy_helper.from_array(b, name + "_b32"))
        inits.append(numpy_helper.from_array((scale * np.float32(in_scale)).astype(np.float32),
                                             name + "_bs"))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_b32", name + "_bs"],
                                      [name + "_bdq"], axis=0))
        return name + "_dq", name + "_bdq"

    x = qdq("x", 0.05, 3)
    w1, b1 = weights("w1", [16, 8, 3, 3], 0.05)
    nodes.append(helper.make_node("Conv", [x, w1, b1], ["c1"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
    r1 = qdq("r1", 0.1, -128)
    nodes.append(helper.make_node("Softmax", [r1], ["sm"], axis=1))
    sm = qdq("sm", 1.0 / 256, -128)
    w2, b2 = weights("w2", [16, 16, 1, 1], 1.0 / 256)
    nodes.append(helper.make_node("Conv", [sm, w2, b2], ["c2"]))
    c2 = qdq("c2", 0.08, 5)
    nodes.append(helper.make_node("Add", [c2, r1], ["res"]))
    res = qdq("res", 0.12, -3)
    nodes.append(helper.make_node("MaxPool", [res], ["mp"], kernel_shape=[2, 2],
                                  strides=[2, 2]))
    mp = qdq("mp", 0.12, -3)
    nodes.append(helper.make_node("Flatten", [mp], ["fl"], axis=1))
    w3, b3 = weights("w3", [10, 16 * 6 * 6], 0.12)
    nodes.append(helper.make_node("Gemm", ["fl", w3, b3], ["fc"], transB=1))
    fc = qdq("fc", 4.0, 0)
    nodes.append(helper.make_node("Identity", [fc], ["y"]))
    for opset in (13, 19):
        model = make_model(
            nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits,
            "qdq_npu_mixed", opset)
        save(model, out_dir, "qdq_npu_mixed.op%d.onnx" % opset, check=True)
    data = rng.uniform(-8, 8, size=(1, 8, 12, 12)).astype(np.float32)
    flat = data.reshape(-1)
    flat[::7] = 0.0
    flat[1::11] = -1e6
    flat[2::13] = 1e6
    np.save(os.path.join(out_dir, "qdq_npu_mixed.in0.npy"), data)


def many_outputs(out_dir):
    """33 outputs, one more than a VM function returns: osprey-compile must
    refuse the model instead of writing a module no runtime loads."""
    nodes = []
    inits = []
    outputs = []
    for i in range(33):
        inits.append(numpy_helper.from_array(np.array([float(i)], np.float32), "c%d" % i))
        nodes.append(helper.make_node("Add", ["x", "c%d" % i], ["y%d" % i]))
        outputs.append(helper.make_tensor_value_info("y%d" % i, TensorProto.FLOAT, [2]))
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                       outputs, inits, "many_outputs")
    save(model, out_dir, "many_outputs.onnx", check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for make in (conv_bn_relu, gemm, transformer_block, unsupported_ops,
                 bad_group, old_opset_ops, shape_chain, external_data, many_ops,
                 old_opset, malformed, malformed_graphs, io_names, auto_pad_late,
                 external_saved, opset_forms, gelu_erf, softmax_opset11,
                 pad_negative, dynamic_batch, mbconv_silu, qdq_npu_mixed,
                 many_outputs):
        make(args.out)


if __name__ == "__main__":
    main()
