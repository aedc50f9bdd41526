// CTS: command buffer state machine, command validation and retention.
#include "hal/cts/cts_test_base.h"

namespace osprey::hal::cts {
namespace {

class CommandBufferTest : public CtsTest {};

TEST_P(CommandBufferTest, StateMachine) {
  auto command_buffer = device()->CreateCommandBuffer(CommandBufferMode::kDefault);
  OSPREY_CTS_ASSERT_OK(command_buffer);
  CommandBuffer* cb = command_buffer->get();
  EXPECT_EQ(cb->state(), CommandBuffer::State::kInitial);
  EXPECT_EQ(cb->ExecutionBarrier().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cb->End().code(), StatusCode::kFailedPrecondition);
  OSPREY_CTS_ASSERT_OK(cb->Begin());
  EXPECT_EQ(cb->state(), CommandBuffer::State::kRecording);
  EXPECT_EQ(cb->Begin().code(), StatusCode::kFailedPrecondition);
  OSPREY_CTS_ASSERT_OK(cb->End());
  EXPECT_EQ(cb->state(), CommandBuffer::State::kExecutable);
  EXPECT_EQ(cb->ExecutionBarrier().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cb->End().code(), StatusCode::kFailedPrecondition);
}

TEST_P(CommandBufferTest, SubmittingBeforeEndIsRejected) {
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  CommandBuffer* buffers[] = {cb->get()};
  EXPECT_EQ(device()->QueueExecute({}, buffers, {}).code(), StatusCode::kFailedPrecondition);
}

TEST_P(CommandBufferTest, OneShotCanBeSubmittedOnce) {
  auto cb = BeginCommandBuffer(CommandBufferMode::kOneShot);
  OSPREY_CTS_ASSERT_OK(cb);
  EXPECT_EQ((*cb)->mode(), CommandBufferMode::kOneShot);
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  CommandBuffer* buffers[] = {cb->get()};
  EXPECT_EQ(device()->QueueExecute({}, buffers, {}).code(), StatusCode::kFailedPrecondition);
}

TEST_P(CommandBufferTest, ReusableCanBeSubmittedAgain) {
  auto buffer = Allocate(16);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint8_t pattern = 0x11;
  OSPREY_CTS_ASSERT_OK((*cb)->FillBuffer({buffer->get(), 0, kWholeBuffer}, &pattern, 1));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  uint8_t zero[16] = {};
  OSPREY_CTS_ASSERT_OK((*buffer)->WriteData(0, zero, 16));
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
  EXPECT_EQ(ReadAll(buffer->get())[15], 0x11);
}

TEST_P(CommandBufferTest, NullCommandBufferIsRejected) {
  CommandBuffer* buffers[] = {nullptr};
  EXPECT_EQ(device()->QueueExecute({}, buffers, {}).code(), StatusCode::kInvalidArgument);
}

TEST_P(CommandBufferTest, FillRejectsBadPatterns) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t pattern = 0;
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 0, 64}, &pattern, 3).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 0, 64}, &pattern, 8).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 0, 64}, nullptr, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 2, 8}, &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 4, 6}, &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 1, 4}, &pattern, 2).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->FillBuffer({nullptr, 0, 4}, &pattern, 4).code(),
            StatusCode::kInvalidArgument);
  OSPREY_CTS_EXPECT_OK((*cb)->FillBuffer({buffer->get(), 3, 5}, &pattern, 1));
}

TEST_P(CommandBufferTest, FillRejectsOutOfRange) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t pattern = 0;
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 60, 8}, &pattern, 4).code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 68, kWholeBuffer}, &pattern, 4).code(),
            StatusCode::kOutOfRange);
}

TEST_P(CommandBufferTest, FillOfReadOnlyBufferIsDenied) {
  auto buffer = Allocate(64, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kRead);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t pattern = 0;
  Status status = (*cb)->FillBuffer({buffer->get(), 0, 64}, &pattern, 4);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << StatusText(status);
  EXPECT_NE(std::string(status.message()).find("read-only"), std::string::npos);
}

