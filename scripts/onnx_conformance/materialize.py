#!/usr/bin/python3
"""Materializes ONNX backend node test cases for the operators Osprey supports.

ONNX ships the generators of its backend node tests
(onnx/backend/test/case/node/*.py) but, on Debian, not their data. This script
runs the generators of the supported operators and writes, per case,
OUT/<case>/model.onnx, OUT/<case>/input_<i>.npy and OUT/<case>/output_<i>.npy,
plus OUT/manifest.json describing every case and how it is to be checked.

Osprey compiles static-shape modules, so inputs that ONNX passes at run time
but that are compile-time parameters in practice (shapes, axes, pads, indices,
scales, clip bounds, normalization statistics, Where's condition) are moved
into the graph as initializers; the data inputs stay run-time inputs.
Gather's indices and Where's condition are also data in real models (token
ids, masks): their cases are materialized a second time with those inputs left
at run time, named "osprey_runtime_<case>".
Cases for attribute combinations the ONNX generators leave out come from
extra_cases.py (names starting with "osprey_").
A case runs unless a tensor of the model has an element type Osprey does not
compile (float16, bfloat16, strings); those must be rejected cleanly.
The generators of every other operator are materialized too (family
"other"): their cases must either compile and match, or be refused cleanly
(run_conformance.py --survey counts which).
"""

import argparse
import dataclasses
import importlib
import json
import os
import sys
import warnings

import numpy as np

