#include "compiler/tools/cpu_pipeline.h"

#include "compiler/structured/fusion.h"
#include "compiler/structured/lowering/lower_graph.h"

namespace osprey::compiler::tools {

absl::StatusOr<dispatch::DispatchProgram>
lowerToDispatch(const graph::Graph &g, targets::Target &target,
                const dispatch::PlanOptions &plan) {
  auto program = structured::lowering::lowerToStructured(g);
  if (!program.ok()) {
    return program.status();
  }
  if (absl::Status s = structured::fuseAndTile(*program, target.fusionOptions());
      !s.ok()) {
    return s;
  }
  auto formed = dispatch::formDispatchRegions(std::move(*program));
  if (!formed.ok()) {
    return formed.status();
  }
  if (absl::Status s = dispatch::planMemory(*formed, plan); !s.ok()) {
    return s;
  }
  return std::move(*formed);
}

} // namespace osprey::compiler::tools
