// MLPerf Tiny layer sequences (DS-CNN, ResNet-8) as NPU chains with random
// weights and parameters, and their reference outputs, for tests and the
// benchmark. Shapes follow drivers/npu/bench/npu_layer_benchmark.cc.
#ifndef OSPREY_COMPILER_TARGETS_NPU_TESTING_MODEL_CHAINS_H_
#define OSPREY_COMPILER_TARGETS_NPU_TESTING_MODEL_CHAINS_H_

#include <cstdint>
#include <random>
#include <vector>

#include "compiler/targets/npu/stream_emitter.h"

namespace osprey::compiler::npu::testing {

// Bindings of a model chain.
constexpr uint32_t kChainInput = 0, kChainOutput2 = 1, kChainOutput = 2,
                   kChainWeights = 3, kChainScratch = 4;

struct ModelChain {
  NpuChain chain;
  std::vector<int8_t> input;
  std::vector<int8_t> expected; // Reference output of the last layer.
  // A second output (binding kChainOutput2), when the chain has one.
  std::vector<int8_t> expected2;
};

// DS-CNN: conv 10x4/2 1->64, then four depthwise 3x3 + pointwise 1x1
// blocks (25x5x64); with |head|, a 5x5/5 average pool and a 320->12 fully
// connected layer.
ModelChain dsCnnChain(std::mt19937 &rng, bool head);
// ResNet-8: conv 3x3 3->16 and three residual stages (16, 32, 64 channels;
// stride-2 convs with 1x1 shortcuts). |adds| adds the residual E_ADDs
// (with ReLU); without them the convs chain as in the layer benchmark and
// the last 3x3 conv (no consumer) is a second output.
// |head| appends an 8x8 average pool and a 64->10 fully connected layer.
ModelChain resNet8Chain(std::mt19937 &rng, bool adds, bool head);

} // namespace osprey::compiler::npu::testing

#endif // OSPREY_COMPILER_TARGETS_NPU_TESTING_MODEL_CHAINS_H_