# onnx 1.12's generators use aliases numpy 1.24 removed.
for _alias, _type in (("float", float), ("int", int), ("bool", bool),
                      ("object", object), ("complex", complex), ("str", str)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not hasattr(np, _alias):
            setattr(np, _alias, _type)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

# Operator -> generator module in onnx.backend.test.case.node.
OPS = {
    "Conv": "conv", "ConvTranspose": "convtranspose", "Gemm": "gemm",
    "MatMul": "matmul", "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div",
    "Pow": "pow", "Sqrt": "sqrt", "Reciprocal": "reciprocal", "Exp": "exp",
    "Log": "log", "Abs": "abs", "Neg": "neg", "Relu": "relu",
    "LeakyRelu": "leakyrelu", "Clip": "clip", "Sigmoid": "sigmoid",
    "HardSigmoid": "hardsigmoid", "HardSwish": "hardswish", "Tanh": "tanh",
    "Erf": "erf", "BatchNormalization": "batchnorm", "MaxPool": "maxpool",
    "AveragePool": "averagepool", "GlobalAveragePool": "globalaveragepool",
    "Flatten": "flatten", "Reshape": "reshape", "Transpose": "transpose",
    "Concat": "concat", "Split": "split", "Slice": "slice",
    "Squeeze": "squeeze", "Unsqueeze": "unsqueeze", "Gather": "gather",
    "Pad": "pad", "Expand": "expand", "Shape": "shape", "Constant": "constant",
    "Identity": "identity", "Softmax": "softmax", "ReduceMean": "reducemean",
    "ReduceSum": "reducesum", "ReduceMax": "reducemax",
    "LayerNormalization": "layernormalization", "Resize": "resize",
    "Cast": "cast", "Where": "where", "Equal": "equal", "Less": "less",
    "Greater": "greater", "QuantizeLinear": "quantizelinear",
    "DequantizeLinear": "dequantizelinear", "QLinearConv": "qlinearconv",
    "QLinearMatMul": "qlinearmatmul", "ConvInteger": "convinteger",
    "MatMulInteger": "matmulinteger", "Max": "max", "Min": "min", "Sum": "sum",
    "Mean": "mean", "LogSoftmax": "logsoftmax", "ReduceMin": "reducemin",
    "ReduceProd": "reduceprod", "ReduceL1": "reducel1", "ReduceL2": "reducel2",
    "ReduceSumSquare": "reducesumsquare", "PRelu": "prelu", "Elu": "elu",
    "Selu": "selu", "Softsign": "softsign", "Softplus": "softplus", "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal", "And": "and", "Or": "or", "Xor": "xor",
    "Not": "not", "Floor": "floor", "Ceil": "ceil", "Round": "round",
    "Sign": "sign", "DepthToSpace": "depthtospace",
    "SpaceToDepth": "spacetodepth", "ConstantOfShape": "constantofshape",
    "Size": "size", "Trilu": "trilu", "GatherElements": "gatherelements",
    "Mod": "mod", "CastLike": "castlike", "ReduceLogSum": "reduce_log_sum",
    "ReduceLogSumExp": "reduce_log_sum_exp", "ArgMax": "argmax",
    "ArgMin": "argmin", "NegativeLogLikelihoodLoss": "negativeloglikelihoodloss",
    "SoftmaxCrossEntropyLoss": "softmaxcrossentropy", "CumSum": "cumsum",
    "OneHot": "onehot", "IsNaN": "isnan", "IsInf": "isinf", "Celu": "celu",
    "Shrink": "shrink", "ThresholdedRelu": "thresholdedrelu",
    "GlobalMaxPool": "globalmaxpool", "Hardmax": "hardmax", "Range": "rangeop",
    "Tile": "tile", "EyeLike": "eyelike", "BitShift": "bitshift",
    "InstanceNormalization": "instancenorm",
    "MeanVarianceNormalization": "meanvariancenormalization", "LRN": "lrn",
    "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos",
    "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh",
    "Acosh": "acosh", "Atanh": "atanh", "HannWindow": "hannwindow",
    "HammingWindow": "hammingwindow", "BlackmanWindow": "blackmanwindow",
    "Einsum": "einsum", "Scatter": "scatter", "ScatterElements": "scatterelements",
    "ScatterND": "scatternd", "GatherND": "gathernd", "RNN": "rnn", "GRU": "gru",
    "LSTM": "lstm", "DynamicQuantizeLinear": "dynamicquantizelinear",
    "ReverseSequence": "reversesequence", "GridSample": "gridsample",
    "TopK": "topk", "Compress": "compress", "DFT": "dft", "STFT": "stft",
    "Det": "det", "MelWeightMatrix": "melweightmatrix", "Adagrad": "adagrad",
    "Momentum": "momentum", "Adam": "adam", "If": "if",
}
# Mish (opset 18) has no generator in onnx 1.12: its cases are Osprey's own.
# Gelu is in Osprey's list but its ONNX operator (opset 20) postdates onnx 1.12,
# which has no generator for it.

# Operator -> node input positions that become initializers.
CONST_INPUTS = {
    "Reshape": {1}, "Slice": {1, 2, 3, 4}, "Pad": {1, 2, 3}, "Expand": {1},
    "Gather": {1}, "Split": {1}, "Squeeze": {1}, "Unsqueeze": {1},
    "Resize": {1, 2, 3}, "ReduceSum": {1}, "ReduceMean": {1},
    "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1}, "ReduceL1": {1},
    "ReduceL2": {1}, "ReduceSumSquare": {1}, "Clip": {1, 2},
    "BatchNormalization": {1, 2, 3, 4},
    "Where": {0},
    # ConstantOfShape's shape: only constant shapes compile.
    "ConstantOfShape": {0},
    # Trilu's k, CumSum's axis.
    "Trilu": {1}, "CumSum": {1},
    # OneHot's depth, Range's operands and Tile's repeats set the output's
    # shape.
    "OneHot": {1}, "Range": {0, 1, 2}, "Tile": {1},
    # Loop's trip count and condition: loops are unrolled at compile time.
    "Loop": {0, 1},
    # Dropout's ratio and training_mode: deterministic only when constant.
    "Dropout": {1, 2},
    "InstanceNormalization": {1, 2},
    # Recurrent layers: weights, biases, sequence lengths and peepholes
    # (the initial states stay run-time inputs).
    "RNN": {1, 2, 3, 4}, "GRU": {1, 2, 3, 4}, "LSTM": {1, 2, 3, 4, 7},
    # Scatters and GatherND compile with constant indices.
    "Scatter": {1}, "ScatterElements": {1}, "ScatterND": {1}, "GatherND": {1},
    "ReverseSequence": {1}, "TopK": {1}, "Compress": {1}, "DFT": {1},
    "STFT": {1, 2, 3},
    # A window's size sets its shape, and so do MelWeightMatrix's operands.
    "HannWindow": {0}, "HammingWindow": {0}, "BlackmanWindow": {0},
    "MelWeightMatrix": {0, 1, 2, 3, 4},
    # Quantization parameters and weights are compile-time constants; the
    # second matrix of QLinearMatMul and MatMulInteger also runs as a
    # run-time input (activation x activation products).
    "QuantizeLinear": {1, 2}, "DequantizeLinear": {1, 2},
    "QLinearConv": {1, 2, 3, 4, 5, 6, 7, 8},
    "QLinearMatMul": {1, 2, 3, 4, 5, 6, 7}, "ConvInteger": {1, 2, 3},
    "MatMulInteger": {1, 2, 3},
}

# Operator -> node input positions that stay run-time inputs in the
# "osprey_runtime_" variant of each case.
RUNTIME_VARIANTS = {"Gather": {1}, "Where": {0}, "QLinearMatMul": {3},
                    "QuantizeLinear": {1, 2}, "DequantizeLinear": {1, 2},
                    "MatMulInteger": {1}}

# ONNX element types Osprey does not compile.
UNSUPPORTED_TYPES = {
    onnx.TensorProto.STRING: "string", onnx.TensorProto.COMPLEX64: "complex64",
    onnx.TensorProto.COMPLEX128: "complex128",
}

# ONNX cases whose reference output does not follow their own model: not
# run (counted as such), with the reason.
BAD_REFERENCES = {
    "test_adam_multiple": "the reference output is computed with epsilon "
                          "1e-2, the node has the default 1e-6",
}

# Operator -> family; the test runner has one entry per family.
FAMILIES = {
    "conv": ["Conv", "ConvTranspose"],
    "matmul": ["Gemm", "MatMul", "Einsum", "Det"],
    "arith": ["Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Exp",
              "Log", "Abs", "Neg", "Max", "Min", "Sum", "Mean", "Floor", "Ceil",
              "Round", "Sign", "Mod", "BitShift"],
    "activation": ["Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid",
                   "HardSwish", "Tanh", "Erf", "PRelu", "Elu", "Selu",
                   "Softsign", "Softplus", "Celu", "Shrink",
                   "ThresholdedRelu", "Mish"],
    "norm": ["BatchNormalization", "LayerNormalization", "Softmax",
             "LogSoftmax", "Hardmax", "InstanceNormalization",
             "MeanVarianceNormalization", "LRN"],
    "pool": ["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"],
    "shape": ["Flatten", "Reshape", "Transpose", "Concat", "Split", "Slice",
              "Squeeze", "Unsqueeze", "Gather", "Pad", "Expand", "Shape",
              "Constant", "Identity", "DepthToSpace", "SpaceToDepth",
              "ConstantOfShape", "Size", "Trilu", "GatherElements", "OneHot",
              "Range", "Tile", "EyeLike", "Scatter", "ScatterElements",
              "ScatterND", "GatherND", "ReverseSequence", "Compress"],
    "reduce": ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
               "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
               "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin",
               "CumSum", "TopK"],
    "resize": ["Resize", "GridSample"],
    "trig": ["DFT", "STFT", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
             "Asinh", "Acosh", "Atanh", "HannWindow", "HammingWindow",
             "BlackmanWindow", "MelWeightMatrix"],
    "loss": ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"],
    "recurrent": ["RNN", "GRU", "LSTM"],
    "optimizer": ["Adagrad", "Momentum", "Adam"],
    "logic": ["Cast", "CastLike", "Where", "Equal", "Less", "Greater", "LessOrEqual",
              "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf", "If"],
    "quant": ["QuantizeLinear", "DequantizeLinear", "QLinearConv",
              "QLinearMatMul", "ConvInteger", "MatMulInteger",
              "DynamicQuantizeLinear"],
}


