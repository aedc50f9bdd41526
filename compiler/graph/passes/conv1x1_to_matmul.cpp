// Rewrites 1x1 convolutions as matrix multiplications.
#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {
namespace {

bool allEqual(const IntList &values, int64_t expected) {
  for (int64_t v : values) {
    if (v != expected) {
      return false;
    }
  }
  return true;
}

bool isPointwiseConv(const Op &conv) {
  const TensorType &x = conv.operand(0)->type();
  const TensorType &w = conv.operand(1)->type();
  if (!x.hasStaticShape() || !w.hasStaticShape() || x.rank() < 3 ||
      !isConstant(conv.operand(1)) ||
      (conv.operand(2) && !isConstant(conv.operand(2)))) {
    return false;
  }
  std::string autoPad = conv.getString("auto_pad", "NOTSET");
  return conv.getInt("group", 1) == 1 &&
         (autoPad == "NOTSET" || autoPad == "VALID") &&
         allEqual(IntList(w.dims().begin() + 2, w.dims().end()), 1) &&
         allEqual(conv.getIntList("strides"), 1) &&
         allEqual(conv.getIntList("pads"), 0);
}

} // namespace

absl::Status Conv1x1ToMatMulPass::run(Graph &graph) {
  for (Op *conv : graph.opList()) {
    if (!conv->is(OpKind::Conv) || !isPointwiseConv(*conv)) {
      continue;
    }
    Value *x = conv->operand(0);
    Value *w = conv->operand(1);
    const TensorType &xt = x->type();
    ElementType et = xt.elementType();
    int64_t n = xt.dim(0), c = xt.dim(1), m = w->type().dim(0);
    int64_t pixels = xt.numElements() / (n * c);
    auto shapeConst = [&](std::vector<int64_t> dims) {
      Op *op = graph.createConstant(
          TensorType::ranked(ElementType::I64, {int64_t(dims.size())}),
          DenseData::fromInt64s(ElementType::I64, dims), conv);
      op->setNodeName(conv->nodeName());
      return op->result();
    };
    // [N, C, spatial...] -> [N, C, P]; weights [M, C, 1...] -> [M, C] as a
    // view of the same bytes.
    Op *flat = graph.createOp("Reshape", {x, shapeConst({n, c, pixels})},
                              {TensorType::ranked(et, {n, c, pixels})}, {},
                              conv);
    Op *w2 = graph.createConstant(TensorType::ranked(et, {m, c}),
                                  w->definingOp()->value(), conv);
    Op *mm = graph.createOp("MatMul", {w2->result(), flat->result()},
                            {TensorType::ranked(et, {n, m, pixels})}, {}, conv);
    Value *acc = mm->result();
    std::vector<Op *> created = {flat, w2, mm};
    if (Value *b = conv->operand(2)) {
      Op *b2 = graph.createConstant(TensorType::ranked(et, {m, 1}),
                                    b->definingOp()->value(), conv);
      Op *add = graph.createOp("Add", {acc, b2->result()},
                               {acc->type()}, {}, conv);
      acc = add->result();
      created.push_back(b2);
      created.push_back(add);
    }
    Op *out = graph.createOp(
        "Reshape", {acc, shapeConst(conv->result()->type().dims().vec())},
        {conv->result()->type()}, {}, conv, {conv->result()->name()});
    created.push_back(out);
    for (Op *op : created) {
      op->setNodeName(conv->nodeName());
    }
    graph.replaceAllUsesWith(conv->result(), out->result());
    graph.eraseOp(conv);
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