TEST_P(CommandBufferTest, TransferWithoutTransferUsageIsDenied) {
  auto buffer = Allocate(64, BufferUsage::kDispatchStorage | BufferUsage::kMapping);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto other = Allocate(64);
  OSPREY_CTS_ASSERT_OK(other);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t pattern = 0;
  EXPECT_EQ((*cb)->FillBuffer({buffer->get(), 0, 64}, &pattern, 4).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ((*cb)->UpdateBuffer(&pattern, {buffer->get(), 0, 4}).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ((*cb)->CopyBuffer({buffer->get(), 0, 64}, {other->get(), 0, 64}).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ((*cb)->CopyBuffer({other->get(), 0, 64}, {buffer->get(), 0, 64}).code(),
            StatusCode::kPermissionDenied);
}

TEST_P(CommandBufferTest, HostOnlyMemoryCannotBeUsedByCommands) {
  auto buffer = Allocate(64, BufferUsage::kDefault, MemoryType::kHostLocal);
  OSPREY_CTS_ASSERT_OK(buffer);
  EXPECT_FALSE(AnyBitSet((*buffer)->memory_type(), MemoryType::kDeviceVisible));
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t pattern = 0;
  Status status = (*cb)->FillBuffer({buffer->get(), 0, 64}, &pattern, 4);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << StatusText(status);
  EXPECT_NE(std::string(status.message()).find("device-visible"), std::string::npos);
}

TEST_P(CommandBufferTest, UpdateLimits) {
  auto buffer = Allocate(CommandBuffer::kMaxUpdateLength + 16);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  std::vector<uint8_t> data(CommandBuffer::kMaxUpdateLength + 16);
  EXPECT_EQ((*cb)->UpdateBuffer(data.data(), {buffer->get(), 0, kWholeBuffer}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->UpdateBuffer(nullptr, {buffer->get(), 0, 4}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->UpdateBuffer(data.data(), {buffer->get(), 16, CommandBuffer::kMaxUpdateLength + 1})
                .code(),
            StatusCode::kOutOfRange);
  OSPREY_CTS_EXPECT_OK(
      (*cb)->UpdateBuffer(data.data(), {buffer->get(), 16, CommandBuffer::kMaxUpdateLength}));
}

TEST_P(CommandBufferTest, CopyRejectsOverlapAndMismatch) {
  auto buffer = Allocate(64);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto other = Allocate(16);
  OSPREY_CTS_ASSERT_OK(other);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  EXPECT_EQ((*cb)->CopyBuffer({buffer->get(), 0, 32}, {buffer->get(), 16, 32}).code(),
            StatusCode::kInvalidArgument);
  // Overlap through a subspan is still overlap.
  auto subspan = Buffer::Subspan(*buffer, 8, 32);
  OSPREY_CTS_ASSERT_OK(subspan);
  EXPECT_EQ((*cb)->CopyBuffer({buffer->get(), 0, 16}, {subspan->get(), 0, 16}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->CopyBuffer({buffer->get(), 0, 8}, {other->get(), 0, 4}).code(),
            StatusCode::kInvalidArgument);
  // A whole-buffer target must have room for the source.
  EXPECT_EQ((*cb)->CopyBuffer({buffer->get(), 0, 32}, {other->get(), 0, kWholeBuffer}).code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ((*cb)->CopyBuffer({buffer->get(), 60, 8}, {other->get(), 0, 8}).code(),
            StatusCode::kOutOfRange);
  OSPREY_CTS_EXPECT_OK((*cb)->CopyBuffer({buffer->get(), 0, 16}, {buffer->get(), 16, 16}));
  OSPREY_CTS_EXPECT_OK((*cb)->CopyBuffer({buffer->get(), 0, 16}, {other->get(), 0, kWholeBuffer}));
}

TEST_P(CommandBufferTest, CopyFromWriteOnlySourceIsDenied) {
  auto source = Allocate(16, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kWrite);
  OSPREY_CTS_ASSERT_OK(source);
  auto target = Allocate(16);
  OSPREY_CTS_ASSERT_OK(target);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  EXPECT_EQ((*cb)->CopyBuffer({source->get(), 0, 16}, {target->get(), 0, 16}).code(),
            StatusCode::kPermissionDenied);
}

TEST_P(CommandBufferTest, CommandsRetainTheirBuffers) {
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  Buffer* raw = nullptr;
  {
    auto buffer = Allocate(16);
    OSPREY_CTS_ASSERT_OK(buffer);
    raw = buffer->get();
    uint32_t pattern = 0x01020304;
    OSPREY_CTS_ASSERT_OK((*cb)->FillBuffer({raw, 0, 16}, &pattern, 4));
    EXPECT_GT(raw->ref_count(), 1u);
  }
  // Only the command buffer holds it now; executing must still work.
  EXPECT_EQ(raw->ref_count(), 1u);
  OSPREY_CTS_ASSERT_OK(SubmitAndWait(cb->get()));
}

//===----------------------------------------------------------------------===//
// Dispatch validation
//===----------------------------------------------------------------------===//

class DispatchValidationTest : public CtsTest {
 protected:
  void SetUp() override {
    CtsTest::SetUp();
    if (HasFailure()) return;
    if (!HasCapability(kCapabilityCpuKernels)) {
      GTEST_SKIP() << "backend does not run the CTS CPU kernels";
    }
    auto executable = LoadKernels();
    ASSERT_TRUE(executable.ok()) << StatusText(executable);
    executable_ = std::move(*executable);
    axpb_ = Export(executable_.get(), "axpb");
  }
  ref_ptr<Executable> executable_;
  uint32_t axpb_ = 0;
  uint32_t constants_[3] = {FloatBits(2.0f), FloatBits(1.0f), 4};
};

TEST_P(DispatchValidationTest, CountsMustMatchExport) {
  auto x = Allocate(16);
  auto y = Allocate(16);
  OSPREY_CTS_ASSERT_OK(x);
  OSPREY_CTS_ASSERT_OK(y);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{x->get(), 0, 16}, {y->get(), 0, 16}};
  Status status = (*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1},
                                  std::span<const uint32_t>(constants_, 2), bindings);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(status.message()).find("axpb"), std::string::npos) << StatusText(status);
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_,
                            std::span<const BufferRef>(bindings, 1))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), 99, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->Dispatch(nullptr, 0, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {65536, 65536, 2}, constants_, bindings)
                .code(),
            StatusCode::kInvalidArgument);
  OSPREY_CTS_EXPECT_OK((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings));
}

TEST_P(DispatchValidationTest, WrittenBindingMustBeWritable) {
  auto x = Allocate(16);
  auto y = Allocate(64, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kRead);
  OSPREY_CTS_ASSERT_OK(x);
  OSPREY_CTS_ASSERT_OK(y);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{x->get(), 0, 16}, {y->get(), 0, 16}};
  Status status = (*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(status.message())
                .find("binding 1 of export 'axpb' (buffer of 64 bytes) is read-only but the "
                      "export writes it"),
            std::string::npos)
      << StatusText(status);
}

