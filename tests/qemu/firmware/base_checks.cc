// Self-checks of runtime/base on the target: status propagation, the static
// arena allocator, Arena reuse and reference counting.
#include "tests/qemu/firmware/base_checks.h"

#include <cstdint>
#include <cstring>

#include "runtime/base/allocator.h"
#include "runtime/base/arena.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"

namespace osprey::tests::qemu::firmware {

namespace {

//===----------------------------------------------------------------------===//
// Status and StatusOr
//===----------------------------------------------------------------------===//

StatusOr<int> ParseDigit(char c) {
  if (c < '0' || c > '9') {
    return InvalidArgumentError("'%c' is not a digit", c);
  }
  return c - '0';
}

// Sums the digits of |text|; errors carry one line of context per layer.
StatusOr<int> SumDigits(const char* text) {
  int sum = 0;
  for (size_t i = 0; text[i] != '\0'; ++i) {
    OSPREY_ASSIGN_OR_RETURN(int digit, ParseDigit(text[i]), "at offset %zu", i);
    sum += digit;
  }
  return sum;
}

Status CheckedSum(const char* text, int* out_sum) {
  OSPREY_ASSIGN_OR_RETURN(*out_sum, SumDigits(text), "summing '%s'", text);
  return OkStatus();
}

void CheckStatus(CheckGroup& group) {
  Status ok = OkStatus();
  FW_EXPECT(group, ok.ok());
  FW_EXPECT(group, ok.code() == StatusCode::kOk);

  int sum = 0;
  FW_EXPECT_OK(group, CheckedSum("1234", &sum));
  FW_EXPECT(group, sum == 10);

  Status error = CheckedSum("12x4", &sum);
  FW_EXPECT_CODE(group, error, StatusCode::kInvalidArgument);
  char text[160];
  size_t length = error.ToString(text, sizeof(text));
  FW_EXPECT(group, length < sizeof(text));
  FW_EXPECT(group, strncmp(text, "INVALID_ARGUMENT", 16) == 0);
#if OSPREY_STATUS_MESSAGES
  // Both context lines survive the two layers.
  FW_EXPECT(group, strstr(error.message(), "'x' is not a digit") != nullptr);
  FW_EXPECT(group, strstr(error.message(), "at offset 2") != nullptr);
  FW_EXPECT(group, strstr(error.message(), "summing '12x4'") != nullptr);
#else
  FW_EXPECT(group, error.message()[0] == '\0');
#endif

  Status copy = error.Clone();
  FW_EXPECT_CODE(group, copy, StatusCode::kInvalidArgument);
  Status moved = std::move(error);
  FW_EXPECT_CODE(group, moved, StatusCode::kInvalidArgument);
  moved.IgnoreError();
  FW_EXPECT(group, moved.ok());
  copy.IgnoreError();

  StatusOr<int> digit = ParseDigit('7');
  FW_EXPECT(group, digit.ok() && *digit == 7);
  FW_EXPECT(group, StatusCodeName(StatusCode::kDataLoss)[0] == 'D');
}

//===----------------------------------------------------------------------===//
// StaticArenaAllocator
//===----------------------------------------------------------------------===//

bool IsAligned(const void* p, size_t alignment) {
  return (reinterpret_cast<uintptr_t>(p) & (alignment - 1)) == 0;
}

void CheckStaticArena(void* memory, size_t size, CheckGroup& group) {
  StaticArenaAllocator allocator(memory, size);
  FW_EXPECT(group, allocator.capacity() > 0 && allocator.capacity() <= size);

  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  FW_EXPECT_OK(group, allocator.Allocate(100, 8, &a));
  FW_EXPECT_OK(group, allocator.Allocate(200, 64, &b));
  FW_EXPECT_OK(group, allocator.Allocate(300, 16, &c));
  FW_EXPECT(group, a && b && c && IsAligned(b, 64) && IsAligned(c, 16));
  if (!a || !b || !c) return;
  // Blocks do not overlap: fill each and read the patterns back.
  memset(a, 0xA1, 100);
  memset(b, 0xB2, 200);
  memset(c, 0xC3, 300);
  FW_EXPECT(group, static_cast<uint8_t*>(a)[99] == 0xA1 &&
                       static_cast<uint8_t*>(b)[0] == 0xB2 &&
                       static_cast<uint8_t*>(b)[199] == 0xB2 &&
                       static_cast<uint8_t*>(c)[0] == 0xC3);
  FW_EXPECT(group, allocator.bytes_in_use() >= 600);

  // Too large: RESOURCE_EXHAUSTED with a null result, nothing changes.
  size_t in_use = allocator.bytes_in_use();
  void* huge = reinterpret_cast<void*>(1);
  Status exhausted = allocator.Allocate(size, 8, &huge);
  FW_EXPECT_CODE(group, exhausted, StatusCode::kResourceExhausted);
  FW_EXPECT(group, huge == nullptr);
  FW_EXPECT(group, allocator.bytes_in_use() == in_use);
  exhausted.IgnoreError();

  void* bad = nullptr;
  Status misaligned = allocator.Allocate(16, 3, &bad);
  FW_EXPECT_CODE(group, misaligned, StatusCode::kInvalidArgument);
  misaligned.IgnoreError();

  // Freeing everything coalesces the blocks: the whole arena is one block.
  allocator.Free(b);
  allocator.Free(a);
  allocator.Free(c);
  FW_EXPECT(group, allocator.bytes_in_use() == 0);
  void* all = nullptr;
  FW_EXPECT_OK(group, allocator.Allocate(allocator.capacity() - 64, 8, &all));
  allocator.Free(all);
  FW_EXPECT(group, allocator.peak_bytes_in_use() >= allocator.capacity() - 64);
}

//===----------------------------------------------------------------------===//
// Arena
//===----------------------------------------------------------------------===//

struct Pair {
  uint32_t key = 0;
  uint32_t value = 0;
};

void CheckArena(void* memory, size_t size, CheckGroup& group) {
  StaticArenaAllocator backing(memory, size);
  CountingAllocator counting(&backing);
  {
    Arena arena(&counting, /*block_size=*/512);
    for (int round = 0; round < 3; ++round) {
      for (uint32_t i = 0; i < 40; ++i) {
        StatusOr<Pair*> pair = arena.New<Pair>();
        if (!FW_EXPECT_OK(group, pair.status())) return;
        (*pair)->key = i;
        (*pair)->value = i * i;
      }
      StatusOr<uint32_t*> items = arena.NewArray<uint32_t>(64);
      if (!FW_EXPECT_OK(group, items.status())) return;
      FW_EXPECT(group, (*items)[0] == 0 && (*items)[63] == 0);
      FW_EXPECT(group, arena.bytes_allocated() >= 40 * sizeof(Pair) + 64 * 4);
      size_t parent_allocations = counting.allocations();
      arena.Reset();
      FW_EXPECT(group, arena.bytes_allocated() == 0);
      // Steady state: later rounds reuse the blocks of the first one.
      if (round > 0) {
        FW_EXPECT(group, counting.allocations() == parent_allocations);
      }
    }
    StatusOr<uint32_t*> overflow = arena.NewArray<uint32_t>(SIZE_MAX / 2);
    FW_EXPECT_CODE(group, overflow.status(), StatusCode::kResourceExhausted);
  }
  FW_EXPECT(group, counting.live() == 0);
  FW_EXPECT(group, backing.bytes_in_use() == 0);
}

//===----------------------------------------------------------------------===//
// RefObject / ref_ptr
//===----------------------------------------------------------------------===//

class Tracked : public RefObject {
 public:
  Tracked(int* live, int value) : live_(live), value_(value) { ++*live_; }
  ~Tracked() override { --*live_; }
  int value() const { return value_; }

