// Recognizes GELU as exporters write it for opsets without a Gelu operator,
// 0.5 * x * (1 + erf(x / sqrt(2))) and its tanh approximation
// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), and replaces it
// by one Gelu op.
#include <cmath>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {
namespace {

// True when |value| is a one-element constant equal to |expected| (within
// float rounding).
bool isScalarConstant(const Value *value, double expected) {
  auto values = getConstantFloats(value);
  if (!values || values->size() != 1) {
    return false;
  }
  return std::fabs((*values)[0] - expected) <= 1e-6 * std::fabs(expected);
}

// If |op| is a binary op of |kind| with |operand| on either side, returns the
// other operand.
Value *otherOperand(const Op *op, llvm::StringRef kind, const Value *operand) {
  if (!op || op->kind() != kind || op->numOperands() != 2) {
    return nullptr;
  }
  if (op->operand(0) == operand) {
    return op->operand(1);
  }
  if (op->operand(1) == operand) {
    return op->operand(0);
  }
  return nullptr;
}

// The single op using |value|, when |value| has exactly one use and is not
// a graph output.
Op *soleUser(const Graph &graph, const Value *value) {
  if (graph.isOutput(value)) {
    return nullptr;
  }
  std::vector<Op *> users = graph.users(value);
  if (users.size() != 1) {
    return nullptr;
  }
  int uses = 0;
  for (const Value *operand : users[0]->operands()) {
    uses += operand == value;
  }
  return uses == 1 ? users[0] : nullptr;
}

// If |op| is a binary op of |kind| with a scalar constant |c| on either side,
// returns the other operand.
Value *scalarOperand(const Op *op, llvm::StringRef kind, double c) {
  if (!op || op->kind() != kind || op->numOperands() != 2) {
    return nullptr;
  }
  if (isScalarConstant(op->operand(1), c)) {
    return op->operand(0);
  }
  if (isScalarConstant(op->operand(0), c)) {
    return op->operand(1);
  }
  return nullptr;
}

// The op defining |value| when |user| is its only use.
Op *producerFor(const Graph &graph, const Value *value, const Op *user) {
  Op *op = value->definingOp();
  return op && soleUser(graph, value) == user ? op : nullptr;
}

// erf(x / sqrt(2)) or erf(x * (1 / sqrt(2))): returns x.
Value *matchErfArgument(const Graph &graph, const Op &erf) {
  Op *scale = producerFor(graph, erf.operand(0), &erf);
  if (!scale) {
    return nullptr;
  }
  if (scale->is(OpKind::Div) && scale->numOperands() == 2 &&
      isScalarConstant(scale->operand(1), M_SQRT2)) {
    return scale->operand(0);
  }
  return scalarOperand(scale, "Mul", M_SQRT1_2);
}

// |cube| is x^3 written as Pow(x, 3), x * (x * x) or (x * x) * x.
bool isCube(const Graph &graph, const Value *cube, const Value *x,
            const Op *user) {
  Op *op = producerFor(graph, cube, user);
  if (!op || op->numOperands() != 2) {
    return false;
  }
  if (op->is(OpKind::Pow)) {
    return op->operand(0) == x && isScalarConstant(op->operand(1), 3.0);
  }
  Value *square = otherOperand(op, "Mul", x);
  Op *sq = square ? producerFor(graph, square, op) : nullptr;
  return sq && sq->is(OpKind::Mul) && sq->operand(0) == x &&
         sq->operand(1) == x;
}

// tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)): returns x.
Value *matchTanhArgument(const Graph &graph, const Op &tanh) {
  Op *scale = producerFor(graph, tanh.operand(0), &tanh);
  Value *sum = scalarOperand(scale, "Mul", std::sqrt(2.0 / M_PI));
  Op *add = sum ? producerFor(graph, sum, scale) : nullptr;
  if (!add || !add->is(OpKind::Add) || add->numOperands() != 2) {
    return nullptr;
  }
  for (unsigned i = 0; i < 2; ++i) {
    Value *x = add->operand(i);
    Op *term = producerFor(graph, add->operand(1 - i), add);
    Value *cube = scalarOperand(term, "Mul", 0.044715);
    if (cube && isCube(graph, cube, x, term)) {
      return x;
    }
  }
  return nullptr;
}

// Matches 0.5 * x * (1 + act) around the erf or tanh |act| of |x| and returns
// the op whose result is the GELU of |x|, or null.
Op *matchGeluTail(const Graph &graph, const Op &act, const Value *x) {
  // 1 + act.
  Op *add = soleUser(graph, act.result());
  Value *one = otherOperand(add, "Add", act.result());
  if (!one || !isScalarConstant(one, 1.0)) {
    return nullptr;
  }
  // (x * (1 + act)) * 0.5 in either order, or (x * 0.5) * (1 + act).
  Op *mul = soleUser(graph, add->result());
  Value *other = otherOperand(mul, "Mul", add->result());
  if (!other) {
    return nullptr;
  }
  if (other == x) {
    Op *half = soleUser(graph, mul->result());
    Value *c = otherOperand(half, "Mul", mul->result());
    return c && isScalarConstant(c, 0.5) ? half : nullptr;
  }
  Op *halfX = producerFor(graph, other, mul);
  Value *c = otherOperand(halfX, "Mul", x);
  return c && isScalarConstant(c, 0.5) ? mul : nullptr;
}

} // namespace

absl::Status FuseGeluPass::run(Graph &graph) {
  for (Op *op : graph.opList()) {
    bool erf = op->is(OpKind::Erf);
    if (!erf && !op->is(OpKind::Tanh)) {
      continue;
    }
    Value *x = erf ? matchErfArgument(graph, *op)
                   : matchTanhArgument(graph, *op);
    Op *root = x ? matchGeluTail(graph, *op, x) : nullptr;
    // The scalar constants must not broadcast x to a larger shape.
    if (!root || root->result()->type() != x->type() ||
        !x->type().hasRank()) {
      continue;
    }
    // The Gelu takes over the name of the value it replaces.
    std::string name = root->result()->name();
    root->result()->setName("");
    std::map<std::string, Attribute> attrs;
    if (!erf) {
      attrs["approximate"] = Attribute("tanh");
    }
    Op *gelu = graph.createOp("Gelu", {x}, {x->type()}, std::move(attrs), root,
                              {name});
    gelu->setNodeName(root->nodeName());
    graph.replaceAllUsesWith(root->result(), gelu->result());
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
