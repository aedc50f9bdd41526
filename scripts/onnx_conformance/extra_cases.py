"""Extra single-operator cases for attribute combinations that onnx 1.12's
backend node tests do not cover (grouped/dilated Conv, grouped strided
ConvTranspose, edge/reflect Pad on f32, Gather with 2-D indices on an inner
axis, broadcast batched MatMul, negative Slice steps, 2-D linear Resize,
integer and bool tensors: Cast between types, integer arithmetic, comparisons
and reductions; int8 and per-axis quantization, opset-19/21 QuantizeLinear
attributes, int8 QLinearConv per channel, malformed quantization parameters)
trigonometric functions at their first opsets, windows of every kind and
size 1, and for Gelu, which onnx 1.12 does not know.
References are computed here with plain numpy (loops for the convolutions,
np.pad, np.take, np.matmul, slicing) and, for Resize, ONNX's own reference
interpolation from the generator module. Cases with an `expect_reject` reason
must be rejected by the compiler (kind "reject"); a case with a `tolerance`
is compared with it instead of the runner's default (the reason is stated
where the case is made)."""

import math
import types

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _case(name, node, inputs, outputs, opset=13):
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(
            n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
         for n, a in zip([i for i in node.input if i], inputs)],
        [helper.make_tensor_value_info(
            n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
         for n, a in zip(node.output, outputs)])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    return types.SimpleNamespace(name=name, model=model,
                                 data_sets=[(inputs, outputs)])


def _conv_ref(x, w, group, strides, dilations, pads):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
    oh = (xp.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, oh, ow), np.float64)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(oh):
            for j in range(ow):
                win = xp[:, g * cg:(g + 1) * cg,
                         i * strides[0]:i * strides[0] + dilations[0] * (kh - 1) + 1:dilations[0],
                         j * strides[1]:j * strides[1] + dilations[1] * (kw - 1) + 1:dilations[1]]
                y[:, o, i, j] = (win * w[o]).sum(axis=(1, 2, 3))
    return y.astype(np.float32)


def _conv_transpose_ref(x, w, group, strides, pads, output_padding):
    n, c, h, wd = x.shape
    _, mg, kh, kw = w.shape
    cg = c // group
    fh = (h - 1) * strides[0] + kh + output_padding[0]
    fw = (wd - 1) * strides[1] + kw + output_padding[1]
    full = np.zeros((n, mg * group, fh, fw), np.float64)
    for ci in range(c):
        g = ci // cg
        for i in range(h):
            for j in range(wd):
                full[:, g * mg:(g + 1) * mg,
                     i * strides[0]:i * strides[0] + kh,
                     j * strides[1]:j * strides[1] + kw] += \
                    x[:, ci, i, j][:, None, None, None] * w[ci]
    return full[:, :, pads[0]:fh - pads[2], pads[1]:fw - pads[3]].astype(
        np.float32)


def _typed_cases(rng):
    """Integer and bool tensors: Cast between types (float to integer
    truncates toward zero), integer arithmetic with ONNX semantics (Div
    truncates toward zero, narrow types wrap), comparisons and reductions."""
    out = []
    f = np.array([[-2.75, -1.5, -0.5, 0.0, 0.25, 1.5, 2.99, 100.0],
                  [7.5, -7.5, 3.0, -3.0, 0.75, -0.75, 126.9, -127.9]],
                 np.float32)
    ints = np.array([[-300, -129, -128, -1, 0, 1, 127, 200],
                     [255, 256, 1000, -1000, 42, -42, 7, 70000]], np.int64)
    casts = [
        ("float_to_int32", f, np.int32, TensorProto.INT32),
        ("float_to_int64", f, np.int64, TensorProto.INT64),
        ("float_to_int8", f, np.int8, TensorProto.INT8),
        ("float_to_bool", f, np.bool_, TensorProto.BOOL),
        ("bool_to_float", f > 0.3, np.float32, TensorProto.FLOAT),
        ("bool_to_int32", f > 0.3, np.int32, TensorProto.INT32),
        ("int64_to_float", ints, np.float32, TensorProto.FLOAT),
        ("int64_to_int32", ints, np.int32, TensorProto.INT32),
        ("int64_to_int8", ints, np.int8, TensorProto.INT8),
        ("int64_to_uint8", ints, np.uint8, TensorProto.UINT8),
        ("int64_to_bool", ints, np.bool_, TensorProto.BOOL),
        ("uint8_to_float", ints.astype(np.uint8), np.float32,
         TensorProto.FLOAT),
        ("int8_to_int64", ints.astype(np.int8), np.int64, TensorProto.INT64),
    ]
    for name, x, np_type, to in casts:
        node = helper.make_node("Cast", ["x"], ["y"], to=to)
        out.append(("Cast", _case("osprey_cast_" + name, node, [x],
                                  [x.astype(np_type)])))

    a = rng.randint(-50, 50, size=(3, 4)).astype(np.int32)
    b = np.array([3, -4, 7, -1], np.int32)
    for op, ref in (("Add", a + b), ("Sub", a - b), ("Mul", a * b),
                    ("Div", (np.trunc(a / b)).astype(np.int32))):
        node = helper.make_node(op, ["a", "b"], ["y"])
        out.append((op, _case("osprey_%s_int32_bcast" % op.lower(), node,
                              [a, b], [ref.astype(np.int32)])))
    a8 = np.array([100, -100, 127, -128, 5, 64], np.int8)
    b8 = np.array([100, -100, 1, -1, 30, 2], np.int8)
    with np.errstate(over="ignore"):
        for op, ref in (("Add", a8 + b8), ("Mul", a8 * b8)):
            node = helper.make_node(op, ["a", "b"], ["y"])
            out.append((op, _case("osprey_%s_int8_wraps" % op.lower(), node,
                                  [a8, b8], [ref])))
    a64 = rng.randint(-2**40, 2**40, size=(2, 5)).astype(np.int64)
    b64 = a64.copy()
    b64[0, 1] += 1
    b64[1, 3] -= 1
    for op, ref in (("Less", a64 < b64), ("Greater", a64 > b64),
                    ("Equal", a64 == b64)):
        node = helper.make_node(op, ["a", "b"], ["y"])
        out.append((op, _case("osprey_%s_int64" % op.lower(), node,
                              [a64, b64], [ref])))
    p = rng.rand(2, 6) > 0.5
    q = rng.rand(6) > 0.5
    node = helper.make_node("Equal", ["a", "b"], ["y"])
    out.append(("Equal", _case("osprey_equal_bool_bcast", node, [p, q],
                               [p == q])))
    for op, ref in (("Abs", np.abs(a)), ("Neg", -a)):
        node = helper.make_node(op, ["x"], ["y"])
        out.append((op, _case("osprey_%s_int32" % op.lower(), node, [a],
                              [ref])))
    m1 = rng.rand(2, 3) > 0.5
    m2 = rng.rand(2, 2) > 0.5
    node = helper.make_node("Concat", ["a", "b"], ["y"], axis=1)
    out.append(("Concat", _case("osprey_concat_bool", node, [m1, m2],
                                [np.concatenate([m1, m2], axis=1)])))
    lo, hi = np.array(-20, np.int32), np.array(30, np.int32)
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
    out.append(("Clip", _case("osprey_clip_int32", node, [a, lo, hi],
                              [np.clip(a, lo, hi)])))
    axes = np.array([1], np.int64)
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)
    out.append(("ReduceSum", _case("osprey_reducesum_int64", node,
                                   [a64, axes], [a64.sum(axis=1)])))
    node = helper.make_node("ReduceMax", ["x"], ["y"], axes=[0], keepdims=1)
    out.append(("ReduceMax", _case("osprey_reducemax_int32", node, [a],
                                   [a.max(axis=0, keepdims=True)])))
    return out


def _quantize_ref(v, zero_point, dtype):
    """ONNX QuantizeLinear of v = x / scale: round half to even, then add
    the zero point, saturate."""
    info = np.iinfo(dtype)
    q = np.rint(v).astype(np.float64) + zero_point
    return np.clip(q, info.min, info.max).astype(dtype)


def _quantization_cases(rng):
    """int8 and per-axis forms, opset-19/21 attributes, and malformed
    quantization parameters that must be rejected naming the node."""
    out = []
    x = rng.randint(-128, 128, (2, 3, 4)).astype(np.int8)
    scale = np.array([0.5, 0.037, 3.0], np.float32)
    zp = np.array([-128, 3, 127], np.int8)
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    ref = (x.astype(np.float32) - zp.reshape(1, 3, 1).astype(np.float32)) * \
        scale.reshape(1, 3, 1)
    out.append(("DequantizeLinear", _case("osprey_dequantizelinear_int8_axis",
                                          node, [x, scale, zp], [ref])))
    # Values on and next to rounding ties (k + 0.5 times the scale).
    f = np.concatenate([(np.arange(-10, 10) + 0.5) * 0.25,
                        rng.randn(20) * 40]).astype(np.float32).reshape(2, 20)
    s2 = np.array([0.25, 0.5], np.float32)
    z2 = np.array([-3, 100], np.int8)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)
    ref = _quantize_ref(f / s2.reshape(2, 1), z2.reshape(2, 1), np.int8)
    out.append(("QuantizeLinear", _case("osprey_quantizelinear_int8_axis0",
                                        node, [f, s2, z2], [ref])))
    # Opset 19 adds saturate (float8 only), opset 21 output_dtype.
    s1 = np.array(0.25, np.float32)
    z1 = np.array(-3, np.int8)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"],
                            saturate=1)
    ref = _quantize_ref(f / s1, z1, np.int8)
    out.append(("QuantizeLinear", _case("osprey_quantizelinear_opset19",
                                        node, [f, s1, z1], [ref], opset=19)))
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"],
                            output_dtype=TensorProto.INT8)
    ref = _quantize_ref(f / s1, 0, np.int8)
    out.append(("QuantizeLinear", _case("osprey_quantizelinear_opset21_dtype",
                                        node, [f, s1], [ref], opset=21)))

    # int8 QLinearConv, weights per output channel, strided, padded,
    # grouped, with a bias. The reference rescales in float64 and rounds
    # half to even, as ONNX's does; Osprey requantizes in fixed point
    # (docs/npu.md), which may differ by one unit where the exact value is
    # within rounding of a tie: compared with tolerance 1.
    xq = rng.randint(-128, 128, (1, 4, 7, 6)).astype(np.int8)
    wq = rng.randint(-127, 128, (6, 2, 3, 3)).astype(np.int8)
    xs, xz = np.array(0.02, np.float32), np.array(-5, np.int8)
    ws = (rng.rand(6) * 0.01 + 0.002).astype(np.float32)
    wz = np.zeros(6, np.int8)
    ys, yz = np.array(0.05, np.float32), np.array(7, np.int8)
    bias = rng.randint(-3000, 3000, 6).astype(np.int32)
    acc = _conv_ref((xq.astype(np.float64) - xz), wq.astype(np.float64), 2,
                    [2, 1], [1, 1], [1, 0, 1, 2]).astype(np.float64)
    acc += bias.reshape(1, 6, 1, 1)
    real = acc * (float(xs) * ws.astype(np.float64).reshape(1, 6, 1, 1)) / float(ys)
    ref = _quantize_ref(real, float(yz), np.int8)
    node = helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
        ["y"], group=2, strides=[2, 1], pads=[1, 0, 1, 2])
    case = _case("osprey_qlinearconv_int8_per_channel", node,
                 [xq, xs, xz, wq, ws, wz, ys, yz, bias], [ref])
    case.tolerance = 1
    out.append(("QLinearConv", case))

    # Malformed parameters: rejected at import, naming the node.
    bad = [
        ("zero_scale", np.array(0.0, np.float32), np.array(0, np.int8), None,
         "scale 0 is not positive"),
        ("nan_scale", np.array(np.nan, np.float32), np.array(0, np.int8), None,
         "scale nan is not positive"),
        ("negative_scale", np.array([0.5, -1.0, 1.0], np.float32),
         np.zeros(3, np.int8), 1, "scale -1 is not positive"),
        ("axis_out_of_range", np.array([0.5, 1.0, 1.0], np.float32),
         np.zeros(3, np.int8), 3, "axis 3 is out of range"),
        ("scale_length", np.array([0.5, 1.0], np.float32),
         np.zeros(2, np.int8), 1, "scale has 2 entries but axis 1 has extent 3"),
        ("zero_point_length", np.array([0.5, 1.0, 1.0], np.float32),
         np.zeros(2, np.int8), 1, "zero point has 2 entries, scale has 3"),
    ]
    for name, sc, z, axis, reason in bad:
        attrs = {} if axis is None else {"axis": axis}
        node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"],
                                **attrs)
        case = _case("osprey_dequantizelinear_" + name, node, [x, sc, z],
                     [np.zeros(x.shape, np.float32)])
        case.expect_reject = reason
        out.append(("DequantizeLinear", case))
    b32 = np.array([1, 2, 3], np.int32)
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])
    case = _case("osprey_dequantizelinear_int32_zero_point", node,
                 [b32, np.array(0.5, np.float32), np.array(5, np.int32)],
                 [np.zeros(3, np.float32)])
    case.expect_reject = "zero point 5 is out of range for i32 (must be 0)"
    out.append(("DequantizeLinear", case))
    return out


