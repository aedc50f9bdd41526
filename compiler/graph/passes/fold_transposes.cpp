// Composes, cancels and absorbs transposes.
#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {
namespace {

IntList permOf(const Op &op) {
  IntList perm = op.getIntList("perm");
  if (!op.hasAttr("perm") && op.operand(0)->type().hasRank()) {
    for (int64_t i = op.operand(0)->type().rank() - 1; i >= 0; --i) {
      perm.push_back(i);
    }
  }
  return perm;
}

bool isIdentityPerm(const IntList &perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) {
      return false;
    }
  }
  return true;
}

} // namespace

absl::Status FoldTransposesPass::run(Graph &graph) {
  for (Op *op : graph.opList()) {
    if (op->is(OpKind::Transpose) && op->operand(0)->type().hasRank()) {
      IntList perm = permOf(*op);
      Op *inner = op->operand(0)->definingOp();
      if (inner && inner->is(OpKind::Transpose)) {
        // out[i] = mid[perm[i]] = in[innerPerm[perm[i]]].
        IntList innerPerm = permOf(*inner);
        IntList composed;
        for (int64_t p : perm) {
          composed.push_back(innerPerm[p]);
        }
        op->setOperand(0, inner->operand(0));
        op->setAttr("perm", composed);
        perm = composed;
      }
      if (isIdentityPerm(perm) && !(!op->operand(0)->definingOp() &&
                                    graph.isOutput(op->result()))) {
        graph.replaceAllUsesWith(op->result(), op->operand(0));
        graph.eraseOp(op);
      }
      continue;
    }
    if (op->is(OpKind::Gemm)) {
      for (unsigned i = 0; i < 2; ++i) {
        Op *t = op->operand(i)->definingOp();
        if (t && t->is(OpKind::Transpose) && permOf(*t) == IntList{1, 0}) {
          const char *attr = i == 0 ? "transA" : "transB";
          op->setOperand(i, t->operand(0));
          op->setAttr(attr, int64_t(op->getInt(attr, 0) == 0 ? 1 : 0));
        }
      }
    }
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
