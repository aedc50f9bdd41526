// Offloading chains to the NPU, checked on the program the compiler builds:
// where chains are cut, which layout changes are inserted, how the packed
// weights are bound, and that the npu target builds every chain's region
// into a blob the driver accepts. (Runs of whole models on cpu + npu, bit
// for bit against the CPU, are in compiler/targets/npu/test/offload.test
// and tests/e2e/quantized.)
#include "compiler/targets/npu/offload.h"

#include <string>
#include <vector>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/ir_text.h"
#include "compiler/structured/fusion.h"
#include "compiler/targets/npu/npu_target.h"
#include "drivers/npu/sim/command_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace osprey::compiler::npu {
namespace {

using ::testing::HasSubstr;

std::string values(size_t n, int v) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += (i ? ", " : "") + std::to_string((v * int(i + 3)) % 251 - 125);
  }
  return s;
}

std::string constant(const std::string &name, size_t n, const std::string &type,
                     int seed) {
  return "  %" + name + " = Constant() {value = dense<[" + values(n, seed) +
         "]>} : tensor<" + type + ">\n";
}

std::string epilogue(const std::string &p, int n) {
  std::string ones, mult, shift;
  for (int i = 0; i < n; ++i) {
    ones += (i ? ", " : "") + std::to_string(i * 7 - 20);
    mult += (i ? ", " : "") + std::to_string(1 << 30);
    shift += (i ? ", " : "") + std::string("-7");
  }
  std::string t = std::to_string(n) + "xi32";
  return "  %" + p + "b = Constant() {value = dense<[" + ones + "]>} : tensor<" + t + ">\n" +
         "  %" + p + "m = Constant() {value = dense<[" + mult + "]>} : tensor<" + t + ">\n" +
         "  %" + p + "s = Constant() {value = dense<[" + shift + "]>} : tensor<" + t + ">\n";
}

// conv1 feeds conv2 and the residual add (a branch inside one chain), a
// dequantize/quantize pair runs on the CPU between the add and the pool,
// and fc reads the pool through a reshape.
std::string model() {
  return "graph @m(%x: tensor<1x4x16x16xi8>) {\n" +
         constant("w1", 16 * 4 * 9, "16x4x3x3xi8", 3) + epilogue("c1", 16) +
         constant("w2", 16 * 16, "16x16x1x1xi8", 5) + epilogue("c2", 16) +
         constant("wf", 1024 * 10, "1024x10xi8", 7) + epilogue("f", 10) +
         "  %shape = Constant() {value = dense<[1, 1024]>} : tensor<2xi64>\n"
         "  %sc = Constant() {value = dense<[0.25]>} : tensor<f32>\n"
         "  %a = QConv(%x, %w1, %c1b, %c1m, %c1s) {pads = [1, 1, 1, 1], y_zero_point = 0} : "
         "tensor<1x16x16x16xi8> loc(\"conv1\")\n"
         "  %b = QConv(%a, %w2, %c2b, %c2m, %c2s) {y_zero_point = 0} : tensor<1x16x16x16xi8> "
         "loc(\"conv2\")\n"
         "  %c = QAdd(%b, %a) {a_multiplier = 1073741824, a_shift = 0, b_multiplier = "
         "1073741824, b_shift = 0, multiplier = 1073741824, shift = -19, y_zero_point = 0} : "
         "tensor<1x16x16x16xi8> loc(\"add\")\n"
         "  %c1 = DequantizeLinear(%c, %sc) : tensor<1x16x16x16xf32> loc(\"dq\")\n"
         "  %d = QuantizeLinear(%c1, %sc) : tensor<1x16x16x16xi8> loc(\"q\")\n"
         "  %e = MaxPool(%d) {kernel_shape = [2, 2], strides = [2, 2]} : tensor<1x16x8x8xi8> "
         "loc(\"pool\")\n"
         "  %f = Reshape(%e, %shape) : tensor<1x1024xi8> loc(\"flatten\")\n"
         "  %g = QMatMul(%f, %wf, %fb, %fm, %fs) {y_zero_point = 0} : tensor<1x10xi8> "
         "loc(\"fc\")\n"
         "  return %g\n}\n";
}

class OffloadTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto graph = graph::parseGraph(model());
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = std::move(*graph);
    auto config = parseNpuConfig("npu-v1:pes=64,sram=256KiB");
    ASSERT_TRUE(config.ok());
    config_ = *config;
    auto offload = NpuOffload::plan(*graph_, config_, OffloadMode::All);
    ASSERT_TRUE(offload.ok()) << offload.status();
    offload_ = std::move(*offload);
    auto program = structured::lowering::lowerToStructured(
        *graph_, [&](structured::lowering::LoweringContext &ctx,
                     const graph::Op &op) { return offload_->lower(ctx, op); });
    ASSERT_TRUE(program.ok()) << program.status();
    program_ = std::move(*program);
  }

  int countOps(const std::string &fragment) const {
    int n = 0;
    for (const structured::StructuredOp &op : program_.ops) {
      n += op.nodeName.find(fragment) != std::string::npos;
    }
    return n;
  }

  std::unique_ptr<graph::Graph> graph_;
  NpuConfig config_;
  std::unique_ptr<NpuOffload> offload_;
  structured::StructuredProgram program_;
};

TEST_F(OffloadTest, ChainsEndWhereAValueLeavesThem) {
  // conv1 + conv2 + add | pool | fc: conv1's value is read twice, both
  // times inside the chain; dq and q run on the CPU, the reshape is a CPU
  // view.
  const Partition &p = offload_->partition();
  ASSERT_EQ(offload_->chainCount(), 3u) << formatPartition(p);
  ASSERT_EQ(p.chains.size(), 3u);
  EXPECT_EQ(p.chains[0].size(), 3u);
  EXPECT_EQ(p.chains[1].size(), 1u);
  EXPECT_THAT(formatPartition(p), HasSubstr("3 NPU chains")) << formatPartition(p);
}

TEST_F(OffloadTest, ABranchStaysResidentInItsChain) {
  for (const structured::StructuredOp &op : program_.ops) {
    if (!op.external) {
      continue;
    }
    const auto &kernel = static_cast<const NpuKernel &>(*op.external);
    if (kernel.chain().layers.size() != 3) {
      continue;
    }
    // One activation input (x), read by conv1; the add reads conv2's and
    // conv1's tensors, and only the add writes memory.
    EXPECT_EQ(kernel.inputCount(), 1u);
    const NpuLayer &add = kernel.chain().layers[2];
    ASSERT_EQ(add.kind, LayerKind::Add);
    EXPECT_EQ(add.in.kind, Operand::Kind::Resident);
    EXPECT_EQ(add.in.tensor, 1u);
    EXPECT_EQ(add.in2.kind, Operand::Kind::Resident);
    EXPECT_EQ(add.in2.tensor, 0u);
    EXPECT_EQ(add.dst.kind, Operand::Kind::Binding);
    EXPECT_EQ(kernel.trial().scratchBytes, 0u);
    EXPECT_GE(kernel.trial().residentBytes, 2u * 16 * 16 * 16);
    return;
  }
  ADD_FAILURE() << "no chain of conv1, conv2 and add";
}