FAMILIES["activation"].append("Gelu")  # cases from extra_cases.py only


def family_of(op):
    """The conformance family of `op`; "other" for operators outside Osprey's
    list (their cases count what is refused, and nothing may run wrong)."""
    for fam, ops in FAMILIES.items():
        if op in ops:
            return fam
    return "other"


def collect(op, module=None):
    """Runs the generator module of `op` (or `module`); returns its
    TestCases."""
    node_pkg = importlib.import_module("onnx.backend.test.case.node")
    node_pkg._TargetOpType = op
    start = len(node_pkg._NodeTestCases)
    np.random.seed(0)
    importlib.import_module("onnx.backend.test.case.node." +
                            (module or OPS[op]))
    return node_pkg._NodeTestCases[start:]


def other_modules():
    """Generator modules of the operators outside OPS, by file name."""
    node_dir = os.path.dirname(importlib.import_module(
        "onnx.backend.test.case.node").__file__)
    done = set(OPS.values()) | {"__init__", "pool_op_common"}
    return sorted(f[:-3] for f in os.listdir(node_dir)
                  if f.endswith(".py") and f[:-3] not in done)


def op_of(case, default):
    """The operator a generated case tests: its single node's type, or for
    multi-node (expanded function) cases the module's operator."""
    nodes = case.model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else default


