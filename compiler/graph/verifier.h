// Graph IR verifier: structure, arity and types per op kind.
#ifndef OSPREY_COMPILER_GRAPH_VERIFIER_H_
#define OSPREY_COMPILER_GRAPH_VERIFIER_H_

#include "absl/status/status.h"
#include "compiler/graph/ir.h"

namespace osprey::compiler::graph {

// Checks that every op kind is registered, operand/result counts fit the
// registry, operands are defined before use, outputs are defined, element
// type constraints hold and declared result types agree with the op's shape
// rule. Returns the first problem as INVALID_ARGUMENT naming the node.
absl::Status verifyGraph(const Graph &graph);

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_VERIFIER_H_
