#include "runtime/base/arena.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace osprey {
namespace {

TEST(ArenaTest, BumpAllocatesAligned) {
  Arena arena(Allocator::Default(), 256);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_TRUE(arena.Allocate(3, 1, &a).ok());
  ASSERT_TRUE(arena.Allocate(8, 8, &b).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);
  EXPECT_NE(a, b);
}

TEST(ArenaTest, LargeAllocationGetsOwnBlock) {
  Arena arena(Allocator::Default(), 64);
  void* p = nullptr;
  ASSERT_TRUE(arena.Allocate(10000, 16, &p).ok());
  memset(p, 1, 10000);
}

TEST(ArenaTest, ResetReusesBlocksWithoutParentAllocations) {
  CountingAllocator counting(Allocator::Default());
  {
    Arena arena(&counting, 1024);
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 20; ++i) {
        void* p = nullptr;
        ASSERT_TRUE(arena.Allocate(100, 16, &p).ok());
      }
      arena.Reset();
    }
    // All rounds after the first are served from kept blocks.
    EXPECT_LE(counting.allocations(), 3u);
  }
  EXPECT_EQ(counting.live(), 0u);
}

}  // namespace
}  // namespace osprey
