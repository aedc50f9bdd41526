// The op registry table and helpers shared by shape rules and passes.
#include "compiler/graph/op_registry.h"

#include <algorithm>

#include "compiler/graph/shape_rules.h"

namespace osprey::compiler::graph {
namespace {

using TC = TypeConstraint;
namespace r = rules;

// kind, name, operands min/max, results min/max, first-operand constraint,
// shape rule, elementwise. Operand order follows ONNX opset 18; entries are
// in OpKind order.
// clang-format off
constexpr OpInfo kOps[] = {
    // Elementwise unary.
    {OpKind::Relu, "Relu", 1, 1, 1, 1, TC::Numeric, r::sameAsFirst, true},
    {OpKind::LeakyRelu, "LeakyRelu", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Sigmoid, "Sigmoid", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::HardSigmoid, "HardSigmoid", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::HardSwish, "HardSwish", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Tanh, "Tanh", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Erf, "Erf", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Gelu, "Gelu", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Sqrt, "Sqrt", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Reciprocal, "Reciprocal", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Exp, "Exp", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Log, "Log", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Abs, "Abs", 1, 1, 1, 1, TC::Numeric, r::sameAsFirst, true},
    {OpKind::Neg, "Neg", 1, 1, 1, 1, TC::Numeric, r::sameAsFirst, true},
    {OpKind::Identity, "Identity", 1, 1, 1, 1, TC::Any, r::sameAsFirst, true},
    {OpKind::Clip, "Clip", 1, 3, 1, 1, TC::Numeric, r::sameAsFirst, true},
    {OpKind::Cast, "Cast", 1, 1, 1, 1, TC::Any, r::cast, true},
    {OpKind::Floor, "Floor", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Ceil, "Ceil", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Round, "Round", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Sign, "Sign", 1, 1, 1, 1, TC::Numeric, r::sameAsFirst, true},
    {OpKind::Sin, "Sin", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Cos, "Cos", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Tan, "Tan", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Asin, "Asin", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Acos, "Acos", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Atan, "Atan", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Sinh, "Sinh", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Cosh, "Cosh", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Asinh, "Asinh", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Acosh, "Acosh", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Atanh, "Atanh", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    // Elementwise binary / ternary with broadcasting.
    {OpKind::Add, "Add", 2, 2, 1, 1, TC::Numeric, r::broadcast, true},
    {OpKind::Sub, "Sub", 2, 2, 1, 1, TC::Numeric, r::broadcast, true},
    {OpKind::Mul, "Mul", 2, 2, 1, 1, TC::Numeric, r::broadcast, true},
    {OpKind::Div, "Div", 2, 2, 1, 1, TC::Numeric, r::broadcast, true},
    {OpKind::Pow, "Pow", 2, 2, 1, 1, TC::Numeric, r::broadcast, true},
    {OpKind::Mod, "Mod", 2, 2, 1, 1, TC::Numeric, r::broadcast, true},
    {OpKind::Equal, "Equal", 2, 2, 1, 1, TC::Any, r::compare, true},
    {OpKind::Less, "Less", 2, 2, 1, 1, TC::Numeric, r::compare, true},
    {OpKind::Greater, "Greater", 2, 2, 1, 1, TC::Numeric, r::compare, true},
    {OpKind::LessOrEqual, "LessOrEqual", 2, 2, 1, 1, TC::Numeric, r::compare, true},
    {OpKind::GreaterOrEqual, "GreaterOrEqual", 2, 2, 1, 1, TC::Numeric, r::compare, true},
    {OpKind::Where, "Where", 3, 3, 1, 1, TC::Any, r::where, true},
    {OpKind::BitShift, "BitShift", 2, 2, 1, 1, TC::Numeric, r::bitShift, true},
    {OpKind::Max, "Max", 1, -1, 1, 1, TC::Numeric, r::variadic, true},
    {OpKind::Min, "Min", 1, -1, 1, 1, TC::Numeric, r::variadic, true},
    {OpKind::And, "And", 2, 2, 1, 1, TC::Bool, r::broadcast, true},
    {OpKind::Or, "Or", 2, 2, 1, 1, TC::Bool, r::broadcast, true},
    {OpKind::Xor, "Xor", 2, 2, 1, 1, TC::Bool, r::broadcast, true},
    {OpKind::Not, "Not", 1, 1, 1, 1, TC::Bool, r::sameAsFirst, true},
    // Contractions and windows.
    {OpKind::Conv, "Conv", 2, 3, 1, 1, TC::Float, r::conv, false},
    {OpKind::ConvTranspose, "ConvTranspose", 2, 3, 1, 1, TC::Float, r::convTranspose, false},
    {OpKind::Gemm, "Gemm", 2, 3, 1, 1, TC::Numeric, r::gemm, false},
    {OpKind::MatMul, "MatMul", 2, 2, 1, 1, TC::Numeric, r::matmul, false},
    {OpKind::MaxPool, "MaxPool", 1, 1, 1, 1, TC::Numeric, r::pool, false},
    {OpKind::AveragePool, "AveragePool", 1, 1, 1, 1, TC::Float, r::pool, false},
    {OpKind::GlobalAveragePool, "GlobalAveragePool", 1, 1, 1, 1, TC::Float, r::globalPool, false},
    // Normalizations and reductions.
    {OpKind::BatchNormalization, "BatchNormalization", 5, 5, 1, 1, TC::Float, r::batchNorm, false},
    {OpKind::LayerNormalization, "LayerNormalization", 2, 3, 1, 3, TC::Float, r::layerNorm, false},
    {OpKind::Softmax, "Softmax", 1, 1, 1, 1, TC::Float, r::softmax, false},
    {OpKind::ReduceMean, "ReduceMean", 1, 2, 1, 1, TC::Numeric, r::reduce, false},
    {OpKind::ReduceSum, "ReduceSum", 1, 2, 1, 1, TC::Numeric, r::reduce, false},
    {OpKind::ReduceMax, "ReduceMax", 1, 2, 1, 1, TC::Numeric, r::reduce, false},
    {OpKind::LogSoftmax, "LogSoftmax", 1, 1, 1, 1, TC::Float, r::softmax, false},
    {OpKind::ReduceMin, "ReduceMin", 1, 2, 1, 1, TC::Numeric, r::reduce, false},
    {OpKind::ReduceProd, "ReduceProd", 1, 2, 1, 1, TC::Numeric, r::reduce, false},
    {OpKind::ReduceL1, "ReduceL1", 1, 2, 1, 1, TC::Numeric, r::reduce, false},
    {OpKind::ReduceL2, "ReduceL2", 1, 2, 1, 1, TC::Float, r::reduce, false},
    {OpKind::ReduceSumSquare, "ReduceSumSquare", 1, 2, 1, 1, TC::Numeric, r::reduce, false},
    {OpKind::ArgMax, "ArgMax", 1, 1, 1, 1, TC::Numeric, r::argMinMax, false},
    {OpKind::ArgMin, "ArgMin", 1, 1, 1, 1, TC::Numeric, r::argMinMax, false},
    {OpKind::CumSum, "CumSum", 2, 2, 1, 1, TC::Numeric, r::cumSum, false},
    {OpKind::PRelu, "PRelu", 2, 2, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Elu, "Elu", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Selu, "Selu", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Softsign, "Softsign", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    {OpKind::Softplus, "Softplus", 1, 1, 1, 1, TC::Float, r::sameAsFirst, true},
    // Data movement.
    {OpKind::Flatten, "Flatten", 1, 1, 1, 1, TC::Any, r::flatten, false},
    {OpKind::Reshape, "Reshape", 2, 2, 1, 1, TC::Any, r::reshape, false},
    {OpKind::Transpose, "Transpose", 1, 1, 1, 1, TC::Any, r::transpose, false},
    {OpKind::Concat, "Concat", 1, -1, 1, 1, TC::Any, r::concat, false},
    {OpKind::Split, "Split", 1, 2, 1, -1, TC::Any, r::split, false},
    {OpKind::Slice, "Slice", 3, 5, 1, 1, TC::Any, r::slice, false},
    {OpKind::Squeeze, "Squeeze", 1, 2, 1, 1, TC::Any, r::squeeze, false},
    {OpKind::Unsqueeze, "Unsqueeze", 2, 2, 1, 1, TC::Any, r::unsqueeze, false},
    {OpKind::Gather, "Gather", 2, 2, 1, 1, TC::Any, r::gather, false},
    {OpKind::GatherElements, "GatherElements", 2, 2, 1, 1, TC::Any, r::gatherElements, false},
    {OpKind::Pad, "Pad", 2, 4, 1, 1, TC::Any, r::pad, false},
    {OpKind::Expand, "Expand", 2, 2, 1, 1, TC::Any, r::expand, false},
    {OpKind::Resize, "Resize", 1, 4, 1, 1, TC::Numeric, r::resize, false},
    {OpKind::Shape, "Shape", 1, 1, 1, 1, TC::Any, r::shape, false},
    {OpKind::Constant, "Constant", 0, 0, 1, 1, TC::Any, r::constant, false},
    {OpKind::ConstantOfShape, "ConstantOfShape", 1, 1, 1, 1, TC::Any, r::constantOfShape, false},
    // Quantization: ONNX operators (quantized_shape_rules.cpp).
    {OpKind::QuantizeLinear, "QuantizeLinear", 2, 3, 1, 1, TC::Float, r::quantizeLinear, false},
    {OpKind::DequantizeLinear, "DequantizeLinear", 2, 3, 1, 1, TC::Numeric, r::dequantizeLinear, false},
    {OpKind::QLinearConv, "QLinearConv", 8, 9, 1, 1, TC::Numeric, r::qlinearConv, false},
    {OpKind::QLinearMatMul, "QLinearMatMul", 8, 8, 1, 1, TC::Numeric, r::qlinearMatMul, false},
    {OpKind::ConvInteger, "ConvInteger", 2, 4, 1, 1, TC::Numeric, r::convInteger, false},
    {OpKind::MatMulInteger, "MatMulInteger", 2, 4, 1, 1, TC::Numeric, r::matMulInteger, false},
    // Canonical quantized ops written by the fuse-qdq pass.
    {OpKind::QConv, "QConv", 3, 5, 1, 1, TC::Numeric, r::qconv, false},
    {OpKind::QMatMul, "QMatMul", 3, 5, 1, 1, TC::Numeric, r::qmatmul, false},
    {OpKind::QAdd, "QAdd", 2, 2, 1, 1, TC::Numeric, r::qbinary, false},
    {OpKind::QMul, "QMul", 2, 2, 1, 1, TC::Numeric, r::qbinary, false},
    {OpKind::QRescale, "QRescale", 1, 1, 1, 1, TC::Numeric, r::qrescale, true},
    {OpKind::QAveragePool, "QAveragePool", 1, 1, 1, 1, TC::Numeric, r::qpool, false},
};
// clang-format on

constexpr bool inKindOrder() {
  unsigned i = 0;
  for (const OpInfo &info : kOps) {
    if (unsigned(info.kind) != i++) {
      return false;
    }
  }
  return i == kNumOpKinds;
}
static_assert(inKindOrder(), "kOps must list every OpKind once, in order");

} // namespace

const OpInfo &opInfo(OpKind kind) { return kOps[unsigned(kind)]; }

const OpInfo *lookupOp(llvm::StringRef kind) {
  for (const OpInfo &info : kOps) {
    if (kind == info.name) {
      return &info;
    }
  }
  return nullptr;
}

std::vector<const OpInfo *> allOps() {
  std::vector<const OpInfo *> out;
  for (const OpInfo &info : kOps) {
    out.push_back(&info);
  }
  return out;
}

absl::Status inferResultTypes(const Op &op, std::vector<TensorType> &out) {
  const OpInfo *info = op.info();
  if (!info) {
    return op.emitError("unknown op kind");
  }
  int n = static_cast<int>(op.numOperands());
  if (n < info->minOperands ||
      (info->maxOperands >= 0 && n > info->maxOperands)) {
    return op.emitError("expected " + std::to_string(info->minOperands) +
                        (info->maxOperands == info->minOperands
                             ? std::string()
                             : info->maxOperands < 0
                                   ? " or more"
                                   : " to " +
                                         std::to_string(info->maxOperands)) +
                        " operands, found " + std::to_string(n));
  }
  for (int i = 0; i < info->minOperands; ++i) {
    if (!op.operand(i)) {
      return op.emitError("required operand #" + std::to_string(i) +
                          " is missing");
    }
  }
  out.clear();
  absl::Status status = info->shapeRule(op, out);
  if (!status.ok()) {
    return op.emitError(std::string(status.message()));
  }
  // Element counts are int64 products; a shape whose byte size wraps around
  // would look small (a constant of 2^62 x 4 floats would need 0 bytes).
  for (const TensorType &type : out) {
    int64_t bytes = static_cast<int64_t>(elementByteSize(type.elementType()));
    for (int64_t d : type.dims()) {
      if (d > 0 && __builtin_mul_overflow(bytes, d, &bytes)) {
        return op.emitError("result type " + type.str() +
                            " has more bytes than can be addressed");
      }
    }
  }
  return absl::OkStatus();
}

std::optional<std::vector<int64_t>> getConstantInts(const Value *value) {
  if (!value || !value->definingOp() ||
      !value->definingOp()->is(OpKind::Constant)) {
    return std::nullopt;
  }
  ElementType et = value->type().elementType();
  if (isFloatType(et)) {
    return std::nullopt;
  }
  return value->definingOp()->value().toInt64s(et);
}

std::optional<std::vector<double>> getConstantFloats(const Value *value) {
  if (!isConstant(value)) {
    return std::nullopt;
  }
  return value->definingOp()->value().toDoubles(value->type().elementType());
}

bool isConstant(const Value *value) {
  return value && value->definingOp() &&
         value->definingOp()->is(OpKind::Constant);
}

absl::Status broadcastShapes(llvm::ArrayRef<int64_t> a,
                             llvm::ArrayRef<int64_t> b,
                             std::vector<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1) {
      out[i] = y;
    } else if (y == 1) {
      out[i] = x;
    } else if (x < 0) {
      out[i] = y;
    } else if (y < 0 || x == y) {
      out[i] = x;
    } else {
      return absl::InvalidArgumentError(
          "shapes cannot be broadcast: dimension " + std::to_string(x) +
          " vs " + std::to_string(y));
    }
  }
  return absl::OkStatus();
}

absl::Status normalizeAxis(int64_t &axis, int64_t rank, llvm::StringRef what) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(what.str() + " " + std::to_string(axis) +
                                      " is out of range for rank " +
                                      std::to_string(rank));
  }
  if (axis < 0) {
    axis += rank;
  }
  return absl::OkStatus();
}

