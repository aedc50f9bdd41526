// Shape rules of the quantization ops: ONNX QuantizeLinear, DequantizeLinear,
// QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, and the canonical
// quantized ops the fuse-qdq pass produces (QConv, QMatMul, QAdd, QMul,
// QRescale, QAveragePool; see fuse_qdq.cpp for their semantics). Constant
// scales and zero points are validated here, so malformed ones fail at
// import naming the node.
#include <string>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/quantization.h"
#include "compiler/graph/shape_rules.h"
#include "compiler/graph/status.h"

namespace osprey::compiler::graph::rules {
namespace {

absl::Status err(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

const TensorType &typeOf(const Op &op, unsigned i) {
  return op.operand(i)->type();
}

std::string typeName(ElementType t) { return elementTypeName(t).str(); }

// Validates the (scale, zero point) operands |scale|, |zeroPoint| of the
// quantized tensor |tensor| when they are constants; |what| names them.
// |axis| is the axis of per-axis parameters, kUseAttribute for the op's axis
// attribute, or kPerTensor when only one scale is allowed.
constexpr int64_t kUseAttribute = -1000;
constexpr int64_t kPerTensor = -2000;
absl::Status checkParams(const Op &op, unsigned scale, int zeroPoint,
                         const TensorType &tensor, ElementType type,
                         int64_t axis, const std::string &what) {
  const Value *zp = zeroPoint >= 0 ? op.operand(zeroPoint) : nullptr;
  bool perTensorOnly = axis == kPerTensor;
  int64_t a = axis == kUseAttribute ? op.getInt("axis", 1) : axis;
  auto params = readQuantParams(op.operand(scale), zp, perTensorOnly ? 0 : a,
                                tensor, type);
  if (absl::IsUnimplemented(params.status())) {
    return absl::OkStatus(); // run-time parameters: checked by the passes
  }
  if (!params.ok()) {
    return err(what + ": " + std::string(params.status().message()));
  }
  if (perTensorOnly && params->scales.size() != 1) {
    return err(what + " must be one value per tensor, found " +
               std::to_string(params->scales.size()));
  }
  return absl::OkStatus();
}

absl::Status checkQuantizedType(ElementType t, const std::string &what) {
  if (!isQuantizedType(t)) {
    return err(what + " has element type " + typeName(t) +
               "; quantized tensors are i8 or u8");
  }
  return absl::OkStatus();
}

// An integer attribute |name| (default |def|) within [lo, hi].
absl::Status checkIntAttr(const Op &op, llvm::StringRef name, int64_t def,
                          int64_t lo, int64_t hi) {
  int64_t v = op.getInt(name, def);
  if (v < lo || v > hi) {
    return err(name.str() + " " + std::to_string(v) + " is out of range [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return absl::OkStatus();
}

absl::Status checkZeroPoint(const Op &op, llvm::StringRef name,
                            ElementType type) {
  return checkIntAttr(op, name, 0, integerTypeMin(type), integerTypeMax(type));
}

// act_min <= act_max within the range of |type|.
absl::Status checkActivationRange(const Op &op, ElementType type) {
  int64_t lo = integerTypeMin(type), hi = integerTypeMax(type);
  COMPILER_RETURN_IF_ERROR(checkIntAttr(op, "act_min", lo, lo, hi));
  COMPILER_RETURN_IF_ERROR(checkIntAttr(op, "act_max", hi, lo, hi));
  if (op.getInt("act_min", lo) > op.getInt("act_max", hi)) {
    return err("act_min " + std::to_string(op.getInt("act_min", lo)) +
               " exceeds act_max " + std::to_string(op.getInt("act_max", hi)));
  }
  return absl::OkStatus();
}

// A (multiplier, shift) attribute pair within Requantize's ranges.
absl::Status checkMultiplierAttrs(const Op &op, llvm::StringRef m,
                                  llvm::StringRef s) {
  COMPILER_RETURN_IF_ERROR(checkIntAttr(op, m, 1 << 30, 0, 2147483647));
  return checkIntAttr(op, s, 1, -31, 30);
}

// Per-channel int32 operand |i| of |n| entries (or one); constant values of
// multipliers and shifts are range-checked.
absl::Status checkChannelOperand(const Op &op, unsigned i, int64_t n,
                                 const std::string &what, int64_t lo,
                                 int64_t hi, bool single) {
  const TensorType &t = typeOf(op, i);
  if (t.elementType() != ElementType::I32) {
    return err(what + " must have element type i32, found " + t.str());
  }
  if (!t.hasRank()) {
    return absl::OkStatus();
  }
  bool ok = t.rank() == 1 &&
            (t.dim(0) < 0 || n < 0 || t.dim(0) == n || (single && t.dim(0) == 1));
  if (!ok) {
    return err(what + " must have shape [" + std::to_string(n) + "]" +
               (single ? " or [1]" : "") + ", found " + t.str());
  }
  if (auto values = getConstantInts(op.operand(i))) {
    for (int64_t v : *values) {
      if (v < lo || v > hi) {
        return err(what + " value " + std::to_string(v) +
                   " is out of range [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
      }
    }
  }
  return absl::OkStatus();
}

// The bias and the optional requantization operands of QConv/QMatMul, for
// |n| output channels; the result is i8 with requantization, i32 without.
absl::Status checkEpilogue(const Op &op, int64_t n, ElementType &result) {
  COMPILER_RETURN_IF_ERROR(checkChannelOperand(
      op, 2, n, "bias", integerTypeMin(ElementType::I32),
      integerTypeMax(ElementType::I32), false));
  if (op.numOperands() == 3) {
    result = ElementType::I32;
    return absl::OkStatus();
  }
  if (op.numOperands() != 5 || !op.operand(3) || !op.operand(4)) {
    return err("expected a multiplier and a shift operand after the bias, "
               "or neither");
  }
  COMPILER_RETURN_IF_ERROR(
      checkChannelOperand(op, 3, n, "multiplier", 0, 2147483647, true));
  COMPILER_RETURN_IF_ERROR(
      checkChannelOperand(op, 4, n, "shift", -31, 30, true));
  if (typeOf(op, 3).hasRank() && typeOf(op, 4).hasRank() &&
      typeOf(op, 3).dims() != typeOf(op, 4).dims()) {
    return err("multiplier and shift differ in shape");
  }
  result = ElementType::I8;
  COMPILER_RETURN_IF_ERROR(checkZeroPoint(op, "y_zero_point", result));
  return checkActivationRange(op, result);
}

// Weights of canonical ops: i8, or i16 when folding the zero point into
// u8/i8 weights left values outside int8.
absl::Status checkWeightType(ElementType t, const std::string &what) {
  if (t != ElementType::I8 && t != ElementType::I16) {
    return err(what + " must have element type i8 or i16, found " +
               typeName(t));
  }
  return absl::OkStatus();
}

} // namespace

absl::Status quantizeLinear(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  if (x.elementType() != ElementType::F32) {
    return err("input must have element type f32, found " + x.str());
  }
  ElementType type =
      op.operand(2) ? typeOf(op, 2).elementType() : ElementType::U8;
  if (op.hasAttr("output_dtype")) {
    std::string name = op.getString("output_dtype", "");
    auto declared = parseElementType(name);
    if (!declared || (op.operand(2) && *declared != type)) {
      return err("output_dtype '" + name +
                 "' differs from the zero point's type " + typeName(type));
    }
    type = *declared;
  }
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(type, "the result"));
  COMPILER_RETURN_IF_ERROR(
      checkParams(op, 1, 2, x, type, kUseAttribute, "y_scale/y_zero_point"));
  out = {x.withElementType(type)};
  return absl::OkStatus();
}

absl::Status dequantizeLinear(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  ElementType type = x.elementType();
  if (!isQuantizedType(type) && type != ElementType::I32) {
    return err("input has element type " + typeName(type) +
               "; DequantizeLinear takes i8, u8 or i32");
  }
  COMPILER_RETURN_IF_ERROR(
      checkParams(op, 1, 2, x, type, kUseAttribute, "x_scale/x_zero_point"));
  out = {x.withElementType(ElementType::F32)};
  return absl::OkStatus();
}

absl::Status qlinearConv(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &w = typeOf(op, 3);
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(x.elementType(), "x"));
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(w.elementType(), "w"));
  ElementType type = typeOf(op, 7).elementType();
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(type, "y_zero_point"));
  COMPILER_RETURN_IF_ERROR(checkParams(op, 1, 2, x, x.elementType(), kPerTensor,
                                       "x_scale/x_zero_point"));
  COMPILER_RETURN_IF_ERROR(checkParams(op, 4, 5, w, w.elementType(), 0,
                                       "w_scale/w_zero_point"));
  COMPILER_RETURN_IF_ERROR(
      checkParams(op, 6, 7, x, type, kPerTensor, "y_scale/y_zero_point"));
  if (!x.hasRank() || !w.hasRank()) {
    out = {TensorType::unranked(type)};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(convDims(op, x, w, dims));
  if (const Value *b = op.operand(8)) {
    const TensorType &bt = b->type();
    if (bt.elementType() != ElementType::I32 ||
        (bt.hasRank() && (bt.rank() != 1 || (bt.dim(0) >= 0 && dims[1] >= 0 &&
                                             bt.dim(0) != dims[1])))) {
      return err("bias must be i32 of shape [" + std::to_string(dims[1]) +
                 "], found " + bt.str());
    }
  }
  out = {TensorType::ranked(type, dims)};
  return absl::OkStatus();
}

absl::Status qlinearMatMul(const Op &op, std::vector<TensorType> &out) {
  const TensorType &a = typeOf(op, 0), &b = typeOf(op, 3);
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(a.elementType(), "a"));
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(b.elementType(), "b"));
  ElementType type = typeOf(op, 7).elementType();
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(type, "y_zero_point"));
  COMPILER_RETURN_IF_ERROR(checkParams(op, 1, 2, a, a.elementType(), kPerTensor,
                                       "a_scale/a_zero_point"));
  int64_t bAxis = b.hasRank() ? b.rank() - 1 : 0;
  COMPILER_RETURN_IF_ERROR(checkParams(op, 4, 5, b, b.elementType(), bAxis,
                                       "b_scale/b_zero_point"));
  COMPILER_RETURN_IF_ERROR(
      checkParams(op, 6, 7, a, type, kPerTensor, "y_scale/y_zero_point"));
  if (!a.hasRank() || !b.hasRank()) {
    out = {TensorType::unranked(type)};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(matmulDims(a, b, dims));
  out = {TensorType::ranked(type, dims)};
  return absl::OkStatus();
}

