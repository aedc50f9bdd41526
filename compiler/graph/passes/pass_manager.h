// Graph passes and the pass manager that runs them by name.
#ifndef OSPREY_COMPILER_GRAPH_PASSES_PASS_MANAGER_H_
#define OSPREY_COMPILER_GRAPH_PASSES_PASS_MANAGER_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "llvm/Support/raw_ostream.h"

namespace osprey::compiler::graph {

// A graph pass does one job on the graph IR. run() returns INVALID_ARGUMENT
// naming the model node when the graph cannot be processed.
class GraphPass {
public:
  virtual ~GraphPass() = default;
  virtual llvm::StringRef name() const = 0;
  virtual llvm::StringRef description() const = 0;
  virtual absl::Status run(Graph &graph) = 0;
};

// Creates a pass from "name" or "name{key=value,...}". Returns
// INVALID_ARGUMENT for unknown names or options.
absl::StatusOr<std::unique_ptr<GraphPass>> createPass(llvm::StringRef spec);
// Names and one-line descriptions of every pass createPass knows.
std::vector<std::pair<std::string, std::string>> listPasses();
// The default graph pipeline used by osprey-compile.
std::vector<std::string> defaultPipeline();

// Runs passes in order, optionally verifying and printing the IR between
// them. Not thread-safe; one run at a time.
class PassManager {
public:
  void addPass(std::unique_ptr<GraphPass> pass) {
    passes_.push_back(std::move(pass));
  }
  // Adds passes from a comma-separated list of specs ("a,b{k=v},c").
  absl::Status addPasses(llvm::StringRef specs);
  // Prints the IR to |os| after each pass named in |names| ("all" = every
  // pass). |os| is borrowed for the manager's lifetime.
  void setPrintIrAfter(std::set<std::string> names, llvm::raw_ostream *os) {
    printAfter_ = std::move(names);
    printStream_ = os;
  }
  // Stops the pipeline after the pass called |name| (empty: run all).
  void setStopAfter(std::string name) { stopAfter_ = std::move(name); }
  void setVerifyEach(bool verify) { verifyEach_ = verify; }
  const std::vector<std::unique_ptr<GraphPass>> &passes() const {
    return passes_;
  }
  // True if setStopAfter named a pass that is not in the pipeline.
  bool hasPass(llvm::StringRef name) const;

  // Runs the pipeline. Errors gain "while running pass '<name>'" context.
  absl::Status run(Graph &graph);

private:
  std::vector<std::unique_ptr<GraphPass>> passes_;
  std::set<std::string> printAfter_;
  llvm::raw_ostream *printStream_ = nullptr;
  std::string stopAfter_;
  bool verifyEach_ = true;
};

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_PASSES_PASS_MANAGER_H_
