// Offloading a graph's NPU chains: which ops go to the NPU (partition.h),
// each chain compiled once to check it and to pack its weights, and the
// lowering of every chain to one external structured op (an NpuKernel) in
// place of its graph ops.
//
// A chain here has one result leaving it (partition.h, formsChain); its
// other values stay in SRAM, also where several layers of the chain read
// them (residual branches). A chain the stream emitter refuses, or whose
// intermediates would spill out of SRAM, compiles as shorter chains from
// its first op; a layer the emitter refuses alone stays on the CPU with the
// emitter's reason.
//
// Layout: NPU layers read and write batch-1 NCHW values as HWC. A 4-D value
// crossing the boundary gets a transpose on the CPU (a structured copy
// [1, C, H, W] <-> [1, H, W, C]) unless its memory is the same in both
// layouts (C == 1 or H * W == 1); a value one chain writes and another reads
// stays HWC, and is transposed back only when the CPU reads it or it is a
// graph output. MatMul operands and other ranks need none.
#ifndef OSPREY_COMPILER_TARGETS_NPU_OFFLOAD_H_
#define OSPREY_COMPILER_TARGETS_NPU_OFFLOAD_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "compiler/structured/lowering/lower_graph.h"
#include "compiler/structured/structured_ir.h"
#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/npu/partition.h"
#include "compiler/targets/npu/stream_emitter.h"

namespace osprey::compiler::npu {

inline constexpr const char *kNpuFormat = "npu-v1";

// The external kernel of one NPU chain. Its layers address operands by the
// external op's operand positions: activation input i is binding i
// (i < inputCount), the packed weights binding inputCount, the output
// binding inputCount + 1. The target renumbers them to the dispatch's
// bindings when it builds the stream.
class NpuKernel : public structured::ExternalKernel {
public:
  NpuKernel(NpuChain chain, unsigned inputCount, CompiledStream trial,
            NpuConfig config)
      : chain_(std::move(chain)), inputCount_(inputCount),
        trial_(std::move(trial)), config_(config) {}

  std::string format() const override { return kNpuFormat; }
  std::string str() const override;

  const NpuChain &chain() const { return chain_; }
  unsigned inputCount() const { return inputCount_; }
  unsigned weightOperand() const { return inputCount_; }
  unsigned outputOperand() const { return inputCount_ + 1; }
  // The stream compiled with the placeholder bindings: its weights are the
  // external op's weight constant, and its estimate the chain's.
  const CompiledStream &trial() const { return trial_; }
  const NpuConfig &config() const { return config_; }

private:
  NpuChain chain_;
  unsigned inputCount_;
  CompiledStream trial_;
  NpuConfig config_;
};

class NpuOffload {
public:
  // Partitions |graph| (after the graph passes) and compiles each chain.
  // Errors: those of partitionGraph (--offload=all with ops the NPU cannot
  // run), and INTERNAL when a layer the partitioner accepted fails.
  static absl::StatusOr<std::unique_ptr<NpuOffload>>
  plan(const graph::Graph &graph, const NpuConfig &config, OffloadMode mode,
       const CostModel &cost = {});

  const Partition &partition() const { return partition_; }
  size_t chainCount() const { return chains_.size(); }
  // The kernel of chain |i| (< chainCount()), as compiled.
  const NpuKernel &kernel(size_t i) const { return *chains_[i].kernel; }

  // The lowering override (structured::lowering::OpOverride): lowers the
  // last op of each chain to the chain's external op, with the layout
  // changes around it, and skips the chain's other ops. The graph must be
  // the one planned.
  absl::StatusOr<bool> lower(structured::lowering::LoweringContext &ctx,
                             const graph::Op &op);

private:
  struct Chain {
    std::vector<const graph::Op *> ops;
    std::vector<const graph::Value *> inputs; // Activations from outside.
    std::shared_ptr<const NpuKernel> kernel;
  };

  NpuOffload(const graph::Graph &graph, const NpuConfig &config)
      : graph_(graph), config_(config) {}
  // Compiles |ops| as one chain (FAILED_PRECONDITION when they do not form
  // one, or its intermediates would need memory outside SRAM).
  absl::StatusOr<Chain> compileChain(std::vector<const graph::Op *> ops) const;
  absl::StatusOr<unsigned> hwcTensor(structured::lowering::LoweringContext &ctx,
                                     const graph::Value *v);

  const graph::Graph &graph_;
  NpuConfig config_;
  Partition partition_;
  std::vector<Chain> chains_;
  std::map<const graph::Op *, size_t> chainOf_;
  // Values held in HWC order by a tensor of their own.
  std::map<const graph::Value *, unsigned> hwc_;
};

// Whether a value of |type| is stored differently as HWC than as NCHW.
bool needsTranspose(const graph::TensorType &type);

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_OFFLOAD_H_
