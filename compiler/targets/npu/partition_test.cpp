#include "compiler/targets/npu/partition.h"

#include <string>
#include <vector>

#include "compiler/graph/ir_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace osprey::compiler::npu {
namespace {

using ::testing::HasSubstr;

std::string values(size_t n, int v) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += (i ? ", " : "") + std::to_string(v);
  }
  return s;
}

// An int8 constant, and the bias/multiplier/shift of |n| channels.
std::string weights(const char *name, size_t n, const char *shape) {
  return std::string("  %") + name + " = Constant() {value = dense<[" +
         values(n, 3) + "]>} : tensor<" + shape + "xi8>\n";
}
std::string epilogue(const char *prefix, int n) {
  std::string p = prefix;
  return "  %" + p + "b = Constant() {value = dense<[" + values(n, 1) +
         "]>} : tensor<" + std::to_string(n) + "xi32>\n" + "  %" + p +
         "m = Constant() {value = dense<[" + values(n, 1 << 30) + "]>} : tensor<" +
         std::to_string(n) + "xi32>\n" + "  %" + p + "s = Constant() {value = dense<[" +
         values(n, -4) + "]>} : tensor<" + std::to_string(n) + "xi32>\n";
}

// conv1 -> conv2 -> mul (CPU) -> conv3 -> pool -> reshape -> fc -> dq ->
// softmax (CPU).
std::string model() {
  return "graph @m(%x: tensor<1x4x16x16xi8>) {\n" + weights("w1", 16 * 4 * 9, "16x4x3x3") +
         epilogue("c1", 16) + weights("w2", 16 * 16, "16x16x1x1") + epilogue("c2", 16) +
         weights("w3", 16 * 16 * 9, "16x16x3x3") + epilogue("c3", 16) +
         weights("wf", 16 * 64 * 10, "1024x10") + epilogue("f", 10) +
         "  %shape = Constant() {value = dense<[1, 1024]>} : tensor<2xi64>\n"
         "  %scale = Constant() {value = dense<[0.5]>} : tensor<f32>\n"
         "  %a = QConv(%x, %w1, %c1b, %c1m, %c1s) {pads = [1, 1, 1, 1], y_zero_point = 0} : "
         "tensor<1x16x16x16xi8> loc(\"conv1\")\n"
         "  %b = QConv(%a, %w2, %c2b, %c2m, %c2s) {y_zero_point = 0} : tensor<1x16x16x16xi8> "
         "loc(\"conv2\")\n"
         "  %c = QMul(%b, %b) {multiplier = 1073741824, shift = -6, y_zero_point = 0} : "
         "tensor<1x16x16x16xi8> loc(\"square\")\n"
         "  %d = QConv(%c, %w3, %c3b, %c3m, %c3s) {pads = [1, 1, 1, 1], y_zero_point = 0} : "
         "tensor<1x16x16x16xi8> loc(\"conv3\")\n"
         "  %e = MaxPool(%d) {kernel_shape = [2, 2], strides = [2, 2]} : tensor<1x16x8x8xi8> "
         "loc(\"pool\")\n"
         "  %f = Reshape(%e, %shape) : tensor<1x1024xi8> loc(\"flatten\")\n"
         "  %g = QMatMul(%f, %wf, %fb, %fm, %fs) {y_zero_point = 0} : tensor<1x10xi8> "
         "loc(\"fc\")\n"
         "  %h = DequantizeLinear(%g, %scale) : tensor<1x10xf32> loc(\"dq\")\n"
         "  %y = Softmax(%h) {axis = 1} : tensor<1x10xf32> loc(\"softmax\")\n"
         "  return %y\n}\n";
}

class PartitionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto graph = graph::parseGraph(model());
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = std::move(*graph);
    auto config = parseNpuConfig("npu-v1:pes=64,sram=256KiB");
    ASSERT_TRUE(config.ok());
    config_ = *config;
  }
  const OpPlacement &placement(const Partition &p, const char *node) {
    for (const OpPlacement &o : p.ops) {
      if (o.op->nodeName() == node) {
        return o;
      }
    }
    ADD_FAILURE() << "no node " << node;
    return p.ops.front();
  }
  std::unique_ptr<graph::Graph> graph_;
  NpuConfig config_;
};