def _trig_cases(rng):
    """The trigonometric functions at the opsets they first appear in (7;
    the hyperbolic ones 9), over their domains; windows with the other
    datatypes and the one-sample edge."""
    out = []
    wide = (rng.randn(3, 16) * 20).astype(np.float32)
    unit = rng.uniform(-1, 1, (3, 16)).astype(np.float32)
    above_one = (1 + np.abs(rng.randn(3, 16)) * 5).astype(np.float32)
    for op, opset, x, ref in (
            ("Sin", 7, wide, np.sin), ("Cos", 7, wide, np.cos),
            ("Tan", 7, wide, np.tan), ("Asin", 7, unit, np.arcsin),
            ("Acos", 7, unit, np.arccos), ("Atan", 7, wide, np.arctan),
            ("Sinh", 9, unit * 10, np.sinh), ("Cosh", 9, unit * 10, np.cosh),
            ("Asinh", 9, wide, np.arcsinh), ("Acosh", 9, above_one,
                                             np.arccosh),
            ("Atanh", 9, unit, np.arctanh)):
        node = helper.make_node(op, ["x"], ["y"])
        y = ref(x.astype(np.float64)).astype(np.float32)
        out.append((op, _case("osprey_%s_opset%d" % (op.lower(), opset),
                              node, [x], [y], opset=opset)))

    def window(name, size, periodic, a0, a1, a2, dtype):
        n = np.arange(size, dtype=np.float64)
        period = size if periodic else size - 1
        with np.errstate(all="ignore"):
            angle = 2 * np.pi * n / period
        return (a0 - a1 * np.cos(angle) + a2 * np.cos(2 * angle)).astype(dtype)

    for op, size, periodic, dtype, coeffs in (
            ("HannWindow", 1, 1, np.float32, (0.5, 0.5, 0)),
            ("HammingWindow", 6, 1, np.float64, (25 / 46, 21 / 46, 0)),
            ("BlackmanWindow", 7, 0, np.float32, (0.42, 0.5, 0.08))):
        node = helper.make_node(
            op, ["size"], ["y"], periodic=periodic,
            output_datatype=onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[
                np.dtype(dtype)])
        out.append((op, _case(
            "osprey_%s_%d_%s" % (op.lower(), size, np.dtype(dtype).name),
            node, [np.array(size, np.int64)],
            [window(op, size, periodic, *coeffs, dtype)], opset=17)))
    return out


def _einsum_cases(rng):
    """Einsum equations beyond onnx 1.12's five: ellipses of different
    ranks, traces, implicit outputs, three operands, full contraction,
    uppercase labels; numpy's einsum is the reference."""
    out = []
    for name, eq, shapes in (
            ("ellipsis_broadcast", "...ij,...jk->...ik",
             [(2, 3, 4, 5), (3, 5, 2)]),
            ("trace", "ii", [(5, 5)]),
            ("diagonal_times", "iij,jk->ik", [(3, 3, 4), (4, 2)]),
            ("implicit_transpose", "ba", [(3, 4)]),
            ("three_operands", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
            ("full_contraction", "ij,ij->", [(3, 4), (3, 4)]),
            ("outer_uppercase", "Ab,c->cAb", [(2, 3), (4,)]),
            ("spaces_and_sum", "b i j , b j -> i", [(2, 3, 4), (2, 4)])):
        xs = [rng.randn(*s).astype(np.float32) for s in shapes]
        names = ["x%d" % i for i in range(len(xs))]
        node = helper.make_node("Einsum", names, ["y"], equation=eq)
        y = np.asarray(np.einsum(eq.replace(" ", ""),
                                 *[x.astype(np.float64) for x in xs]))
        out.append(("Einsum", _case("osprey_einsum_" + name, node, xs,
                                    [y.astype(np.float32)], opset=12)))
    return out


def _scatter_gather_cases(rng):
    """Scatters with every reduction over duplicate indices (opset 18),
    GatherND with two batch dims, and out-of-range indices, which must be
    rejected; numpy loops are the references."""
    out = []
    data = rng.randn(3, 4).astype(np.float32)
    idx = np.array([[1, 1, -1], [0, 3, 3]], np.int64)
    upd = rng.randn(2, 3).astype(np.float32)
    for reduction, fn in (("add", np.add), ("mul", np.multiply),
                          ("max", np.maximum), ("min", np.minimum)):
        ref = data.copy()
        for i in range(2):
            for j in range(3):
                ref[i, idx[i, j]] = fn(ref[i, idx[i, j]], upd[i, j])
        node = helper.make_node("ScatterElements", ["data", "idx", "upd"],
                                ["y"], axis=1, reduction=reduction)
        out.append(("ScatterElements", _case(
            "osprey_scatterelements_%s_duplicates" % reduction, node,
            [data, idx, upd], [ref], opset=18)))
    data = rng.randn(4, 3, 2).astype(np.float32)
    idx = np.array([[[2, 1]], [[-1, 0]], [[2, 1]]], np.int64)
    upd = rng.randn(3, 1, 2).astype(np.float32)
    ref = data.copy()
    for i in range(3):
        a, b = idx[i, 0]
        ref[a, b] = np.maximum(ref[a, b], upd[i, 0])
    node = helper.make_node("ScatterND", ["data", "idx", "upd"], ["y"],
                            reduction="max")
    out.append(("ScatterND", _case("osprey_scatternd_max_slices", node,
                                   [data, idx, upd], [ref], opset=18)))
    data = rng.randn(2, 3, 4, 5).astype(np.float32)
    idx = rng.randint(-4, 4, (2, 3, 6, 1)).astype(np.int64)
    ref = np.empty((2, 3, 6, 5), np.float32)
    for i in range(2):
        for j in range(3):
            for k in range(6):
                ref[i, j, k] = data[i, j, idx[i, j, k, 0]]
    node = helper.make_node("GatherND", ["data", "idx"], ["y"], batch_dims=2)
    out.append(("GatherND", _case("osprey_gathernd_batch_dims2", node,
                                  [data, idx], [ref])))
    idx = np.array([[0, 4]], np.int64)
    node = helper.make_node("GatherND", ["data", "idx"], ["y"])
    case = _case("osprey_gathernd_index_out_of_range", node,
                 [data[0, :, :, 0], idx], [np.zeros(1, np.float32)])
    case.expect_reject = "out of range"
    out.append(("GatherND", case))
    x = rng.randn(3, 5, 2).astype(np.float32)
    lens = np.array([0, 5, 2], np.int64)
    ref = x.copy()
    for b in range(3):
        ref[b, :lens[b]] = x[b, :lens[b]][::-1]
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"],
                            batch_axis=0, time_axis=1)
    out.append(("ReverseSequence", _case(
        "osprey_reversesequence_rank3_batch_major", node, [x, lens], [ref],
        opset=10)))
    return out


_ACTIVATIONS = {
    "Sigmoid": lambda v, a, b: 1 / (1 + np.exp(-v)),
    "Tanh": lambda v, a, b: np.tanh(v),
    "Relu": lambda v, a, b: np.maximum(v, 0),
    "HardSigmoid": lambda v, a, b: np.clip(a * v + b, 0, 1),
}


def _recurrent_ref(kind, x, w, r, b, lens, h0, c0, p, direction, acts,
                   alphas, lbr=0, clip=0.0):
    """The ONNX RNN/GRU/LSTM equations step by step in float64 (layout 0):
    returns Y [T, D, B, H], Y_h and Y_c [D, B, H]."""
    steps, batch, _ = x.shape
    dirs, gh, _ = w.shape
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    h = gh // gates
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
    y = np.zeros((steps, dirs, batch, h))
    yh = np.zeros((dirs, batch, h))
    yc = np.zeros((dirs, batch, h))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(dirs):
        fn = [(lambda v, k=k: _ACTIVATIONS[acts[d * per + k]](
            v, alphas[d * per + k][0], alphas[d * per + k][1]))
            for k in range(per)]
        wb, rb = b[d, :gh], b[d, gh:]
        hs = h0[d].copy()
        cs = c0[d].copy() if c0 is not None else None
        order = range(steps - 1, -1, -1) if (direction == "reverse" or d == 1) \
            else range(steps)
        for t in order:
            xt = x[t]
            valid = (t < lens)[:, None]
            if kind == "RNN":
                hn = fn[0](cl(xt @ w[d].T + hs @ r[d].T + wb + rb))
                cn = None
            elif kind == "GRU":
                xw = xt @ w[d].T + wb
                z = fn[0](cl(xw[:, :h] + hs @ r[d][:h].T + rb[:h]))
                rg = fn[0](cl(xw[:, h:2 * h] + hs @ r[d][h:2 * h].T +
                              rb[h:2 * h]))
                if lbr:
                    hh = fn[1](cl(xw[:, 2 * h:] +
                                  rg * (hs @ r[d][2 * h:].T + rb[2 * h:])))
                else:
                    hh = fn[1](cl(xw[:, 2 * h:] + (rg * hs) @ r[d][2 * h:].T +
                                  rb[2 * h:]))
                hn = (1 - z) * hh + z * hs
                cn = None
            else:
                g = xt @ w[d].T + hs @ r[d].T + wb + rb
                pi, po, pf = (p[d, :h], p[d, h:2 * h], p[d, 2 * h:]) \
                    if p is not None else (0, 0, 0)
                i = fn[0](cl(g[:, :h] + pi * cs))
                f = fn[0](cl(g[:, 2 * h:3 * h] + pf * cs))
                c = fn[1](cl(g[:, 3 * h:]))
                cn = f * cs + i * c
                o = fn[0](cl(g[:, h:2 * h] + po * cn))
                hn = o * fn[2](cn)
            y[t, d] = np.where(valid, hn, 0)
            hs = np.where(valid, hn, hs)
            if cn is not None:
                cs = np.where(valid, cn, cs)
        yh[d] = hs
        if cs is not None:
            yc[d] = cs
    return y, yh, yc