MIN_OPSET = 11


def bump_opset(model, op):
    """Raises an opset below MIN_OPSET to MIN_OPSET when `op`'s schema is the
    same at both versions (the model then means the same thing)."""
    for opset in model.opset_import:
        if opset.domain not in ("", "ai.onnx") or opset.version >= MIN_OPSET:
            continue
        old = onnx.defs.get_schema(op, opset.version).since_version
        new = onnx.defs.get_schema(op, MIN_OPSET).since_version
        if old == new:
            opset.version = MIN_OPSET
            if model.ir_version < 6:
                model.ir_version = 6


def unsupported_types(model):
    """Names of the element types of `model`'s tensors Osprey rejects."""
    graph = model.graph
    types = [v.type.tensor_type.elem_type
             for v in list(graph.input) + list(graph.output) +
             list(graph.value_info)]
    types += [t.data_type for t in graph.initializer]
    for node in graph.node:
        for attr in node.attribute:
            if attr.name == "to":
                types.append(attr.i)
            if attr.HasField("t"):
                types.append(attr.t.data_type)
    return sorted({UNSUPPORTED_TYPES[t] for t in types
                   if t in UNSUPPORTED_TYPES})


def bfloat16_io(model):
    """Whether a graph input or output of `model` is bfloat16: numpy has no
    such type (the generators store the bits as uint16), so osprey-run cannot
    be given or compared with them; compiled bf16 code is covered by the
    code generator's unit tests."""
    return any(v.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
               for v in list(model.graph.input) + list(model.graph.output))


