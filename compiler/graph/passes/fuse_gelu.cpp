// Recognizes the erf form of GELU, 0.5 * x * (1 + erf(x / sqrt(2))), that
// exporters emit for opsets without a Gelu operator, and replaces it by Gelu.
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

// Matches the GELU pattern around |erf| and returns the op whose result is
// the GELU of the returned |x|, or null.
Op *matchGelu(const Graph &graph, Op &erf, Value *&x) {
  // erf(x / sqrt(2)) or erf(x * (1 / sqrt(2))).
  Op *scale = erf.operand(0)->definingOp();
  if (!scale || scale->numOperands() != 2 ||
      soleUser(graph, scale->result()) != &erf) {
    return nullptr;
  }
  x = nullptr;
  if (scale->kind() == "Div" && isScalarConstant(scale->operand(1), M_SQRT2)) {
    x = scale->operand(0);
  } else if (scale->kind() == "Mul") {
    if (isScalarConstant(scale->operand(1), M_SQRT1_2)) {
      x = scale->operand(0);
    } else if (isScalarConstant(scale->operand(0), M_SQRT1_2)) {
      x = scale->operand(1);
    }
  }
  if (!x) {
    return nullptr;
  }
  // 1 + erf(...).
  Op *add = soleUser(graph, erf.result());
  Value *one = otherOperand(add, "Add", erf.result());
  if (!one || !isScalarConstant(one, 1.0)) {
    return nullptr;
  }
  // Either (x * (1 + erf)) * 0.5 or (x * 0.5) * (1 + erf).
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
  Op *halfX = other->definingOp();
  Value *c = otherOperand(halfX, "Mul", x);
  if (!c || !isScalarConstant(c, 0.5) || !soleUser(graph, other)) {
    return nullptr;
  }
  return mul;
}

} // namespace

absl::Status FuseGeluPass::run(Graph &graph) {
  for (Op *op : graph.opList()) {
    if (op->kind() != "Erf") {
      continue;
    }
    Value *x = nullptr;
    Op *root = matchGelu(graph, *op, x);
    // The scalar constants must not broadcast x to a larger shape.
    if (!root || root->result()->type() != x->type() ||
        !x->type().hasRank()) {
      continue;
    }
    // The Gelu takes over the name of the value it replaces.
    std::string name = root->result()->name();
    root->result()->setName("");
    Op *gelu = graph.createOp("Gelu", {x}, {x->type()}, {}, root, {name});
    gelu->setNodeName(root->nodeName());
    graph.replaceAllUsesWith(root->result(), gelu->result());
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
