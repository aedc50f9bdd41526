// Test support: runs compiled npu-v1 streams on the simulator and computes
// the same layers with drivers/npu/reference, for bit-exact comparisons.
#ifndef OSPREY_COMPILER_TARGETS_NPU_TESTING_RUN_STREAM_H_
#define OSPREY_COMPILER_TARGETS_NPU_TESTING_RUN_STREAM_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/npu/npu_layer.h"
#include "compiler/targets/npu/stream_emitter.h"
#include "drivers/npu/sim/simulator.h"

namespace osprey::compiler::npu::testing {

struct RunResult {
  absl::Status status;
  drivers::npu::sim::Counters counters;
};

// Verifies |stream| (sim::VerifyStream) and runs it on a fresh simulator of
// |config| whose stream SRAM is |sramBytes| (0: the configuration's). Binding
// i is bindings[i] (the weight binding must hold stream.weights; the scratch
// binding is sized by the caller); windows are read-only unless the stream
// writes the binding.
RunResult runStream(const CompiledStream &stream, const NpuConfig &config,
                    std::vector<std::vector<uint8_t>> &bindings,
                    uint64_t sramBytes = 0);

// |layer| computed by drivers/npu/reference on |input| (and |input2|).
std::vector<int8_t> referenceLayer(const NpuLayer &layer,
                                   const std::vector<int8_t> &input,
                                   const std::vector<int8_t> &input2 = {});

// Geometry of a random layer; makeLayer fills weights, zero points,
// per-channel parameters and clamps with random values that keep outputs
// mostly inside the int8 range.
struct LayerShape {
  LayerKind kind = LayerKind::Conv;
  int64_t h = 1, w = 1, ic = 1, oc = 1;
  int32_t kh = 1, kw = 1, sh = 1, sw = 1;
  int32_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  bool relu = false;
};
NpuLayer makeLayer(const LayerShape &shape, std::mt19937 &rng);

// Random int8 data with runs of -128, 127 and 0.
std::vector<int8_t> randomTensor(int64_t n, std::mt19937 &rng);

} // namespace osprey::compiler::npu::testing

#endif // OSPREY_COMPILER_TARGETS_NPU_TESTING_RUN_STREAM_H_
