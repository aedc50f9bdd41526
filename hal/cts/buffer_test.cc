// CTS: host mapping, its permission rules, subspans and buffer views.
#include "hal/cts/cts_test_base.h"

namespace osprey::hal::cts {
namespace {

class BufferTest : public CtsTest {};

TEST_P(BufferTest, WriteThenReadRoundTrips) {
  auto buffer = Allocate(256);
  OSPREY_CTS_ASSERT_OK(buffer);
  std::vector<uint8_t> data(256);
  for (int i = 0; i < 256; ++i) data[i] = uint8_t(255 - i);
  OSPREY_CTS_ASSERT_OK((*buffer)->WriteData(0, data.data(), 256));
  EXPECT_EQ(ReadAll(buffer->get()), data);
  uint8_t middle[4];
  OSPREY_CTS_ASSERT_OK((*buffer)->ReadData(100, middle, 4));
  EXPECT_EQ(middle[0], 155);
  EXPECT_EQ(middle[3], 152);
}

TEST_P(BufferTest, MappingGivesContentsWithinRange) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  OSPREY_CTS_ASSERT_OK((*buffer)->MapRange(MemoryAccess::kRead | MemoryAccess::kWrite, 16,
                                           kWholeBuffer, &mapping));
  EXPECT_TRUE(mapping.mapped());
  EXPECT_EQ(mapping.byte_length(), 48u);
  auto contents = mapping.MutableContents();
  OSPREY_CTS_ASSERT_OK(contents);
  (*contents)[0] = 0x5A;
  mapping.Unmap();
  EXPECT_FALSE(mapping.mapped());
  EXPECT_EQ(ReadAll(buffer->get(), 16, 1)[0], 0x5A);
}

TEST_P(BufferTest, MappingKeepsBufferAlive) {
  MappedMemory mapping;
  {
    auto buffer = Allocate(32);
    OSPREY_CTS_ASSERT_OK(buffer);
    OSPREY_CTS_ASSERT_OK((*buffer)->MapRange(MemoryAccess::kWrite, 0, 32, &mapping));
  }
  uint32_t value = 7;
  OSPREY_CTS_EXPECT_OK(mapping.Write(28, &value, 4));
}

TEST_P(BufferTest, MoveTransfersMapping) {
  auto buffer = Allocate(32);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory a;
  OSPREY_CTS_ASSERT_OK((*buffer)->MapRange(MemoryAccess::kRead, 0, 32, &a));
  MappedMemory b = std::move(a);
  EXPECT_FALSE(a.mapped());
  EXPECT_TRUE(b.mapped());
  EXPECT_EQ(b.byte_length(), 32u);
}

TEST_P(BufferTest, DeviceLocalBufferCannotBeMapped) {
  auto buffer = Allocate(64, BufferUsage::kTransfer | BufferUsage::kDispatchStorage,
                         MemoryType::kDeviceLocal);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  Status status = (*buffer)->MapRange(MemoryAccess::kRead, 0, kWholeBuffer, &mapping);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << StatusText(status);
  EXPECT_NE(std::string(status.message()).find("host-visible"), std::string::npos);
  uint8_t byte;
  EXPECT_EQ((*buffer)->ReadData(0, &byte, 1).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ((*buffer)->WriteData(0, &byte, 1).code(), StatusCode::kPermissionDenied);
}

TEST_P(BufferTest, BufferWithoutMappingUsageCannotBeMapped) {
  auto buffer = Allocate(64, BufferUsage::kTransfer, MemoryType::kHostLocal | MemoryType::kDeviceVisible);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  Status status = (*buffer)->MapRange(MemoryAccess::kRead, 0, kWholeBuffer, &mapping);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << StatusText(status);
  EXPECT_NE(std::string(status.message()).find("mapping usage"), std::string::npos);
}

TEST_P(BufferTest, ReadOnlyBufferCannotBeMappedForWrite) {
  auto buffer = Allocate(64, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kRead);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  EXPECT_EQ((*buffer)->MapRange(MemoryAccess::kWrite, 0, 64, &mapping).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ((*buffer)->MapRange(MemoryAccess::kDiscardWrite, 0, 64, &mapping).code(),
            StatusCode::kPermissionDenied);
  OSPREY_CTS_EXPECT_OK((*buffer)->MapRange(MemoryAccess::kRead, 0, 64, &mapping));
}

TEST_P(BufferTest, WriteOnlyBufferCannotBeMappedForRead) {
  auto buffer = Allocate(64, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kWrite);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  EXPECT_EQ((*buffer)->MapRange(MemoryAccess::kRead, 0, 64, &mapping).code(),
            StatusCode::kPermissionDenied);
  OSPREY_CTS_EXPECT_OK((*buffer)->MapRange(MemoryAccess::kWrite, 0, 64, &mapping));
}

TEST_P(BufferTest, WriteOnlyMappingCannotBeRead) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  OSPREY_CTS_ASSERT_OK((*buffer)->MapRange(MemoryAccess::kWrite, 0, 64, &mapping));
  EXPECT_EQ(CodeOf(mapping.Contents()), StatusCode::kPermissionDenied);
  uint8_t byte;
  EXPECT_EQ(mapping.Read(0, &byte, 1).code(), StatusCode::kPermissionDenied);
  OSPREY_CTS_EXPECT_OK(mapping.MutableContents());
}

TEST_P(BufferTest, ReadOnlyMappingCannotBeWritten) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  OSPREY_CTS_ASSERT_OK((*buffer)->MapRange(MemoryAccess::kRead, 0, 64, &mapping));
  EXPECT_EQ(CodeOf(mapping.MutableContents()), StatusCode::kPermissionDenied);
  uint8_t byte = 1;
  EXPECT_EQ(mapping.Write(0, &byte, 1).code(), StatusCode::kPermissionDenied);
  OSPREY_CTS_EXPECT_OK(mapping.Contents());
}

TEST_P(BufferTest, MappingNeedsReadOrWrite) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  EXPECT_EQ((*buffer)->MapRange(MemoryAccess::kNone, 0, 64, &mapping).code(),
            StatusCode::kInvalidArgument);
}

