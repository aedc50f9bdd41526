#!/usr/bin/python3
"""Builds the compiler end-to-end models with their inputs and reference outputs.

Usage: make_e2e_models.py --out DIR

For every model NAME it writes NAME.onnx, NAME.in<i>.npy (graph inputs in
order) and NAME.ref<i>.npy (graph outputs in order). References come from a
small float64 numpy evaluator of the ONNX ops used here, independent of the
compiler. Fixed seeds make the files identical from run to run.
"""
import argparse
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_ref(x, w, b, pads, strides, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i:i + strides[0] * oh:strides[0],
                           j:j + strides[1] * ow:strides[1]]
                y[:, g * mg:(g + 1) * mg] += np.einsum(
                    "nchw,mc->nmhw", patch, w[g * mg:(g + 1) * mg, :, i, j])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def pool_ref(x, kernel, strides, pads, kind):
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
                constant_values=fill)
    n, c, h, w = xp.shape
    oh = (h - kernel[0]) // strides[0] + 1
    ow = (w - kernel[1]) // strides[1] + 1
    windows = [xp[:, :, i:i + strides[0] * oh:strides[0],
                  j:j + strides[1] * ow:strides[1]]
               for i in range(kernel[0]) for j in range(kernel[1])]
    if kind == "max":
        return np.max(windows, axis=0)
    return np.sum(windows, axis=0) / (kernel[0] * kernel[1])