def _recurrent_cases(rng):
    """RNN, GRU and LSTM with what the ONNX cases leave out: both
    directions, sequence lengths shorter than the sequence, initial states,
    peepholes, clipping, linear_before_reset, batch-major layout and
    non-default activations; references from the equations in numpy."""
    out = []
    steps, batch, inputs, h = 5, 2, 3, 4
    lens = np.array([3, 5], np.int32)
    for kind, direction, layout, opset, extra in (
            ("LSTM", "bidirectional", 0, 13, {}),
            ("GRU", "reverse", 1, 14, {"linear_before_reset": 1,
                                       "clip": 0.8}),
            ("GRU", "forward", 0, 13, {}),
            ("RNN", "bidirectional", 0, 13,
             {"activations": ["Relu", "Tanh"]}),
            ("LSTM", "forward", 0, 7,
             {"activations": ["HardSigmoid", "Tanh", "Tanh"],
              "activation_alpha": [0.3], "activation_beta": [0.4]})):
        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
        dirs = 2 if direction == "bidirectional" else 1
        x = rng.randn(steps, batch, inputs).astype(np.float32)
        w = (rng.randn(dirs, gates * h, inputs) * 0.5).astype(np.float32)
        r = (rng.randn(dirs, gates * h, h) * 0.5).astype(np.float32)
        b = (rng.randn(dirs, 2 * gates * h) * 0.3).astype(np.float32)
        h0 = rng.randn(dirs, batch, h).astype(np.float32)
        c0 = rng.randn(dirs, batch, h).astype(np.float32)
        p = (rng.randn(dirs, 3 * h) * 0.3).astype(np.float32)
        per = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
        acts = extra.get("activations", (["Tanh"] if kind == "RNN" else
                                         ["Sigmoid"] + ["Tanh"] * (per - 1)))
        if len(acts) < per * dirs:
            acts = acts * dirs
        alphas = [(extra.get("activation_alpha", [0])[0],
                   extra.get("activation_beta", [0])[0])
                  if a == "HardSigmoid" else (0, 0) for a in acts]
        use_p = kind == "LSTM" and direction == "bidirectional"
        use_lens = kind != "RNN" or direction == "bidirectional"
        y, yh, yc = _recurrent_ref(
            kind, x.astype(np.float64), w, r, b,
            lens if use_lens else np.full(batch, steps), h0,
            c0 if kind == "LSTM" else None, p if use_p else None, direction,
            acts, alphas, extra.get("linear_before_reset", 0),
            extra.get("clip", 0.0))
        names = ["x", "w", "r", "b", "lens" if use_lens else "", "h0"]
        values = [x, w, r, b] + ([lens] if use_lens else []) + [h0]
        if kind == "LSTM":
            names += ["c0"] + (["p"] if use_p else [])
            values += [c0] + ([p] if use_p else [])
        outs = ["y", "yh"] + (["yc"] if kind == "LSTM" else [])
        refs = [y, yh] + ([yc] if kind == "LSTM" else [])
        if layout == 1:
            values[0] = x.transpose(1, 0, 2).copy()
            values[names.index("h0") - (0 if use_lens else 1)] = \
                h0.transpose(1, 0, 2).copy()
            refs = [y.transpose(2, 0, 1, 3)] + [s.transpose(1, 0, 2)
                                                for s in refs[1:]]
        attrs = dict(extra, hidden_size=h, direction=direction)
        if layout:
            attrs["layout"] = layout
        node = helper.make_node(kind, names, outs, **attrs)
        name = "osprey_%s_%s%s" % (kind.lower(), direction,
                                   "_layout1" if layout else "")
        if opset == 7:
            name += "_opset7"
        out.append((kind, _case(name, node, values,
                                [a.astype(np.float32) for a in refs],
                                opset=opset)))
    return out


def _half_cases(rng):
    """Operators on float16 tensors; numpy computes each float16 op in
    float32 and rounds the result, as Osprey does, so elementwise results
    are exact; convolutions and matrix products sum in float32 and round
    once (numpy's float16 products round each partial sum: within 1e-3)."""
    out = []
    a = (rng.randn(3, 8) * 4).astype(np.float16)
    b = (rng.randn(1, 8) * 4).astype(np.float16)
    a[0, :4] = [0, -0.0, 65504, -65504]
    b[0, :4] = [np.inf, -np.inf, 65504, 3]
    for op, fn in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                   ("Div", np.divide)):
        node = helper.make_node(op, ["a", "b"], ["y"])
        with np.errstate(all="ignore"):
            y = fn(a, b)
        case = _case("osprey_%s_float16" % op.lower(), node, [a, b], [y])
        case.tolerance = 0
        out.append((op, case))
    x = (rng.randn(2, 16) * 3).astype(np.float16)
    for op, fn in (("Sqrt", lambda v: np.sqrt(np.abs(v))),
                   ("Exp", np.exp), ("Sigmoid", lambda v: 1 / (1 + np.exp(-v))),
                   ("Tanh", np.tanh)):
        inp = np.abs(x) if op == "Sqrt" else x
        node = helper.make_node(op, ["x"], ["y"])
        y = fn(inp.astype(np.float64)).astype(np.float16)
        out.append((op, _case("osprey_%s_float16" % op.lower(), node, [inp],
                              [y])))
    m = rng.randn(4, 24).astype(np.float16)
    k = rng.randn(24, 5).astype(np.float16)
    node = helper.make_node("MatMul", ["m", "k"], ["y"])
    out.append(("MatMul", _case(
        "osprey_matmul_float16", node, [m, k],
        [(m.astype(np.float64) @ k.astype(np.float64)).astype(np.float16)])))
    xc = rng.randn(1, 3, 6, 6).astype(np.float16)
    wc = rng.randn(4, 3, 3, 3).astype(np.float16)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    out.append(("Conv", _case(
        "osprey_conv_float16", node, [xc, wc],
        [_conv_ref(xc.astype(np.float64), wc.astype(np.float64), 1, [1, 1],
                   [1, 1], [1, 1, 1, 1]).astype(np.float16)])))
    return out


def _topk_ref(x, k, axis, largest):
    """TopK along `axis`: ties keep the lower index first; NaN counts as
    the largest value (first when largest, last otherwise)."""
    moved = np.moveaxis(x, axis, -1)
    vals = np.empty(moved.shape[:-1] + (k,), x.dtype)
    idxs = np.empty(moved.shape[:-1] + (k,), np.int64)
    for pos in np.ndindex(moved.shape[:-1]):
        row = moved[pos]
        def key(i):
            v = float(row[i])
            nan = np.isnan(v)
            if largest:
                return (0 if nan else 1, 0.0 if nan else -v, i)
            return (1 if nan else 0, 0.0 if nan else v, i)
        order = sorted(range(len(row)), key=key)[:k]
        vals[pos] = row[order]
        idxs[pos] = order
    return np.moveaxis(vals, -1, axis), np.moveaxis(idxs, -1, axis)


def _topk_cases(rng):
    """TopK with ties, signed zeros, infinities and NaN, integers, k equal
    to the axis length and an outer axis; a reference that sorts in
    Python."""
    out = []
    special = np.array([[3, 1, 3, np.nan, -0.0, 0.0, -np.inf, np.inf, 1, 3],
                        [2, 2, 2, 2, -1, np.nan, np.nan, 5, -5, 0]],
                       np.float32)
    ints = rng.randint(-4, 4, (3, 9)).astype(np.int32)
    wide = rng.randn(5, 4, 3).astype(np.float32)
    for name, x, k, axis, largest in (
            ("special_largest", special, 6, 1, 1),
            ("special_smallest", special, 10, -1, 0),
            ("int32_ties", ints, 4, 1, 1),
            ("axis0", wide, 3, 0, 0)):
        vals, idxs = _topk_ref(x, k, axis if axis >= 0 else x.ndim + axis,
                               largest)
        node = helper.make_node("TopK", ["x", "k"], ["values", "indices"],
                                axis=axis, largest=largest)
        case = _case("osprey_topk_" + name, node,
                     [x, np.array([k], np.int64)], [vals, idxs], opset=11)
        case.tolerance = 0
        out.append(("TopK", case))
    return out


def _dft_cases(rng):
    """DFT beyond onnx 1.12's three: onesided real spectra, dft_length
    padding and truncating the signal, complex input along an inner axis,
    inverse; numpy's fft is the reference."""
    out = []
    for name, shape, axis, length, onesided, inverse in (
            ("onesided_padded", (2, 9, 1), 1, 12, 1, 0),
            ("truncated", (2, 9, 1), 1, 6, 0, 0),
            ("complex_inner_axis", (2, 3, 7, 2), 2, None, 0, 0),
            ("complex_inverse_padded", (1, 5, 2), 1, 8, 0, 1)):
        x = rng.randn(*shape).astype(np.float32)
        signal = x[..., 0] + (1j * x[..., 1] if shape[-1] == 2 else 0)
        n = length or shape[axis]
        fn = np.fft.ifft if inverse else np.fft.fft
        y = fn(signal.astype(np.complex128), n=n, axis=axis)
        if onesided:
            y = np.take(y, np.arange(n // 2 + 1), axis=axis)
        y = np.stack((y.real, y.imag), axis=-1).astype(np.float32)
        inputs = ["x"] + (["len"] if length else [])
        values = [x] + ([np.array(length, np.int64)] if length else [])
        node = helper.make_node("DFT", inputs, ["y"], axis=axis,
                                onesided=onesided, inverse=inverse)
        out.append(("DFT", _case("osprey_dft_" + name, node, values, [y],
                                 opset=17)))
    # STFT of a batch of two with a Hann window, both spectrum forms.
    signal = rng.randn(2, 21, 1).astype(np.float32)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8)).astype(
        np.float32)
    for onesided in (1, 0):
        frames = (21 - 8) // 4 + 1
        bins = 5 if onesided else 8
        y = np.empty((2, frames, bins, 2), np.float32)
        for b in range(2):
            for f in range(frames):
                spec = np.fft.fft(signal[b, 4 * f:4 * f + 8, 0].astype(
                    np.float64) * window)[:bins]
                y[b, f, :, 0], y[b, f, :, 1] = spec.real, spec.imag
        node = helper.make_node("STFT", ["x", "step", "window"], ["y"],
                                onesided=onesided)
        out.append(("STFT", _case(
            "osprey_stft_hann_batch2_onesided%d" % onesided, node,
            [signal, np.array(4, np.int64), window], [y], opset=17)))
    return out