bool resolveAutoPad(Op &op) {
  std::string autoPad = op.getString("auto_pad", "NOTSET");
  bool window = op.is(OpKind::Conv) || op.is(OpKind::MaxPool) ||
                op.is(OpKind::AveragePool);
  if (!window || (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER" &&
                  autoPad != "VALID")) {
    return false;
  }
  const TensorType &x = op.operand(0)->type();
  const TensorType &y = op.result()->type();
  if (!x.hasStaticShape() || !y.hasStaticShape() || x.rank() < 3 ||
      y.rank() != x.rank()) {
    return false;
  }
  size_t spatial = x.rank() - 2;
  IntList kernel = op.getIntList("kernel_shape");
  if (op.is(OpKind::Conv)) {
    const TensorType &w = op.operand(1)->type();
    if (!w.hasStaticShape() || w.rank() != x.rank()) {
      return false;
    }
    kernel.assign(w.dims().begin() + 2, w.dims().end());
  }
  IntList strides = op.getIntList("strides", IntList(spatial, 1));
  IntList dilations = op.getIntList("dilations", IntList(spatial, 1));
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial) {
    return false;
  }
  IntList pads(2 * spatial, 0);
  if (autoPad != "VALID") {
    for (size_t i = 0; i < spatial; ++i) {
      int64_t total = std::max<int64_t>(
          0, (y.dim(2 + i) - 1) * strides[i] + (kernel[i] - 1) * dilations[i] +
                 1 - x.dim(2 + i));
      // SAME_UPPER puts the odd element at the end, SAME_LOWER at the start.
      int64_t small = total / 2;
      pads[i] = autoPad == "SAME_UPPER" ? small : total - small;
      pads[i + spatial] = total - pads[i];
    }
  }
  op.removeAttr("auto_pad");
  op.setAttr("pads", pads);
  return true;
}

} // namespace osprey::compiler::graph
