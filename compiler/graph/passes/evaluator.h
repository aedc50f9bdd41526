// Reference evaluation of graph ops on constant data, used by constant
// folding and by the BatchNorm folder.
#ifndef OSPREY_COMPILER_GRAPH_PASSES_EVALUATOR_H_
#define OSPREY_COMPILER_GRAPH_PASSES_EVALUATOR_H_

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"

namespace osprey::compiler::graph {

// Evaluates |op| whose non-null operands are all Constant ops (Shape only
// needs a static operand type) and whose result types |resultTypes| are
// static. Returns one DenseData per result; reshape-like ops return views of
// the operand storage. Returns UNIMPLEMENTED when the op kind or element type
// is not handled, INVALID_ARGUMENT (naming the node) for bad data such as an
// out-of-range gather index.
absl::StatusOr<std::vector<DenseData>>
evaluateOp(const Op &op, const std::vector<TensorType> &resultTypes);

// True if evaluateOp returns views of the operand storage for |op|'s kind.
bool isStorageSharingOp(const Op &op);

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_PASSES_EVALUATOR_H_
