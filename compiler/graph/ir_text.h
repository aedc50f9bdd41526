// Textual form of the graph IR: printing and parsing (they round-trip).
//
//   graph @name(%x: tensor<1x3x8x8xf32>) {
//     %w = Constant() {value = dense<[...]>} : tensor<4x3x3x3xf32>
//     %y = Conv(%x, %w, none) {group = 1, pads = [1, 1, 1, 1]} : tensor<1x4x8x8xf32> loc("Conv_0")
//     return %y
//   }
#ifndef OSPREY_COMPILER_GRAPH_IR_TEXT_H_
#define OSPREY_COMPILER_GRAPH_IR_TEXT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "llvm/Support/raw_ostream.h"

namespace osprey::compiler::graph {

struct PrintOptions {
  // Constants with at most this many elements print as a list; larger ones
  // print as hex bytes (still parseable).
  size_t maxListElements = 16;
  // Replace hex payloads of large constants by "dense<elided>" (not
  // parseable; for human-readable dumps).
  bool elideLargeConstants = false;
};

void printGraph(const Graph &graph, llvm::raw_ostream &os,
                const PrintOptions &options = {});
std::string printGraphToString(const Graph &graph,
                               const PrintOptions &options = {});

// Parses one graph from |text|. Returns INVALID_ARGUMENT with
// "<bufferName>:line:col: message" on syntax errors, unknown values or
// malformed constants. The result is not verified; call verifyGraph.
absl::StatusOr<std::unique_ptr<Graph>> parseGraph(llvm::StringRef text,
                                                  llvm::StringRef bufferName =
                                                      "<input>");

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_IR_TEXT_H_
