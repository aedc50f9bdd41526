// Shape propagation: refines result types with the op shape rules and makes
// auto_pad explicit once shapes are static.
#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {

absl::Status ShapePropagationPass::run(Graph &graph) {
  for (const auto &op : graph.ops()) {
    std::vector<TensorType> inferred;
    if (absl::Status s = inferResultTypes(*op, inferred); !s.ok()) {
      return s;
    }
    for (unsigned i = 0; i < op->numResults(); ++i) {
      Value *result = op->result(i);
      auto refined = refineType(result->type(), inferred[i]);
      if (!refined) {
        return op->emitError("result #" + std::to_string(i) + " is declared " +
                             result->type().str() + " but the op yields " +
                             inferred[i].str());
      }
      result->setType(*refined);
    }
    resolveAutoPad(*op);
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