def materialize(op, case, out_dir, runtime_inputs=()):
    """Writes one case; returns its manifest entry. Inputs at positions
    `runtime_inputs` of the node stay run-time inputs."""
    entry = {"op": op, "family": family_of(op), "name": case.name}
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    bump_opset(model, op)
    graph = model.graph
    inputs, outputs = case.data_sets[0]
    # Scalars (e.g. Clip's bounds) come as numpy scalars.
    inputs = [np.asarray(a) if isinstance(a, np.generic) else a for a in inputs]
    outputs = [np.asarray(a) if isinstance(a, np.generic) else a
               for a in outputs]
    if any(not isinstance(a, np.ndarray) for a in list(inputs) + list(outputs)):
        entry["kind"] = "skip"
        entry["reason"] = "sequence or optional values (not tensors)"
        return entry
    const_names = set()
    # A node's inputs, or for an expanded function the graph's (in the
    # node's order).
    names = (list(graph.node[0].input) if len(graph.node) == 1 else
             [vi.name for vi in graph.input])
    for pos in CONST_INPUTS.get(op, ()):
        if pos not in runtime_inputs and pos < len(names) and names[pos]:
            const_names.add(names[pos])
    run_inputs = []
    new_inputs = []
    for vi, arr in zip(list(graph.input), inputs):
        if vi.name in const_names:
            graph.initializer.append(numpy_helper.from_array(arr, vi.name))
        else:
            new_inputs.append(vi)
            run_inputs.append(arr)
    del graph.input[:]
    graph.input.extend(new_inputs)

    case_dir = os.path.join(out_dir, case.name)
    os.makedirs(case_dir, exist_ok=True)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    for i, arr in enumerate(run_inputs):
        np.save(os.path.join(case_dir, "input_%d.npy" % i), arr)
    for i, arr in enumerate(outputs):
        np.save(os.path.join(case_dir, "output_%d.npy" % i), arr)
    unsupported = unsupported_types(model)
    if case.name in BAD_REFERENCES:
        entry["kind"] = "skip"
        entry["reason"] = BAD_REFERENCES[case.name]
    elif getattr(case, "expect_reject", None):
        entry["kind"] = "reject"
        entry["reason"] = case.expect_reject
    elif bfloat16_io(model):
        entry["kind"] = "skip"
        entry["reason"] = "bfloat16 inputs or outputs (no numpy type)"
    elif unsupported:
        entry["kind"] = "unsupported"
        entry["reason"] = "element types " + ",".join(unsupported)
    else:
        entry["kind"] = "run"
    # Multi-node cases (ONNX's function expansions) test other operators as
    # much as their own; like the cases of unlisted operators they may be
    # refused cleanly.
    entry["survey"] = len(graph.node) > 1
    if getattr(case, "tolerance", None) is not None:
        entry["tolerance"] = case.tolerance
    entry["inputs"] = len(run_inputs)
    entry["outputs"] = len(outputs)
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    seen = set()
    for op in OPS:
        try:
            cases = collect(op)
        except Exception as e:  # a generator that breaks on this numpy
            manifest.append({"op": op, "family": family_of(op),
                             "name": "generator:" + OPS[op], "kind": "skip",
                             "reason": "generator failed: %s" % e})
            continue
        for case in cases:
            # onnx 1.12 reuses a few names; keep both cases apart.
            base, i = case.name, 1
            while case.name in seen:
                i += 1
                case = dataclasses.replace(case, name="%s_%d" % (base, i))
            seen.add(case.name)
            manifest.append(materialize(op, case, args.out))
            if op in RUNTIME_VARIANTS and len(case.model.graph.node) == 1:
                variant = dataclasses.replace(
                    case, name="osprey_runtime_" + case.name)
                manifest.append(materialize(op, variant, args.out,
                                            RUNTIME_VARIANTS[op]))
    # Every other generator: operators Osprey does not list. Their cases
    # run like the others; compiling one must either work and match or be
    # refused cleanly.
    for module in other_modules():
        try:
            cases = collect(None, module)
        except Exception as e:  # pylint: disable=broad-except
            manifest.append({"op": module, "family": "other",
                             "name": "generator:" + module, "kind": "skip",
                             "reason": "generator failed: %s" % e})
            continue
        for case in cases:
            if case.name in seen:
                continue
            seen.add(case.name)
            op = op_of(case, module)
            if op in OPS:  # a multi-op module case of a listed op
                op = module
            entry = materialize(op, case, args.out)
            entry["family"] = "other"
            manifest.append(entry)
    import extra_cases
    import special_values
    for op, case in extra_cases.cases() + special_values.cases():
        manifest.append(materialize(op, case, args.out))
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    kinds = {}
    for e in manifest:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    print("materialized %d cases: %s" % (len(manifest), kinds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