TEST_P(DispatchValidationTest, WriteOnlyBufferCanBeDispatchOutput) {
  float x[4] = {1, 2, 3, 4};
  auto xb = AllocateWith(x, sizeof(x));
  auto y = Allocate(16, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kWrite);
  OSPREY_CTS_ASSERT_OK(xb);
  OSPREY_CTS_ASSERT_OK(y);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{xb->get(), 0, 16}, {y->get(), 0, 16}};
  OSPREY_CTS_ASSERT_OK(
      (*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings));
  OSPREY_CTS_EXPECT_OK(SubmitAndWait(cb->get()));
}

TEST_P(DispatchValidationTest, WrittenBindingNeedsStorageWriteUsage) {
  auto x = Allocate(16);
  auto y = Allocate(16, BufferUsage::kDispatchStorageRead | BufferUsage::kMapping);
  OSPREY_CTS_ASSERT_OK(x);
  OSPREY_CTS_ASSERT_OK(y);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{x->get(), 0, 16}, {y->get(), 0, 16}};
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kPermissionDenied);
}

TEST_P(DispatchValidationTest, ReadBindingNeedsReadUsageAndAccess) {
  auto y = Allocate(16);
  OSPREY_CTS_ASSERT_OK(y);
  auto no_usage = Allocate(16, BufferUsage::kTransfer | BufferUsage::kMapping);
  OSPREY_CTS_ASSERT_OK(no_usage);
  auto write_only =
      Allocate(16, BufferUsage::kDefault, MemoryType::kOptimal, MemoryAccess::kWrite);
  OSPREY_CTS_ASSERT_OK(write_only);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{no_usage->get(), 0, 16}, {y->get(), 0, 16}};
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kPermissionDenied);
  bindings[0] = {write_only->get(), 0, 16};
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kPermissionDenied);
}

TEST_P(DispatchValidationTest, BindingMustBeDeviceVisible) {
  auto x = Allocate(16, BufferUsage::kDefault, MemoryType::kHostLocal);
  auto y = Allocate(16);
  OSPREY_CTS_ASSERT_OK(x);
  OSPREY_CTS_ASSERT_OK(y);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{x->get(), 0, 16}, {y->get(), 0, 16}};
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kPermissionDenied);
}

TEST_P(DispatchValidationTest, BindingRangeMustFit) {
  auto x = Allocate(16);
  auto y = Allocate(16);
  OSPREY_CTS_ASSERT_OK(x);
  OSPREY_CTS_ASSERT_OK(y);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{x->get(), 8, 16}, {y->get(), 0, 16}};
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kOutOfRange);
  bindings[0] = {nullptr, 0, 16};
  EXPECT_EQ((*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings).code(),
            StatusCode::kInvalidArgument);
}

TEST_P(DispatchValidationTest, DispatchRetainsExecutable) {
  auto x = Allocate(16);
  auto y = Allocate(16);
  OSPREY_CTS_ASSERT_OK(x);
  OSPREY_CTS_ASSERT_OK(y);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  BufferRef bindings[] = {{x->get(), 0, 16}, {y->get(), 0, 16}};
  OSPREY_CTS_ASSERT_OK(
      (*cb)->Dispatch(executable_.get(), axpb_, {1, 1, 1}, constants_, bindings));
  Executable* raw = executable_.get();
  executable_.reset();
  EXPECT_EQ(raw->ref_count(), 1u);
  OSPREY_CTS_EXPECT_OK(SubmitAndWait(cb->get()));
}

OSPREY_CTS_INSTANTIATE(CommandBufferTest);
OSPREY_CTS_INSTANTIATE(DispatchValidationTest);

}  // namespace
}  // namespace osprey::hal::cts