// Zero point operand |i| (optional) of ConvInteger/MatMulInteger: the type
// of the tensor it belongs to, a scalar or one entry per |axis| index.
static absl::Status checkIntegerZeroPoint(const Op &op, unsigned i,
                                          const TensorType &tensor,
                                          int64_t axis,
                                          const std::string &what) {
  const Value *zp = op.operand(i);
  if (!zp) {
    return absl::OkStatus();
  }
  if (zp->type().elementType() != tensor.elementType()) {
    return err(what + " has element type " +
               typeName(zp->type().elementType()) + ", its tensor " +
               typeName(tensor.elementType()));
  }
  const TensorType &t = zp->type();
  if (t.hasRank() && t.rank() > 1) {
    return err(what + " must be a scalar or 1-D, found " + t.str());
  }
  if (t.hasStaticShape() && t.numElements() > 1 && tensor.hasRank()) {
    int64_t a = axis < 0 ? axis + tensor.rank() : axis;
    if (a < 0 || a >= tensor.rank() ||
        (tensor.dim(a) >= 0 && tensor.dim(a) != t.numElements())) {
      return err(what + " has " + std::to_string(t.numElements()) +
                 " entries for an axis of extent " +
                 (a >= 0 && a < tensor.rank() ? std::to_string(tensor.dim(a))
                                              : std::string("?")));
    }
  }
  return absl::OkStatus();
}

