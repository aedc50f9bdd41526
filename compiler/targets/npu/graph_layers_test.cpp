// The graph-to-layer conversion, checked end to end: each canonical int8 op
// is compiled for the CPU (llvm_cpu, the host) and, through layerFromOp, for
// the NPU (one-layer stream on the simulator), on random shapes and
// parameters with extreme values, and the two results must agree bit for
// bit. Ops npu-v1 cannot run must be refused with a reason.
#include "compiler/targets/npu/graph_layers.h"

#include <random>
#include <string>
#include <vector>

#include "compiler/graph/ir_text.h"
#include "compiler/targets/llvm_cpu/testing/compiled_graph.h"
#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/npu/stream_emitter.h"
#include "compiler/targets/npu/testing/run_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace osprey::compiler::npu {
namespace {

using llvm_cpu::testing::CompiledGraph;
using ::testing::HasSubstr;

class Rng {
public:
  explicit Rng(unsigned seed) : gen_(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
  }
  bool chance(int percent) { return uniform(0, 99) < percent; }
  int32_t zeroPoint() {
    int64_t pick = uniform(0, 5);
    return pick == 0 ? -128 : pick == 1 ? 127 : int32_t(uniform(-128, 127));
  }
  std::vector<int64_t> int8s(size_t n) {
    std::vector<int64_t> v(n);
    for (int64_t &x : v) {
      int64_t pick = uniform(0, 9);
      x = pick == 0 ? -128 : pick == 1 ? 127 : pick == 2 ? 0 : uniform(-128, 127);
    }
    return v;
  }
  // Multipliers below one, as real models use, with some extremes.
  std::pair<int64_t, int64_t> multiplier() {
    switch (uniform(0, 5)) {
    case 0: return {2147483647, uniform(-31, 0)};
    case 1: return {1 << 30, uniform(-8, 1)};
    default: return {uniform(1 << 30, 2147483647), uniform(-14, 0)};
    }
  }

private:
  std::mt19937 gen_;
};

std::string join(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s;
}

std::string dims(const std::vector<int64_t> &d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) {
    s += (i ? "x" : "") + std::to_string(d[i]);
  }
  return s;
}

std::string constant(const std::string &name, const std::vector<int64_t> &v,
                     const std::vector<int64_t> &shape, const char *type) {
  return "  %" + name + " = Constant() {value = dense<[" + join(v) +
         "]>} : tensor<" + dims(shape) + "x" + type + ">\n";
}

// NCHW (batch 1) -> HWC, or back with |back|; other ranks are already a
// row of channels.
std::vector<uint8_t> permuteHwc(const std::vector<uint8_t> &v,
                                const std::vector<int64_t> &shape,
                                bool back = false) {
  if (shape.size() != 4) {
    return v;
  }
  int64_t c = shape[1], hw = shape[2] * shape[3];
  std::vector<uint8_t> out(v.size());
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t i = 0; i < hw; ++i) {
      int64_t nchw = ch * hw + i, hwc = i * c + ch;
      out[back ? nchw : hwc] = v[back ? hwc : nchw];
    }
  }
  return out;
}

std::vector<uint8_t> bytes(const std::vector<int64_t> &v) {
  std::vector<uint8_t> b;
  for (int64_t x : v) {
    b.push_back(uint8_t(int8_t(x)));
  }
  return b;
}

// The one op of |text| that is not a Constant.
const graph::Op *theOp(const graph::Graph &g) {
  for (const auto &op : g.ops()) {
    if (op->kind() != "Constant") {
      return op.get();
    }
  }
  return nullptr;
}

// Compiles |text| (one quantized op on inputs %x [and %x2] of |shapes|) for
// both devices and compares the results; the result has |outShape|.
void checkBothDevices(const std::string &text,
                      const std::vector<std::vector<int64_t>> &inputs,
                      const std::vector<std::vector<int64_t>> &shapes,
                      const std::vector<int64_t> &outShape,
                      const char *config = "npu-v1:pes=64") {
  SCOPED_TRACE(text);
  CompiledGraph cpu;
  ASSERT_TRUE(cpu.compile(text, "host").ok());
  std::vector<std::vector<uint8_t>> cpuInputs;
  for (const auto &in : inputs) {
    cpuInputs.push_back(bytes(in));
  }
  std::vector<uint8_t> expected = cpu.runBytes(cpuInputs)[0];

  auto graph = graph::parseGraph(text);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto layer = layerFromOp(*theOp(**graph));
  ASSERT_TRUE(layer.ok()) << layer.status();
  auto npuConfig = parseNpuConfig(config);
  ASSERT_TRUE(npuConfig.ok());
  NpuChain chain;
  chain.layers = {*layer};
  chain.weightBinding = 3;
  chain.scratchBinding = 4;
  auto stream = emitChain(chain, *npuConfig);
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::vector<std::vector<uint8_t>> bindings(5);
  bindings[0] = permuteHwc(cpuInputs[0], shapes[0]);
  if (inputs.size() > 1) {
    bindings[1] = permuteHwc(cpuInputs[1], shapes[1]);
  }
  bindings[2].assign(expected.size(), 0xA5);
  bindings[3] = stream->weights;
  bindings[4].assign(stream->scratchBytes, 0);
  testing::RunResult run = testing::runStream(*stream, *npuConfig, bindings);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(permuteHwc(bindings[2], outShape, /*back=*/true), expected);
}