TEST_P(BufferTest, MappingOutOfRangeIsRejected) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  MappedMemory mapping;
  EXPECT_EQ((*buffer)->MapRange(MemoryAccess::kRead, 60, 8, &mapping).code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ((*buffer)->MapRange(MemoryAccess::kRead, 65, kWholeBuffer, &mapping).code(),
            StatusCode::kOutOfRange);
  // Offsets near 2^64 must not wrap around.
  EXPECT_EQ((*buffer)->MapRange(MemoryAccess::kRead, 8, ~DeviceSize(0) - 4, &mapping).code(),
            StatusCode::kOutOfRange);
  OSPREY_CTS_ASSERT_OK((*buffer)->MapRange(MemoryAccess::kRead | MemoryAccess::kWrite, 8, 16,
                                           &mapping));
  uint8_t bytes[32];
  EXPECT_EQ(mapping.Read(10, bytes, 8).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(mapping.Write(17, bytes, 0).code(), StatusCode::kOutOfRange);
  OSPREY_CTS_EXPECT_OK(mapping.Read(8, bytes, 8));
}

TEST_P(BufferTest, CalculateRangeResolvesWholeBuffer) {
  auto buffer = Allocate(100);
  OSPREY_CTS_ASSERT_OK(buffer);
  DeviceSize offset = 0, length = 0;
  OSPREY_CTS_ASSERT_OK((*buffer)->CalculateRange(30, kWholeBuffer, &offset, &length));
  EXPECT_EQ(offset, 30u);
  EXPECT_EQ(length, 70u);
  OSPREY_CTS_ASSERT_OK((*buffer)->CalculateRange(100, 0, &offset, &length));
  EXPECT_EQ(length, 0u);
  EXPECT_EQ((*buffer)->CalculateRange(101, 0, &offset, &length).code(), StatusCode::kOutOfRange);
}

TEST_P(BufferTest, SubspanSharesMemory) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  std::vector<uint8_t> zeros(64, 0);
  OSPREY_CTS_ASSERT_OK((*buffer)->WriteData(0, zeros.data(), 64));
  auto subspan = Buffer::Subspan(*buffer, 16, 32);
  OSPREY_CTS_ASSERT_OK(subspan);
  EXPECT_EQ((*subspan)->byte_length(), 32u);
  EXPECT_EQ((*subspan)->byte_offset(), 16u);
  EXPECT_EQ((*subspan)->allocated_buffer(), buffer->get());
  EXPECT_EQ((*subspan)->memory_type(), (*buffer)->memory_type());
  uint32_t value = 0xDEADBEEF;
  OSPREY_CTS_ASSERT_OK((*subspan)->WriteData(4, &value, 4));
  uint32_t read_back = 0;
  OSPREY_CTS_ASSERT_OK((*buffer)->ReadData(20, &read_back, 4));
  EXPECT_EQ(read_back, 0xDEADBEEFu);
  // Nested subspans resolve to the allocated buffer.
  auto nested = Buffer::Subspan(*subspan, 4, 8);
  OSPREY_CTS_ASSERT_OK(nested);
  EXPECT_EQ((*nested)->byte_offset(), 20u);
  EXPECT_EQ((*nested)->allocated_buffer(), buffer->get());
  OSPREY_CTS_ASSERT_OK((*nested)->ReadData(0, &read_back, 4));
  EXPECT_EQ(read_back, 0xDEADBEEFu);
  // A subspan cannot reach past its own end.
  MappedMemory mapping;
  EXPECT_EQ((*subspan)->MapRange(MemoryAccess::kRead, 30, 4, &mapping).code(),
            StatusCode::kOutOfRange);
}

