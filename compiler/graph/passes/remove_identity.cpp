// Removes ops that forward their operand unchanged.
#include <algorithm>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {

absl::Status RemoveIdentityPass::run(Graph &graph) {
  for (Op *op : graph.opList()) {
    Value *in = op->operand(0);
    Value *out = op->numResults() == 1 ? op->result() : nullptr;
    if (!in || !out) {
      continue;
    }
    bool noop = false;
    if (op->is(OpKind::Identity)) {
      noop = true;
    } else if (op->is(OpKind::Reshape) || op->is(OpKind::Cast)) {
      noop = in->type().hasStaticShape() && in->type() == out->type();
    } else if (op->is(OpKind::Pad)) {
      auto pads = getConstantInts(op->operand(1));
      noop = pads && in->type() == out->type() &&
             std::all_of(pads->begin(), pads->end(),
                         [](int64_t p) { return p == 0; });
    }
    if (!noop) {
      continue;
    }
    // A graph input forwarded straight to an output keeps its op so the
    // output remains a distinct value.
    if (!in->definingOp() && graph.isOutput(out)) {
      continue;
    }
    graph.replaceAllUsesWith(out, in);
    graph.eraseOp(op);
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