std::string requantAttrs(Rng &rng, const char *xzp = "x_zero_point") {
  int32_t zy = rng.zeroPoint();
  int64_t lo = -128, hi = 127;
  if (rng.chance(50)) {
    lo = std::max<int64_t>(-128, zy);
    hi = rng.uniform(lo, 127);
  }
  return "act_max = " + std::to_string(hi) + ", act_min = " +
         std::to_string(lo) + ", " + xzp + " = " +
         std::to_string(rng.zeroPoint()) +
         ", y_zero_point = " + std::to_string(zy);
}

void epilogue(Rng &rng, int64_t n, std::string &text) {
  std::vector<int64_t> bias, mult, shift;
  for (int64_t i = 0; i < n; ++i) {
    bias.push_back(rng.uniform(-30000, 30000));
    auto [m, s] = rng.multiplier();
    mult.push_back(m);
    shift.push_back(s);
  }
  text += constant("b", bias, {n}, "i32") + constant("m", mult, {n}, "i32") +
          constant("s", shift, {n}, "i32");
}

TEST(GraphLayersTest, ConvolutionsAgreeWithTheCpu) {
  Rng rng(5);
  for (int trial = 0; trial < 24; ++trial) {
    SCOPED_TRACE(trial);
    const bool depthwise = trial % 3 == 2;
    int64_t kh = rng.uniform(1, 5), kw = rng.uniform(1, 5);
    int64_t sh = rng.uniform(1, 3), sw = rng.uniform(1, 3);
    int64_t h = rng.uniform(kh, 14), w = rng.uniform(kw, 14);
    int64_t pt = rng.uniform(0, kh - 1), pl = rng.uniform(0, kw - 1);
    int64_t pb = rng.uniform(0, kh - 1), pr = rng.uniform(0, kw - 1);
    int64_t c = depthwise ? rng.uniform(1, 40) : rng.uniform(1, 20);
    int64_t m = depthwise ? c : rng.uniform(1, 40);
    int64_t oh = (h + pt + pb - kh) / sh + 1, ow = (w + pl + pr - kw) / sw + 1;
    std::vector<int64_t> x = rng.int8s(size_t(c * h * w));
    std::string text = "graph @g(%x: tensor<" + dims({1, c, h, w}) + "xi8>) {\n" +
                       constant("w", rng.int8s(size_t(m * (depthwise ? 1 : c) * kh * kw)),
                                {m, depthwise ? 1 : c, kh, kw}, "i8");
    epilogue(rng, m, text);
    text += "  %y = QConv(%x, %w, %b, %m, %s) {" + requantAttrs(rng) +
            ", group = " + std::to_string(depthwise ? c : 1) + ", pads = [" +
            join({pt, pl, pb, pr}) + "], strides = [" + join({sh, sw}) +
            "]} : tensor<" + dims({1, m, oh, ow}) +
            "xi8> loc(\"conv\")\n  return %y\n}\n";
    checkBothDevices(text, {x}, {{1, c, h, w}}, {1, m, oh, ow},
                     trial % 2 ? "npu-v1:pes=256" : "npu-v1:pes=64");
  }
}

TEST(GraphLayersTest, MatMulsAgreeWithTheCpu) {
  Rng rng(6);
  for (int trial = 0; trial < 10; ++trial) {
    SCOPED_TRACE(trial);
    int64_t m = rng.uniform(1, 9), k = rng.uniform(1, 300), n = rng.uniform(1, 70);
    std::string text = "graph @g(%x: tensor<" + dims({m, k}) + "xi8>) {\n" +
                       constant("w", rng.int8s(size_t(k * n)), {k, n}, "i8");
    epilogue(rng, n, text);
    text += "  %y = QMatMul(%x, %w, %b, %m, %s) {" +
            requantAttrs(rng, "a_zero_point") + "} : tensor<" + dims({m, n}) +
            "xi8> loc(\"fc\")\n  return %y\n}\n";
    checkBothDevices(text, {rng.int8s(size_t(m * k))}, {{m, k}}, {m, n});
  }
}