TEST_P(BufferTest, SubspanOutOfRangeIsRejected) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  EXPECT_EQ(CodeOf(Buffer::Subspan(*buffer, 60, 8)), StatusCode::kOutOfRange);
  EXPECT_EQ(CodeOf(Buffer::Subspan(nullptr, 0, 8)), StatusCode::kInvalidArgument);
  auto tail = Buffer::Subspan(*buffer, 60, kWholeBuffer);
  OSPREY_CTS_ASSERT_OK(tail);
  EXPECT_EQ((*tail)->byte_length(), 4u);
}

TEST_P(BufferTest, SubspanKeepsParentAlive) {
  ref_ptr<Buffer> subspan;
  {
    auto buffer = AllocateWith("abcdefgh", 8);
    OSPREY_CTS_ASSERT_OK(buffer);
    auto made = Buffer::Subspan(*buffer, 2, 4);
    OSPREY_CTS_ASSERT_OK(made);
    subspan = std::move(*made);
  }
  char text[5] = {};
  OSPREY_CTS_ASSERT_OK(subspan->ReadData(0, text, 4));
  EXPECT_STREQ(text, "cdef");
}

TEST_P(BufferTest, SubspanInheritsPermissions) {
  auto buffer = Allocate(64, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kRead);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto subspan = Buffer::Subspan(*buffer, 0, 32);
  OSPREY_CTS_ASSERT_OK(subspan);
  uint8_t byte = 0;
  EXPECT_EQ((*subspan)->WriteData(0, &byte, 1).code(), StatusCode::kPermissionDenied);
}

TEST_P(BufferTest, BufferViewDescribesShape) {
  auto buffer = Allocate(2 * 3 * 4);
  OSPREY_CTS_ASSERT_OK(buffer);
  int64_t shape[] = {2, 3};
  auto view = BufferView::Create(*buffer, shape, ElementType::kFloat32,
                                 Encoding::kDenseRowMajor, host_allocator());
  OSPREY_CTS_ASSERT_OK(view);
  EXPECT_EQ((*view)->rank(), 2u);
  EXPECT_EQ((*view)->dim(1), 3);
  EXPECT_EQ((*view)->element_count(), 6);
  EXPECT_EQ((*view)->byte_length(), 24u);
  EXPECT_EQ((*view)->buffer(), buffer->get());
  char text[32];
  size_t length = (*view)->FormatShape(text, sizeof(text));
  EXPECT_STREQ(text, "2x3xf32");
  EXPECT_EQ(length, 7u);
  char small[4];
  EXPECT_EQ((*view)->FormatShape(small, sizeof(small)), 7u);
  EXPECT_STREQ(small, "2x3");
}

TEST_P(BufferTest, BufferViewRejectsBadShapes) {
  auto buffer = Allocate(16);
  OSPREY_CTS_ASSERT_OK(buffer);
  int64_t too_big[] = {5};
  EXPECT_EQ(CodeOf(BufferView::Create(*buffer, too_big, ElementType::kInt32,
                                      Encoding::kDenseRowMajor, host_allocator())),
            StatusCode::kOutOfRange);
  int64_t negative[] = {2, -1};
  EXPECT_EQ(CodeOf(BufferView::Create(*buffer, negative, ElementType::kInt8,
                                      Encoding::kDenseRowMajor, host_allocator())),
            StatusCode::kInvalidArgument);
  int64_t deep[kMaxRank + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(CodeOf(BufferView::Create(*buffer, deep, ElementType::kInt8,
                                      Encoding::kDenseRowMajor, host_allocator())),
            StatusCode::kInvalidArgument);
  int64_t overflow[] = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(CodeOf(BufferView::Create(*buffer, overflow, ElementType::kInt8,
                                      Encoding::kDenseRowMajor, host_allocator())),
            StatusCode::kInvalidArgument);
  int64_t scalar_shape[] = {1};
  EXPECT_EQ(CodeOf(BufferView::Create(nullptr, scalar_shape, ElementType::kInt8,
                                      Encoding::kDenseRowMajor, host_allocator())),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(BufferView::Create(*buffer, scalar_shape, ElementType::kNone,
                                      Encoding::kDenseRowMajor, host_allocator())),
            StatusCode::kInvalidArgument);
}

OSPREY_CTS_INSTANTIATE(BufferTest);

}  // namespace
}  // namespace osprey::hal::cts