absl::Status convInteger(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &w = typeOf(op, 1);
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(x.elementType(), "x"));
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(w.elementType(), "w"));
  COMPILER_RETURN_IF_ERROR(checkIntegerZeroPoint(op, 2, x, 1, "x_zero_point"));
  if (op.operand(2) && typeOf(op, 2).hasStaticShape() &&
      typeOf(op, 2).numElements() != 1) {
    return err("x_zero_point must be a single value");
  }
  COMPILER_RETURN_IF_ERROR(checkIntegerZeroPoint(op, 3, w, 0, "w_zero_point"));
  if (!x.hasRank() || !w.hasRank()) {
    out = {TensorType::unranked(ElementType::I32)};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(convDims(op, x, w, dims));
  out = {TensorType::ranked(ElementType::I32, dims)};
  return absl::OkStatus();
}

absl::Status matMulInteger(const Op &op, std::vector<TensorType> &out) {
  const TensorType &a = typeOf(op, 0), &b = typeOf(op, 1);
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(a.elementType(), "A"));
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(b.elementType(), "B"));
  if (!a.hasRank() || !b.hasRank()) {
    out = {TensorType::unranked(ElementType::I32)};
    return absl::OkStatus();
  }
  COMPILER_RETURN_IF_ERROR(
      checkIntegerZeroPoint(op, 2, a, a.rank() - 2, "a_zero_point"));
  COMPILER_RETURN_IF_ERROR(
      checkIntegerZeroPoint(op, 3, b, b.rank() - 1, "b_zero_point"));
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(matmulDims(a, b, dims));
  out = {TensorType::ranked(ElementType::I32, dims)};
  return absl::OkStatus();
}

