#include "runtime/base/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

// Random churn with each allocation filled with its own byte: no two live
// allocations overlap, a block freed below the others is found again by the
// next search, and once everything is freed the arena is one block again.
TEST(StaticArenaAllocatorTest, FirstFitWithoutOverlapUnderRandomChurn) {
  alignas(16) static uint8_t memory[16384];
  StaticArenaAllocator arena(memory, sizeof(memory));
  struct Live {
    uint8_t* p;
    size_t size;
    uint8_t fill;
  };
  std::vector<Live> live;
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
  };
  // Long-lived allocations at the front, as a loaded module's.
  for (int i = 0; i < 20; ++i) {
    void* p = nullptr;
    ASSERT_TRUE(arena.Allocate(24, 8, &p).ok());
  }
  for (int round = 0; round < 4000; ++round) {
    if (live.empty() || (next() % 3 != 0 && live.size() < 40)) {
      size_t size = 1 + next() % 300;
      size_t alignment = size_t{8} << (next() % 3);
      void* p = nullptr;
      Status status = arena.Allocate(size, alignment, &p);
      if (!status.ok()) {
        ASSERT_EQ(status.code(), StatusCode::kResourceExhausted);
        continue;
      }
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
      uint8_t fill = static_cast<uint8_t>(round);
      memset(p, fill, size);
      // Freeing p puts the search start back at or below p: a same-sized
      // request lands at p again.
      arena.Free(p);
      void* again = nullptr;
      ASSERT_TRUE(arena.Allocate(size, alignment, &again).ok());
      ASSERT_EQ(again, p) << round;
      live.push_back({static_cast<uint8_t*>(p), size, fill});
    } else {
      size_t i = next() % live.size();
      for (size_t j = 0; j < live[i].size; ++j) {
        ASSERT_EQ(live[i].p[j], live[i].fill) << "round " << round;
      }
      arena.Free(live[i].p);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (const Live& l : live) {
    for (size_t j = 0; j < l.size; ++j) ASSERT_EQ(l.p[j], l.fill);
    arena.Free(l.p);
  }
  // Only the 20 long-lived allocations remain, and the rest is one block.
  void* rest = nullptr;
  EXPECT_TRUE(arena.Allocate(sizeof(memory) - 20 * 64 - 128, 8, &rest).ok());
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
