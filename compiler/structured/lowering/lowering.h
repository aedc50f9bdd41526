// The state shared by the lowerings of graph ops to structured ops: the
// program being built, the tensor of each graph value, and the builders every
// op family uses (elementwise ops, reductions, views).
#ifndef OSPREY_COMPILER_STRUCTURED_LOWERING_LOWERING_H_
#define OSPREY_COMPILER_STRUCTURED_LOWERING_LOWERING_H_

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "compiler/graph/op_registry.h"
#include "compiler/graph/status.h"
#include "compiler/structured/structured_ir.h"

namespace osprey::compiler::structured::lowering {

using graph::Op;
using graph::OpKind;
using graph::Value;
using SK = ScalarKind;

// Why a value inside the graph has a dynamic shape: graph inputs are checked
// first, so its shape was computed from tensor data.
inline constexpr const char *kDynamicResult =
    "dynamic shapes are not implemented (the graph inputs are static, so "
    "this shape depends on tensor values known only at run time)";

// Builds one StructuredProgram from one graph. Tensors are numbered in the
// order they are first asked for, so lowerings ask for them (tensorFor,
// newTensor) in a fixed order: the program, and the module compiled from
// it, depend on that order. Not thread-safe.
class LoweringContext {
public:
  StructuredProgram &program() { return program_; }
  const TensorType &type(unsigned tensor) const {
    return program_.tensors[tensor].type;
  }

  // The tensor of graph value |v|, created on first use. UNIMPLEMENTED
  // naming the value (and its op) when its shape is not static.
  absl::StatusOr<unsigned> tensorFor(const Value *v);
  // A new tensor named after |base| (made an identifier, made unique); when
  // |v| is given it becomes that value's tensor.
  unsigned newTensor(std::string base, TensorType type,
                     const Value *v = nullptr);
  // A new intermediate tensor of |op| named "<result name><suffix>".
  unsigned newTemp(const Op &op, const std::string &suffix, TensorType type) {
    return newTensor(op.result()->name() + suffix, std::move(type));
  }
  // Appends |s| to the program.
  void add(StructuredOp s) { program_.ops.push_back(std::move(s)); }

  // An all-parallel op of |op| over |bounds|; inputs, body and output are
  // the caller's to add.
  static StructuredOp parallelOp(const Op &op, llvm::ArrayRef<int64_t> bounds);
  // Sets |s|'s output to |result|'s tensor through the identity map and
  // appends |s|.
  absl::Status emit(StructuredOp s, const Value *result);

  // Adds an all-parallel op over the shape of |result| whose inputs are
  // broadcast against it.
  absl::Status elementwise(const Op &op, const Value *result,
                           std::vector<const Value *> inputs, ScalarBody body);
  // Same as elementwise, producing a fresh intermediate tensor of |type|
  // named after |op|'s result and |suffix|.
  absl::StatusOr<unsigned> elementwiseTemp(const Op &op, TensorType type,
                                           std::vector<unsigned> inputs,
                                           ScalarBody body,
                                           const std::string &suffix);
  // |op|'s result as a copy of its first operand (an op that changes
  // nothing, e.g. Resize by 1 or Pad by 0).
  absl::Status copy(const Op &op);
  // Reduces |input| over the dims marked in |reduced| (kept as extent-1
  // dims when |keepDims|) with |combine| (Add or Max) starting at |init|;
  // when |square| the body accumulates in0 * in0. Writes |result|'s tensor
  // when given, else a new tensor named after |suffix|.
  absl::StatusOr<unsigned> reduce(const Op &op, unsigned input,
                                  std::vector<bool> reduced, bool keepDims,
                                  SK combine, double init, bool square,
                                  const std::string &suffix,
                                  const Value *result = nullptr);
  // result = tensor * factor, written to |op|'s result; |tensor| is read
  // broadcast when its rank differs.
  absl::Status scaleInto(const Op &op, unsigned tensor, double factor);
  // |op|'s result as a view (reshape) of its first operand.
  absl::Status view(const Op &op);

private:
  StructuredProgram program_;
  std::unordered_map<const Value *, unsigned> tensors_;
  std::set<std::string> usedNames_;
  // Per base name, the suffix where the search for a free name resumes.
  std::unordered_map<std::string, int> nextSuffix_;
};

// How reads padded with 0 of which one is in bounds combine into that one's
// value: a sum, or for bool (no arithmetic) a max.
inline SK padCombine(const TensorType &t) {
  return t.elementType() == ElementType::Bool ? SK::Max : SK::Add;
}

// Lowers one graph op (static shapes: lowerGraph checks them first).
// Errors name the node.
using LowerFn = absl::Status (*)(LoweringContext &ctx, const Op &op);

// The lowering of |kind|, or null when the kind has none.
LowerFn lookupLowering(OpKind kind);

} // namespace osprey::compiler::structured::lowering

#endif // OSPREY_COMPILER_STRUCTURED_LOWERING_LOWERING_H_