absl::Status qconv(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0), &w = typeOf(op, 1);
  if (x.elementType() != ElementType::I8) {
    return err("input must have element type i8, found " + x.str());
  }
  COMPILER_RETURN_IF_ERROR(checkWeightType(w.elementType(), "weight"));
  COMPILER_RETURN_IF_ERROR(checkZeroPoint(op, "x_zero_point", ElementType::I8));
  if (!x.hasRank() || !w.hasRank()) {
    return err("QConv needs ranked operands");
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(convDims(op, x, w, dims));
  ElementType result;
  COMPILER_RETURN_IF_ERROR(checkEpilogue(op, dims[1], result));
  out = {TensorType::ranked(result, dims)};
  return absl::OkStatus();
}

absl::Status qmatmul(const Op &op, std::vector<TensorType> &out) {
  const TensorType &a = typeOf(op, 0), &b = typeOf(op, 1);
  if (a.elementType() != ElementType::I8) {
    return err("A must have element type i8, found " + a.str());
  }
  COMPILER_RETURN_IF_ERROR(checkWeightType(b.elementType(), "B"));
  COMPILER_RETURN_IF_ERROR(checkZeroPoint(op, "a_zero_point", ElementType::I8));
  COMPILER_RETURN_IF_ERROR(checkZeroPoint(op, "b_zero_point", b.elementType()));
  if (!a.hasRank() || !b.hasRank()) {
    return err("QMatMul needs ranked operands");
  }
  if (a.rank() < 2 || b.rank() < 2) {
    return err("A and B must have rank >= 2, found " + a.str() + " and " +
               b.str());
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(matmulDims(a, b, dims));
  ElementType result;
  COMPILER_RETURN_IF_ERROR(checkEpilogue(op, dims.back(), result));
  out = {TensorType::ranked(result, dims)};
  return absl::OkStatus();
}

absl::Status qbinary(const Op &op, std::vector<TensorType> &out) {
  const TensorType &a = typeOf(op, 0), &b = typeOf(op, 1);
  if (a.elementType() != ElementType::I8 ||
      b.elementType() != ElementType::I8) {
    return err("operands must have element type i8, found " + a.str() +
               " and " + b.str());
  }
  for (const char *zp : {"a_zero_point", "b_zero_point", "y_zero_point"}) {
    COMPILER_RETURN_IF_ERROR(checkZeroPoint(op, zp, ElementType::I8));
  }
  if (op.is(OpKind::QAdd)) {
    COMPILER_RETURN_IF_ERROR(checkIntAttr(op, "left_shift", 20, 0, 20));
    COMPILER_RETURN_IF_ERROR(
        checkMultiplierAttrs(op, "a_multiplier", "a_shift"));
    COMPILER_RETURN_IF_ERROR(
        checkMultiplierAttrs(op, "b_multiplier", "b_shift"));
  }
  COMPILER_RETURN_IF_ERROR(checkMultiplierAttrs(op, "multiplier", "shift"));
  COMPILER_RETURN_IF_ERROR(checkActivationRange(op, ElementType::I8));
  if (!a.hasRank() || !b.hasRank()) {
    out = {TensorType::unranked(ElementType::I8)};
    return absl::OkStatus();
  }
  std::vector<int64_t> dims;
  COMPILER_RETURN_IF_ERROR(broadcastShapes(a.dims(), b.dims(), dims));
  out = {TensorType::ranked(ElementType::I8, dims)};
  return absl::OkStatus();
}

absl::Status qrescale(const Op &op, std::vector<TensorType> &out) {
  const TensorType &x = typeOf(op, 0);
  COMPILER_RETURN_IF_ERROR(checkQuantizedType(x.elementType(), "the input"));
  std::string to = op.getString("to", "i8");
  auto type = parseElementType(to);
  if (!type || !isQuantizedType(*type)) {
    return err("to must be i8 or u8, found '" + to + "'");
  }
  COMPILER_RETURN_IF_ERROR(
      checkZeroPoint(op, "x_zero_point", x.elementType()));
  COMPILER_RETURN_IF_ERROR(checkZeroPoint(op, "y_zero_point", *type));
  COMPILER_RETURN_IF_ERROR(checkMultiplierAttrs(op, "multiplier", "shift"));
  COMPILER_RETURN_IF_ERROR(checkActivationRange(op, *type));
  out = {x.withElementType(*type)};
  return absl::OkStatus();
}

absl::Status qpool(const Op &op, std::vector<TensorType> &out) {
  if (typeOf(op, 0).elementType() != ElementType::I8) {
    return err("input must have element type i8, found " +
               typeOf(op, 0).str());
  }
  COMPILER_RETURN_IF_ERROR(checkActivationRange(op, ElementType::I8));
  return pool(op, out);
}

} // namespace osprey::compiler::graph::rules
