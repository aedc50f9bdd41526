// Target-neutral description of one int8 layer the NPU can run, and of a
// chain of them compiled into one command stream.
//
// Activations are dense HWC (batch 1). Weights are OHWI [oc][kh][kw][ic]
// (Conv), [kh][kw][c] (DepthwiseConv) or [n][k] (MatMul); each output
// channel has a bias and a fixed-point requantization (docs/npu.md, section
// 1). A MatMul's input is [m][k] (shape m x 1 x k) and its output [m][n].
#ifndef OSPREY_COMPILER_TARGETS_NPU_NPU_LAYER_H_
#define OSPREY_COMPILER_TARGETS_NPU_NPU_LAYER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace osprey::compiler::npu {

enum class LayerKind : uint8_t {
  Conv,          // CONV (+ requantize; ReLU through the clamps).
  DepthwiseConv, // DEPTH_CONV, channel multiplier 1.
  MatMul,        // MAT_MUL (fully connected).
  MaxPool,       // POOL.
  AvgPool,       // POOL, padding excluded from the divisor.
  Add,           // E_ADD: two inputs, each with its own rescale.
  Relu,          // ACT_RELU.
  LeakyRelu,     // ACT_LRELU.
  Min,           // C_MIN with a second tensor or a scalar.
  Max,           // C_MAX with a second tensor or a scalar.
};
const char *layerKindName(LayerKind kind);

struct Shape {
  int64_t h = 1, w = 1, c = 1;
  int64_t elements() const { return h * w * c; }
  bool operator==(const Shape &o) const {
    return h == o.h && w == o.w && c == o.c;
  }
};

// Where a layer reads or writes an activation.
struct Operand {
  enum class Kind : uint8_t {
    // System memory: |offset| bytes into binding |binding| (dense HWC).
    Binding,
    // An intermediate tensor of the chain, |tensor| naming it (the producer's
    // output and every consumer's input use the same id). The emitter keeps
    // it in SRAM when it fits and spills it to the scratch binding otherwise.
    Resident,
  };
  Kind kind = Kind::Binding;
  uint32_t binding = 0;
  uint64_t offset = 0;
  uint32_t tensor = 0;

  static Operand memory(uint32_t binding, uint64_t offset = 0) {
    Operand o;
    o.binding = binding;
    o.offset = offset;
    return o;
  }
  static Operand resident(uint32_t tensor) {
    Operand o;
    o.kind = Kind::Resident;
    o.tensor = tensor;
    return o;
  }
};

// Per-tensor requantization (docs/npu.md, Requantize): identity by default.
struct Rescale {
  int32_t multiplier = 1 << 30;
  int32_t shift = 1;
};

struct NpuLayer {
  std::string name;
  LayerKind kind = LayerKind::Conv;
  Shape input, output;

  // Window geometry (Conv, DepthwiseConv, pools), padding as ONNX gives it.
  int32_t kernelH = 1, kernelW = 1;
  int32_t strideH = 1, strideW = 1;
  int32_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;

  // Quantization. Pools use no zero points (same quantization in and out).
  int32_t inputZp = 0, input2Zp = 0, weightZp = 0, outputZp = 0;
  int32_t actMin = -128, actMax = 127;
  // Conv/MatMul/DepthwiseConv: also clamp at outputZp (CONV_RELU).
  bool relu = false;

  // Conv, DepthwiseConv, MatMul.
  std::vector<int8_t> weights;
  std::vector<int32_t> bias, multiplier, shift; // One per output channel.

  // Elementwise: Relu/LeakyRelu/Add use |out|; LeakyRelu's negative side
  // |alpha|; Add rescales each input by |inScale| / |in2Scale| after a left
  // shift.
  Rescale out, alpha, inScale, in2Scale;
  int32_t addLeftShift = 20;
  // Min/Max: with a second tensor (input2) unless |useScalar|.
  bool useScalar = false;
  int32_t scalar = 0;

  Operand in, in2, dst;

  bool hasWeights() const {
    return kind == LayerKind::Conv || kind == LayerKind::DepthwiseConv ||
           kind == LayerKind::MatMul;
  }
  bool hasWindow() const {
    return kind == LayerKind::Conv || kind == LayerKind::DepthwiseConv ||
           kind == LayerKind::MaxPool || kind == LayerKind::AvgPool;
  }
  bool isElementwise() const {
    return !hasWindow() && kind != LayerKind::MatMul;
  }
  bool hasSecondInput() const {
    return kind == LayerKind::Add ||
           ((kind == LayerKind::Min || kind == LayerKind::Max) && !useScalar);
  }
  // Multiply-accumulates of the layer (0 for pools and elementwise).
  int64_t macs() const;
};

// Checks |layer| against what npu-v1 can run: shapes consistent with the
// geometry (output extent = floor((in + pads - kernel) / stride) + 1),
// kernels 1..16, strides 1..8, paddings the device expresses (top/left
// below the kernel, bottom/right implicit: every window must start inside
// the input), register ranges, weight and parameter sizes. UNIMPLEMENTED
// (naming the layer) for what ONNX allows but npu-v1 cannot express,
// INVALID_ARGUMENT for an inconsistent description.
absl::Status verifyLayer(const NpuLayer &layer);

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_NPU_LAYER_H_
