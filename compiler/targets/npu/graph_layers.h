// From graph ops to NPU layers: the canonical int8 ops the fuse-qdq pass
// leaves (QConv, QMatMul, QAdd, QAveragePool, QRescale, and MaxPool on i8
// values) become NpuLayers, and everything else gets the reason it stays on
// the CPU. This is the one place that decides whether an op can go to the
// NPU: the partitioner asks it, --dump-partition prints its reasons.
//
// Layout: the graph keeps activations NCHW; layers are HWC (batch 1). A 4-D
// operand [1, C, H, W] becomes {H, W, C}; a MatMul's [M, K] input becomes
// {M, 1, K}; elementwise ops on other ranks see their elements as one row of
// channels. Weights are reordered here (OIHW -> OHWI, [K, N] -> [N, K]).
#ifndef OSPREY_COMPILER_TARGETS_NPU_GRAPH_LAYERS_H_
#define OSPREY_COMPILER_TARGETS_NPU_GRAPH_LAYERS_H_

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "compiler/targets/npu/npu_layer.h"

namespace osprey::compiler::npu {

// The layer |op| computes, with operands left as bindings 0 (input), 1
// (second input) and 2 (output) for the caller to place. UNIMPLEMENTED with
// the reason (no node prefix: "grouped convolution (group 2 of 8
// channels)", "kernel 17x1 exceeds 16", "the NPU has no elementwise
// multiply") when npu-v1 cannot run it; the reasons are meant for users.
absl::StatusOr<NpuLayer> layerFromOp(const graph::Op &op);

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_GRAPH_LAYERS_H_