// A residual block whose first conv is also read by the CPU (a second
// output), at |size| x |size| pixels of 16 channels.
std::string branchModel(int size) {
  const std::string t = "1x16x" + std::to_string(size) + "x" + std::to_string(size);
  return "graph @m(%x: tensor<" + t + "xi8>) {\n" +
         constant("w1", 16 * 16 * 9, "16x16x3x3xi8", 3) + epilogue("c1", 16) +
         constant("w2", 16 * 16 * 9, "16x16x3x3xi8", 5) + epilogue("c2", 16) +
         "  %sc = Constant() {value = dense<[0.25]>} : tensor<f32>\n"
         "  %a = QConv(%x, %w1, %c1b, %c1m, %c1s) {pads = [1, 1, 1, 1], y_zero_point = 0} : "
         "tensor<" + t + "xi8> loc(\"conv1\")\n"
         "  %b = QConv(%a, %w2, %c2b, %c2m, %c2s) {pads = [1, 1, 1, 1], y_zero_point = 0} : "
         "tensor<" + t + "xi8> loc(\"conv2\")\n"
         "  %c = QAdd(%b, %a) {a_multiplier = 1073741824, a_shift = 0, b_multiplier = "
         "1073741824, b_shift = 0, multiplier = 1073741824, shift = -19, y_zero_point = 0} : "
         "tensor<" + t + "xi8> loc(\"add\")\n"
         "  %d = DequantizeLinear(%a, %sc) : tensor<" + t + "xf32> loc(\"dq\")\n"
         "  return %c, %d\n}\n";
}

absl::StatusOr<std::unique_ptr<NpuOffload>> planText(const std::string &text,
                                                     std::unique_ptr<graph::Graph> *graph) {
  auto parsed = graph::parseGraph(text);
  if (!parsed.ok()) {
    return parsed.status();
  }
  *graph = std::move(*parsed);
  auto config = parseNpuConfig("npu-v1:pes=64,sram=256KiB");
  if (!config.ok()) {
    return config.status();
  }
  return NpuOffload::plan(**graph, *config, OffloadMode::All);
}

TEST(OffloadChainsTest, AValueTheCpuReadsEndsItsChain) {
  std::unique_ptr<graph::Graph> graph;
  auto offload = planText(branchModel(8), &graph);
  ASSERT_TRUE(offload.ok()) << offload.status();
  // conv1 | conv2 + add: dq reads conv1's value.
  const Partition &p = (*offload)->partition();
  ASSERT_EQ(p.chains.size(), 2u) << formatPartition(p);
  EXPECT_EQ(p.chains[0].size(), 1u);
  EXPECT_EQ(p.chains[1].size(), 2u);
}

TEST(OffloadChainsTest, ABlockTooLargeToStayInSramBecomesShorterChains) {
  // Without the CPU reader the block is one chain at 8x8. At 96x96 its
  // tensors (144 KiB each) cannot stay resident beside the working tiles
  // (the stream SRAM is 192 KiB), so every layer is a chain of its own,
  // still on the NPU.
  for (int size : {8, 96}) {
    std::string text = branchModel(size);
    text.erase(text.find("  %d = "), text.find("  return") - text.find("  %d = "));
    text.replace(text.find("return %c, %d"), 13, "return %c");
    std::unique_ptr<graph::Graph> graph;
    auto offload = planText(text, &graph);
    ASSERT_TRUE(offload.ok()) << offload.status();
    const Partition &p = (*offload)->partition();
    EXPECT_EQ(p.chains.size(), size == 8 ? 1u : 3u) << formatPartition(p);
    EXPECT_EQ(p.npuMacs, p.totalMacs);
    for (const OpPlacement &o : p.ops) {
      if (o.op->kind() != "DequantizeLinear") {
        EXPECT_TRUE(o.onNpu) << o.op->nodeName() << ": " << o.reason;
      }
    }
  }
}

TEST_F(OffloadTest, LayoutChangesOnlyWhereTheCpuReadsOrWrites) {
  int external = 0;
  for (const structured::StructuredOp &op : program_.ops) {
    if (op.external) {
      ++external;
      EXPECT_EQ(op.external->format(), "npu-v1");
      EXPECT_EQ(op.classify(), structured::OpClass::External);
    }
  }
  EXPECT_EQ(external, 3);
  // To HWC: the input and q's result; from HWC: the add's result (for dq)
  // and the pool's (for the reshape). conv1's value goes
  // from chain to chain in HWC, and fc reads and writes rows.
  EXPECT_EQ(countOps("to HWC"), 2);
  EXPECT_EQ(countOps("'x' to HWC"), 1);
  EXPECT_EQ(countOps("'d' to HWC"), 1);
  EXPECT_EQ(countOps("from HWC"), 2);
  EXPECT_EQ(countOps("'c' from HWC"), 1);
  EXPECT_EQ(countOps("'e' from HWC"), 1);
  EXPECT_EQ(countOps("'a' from HWC"), 0);
}

