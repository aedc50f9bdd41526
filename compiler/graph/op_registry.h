// The op registry: one entry per graph op kind with its arity, operand type
// constraint and shape rule.
#ifndef OSPREY_COMPILER_GRAPH_OP_REGISTRY_H_
#define OSPREY_COMPILER_GRAPH_OP_REGISTRY_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "compiler/graph/ir.h"

namespace osprey::compiler::graph {

// Every registered op kind, in registry order. Code that branches on what an
// op is compares kinds (Op::is), not names.
// clang-format off
enum class OpKind : uint8_t {
  // Elementwise unary.
  Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Erf, Gelu, Sqrt,
  Reciprocal, Exp, Log, Abs, Neg, Identity, Clip, Cast, Floor, Ceil, Round, Sign,
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  // Elementwise binary / ternary with broadcasting.
  Add, Sub, Mul, Div, Pow, Mod, Equal, Less, Greater, LessOrEqual, GreaterOrEqual,
  Where,
  // Unsigned integer shifts, attribute direction LEFT or RIGHT.
  BitShift,
  // Elementwise over any number of operands, with broadcasting (the importer
  // writes ONNX Sum and Mean as chains of Add).
  Max, Min,
  // Logic on bool tensors (And, Or, Xor broadcast).
  And, Or, Xor, Not,
  // Contractions and windows.
  Conv, ConvTranspose, Gemm, MatMul, MaxPool, AveragePool, GlobalAveragePool,
  // Normalizations and reductions.
  BatchNormalization, LayerNormalization, Softmax, ReduceMean, ReduceSum,
  ReduceMax, LogSoftmax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
  ReduceSumSquare,
  // The index (i64) of the largest / smallest element along one axis.
  ArgMax, ArgMin,
  // Running sums along the axis its second operand names.
  CumSum,
  // Elementwise activations with parameters.
  PRelu, Elu, Selu, Softsign, Softplus,
  // Data movement.
  Flatten, Reshape, Transpose, Concat, Split, Slice, Squeeze, Unsqueeze, Gather,
  GatherElements,
  Pad, Expand, Resize, Shape, Constant,
  // A tensor of the shape its operand lists, every element attribute
  // 'value' (of element type 'dtype'); only constant shapes compile (it
  // folds).
  ConstantOfShape,
  // Quantization: ONNX operators.
  QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul, ConvInteger,
  MatMulInteger,
  // Canonical quantized ops written by the fuse-qdq pass.
  QConv, QMatMul, QAdd, QMul, QRescale, QAveragePool,
};
// clang-format on
constexpr unsigned kNumOpKinds = unsigned(OpKind::QAveragePool) + 1;

// What element types the first operand may have.
enum class TypeConstraint : uint8_t {
  Any,     // any element type
  Float,   // f16/bf16/f32/f64
  Numeric, // float or integer (not bool)
  Bool,    // i1 only (And, Or, Xor, Not)
};

// Computes result types of |op| from its operand types, attributes and the
// contents of constant operands. Writes one type per result (dims may be
// kDynamic when unknown). Returns INVALID_ARGUMENT naming the problem (without
// the node prefix; Op::emitError adds it).
using ShapeRule = absl::Status (*)(const Op &op, std::vector<TensorType> &out);

struct OpInfo {
  OpKind kind;
  const char *name;
  int minOperands;
  int maxOperands; // -1: variadic
  int minResults;
  int maxResults; // -1: variadic
  TypeConstraint constraint;
  ShapeRule shapeRule;
  bool elementwise; // result element i depends only on operand element i
};

// Returns the registry entry for |kind|, or null when the kind is unknown.
const OpInfo *lookupOp(llvm::StringRef kind);
// The registry entry of |kind|.
const OpInfo &opInfo(OpKind kind);
// All registered kinds, in registry order.
std::vector<const OpInfo *> allOps();

// Runs the shape rule of |op| (after an arity check). Errors carry the node
// prefix.
absl::Status inferResultTypes(const Op &op, std::vector<TensorType> &out);

//===----------------------------------------------------------------------===//
// Helpers shared by shape rules and passes
//===----------------------------------------------------------------------===//

// Values of |value| if it is produced by a Constant op with an integer type.
std::optional<std::vector<int64_t>> getConstantInts(const Value *value);
// Values of |value| if it is produced by a Constant op (any numeric type).
std::optional<std::vector<double>> getConstantFloats(const Value *value);
bool isConstant(const Value *value);

// ONNX multidirectional broadcast of two shapes; kDynamic dims broadcast to
// the known side when that side is not 1.
absl::Status broadcastShapes(llvm::ArrayRef<int64_t> a,
                             llvm::ArrayRef<int64_t> b,
                             std::vector<int64_t> &out);
// Normalizes a possibly negative |axis| for |rank|; error when out of range.
absl::Status normalizeAxis(int64_t &axis, int64_t rank, llvm::StringRef what);

// Replaces auto_pad SAME_UPPER/SAME_LOWER/VALID on a Conv, MaxPool or
// AveragePool by the explicit pads ONNX specifies, once the input (and Conv
// weight) and result shapes are static. Returns true when |op| changed.
// ConvTranspose keeps its auto_pad (its padding depends on output_shape).
bool resolveAutoPad(Op &op);

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_OP_REGISTRY_H_
