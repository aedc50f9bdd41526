// CommandBuffer base class: hooks receive resolved absolute ranges, and
// retention holds every resource until destruction.
#include "hal/command_buffer.h"

#include <vector>

#include "gtest/gtest.h"

namespace osprey::hal {
namespace {

class FakeBuffer final : public Buffer {
 public:
  explicit FakeBuffer(DeviceSize length)
      : Buffer(nullptr, MemoryType::kHostLocal | MemoryType::kDeviceVisible, BufferUsage::kDefault,
               MemoryAccess::kAll, 0, length),
        bytes_(size_t(length)) {}

 protected:
  Status MapRangeImpl(MemoryAccess, DeviceSize offset, DeviceSize, uint8_t** out_data) override {
    *out_data = bytes_.data() + offset;
    return OkStatus();
  }

 private:
  std::vector<uint8_t> bytes_;
};

class FakeCommandBuffer final : public CommandBuffer {
 public:
  explicit FakeCommandBuffer(osprey::Allocator* allocator)
      : CommandBuffer(CommandBufferMode::kDefault, allocator) {}
  std::vector<BufferRef> seen;
  uint32_t last_pattern = 0;

 protected:
  Status ExecutionBarrierImpl() override { return OkStatus(); }
  Status FillBufferImpl(BufferRef target, uint32_t pattern, size_t) override {
    seen.push_back(target);
    last_pattern = pattern;
    return OkStatus();
  }
  Status UpdateBufferImpl(const void*, BufferRef target) override {
    seen.push_back(target);
    return OkStatus();
  }
  Status CopyBufferImpl(BufferRef source, BufferRef target) override {
    seen.push_back(source);
    seen.push_back(target);
    return OkStatus();
  }
  Status DispatchImpl(Executable*, uint32_t, WorkgroupCount, std::span<const uint32_t>,
                      std::span<const BufferRef> bindings) override {
    for (const BufferRef& ref : bindings) seen.push_back(ref);
    return OkStatus();
  }
};

ref_ptr<Buffer> MakeBuffer(DeviceSize length) {
  auto buffer = MakeRef<FakeBuffer>(osprey::Allocator::Default(), length);
  EXPECT_TRUE(buffer.ok());
  return ref_ptr<Buffer>(std::move(*buffer));
}

TEST(CommandBufferTest, HooksSeeAbsoluteRangesOfTheAllocatedBuffer) {
  ref_ptr<Buffer> buffer = MakeBuffer(128);
  auto subspan = Buffer::Subspan(buffer, 32, 64);
  ASSERT_TRUE(subspan.ok()) << subspan.status().message();
  FakeCommandBuffer cb(osprey::Allocator::Default());
  ASSERT_TRUE(cb.Begin().ok());
  uint16_t pattern = 0xABCD;
  ASSERT_TRUE(cb.FillBuffer({subspan->get(), 8, kWholeBuffer}, &pattern, 2).ok());
  ASSERT_EQ(cb.seen.size(), 1u);
  EXPECT_EQ(cb.seen[0].buffer, buffer.get());
  EXPECT_EQ(cb.seen[0].offset, 40u);
  EXPECT_EQ(cb.seen[0].length, 56u);
  EXPECT_EQ(cb.last_pattern, 0xABCDu);
  ASSERT_TRUE(cb.CopyBuffer({buffer.get(), 0, 16}, {subspan->get(), 48, kWholeBuffer}).ok());
  ASSERT_EQ(cb.seen.size(), 3u);
  EXPECT_EQ(cb.seen[2].offset, 80u);
  EXPECT_EQ(cb.seen[2].length, 16u);
  ASSERT_TRUE(cb.End().ok());
}

TEST(CommandBufferTest, RetainsEveryResourceUntilDestroyed) {
  std::vector<ref_ptr<Buffer>> buffers;
  for (int i = 0; i < 100; ++i) buffers.push_back(MakeBuffer(4));
  {
    FakeCommandBuffer cb(osprey::Allocator::Default());
    ASSERT_TRUE(cb.Begin().ok());
    uint8_t pattern = 1;
    for (auto& buffer : buffers) {
      ASSERT_TRUE(cb.FillBuffer({buffer.get(), 0, 4}, &pattern, 1).ok());
    }
    for (auto& buffer : buffers) EXPECT_EQ(buffer->ref_count(), 2u);
  }
  for (auto& buffer : buffers) EXPECT_EQ(buffer->ref_count(), 1u);
}

TEST(CommandBufferTest, FailedValidationRetainsNothing) {
  ref_ptr<Buffer> buffer = MakeBuffer(8);
  FakeCommandBuffer cb(osprey::Allocator::Default());
  ASSERT_TRUE(cb.Begin().ok());
  uint32_t pattern = 0;
  EXPECT_EQ(cb.FillBuffer({buffer.get(), 4, 8}, &pattern, 4).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(buffer->ref_count(), 1u);
  EXPECT_TRUE(cb.seen.empty());
}

}  // namespace
}  // namespace osprey::hal
