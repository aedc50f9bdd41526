// Quantization arithmetic shared by the graph, its passes, the lowering and
// the tests: the parameters of ONNX QuantizeLinear/DequantizeLinear, their
// evaluation on constants, and the one conversion of a real scale factor to
// the fixed-point (multiplier, shift) pair of docs/npu.md's Requantize.
#ifndef OSPREY_COMPILER_GRAPH_QUANTIZATION_H_
#define OSPREY_COMPILER_GRAPH_QUANTIZATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"

namespace osprey::compiler::graph {

//===----------------------------------------------------------------------===//
// Fixed-point requantization
//===----------------------------------------------------------------------===//

// A real factor r as Requantize's multiplier M (0 <= M <= 2^31 - 1) and shift
// s (-31 <= s <= 30): r = M * 2^(s - 31). The default is the identity.
struct FixedPointMultiplier {
  int32_t multiplier = 1 << 30;
  int32_t shift = 1;
  bool isIdentity() const { return multiplier == 1 << 30 && shift == 1; }
};

// Converts |real| to (M, s): with real = q * 2^e (q in [0.5, 1)), M is
// q * 2^31 rounded half up (2^31 becomes 2^30 with e + 1) and s = e. Below
// 2^-32 the shift stays at -31 and M loses low bits (rounded half up), down
// to (0, 0), which maps everything to 0; real = 0 gives (0, 0). Every
// compile-time scale conversion (and scripts/models/int8_reference.py, which
// ports it) uses this function. INVALID_ARGUMENT for a negative, NaN or
// infinite |real| or one of 2^30 and more (s would exceed 30).
absl::StatusOr<FixedPointMultiplier> quantizeMultiplier(double real);

// docs/npu.md's Requantize(value, M, s), the same arithmetic as
// drivers/npu/reference (compile-time use: folding, tests).
int32_t requantize(int32_t value, int32_t multiplier, int32_t shift);

//===----------------------------------------------------------------------===//
// QuantizeLinear / DequantizeLinear parameters
//===----------------------------------------------------------------------===//

// Smallest and largest value of integer element type |type|.
int64_t integerTypeMin(ElementType type);
int64_t integerTypeMax(ElementType type);
// i8 or u8: the element types of quantized activations and weights.
bool isQuantizedType(ElementType type);

// ONNX QuantizeLinear of one value: x / scale in f32, rounded half to even,
// plus |zeroPoint|, saturated to the range of |type| (NaN becomes 0 + zero
// point).
int64_t quantizeValue(float x, float scale, int64_t zeroPoint,
                      ElementType type);
// ONNX DequantizeLinear of one value: (q - zero point) * scale in f32.
float dequantizeValue(int64_t q, float scale, int64_t zeroPoint);

// The scale and zero point of a quantized tensor: one pair per tensor, or
// one per index of |axis|.
struct QuantParams {
  ElementType type = ElementType::I8; // the quantized element type
  int64_t axis = -1;                  // -1: per tensor
  std::vector<float> scales;
  std::vector<int64_t> zeroPoints; // same length as scales

  bool perTensor() const { return axis < 0; }
  float scale(int64_t i = 0) const { return scales[perTensor() ? 0 : i]; }
  int64_t zeroPoint(int64_t i = 0) const {
    return zeroPoints[perTensor() ? 0 : i];
  }
  // Same type, axis, scales and zero points.
  bool operator==(const QuantParams &other) const;
};

// Reads the |scale| and optional |zeroPoint| operands of a quantization of
// a tensor of type |quantized| (element type |type|) along |axis| (ONNX's
// attribute: used when the scale is a 1-D tensor of more than one element;
// a single scale means per tensor). Returns INVALID_ARGUMENT (no node
// prefix) for a scale that is not positive and finite, a zero point outside
// the range of |type| or of another element type, an axis the tensor does
// not have, or scale and zero point lengths that differ from each other or
// from the axis extent; UNIMPLEMENTED when an operand is not a constant.
absl::StatusOr<QuantParams> readQuantParams(const Value *scale,
                                            const Value *zeroPoint,
                                            int64_t axis,
                                            const TensorType &quantized,
                                            ElementType type);

// Evaluates QuantizeLinear or DequantizeLinear |op| on constant operands
// into a tensor of |resultType| (static). Errors: those of readQuantParams.
absl::StatusOr<DenseData> evaluateQuantizeOp(const Op &op,
                                             const TensorType &resultType);

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_QUANTIZATION_H_
