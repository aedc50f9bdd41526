// Graph IR verifier.
#include "compiler/graph/verifier.h"

#include <unordered_set>

#include "compiler/graph/op_registry.h"

namespace osprey::compiler::graph {

absl::Status verifyGraph(const Graph &graph) {
  std::unordered_set<const Value *> defined(graph.inputs().begin(),
                                            graph.inputs().end());
  for (const auto &opPtr : graph.ops()) {
    const Op &op = *opPtr;
    const OpInfo *info = op.info();
    if (!info) {
      return op.emitError("unknown op kind");
    }
    int results = static_cast<int>(op.numResults());
    if (results < info->minResults ||
        (info->maxResults >= 0 && results > info->maxResults)) {
      return op.emitError("unexpected number of results: " +
                          std::to_string(results));
    }
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      const Value *v = op.operand(i);
      if (v && !defined.count(v)) {
        return op.emitError("operand #" + std::to_string(i) +
                            " is used before it is defined");
      }
    }
    if (op.numOperands() > 0 && op.operand(0)) {
      ElementType et = op.operand(0)->type().elementType();
      bool ok = info->constraint == TypeConstraint::Any ||
                (info->constraint == TypeConstraint::Float && isFloatType(et)) ||
                (info->constraint == TypeConstraint::Numeric &&
                 et != ElementType::Bool);
      if (!ok) {
        return op.emitError("element type " + elementTypeName(et).str() +
                            " is not supported");
      }
    }
    std::vector<TensorType> inferred;
    if (absl::Status s = inferResultTypes(op, inferred); !s.ok()) {
      return s;
    }
    if (inferred.size() != op.numResults()) {
      return op.emitError("shape rule produced " +
                          std::to_string(inferred.size()) + " types for " +
                          std::to_string(op.numResults()) + " results");
    }
    for (unsigned i = 0; i < op.numResults(); ++i) {
      if (!refineType(inferred[i], op.result(i)->type())) {
        return op.emitError("result #" + std::to_string(i) + " has type " +
                            op.result(i)->type().str() + " but the op yields " +
                            inferred[i].str());
      }
      if (!defined.insert(op.result(i)).second) {
        return op.emitError("result defined twice");
      }
    }
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    if (!graph.outputs()[i] || !defined.count(graph.outputs()[i])) {
      return absl::InvalidArgumentError("graph output #" + std::to_string(i) +
                                        " is not defined");
    }
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
