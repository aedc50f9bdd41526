// Lowering of the quantization ops to structured ops with integer element
// types: QuantizeLinear and DequantizeLinear, and the canonical quantized
// ops of the fuse-qdq pass (QConv, QMatMul, QAdd, QMul, QRescale,
// QAveragePool).
#ifndef OSPREY_COMPILER_STRUCTURED_LOWER_QUANTIZED_H_
#define OSPREY_COMPILER_STRUCTURED_LOWER_QUANTIZED_H_

#include <string>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "compiler/structured/structured_ir.h"

namespace osprey::compiler::structured {

// What these lowerings need from the graph lowering that calls them.
class QuantizedLoweringContext {
public:
  virtual ~QuantizedLoweringContext() = default;
  // The tensor holding graph value |v| (created on first use).
  virtual absl::StatusOr<unsigned> valueTensor(const graph::Value *v) = 0;
  // A fresh tensor named after |base| (made unique).
  virtual unsigned tempTensor(const std::string &base, TensorType type) = 0;
  // The program being built; ops are appended in execution order.
  virtual StructuredProgram &structuredProgram() = 0;
};

// Whether lowerQuantizedOp handles ops of |kind|.
bool isQuantizedOpKind(llvm::StringRef kind);

// Lowers |op| (static shapes):
//  - QConv / QMatMul: a convolution or contraction multiplying the widened
//    integer operands into an i32 accumulator (padding reads the input zero
//    point; with constant weights the input zero point is folded into the
//    bias, the body being out + i32(x) * i32(w)), then an elementwise
//    epilogue adding the bias and, for i8 results, requantizing per channel
//    and clamping (fusion makes it the accumulation's epilogue);
//  - QAdd, QMul, QRescale: elementwise integer bodies (E_ADD for QAdd);
//  - QAveragePool: an i32 window sum, then the rounded division by the
//    number of in-bounds taps (a constant per output position when padded);
//  - QuantizeLinear / DequantizeLinear: elementwise float <-> integer.
// Results are clamp(zero point + Requantize(...)) computed without
// overflow. UNIMPLEMENTED naming the node for run-time quantization
// parameters and for ONNX's QLinearConv, QLinearMatMul, ConvInteger and
// MatMulInteger, which the fuse-qdq pass rewrites first.
absl::Status lowerQuantizedOp(const graph::Op &op,
                              QuantizedLoweringContext &ctx);

} // namespace osprey::compiler::structured

#endif // OSPREY_COMPILER_STRUCTURED_LOWER_QUANTIZED_H_
