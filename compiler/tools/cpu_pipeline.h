// The stages from a prepared graph to a memory-planned dispatch program for
// one CPU target, for the compilations osprey-compile runs besides its main
// one (the --fallback-to-cpu variant, the --quantize calibration and report
// modules), which need no stage printing or partitioning.
#ifndef OSPREY_COMPILER_TOOLS_CPU_PIPELINE_H_
#define OSPREY_COMPILER_TOOLS_CPU_PIPELINE_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir.h"
#include "compiler/targets/target.h"

namespace osprey::compiler::tools {

// Lowers |g| (after the graph passes) to structured ops, fuses and tiles
// them for |target|, forms dispatch regions and plans their memory with
// |plan|.
absl::StatusOr<dispatch::DispatchProgram>
lowerToDispatch(const graph::Graph &g, targets::Target &target,
                const dispatch::PlanOptions &plan);

} // namespace osprey::compiler::tools

#endif // OSPREY_COMPILER_TOOLS_CPU_PIPELINE_H_