TEST_F(PartitionTest, AutoOffloadsWhatTheNpuRunsInChains) {
  auto p = partitionGraph(*graph_, config_, OffloadMode::Auto);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char *node : {"conv1", "conv2", "conv3", "pool", "fc"}) {
    EXPECT_TRUE(placement(*p, node).onNpu) << node << ": " << placement(*p, node).reason;
  }
  EXPECT_THAT(placement(*p, "square").reason, HasSubstr("no elementwise multiply"));
  EXPECT_THAT(placement(*p, "softmax").reason, HasSubstr("the NPU has no Softmax"));
  EXPECT_THAT(placement(*p, "flatten").reason, HasSubstr("layout only"));
  // conv1+conv2 | conv3+pool | fc (after the reshape).
  ASSERT_EQ(p->chains.size(), 3u);
  EXPECT_EQ(p->chains[0].size(), 2u);
  EXPECT_EQ(p->chains[1].size(), 2u);
  EXPECT_EQ(placement(*p, "pool").chain, placement(*p, "conv3").chain);
  const int64_t macs = 16 * 16 * 16 * (4 * 9 + 16 + 16 * 9) + 1024 * 10;
  EXPECT_EQ(p->totalMacs, macs);
  EXPECT_EQ(p->npuMacs, macs);
  std::string text = formatPartition(*p);
  EXPECT_THAT(text, HasSubstr("3 NPU chains; " + std::to_string(macs) + " of " +
                              std::to_string(macs) + " MACs on the NPU (100.0 %)"));
  EXPECT_THAT(text, HasSubstr("cpu            square"));
}

TEST_F(PartitionTest, NoneKeepsEverythingOnTheCpu) {
  auto p = partitionGraph(*graph_, config_, OffloadMode::None);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->chains.empty());
  EXPECT_EQ(p->npuMacs, 0);
  EXPECT_EQ(placement(*p, "conv1").reason, "--offload=none");
}

TEST_F(PartitionTest, AllListsEveryNodeThatCannotGo) {
  auto p = partitionGraph(*graph_, config_, OffloadMode::All);
  ASSERT_TRUE(absl::IsUnimplemented(p.status())) << p.status();
  EXPECT_THAT(p.status().message(), HasSubstr("2 nodes cannot run on the NPU"));
  EXPECT_THAT(p.status().message(),
              HasSubstr("node 'square' (QMul): the NPU has no elementwise multiply"));
  EXPECT_THAT(p.status().message(), HasSubstr("node 'softmax' (Softmax)"));
}

TEST_F(PartitionTest, ALoneCheapOpStaysOnTheCpu) {
  auto graph = graph::parseGraph(
      "graph @m(%x: tensor<1x8xf32>) {\n"
      "  %s = Constant() {value = dense<[0.5]>} : tensor<f32>\n"
      "  %q = QuantizeLinear(%x, %s) : tensor<1x8xi8> loc(\"q\")\n"
      "  %r = QRescale(%q) {multiplier = 1073741824, shift = 0, to = \"i8\", "
      "x_zero_point = 0} : tensor<1x8xi8> loc(\"rescale\")\n"
      "  %y = DequantizeLinear(%r, %s) : tensor<1x8xf32> loc(\"dq\")\n"
      "  return %y\n}\n");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto p = partitionGraph(**graph, config_, OffloadMode::Auto);
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(placement(*p, "rescale").reason, HasSubstr("faster on the CPU"));
  EXPECT_TRUE(p->chains.empty());
  auto all = partitionGraph(**graph, config_, OffloadMode::All);
  ASSERT_TRUE(all.ok()) << "the boundary conversions stay on the CPU under all";
  EXPECT_TRUE(placement(*all, "rescale").onNpu);
}

TEST_F(PartitionTest, ARunFormsAChainWhenOnlyItsLastValueLeavesIt) {
  auto op = [&](const char *node) -> const graph::Op * {
    for (const auto &o : graph_->ops()) {
      if (o->nodeName() == node) {
        return o.get();
      }
    }
    ADD_FAILURE() << "no node " << node;
    return nullptr;
  };
  using Ops = std::vector<const graph::Op *>;
  EXPECT_TRUE(formsChain(*graph_, Ops{op("conv1")}));
  EXPECT_TRUE(formsChain(*graph_, Ops{op("conv1"), op("conv2")}));
  // conv2's value goes to square, outside the run.
  EXPECT_FALSE(formsChain(*graph_, Ops{op("conv1"), op("conv2"), op("conv3")}));
  // conv1's value goes to conv2, outside the run.
  EXPECT_FALSE(formsChain(*graph_, Ops{op("conv1"), op("conv3")}));
  EXPECT_TRUE(formsChain(*graph_, Ops{op("conv3"), op("pool")}));
  // pool's value goes to the reshape, a CPU view.
  EXPECT_FALSE(formsChain(*graph_, Ops{op("pool"), op("fc")}));
}

TEST(OffloadModeTest, Parses) {
  EXPECT_EQ(*parseOffloadMode("auto"), OffloadMode::Auto);
  EXPECT_EQ(*parseOffloadMode("all"), OffloadMode::All);
  EXPECT_THAT(parseOffloadMode("some").status().message(),
              HasSubstr("--offload=some is not auto, none or all"));
}

} // namespace
} // namespace osprey::compiler::npu