 private:
  int* live_;
  int value_;
};

void CheckRefPtr(void* memory, size_t size, CheckGroup& group) {
  StaticArenaAllocator allocator(memory, size);
  int live = 0;
  {
    StatusOr<ref_ptr<Tracked>> made = MakeRef<Tracked>(&allocator, &live, 42);
    if (!FW_EXPECT_OK(group, made.status())) return;
    ref_ptr<Tracked> first = std::move(*made);
    FW_EXPECT(group, live == 1 && first->value() == 42);
    FW_EXPECT(group, first->host_allocator() == &allocator);
    FW_EXPECT(group, allocator.bytes_in_use() > 0);
    {
      ref_ptr<Tracked> second = first;
      FW_EXPECT(group, first->ref_count() == 2);
      ref_ptr<RefObject> base = second;
      FW_EXPECT(group, first->ref_count() == 3);
    }
    FW_EXPECT(group, first->ref_count() == 1 && live == 1);
  }
  // The last release ran the destructor and freed into the allocator.
  FW_EXPECT(group, live == 0);
  FW_EXPECT(group, allocator.bytes_in_use() == 0);

  // A failed allocation surfaces as RESOURCE_EXHAUSTED, not a crash.
  // Fill a small arena with 8-byte blocks first.
  alignas(16) static uint8_t tiny[256];
  StaticArenaAllocator small(tiny, sizeof(tiny));
  int filled = 0;
  for (void* piece = nullptr; filled < 64; ++filled) {
    Status status = small.Allocate(8, 8, &piece);
    if (!status.ok()) {
      status.IgnoreError();
      break;
    }
  }
  FW_EXPECT(group, filled > 0 && filled < 64);
  StatusOr<ref_ptr<Tracked>> none = MakeRef<Tracked>(&small, &live, 1);
  FW_EXPECT_CODE(group, none.status(), StatusCode::kResourceExhausted);
  FW_EXPECT(group, live == 0);
}

}  // namespace

void RunBaseChecks(void* memory, size_t size, CheckGroup& group) {
  CheckStatus(group);
  CheckStaticArena(memory, size, group);
  CheckArena(memory, size, group);
  CheckRefPtr(memory, size, group);
}

}  // namespace osprey::tests::qemu::firmware
