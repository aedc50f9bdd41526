// Constant folding: replaces ops on constants by Constant ops.
#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/evaluator.h"
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {

absl::Status ConstantFoldingPass::run(Graph &graph) {
  for (Op *op : graph.opList()) {
    if (op->is(OpKind::Constant)) {
      continue;
    }
    bool foldable = op->is(OpKind::Shape)
                        ? op->operand(0)->type().hasStaticShape()
                        : op->numOperands() > 0;
    for (Value *operand : op->operands()) {
      foldable &= op->is(OpKind::Shape) || !operand || isConstant(operand);
    }
    if (!foldable) {
      continue;
    }
    // Operands that became constants in this pass can fix result shapes
    // the last shape propagation left open (ConstantOfShape of a folded
    // shape).
    if (!op->is(OpKind::Shape) &&
        llvm::any_of(op->results(), [](const Value *r) {
          return !r->type().hasStaticShape();
        })) {
      std::vector<TensorType> inferred;
      if (inferResultTypes(*op, inferred).ok()) {
        for (unsigned i = 0; i < op->numResults(); ++i) {
          op->result(i)->setType(inferred[i]);
        }
      }
    }
    std::vector<TensorType> types;
    size_t bytes = 0;
    for (Value *result : op->results()) {
      if (!result->type().hasStaticShape()) {
        foldable = false;
        break;
      }
      types.push_back(result->type());
      bytes += result->type().numElements() *
               elementByteSize(result->type().elementType());
    }
    if (!foldable || (bytes > maxBytes_ && !isStorageSharingOp(*op))) {
      continue;
    }
    auto folded = evaluateOp(*op, types);
    if (!folded.ok()) {
      if (absl::IsUnimplemented(folded.status())) {
        continue;
      }
      return folded.status();
    }
    for (unsigned i = 0; i < op->numResults(); ++i) {
      Op *c = graph.createConstant(types[i], std::move((*folded)[i]), op,
                                   op->result(i)->name());
      c->setNodeName(op->nodeName());
      graph.replaceAllUsesWith(op->result(i), c->result());
    }
    graph.eraseOp(op);
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