def _det_cases(rng):
    """Det of sizes 1-4 (batched, singular, large entries) against numpy;
    size 5 is refused."""
    out = []
    for name, x in (
            ("1x1", rng.randn(3, 1, 1)),
            ("2x3x3", rng.randn(2, 3, 3) * 4),
            ("4x4", rng.randn(4, 4)),
            ("singular_3x3", np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
            ("2x2x2x2_large", rng.randn(2, 2, 2, 2) * 1e15)):
        x = np.asarray(x, np.float32)
        node = helper.make_node("Det", ["x"], ["y"])
        case = _case("osprey_det_" + name, node, [x],
                     [np.linalg.det(x.astype(np.float64)).astype(np.float32)])
        case.tolerance = 1e-5
        out.append(("Det", case))
    node = helper.make_node("Det", ["x"], ["y"])
    case = _case("osprey_det_5x5", node, [np.eye(5, dtype=np.float32)],
                 [np.ones((), np.float32)])
    case.expect_reject = "Det is implemented for sizes 1 to 4"
    out.append(("Det", case))
    return out


def _mel_reference(mels, dft, rate, lower, upper):
    """MelWeightMatrix as ONNX's reference computes it (the mel step is the
    range over num_mel_bins + 2)."""
    bins = dft // 2 + 1
    low = 2595 * np.log10(1 + lower / 700)
    high = 2595 * np.log10(1 + upper / 700)
    edges = np.arange(mels + 2) * ((high - low) / (mels + 2)) + low
    edges = 700 * (np.power(10, edges / 2595) - 1)
    edges = (((dft + 1) * edges) // rate).astype(int)
    out = np.zeros((bins, mels), np.float64)
    for i in range(mels):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    return out.astype(np.float32)


def _mel_cases():
    """MelWeightMatrix of typical front ends (40 mel bins of a 512-point DFT
    at 16 kHz, 20 Hz to 4 kHz), narrow bins whose edges coincide, and an
    upper edge above the Nyquist frequency refused."""
    out = []
    for name, mels, dft, rate, lower, upper in (
            ("kws", 40, 512, 16000, 20.0, 4000.0),
            ("narrow", 12, 32, 8000, 0.0, 1000.0),
            ("odd_dft", 5, 25, 22050, 100.0, 11000.0)):
        node = helper.make_node("MelWeightMatrix",
                                ["m", "d", "r", "lo", "hi"], ["y"])
        inputs = [np.array(mels, np.int64), np.array(dft, np.int64),
                  np.array(rate, np.int64), np.array(lower, np.float32),
                  np.array(upper, np.float32)]
        out.append(("MelWeightMatrix", _case(
            "osprey_melweightmatrix_" + name, node, inputs,
            [_mel_reference(mels, dft, rate, lower, upper)], opset=17)))
    node = helper.make_node("MelWeightMatrix", ["m", "d", "r", "lo", "hi"], ["y"])
    case = _case("osprey_melweightmatrix_above_nyquist", node,
                 [np.array(8, np.int64), np.array(16, np.int64),
                  np.array(8000, np.int64), np.array(0, np.float32),
                  np.array(6000, np.float32)],
                 [np.zeros((9, 8), np.float32)], opset=17)
    case.expect_reject = "spectrogram bins (at most sample_rate / 2)"
    out.append(("MelWeightMatrix", case))
    return out


def _optimizer_cases():
    """The training domain's optimizers after the first step (T > 0: Adam's
    bias correction, Momentum's beta), several tensors, every attribute,
    against ONNX's own reference functions."""
    from onnx.backend.test.case.node.adagrad import apply_adagrad
    from onnx.backend.test.case.node.adam import apply_adam
    from onnx.backend.test.case.node.momentum import (apply_momentum,
                                                      apply_nesterov)
    domain = "ai.onnx.preview.training"
    r = np.array(0.05, np.float32)
    t = np.array(3, np.int64)
    xs = [np.array([1.5, -2.0, 0.0], np.float32),
          np.array([[0.25, -4.0], [3.0, 1e-3]], np.float32)]
    gs = [np.array([-0.5, 2.0, 0.0], np.float32),
          np.array([[1.0, -0.125], [-2.5, 7.0]], np.float32)]
    ss = [np.array([0.5, 0.25, 1.0], np.float32),
          np.array([[2.0, 0.0], [0.75, 0.1]], np.float32)]
    ts = [np.array([0.3, 0.0, 2.0], np.float32),
          np.array([[1.0, 0.5], [0.25, 4.0]], np.float32)]
    out = []

    def case(name, op, inputs, outputs, **attrs):
        names = ["R", "T"] + ["in%d" % i for i in range(len(inputs) - 2)]
        node = helper.make_node(op, names,
                                ["out%d" % i for i in range(len(outputs))],
                                domain=domain, **attrs)
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info(
                n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
             for n, a in zip(names, inputs)],
            [helper.make_tensor_value_info(
                n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
             for n, a in zip(node.output, outputs)])
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid(domain, 1)])
        c = types.SimpleNamespace(name=name, model=model,
                                  data_sets=[(inputs, outputs)])
        c.tolerance = 1e-5
        out.append((op, c))

    f32 = lambda a: np.asarray(a, np.float32)
    res = [apply_adagrad(r, t, x, g, h, 0.01, 1e-5, 0.1)
           for x, g, h in zip(xs, gs, ss)]
    case("osprey_adagrad_step3", "Adagrad", [r, t] + xs + gs + ss,
         [f32(v[0]) for v in res] + [f32(v[1]) for v in res],
         norm_coefficient=0.01, epsilon=1e-5, decay_factor=0.1)
    for mode, apply in (("standard", apply_momentum),
                        ("nesterov", apply_nesterov)):
        res = [apply(r, t, x, g, v, 0.01, 0.9, 0.5)
               for x, g, v in zip(xs, gs, ss)]
        case("osprey_momentum_%s_step3" % mode, "Momentum",
             [r, t] + xs + gs + ss,
             [f32(v[0]) for v in res] + [f32(v[1]) for v in res],
             norm_coefficient=0.01, alpha=0.9, beta=0.5, mode=mode)
    res = [apply_adam(r, t, x, g, v, h, 0.01, 0.02, 0.8, 0.95, 1e-4)
           for x, g, v, h in zip(xs, gs, ss, ts)]
    case("osprey_adam_step3", "Adam", [r, t] + xs + gs + ss + ts,
         [f32(v[0]) for v in res] + [f32(v[1]) for v in res] +
         [f32(v[2]) for v in res],
         norm_coefficient=0.01, norm_coefficient_post=0.02, alpha=0.8,
         beta=0.95, epsilon=1e-4)
    return out


def _grid_sample_bicubic_ref(x, grid, padding, align):
    """GridSample's bicubic mode (A = -0.75, rows first), each tap's
    coordinate padded, as torch.nn.functional.grid_sample computes it."""
    n_, c_, h, w = x.shape
    _, ho, wo, _ = grid.shape
    a = -0.75

    def unnormalize(g, size):
        return (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2

    def pad(v, size):
        if padding == "border":
            return min(max(v, 0.0), size - 1.0)
        if padding == "reflection":
            lo, hi = (0.0, 2.0 * (size - 1)) if align else (-1.0, 2.0 * size - 1)
            if lo == hi:
                return 0.0
            mid, span = lo / 2, (hi - lo) / 2
            d = abs(v - mid)
            extra, flips = math.fmod(d, span), math.floor(d / span)
            v = extra + mid if flips % 2 == 0 else span - extra + mid
            return min(max(v, 0.0), size - 1.0)
        return v

    def weights(t):
        near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1
        far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    y = np.zeros((n_, c_, ho, wo), np.float64)
    for n in range(n_):
        for i in range(ho):
            for j in range(wo):
                gx = unnormalize(float(grid[n, i, j, 0]), w)
                gy = unnormalize(float(grid[n, i, j, 1]), h)
                x0, y0 = math.floor(gx), math.floor(gy)
                wx, wy = weights(gx - x0), weights(gy - y0)
                for c in range(c_):
                    total = 0.0
                    for r in range(4):
                        py = pad(float(y0 - 1 + r), h)
                        row = 0.0
                        for k in range(4):
                            px = pad(float(x0 - 1 + k), w)
                            inside = 0 <= px <= w - 1 and 0 <= py <= h - 1
                            v = x[n, c, int(py), int(px)] if inside else 0.0
                            row += v * wx[k]
                        total += row * wy[r]
                    y[n, c, i, j] = total
    return y.astype(np.float32)


def _grid_sample_cases(rng):
    """GridSample bicubic with every padding mode, aligned and not, on a grid
    reaching well outside the input."""
    out = []
    x = rng.randn(2, 2, 4, 5).astype(np.float32)
    grid = rng.uniform(-1.6, 1.6, (2, 3, 4, 2)).astype(np.float32)
    grid[0, 0, 0] = [-1.0, 1.0]
    grid[1, 2, 3] = [0.0, 0.0]
    for padding in ("zeros", "border", "reflection"):
        for align in (0, 1):
            node = helper.make_node("GridSample", ["x", "grid"], ["y"],
                                    mode="bicubic", padding_mode=padding,
                                    align_corners=align)
            case = _case("osprey_gridsample_bicubic_%s_align%d" % (padding, align),
                         node, [x, grid],
                         [_grid_sample_bicubic_ref(x, grid, padding, align)],
                         opset=16)
            case.tolerance = 1e-5
            out.append(("GridSample", case))
    return out


def _if_cases(rng):
    """If: a run-time condition either way (branches reading outer values,
    a branch initializer, two nodes), a nested If reading an outer input, a
    constant condition choosing between outputs of different shapes, and
    branches of different shapes under a run-time condition refused."""
    out = []
    f32 = TensorProto.FLOAT
    x = rng.randn(2, 3).astype(np.float32)

    def value(name, shape, dtype=f32):
        return helper.make_tensor_value_info(name, dtype, shape)

    def branch(name, nodes, output, shape, inits=()):
        return helper.make_graph(nodes, name, [], [value(output, shape)],
                                 initializer=list(inits))

    then_g = branch("then", [helper.make_node("Mul", ["x", "two"], ["t_out"])],
                    "t_out", [2, 3],
                    [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    else_g = branch("else", [helper.make_node("Neg", ["x"], ["e1"]),
                             helper.make_node("Abs", ["e1"], ["e_out"])],
                    "e_out", [2, 3])

    def if_case(name, node, inputs, output, opset=13, inits=()):
        """A graph of |node| whose inputs are the (name, array) pairs."""
        graph = helper.make_graph(
            [node], name,
            [value(n, list(a.shape), onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype])
             for n, a in inputs],
            [value("y", list(output.shape))], initializer=list(inits))
        return types.SimpleNamespace(
            name=name,
            model=helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
            data_sets=[([a for _, a in inputs], [output])])

    for flag in (True, False):
        node = helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                                else_branch=else_g)
        want = x * 2 if flag else np.abs(-x)
        out.append(("If", if_case("osprey_if_runtime_%s" % str(flag).lower(), node,
                                  [("c", np.array(flag)), ("x", x)],
                                  want.astype(np.float32))))

    inner = helper.make_node(
        "If", ["c2"], ["n_out"],
        then_branch=branch("inner_then", [helper.make_node("Sin", ["x"], ["s"])],
                           "s", [2, 3]),
        else_branch=branch("inner_else", [helper.make_node("Cos", ["x"], ["k"])],
                           "k", [2, 3]))
    outer_then = helper.make_graph([inner], "outer_then", [], [value("n_out", [2, 3])])
    outer_else = branch("outer_else", [helper.make_node("Exp", ["x"], ["e"])], "e", [2, 3])
    for c1, c2 in ((True, False), (False, True), (True, True)):
        node = helper.make_node("If", ["c1"], ["y"], then_branch=outer_then,
                                else_branch=outer_else)
        want = (np.sin(x) if c2 else np.cos(x)) if c1 else np.exp(x)
        out.append(("If", if_case(
            "osprey_if_nested_%d%d" % (c1, c2), node,
            [("c1", np.array(c1)), ("c2", np.array(c2)), ("x", x)],
            want.astype(np.float32))))

    # A constant condition: only the taken branch is imported, so the
    # branches may differ in shape.
    short_g = branch("short", [helper.make_node("ReduceSum", ["x"], ["r"], keepdims=0)],
                     "r", [])
    for flag in (True, False):
        node = helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                                else_branch=short_g)
        want = (x * 2) if flag else np.array(x.astype(np.float64).sum(), np.float32)
        case = if_case("osprey_if_constant_%s" % str(flag).lower(), node, [("x", x)],
                       np.asarray(want, np.float32), opset=11,
                       inits=[numpy_helper.from_array(np.array(flag), "c")])
        case.tolerance = 1e-5
        out.append(("If", case))

    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                            else_branch=short_g)
    case = if_case("osprey_if_runtime_shapes_differ", node,
                   [("c", np.array(True)), ("x", x)], x * 2)
    case.expect_reject = "selects between outputs of one static type"
    out.append(("If", case))

    # An operator Osprey lacks inside a branch is named like any other.
    odd_g = branch("odd", [helper.make_node("NonZero", ["x"], ["nz"], name="nz_in_branch")],
                   "nz", None)
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                            else_branch=odd_g)
    case = if_case("osprey_if_unsupported_in_branch", node,
                   [("c", np.array(True)), ("x", x)], x * 2)
    case.expect_reject = "unsupported operator: node 'nz_in_branch' (NonZero)"
    out.append(("If", case))
    return out


