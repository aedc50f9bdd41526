// The null driver fails cleanly: every operation returns UNIMPLEMENTED with
// a message, nothing crashes.
#include "drivers/null/null_device.h"

#include <string>

#include "drivers/null/registration/driver_module.h"
#include "gtest/gtest.h"

namespace osprey::drivers::null {
namespace {

class NullDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterDriver(registry_).ok());
    auto device = registry_.CreateDevice("null", {}, Allocator::Default());
    ASSERT_TRUE(device.ok()) << device.status().message();
    device_ = std::move(*device);
  }
  hal::DriverRegistry registry_;
  ref_ptr<hal::Device> device_;
};

void ExpectUnimplemented(const Status& status) {
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(std::string(status.message()).find("not implemented"), std::string::npos)
      << status.message();
}

TEST_F(NullDriverTest, DeviceIdentity) {
  EXPECT_STREQ(device_->id(), "null");
  EXPECT_NE(device_->allocator(), nullptr);
  EXPECT_EQ(RegisterDriver(registry_).code(), StatusCode::kAlreadyExists);
}

TEST_F(NullDriverTest, RejectsParams) {
  hal::DeviceParam params[] = {{"x", "1"}};
  EXPECT_EQ(registry_.CreateDevice("null", params, Allocator::Default()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(NullDriverTest, AllocatorIsUnimplemented) {
  hal::BufferParams params;
  EXPECT_EQ(device_->allocator()->QueryCompatibility(&params, 16), hal::BufferCompatibility::kNone);
  ExpectUnimplemented(device_->allocator()->AllocateBuffer(params, 16).status());
  char memory[16];
  ExpectUnimplemented(device_->allocator()->ImportBuffer(params, memory, 16, {}).status());
}

TEST_F(NullDriverTest, CommandsAreUnimplementedAfterValidation) {
  auto command_buffer = device_->CreateCommandBuffer(hal::CommandBufferMode::kDefault);
  ASSERT_TRUE(command_buffer.ok());
  ASSERT_TRUE((*command_buffer)->Begin().ok());
  ExpectUnimplemented((*command_buffer)->ExecutionBarrier());
  // Validation still runs first: a null buffer is a bad argument.
  uint32_t pattern = 0;
  EXPECT_EQ((*command_buffer)->FillBuffer({}, &pattern, 4).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*command_buffer)->End().ok());
  hal::CommandBuffer* buffers[] = {command_buffer->get()};
  ExpectUnimplemented(device_->QueueExecute({}, buffers, {}));
}

TEST_F(NullDriverTest, SemaphoresAreUnimplemented) {
  auto semaphore = device_->CreateSemaphore(0);
  ASSERT_TRUE(semaphore.ok());
  ExpectUnimplemented((*semaphore)->Query().status());
  ExpectUnimplemented((*semaphore)->Signal(1));
  ExpectUnimplemented((*semaphore)->Wait(1, 0));
  (*semaphore)->Fail(InternalError("ignored"));
}

TEST_F(NullDriverTest, ExecutablesAreUnimplemented) {
  auto cache = device_->CreateExecutableCache();
  ASSERT_TRUE(cache.ok());
  EXPECT_FALSE((*cache)->CanPrepareFormat("static"));
  hal::ExecutableParams params;
  params.format = "static";
  ExpectUnimplemented((*cache)->PrepareExecutable(params).status());
}

}  // namespace
}  // namespace osprey::drivers::null
