// Structured (linalg-style) ops: an iteration domain with parallel/reduction
// iterators, one affine indexing map per operand and a scalar body.
//
// Transformations (fusion, tiling, microkernel selection) read only the
// iterator types, the indexing maps and the shape of the scalar body, never
// the name of the graph op a structured op came from.
#ifndef OSPREY_COMPILER_STRUCTURED_STRUCTURED_IR_H_
#define OSPREY_COMPILER_STRUCTURED_STRUCTURED_IR_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/graph/ir.h"
#include "llvm/Support/raw_ostream.h"

namespace osprey::compiler::structured {

// Most buffers one dispatch binds (the hal module's limit). Fusion keeps a
// group's activations (inputs and output) within it; constants beyond it
// are embedded in the code.
inline constexpr unsigned kMaxDispatchBindings = 32;

using graph::ElementType;
using graph::TensorType;

enum class IteratorType : uint8_t { Parallel, Reduction };

//===----------------------------------------------------------------------===//
// Affine maps
//===----------------------------------------------------------------------===//

// sum_i coeffs[i] * d_i + constant, over the loop dimensions d_i.
struct AffineExpr {
  std::vector<int64_t> coeffs;
  int64_t constant = 0;

  static AffineExpr dim(unsigned numDims, unsigned d, int64_t coeff = 1);
  static AffineExpr constantExpr(unsigned numDims, int64_t value);
  // The single loop dimension this expression equals (coefficient 1, no
  // constant), if any.
  std::optional<unsigned> asDim() const;
  bool isConstant() const;
  std::string str() const;
};

// Maps loop indices to the indices of one operand (one expression per operand
// dimension).
struct AffineMap {
  unsigned numDims = 0;
  std::vector<AffineExpr> results;

  static AffineMap identity(unsigned numDims);
  // Every result is a distinct loop dimension or the constant 0 (broadcast).
  bool isProjectedPermutationOrBroadcast() const;
  // Every result is a distinct loop dimension.
  bool isProjectedPermutation() const;
  bool isIdentity() const;
  // this ∘ inner: substitutes |inner|'s results for this map's dimensions.
  // |inner| maps a consumer's loops to this map's dimensions.
  AffineMap compose(const AffineMap &inner) const;
  std::string str() const;
};

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

enum class ScalarKind : uint8_t {
  Input,  // value of input operand |index|
  Output, // current accumulator (reductions) value
  Const,
  // Unary. RoundEven: a float rounded to an integral value, ties to even.
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Erf, Sigmoid, Recip, Cast, RoundEven,
  Sin, Cos, Tan, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  // Binary. AddSat: integer addition saturating to the type's range.
  // ShiftLeft, ShiftRight: unsigned integer shifts; by the type's width or
  // more they give 0.
  Add, Sub, Mul, Div, Max, Min, Pow, CmpEq, CmpLt, CmpGt, CmpLe, CmpGe,
  AddSat, ShiftLeft, ShiftRight,
  // Ternary. Requantize(x, multiplier, shift) on i32: docs/npu.md's
  // fixed-point rescale (compiler/graph/quantization.h).
  Select, Requantize,
};

struct ScalarNode {
  ScalarKind kind;
  std::vector<unsigned> operands; // indices of earlier nodes
  unsigned index = 0;             // Input: operand number
  double value = 0;               // Const
  ElementType castTo = ElementType::F32;
};

// A DAG of scalar nodes computing one output element; |result| is the node
// yielded. Builders return node indices.
class ScalarBody {
public:
  unsigned input(unsigned i);
  unsigned output();
  unsigned constant(double v);
  unsigned unary(ScalarKind kind, unsigned a);
  unsigned binary(ScalarKind kind, unsigned a, unsigned b);
  unsigned select(unsigned cond, unsigned a, unsigned b);
  unsigned cast(unsigned a, ElementType to);
  unsigned requantize(unsigned x, unsigned multiplier, unsigned shift);
  void yield(unsigned node) { result_ = node; }