TEST(GraphLayersTest, AddsRescalesAndPoolsAgreeWithTheCpu) {
  Rng rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE(trial);
    int64_t c = rng.uniform(1, 33), h = rng.uniform(1, 9), w = rng.uniform(1, 9);
    std::vector<int64_t> shape = {1, c, h, w};
    std::string type = "tensor<" + dims(shape) + "xi8>";
    std::vector<int64_t> x = rng.int8s(size_t(c * h * w));
    // A residual add with the E_ADD parameters fuse-qdq derives.
    auto [am, as] = rng.multiplier();
    auto [bm, bs] = rng.multiplier();
    auto [om, os] = rng.multiplier();
    std::string add = "graph @g(%x: " + type + ", %x2: " + type + ") {\n" +
                      "  %y = QAdd(%x, %x2) {a_multiplier = " + std::to_string(am) +
                      ", a_shift = " + std::to_string(as) +
                      ", a_zero_point = " + std::to_string(rng.zeroPoint()) +
                      ", act_max = 127, act_min = -128, b_multiplier = " +
                      std::to_string(bm) + ", b_shift = " + std::to_string(bs) +
                      ", b_zero_point = " + std::to_string(rng.zeroPoint()) +
                      ", left_shift = 20, multiplier = " + std::to_string(om) +
                      ", shift = " + std::to_string(os) + ", y_zero_point = " +
                      std::to_string(rng.zeroPoint()) + "} : " + type +
                      " loc(\"add\")\n  return %y\n}\n";
    checkBothDevices(add, {x, rng.int8s(x.size())}, {shape, shape}, shape);

    auto [rm, rs] = rng.multiplier();
    std::string rescale = "graph @g(%x: " + type + ") {\n  %y = QRescale(%x) {" +
                          requantAttrs(rng) + ", multiplier = " + std::to_string(rm) +
                          ", shift = " + std::to_string(rs) + ", to = \"i8\"} : " + type +
                          " loc(\"rescale\")\n  return %y\n}\n";
    checkBothDevices(rescale, {x}, {shape}, shape);

    int64_t k = rng.uniform(1, std::min<int64_t>(3, std::min(h, w)));
    int64_t p = rng.uniform(0, k - 1);
    int64_t oh = (h + 2 * p - k) / 1 + 1, ow = (w + 2 * p - k) / 1 + 1;
    std::vector<int64_t> outShape = {1, c, oh, ow};
    std::string window = "kernel_shape = [" + join({k, k}) + "], pads = [" +
                         join({p, p, p, p}) + "], strides = [1, 1]";
    for (const char *pool : {"MaxPool", "QAveragePool"}) {
      std::string text = "graph @g(%x: " + type + ") {\n  %y = " + pool + "(%x) {" +
                         window + "} : tensor<" + dims(outShape) + "xi8> loc(\"pool\")\n"
                         "  return %y\n}\n";
      checkBothDevices(text, {x}, {shape}, outShape);
    }
  }
}

// Ops npu-v1 cannot run name the reason.
TEST(GraphLayersTest, RefusalsSayWhy) {
  auto reason = [](const std::string &text) -> std::string {
    auto graph = graph::parseGraph(text);
    EXPECT_TRUE(graph.ok()) << graph.status();
    if (!graph.ok()) {
      return "";
    }
    auto layer = layerFromOp(*theOp(**graph));
    EXPECT_TRUE(absl::IsUnimplemented(layer.status())) << layer.status();
    return std::string(layer.status().message());
  };
  Rng rng(8);
  std::string conv = "graph @g(%x: tensor<1x4x20x20xi8>) {\n" +
                     constant("w", rng.int8s(4 * 2 * 17), {4, 2, 17, 1}, "i8");
  epilogue(rng, 4, conv);
  EXPECT_THAT(reason(conv + "  %y = QConv(%x, %w, %b, %m, %s) {group = 2, "
                            "y_zero_point = 0} : tensor<1x4x4x20xi8>\n  return %y\n}\n"),
              HasSubstr("grouped convolution (group 2 of 4 input and 4 output"));
  std::string big = "graph @g(%x: tensor<1x2x20x20xi8>) {\n" +
                    constant("w", rng.int8s(4 * 2 * 17), {4, 2, 17, 1}, "i8");
  epilogue(rng, 4, big);
  EXPECT_THAT(reason(big + "  %y = QConv(%x, %w, %b, %m, %s) {y_zero_point = 0} : "
                           "tensor<1x4x4x20xi8>\n  return %y\n}\n"),
              HasSubstr("kernel 17x1"));
  EXPECT_THAT(reason("graph @g(%a: tensor<1x4xi8>, %b: tensor<1x4xi8>) {\n"
                     "  %y = QMul(%a, %b) {y_zero_point = 0} : tensor<1x4xi8>\n"
                     "  return %y\n}\n"),
              HasSubstr("no elementwise multiply"));
  EXPECT_THAT(reason("graph @g(%a: tensor<1x4xf32>) {\n  %y = Softmax(%a) : "
                     "tensor<1x4xf32>\n  return %y\n}\n"),
              HasSubstr("the NPU has no Softmax"));
  EXPECT_THAT(reason("graph @g(%a: tensor<2x4xi8>, %b: tensor<1x4xi8>) {\n"
                     "  %y = QAdd(%a, %b) {y_zero_point = 0} : tensor<2x4xi8>\n"
                     "  return %y\n}\n"),
              HasSubstr("broadcasting"));
  EXPECT_THAT(reason("graph @g(%x: tensor<2x3x8x8xi8>) {\n  %y = MaxPool(%x) "
                     "{kernel_shape = [2, 2], strides = [2, 2]} : tensor<2x3x4x4xi8>\n"
                     "  return %y\n}\n"),
              HasSubstr("batch 2"));
}

} // namespace
} // namespace osprey::compiler::npu
