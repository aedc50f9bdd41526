// CTS: allocation, placement, compatibility queries and imports.
#include "hal/cts/cts_test_base.h"

namespace osprey::hal::cts {
namespace {

class AllocatorTest : public CtsTest {};

TEST_P(AllocatorTest, OptimalResolvesToConcretePlacement) {
  BufferParams params;
  params.type = MemoryType::kOptimal;
  params.usage = BufferUsage::kDefault;
  BufferCompatibility compatibility = allocator()->QueryCompatibility(&params, 1024);
  EXPECT_TRUE(AnyBitSet(compatibility, BufferCompatibility::kAllocatable));
  EXPECT_FALSE(AnyBitSet(params.type, MemoryType::kOptimal));
  // Default usage maps and dispatches, so both sides must see it.
  EXPECT_TRUE(AnyBitSet(params.type, MemoryType::kHostVisible));
  EXPECT_TRUE(AnyBitSet(params.type, MemoryType::kDeviceVisible));
  EXPECT_TRUE(AnyBitSet(compatibility, BufferCompatibility::kQueueDispatch));
  EXPECT_TRUE(AnyBitSet(compatibility, BufferCompatibility::kQueueTransfer));
}

TEST_P(AllocatorTest, ImpliedVisibilityBitsAreAdded) {
  BufferParams params;
  params.type = MemoryType::kDeviceLocalBit;
  params.usage = BufferUsage::kDispatchStorage | BufferUsage::kTransfer;
  allocator()->QueryCompatibility(&params, 64);
  EXPECT_TRUE(AllBitsSet(params.type, MemoryType::kDeviceLocal));
  params.type = MemoryType::kHostLocalBit | MemoryType::kDeviceVisible;
  params.usage = BufferUsage::kDefault;
  allocator()->QueryCompatibility(&params, 64);
  EXPECT_TRUE(AllBitsSet(params.type, MemoryType::kHostLocal));
}

TEST_P(AllocatorTest, MappingWithoutHostVisibilityIsNeverCompatible) {
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  params.usage = BufferUsage::kMapping | BufferUsage::kTransfer;
  EXPECT_EQ(allocator()->QueryCompatibility(&params, 64), BufferCompatibility::kNone);
  auto buffer = allocator()->AllocateBuffer(params, 64);
  EXPECT_EQ(CodeOf(buffer), StatusCode::kInvalidArgument);
  EXPECT_NE(MessageOf(buffer).find("host-visible"), std::string::npos) << MessageOf(buffer);
}

TEST_P(AllocatorTest, AllocationKeepsRequestedParams) {
  auto buffer = Allocate(100, BufferUsage::kTransfer | BufferUsage::kMapping,
                         MemoryType::kHostLocal | MemoryType::kDeviceVisible,
                         MemoryAccess::kRead | MemoryAccess::kWrite);
  OSPREY_CTS_ASSERT_OK(buffer);
  EXPECT_EQ((*buffer)->byte_length(), 100u);
  EXPECT_EQ((*buffer)->byte_offset(), 0u);
  EXPECT_EQ((*buffer)->allowed_usage(), BufferUsage::kTransfer | BufferUsage::kMapping);
  EXPECT_EQ((*buffer)->allowed_access(), MemoryAccess::kRead | MemoryAccess::kWrite);
  EXPECT_TRUE(AllBitsSet((*buffer)->memory_type(), MemoryType::kHostLocal));
  EXPECT_EQ((*buffer)->allocated_buffer(), buffer->get());
  EXPECT_EQ((*buffer)->device_allocator(), allocator());
}

TEST_P(AllocatorTest, DeviceLocalBufferKeepsItsPlacement) {
  auto buffer = Allocate(64, BufferUsage::kTransfer | BufferUsage::kDispatchStorage,
                         MemoryType::kDeviceLocal);
  OSPREY_CTS_ASSERT_OK(buffer);
  EXPECT_FALSE(AnyBitSet((*buffer)->memory_type(), MemoryType::kHostVisible));
}

TEST_P(AllocatorTest, ZeroLengthBuffer) {
  auto buffer = Allocate(0);
  OSPREY_CTS_ASSERT_OK(buffer);
  EXPECT_EQ((*buffer)->byte_length(), 0u);
}

TEST_P(AllocatorTest, InvisibleMemoryIsRejected) {
  BufferParams params;
  params.type = MemoryType::kHostCoherent;  // Neither host- nor device-visible.
  params.usage = BufferUsage::kTransfer;
  EXPECT_EQ(allocator()->QueryCompatibility(&params, 64), BufferCompatibility::kNone);
  EXPECT_EQ(CodeOf(allocator()->AllocateBuffer(params, 64)), StatusCode::kInvalidArgument);
}

TEST_P(AllocatorTest, BadAlignmentIsRejected) {
  BufferParams params;
  params.min_alignment = 48;
  EXPECT_EQ(CodeOf(allocator()->AllocateBuffer(params, 64)), StatusCode::kInvalidArgument);
  params.min_alignment = 256;
  auto buffer = allocator()->AllocateBuffer(params, 64);
  OSPREY_CTS_ASSERT_OK(buffer);
}

TEST_P(AllocatorTest, BytesAllocatedTracksLiveBuffers) {
  const DeviceSize before = allocator()->bytes_allocated();
  {
    auto buffer = Allocate(4096);
    OSPREY_CTS_ASSERT_OK(buffer);
    const DeviceSize during = allocator()->bytes_allocated();
    if (during == 0 && before == 0) GTEST_SKIP() << "allocator does not track bytes";
    EXPECT_GE(during, before + 4096);
  }
  EXPECT_EQ(allocator()->bytes_allocated(), before);
}

void CountRelease(void* user_data, void* memory) {
  auto* record = static_cast<std::pair<int, void*>*>(user_data);
  ++record->first;
  record->second = memory;
}

TEST_P(AllocatorTest, ImportWrapsHostMemoryAndReleasesIt) {
  BufferParams params;
  params.type = MemoryType::kHostLocal | MemoryType::kDeviceVisible;
  params.usage = BufferUsage::kDefault;
  if (!AnyBitSet(allocator()->QueryCompatibility(&params, 64), BufferCompatibility::kImportable)) {
    GTEST_SKIP() << "allocator cannot import host memory";
  }
  alignas(64) uint8_t memory[64];
  for (int i = 0; i < 64; ++i) memory[i] = uint8_t(i);
  std::pair<int, void*> record{0, nullptr};
  {
    auto buffer = allocator()->ImportBuffer(params, memory, 64, {&CountRelease, &record});
    OSPREY_CTS_ASSERT_OK(buffer);
    auto bytes = ReadAll(buffer->get());
    EXPECT_EQ(bytes[63], 63);
    uint8_t value = 0xAB;
    OSPREY_CTS_ASSERT_OK((*buffer)->WriteData(5, &value, 1));
    EXPECT_EQ(memory[5], 0xAB);  // Not a copy.
    EXPECT_EQ(record.first, 0);
  }
  EXPECT_EQ(record.first, 1);
  EXPECT_EQ(record.second, memory);
}

TEST_P(AllocatorTest, ImportOfNullMemoryIsRejected) {
  BufferParams params;
  params.type = MemoryType::kHostLocal | MemoryType::kDeviceVisible;
  EXPECT_EQ(CodeOf(allocator()->ImportBuffer(params, nullptr, 64, {})),
            StatusCode::kInvalidArgument);
}

OSPREY_CTS_INSTANTIATE(AllocatorTest);

}  // namespace
}  // namespace osprey::hal::cts