  const std::vector<ScalarNode> &nodes() const { return nodes_; }
  unsigned result() const { return result_; }
  // Body yields input 0 unchanged.
  bool isCopy() const;
  // Body is out + in_a * in_b (either operand order) for two distinct inputs.
  bool isMultiplyAccumulate() const;
  // Body is out + cast(in_a) * cast(in_b): integers widened to the
  // accumulator's type (int8 products summed in i32).
  bool isWideningMultiplyAccumulate() const;
  // Nested expression text, e.g. "add(out, mul(in0, in1))".
  std::string str() const;

private:
  std::string str(unsigned node) const;
  std::vector<ScalarNode> nodes_;
  unsigned result_ = 0;
};

//===----------------------------------------------------------------------===//
// Ops and programs
//===----------------------------------------------------------------------===//

// An index that is data: along operand dimension |dim| a read uses the value
// of input operand |operand| (an integer tensor read at the same loop
// indices) instead of its map's expression.
struct IndirectIndex {
  unsigned dim = 0;
  unsigned operand = 0;
};

struct OperandAccess {
  unsigned tensor = 0;
  AffineMap map;
  // Reads whose indices fall outside the tensor yield this value (padding).
  std::optional<double> padValue;
  // When set, map.results[indirect->dim] is a placeholder (constant 0) and
  // the index is the value of input indirect->operand: a negative value
  // counts from the end of the dimension, and a value outside [-D, D) makes
  // the dispatch fail at run time instead of reading out of bounds.
  std::optional<IndirectIndex> indirect;
};

// What an op computes, derived from its structure (see classify()).
enum class OpClass : uint8_t {
  View,        // reshape: aliases its input, no computation
  Elementwise, // all parallel, projected-permutation/broadcast reads
  Contraction, // multiply-accumulate with projected-permutation reads (matmul)
  Convolution, // multiply-accumulate with windowed reads
  Reduction,   // other ops with reduction iterators
  Gather,      // parallel ops with windowed/padded/strided or indirect
               // (data-dependent) reads (pad, slice, gather)
  External,    // computed by another code generator (StructuredOp::external)
};

// A computation another code generator provides whole, e.g. an
// accelerator's command stream for a chain of layers. The op reads its
// inputs and writes its output as dense tensors (identity maps); fusion
// keeps it alone in its own group and dispatch region, and the target whose
// executable format it names builds it.
class ExternalKernel {
public:
  virtual ~ExternalKernel();
  // The executable format of the target that builds it (e.g. "npu-v1").
  virtual std::string format() const = 0;
  // One line for IR dumps.
  virtual std::string str() const = 0;
};

struct FusionInfo {
  int group = -1;
  // Prologue: computed by the group's root on demand while it reads the
  // value (see FusionGroup::prologue); never stored.
  enum class Role : uint8_t { Root, Epilogue, Fused, Prologue } role = Role::Root;
};

// A convolution root computed as Winograd F(m x m, 3x3) (see
// structured::transformWinogradWeights in winograd.h). Input |weights| then
// holds the compile-time transformed weights instead of the 3x3 window, as
// U[k][co][ci] (dims positions x cout x cin) or, when |transposed|,
// U^T[k][ci][co] (dims positions x cin x pitch, rows zero padded); its map
// reads co and ci and a placeholder 0 for the position k, so only code
// generators that know this form may read the op. The loops and the input
// access are those of the original convolution.
struct WinogradRoot {
  int64_t m = 2;           // output tile edge (2 or 4)
  bool transposed = false; // layout of the weights, see above
  unsigned weights = 0;    // input operand number of the weights
  unsigned input = 0;      // input operand number of the feature map
  unsigned co = 0, oh = 0, ow = 0; // parallel loops
  unsigned ci = 0, kh = 0, kw = 0; // reduction loops
  unsigned rowResult = 0;          // input's result reading oh + kh
  int64_t padH = 0, padW = 0;      // input's zero padding above and left
};

struct StructuredOp {
  std::string nodeName; // graph node it came from, for diagnostics
  bool isView = false;  // reshape-like alias of inputs[0]
  std::vector<int64_t> bounds;
  std::vector<IteratorType> iterators;
  std::vector<OperandAccess> inputs;
  OperandAccess output;
  std::optional<double> init; // accumulator start value for reductions
  ScalarBody body;
  FusionInfo fusion;
  std::optional<WinogradRoot> winograd; // set by transformWinogradWeights
  // Set for an op another code generator computes (see ExternalKernel);
  // bounds, iterators and body are then empty.
  std::shared_ptr<const ExternalKernel> external;

  bool hasReduction() const;
  OpClass classify() const;
};

struct TensorInfo {
  std::string name;
  TensorType type;
  bool isInput = false;
  bool isOutput = false;
  std::optional<graph::DenseData> constant;
};

// Decisions for one fusion group (a future dispatch region).
struct FusionGroup {
  unsigned root = 0;              // op index that owns the iteration space
  std::vector<unsigned> ops;      // op indices in execution order
  std::vector<int64_t> tileSizes; // per root loop; 0 = not tiled
  std::vector<int64_t> workgroups; // 3-D grid (x = innermost tiled loop)
  // Tiled root loops, innermost first: tiledLoops[0] maps to grid x,
  // tiledLoops[1] to y, the rest are linearized into z (tiledLoops[2]
  // fastest).
  std::vector<unsigned> tiledLoops;
  bool microkernel = false;        // root is a contraction
  // Ops (in execution order) whose last value the root reads and computes
  // itself, row by row, instead of reading it from memory (a 1x1
  // expansion before a depthwise convolution, see fuseAndTile).
  std::vector<unsigned> prologue;
};

struct StructuredProgram {
  std::string name;
  std::vector<TensorInfo> tensors;
  std::vector<StructuredOp> ops; // in execution order
  std::vector<unsigned> inputs, outputs;
  // The model's names of the graph inputs and outputs, in graph order
  // (tensor names are sanitised and outputs may be copies).
  std::vector<std::string> inputNames, outputNames;
  std::vector<FusionGroup> groups; // filled by the fusion pass

  // Indices of ops reading |tensor|.
  std::vector<unsigned> consumers(unsigned tensor) const;
  // Op index producing |tensor|, or -1.
  int producer(unsigned tensor) const;
};

void printProgram(const StructuredProgram &program, llvm::raw_ostream &os);
llvm::StringRef opClassName(OpClass c);

} // namespace osprey::compiler::structured

#endif // OSPREY_COMPILER_STRUCTURED_STRUCTURED_IR_H_
