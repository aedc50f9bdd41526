#include "compiler/targets/npu/tiling.h"

#include <random>

#include "compiler/targets/npu/testing/run_stream.h"
#include "gtest/gtest.h"

namespace osprey::compiler::npu {
namespace {

using testing::LayerShape;
using testing::makeLayer;

NpuConfig config(uint32_t pes, uint64_t weightKiB = 256) {
  NpuConfig c;
  c.peCount = pes;
  c.sramBytes = 256 * 1024;
  c.poolBytes = 64 * 1024;
  c.weightBytes = weightKiB * 1024;
  return c;
}

TilingBudget budget(uint64_t sram, uint64_t weights) {
  TilingBudget b;
  b.sramBytes = sram;
  b.weightBlockBytes = weights;
  return b;
}

TEST(TilingTest, SmallLayerIsOneStep) {
  std::mt19937 rng(1);
  NpuLayer l =
      makeLayer({LayerKind::Conv, 16, 16, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  auto t = chooseTiling(l, config(256), budget(192 * 1024, 128 * 1024));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->blocking, WeightBlocking::Whole);
  LayerCost c =
      estimateCost(l, config(256), *t, budget(192 * 1024, 128 * 1024));
  // ceil(32/16) * ceil(256/16) * 9*32 cycles, in tiles of whole array rows
  // (16 cycles of fill per instruction).
  EXPECT_EQ(c.computeCycles, 2u * 16 * 288 + 16 * c.steps);
  EXPECT_EQ(c.macCycles, c.computeCycles);
  EXPECT_EQ((t->rowTile * t->colTile) % 16, 0);
  EXPECT_GT(c.totalCycles, c.computeCycles);
  // Splitting rows pays here: the first tile's load is shorter than the
  // whole input's, and the stores overlap compute.
  Tiling one = *t;
  one.rowTile = 16;
  one.rowTiles = 1;
  LayerCost single =
      estimateCost(l, config(256), one, budget(192 * 1024, 128 * 1024));
  EXPECT_LE(c.totalCycles, single.totalCycles);
}

TEST(TilingTest, RowTilesKeepThePeRowsBusy) {
  std::mt19937 rng(2);
  // 64x64x32 input = 128 KiB: must tile rows in an 32 KiB budget.
  NpuLayer l =
      makeLayer({LayerKind::Conv, 64, 64, 32, 48, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  for (uint32_t pes : {64u, 256u}) {
    auto t = chooseTiling(l, config(pes), budget(32 * 1024, 128 * 1024));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_GT(t->rowTiles, 1);
    EXPECT_LE(2 * t->halfBytes + t->accBytes, 32u * 1024);
    EXPECT_EQ((t->rowTile * t->colTile) % config(pes).arrayRows(), 0);
    LayerCost c =
        estimateCost(l, config(pes), *t, budget(32 * 1024, 128 * 1024));
    double peak = double(l.macs()) / pes;
    EXPECT_GE(peak / double(c.macCycles), 0.9) << pes;
  }
}

TEST(TilingTest, WeightsStreamPerChannelTileAndInputChannelsSplit) {
  std::mt19937 rng(3);
  // 40 x 3x3 x 700 weights = 252 KB: more than half of 256 KiB.
  NpuLayer l =
      makeLayer({LayerKind::Conv, 6, 6, 700, 40, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  auto t = chooseTiling(l, config(64), budget(192 * 1024, 128 * 1024));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_NE(t->blocking, WeightBlocking::Whole);
  EXPECT_LE(t->weightBlockBytes, 128u * 1024);
  // With 8 KiB of weight blocks one output-channel tile does not fit either:
  // the reduction splits.
  auto s = chooseTiling(l, config(64, 16), budget(192 * 1024, 8 * 1024));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->icSplits, 1);
  EXPECT_GT(s->accBytes, 0u);
  EXPECT_LE(s->weightBlockBytes, 8u * 1024);
}

TEST(TilingTest, WideRowsSplitColumns) {
  std::mt19937 rng(4);
  NpuLayer l =
      makeLayer({LayerKind::Conv, 3, 2000, 16, 8, 3, 3, 1, 1, 1, 1, 1, 1}, rng);
  auto t = chooseTiling(l, config(64), budget(16 * 1024, 8 * 1024));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->colTiles, 1);
  EXPECT_LE(2 * t->halfBytes + t->accBytes, 16u * 1024);
}

TEST(TilingTest, RefusesWhatCannotFitNamingTheLayer) {
  std::mt19937 rng(5);
  NpuLayer l =
      makeLayer({LayerKind::DepthwiseConv, 40, 40, 64, 64, 16, 16, 1, 1}, rng);
  l.name = "huge_dw";
  auto t = chooseTiling(l, config(64), budget(512, 8 * 1024));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(t.status().message().find("huge_dw"), std::string::npos);
  EXPECT_NE(t.status().message().find("40x40x64"), std::string::npos);
}

TEST(TilingTest, EstimateLayerUsesTheWholeDevice) {
  std::mt19937 rng(6);
  NpuLayer l =
      makeLayer({LayerKind::Conv, 32, 32, 16, 32, 3, 3, 2, 2, 0, 0, 1, 1}, rng);
  auto c = estimateLayer(l, config(256));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_GE(c->totalCycles, c->computeCycles);
  EXPECT_GE(c->totalCycles, c->dmaCycles);
  EXPECT_LE(c->totalCycles, c->computeCycles + c->dmaCycles);
  l.kernelH = 17;
  EXPECT_EQ(estimateLayer(l, config(256)).status().code(),
            absl::StatusCode::kUnimplemented);
}

} // namespace
} // namespace osprey::compiler::npu
