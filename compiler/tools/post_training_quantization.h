// Post-training quantization of a float graph (osprey-compile --quantize):
// activation ranges from calibration become int8 parameters, and
// QuantizeLinear/DequantizeLinear pairs go into the graph in the QDQ form the
// fuse-qdq pass turns into the canonical integer ops (docs/quantization.md).
//
// Placement (the rules scripts/models/make_qdq_models.py follows):
// - every activation (graph input or float op result) read by an op that is
//   not skipped gets Q -> DQ, and its readers read the DQ; except the result
//   of a Conv/MatMul/Gemm read only by a Relu/Clip, or of an Add/Mul read only
//   by a Relu (the activation's result is quantized instead, and fuse-qdq
//   fuses it);
// - MaxPool, Reshape, Flatten, Transpose, Squeeze and Unsqueeze keep their
//   input's parameters (the integer values pass through them unchanged);
// - a graph output gets Q -> DQ when an op fuse-qdq makes integer produces
//   it; the module's outputs stay float;
// - Conv, Gemm and MatMul with constant weights and a quantized input and
//   result get int8 weights, symmetric per output channel (zero point 0,
//   scale max|w| / 127), behind a DequantizeLinear, and an int32 bias in the
//   scale s_x * s_w[c];
// - a skipped node reads the float values and keeps float weights; its
//   result is quantized for the readers that are not skipped.
// Activations are int8, asymmetric per tensor: with lo = min(min, 0) and
// hi = max(max, 0), scale = (hi - lo) / 255 (1 when hi = lo) and zero point
// round(-128 - lo / scale).
#ifndef OSPREY_COMPILER_TOOLS_POST_TRAINING_QUANTIZATION_H_
#define OSPREY_COMPILER_TOOLS_POST_TRAINING_QUANTIZATION_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"

namespace osprey::compiler::ptq {

// The smallest and largest value an activation took during calibration.
struct Range {
  double lo = 0;
  double hi = 0;
};

// int8 parameters of an activation.
struct ActivationParams {
  float scale = 1;
  int64_t zeroPoint = 0;
};
ActivationParams activationParams(Range range);

// A quantized activation as the report lists it.
struct QuantizedTensor {
  std::string name;
  Range range;
  ActivationParams params;
};

// INVALID_ARGUMENT when |g| is already quantized (it holds a
// QuantizeLinear, DequantizeLinear or an operator form such as QLinearConv),
// naming the node.
absl::Status checkFloatModel(const graph::Graph &g);

// INVALID_ARGUMENT naming the first entry of |skip| that is no node of |g|.
absl::Status checkSkipNodes(const graph::Graph &g,
                            const std::set<std::string> &skip);

// The activations calibration observes: the f32 graph inputs and every f32
// result of a non-constant op, in graph order, without duplicates.
std::vector<graph::Value *> observedValues(const graph::Graph &g);

// Inserts the Q/DQ pairs and quantized weights into |g| by the rules above.
// |ranges| holds the range of each observed value by name. Returns the
// quantized activations in graph order.
absl::StatusOr<std::vector<QuantizedTensor>>
insertQdq(graph::Graph &g, const std::map<std::string, Range> &ranges,
          const std::set<std::string> &skip);

// A histogram of values over a fixed interval, for percentile ranges.
class Histogram {
public:
  static constexpr int kBins = 2048;
  Histogram() = default;
  explicit Histogram(Range range);
  void add(const float *values, size_t count);
  // The range holding |percentile| % of the values: its lower end is the
  // (100 - percentile) % point, its upper end the percentile % point, each
  // the edge of the bin where the count crosses.
  Range percentileRange(double percentile) const;

private:
  Range range_;
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
};

} // namespace osprey::compiler::ptq

#endif // OSPREY_COMPILER_TOOLS_POST_TRAINING_QUANTIZATION_H_
