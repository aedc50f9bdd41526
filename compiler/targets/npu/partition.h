// Partitioning a graph between the CPU and the NPU: which ops go to the NPU,
// why the others stay on the CPU, and the chains of NPU ops that compile
// into one command stream each (intermediates resident in SRAM).
//
// Rules, in order, per op (graph order):
//  1. layerFromOp decides whether npu-v1 can run the op at all; its reason
//     is kept for --dump-partition.
//  2. estimateLayer must find a tiling (every dimension may exceed SRAM, but
//     not a single output row's working set).
//  3. With --offload=auto, the op goes to the NPU when its estimated NPU
//     cycles plus the cost of moving its operands across the boundary are
//     below the CPU estimate (MACs / CPU MACs per cycle, plus one cycle per
//     element for window-less ops). An op whose neighbours stay on the CPU
//     pays its input and output transfers; one inside a chain pays nothing.
//     --offload=all puts every runnable op on the NPU and fails listing the
//     ones that cannot go; --offload=none keeps everything on the CPU.
// Chains: NPU ops compiled into one command stream, their intermediates
// resident in SRAM. A chain is a run of NPU ops in graph order in which each
// op after the first reads a value of the run (so residual branches stay in
// one chain), and whose only value read outside it is its last op's result
// (formsChain).
#ifndef OSPREY_COMPILER_TARGETS_NPU_PARTITION_H_
#define OSPREY_COMPILER_TARGETS_NPU_PARTITION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/npu/npu_layer.h"

namespace osprey::compiler::npu {

enum class OffloadMode : uint8_t { Auto, None, All };
// "auto", "none", "all"; INVALID_ARGUMENT otherwise.
absl::StatusOr<OffloadMode> parseOffloadMode(llvm::StringRef text);

struct CostModel {
  // Sustained int8 MACs per cycle of the CPU the rest of the model runs on
  // (a Cortex-M4 with SIMD multiply-accumulate sustains about one).
  double cpuMacsPerCycle = 1.0;
  // Cycles the CPU spends per element of a window-less op.
  double cpuCyclesPerElement = 1.0;
};

struct OpPlacement {
  const graph::Op *op = nullptr;
  bool onNpu = false;
  // Why the op stays on the CPU (empty when it goes to the NPU, and for ops
  // with no computation such as Constant).
  std::string reason;
  int64_t macs = 0;
  uint64_t npuCycles = 0; // Estimate alone (0 when the NPU cannot run it).
  uint64_t cpuCycles = 0; // Estimate from the cost model.
  int chain = -1;         // Index into Partition::chains when on the NPU.
};

struct Partition {
  std::vector<OpPlacement> ops; // Graph order, Constants left out.
  // Indices into |ops|, in execution order.
  std::vector<std::vector<size_t>> chains;
  int64_t totalMacs = 0, npuMacs = 0;
};

// Whether |ops| (graph order) can run as one chain: every op's value but the
// last one's is read only by ops of the list and not returned, and the
// values read from outside plus the result fit the bindings of one npu-v1
// export (less the weights and the scratch).
bool formsChain(const graph::Graph &graph, llvm::ArrayRef<const graph::Op *> ops);

absl::StatusOr<Partition> partitionGraph(const graph::Graph &graph,
                                         const NpuConfig &config,
                                         OffloadMode mode,
                                         const CostModel &cost = {});

// The --dump-partition text: one line per op (device, node, kind, MACs,
// estimates, reason) and a summary (chains, share of MACs offloaded).
std::string formatPartition(const Partition &partition);

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_PARTITION_H_