def _loop_scan_cases(rng):
    """Loop and Scan, which the compiler unrolls: a Scan over two inputs
    along different axes (one read backwards) with two scan outputs on
    different axes (one written backwards); a Loop whose body's condition
    ends it before its trip count, with a run-time input in the body and a
    scan output; a Loop of no iteration. Inputs hold negatives, zeros and
    large values; references step through the definitions in float32."""
    out = []
    f32, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

    def value(name, shape, dtype=f32):
        return helper.make_tensor_value_info(name, dtype, shape)

    def model_case(name, node, inputs, outputs, inits=(), opset=16):
        graph = helper.make_graph(
            [node], name,
            [value(n, list(a.shape)) for n, a in inputs],
            [value(n, list(a.shape)) for n, a in outputs],
            initializer=list(inits))
        return types.SimpleNamespace(
            name=name,
            model=helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
            data_sets=[([a for _, a in inputs], [a for _, a in outputs])])

    # Scan: s' = 0.5 s + a_t * b_t; outputs s' per step (stacked on axis
    # 1) and max(a_t, b_t) (stacked on axis 0, last step first).
    body = helper.make_graph(
        [helper.make_node("Mul", ["s", "half"], ["hs"]),
         helper.make_node("Mul", ["a_t", "b_t"], ["ab"]),
         helper.make_node("Add", ["hs", "ab"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y1"]),
         helper.make_node("Max", ["a_t", "b_t"], ["y2"])],
        "scan_body", [value("s", [3]), value("a_t", [3]), value("b_t", [3])],
        [value("s_out", [3]), value("y1", [3]), value("y2", [3])],
        initializer=[numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    s0 = np.array([1.0, -0.0, -3.5], np.float32)
    a = rng.randn(3, 4).astype(np.float32)
    a[0, 1], a[2, 3] = 0.0, -1e18
    bb = rng.randn(4, 3).astype(np.float32)
    bb[1, 2], bb[3, 0] = 1e18, -0.0
    node = helper.make_node("Scan", ["s0", "a", "b"], ["s_final", "ys", "ms"],
                            body=body, num_scan_inputs=2,
                            scan_input_axes=[1, 0], scan_input_directions=[0, 1],
                            scan_output_axes=[1, -2], scan_output_directions=[0, 1])
    state = s0.copy()
    ys, ms = [], []
    for t in range(4):
        at, bt = a[:, t], bb[3 - t]
        state = (state * np.float32(0.5) + at * bt).astype(np.float32)
        ys.append(state.copy())
        ms.append(np.maximum(at, bt))
    out.append(("Scan", model_case(
        "osprey_scan_axes_directions", node,
        [("s0", s0), ("a", a), ("b", bb)],
        [("s_final", state), ("ys", np.stack(ys, axis=1)),
         ("ms", np.stack(ms[::-1], axis=0))])))

    # Loop: acc' = acc * x + i, until i reaches 3 (cond_out = i < 3), at most
    # 10 trips; the scan output stacks acc' per iteration.
    body = helper.make_graph(
        [helper.make_node("Less", ["i", "three"], ["cond_out"]),
         helper.make_node("Mul", ["acc", "x"], ["ax"]),
         helper.make_node("Cast", ["i"], ["fi"], to=f32),
         helper.make_node("Add", ["ax", "fi"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["trace"])],
        "loop_body", [value("i", [], i64), value("c", [], b), value("acc", [2, 2])],
        [value("cond_out", [], b), value("acc_out", [2, 2]), value("trace", [2, 2])],
        initializer=[numpy_helper.from_array(np.array(3, np.int64), "three")])
    x = np.array([[1.5, -2.0], [0.0, 1e-3]], np.float32)
    acc0 = np.array([[-1.0, 0.5], [3e10, -0.0]], np.float32)
    acc, trace = acc0.copy(), []
    for i in range(10):
        acc = (acc * x + np.float32(i)).astype(np.float32)
        trace.append(acc.copy())
        if not i < 3:
            break
    node = helper.make_node("Loop", ["M", "cond", "acc0"], ["acc_final", "traces"],
                            body=body)
    out.append(("Loop", model_case(
        "osprey_loop_early_exit", node, [("acc0", acc0), ("x", x)],
        [("acc_final", acc), ("traces", np.stack(trace))],
        inits=[numpy_helper.from_array(np.array(10, np.int64), "M"),
               numpy_helper.from_array(np.array(True), "cond")])))

    # No iteration: the loop-carried value is the initial one.
    node = helper.make_node("Loop", ["M", "", "acc0"], ["acc_final"], body=helper.make_graph(
        [helper.make_node("Identity", ["c"], ["cond_out"]),
         helper.make_node("Mul", ["acc", "x"], ["acc_out"])],
        "loop_body", [value("i", [], i64), value("c", [], b), value("acc", [2, 2])],
        [value("cond_out", [], b), value("acc_out", [2, 2])]))
    out.append(("Loop", model_case(
        "osprey_loop_no_iteration", node, [("acc0", acc0), ("x", x)],
        [("acc_final", acc0)],
        inits=[numpy_helper.from_array(np.array(0, np.int64), "M")])))
    return out


def _maxpool_indices_ref(x, kernel, strides, pads, dilations, order):
    """MaxPool's values and Indices: the first largest tap of each window in
    scan order (padding excluded), as a flat index of the input (spatial
    axes row major, or column major for storage_order 1)."""
    n_, c_ = x.shape[:2]
    dims = x.shape[2:]
    sp = len(dims)
    out = [(dims[d] + pads[d] + pads[d + sp] - dilations[d] * (kernel[d] - 1) - 1)
           // strides[d] + 1 for d in range(sp)]
    y = np.zeros((n_, c_) + tuple(out), x.dtype)
    z = np.zeros((n_, c_) + tuple(out), np.int64)
    plane = int(np.prod(dims))
    for n in range(n_):
        for c in range(c_):
            for o in np.ndindex(*out):
                best, best_at = None, 0
                for k in np.ndindex(*kernel):
                    coord = [o[d] * strides[d] - pads[d] + k[d] * dilations[d]
                             for d in range(sp)]
                    if any(v < 0 or v >= dims[d] for d, v in enumerate(coord)):
                        continue
                    v = x[(n, c) + tuple(coord)]
                    if best is None or v > best:
                        if order:
                            flat, step = 0, 1
                            for d in range(sp):
                                flat += coord[d] * step
                                step *= dims[d]
                        else:
                            flat = int(np.ravel_multi_index(coord, dims))
                        best, best_at = v, flat
                y[(n, c) + o] = best
                z[(n, c) + o] = (n * c_ + c) * plane + best_at
    return y, z


def _maxpool_indices_cases(rng):
    """MaxPool's Indices: ties (rounded values), padding, strides and
    dilations, both storage orders, several planes, uint8 zeros beside the
    padding, and a 1-D pool."""
    out = []
    x = np.round(rng.randn(2, 3, 6, 7) * 1.5).astype(np.float32)
    for name, kernel, strides, pads, dilations, order in (
            ("pads_ties", [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], 0),
            ("strides_dilation_col", [2, 3], [2, 2], [0, 1, 1, 0], [2, 1], 1),
            ("asym_pads_col", [3, 2], [1, 3], [2, 0, 0, 1], [1, 1], 1)):
        node = helper.make_node("MaxPool", ["x"], ["y", "z"], kernel_shape=kernel,
                                strides=strides, pads=pads, dilations=dilations,
                                storage_order=order)
        y, z = _maxpool_indices_ref(x, kernel, strides, pads, dilations, order)
        out.append(("MaxPool", _case("osprey_maxpool_indices_" + name, node, [x],
                                     [y, z], opset=12)))
    # auto_pad SAME_UPPER: 6x7 by stride 2 gives 3x4, padding (0, 1) and (1, 1).
    node = helper.make_node("MaxPool", ["x"], ["y", "z"], kernel_shape=[3, 3],
                            strides=[2, 2], auto_pad="SAME_UPPER")
    y, z = _maxpool_indices_ref(x, [3, 3], [2, 2], [0, 1, 1, 1], [1, 1], 0)
    out.append(("MaxPool", _case("osprey_maxpool_indices_same_upper", node, [x],
                                 [y, z], opset=12)))
    xu = (rng.rand(1, 2, 4, 4) * 3).astype(np.uint8)
    xu[0, 0, 0, :] = 0
    node = helper.make_node("MaxPool", ["x"], ["y", "z"], kernel_shape=[3, 3],
                            pads=[2, 2, 2, 2])
    y, z = _maxpool_indices_ref(xu, [3, 3], [1, 1], [2, 2, 2, 2], [1, 1], 0)
    out.append(("MaxPool", _case("osprey_maxpool_indices_uint8_pads", node, [xu],
                                 [y, z], opset=12)))
    x1 = rng.randn(2, 2, 9).astype(np.float32)
    node = helper.make_node("MaxPool", ["x"], ["y", "z"], kernel_shape=[4],
                            strides=[2], pads=[1, 2])
    y, z = _maxpool_indices_ref(x1, [4], [2], [1, 2], [1], 0)
    out.append(("MaxPool", _case("osprey_maxpool_indices_1d", node, [x1], [y, z],
                                 opset=12)))
    return out


def cases():
    """Returns (op, case) pairs."""
    rng = np.random.RandomState(7)
    out = []

    x = rng.randn(1, 4, 7, 7).astype(np.float32)
    w = rng.randn(6, 2, 3, 3).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=2,
                            dilations=[2, 2], pads=[1, 2, 2, 1])
    out.append(("Conv", _case("osprey_conv_group_dilation_pads", node, [x, w],
                              [_conv_ref(x, w, 2, [1, 1], [2, 2], [1, 2, 2, 1])])))

    x = rng.randn(1, 4, 3, 4).astype(np.float32)
    w = rng.randn(4, 3, 3, 3).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=2,
                            strides=[2, 2], pads=[1, 1, 1, 1],
                            output_padding=[1, 1])
    out.append(("ConvTranspose", _case(
        "osprey_convtranspose_group_stride", node, [x, w],
        [_conv_transpose_ref(x, w, 2, [2, 2], [1, 1, 1, 1], [1, 1])])))

    x = rng.randn(2, 3, 4).astype(np.float32)
    pads = np.array([0, 2, 1, 1, 1, 3], np.int64)
    for mode in ("edge", "reflect"):
        node = helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)
        ref = np.pad(x, [(0, 1), (2, 1), (1, 3)], mode=mode)
        out.append(("Pad", _case("osprey_pad_%s_f32" % mode, node,
                                 [x, pads], [ref])))

    data = rng.randn(3, 5, 2).astype(np.float32)
    idx = np.array([[0, -1], [2, 3], [4, 4]], np.int64)
    node = helper.make_node("Gather", ["data", "idx"], ["y"], axis=1)
    out.append(("Gather", _case("osprey_gather_axis1_2d_indices", node,
                                [data, idx], [np.take(data, idx, axis=1)])))

    data = rng.randn(7, 3).astype(np.float32)
    idx = np.array([-1, 4, 2, 0], np.int64)
    node = helper.make_node("Gather", ["data", "idx"], ["y"], axis=0)
    out.append(("Gather", _case("osprey_gather_progression", node,
                                [data, idx], [np.take(data, idx, axis=0)])))

    a = rng.randn(2, 1, 3, 4).astype(np.float32)
    b = rng.randn(5, 4, 6).astype(np.float32)
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    out.append(("MatMul", _case("osprey_matmul_broadcast_batch", node, [a, b],
                                [np.matmul(a, b)])))

    x = rng.randn(6, 7).astype(np.float32)
    starts = np.array([5, -2], np.int64)
    ends = np.array([0, -100], np.int64)
    axes = np.array([0, 1], np.int64)
    steps = np.array([-2, -3], np.int64)
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"],
                            ["y"])
    out.append(("Slice", _case("osprey_slice_negative_steps", node,
                               [x, starts, ends, axes, steps],
                               [x[5:0:-2, -2::-3]])))

    # Gelu (ONNX opset 20, newer than onnx 1.12 and than the opsets Osprey
    # reads) is accepted by Osprey as an extension in opset <= 18 models.
    import math
    x = np.concatenate([np.linspace(-6, 6, 49),
                        rng.randn(15) * 3]).astype(np.float32).reshape(4, 16)
    xd = x.astype(np.float64)
    erf = np.vectorize(math.erf)
    refs = {
        "none": 0.5 * xd * (1 + erf(xd / math.sqrt(2))),
        "tanh": 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                        (xd + 0.044715 * xd ** 3))),
    }
    for approx, ref in refs.items():
        node = helper.make_node("Gelu", ["x"], ["y"], approximate=approx)
        out.append(("Gelu", _case("osprey_gelu_" + approx, node, [x],
                                  [ref.astype(np.float32)], opset=18)))

    # Out-of-range constant Gather indices (ONNX: an error) must be rejected
    # at compile time with an error naming the node, never read.
    data = rng.randn(3, 4).astype(np.float32)
    for name, bad in (("high", 4), ("low", -5)):
        idx = np.array([1, bad], np.int64)
        node = helper.make_node("Gather", ["data", "idx"], ["y"], axis=1)
        case = _case("osprey_gather_index_out_of_range_" + name, node,
                     [data, idx], [np.zeros((3, 2), np.float32)])
        case.expect_reject = "index %d is out of range for an axis of 4" % bad
        out.append(("Gather", case))

    # DepthToSpace / SpaceToDepth beyond ONNX's examples: a batch of two,
    # blocksize 3, both DepthToSpace modes and integer data (the reference
    # is the ONNX definition's reshape-transpose-reshape, in numpy).
    x = rng.randn(2, 18, 2, 3).astype(np.float32)
    n, c, h, w = x.shape
    for mode in ("DCR", "CRD"):
        if mode == "DCR":
            t = x.reshape(n, 3, 3, c // 9, h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(n, c // 9, 3, 3, h, w).transpose(0, 1, 4, 2, 5, 3)
        node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=3,
                                mode=mode)
        out.append(("DepthToSpace", _case(
            "osprey_depthtospace_b3_" + mode.lower(), node, [x],
            [t.reshape(n, c // 9, h * 3, w * 3)])))
    xi = rng.randint(-100, 100, (2, 3, 6, 4)).astype(np.int32)
    n, c, h, w = xi.shape
    t = xi.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4)
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)
    out.append(("SpaceToDepth", _case(
        "osprey_spacetodepth_b2_int32", node, [xi],
        [t.reshape(n, c * 4, h // 2, w // 2)])))
    # Shapes the block size does not divide are an error naming the node.
    node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)
    case = _case("osprey_depthtospace_bad_channels", node,
                 [rng.randn(1, 6, 2, 2).astype(np.float32)],
                 [np.zeros((1, 1, 4, 4), np.float32)])
    case.expect_reject = "channels (6) are not a multiple of blocksize^2 (4)"
    out.append(("DepthToSpace", case))
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)
    case = _case("osprey_spacetodepth_bad_height", node,
                 [rng.randn(1, 2, 3, 4).astype(np.float32)],
                 [np.zeros((1, 8, 1, 2), np.float32)])
    case.expect_reject = "height and width (3, 4) are not multiples of blocksize (2)"
    out.append(("SpaceToDepth", case))

    # ConstantOfShape: a double fill and a negative dimension (an error
    # naming the node). The shape is an initializer (CONST_INPUTS).
    shape = np.array([2, 0, 3], np.int64)
    node = helper.make_node(
        "ConstantOfShape", ["shape"], ["y"],
        value=helper.make_tensor("value", TensorProto.DOUBLE, [1], [-2.5]))
    out.append(("ConstantOfShape", _case(
        "osprey_constantofshape_double_empty", node, [shape],
        [np.full((2, 0, 3), -2.5, np.float64)])))
    shape = np.array([3, 4], np.int64)
    out.append(("ConstantOfShape", _case(
        "osprey_constantofshape_double", node, [shape],
        [np.full((3, 4), -2.5, np.float64)])))
    # Over the compiler's 1 MiB folding limit the fill is computed at run
    # time; the graph's one node takes the fill's shape from an initializer.
    shape = np.array([300, 1024], np.int64)
    node = helper.make_node(
        "ConstantOfShape", ["shape"], ["y"],
        value=helper.make_tensor("value", TensorProto.FLOAT, [1], [-0.75]))
    out.append(("ConstantOfShape", _case(
        "osprey_constantofshape_large", node, [shape],
        [np.full((300, 1024), -0.75, np.float32)])))
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"])
    case = _case("osprey_constantofshape_negative", node,
                 [np.array([2, -1], np.int64)], [np.zeros((2, 1), np.float32)])
    case.expect_reject = "shape dimension -1 is negative"
    out.append(("ConstantOfShape", case))

    # Trilu over a batch of matrices holding NaN and infinities (zeroed where
    # the triangle ends, kept where it does not), compared exactly; and a k
    # far outside the matrix.
    x = rng.randn(2, 3, 4, 5).astype(np.float32)
    x[0, 1, 2, :] = [np.nan, np.inf, -np.inf, -0.0, np.nan]
    for upper, k in ((0, -1), (1, 2), (1, -(1 << 40))):
        node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)
        ref = np.triu(x, k) if upper else np.tril(x, k)
        case = _case("osprey_trilu_%s_k%d" % ("upper" if upper else "lower",
                                               k if k > -100 else -999),
                     node, [x, np.array(k, np.int64)], [ref])
        case.tolerance = 0
        out.append(("Trilu", case))

    # GatherElements in 3-D along each axis, indices (i32 and i64, negative
    # ones too) smaller than the data along the other axes; an index tensor
    # that reaches past the data along another axis is an error.
    data = rng.randint(-1000, 1000, (4, 5, 6)).astype(np.int64)
    for axis, itype in ((0, np.int64), (1, np.int32), (-1, np.int64)):
        shape = [3, 4, 5]
        shape[axis] = 7
        d = data.shape[axis]
        idx = rng.randint(-d, d, shape).astype(itype)
        window = tuple(slice(None) if a == axis % 3 else slice(0, shape[a])
                       for a in range(3))
        ref = np.take_along_axis(data[window], np.where(idx < 0, idx + d, idx),
                                 axis)
        node = helper.make_node("GatherElements", ["data", "idx"], ["y"],
                                axis=axis)
        out.append(("GatherElements", _case(
            "osprey_gather_elements_axis%d" % axis, node,
            [data, idx], [ref])))
    node = helper.make_node("GatherElements", ["data", "idx"], ["y"], axis=0)
    case = _case("osprey_gather_elements_too_wide", node,
                 [data, np.zeros((2, 6, 6), np.int64)],
                 [np.zeros((2, 6, 6), np.int64)])
    case.expect_reject = "indices dimension 1 (6) exceeds the data's (5)"
    out.append(("GatherElements", case))

    # Integer Mod over a grid of signs and extremes (INT_MIN % -1 is 0),
    # both fmod modes, compared exactly.
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    a = np.array([-7, -3, -1, 0, 1, 3, 7, lo, hi], np.int32).reshape(-1, 1)
    b = np.array([-7, -3, -1, 1, 2, 3, 7, lo, hi], np.int32).reshape(1, -1)
    with np.errstate(all="ignore"):
        for fmod, ref in ((0, np.mod), (1, np.fmod)):
            node = helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)
            case = _case("osprey_mod_int32_grid_fmod%d" % fmod, node, [a, b],
                         [ref(a, b).astype(np.int32)])
            case.tolerance = 0
            out.append(("Mod", case))

    # ReduceLogSumExp in float32 where the naive formula overflows (1000s),
    # on rows of -inf, +inf and NaN, over one and over all axes.
    x = (rng.randn(3, 4, 5) * 3).astype(np.float32)
    x[0, 0, :] = 1000.0
    x[1, 1, :] = -np.inf
    x[1, 2, 3] = np.inf
    x[2, 3, 1] = np.nan

    def lse(v, axis, keep):
        v = v.astype(np.float64)
        with np.errstate(all="ignore"):
            m = np.max(v, axis=axis, keepdims=True)
            m = np.clip(m, -3.4028234663852886e38, 3.4028234663852886e38)
            y = np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True)) + m
        return (y if keep else np.squeeze(y, axis=axis)).astype(np.float32)
    for axes, keep in (([2], 0), ([1, 2], 1), (None, 0)):
        attrs = {"keepdims": keep}
        if axes is not None:
            attrs["axes"] = axes
        node = helper.make_node("ReduceLogSumExp", ["x"], ["y"], **attrs)
        axis = tuple(axes) if axes is not None else (0, 1, 2)
        out.append(("ReduceLogSumExp", _case(
            "osprey_reduce_log_sum_exp_%s_keep%d" % (
                "all" if axes is None else "_".join(map(str, axes)), keep),
            node, [x], [lse(x, axis, keep)])))

    # ArgMax and ArgMin: ties (first or last index), -0 beside +0, +-inf,
    # rows of -inf and rows holding NaN (numpy's rule: the first NaN), along
    # every axis of a 3-D tensor and on integer types at their extremes;
    # indices are compared exactly.
    def arg(fn, v, axis, keep, last):
        if last:
            r = v.shape[axis] - 1 - fn(np.flip(v, axis=axis), axis=axis)
        else:
            r = fn(v, axis=axis)
        r = r.astype(np.int64)
        return np.expand_dims(r, axis) if keep else r
    x = rng.randint(-3, 4, size=(3, 4, 5)).astype(np.float32)
    x[0, 0, :] = [-0.0, 0.0, -0.0, -1.0, -2.0]
    x[0, 1, :] = [-np.inf] * 5
    x[0, 2, :] = [1.0, np.inf, 2.0, np.inf, -np.inf]
    x[1, 0, :] = [1.0, np.nan, 5.0, np.nan, -1.0]
    x[2, 3, :] = [np.nan] * 5
    i32 = np.iinfo(np.int32)
    xi = rng.randint(-5, 6, size=(4, 6)).astype(np.int32)
    xi[0, :] = [i32.min, i32.max, 0, i32.max, i32.min, 7]
    xu = rng.randint(0, 256, size=(4, 6)).astype(np.uint8)
    xu[1, :] = [255, 0, 255, 0, 3, 3]
    for op, fn in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
        for axis in (0, 1, -1):
            for keep, last in ((1, 0), (0, 1)):
                node = helper.make_node(op, ["x"], ["y"], axis=axis,
                                        keepdims=keep, select_last_index=last)
                case = _case("osprey_%s_f32_axis%d_keep%d_last%d" % (
                    op.lower(), axis % 3, keep, last), node, [x],
                    [arg(fn, x, axis, keep, last)])
                case.tolerance = 0
                out.append((op, case))
        for name, v in (("int32", xi), ("int64", xi.astype(np.int64)),
                        ("uint8", xu)):
            for last in (0, 1):
                node = helper.make_node(op, ["x"], ["y"], axis=1,
                                        keepdims=0, select_last_index=last)
                case = _case("osprey_%s_%s_last%d" % (op.lower(), name, last),
                             node, [v], [arg(fn, v, 1, 0, last)])
                case.tolerance = 0
                out.append((op, case))
    node = helper.make_node("ArgMax", ["x"], ["y"], axis=3)
    case = _case("osprey_argmax_axis_out_of_range", node, [x],
                 [np.zeros((3, 4, 1), np.int64)])
    case.expect_reject = "axis"
    out.append(("ArgMax", case))

    # CumSum along every axis, all four exclusive/reverse modes, on float
    # with infinities and NaN (their sums do not depend on the order) and on
    # integers; the axis comes as int32 and as int64.
    def cumsum(v, axis, exclusive, reverse):
        v = np.flip(v, axis) if reverse else v
        r = np.cumsum(v, axis=axis, dtype=v.dtype)
        if exclusive:
            r = np.concatenate([np.zeros_like(np.take(r, [0], axis=axis)),
                                np.take(r, range(v.shape[axis] - 1),
                                        axis=axis)], axis=axis)
        return np.flip(r, axis) if reverse else r
    x = rng.randn(2, 3, 5).astype(np.float32)
    x[1, 2, :] = [1.0, np.inf, 2.0, -np.inf, 3.0]
    x[0, 1, :] = [np.nan, 0.0, -0.0, 1e30, -1e30]
    xi = rng.randint(-1000, 1000, size=(4, 6)).astype(np.int64)
    for axis in (0, 1, -1):
        for exclusive in (0, 1):
            for reverse in (0, 1):
                node = helper.make_node("CumSum", ["x", "axis"], ["y"],
                                        exclusive=exclusive, reverse=reverse)
                a = np.array(axis, np.int32 if axis == 1 else np.int64)
                out.append(("CumSum", _case(
                    "osprey_cumsum_f32_axis%d_excl%d_rev%d" % (
                        axis % 3, exclusive, reverse), node, [x, a],
                    [cumsum(x, axis, exclusive, reverse)])))
    for name, v in (("int64", xi), ("int32", xi.astype(np.int32))):
        node = helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=1,
                                reverse=1)
        case = _case("osprey_cumsum_%s" % name, node,
                     [v, np.array(1, np.int64)], [cumsum(v, 1, 1, 1)])
        case.tolerance = 0
        out.append(("CumSum", case))

    # OneHot as its definition reads: indices cast to int64 (fractions
    # truncate toward zero), negatives count back from depth, anything
    # outside [-depth, depth) gives a row of off values; along each axis.
    def onehot(ind, depth, axis, values):
        idx = ind.astype(np.int64)
        idx = np.where(idx < 0, idx + depth, idx)
        idx = np.expand_dims(idx, axis)
        shape = [1] * idx.ndim
        shape[axis] = depth
        hot = idx == np.arange(depth).reshape(shape)
        return np.where(hot, values[1], values[0]).astype(values.dtype)
    ind = np.array([[0, 4, -1, -5], [5, -6, 100, 2]], np.int32)
    fractional = np.array([1.7, -1.5, 3.99, -0.4, 4.0, np.float32(-5.2)],
                          np.float32)
    depth = np.array(5, np.int64)
    for axis in (0, 1, -1):
        values = np.array([-3, 7], np.int64)
        node = helper.make_node("OneHot", ["i", "depth", "v"], ["y"],
                                axis=axis)
        case = _case("osprey_onehot_int32_axis%d" % (axis % 3), node,
                     [ind, depth, values],
                     [onehot(ind, 5, axis % 3, values)], opset=11)
        case.tolerance = 0
        out.append(("OneHot", case))
    values = np.array([0.5, -2.0], np.float32)
    node = helper.make_node("OneHot", ["i", "depth", "v"], ["y"])
    case = _case("osprey_onehot_fractional_indices", node,
                 [fractional, np.array(5.0, np.float32), values],
                 [onehot(fractional, 5, 1, values)])
    case.tolerance = 0
    out.append(("OneHot", case))

    # Hardmax: 1 at the first maximum (ties, -inf rows, NaN first) along
    # each axis.
    x = rng.randint(-2, 3, size=(2, 3, 4)).astype(np.float32)
    x[0, 0, :] = [-np.inf] * 4
    x[1, 2, :] = [1.0, np.nan, 2.0, np.nan]
    for axis in (0, 1, 2):
        hot = np.expand_dims(np.argmax(x, axis=axis), axis) == np.arange(
            x.shape[axis]).reshape([-1 if d == axis else 1 for d in range(3)])
        node = helper.make_node("Hardmax", ["x"], ["y"], axis=axis)
        case = _case("osprey_hardmax_axis%d" % axis, node, [x],
                     [hot.astype(np.float32)])
        case.tolerance = 0
        out.append(("Hardmax", case))

    # Tile along three axes (a repeat of 1 included); Range with a negative
    # fractional step and an empty int64 range; EyeLike above and below the
    # diagonal.
    x = rng.randn(2, 3, 1).astype(np.float32)
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    out.append(("Tile", _case("osprey_tile_3d", node,
                              [x, np.array([3, 1, 4], np.int64)],
                              [np.tile(x, (3, 1, 4))])))
    for name, (a, b, d) in (("f32_negative_step", (np.float32(2.5),
                                                   np.float32(-1.0),
                                                   np.float32(-0.75))),
                            ("int64_empty", (np.int64(5), np.int64(2),
                                             np.int64(1)))):
        node = helper.make_node("Range", ["a", "b", "d"], ["y"])
        case = _case("osprey_range_" + name, node,
                     [np.array(a), np.array(b), np.array(d)],
                     [np.arange(a, b, d).astype(np.array(a).dtype)], opset=11)
        case.tolerance = 0
        out.append(("Range", case))
    for k in (-2, 3):
        node = helper.make_node("EyeLike", ["x"], ["y"], k=k,
                                dtype=onnx.TensorProto.INT32)
        case = _case("osprey_eyelike_k%d" % k, node,
                     [np.zeros((4, 5), np.float32)],
                     [np.eye(4, 5, k=k, dtype=np.int32)])
        case.tolerance = 0
        out.append(("EyeLike", case))

    # BitShift over every unsigned type, with shift amounts from 0 to past
    # the width (those give 0, as numpy's shifts do), broadcast.
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        bits = np.dtype(dtype).itemsize * 8
        x = np.array([0, 1, 3, 0x5A, np.iinfo(dtype).max], dtype).reshape(-1, 1)
        amount = np.array([0, 1, 3, bits - 1, bits, bits + 5],
                          dtype).reshape(1, -1)
        for direction, fn in (("LEFT", np.left_shift),
                              ("RIGHT", np.right_shift)):
            ref = np.where(amount < bits,
                           fn(x, np.minimum(amount, bits - 1).astype(dtype)),
                           0).astype(dtype)
            node = helper.make_node("BitShift", ["x", "s"], ["y"],
                                    direction=direction)
            case = _case("osprey_bitshift_%s_%s" % (
                np.dtype(dtype).name, direction.lower()), node, [x, amount],
                [ref], opset=11)
            case.tolerance = 0
            out.append(("BitShift", case))
    node = helper.make_node("BitShift", ["x", "s"], ["y"], direction="UP")
    case = _case("osprey_bitshift_bad_direction", node,
                 [np.ones(3, np.uint8), np.ones(3, np.uint8)],
                 [np.ones(3, np.uint8)], opset=11)
    case.expect_reject = "direction must be LEFT or RIGHT"
    out.append(("BitShift", case))

    # InstanceNormalization on a 3-D map with a large offset (the centred
    # variance does not cancel) and a constant channel (variance 0, so
    # epsilon decides); MeanVarianceNormalization over other axes.
    x = (rng.randn(2, 3, 4, 5) * 2 + 1000).astype(np.float32)
    x[1, 2] = 7.0
    scale = rng.randn(3).astype(np.float32)
    bias = rng.randn(3).astype(np.float32)
    x64 = x.astype(np.float64)
    m = x64.mean(axis=(2, 3), keepdims=True)
    v = ((x64 - m) ** 2).mean(axis=(2, 3), keepdims=True)
    ref = ((x64 - m) / np.sqrt(v + 1e-3) * scale.reshape(1, 3, 1, 1) +
           bias.reshape(1, 3, 1, 1)).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"],
                            epsilon=1e-3)
    out.append(("InstanceNormalization", _case(
        "osprey_instancenorm_offset", node, [x, scale, bias], [ref])))
    # BatchNormalization in training mode: statistics over the batch and
    # the spatial axes (offset by 1000, one channel constant), the running
    # statistics with a momentum of 0.7; a rank-3 input with only y.
    x = (rng.randn(3, 3, 4, 2) * 2 + 1000).astype(np.float32)
    x[:, 1] = -4.0
    mean_in = rng.randn(3).astype(np.float32)
    var_in = rng.rand(3).astype(np.float32) + 0.5
    x64 = x.astype(np.float64)
    m = x64.mean(axis=(0, 2, 3))
    v = ((x64 - m.reshape(1, 3, 1, 1)) ** 2).mean(axis=(0, 2, 3))
    y = ((x64 - m.reshape(1, 3, 1, 1)) / np.sqrt(v.reshape(1, 3, 1, 1) + 1e-2) *
         scale.reshape(1, 3, 1, 1) + bias.reshape(1, 3, 1, 1))
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            ["y", "rm", "rv"], epsilon=1e-2, momentum=0.7,
                            training_mode=1)
    out.append(("BatchNormalization", _case(
        "osprey_batchnorm_training", node, [x, scale, bias, mean_in, var_in],
        [y.astype(np.float32), (mean_in * 0.7 + m * 0.3).astype(np.float32),
         (var_in * 0.7 + v * 0.3).astype(np.float32)], opset=15)))
    x = rng.randn(4, 3, 6).astype(np.float32)
    x64 = x.astype(np.float64)
    m = x64.mean(axis=(0, 2), keepdims=True)
    v = ((x64 - m) ** 2).mean(axis=(0, 2), keepdims=True)
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                            ["y"], training_mode=1)
    out.append(("BatchNormalization", _case(
        "osprey_batchnorm_training_rank3_y_only", node,
        [x, scale, bias, mean_in, var_in],
        [((x64 - m) / np.sqrt(v + 1e-5) * scale.reshape(1, 3, 1) +
          bias.reshape(1, 3, 1)).astype(np.float32)], opset=15)))

    x = rng.randn(2, 3, 4, 5).astype(np.float32)
    x64 = x.astype(np.float64)
    m = x64.mean(axis=(1, 3), keepdims=True)
    v = ((x64 - m) ** 2).mean(axis=(1, 3), keepdims=True)
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"],
                            axes=[1, 3])
    out.append(("MeanVarianceNormalization", _case(
        "osprey_mvn_axes_1_3", node, [x],
        [((x64 - m) / (np.sqrt(v) + 1e-9)).astype(np.float32)])))

    # LRN with even and odd windows wider than the channel count's edges.
    x = rng.randn(1, 5, 3, 4).astype(np.float32) * 3
    for size in (2, 4, 7):
        sq = np.pad(x.astype(np.float64) ** 2,
                    [(0, 0), ((size - 1) // 2, size - 1 - (size - 1) // 2),
                     (0, 0), (0, 0)])
        s = sum(sq[:, k:k + 5] for k in range(size))
        ref = (x / (2.0 + 0.5 / size * s) ** 0.6).astype(np.float32)
        node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.5,
                                beta=0.6, bias=2.0)
        out.append(("LRN", _case("osprey_lrn_size%d" % size, node, [x],
                                 [ref])))

    out.extend(_typed_cases(rng))
    out.extend(_quantization_cases(rng))
    out.extend(_trig_cases(rng))
    out.extend(_einsum_cases(rng))
    out.extend(_scatter_gather_cases(rng))
    out.extend(_recurrent_cases(rng))
    out.extend(_half_cases(rng))
    out.extend(_topk_cases(rng))
    out.extend(_dft_cases(rng))
    out.extend(_det_cases(rng))
    out.extend(_mel_cases())
    out.extend(_optimizer_cases())
    out.extend(_grid_sample_cases(rng))
    out.extend(_if_cases(rng))
    out.extend(_loop_scan_cases(rng))
    out.extend(_maxpool_indices_cases(rng))

    from onnx.backend.test.case.node import resize as resize_gen
    x = rng.randn(1, 2, 4, 5).astype(np.float32)
    for mode, transform, scales in (
            ("linear", "half_pixel", [1.0, 1.0, 2.0, 1.5]),
            ("linear", "asymmetric", [1.0, 1.0, 4.0, 3.0]),
            ("linear", "align_corners", [1.0, 1.0, 1.5, 0.6]),
            ("nearest", "asymmetric", [1.0, 1.0, 3.0, 2.0]),
            # Cubic upsampling by integer factors over the edge-padded
            # axis (periodic taps), 3x up on 12 columns (more reads than
            # one select per tap allows), downsampling, and cubic weights
            # renormalized at the edges (exclude_outside).
            ("cubic", "half_pixel", [1.0, 1.0, 2.0, 3.0]),
            ("cubic", "asymmetric", [1.0, 1.0, 4.0, 2.0]),
            ("cubic", "align_corners", [1.0, 1.0, 0.6, 0.8]),
            ("cubic_exclude", "half_pixel", [1.0, 1.0, 1.5, 2.0])):
        scales = np.array(scales, np.float32)
        exclude = mode == "cubic_exclude"
        mode = "cubic" if exclude else mode
        attrs = {"exclude_outside": 1, "cubic_coeff_a": -0.5} if exclude \
            else {}
        node = helper.make_node("Resize", ["x", "", "scales"], ["y"],
                                mode=mode,
                                coordinate_transformation_mode=transform,
                                **attrs)
        coeffs = (resize_gen.linear_coeffs if mode == "linear" else
                  (lambda r: resize_gen.cubic_coeffs(r, A=-0.5)) if exclude
                  else resize_gen.cubic_coeffs if mode == "cubic" else
                  resize_gen.nearest_coeffs)
        xin = x if mode != "cubic" else rng.randn(1, 2, 5, 12).astype(
            np.float32)
        ref = resize_gen.interpolate_nd(
            xin, coeffs, scale_factors=scales,
            coordinate_transformation_mode=transform,
            exclude_outside=exclude).astype(np.float32)
        out.append(("Resize", _case(
            "osprey_resize_%s_%s%s" % (mode, transform,
                                       "_exclude_outside" if exclude else ""),
            node, [xin, scales], [ref])))

    # tf_crop_and_resize: crops reaching outside the input on both sides
    # (extrapolation_value there), given by scales (the output has
    # floor(in * scale) elements, as ONNX's shape inference and reference
    # have it, and coordinates divide by scale * in - 1) and by sizes,
    # linear and nearest, an axis resized to one element (the middle of its
    # crop).
    def crop_ref(x, roi, out_shape, mode, extrapolation, widths):
        n = x.ndim
        y = x.astype(np.float64)
        outside = np.zeros(out_shape, bool)
        for a in range(n):
            size_in, size_out = x.shape[a], out_shape[a]
            start, end = roi[a], roi[n + a]
            w = np.zeros((size_out, size_in))
            for o in range(size_out):
                width = widths[a]
                c = (0.5 * (start + end) * (size_in - 1) if width == 1 else
                     start * (size_in - 1) + o * (end - start) * (size_in - 1) /
                     (width - 1))
                if c < 0 or c > size_in - 1:
                    shape = [1] * n
                    shape[a] = size_out
                    mark = np.zeros(shape, bool)
                    mark.reshape(-1)[o] = True
                    outside |= np.broadcast_to(mark, out_shape)
                    continue
                lo = int(math.floor(c))
                r = c - lo
                if mode == "nearest":  # round_prefer_floor
                    w[o, lo + 1 if r > 0.5 else lo] = 1
                else:
                    w[o, lo] += 1 - r
                    if r > 0:
                        w[o, lo + 1] += r
            y = np.moveaxis(np.tensordot(w, np.moveaxis(y, a, 0), axes=1), 0, a)
        y[outside] = extrapolation
        return y.astype(np.float32)

    x = rng.randn(1, 2, 4, 5).astype(np.float32) * 4
    x[0, 0, 1, 2], x[0, 1, 3, 0], x[0, 1, 0, 4] = 0.0, -3e4, 2e4
    roi = np.array([0, 0, -0.3, 0.2, 1, 1, 1.1, 0.9], np.float32)
    scales = np.array([1, 1, 1.5, 2], np.float32)
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear",
                            coordinate_transformation_mode="tf_crop_and_resize",
                            extrapolation_value=10.0)
    out.append(("Resize", _case(
        "osprey_resize_crop_scales_linear", node, [x, roi, scales],
        [crop_ref(x, roi.astype(np.float64), (1, 2, 6, 10), "linear", 10.0,
                  scales.astype(np.float64) * x.shape)])))
    x = rng.randn(2, 3, 6).astype(np.float32)
    x[1, 2, :] = [-1e3, 0.0, -0.0, 1e3, 5.0, -5.0]
    roi = np.array([0, 0.25, -0.5, 1, 0.75, 0.5], np.float32)
    sizes = np.array([2, 1, 7], np.int64)
    node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="nearest",
                            coordinate_transformation_mode="tf_crop_and_resize")
    out.append(("Resize", _case(
        "osprey_resize_crop_sizes_nearest", node, [x, roi, sizes],
        [crop_ref(x, roi.astype(np.float64), (2, 1, 7), "nearest", 0.0, (2, 1, 7))])))
    return out
