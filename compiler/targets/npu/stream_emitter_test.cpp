#include "compiler/targets/npu/stream_emitter.h"

#include <random>
#include <string>

#include "compiler/targets/npu/testing/model_chains.h"
#include "compiler/targets/npu/testing/run_stream.h"
#include "drivers/npu/sim/command_stream.h"
#include "gtest/gtest.h"

namespace osprey::compiler::npu {
namespace {

using testing::LayerShape;
using testing::makeLayer;
using testing::randomTensor;
using testing::referenceLayer;
using testing::runStream;

// Bindings of the single-layer streams.
constexpr uint32_t kIn = 0, kIn2 = 1, kOut = 2, kWeights = 3, kScratch = 4;
constexpr uint64_t kInOffset = 48, kOutOffset = 32;

NpuConfig makeConfig(uint32_t pes, uint64_t weightKiB = 256) {
  NpuConfig c;
  c.peCount = pes;
  c.sramBytes = 256 * 1024;
  c.poolBytes = 64 * 1024;
  c.weightBytes = weightKiB * 1024;
  return c;
}

std::vector<uint8_t> bytes(const std::vector<int8_t> &v, uint64_t offset,
                           uint8_t fill) {
  std::vector<uint8_t> out(offset + v.size() + 16, fill);
  std::copy(v.begin(), v.end(),
            reinterpret_cast<int8_t *>(out.data()) + offset);
  return out;
}

// Compiles |layer| alone, runs it on the simulator and compares with the
// reference bit for bit; also checks that the emitter's cycle model agrees
// with the simulator's and that nothing outside the output was written.
void checkLayer(NpuLayer layer, const NpuConfig &config, uint64_t sramBytes,
                uint32_t seed, Tiling *outTiling = nullptr) {
  std::mt19937 rng(seed);
  SCOPED_TRACE(layer.name + " pes=" + std::to_string(config.peCount) +
               " sram=" + std::to_string(sramBytes) +
               " wmem=" + std::to_string(config.weightBytes));
  layer.in = Operand::memory(kIn, kInOffset);
  layer.in2 = Operand::memory(kIn2, 0);
  layer.dst = Operand::memory(kOut, kOutOffset);
  NpuChain chain;
  chain.layers = {layer};
  chain.weightBinding = kWeights;
  chain.scratchBinding = kScratch;
  EmitOptions options;
  options.sramBytes = sramBytes;
  auto stream = emitChain(chain, config, options);
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::vector<int8_t> input = randomTensor(layer.input.elements(), rng);
  std::vector<int8_t> input2 = randomTensor(layer.input.elements(), rng);
  std::vector<int8_t> expected = referenceLayer(layer, input, input2);
  std::vector<std::vector<uint8_t>> bindings(5);
  bindings[kIn] = bytes(input, kInOffset, 0);
  bindings[kIn2] = bytes(input2, 0, 0);
  bindings[kOut] =
      std::vector<uint8_t>(kOutOffset + expected.size() + 16, 0xA5);
  bindings[kWeights] = stream->weights;
  auto run = runStream(*stream, config, bindings, sramBytes);
  ASSERT_TRUE(run.status.ok()) << run.status;
  const int8_t *got =
      reinterpret_cast<const int8_t *>(bindings[kOut].data()) + kOutOffset;
  int64_t mismatches = 0, first = -1;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (got[i] != expected[i]) {
      if (first < 0) {
        first = static_cast<int64_t>(i);
      }
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0) << "first at " << first << ": got "
                           << int(got[first]) << ", expected "
                           << int(expected[first]);
  for (uint64_t i = 0; i < kOutOffset; ++i) {
    ASSERT_EQ(bindings[kOut][i], 0xA5) << "wrote before the output";
  }
  for (uint64_t i = kOutOffset + expected.size(); i < bindings[kOut].size();
       ++i) {
    ASSERT_EQ(bindings[kOut][i], 0xA5) << "wrote after the output";
  }
  EXPECT_EQ(stream->estimatedCycles, run.counters.total_cycles);
  EXPECT_EQ(run.counters.macs, static_cast<uint64_t>(layer.macs()));
  if (outTiling) {
    *outTiling = stream->layers[0].tiling;
  }
}

struct Case {
  const char *name;
  LayerShape shape;
  uint64_t smallSram; // A budget that forces tiling.
};

const Case kCases[] = {
    {"conv3x3 13->70 relu",
     {LayerKind::Conv, 20, 18, 13, 70, 3, 3, 1, 1, 1, 1, 1, 1, true},
     6 * 1024},
    {"conv3x3/2 3->16 same",
     {LayerKind::Conv, 33, 31, 3, 16, 3, 3, 2, 2, 0, 0, 1, 1},
     3 * 1024},
    {"conv5x5/3 16->24",
     {LayerKind::Conv, 40, 37, 16, 24, 5, 5, 3, 3, 2, 1, 2, 2},
     8 * 1024},
    {"conv1x1 70->13", {LayerKind::Conv, 17, 9, 70, 13, 1, 1, 1, 1}, 4 * 1024},
    {"conv10x4/2 1->64",
     {LayerKind::Conv, 49, 10, 1, 64, 10, 4, 2, 2, 4, 1, 5, 2, true},
     4 * 1024},
    {"conv big 64x64x32->48",
     {LayerKind::Conv, 64, 64, 32, 48, 3, 3, 1, 1, 1, 1, 1, 1, true},
     32 * 1024},
    {"conv deep 6x6x700->40",
     {LayerKind::Conv, 6, 6, 700, 40, 3, 3, 1, 1, 1, 1, 1, 1},
     16 * 1024},
    {"conv wide 3x2000x16->8",
     {LayerKind::Conv, 3, 2000, 16, 8, 3, 3, 1, 1, 1, 1, 1, 1},
     16 * 1024},
    {"dw3x3 70 relu",
     {LayerKind::DepthwiseConv, 30, 30, 70, 70, 3, 3, 1, 1, 1, 1, 1, 1, true},
     4 * 1024},
    {"dw3x3/2 300",
     {LayerKind::DepthwiseConv, 10, 11, 300, 300, 3, 3, 2, 2, 1, 1, 0, 1},
     4 * 1024},
    {"dw7x7/3 13",
     {LayerKind::DepthwiseConv, 29, 23, 13, 13, 7, 7, 3, 3, 3, 3, 3, 3},
     2 * 1024},
    {"matmul 1x1000->70", {LayerKind::MatMul, 1, 1, 1000, 70}, 4 * 1024},
    {"matmul 50x300->13", {LayerKind::MatMul, 50, 1, 300, 13}, 4 * 1024},
    {"maxpool 3x3/2",
     {LayerKind::MaxPool, 31, 29, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1},
     2 * 1024},
    {"avgpool 5x5 pad 2",
     {LayerKind::AvgPool, 24, 20, 70, 70, 5, 5, 1, 1, 2, 2, 2, 2},
     4 * 1024},
    {"avgpool 2x2/2", {LayerKind::AvgPool, 16, 16, 3, 3, 2, 2, 2, 2}, 1024},
    {"add 40x40x13", {LayerKind::Add, 40, 40, 13, 13}, 2 * 1024},
    {"relu", {LayerKind::Relu, 50, 50, 13, 13}, 2 * 1024},
    {"leaky relu", {LayerKind::LeakyRelu, 7, 9, 70, 70}, 1024},
    {"min", {LayerKind::Min, 20, 20, 20, 20}, 1024},
    {"max", {LayerKind::Max, 20, 20, 20, 20}, 1024},
};

class LayerSweep : public ::testing::TestWithParam<int> {};

TEST_P(LayerSweep, BitExactOnEveryConfiguration) {
  const Case &c = kCases[GetParam()];
  uint32_t seed = 100 + GetParam();
  for (uint32_t pes : {64u, 128u, 256u}) {
    for (uint64_t sram : {uint64_t{192 * 1024}, c.smallSram}) {
      std::mt19937 rng(seed++);
      NpuLayer layer = makeLayer(c.shape, rng);
      layer.name = c.name;
      checkLayer(layer, makeConfig(pes), sram, seed);
    }
  }
  // Weights streamed through a 16 KiB weight memory.
  std::mt19937 rng(seed++);
  NpuLayer layer = makeLayer(c.shape, rng);
  layer.name = c.name;
  checkLayer(layer, makeConfig(64, 16), c.smallSram, seed);
}

TEST_P(LayerSweep, InputParallelMappingAndSlowDma) {
  const Case &c = kCases[GetParam()];
  std::mt19937 rng(500 + GetParam());
  NpuLayer layer = makeLayer(c.shape, rng);
  layer.name = c.name;
  NpuConfig config = makeConfig(256);
  config.mapping = PeMapping::InputParallel;
  config.dmaBytesPerCycle = 2;
  config.dmaSetupCycles = 300;
  checkLayer(layer, config, c.smallSram, 600 + GetParam());
}

INSTANTIATE_TEST_SUITE_P(Layers, LayerSweep,
                         ::testing::Range(0, int(std::size(kCases))),
                         [](const ::testing::TestParamInfo<int> &info) {
                           std::string n = kCases[info.param].name;
                           for (char &ch : n) {
                             if (!std::isalnum(
                                     static_cast<unsigned char>(ch))) {
                               ch = '_';
                             }
                           }
                           return n;
                         });

TEST(StreamEmitterTest, TilesEveryDimensionThatExceedsSram) {
  Tiling t;
  std::mt19937 rng(7);
  // Height and channels: 128 KiB input, 16 KiB SRAM.
  NpuLayer big =
      makeLayer({LayerKind::Conv, 64, 64, 32, 48, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  checkLayer(big, makeConfig(64), 16 * 1024, 1, &t);
  EXPECT_GT(t.rowTiles, 1);
  EXPECT_GT(t.chanTiles * t.rowTiles, 4);
  // Input channels: the reduction does not fit the weight memory.
  NpuLayer deep =
      makeLayer({LayerKind::Conv, 6, 6, 700, 40, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  checkLayer(deep, makeConfig(64, 16), 16 * 1024, 2, &t);
  EXPECT_GT(t.icSplits, 1);
  NpuLayer fc = makeLayer({LayerKind::MatMul, 3, 1, 5000, 20}, rng);
  checkLayer(fc, makeConfig(128, 16), 4 * 1024, 3, &t);
  EXPECT_GT(t.icSplits, 1);
  // Width: one full-width row does not fit.
  NpuLayer wide =
      makeLayer({LayerKind::Conv, 3, 2000, 16, 8, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  checkLayer(wide, makeConfig(256), 16 * 1024, 4, &t);
  EXPECT_GT(t.colTiles, 1);
  NpuLayer widePool =
      makeLayer({LayerKind::MaxPool, 4, 3000, 40, 40, 3, 3, 1, 1}, rng);
  checkLayer(widePool, makeConfig(64), 8 * 1024, 5, &t);
  EXPECT_GT(t.colTiles, 1);
}

TEST(StreamEmitterTest, KernelSizesOneToSixteen) {
  std::mt19937 rng(8);
  for (int k = 1; k <= 16; ++k) {
    int stride = 1 + k % 3;
    int pad = k / 2;
    LayerShape conv{LayerKind::Conv, 20 + k, 18 + k, 5,   9,   k,  k,
                    stride,          stride, pad,    pad, pad, pad};
    NpuLayer l = makeLayer(conv, rng);
    l.name = "conv k" + std::to_string(k);
    checkLayer(l, makeConfig(k % 2 ? 64 : 256), k % 3 ? 192 * 1024 : 6 * 1024,
               k);
    LayerShape dw{LayerKind::DepthwiseConv,
                  20 + k,
                  17,
                  19,
                  19,
                  k,
                  std::max(1, k / 2),
                  stride,
                  1,
                  pad,
                  std::max(1, k / 2) / 2,
                  0,
                  0};
    NpuLayer d = makeLayer(dw, rng);
    d.name = "dw k" + std::to_string(k);
    checkLayer(d, makeConfig(128), 4 * 1024, k);
    LayerShape pool{k % 2 ? LayerKind::AvgPool : LayerKind::MaxPool,
                    20 + k,
                    20,
                    6,
                    6,
                    k,
                    k,
                    std::min(k, 8),
                    std::min(k, 8)};
    NpuLayer p = makeLayer(pool, rng);
    p.name = "pool k" + std::to_string(k);
    checkLayer(p, makeConfig(64), 2 * 1024, k);
  }
}

TEST(StreamEmitterTest, RefusesWhatNpuV1CannotExpress) {
  std::mt19937 rng(9);
  NpuChain chain;
  chain.weightBinding = kWeights;
  chain.scratchBinding = kScratch;
  NpuLayer l =
      makeLayer({LayerKind::Conv, 20, 20, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  l.dst = Operand::memory(kOut);
  l.kernelH = 17;
  l.name = "k17";
  chain.layers = {l};
  auto s = emitChain(chain, makeConfig(64));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.status().message().find("k17"), std::string::npos);
  // Padding at least the kernel size (ONNX allows it, npu-v1 does not).
  NpuLayer p = makeLayer(
      {LayerKind::MaxPool, 20, 20, 4, 4, 2, 2, 2, 2, 0, 0, 2, 0}, rng);
  p.dst = Operand::memory(kOut);
  chain.layers = {p};
  EXPECT_EQ(emitChain(chain, makeConfig(64)).status().code(),
            absl::StatusCode::kUnimplemented);
  // Inconsistent output shape.
  NpuLayer bad = makeLayer({LayerKind::Conv, 20, 20, 4, 4, 3, 3}, rng);
  bad.output.h += 1;
  bad.dst = Operand::memory(kOut);
  chain.layers = {bad};
  EXPECT_EQ(emitChain(chain, makeConfig(64)).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A layer that writes the weight binding of a chain loading weights, and
  // a tensor read before it exists. A chain without weights has no weight
  // binding: the index is free for its operands.
  NpuLayer conv = makeLayer({LayerKind::Conv, 4, 4, 4, 4, 1, 1}, rng);
  conv.dst = Operand::resident(1);
  NpuLayer ok = makeLayer({LayerKind::Relu, 4, 4, 4, 4}, rng);
  ok.in = Operand::resident(1);
  ok.dst = Operand::memory(kWeights);
  chain.layers = {conv, ok};
  EXPECT_EQ(emitChain(chain, makeConfig(64)).status().code(),
            absl::StatusCode::kInvalidArgument);
  ok.in = Operand::memory(kIn);
  chain.layers = {ok};
  auto weightless = emitChain(chain, makeConfig(64));
  ASSERT_TRUE(weightless.ok()) << weightless.status();
  EXPECT_TRUE(weightless->weights.empty());
  EXPECT_EQ(weightless->bindingCount, std::max(kIn, kWeights) + 1);
  ok.dst = Operand::memory(kOut);
  ok.in = Operand::resident(5);
  chain.layers = {ok};
  EXPECT_EQ(emitChain(chain, makeConfig(64)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

using testing::ModelChain;

void checkChain(const ModelChain &c, const NpuConfig &config,
                const EmitOptions &options, CompiledStream *outStream = nullptr,
                drivers::npu::sim::Counters *outCounters = nullptr) {
  SCOPED_TRACE("pes=" + std::to_string(config.peCount) +
               " sram=" + std::to_string(options.sramBytes) +
               " resident=" + std::to_string(options.keepResident));
  auto stream = emitChain(c.chain, config, options);
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::vector<std::vector<uint8_t>> bindings(5);
  bindings[testing::kChainInput] = bytes(c.input, 0, 0);
  bindings[testing::kChainOutput2] =
      std::vector<uint8_t>(std::max<size_t>(c.expected2.size(), 1), 0xA5);
  bindings[testing::kChainOutput] =
      std::vector<uint8_t>(c.expected.size(), 0xA5);
  bindings[testing::kChainWeights] = stream->weights;
  bindings[testing::kChainScratch] =
      std::vector<uint8_t>(std::max<uint64_t>(stream->scratchBytes, 1), 0);
  auto run = runStream(*stream, config, bindings, options.sramBytes);
  ASSERT_TRUE(run.status.ok()) << run.status;
  const auto &out = bindings[testing::kChainOutput];
  EXPECT_EQ(std::vector<int8_t>(out.begin(), out.end()), c.expected);
  if (!c.expected2.empty()) {
    const auto &out2 = bindings[testing::kChainOutput2];
    EXPECT_EQ(std::vector<int8_t>(out2.begin(), out2.end()), c.expected2);
  }
  EXPECT_EQ(stream->estimatedCycles, run.counters.total_cycles);
  if (outStream) {
    *outStream = *stream;
  }
  if (outCounters) {
    *outCounters = run.counters;
  }
}

TEST(StreamEmitterTest, DsCnnChainStaysResident) {
  std::mt19937 rng(10);
  ModelChain c = testing::dsCnnChain(rng, true);
  for (uint32_t pes : {64u, 128u, 256u}) {
    CompiledStream s;
    drivers::npu::sim::Counters counters;
    checkChain(c, makeConfig(pes), {}, &s, &counters);
    // Only the input, the weights and the output cross the DMA.
    EXPECT_EQ(s.scratchBytes, 0u);
    EXPECT_GE(counters.dma_bytes_read, c.input.size() + s.weights.size());
    EXPECT_LE(counters.dma_bytes_read,
              c.input.size() * 5 / 4 + s.weights.size());
    EXPECT_EQ(counters.dma_bytes_written, c.expected.size());
    for (size_t i = 1; i < s.layers.size(); ++i) {
      EXPECT_TRUE(s.layers[i].inputResident) << s.layers[i].name;
    }
    // SYNCs only where data lands: about one per layer whose weights arrive.
    EXPECT_LE(s.syncCount, s.layers.size() + 4);
    EXPECT_EQ(counters.count_by_kind[drivers::npu::sim::kKindSync],
              s.syncCount);
  }
  // Small SRAM budgets spill intermediates to the scratch binding.
  for (uint64_t sram : {uint64_t{16 * 1024}, uint64_t{6 * 1024}}) {
    EmitOptions o;
    o.sramBytes = sram;
    checkChain(c, makeConfig(64, 16), o);
  }
  EmitOptions spill;
  spill.keepResident = false;
  CompiledStream s;
  checkChain(c, makeConfig(256), spill, &s);
  EXPECT_GT(s.scratchBytes, 0u);
}

TEST(StreamEmitterTest, ResNet8ChainWithResidualAdds) {
  std::mt19937 rng(11);
  ModelChain c = testing::resNet8Chain(rng, true, true);
  for (uint32_t pes : {64u, 128u, 256u}) {
    CompiledStream s;
    drivers::npu::sim::Counters counters;
    checkChain(c, makeConfig(pes), {}, &s, &counters);
    // Only the input (with the halo rows of the first layer's row tiles),
    // the weights and the output cross the DMA.
    EXPECT_EQ(s.scratchBytes, 0u);
    EXPECT_GE(counters.dma_bytes_read, c.input.size() + s.weights.size());
    EXPECT_LE(counters.dma_bytes_read,
              c.input.size() * 5 / 4 + s.weights.size());
    EXPECT_EQ(counters.dma_bytes_written, c.expected.size());
    for (size_t i = 1; i < s.layers.size(); ++i) {
      EXPECT_TRUE(s.layers[i].inputResident) << s.layers[i].name;
    }
  }
  for (uint64_t sram : {uint64_t{48 * 1024}, uint64_t{12 * 1024}}) {
    EmitOptions o;
    o.sramBytes = sram;
    checkChain(c, makeConfig(128, 32), o);
  }
  EmitOptions spill;
  spill.keepResident = false;
  checkChain(c, makeConfig(64), spill);
  // The layer benchmark's sequence: convs only, two outputs.
  ModelChain convs = testing::resNet8Chain(rng, false, false);
  checkChain(convs, makeConfig(256), {});
  EmitOptions small;
  small.sramBytes = 20 * 1024;
  checkChain(convs, makeConfig(64, 64), small);
}

TEST(StreamEmitterTest, BlobWithSeveralExportsVerifies) {
  std::mt19937 rng(12);
  ModelChain a = testing::dsCnnChain(rng, true);
  ModelChain b = testing::resNet8Chain(rng, true, true);
  auto sa = emitChain(a.chain, makeConfig(64));
  auto sb = emitChain(b.chain, makeConfig(64));
  ASSERT_TRUE(sa.ok() && sb.ok());
  auto blob = writeBlob({{"ds_cnn", &*sa}, {"resnet8", &*sb}});
  ASSERT_TRUE(blob.ok()) << blob.status();
  drivers::npu::sim::BlobView view;
  ASSERT_TRUE(drivers::npu::sim::BlobView::Parse(*blob, &view).ok());
  ASSERT_EQ(view.export_count(), 2u);
  EXPECT_STREQ(view.export_view(0).name, "ds_cnn");
  EXPECT_STREQ(view.export_view(1).name, "resnet8");
  EXPECT_EQ(view.export_view(1).words.size(), sb->words.size());
  EXPECT_EQ(view.export_view(0).binding_write_mask, 1u << kOut);
  EXPECT_FALSE(writeBlob({{"x", &*sa}, {"x", &*sb}}).ok());
  EXPECT_FALSE(writeBlob({}).ok());
}

} // namespace
} // namespace osprey::compiler::npu

namespace osprey::compiler::npu {
namespace {

// Random window geometry for |kind| on an h x w input (may be invalid:
// callers skip what verifyLayer refuses).
LayerShape randomShape(LayerKind kind, int64_t h, int64_t w, int64_t c,
                       std::mt19937 &rng) {
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  static const int64_t kChannels[] = {1, 3, 8, 13, 16, 33, 70};
  LayerShape s;
  s.kind = kind;
  s.h = h;
  s.w = w;
  s.ic = c;
  s.oc = kind == LayerKind::Conv || kind == LayerKind::MatMul
             ? kChannels[pick(0, 6)]
             : c;
  if (kind == LayerKind::Conv || kind == LayerKind::DepthwiseConv ||
      kind == LayerKind::MaxPool || kind == LayerKind::AvgPool) {
    s.kh = pick(0, 9) == 0 ? pick(8, 16) : pick(1, 5);
    s.kw = pick(0, 9) == 0 ? pick(8, 16) : pick(1, 5);
    s.sh = pick(1, 3);
    s.sw = pick(1, 3);
    s.padTop = pick(0, s.kh - 1);
    s.padLeft = pick(0, s.kw - 1);
    s.padBottom = pick(0, s.kh - 1);
    s.padRight = pick(0, s.kw - 1);
    s.relu = pick(0, 1);
  }
  return s;
}

TEST(StreamEmitterRandomTest, RandomLayersAreBitExact) {
  std::mt19937 rng(20261127);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  static const LayerKind kKinds[] = {
      LayerKind::Conv,    LayerKind::DepthwiseConv, LayerKind::MatMul,
      LayerKind::MaxPool, LayerKind::AvgPool,       LayerKind::Add,
      LayerKind::Relu,    LayerKind::LeakyRelu,     LayerKind::Min,
      LayerKind::Max};
  static const uint64_t kBudgets[] = {192 * 1024, 32 * 1024, 8 * 1024,
                                      3 * 1024};
  int compiled = 0, refused = 0;
  for (int i = 0; i < 400; ++i) {
    LayerKind kind = kKinds[pick(0, 9)];
    int64_t h = pick(1, 40), w = pick(1, 40), c = pick(1, 80);
    if (kind == LayerKind::MatMul) {
      w = 1;
      c = pick(1, 600);
    }
    LayerShape shape = randomShape(kind, h, w, c, rng);
    NpuLayer layer = makeLayer(shape, rng);
    layer.name = "random " + std::to_string(i);
    if (kind == LayerKind::Min || kind == LayerKind::Max) {
      layer.useScalar = pick(0, 1);
    }
    if (!verifyLayer(layer).ok()) {
      continue;
    }
    NpuConfig config = makeConfig(64u << pick(0, 2), pick(0, 2) ? 256 : 16);
    if (pick(0, 3) == 0) {
      config.mapping = PeMapping::InputParallel;
    }
    uint64_t budget = kBudgets[pick(0, 3)];
    NpuChain chain;
    chain.layers = {layer};
    chain.layers[0].dst = Operand::memory(kOut);
    chain.weightBinding = kWeights;
    EmitOptions options;
    options.sramBytes = budget;
    auto s = emitChain(chain, config, options);
    if (!s.ok()) {
      ASSERT_EQ(s.status().code(), absl::StatusCode::kUnimplemented)
          << s.status();
      ASSERT_NE(s.status().message().find("no tile fits"), std::string::npos)
          << s.status();
      ++refused;
      continue;
    }
    checkLayer(layer, config, budget, i);
    ++compiled;
    if (HasFatalFailure()) {
      return;
    }
  }
  EXPECT_GT(compiled, 250);
  EXPECT_LT(refused, compiled / 10 + 1);
}

TEST(StreamEmitterRandomTest, RandomChainsAreBitExact) {
  std::mt19937 rng(4242);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int run = 0;
  for (int i = 0; i < 150; ++i) {
    testing::ModelChain m;
    m.chain.weightBinding = testing::kChainWeights;
    m.chain.scratchBinding = testing::kChainScratch;
    Shape shape{pick(4, 30), pick(4, 30), pick(1, 40)};
    m.input = randomTensor(shape.elements(), rng);
    std::vector<std::pair<Shape, std::vector<int8_t>>> tensors;
    int current = -1;
    std::vector<int8_t> value = m.input;
    int layers = pick(2, 7);
    for (int j = 0; j < layers; ++j) {
      static const LayerKind kKinds[] = {
          LayerKind::Conv,    LayerKind::DepthwiseConv, LayerKind::MaxPool,
          LayerKind::AvgPool, LayerKind::Add,           LayerKind::Relu};
      LayerKind kind = kKinds[pick(0, 5)];
      if (kind == LayerKind::Add && current < 0) {
        kind = LayerKind::Relu;
      }
      NpuLayer l;
      bool ok = false;
      for (int attempt = 0; attempt < 20 && !ok; ++attempt) {
        l = makeLayer(randomShape(kind, shape.h, shape.w, shape.c, rng), rng);
        ok = verifyLayer(l).ok();
      }
      if (!ok) {
        l = makeLayer({LayerKind::Relu, shape.h, shape.w, shape.c, shape.c},
                      rng);
      }
      l.name = "chain layer " + std::to_string(j);
      l.in = current < 0 ? Operand::memory(testing::kChainInput)
                         : Operand::resident(current);
      std::vector<int8_t> second;
      if (l.kind == LayerKind::Add) {
        // The residual operand: an earlier tensor of the same shape, or the
        // current one.
        int other = current;
        for (int t = 0; t < int(tensors.size()); ++t) {
          if (tensors[t].first == shape && pick(0, 1)) {
            other = t;
          }
        }
        l.in2 = Operand::resident(other);
        second = tensors[other].second;
      }
      int id = int(tensors.size());
      l.dst = Operand::resident(id);
      value = referenceLayer(l, value, second);
      shape = l.output;
      tensors.push_back({shape, value});
      current = id;
      m.chain.layers.push_back(l);
    }
    m.chain.layers.back().dst = Operand::memory(testing::kChainOutput);
    m.expected = value;
    NpuConfig config = makeConfig(64u << pick(0, 2), pick(0, 1) ? 256 : 16);
    EmitOptions options;
    static const uint64_t kBudgets[] = {0, 24 * 1024, 6 * 1024};
    options.sramBytes = kBudgets[pick(0, 2)];
    options.keepResident = pick(0, 4) != 0;
    SCOPED_TRACE("chain " + std::to_string(i));
    auto s = emitChain(m.chain, config, options);
    if (!s.ok() && s.status().code() == absl::StatusCode::kUnimplemented) {
      continue;
    }
    checkChain(m, config, options);
    ++run;
    if (HasFatalFailure()) {
      return;
    }
  }
  EXPECT_GT(run, 120);
}

} // namespace
} // namespace osprey::compiler::npu
