#include "runtime/base/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace osprey {
namespace {

TEST(AllocatorTest, DefaultHonoursAlignment) {
  for (size_t align : {8u, 16u, 64u, 4096u}) {
    void* p = nullptr;
    ASSERT_TRUE(Allocator::Default()->Allocate(100, align, &p).ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u);
    Allocator::Default()->Free(p);
  }
}

TEST(AllocatorTest, RejectsBadAlignment) {
  void* p = nullptr;
  EXPECT_EQ(Allocator::Default()->Allocate(8, 3, &p).code(), StatusCode::kInvalidArgument);
}

TEST(StaticArenaAllocatorTest, AllocatesFreesAndCoalesces) {
  alignas(16) static uint8_t memory[4096];
  StaticArenaAllocator arena(memory, sizeof(memory));
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  ASSERT_TRUE(arena.Allocate(1000, 16, &a).ok());
  ASSERT_TRUE(arena.Allocate(1000, 64, &b).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  ASSERT_TRUE(arena.Allocate(1000, 16, &c).ok());
  void* d = nullptr;
  Status full = arena.Allocate(2000, 16, &d);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  arena.Free(a);
  arena.Free(b);
  // a and b coalesced: a 1900-byte block now fits where they were.
  ASSERT_TRUE(arena.Allocate(1900, 16, &d).ok());
  EXPECT_LT(reinterpret_cast<uintptr_t>(d), reinterpret_cast<uintptr_t>(c));
  arena.Free(c);
  arena.Free(d);
  EXPECT_EQ(arena.bytes_in_use(), 0u);
  ASSERT_TRUE(arena.Allocate(3500, 16, &d).ok());
  arena.Free(d);
}

TEST(StaticArenaAllocatorTest, ReusesMemoryUnderChurn) {
  alignas(16) static uint8_t memory[8192];
  StaticArenaAllocator arena(memory, sizeof(memory));
  std::vector<void*> live;
  for (int round = 0; round < 1000; ++round) {
    void* p = nullptr;
    ASSERT_TRUE(arena.Allocate(16 + (round * 37) % 500, 16, &p).ok()) << round;
    live.push_back(p);
    if (live.size() > 6) {
      arena.Free(live[round % live.size()]);
      live.erase(live.begin() + round % live.size());
    }
  }
  for (void* p : live) arena.Free(p);
  EXPECT_EQ(arena.bytes_in_use(), 0u);
}

TEST(CountingAllocatorTest, Counts) {
  CountingAllocator counting(Allocator::Default());
  void* p = nullptr;
  ASSERT_TRUE(counting.Allocate(10, 16, &p).ok());
  EXPECT_EQ(counting.live(), 1u);
  counting.Free(p);
  EXPECT_EQ(counting.live(), 0u);
}

}  // namespace
}  // namespace osprey
