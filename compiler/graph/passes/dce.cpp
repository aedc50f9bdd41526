// Dead code elimination.
#include <unordered_set>

#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {

absl::Status DeadCodeEliminationPass::run(Graph &graph) {
  // In reverse order, an op is live when a graph output or a live op uses
  // one of its results; its operands are then used.
  std::unordered_set<const Value *> used(graph.outputs().begin(),
                                         graph.outputs().end());
  std::unordered_set<const Op *> dead;
  for (auto it = graph.ops().rbegin(); it != graph.ops().rend(); ++it) {
    const Op &op = **it;
    bool live = false;
    for (const Value *result : op.results()) {
      live |= used.count(result) != 0;
    }
    if (!live) {
      dead.insert(&op);
      continue;
    }
    for (const Value *operand : op.operands()) {
      used.insert(operand);
    }
  }
  graph.eraseOps(dead);
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
