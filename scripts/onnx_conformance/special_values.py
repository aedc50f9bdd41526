"""Single-operator cases whose inputs are the values elementwise operators
get wrong most easily: negative numbers, signed zeros, subnormals, very
large magnitudes, infinities and NaN (the ONNX backend node tests mostly use
random normal inputs).

Every float elementwise operator Osprey supports gets one case over the
full list of special values; binary operators get the whole grid of pairs
(one operand broadcast along rows, the other along columns), and Pow also
gets one case per constant exponent (an initializer, as exporters write
LayerNorm's `Pow(x, 2)`). References follow the ONNX operator definitions,
computed with numpy in float32 (float64 where numpy has no float32 form):
results that are NaN, infinite or signed by the definition must be so in
Osprey's output too (run_conformance.py compares NaN with NaN and infinities
exactly)."""

import math
import types

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SPECIALS = np.array(
    [-np.inf, -3.0e38, -1.0e30, -100.0, -88.0, -3.5, -3.0, -2.0, -1.0, -0.5,
     -1.0e-40, -0.0, 0.0, 1.0e-40, 0.5, 1.0, 2.0, 3.0, 3.5, 88.0, 100.0,
     1.0e30, 3.0e38, np.inf, np.nan], np.float32)


def _model(name, node, inputs, outputs, initializers=(), opset=13):
    def info(n, a):
        return helper.make_tensor_value_info(
            n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)

    graph = helper.make_graph(
        [node], name, [info(n, a) for n, a in inputs],
        [info(n, a) for n, a in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    return types.SimpleNamespace(
        name=name, model=model,
        data_sets=[([a for _, a in inputs], [a for _, a in outputs])])


def _f32(fn, *args):
    with np.errstate(all="ignore"):
        return np.asarray(fn(*[a.astype(np.float64) for a in args])).astype(
            np.float32)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary_refs():
    """op -> (attributes, reference of a float64 array)."""
    clip01 = lambda v: np.clip(v, 0.0, 1.0)
    return {
        "Abs": ({}, np.abs),
        "Neg": ({}, np.negative),
        "Sqrt": ({}, np.sqrt),
        "Reciprocal": ({}, np.reciprocal),
        "Exp": ({}, np.exp),
        "Log": ({}, np.log),
        "Floor": ({}, np.floor),
        "Ceil": ({}, np.ceil),
        # Ties to even, as ONNX Round.
        "Round": ({}, np.round),
        "Sign": ({}, np.sign),
        "Relu": ({}, lambda v: np.clip(v, 0, np.inf)),
        "LeakyRelu": ({"alpha": 0.1},
                      lambda v: np.where(v >= 0, v, v * 0.1)),
        "Sigmoid": ({}, lambda v: 1.0 / (1.0 + np.exp(-v))),
        "HardSigmoid": ({"alpha": 0.2, "beta": 0.5},
                        lambda v: clip01(v * 0.2 + 0.5)),
        "HardSwish": ({}, lambda v: v * clip01(v / 6.0 + 0.5)),
        "Tanh": ({}, np.tanh),
        "Erf": ({}, _erf),
        "Elu": ({}, lambda v: np.where(v < 0, np.exp(v) - 1.0, v)),
        "Selu": ({}, lambda v: 1.0507009873554804934193349852946 * np.where(
            v > 0, v, 1.6732632423543772848170429916717 * np.exp(v) -
            1.6732632423543772848170429916717)),
        "Softsign": ({}, lambda v: v / (1.0 + np.abs(v))),
        # The value, not float32's overflow of e^x: softplus(100) = 100.
        "Softplus": ({}, lambda v: np.logaddexp(0.0, v)),
        "Celu": ({"alpha": 2.0}, lambda v: np.maximum(0.0, v) + np.minimum(
            0.0, 2.0 * (np.exp(v / 2.0) - 1.0))),
        "Shrink": ({"lambd": 1.5, "bias": 0.5}, lambda v: np.where(
            v < -1.5, v + 0.5, np.where(v > 1.5, v - 0.5, 0.0))),
        "ThresholdedRelu": ({"alpha": 2.0},
                            lambda v: np.where(v > 2.0, v, 0.0)),
        # Arguments up to 3e38 take the full range reduction.
        "Sin": ({}, np.sin),
        "Cos": ({}, np.cos),
        "Tan": ({}, np.tan),
        "Asin": ({}, np.arcsin),
        "Acos": ({}, np.arccos),
        "Atan": ({}, np.arctan),
        "Sinh": ({}, np.sinh),
        "Cosh": ({}, np.cosh),
        "Asinh": ({}, np.arcsinh),
        "Acosh": ({}, np.arccosh),
        "Atanh": ({}, np.arctanh),
    }


def _binary_refs():
    return {
        "Add": np.add,
        "Sub": np.subtract,
        "Mul": np.multiply,
        "Div": np.divide,
        "Pow": np.power,
        # The variadic ones with two operands; NaN propagates (np.maximum).
        "Max": np.maximum,
        "Min": np.minimum,
        "Sum": np.add,
    }


# Operators whose results are compared exactly (no tolerance).
EXACT = {"Floor", "Ceil", "Round", "Sign", "Abs", "Neg", "Relu"}


# Exponents exporters write as constants, plus ones that take the general
# path.
POW_EXPONENTS = [2.0, 3.0, 4.0, 1.0, 0.0, -1.0, -2.0, 0.5, -0.5, 2.5, 1.5,
                 -3.0, 7.0]


def cases():
    """Returns (op, case) pairs."""
    out = []
    x = SPECIALS.reshape(1, -1)
    for op, (attrs, ref) in _unary_refs().items():
        node = helper.make_node(op, ["x"], ["y"], **attrs)
        case = _model("osprey_special_%s" % op.lower(), node, [("x", x)],
                      [("y", _f32(ref, x))])
        if op in EXACT:
            case.tolerance = 0
        out.append((op, case))

    a = SPECIALS.reshape(-1, 1)
    b = SPECIALS.reshape(1, -1)
    for op, ref in _binary_refs().items():
        node = helper.make_node(op, ["a", "b"], ["y"])
        out.append((op, _model("osprey_special_%s_grid" % op.lower(), node,
                               [("a", a), ("b", b)],
                               [("y", _f32(ref, a, b))])))

    # Comparisons: ordered, so every comparison with NaN is false (and
    # -0 == 0).
    for op, ref in (("Equal", np.equal), ("Less", np.less),
                    ("Greater", np.greater), ("LessOrEqual", np.less_equal),
                    ("GreaterOrEqual", np.greater_equal)):
        node = helper.make_node(op, ["a", "b"], ["y"])
        out.append((op, _model("osprey_special_%s_grid" % op.lower(), node,
                               [("a", a), ("b", b)], [("y", ref(a, b))])))

    # Mish (opset 18): x * tanh(softplus(x)); IsNaN and IsInf (each
    # detection alone, both, neither) give exact booleans.
    node = helper.make_node("Mish", ["x"], ["y"])
    out.append(("Mish", _model(
        "osprey_special_mish", node, [("x", x)],
        [("y", _f32(lambda v: v * np.tanh(np.logaddexp(0.0, v)), x))],
        opset=18)))
    node = helper.make_node("IsNaN", ["x"], ["y"])
    out.append(("IsNaN", _model("osprey_special_isnan", node, [("x", x)],
                                [("y", np.isnan(x))])))
    for pos, neg in ((1, 1), (1, 0), (0, 1), (0, 0)):
        node = helper.make_node("IsInf", ["x"], ["y"], detect_positive=pos,
                                detect_negative=neg)
        ref = (np.isposinf(x) & bool(pos)) | (np.isneginf(x) & bool(neg))
        out.append(("IsInf", _model(
            "osprey_special_isinf_pos%d_neg%d" % (pos, neg), node,
            [("x", x)], [("y", ref)])))

    # PRelu with a slope per element (negative, zero, NaN slopes too).
    slope = SPECIALS[::-1].reshape(1, -1).copy()
    node = helper.make_node("PRelu", ["x", "slope"], ["y"])
    out.append(("PRelu", _model(
        "osprey_special_prelu", node, [("x", x), ("slope", slope)],
        [("y", _f32(lambda v, s: np.where(v < 0, s * v, v), x, slope))])))

    # Rounding in double: fractions below 2^52 (float's 2^23 is not enough),
    # the halves just under it, and huge values that are already integral.
    x64 = np.concatenate([SPECIALS.astype(np.float64), np.array(
        [0.3, -0.7, 2.5e-9, 8388608.5, -8388609.5, 4503599627370495.5,
         -4503599627370494.5, 1.0e300], np.float64)]).reshape(1, -1)
    for op, ref in (("Floor", np.floor), ("Ceil", np.ceil),
                    ("Round", np.round), ("Sign", np.sign)):
        node = helper.make_node(op, ["x"], ["y"])
        case = _model("osprey_special_%s_f64" % op.lower(), node,
                      [("x", x64)], [("y", ref(x64))])
        case.tolerance = 0
        out.append((op, case))

    # Exp and Log in double: subnormals, the overflow and underflow edges of
    # exp, values near 1 for log, huge magnitudes; within 1e-15 relative.
    xe = np.concatenate([SPECIALS.astype(np.float64), np.array(
        [5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 1.0 - 2**-53,
         1.0 + 2**-52, 0.9999, 1.0001, 709.78, 709.79, -708.4, -745.13,
         -745.14, 1.0e300, -1.0e300, 1.7976931348623157e308], np.float64)
                         ]).reshape(1, -1)
    for op, ref in (("Exp", np.exp), ("Log", np.log)):
        node = helper.make_node(op, ["x"], ["y"])
        with np.errstate(all="ignore"):
            want = ref(xe)
        case = _model("osprey_special_%s_f64" % op.lower(), node,
                      [("x", xe)], [("y", want)])
        case.tolerance = 1e-15
        out.append((op, case))

    # Mean as the ONNX reference computes it: the sum in float32, then the
    # division (3e38 + 3e38 overflows to inf before it is halved).
    with np.errstate(all="ignore"):
        mean = (a + b) / np.float32(2)
    node = helper.make_node("Mean", ["a", "b"], ["y"])
    out.append(("Mean", _model("osprey_special_mean_grid", node,
                               [("a", a), ("b", b)], [("y", mean)])))
    # Three operands, one of them broadcast.
    column = SPECIALS.reshape(-1, 1)
    row = np.array([[-np.inf, -0.0, 1.0, np.inf]], np.float32)
    c = np.array([[-1.0, 0.0, np.nan, 2.0]], np.float32)
    for op, ref in (("Max", np.maximum), ("Min", np.minimum)):
        node = helper.make_node(op, ["a", "b", "c"], ["y"])
        y = ref(ref(column, row), c)
        out.append((op, _model("osprey_special_%s_three" % op.lower(), node,
                               [("a", column), ("b", row), ("c", c)],
                               [("y", y.astype(np.float32))])))

    for e in POW_EXPONENTS:
        exponent = np.array(e, np.float32)
        node = helper.make_node("Pow", ["x", "e"], ["y"])
        label = ("%g" % e).replace("-", "m").replace(".", "p")
        out.append(("Pow", _model(
            "osprey_special_pow_const_%s" % label, node, [("x", x)],
            [("y", _f32(np.power, x, exponent))], [("e", exponent)])))

    gelu = lambda v: 0.5 * v * (1.0 + _erf(v / math.sqrt(2.0)))
    node = helper.make_node("Gelu", ["x"], ["y"])
    out.append(("Gelu", _model("osprey_special_gelu", node, [("x", x)],
                               [("y", _f32(gelu, x))], opset=18)))

    # Clip with bounds (NaN propagates through np.clip).
    lo, hi = np.array(-1.0, np.float32), np.array(6.0, np.float32)
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
    out.append(("Clip", _model("osprey_special_clip", node, [("x", x)],
                               [("y", _f32(np.clip, x, lo, hi))],
                               [("lo", lo), ("hi", hi)])))

    # Softmax of rows with masked (-inf) entries and huge magnitudes: the
    # maximum is subtracted first, so nothing overflows; a row that is all
    # -inf, or holds +inf or NaN, is NaN throughout.
    rows = np.array([
        [-np.inf, -np.inf, 0.0, 1.0, 2.0],
        [1.0e30, 0.0, -1.0e30, 1.0e30, 5.0],
        [-3.0e38, 3.0e38, 0.0, 1.0, -1.0],
        [-1.0e-40, 0.0, -0.0, 1.0e-40, 0.0],
        [-np.inf] * 5,
        [np.inf, 0.0, 1.0, 2.0, 3.0],
        [np.nan, 0.0, 1.0, 2.0, 3.0],
    ], np.float32)
    with np.errstate(all="ignore"):
        r = rows.astype(np.float64)
        e = np.exp(r - r.max(axis=1, keepdims=True))
        ref = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    out.append(("Softmax", _model("osprey_special_softmax", node,
                                  [("x", rows)], [("y", ref)])))
    return out