def evaluate(model, inputs):
    """Runs |model| on |inputs| (dict name -> array) in float64."""
    env = {i.name: numpy_helper.to_array(i).astype(np.float64)
           for i in model.graph.initializer}
    env.update({k: v.astype(np.float64) for k, v in inputs.items()})
    for node in model.graph.node:
        a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
        ins = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Gemm":
            x, w = ins[0], ins[1]
            x = x.T if a.get("transA", 0) else x
            w = w.T if a.get("transB", 0) else w
            y = a.get("alpha", 1.0) * (x @ w)
            if len(ins) > 2:
                y = y + a.get("beta", 1.0) * ins[2]
        elif op == "MatMul":
            y = ins[0] @ ins[1]
        elif op == "Conv":
            k = ins[1].shape[2:]
            y = conv_ref(ins[0], ins[1], ins[2] if len(ins) > 2 else None,
                         a.get("pads", [0, 0, 0, 0]), a.get("strides", [1, 1]),
                         a.get("group", 1))
        elif op == "BatchNormalization":
            x, g, b, mean, var = ins
            s = (1, -1, 1, 1)
            y = (x - mean.reshape(s)) / np.sqrt(var.reshape(s) + a.get("epsilon", 1e-5)) \
                * g.reshape(s) + b.reshape(s)
        elif op in ("MaxPool", "AveragePool"):
            y = pool_ref(ins[0], a["kernel_shape"], a.get("strides", [1, 1]),
                         a.get("pads", [0, 0, 0, 0]),
                         "max" if op == "MaxPool" else "avg")
        elif op == "GlobalAveragePool":
            y = ins[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            y = ins[0].reshape(ins[0].shape[0], -1)
        elif op == "Relu":
            y = np.maximum(ins[0], 0)
        elif op == "LeakyRelu":
            y = np.where(ins[0] < 0, ins[0] * a.get("alpha", 0.01), ins[0])
        elif op == "Sigmoid":
            y = 1 / (1 + np.exp(-ins[0]))
        elif op == "Tanh":
            y = np.tanh(ins[0])
        elif op == "Exp":
            y = np.exp(ins[0])
        elif op == "Abs":
            y = np.abs(ins[0])
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Sub":
            y = ins[0] - ins[1]
        elif op == "Mul":
            y = ins[0] * ins[1]
        elif op == "Div":
            y = ins[0] / ins[1]
        elif op == "LayerNormalization":
            axis = a.get("axis", -1)
            axes = tuple(range(axis % ins[0].ndim, ins[0].ndim))
            mean = ins[0].mean(axis=axes, keepdims=True)
            var = ((ins[0] - mean) ** 2).mean(axis=axes, keepdims=True)
            y = (ins[0] - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * ins[1]
            if len(ins) > 2 and ins[2] is not None:
                y = y + ins[2]
        elif op == "Transpose":
            y = np.transpose(ins[0], a.get("perm"))
        elif op == "Erf":
            y = np.vectorize(math.erf)(ins[0])
        elif op == "Reshape":
            shape = [int(v) for v in ins[1]]
            shape = [ins[0].shape[i] if v == 0 else v for i, v in enumerate(shape)]
            y = ins[0].reshape(shape)
        elif op == "Identity":
            y = ins[0]
        elif op == "Concat":
            y = np.concatenate(ins, axis=a["axis"])
        elif op == "Split":
            sizes = ins[1] if len(ins) > 1 else None
            if sizes is None:  # opset 18: num_outputs equal parts
                sizes = np.full(a["num_outputs"],
                                ins[0].shape[a.get("axis", 0)] // a["num_outputs"])
            points = np.cumsum(sizes.astype(np.int64))[:-1]
            for name, part in zip(node.output,
                                  np.split(ins[0], points, axis=a.get("axis", 0))):
                env[name] = part
            continue
        elif op == "Softmax":
            axis = a.get("axis", -1)
            e = np.exp(ins[0] - ins[0].max(axis=axis, keepdims=True))
            y = e / e.sum(axis=axis, keepdims=True)
        elif op == "Upsample":  # opset 7-8: scales attribute
            # x_in = x_out / scale; nearest takes the floor, linear
            # interpolates between the neighbours (clamped at the edge).
            y = ins[0]
            for axis, scale in enumerate(a["scales"]):
                n_in = y.shape[axis]
                x = np.arange(int(np.floor(n_in * scale))) / scale
                lo = np.minimum(np.floor(x).astype(np.int64), n_in - 1)
                if a.get("mode", b"nearest") == b"nearest":
                    y = np.take(y, lo, axis=axis)
                    continue
                hi = np.minimum(lo + 1, n_in - 1)
                shape = [1] * y.ndim
                shape[axis] = -1
                t = (x - lo).reshape(shape)
                y = np.take(y, lo, axis=axis) * (1 - t) + np.take(y, hi, axis=axis) * t
        elif op == "Pad":  # opset 2: pads and value attributes
            pads = a["pads"]
            half = len(pads) // 2
            y = np.pad(ins[0], list(zip(pads[:half], pads[half:])),
                       constant_values=a.get("value", 0.0))
        elif op == "Slice":  # opset 1: starts/ends/axes attributes
            index = [slice(None)] * ins[0].ndim
            for axis, start, end in zip(a["axes"], a["starts"], a["ends"]):
                index[axis] = slice(start, end)
            y = ins[0][tuple(index)]
        elif op == "Gelu":  # opset 20
            y = 0.5 * ins[0] * (1 + np.vectorize(math.erf)(ins[0] / math.sqrt(2)))
        elif op == "ReduceMean":  # opset 18: axes operand
            y = ins[0].mean(axis=tuple(int(v) for v in ins[1]),
                            keepdims=bool(a.get("keepdims", 1)))
        elif op == "Dropout":  # inference: identity
            y = ins[0]
        elif op == "Sum":
            y = sum(ins)
        else:
            raise ValueError("no reference for " + op)
        env[node.output[0]] = y
    return [env[o.name] for o in model.graph.output]


def f32(rng, shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def make(name, nodes, inputs, outputs, inits, opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="osprey-tests")
    if opset <= onnx.defs.onnx_opset_version():  # the checker knows no newer schemas
        onnx.checker.check_model(model)
    return model


def mlp(rng):
    inits = {"w1": f32(rng, (16, 32)), "b1": f32(rng, (32,)),
             "w2": f32(rng, (10, 32)), "b2": f32(rng, (10,))}
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu1"),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["z"], name="fc2", transB=1),
        helper.make_node("Sigmoid", ["z"], ["y"], name="sigmoid"),
    ]
    return make("mlp", nodes, [tensor("x", [4, 16])], [tensor("y", [4, 10])],
                inits), {"x": f32(rng, (4, 16), 1.0)}


def conv_net(rng):
    inits = {
        "w1": f32(rng, (8, 3, 3, 3)), "b1": f32(rng, (8,)),
        "gamma": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "beta": f32(rng, (8,)), "mean": f32(rng, (8,)),
        "var": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "w2": f32(rng, (8, 8, 3, 3), 0.2),
        "wf": f32(rng, (5, 72)), "bf": f32(rng, (5,)),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"],
                         ["bn"], name="bn1"),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2",
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p"], name="pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    return make("conv_net", nodes, [tensor("x", [1, 3, 12, 12])],
                [tensor("y", [1, 5])], inits), {"x": f32(rng, (1, 3, 12, 12), 1.0)}


def elementwise(rng):
    inits = {"c": f32(rng, (5,), 1.0)}
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Mul", ["s", "c"], ["m"], name="mul"),
        helper.make_node("Tanh", ["m"], ["t"], name="tanh"),
        helper.make_node("Exp", ["b"], ["e"], name="exp"),
        helper.make_node("Sub", ["t", "e"], ["y"], name="sub"),
        helper.make_node("Sub", ["a", "b"], ["d"], name="sub2"),
        helper.make_node("Abs", ["d"], ["z"], name="abs"),
    ]
    return make("elementwise", nodes, [tensor("a", [3, 1]), tensor("b", [1, 5])],
                [tensor("y", [3, 5]), tensor("z", [3, 5])], inits), \
        {"a": f32(rng, (3, 1), 1.0), "b": f32(rng, (1, 5), 1.0)}


def matmul_residual(rng):
    inits = {"w": f32(rng, (8, 8))}
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "x"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    return make("matmul_residual", nodes, [tensor("x", [2, 3, 8])],
                [tensor("y", [2, 3, 8])], inits), {"x": f32(rng, (2, 3, 8), 1.0)}


def depthwise_pools(rng):
    inits = {"w": f32(rng, (4, 1, 3, 3)), "b": f32(rng, (4,))}
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="dwconv",
                         group=4, pads=[1, 1, 1, 1]),
        helper.make_node("LeakyRelu", ["c"], ["l"], name="leaky", alpha=0.1),
        helper.make_node("AveragePool", ["l"], ["a"], name="avgpool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["a"], ["y"], name="gap"),
    ]
    return make("depthwise_pools", nodes, [tensor("x", [1, 4, 8, 8])],
                [tensor("y", [1, 4, 1, 1])], inits), {"x": f32(rng, (1, 4, 8, 8), 1.0)}


def attention_block(rng):
    d = 16
    inits = {"ln_scale": rng.uniform(0.5, 1.5, d).astype(np.float32),
             "ln_bias": f32(rng, (d,)),
             "wq": f32(rng, (d, d), 0.3), "wk": f32(rng, (d, d), 0.3),
             "wv": f32(rng, (d, d), 0.3), "wo": f32(rng, (d, d), 0.3),
             "scale": np.array(0.25, dtype=np.float32),
             "w1": f32(rng, (d, 32), 0.3), "b1": f32(rng, (32,)),
             "w2": f32(rng, (32, d), 0.3),
             "sqrt2": np.array(math.sqrt(2.0), dtype=np.float32),
             "one": np.array(1.0, dtype=np.float32),
             "half": np.array(0.5, dtype=np.float32)}
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["ln"], name="ln", axis=-1),
        n("MatMul", ["ln", "wq"], ["q"], name="q_proj"),
        n("MatMul", ["ln", "wk"], ["k"], name="k_proj"),
        n("MatMul", ["ln", "wv"], ["v"], name="v_proj"),
        n("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["scores"], name="qk"),
        n("Mul", ["scores", "scale"], ["scaled"], name="scale"),
        n("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1),
        n("MatMul", ["attn", "v"], ["ctx"], name="av"),
        n("MatMul", ["ctx", "wo"], ["o"], name="o_proj"),
        n("Add", ["o", "x"], ["res1"], name="residual1"),
        n("MatMul", ["res1", "w1"], ["h0"], name="fc1"),
        n("Add", ["h0", "b1"], ["h"], name="fc1_bias"),
        n("Div", ["h", "sqrt2"], ["hs"], name="gelu_div"),
        n("Erf", ["hs"], ["he"], name="gelu_erf"),
        n("Add", ["he", "one"], ["he1"], name="gelu_add"),
        n("Mul", ["h", "he1"], ["hm"], name="gelu_mul"),
        n("Mul", ["hm", "half"], ["act"], name="gelu_half"),
        n("MatMul", ["act", "w2"], ["mlp"], name="fc2"),
        n("Add", ["mlp", "res1"], ["y"], name="residual2"),
    ]
    return make("attention_block", nodes, [tensor("x", [1, 6, d])],
                [tensor("y", [1, 6, d])], inits, opset=17), \
        {"x": f32(rng, (1, 6, d), 1.0)}


def split_concat(rng):
    inits = {"sizes": np.array([1, 3], dtype=np.int64),
             "w": f32(rng, (6, 8, 3, 3), 0.3)}
    n = helper.make_node
    nodes = [
        n("Split", ["x", "sizes"], ["a", "b"], name="split", axis=1),
        n("Relu", ["a"], ["ra"], name="relu"),
        n("Sigmoid", ["b"], ["sb"], name="sigmoid"),
        n("Concat", ["sb", "x", "ra"], ["c"], name="concat", axis=1),
        n("Conv", ["c", "w"], ["y"], name="conv", pads=[1, 1, 1, 1]),
    ]
    return make("split_concat", nodes, [tensor("x", [1, 4, 5, 5])],
                [tensor("y", [1, 6, 5, 5])], inits), \
        {"x": f32(rng, (1, 4, 5, 5), 1.0)}


def reshape_outputs(rng):
    inits = {"shape": np.array([6, -1], dtype=np.int64)}
    n = helper.make_node
    nodes = [
        n("Exp", ["x"], ["e"], name="exp"),
        n("Reshape", ["e", "shape"], ["y1"], name="reshape"),
        n("Tanh", ["x"], ["t"], name="tanh"),
        n("Flatten", ["t"], ["y2"], name="flatten", axis=1),
    ]
    return make("reshape_outputs", nodes, [tensor("x", [2, 3, 4])],
                [tensor("y1", [6, 4]), tensor("y2", [2, 12])], inits), \
        {"x": f32(rng, (2, 3, 4), 1.0)}


def passthrough(rng):
    inits = {"shape": np.array([-1], dtype=np.int64)}
    n = helper.make_node
    nodes = [
        n("Reshape", ["x", "shape"], ["flat"], name="reshape"),
        n("Identity", ["x"], ["same"], name="identity"),
    ]
    return make("passthrough", nodes, [tensor("x", [2, 3, 4])],
                [tensor("flat", [24]), tensor("same", [2, 3, 4])], inits), \
        {"x": f32(rng, (2, 3, 4), 1.0)}


def chunk_concat(rng):
    # The first chunk starts at 0 and is read by Concat with padding: its
    # extent (half the channels) must survive fusion.
    inits = {"sizes": np.array([4, 4], dtype=np.int64),
             "two": np.array(2.0, dtype=np.float32)}
    n = helper.make_node
    nodes = [
        n("Split", ["x", "sizes"], ["a", "b"], name="split", axis=1),
        n("Mul", ["b", "two"], ["b2"], name="mul"),
        n("Concat", ["a", "b2"], ["y"], name="concat", axis=1),
    ]
    return make("chunk_concat", nodes, [tensor("x", [1, 8, 4, 4])],
                [tensor("y", [1, 8, 4, 4])], inits), \
        {"x": f32(rng, (1, 8, 4, 4), 1.0)}


def legacy_opset7(rng):
    # Operators in their opset-7 forms (read through ONNX's version
    # converter): BatchNormalization with 'spatial', Upsample, Pad and
    # Slice with attribute operands, Dropout, variadic Sum, 2-D Softmax.
    inits = {
        "w": f32(rng, (6, 3, 3, 3)),
        "gamma": rng.uniform(0.5, 1.5, 6).astype(np.float32),
        "beta": f32(rng, (6,)), "mean": f32(rng, (6,)),
        "var": rng.uniform(0.5, 1.5, 6).astype(np.float32),
        "wf": f32(rng, (4, 6 * 7 * 6), 0.02), "bf": f32(rng, (4,)),
    }
    n = helper.make_node
    nodes = [
        n("Pad", ["x"], ["xp"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1],
          value=0.25),
        n("Conv", ["xp", "w"], ["c"], name="conv"),
        n("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"],
          name="bn", spatial=1, epsilon=1e-3),
        n("Relu", ["bn"], ["r"], name="relu"),
        n("Dropout", ["r"], ["d"], name="dropout", ratio=0.3),
        n("Upsample", ["d"], ["u"], name="upsample", mode="linear",
          scales=[1.0, 1.0, 2.0, 1.5]),
        n("Slice", ["u"], ["s"], name="slice", axes=[2, 3], starts=[1, 0],
          ends=[9, 8]),
        n("Sum", ["s", "s", "s"], ["t"], name="sum"),
        n("Flatten", ["t"], ["f"], name="flatten"),
        n("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
        n("Softmax", ["logits"], ["y"], name="softmax"),
    ]
    return make("legacy_opset7", nodes, [tensor("x", [1, 3, 4, 4])],
                [tensor("y", [1, 4])], inits, opset=7), \
        {"x": f32(rng, (1, 3, 4, 4), 1.0)}


def modern_opset21(rng):
    # Opset 21 (newer than the schemas libonnx 1.12 knows): Gelu (opset 20),
    # AveragePool's dilations (19), Split's num_outputs and ReduceMean's axes
    # operand (18).
    inits = {"w": f32(rng, (6, 3, 3, 3)), "axes": np.array([2, 3], np.int64)}
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        n("Gelu", ["c"], ["g"], name="gelu"),
        n("AveragePool", ["g"], ["p"], name="pool", kernel_shape=[2, 2],
          strides=[2, 2], dilations=[1, 1]),
        n("Split", ["p"], ["a", "b"], name="split", axis=1, num_outputs=2),
        n("Add", ["a", "b"], ["s"], name="add"),
        n("ReduceMean", ["s", "axes"], ["y"], name="mean", keepdims=0),
    ]
    return make("modern_opset21", nodes, [tensor("x", [1, 3, 8, 8])],
                [tensor("y", [1, 3])], inits, opset=21), \
        {"x": f32(rng, (1, 3, 8, 8), 1.0)}


MODELS = [mlp, conv_net, elementwise, matmul_residual, depthwise_pools,
          attention_block, split_concat, reshape_outputs, passthrough,
          chunk_concat, legacy_opset7, modern_opset21]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i, build in enumerate(MODELS):
        model, inputs = build(np.random.default_rng(100 + i))
        name = model.graph.name
        onnx.save(model, os.path.join(args.out, name + ".onnx"))
        for k, graph_input in enumerate(model.graph.input):
            np.save(os.path.join(args.out, "%s.in%d.npy" % (name, k)),
                    inputs[graph_input.name])
        for k, ref in enumerate(evaluate(model, inputs)):
            np.save(os.path.join(args.out, "%s.ref%d.npy" % (name, k)),
                    ref.astype(np.float32))


if __name__ == "__main__":
    main()
