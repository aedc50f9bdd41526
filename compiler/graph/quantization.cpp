// Quantization parameters, the scale -> (multiplier, shift) conversion and
// QuantizeLinear/DequantizeLinear on constants.
#include "compiler/graph/quantization.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "compiler/graph/op_registry.h"

namespace osprey::compiler::graph {
namespace {

// |v| in the shortest %g form ("0.5", "-1", "nan").
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

} // namespace

absl::StatusOr<FixedPointMultiplier> quantizeMultiplier(double real) {
  if (!std::isfinite(real) || real < 0) {
    return absl::InvalidArgumentError(
        "requantization factor " + number(real) +
        " is not a finite non-negative number");
  }
  if (real == 0) {
    return FixedPointMultiplier{0, 0};
  }
  int exponent = 0;
  double q = std::frexp(real, &exponent); // real = q * 2^exponent
  // q * 2^31 is exact in double; q > 0, so floor(x + 0.5) rounds half up.
  int64_t m = static_cast<int64_t>(std::floor(q * 2147483648.0 + 0.5));
  if (m == (int64_t{1} << 31)) {
    m >>= 1;
    ++exponent;
  }
  if (exponent > 30) {
    return absl::InvalidArgumentError(
        "requantization factor " + number(real) +
        " is too large (at most 2^30)");
  }
  if (exponent < -31) {
    int64_t drop = -31 - exponent;
    if (drop >= 32) {
      return FixedPointMultiplier{0, 0};
    }
    m = (m + (int64_t{1} << (drop - 1))) >> drop;
    exponent = -31;
    if (m == 0) {
      return FixedPointMultiplier{0, 0};
    }
  }
  return FixedPointMultiplier{static_cast<int32_t>(m), exponent};
}

int32_t requantize(int32_t value, int32_t multiplier, int32_t shift) {
  int32_t left = shift > 0 ? shift : 0;
  int32_t right = shift > 0 ? 0 : -shift;
  int64_t wide = static_cast<int64_t>(value) * (int64_t{1} << left);
  int32_t a = static_cast<int32_t>(
      std::clamp<int64_t>(wide, std::numeric_limits<int32_t>::min(),
                          std::numeric_limits<int32_t>::max()));
  int32_t high;
  if (a == multiplier && a == std::numeric_limits<int32_t>::min()) {
    high = std::numeric_limits<int32_t>::max();
  } else {
    int64_t p = static_cast<int64_t>(a) * multiplier;
    int64_t nudge = p >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
    high = static_cast<int32_t>((p + nudge) / (int64_t{1} << 31));
  }
  if (right == 0) {
    return high;
  }
  int64_t mask = (int64_t{1} << right) - 1;
  int64_t remainder = static_cast<int64_t>(high) & mask;
  int64_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
  return static_cast<int32_t>((static_cast<int64_t>(high) >> right) +
                              (remainder > threshold ? 1 : 0));
}

int64_t integerTypeMin(ElementType type) {
  switch (type) {
  case ElementType::I8: return -128;
  case ElementType::I16: return -32768;
  case ElementType::I32: return std::numeric_limits<int32_t>::min();
  case ElementType::I64: return std::numeric_limits<int64_t>::min();
  default: return 0;
  }
}

int64_t integerTypeMax(ElementType type) {
  switch (type) {
  case ElementType::I8: return 127;
  case ElementType::I16: return 32767;
  case ElementType::I32: return std::numeric_limits<int32_t>::max();
  case ElementType::I64: return std::numeric_limits<int64_t>::max();
  case ElementType::U8: return 255;
  case ElementType::U16: return 65535;
  case ElementType::U32: return std::numeric_limits<uint32_t>::max();
  case ElementType::Bool: return 1;
  default: return std::numeric_limits<int64_t>::max();
  }
}

bool isQuantizedType(ElementType type) {
  return type == ElementType::I8 || type == ElementType::U8;
}

int64_t quantizeValue(float x, float scale, int64_t zeroPoint,
                      ElementType type) {
  float q = std::nearbyint(x / scale); // ties to even (default rounding)
  double v = std::isnan(q) ? 0.0 : double(q);
  v += double(zeroPoint);
  double lo = double(integerTypeMin(type)), hi = double(integerTypeMax(type));
  return static_cast<int64_t>(std::clamp(v, lo, hi));
}

float dequantizeValue(int64_t q, float scale, int64_t zeroPoint) {
  return (static_cast<float>(q) - static_cast<float>(zeroPoint)) * scale;
}

bool QuantParams::operator==(const QuantParams &other) const {
  return type == other.type && axis == other.axis && scales == other.scales &&
         zeroPoints == other.zeroPoints;
}

absl::StatusOr<QuantParams> readQuantParams(const Value *scale,
                                            const Value *zeroPoint,
                                            int64_t axis,
                                            const TensorType &quantized,
                                            ElementType type) {
  auto err = [](const std::string &m) {
    return absl::InvalidArgumentError(m);
  };
  QuantParams params;
  params.type = type;
  const TensorType &st = scale->type();
  if (st.elementType() != ElementType::F32) {
    return err("scale must have element type f32, found " + st.str());
  }
  if (st.hasRank() && st.rank() > 1) {
    return err("scale must be a scalar or 1-D, found " + st.str());
  }
  if (zeroPoint) {
    const TensorType &zt = zeroPoint->type();
    if (zt.elementType() != type) {
      return err("zero point has element type " +
                 elementTypeName(zt.elementType()).str() +
                 ", the quantized tensor " + elementTypeName(type).str());
    }
    if (zt.hasRank() && st.hasRank() && zt.rank() != st.rank()) {
      return err("zero point " + zt.str() + " and scale " + st.str() +
                 " differ in shape");
    }
  }
  auto scales = getConstantFloats(scale);
  if (!scales) {
    return absl::UnimplementedError("scale is not a constant");
  }
  if (scales->empty()) {
    return err("scale is empty");
  }
  for (double s : *scales) {
    if (!(s > 0) || !std::isfinite(s)) {
      return err("scale " + number(s) +
                 " is not positive and finite");
    }
    params.scales.push_back(static_cast<float>(s));
  }
  if (zeroPoint) {
    auto zps = getConstantInts(zeroPoint);
    if (!zps) {
      return absl::UnimplementedError("zero point is not a constant");
    }
    params.zeroPoints = *zps;
  } else {
    params.zeroPoints.assign(params.scales.size(), 0);
  }
  if (params.zeroPoints.size() != params.scales.size()) {
    return err("zero point has " + std::to_string(params.zeroPoints.size()) +
               " entries, scale has " + std::to_string(params.scales.size()));
  }
  for (int64_t z : params.zeroPoints) {
    if (z < integerTypeMin(type) || z > integerTypeMax(type) ||
        (type == ElementType::I32 && z != 0)) {
      return err("zero point " + std::to_string(z) + " is out of range for " +
                 elementTypeName(type).str() +
                 (type == ElementType::I32 ? " (must be 0)" : ""));
    }
  }
  if (params.scales.size() == 1) {
    return params; // per tensor
  }
  if (!quantized.hasRank()) {
    return params;
  }
  int64_t rank = quantized.rank();
  if (axis < -rank || axis >= rank) {
    return err("axis " + std::to_string(axis) +
               " is out of range for a tensor of rank " +
               std::to_string(rank));
  }
  params.axis = axis < 0 ? axis + rank : axis;
  int64_t extent = quantized.dim(params.axis);
  if (extent >= 0 && extent != static_cast<int64_t>(params.scales.size())) {
    return err("scale has " + std::to_string(params.scales.size()) +
               " entries but axis " + std::to_string(params.axis) +
               " has extent " + std::to_string(extent));
  }
  return params;
}

absl::StatusOr<DenseData> evaluateQuantizeOp(const Op &op,
                                             const TensorType &resultType) {
  bool quantize = op.is(OpKind::QuantizeLinear);
  const Value *x = op.operand(0);
  ElementType qType =
      quantize ? resultType.elementType() : x->type().elementType();
  auto params = readQuantParams(op.operand(1), op.operand(2),
                                op.getInt("axis", 1), x->type(), qType);
  if (!params.ok()) {
    return op.emitError(std::string(params.status().message()));
  }
  llvm::ArrayRef<int64_t> dims = x->type().dims();
  int64_t inner = 1, extent = 1;
  if (!params->perTensor()) {
    extent = dims[params->axis];
    for (size_t d = params->axis + 1; d < dims.size(); ++d) {
      inner *= dims[d];
    }
  }
  const DenseData &data = x->definingOp()->value();
  int64_t count = resultType.numElements();
  auto channel = [&](int64_t i) { return (i / inner) % extent; };
  if (quantize) {
    std::vector<double> values = data.toDoubles(x->type().elementType());
    std::vector<int64_t> out(count);
    for (int64_t i = 0; i < count; ++i) {
      int64_t c = channel(i);
      out[i] = quantizeValue(static_cast<float>(values[i]), params->scale(c),
                             params->zeroPoint(c), qType);
    }
    return DenseData::fromInt64s(qType, out);
  }
  std::vector<int64_t> values = data.toInt64s(qType);
  std::vector<double> out(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t c = channel(i);
    out[i] = dequantizeValue(values[i], params->scale(c), params->zeroPoint(c));
  }
  return DenseData::fromDoubles(resultType.elementType(), out);
}

} // namespace osprey::compiler::graph
