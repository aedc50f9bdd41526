// Dead code elimination.
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {

absl::Status DeadCodeEliminationPass::run(Graph &graph) {
  std::vector<Op *> ops = graph.opList();
  // Reverse order so a dead consumer frees its producers in the same sweep.
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    bool used = false;
    for (Value *result : (*it)->results()) {
      used |= graph.hasUses(result);
    }
    if (!used) {
      graph.eraseOp(*it);
    }
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
