// CTS: fill, update and copy results, including subspans and every fill
// pattern size.
#include "hal/cts/cts_test_base.h"

namespace osprey::hal::cts {
namespace {

class TransferTest : public CtsTest {
 protected:
  ref_ptr<Buffer> Zeroed(DeviceSize length) {
    std::vector<uint8_t> zeros(size_t(length), 0);
    auto buffer = AllocateWith(zeros.data(), length);
    EXPECT_TRUE(buffer.ok()) << StatusText(buffer);
    return buffer.ok() ? std::move(*buffer) : nullptr;
  }
};

struct FillCase {
  size_t pattern_length;
  DeviceSize offset;
  DeviceSize length;
};

TEST_P(TransferTest, FillEveryPatternSize) {
  const FillCase cases[] = {
      {1, 0, kWholeBuffer}, {1, 3, 7},  {2, 0, kWholeBuffer},
      {2, 6, 10},           {4, 0, 64}, {4, 12, 40},
  };
  const uint8_t pattern_bytes[4] = {0xA1, 0xB2, 0xC3, 0xD4};
  for (const FillCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "pattern " << c.pattern_length << " offset " << c.offset
                                    << " length " << c.length);
    ref_ptr<Buffer> buffer = Zeroed(64);
    ASSERT_TRUE(buffer);
    auto cb = BeginCommandBuffer();
    OSPREY_CTS_ASSERT_OK(cb);
    OSPREY_CTS_ASSERT_OK(
        (*cb)->FillBuffer({buffer.get(), c.offset, c.length}, pattern_bytes, c.pattern_length));
    OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
    std::vector<uint8_t> bytes = ReadAll(buffer.get());
    const DeviceSize end = c.length == kWholeBuffer ? 64 : c.offset + c.length;
    for (DeviceSize i = 0; i < 64; ++i) {
      const uint8_t expected =
          i >= c.offset && i < end ? pattern_bytes[(i - c.offset) % c.pattern_length] : 0;
      ASSERT_EQ(bytes[i], expected) << "byte " << i;
    }
  }
}

TEST_P(TransferTest, FillSubspan) {
  ref_ptr<Buffer> buffer = Zeroed(32);
  ASSERT_TRUE(buffer);
  auto subspan = Buffer::Subspan(buffer, 8, 16);
  OSPREY_CTS_ASSERT_OK(subspan);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint16_t pattern = 0x7F7F;
  OSPREY_CTS_ASSERT_OK((*cb)->FillBuffer({subspan->get(), 4, kWholeBuffer}, &pattern, 2));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<uint8_t> bytes = ReadAll(buffer.get());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(bytes[i], (i >= 12 && i < 24) ? 0x7F : 0) << i;
}

TEST_P(TransferTest, UpdateCopiesAtRecordTime) {
  ref_ptr<Buffer> buffer = Zeroed(16);
  ASSERT_TRUE(buffer);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  OSPREY_CTS_ASSERT_OK((*cb)->UpdateBuffer(data, {buffer.get(), 4, 8}));
  memset(data, 0xEE, sizeof(data));  // Must not affect the recorded command.
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<uint8_t> expected = {0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0};
  EXPECT_EQ(ReadAll(buffer.get()), expected);
}

TEST_P(TransferTest, UpdateSubspan) {
  ref_ptr<Buffer> buffer = Zeroed(16);
  ASSERT_TRUE(buffer);
  auto subspan = Buffer::Subspan(buffer, 10, 6);
  OSPREY_CTS_ASSERT_OK(subspan);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint8_t data[3] = {9, 8, 7};
  OSPREY_CTS_ASSERT_OK((*cb)->UpdateBuffer(data, {subspan->get(), 3, kWholeBuffer}));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<uint8_t> bytes = ReadAll(buffer.get());
  EXPECT_EQ(bytes[12], 0);
  EXPECT_EQ(bytes[13], 9);
  EXPECT_EQ(bytes[15], 7);
}

TEST_P(TransferTest, CopyBetweenBuffers) {
  std::vector<uint8_t> data(40);
  for (int i = 0; i < 40; ++i) data[i] = uint8_t(i * 3);
  auto source = AllocateWith(data.data(), 40);
  OSPREY_CTS_ASSERT_OK(source);
  ref_ptr<Buffer> target = Zeroed(40);
  ASSERT_TRUE(target);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  OSPREY_CTS_ASSERT_OK((*cb)->CopyBuffer({source->get(), 0, kWholeBuffer}, {target.get(), 0, 40}));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  EXPECT_EQ(ReadAll(target.get()), data);
}

TEST_P(TransferTest, CopyWithinOneBufferAndSubspans) {
  std::vector<uint8_t> data(32);
  for (int i = 0; i < 32; ++i) data[i] = uint8_t(i + 1);
  auto buffer = AllocateWith(data.data(), 32);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto low = Buffer::Subspan(*buffer, 0, 16);
  auto high = Buffer::Subspan(*buffer, 16, 16);
  OSPREY_CTS_ASSERT_OK(low);
  OSPREY_CTS_ASSERT_OK(high);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  OSPREY_CTS_ASSERT_OK((*cb)->CopyBuffer({low->get(), 2, 4}, {high->get(), 8, kWholeBuffer}));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  std::vector<uint8_t> bytes = ReadAll(buffer->get());
  EXPECT_EQ(bytes[24], 3);
  EXPECT_EQ(bytes[27], 6);
  EXPECT_EQ(bytes[28], 29);  // Untouched.
  EXPECT_EQ(bytes[23], 24);  // Untouched.
}

TEST_P(TransferTest, CommandsRunInOrderAcrossBarriers) {
  ref_ptr<Buffer> a = Zeroed(16);
  ref_ptr<Buffer> b = Zeroed(16);
  ASSERT_TRUE(a && b);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t first = 0x11111111, second = 0x22222222;
  OSPREY_CTS_ASSERT_OK((*cb)->FillBuffer({a.get(), 0, 16}, &first, 4));
  OSPREY_CTS_ASSERT_OK((*cb)->ExecutionBarrier());
  OSPREY_CTS_ASSERT_OK((*cb)->CopyBuffer({a.get(), 0, 16}, {b.get(), 0, 16}));
  OSPREY_CTS_ASSERT_OK((*cb)->ExecutionBarrier());
  OSPREY_CTS_ASSERT_OK((*cb)->FillBuffer({a.get(), 0, 8}, &second, 4));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  EXPECT_EQ(ReadAs<uint32_t>(b.get()), std::vector<uint32_t>(4, first));
  std::vector<uint32_t> expected_a = {second, second, first, first};
  EXPECT_EQ(ReadAs<uint32_t>(a.get()), expected_a);
}

TEST_P(TransferTest, SeveralCommandBuffersRunInOrder) {
  ref_ptr<Buffer> a = Zeroed(4);
  ASSERT_TRUE(a);
  auto cb1 = BeginCommandBuffer();
  auto cb2 = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb1);
  OSPREY_CTS_ASSERT_OK(cb2);
  uint32_t one = 1, two = 2;
  OSPREY_CTS_ASSERT_OK((*cb1)->UpdateBuffer(&one, {a.get(), 0, 4}));
  OSPREY_CTS_ASSERT_OK((*cb2)->UpdateBuffer(&two, {a.get(), 0, 4}));
  OSPREY_CTS_ASSERT_OK((*cb1)->End());
  OSPREY_CTS_ASSERT_OK((*cb2)->End());
  auto semaphore = device()->CreateSemaphore(0);
  OSPREY_CTS_ASSERT_OK(semaphore);
  Semaphore* signal[] = {semaphore->get()};
  uint64_t values[] = {1};
  CommandBuffer* buffers[] = {cb1->get(), cb2->get()};
  OSPREY_CTS_ASSERT_OK(device()->QueueExecute({}, buffers, {signal, values}));
  OSPREY_CTS_ASSERT_OK((*semaphore)->Wait(1, DeadlineInMs(10000)));
  EXPECT_EQ(ReadAs<uint32_t>(a.get())[0], 2u);
}

OSPREY_CTS_INSTANTIATE(TransferTest);

}  // namespace
}  // namespace osprey::hal::cts