TEST_F(OffloadTest, WeightsArePackedConstants) {
  for (const structured::StructuredOp &op : program_.ops) {
    if (!op.external) {
      continue;
    }
    const auto &kernel = static_cast<const NpuKernel &>(*op.external);
    const bool pool = kernel.chain().layers[0].kind == LayerKind::MaxPool;
    ASSERT_EQ(op.inputs.size(), kernel.inputCount() + (pool ? 0 : 1)) << op.nodeName;
    if (pool) {
      EXPECT_TRUE(kernel.trial().weights.empty());
      continue;
    }
    const structured::TensorInfo &w = program_.tensors[op.inputs.back().tensor];
    ASSERT_TRUE(w.constant.has_value());
    llvm::ArrayRef<uint8_t> bytes = w.constant->bytes();
    EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), kernel.trial().weights);
  }
}

TEST_F(OffloadTest, TheNpuTargetBuildsEveryChainsRegion) {
  ASSERT_TRUE(structured::fuseAndTile(program_).ok());
  for (const structured::FusionGroup &g : program_.groups) {
    if (program_.ops[g.root].external) {
      EXPECT_EQ(g.ops.size(), 1u) << "nothing fuses into an external op";
    }
  }
  auto d = dispatch::formDispatchRegions(std::move(program_));
  ASSERT_TRUE(d.ok()) << d.status();
  NpuTarget target(config_);
  ASSERT_TRUE(dispatch::planMemory(*d, targets::planOptionsFor(target)).ok());
  std::vector<unsigned> npuRegions, cpuRegions;
  for (unsigned r = 0; r < d->regions.size(); ++r) {
    const dispatch::DispatchRegion &region = d->regions[r];
    if (!d->program.ops[region.ops[0]].external) {
      cpuRegions.push_back(r);
      continue;
    }
    npuRegions.push_back(r);
    // Every constant of an NPU region is bound, however small.
    for (unsigned c : region.constants) {
      bool bound = false;
      for (const dispatch::Binding &b : region.bindings) {
        bound |= b.tensor == c;
      }
      EXPECT_TRUE(bound) << region.name;
    }
  }
  ASSERT_EQ(npuRegions.size(), 3u);
  auto exe = target.buildExecutable(targets::regionSubset(*d, npuRegions), {"m"});
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ(exe->format, "npu-v1");
  drivers::npu::sim::BlobView view;
  ASSERT_TRUE(drivers::npu::sim::BlobView::Parse(exe->data, &view).ok());
  ASSERT_EQ(view.export_count(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(std::string(view.export_view(i).name), d->regions[npuRegions[i]].name);
    EXPECT_LE(view.export_view(i).binding_count, d->regions[npuRegions[i]].bindings.size());
  }
  // A CPU region is not the npu target's to build.
  auto wrong = target.buildExecutable(targets::regionSubset(*d, {cpuRegions[0]}), {"m"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(), HasSubstr("is not an npu-v1 chain"));
}

TEST(NeedsTransposeTest, OnlyWhenTheLayoutsDiffer) {
  using graph::ElementType;
  using graph::TensorType;
  EXPECT_TRUE(needsTranspose(TensorType::ranked(ElementType::I8, {1, 4, 2, 2})));
  EXPECT_FALSE(needsTranspose(TensorType::ranked(ElementType::I8, {1, 1, 8, 8})));
  EXPECT_FALSE(needsTranspose(TensorType::ranked(ElementType::I8, {1, 64, 1, 1})));
  EXPECT_FALSE(needsTranspose(TensorType::ranked(ElementType::I8, {2, 4, 2, 2})));
  EXPECT_FALSE(needsTranspose(TensorType::ranked(ElementType::I8, {1, 64})));
}

} // namespace
} // namespace osprey::compiler::npu
