// Tests of the lowering table and the shared indexing maps.
#include "compiler/graph/op_registry.h"
#include "compiler/structured/lowering/indexing.h"
#include "compiler/structured/lowering/lowering.h"
#include "gtest/gtest.h"

namespace osprey::compiler::structured::lowering {
namespace {

// The value of |e| with loop d at |at[d]|.
int64_t evaluate(const AffineExpr &e, llvm::ArrayRef<int64_t> at) {
  int64_t v = e.constant;
  for (size_t d = 0; d < e.coeffs.size(); ++d) {
    v += e.coeffs[d] * at[d];
  }
  return v;
}

TEST(LoweringTableTest, EveryKindButShapeLowers) {
  for (const graph::OpInfo *info : graph::allOps()) {
    bool expected = info->kind != OpKind::Shape;
    EXPECT_EQ(lookupLowering(info->kind) != nullptr, expected) << info->name;
  }
}

TEST(IndexingTest, SelectedReadIsInBoundsAtOnePositionOnly) {
  // Axis 1 of extent 5 reads source 3 where the loop is at 2.
  AffineMap m = selectedRead(AffineMap::identity(2), 1, 1, 5, 3, 2);
  EXPECT_EQ(m.results[0].str(), "d0");
  for (int64_t o = 0; o < 8; ++o) {
    int64_t index = evaluate(m.results[1], {0, o});
    EXPECT_EQ(index >= 0 && index < 5, o == 2) << "o = " << o;
    if (o == 2) {
      EXPECT_EQ(index, 3);
    }
  }
}

TEST(IndexingTest, SelectedReadKeepsTheBaseTerms) {
  // A (q, r) nest: the read of q keeps q and selects r == 1.
  SplitAxisLoops loops = splitAxisLoops({2, 6}, 1, 3, 2);
  AffineMap m = selectedRead(loops.read, 1, 2, 5, 1, 1);
  EXPECT_EQ(m.str(), "[d0, d1 + d2 * 5 - 4]");
}

TEST(IndexingTest, SplitAxisLoopsWritesFactorTimesQPlusR) {
  SplitAxisLoops loops = splitAxisLoops({2, 6, 4}, 1, 3, 2);
  EXPECT_EQ(loops.bounds, (std::vector<int64_t>{2, 3, 2, 4}));
  EXPECT_EQ(loops.read.str(), "[d0, d1, d3]");
  EXPECT_EQ(loops.write.str(), "[d0, d1 * 2 + d2, d3]");
}

TEST(IndexingTest, AxisMapShiftsOneAxis) {
  EXPECT_EQ(axisMap(3, 2, 1, -4).str(), "[d0, d1, d2 - 4]");
  EXPECT_EQ(axisMap(2, 0, -1, 7).str(), "[-d0 + 7, d1]");
}

TEST(IndexingTest, BroadcastMapReadsSize1DimsAtZero) {
  EXPECT_EQ(broadcastMap({3, 1}, {2, 3, 5}, 3).str(), "[d1, 0]");
}

TEST(WindowNestTest, GroupedConvolutionLoopsAndMaps) {
  // 2 groups of 4 output and 3 input channels, 8x8 output, 3x3 kernel.
  WindowNest nest(1, 2, 4, {8, 8}, 3, {3, 3});
  EXPECT_EQ(nest.bounds(), (std::vector<int64_t>{1, 2, 4, 8, 8, 3, 3, 3}));
  EXPECT_EQ(nest.outputChannelLoop(), 2u);
  EXPECT_EQ(nest.inputChannelLoop(), 5u);
  EXPECT_EQ(nest.kernelLoop(0), 6u);
  auto it = nest.iterators(nest.inputChannelLoop());
  EXPECT_EQ(it[4], IteratorType::Parallel);
  EXPECT_EQ(it[5], IteratorType::Reduction);
  AffineMap x = nest.inputMap(nest.channel(nest.inputChannelLoop(), 3), {2, 2},
                              {1, 1}, {-1, -1});
  EXPECT_EQ(x.str(), "[d0, d1 * 3 + d5, d3 * 2 + d6 - 1, d4 * 2 + d7 - 1]");
  AffineMap w = nest.weightMap(nest.channel(nest.outputChannelLoop(), 4),
                               nest.loop(nest.inputChannelLoop()));
  EXPECT_EQ(w.str(), "[d1 * 4 + d2, d5, d6, d7]");
  EXPECT_EQ(nest.outputMap(4).str(), "[d0, d1 * 4 + d2, d3, d4]");
}

TEST(WindowNestTest, PoolHasNoGroupOrInputChannelLoop) {
  WindowNest nest(1, 1, 16, {4}, std::nullopt, {2});
  EXPECT_EQ(nest.bounds(), (std::vector<int64_t>{1, 16, 4, 2}));
  EXPECT_EQ(nest.inputChannelLoop(), nest.kernelLoop(0));
  EXPECT_EQ(nest.inputMap(nest.loop(1), {2}, {1}, {0}).str(),
            "[d0, d1, d2 * 2 + d3]");
}

} // namespace
} // namespace osprey::compiler::structured::lowering
