// Unit tests of cpu-sync specifics: registration, device params and the
// queue's wait semantics. Everything else is covered by the CTS.
#include "drivers/cpu_sync/cpu_sync_device.h"

#include <string>

#include "drivers/cpu_sync/cpu_sync_driver.h"
#include "drivers/cpu_sync/registration/driver_module.h"
#include "gtest/gtest.h"

namespace osprey::drivers::cpu_sync {
namespace {

TEST(CpuSyncDriverTest, RegistersAndCreatesDevices) {
  hal::DriverRegistry registry;
  ASSERT_TRUE(RegisterDriver(registry).ok());
  EXPECT_EQ(RegisterDriver(registry).code(), StatusCode::kAlreadyExists);
  auto device = registry.CreateDevice("cpu-sync", {}, Allocator::Default());
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_STREQ((*device)->id(), "cpu-sync");
  auto missing = registry.CreateDevice("cpu-nope", {}, Allocator::Default());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(std::string(missing.status().message()).find("cpu-sync"), std::string::npos);
}

TEST(CpuSyncDriverTest, RejectsUnknownParams) {
  auto driver = CpuSyncDriver::Create(Allocator::Default());
  ASSERT_TRUE(driver.ok());
  hal::DeviceParam params[] = {{"task_workers", "2"}};
  auto device = (*driver)->CreateDevice(params);
  EXPECT_EQ(device.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(device.status().message()).find("task_workers"), std::string::npos);
}

TEST(CpuSyncDriverTest, ParsesParams) {
  CpuSyncDeviceOptions options;
  hal::DeviceParam params[] = {{"wait_timeout_ms", "25"}, {"local_memory_size", "4096"}};
  ASSERT_TRUE(CpuSyncDevice::ParseParams(params, &options).ok());
  EXPECT_EQ(options.wait_timeout_ns, 25'000'000);
  EXPECT_EQ(options.local_memory_size, 4096u);
  hal::DeviceParam bad[] = {{"wait_timeout_ms", "-3"}};
  EXPECT_EQ(CpuSyncDevice::ParseParams(bad, &options).code(), StatusCode::kInvalidArgument);
  hal::DeviceParam bad2[] = {{"local_memory_size", "99999999999"}};
  EXPECT_EQ(CpuSyncDevice::ParseParams(bad2, &options).code(), StatusCode::kInvalidArgument);
  hal::DeviceParam bad3[] = {{"local_memory_size", ""}};
  EXPECT_EQ(CpuSyncDevice::ParseParams(bad3, &options).code(), StatusCode::kInvalidArgument);
}

TEST(CpuSyncDeviceTest, UnreachedWaitFailsSignalInsteadOfHanging) {
  CpuSyncDeviceOptions options;
  options.wait_timeout_ns = 1'000'000;
  auto device = CpuSyncDevice::Create(options, Allocator::Default());
  ASSERT_TRUE(device.ok());
  auto wait = (*device)->CreateSemaphore(0);
  auto signal = (*device)->CreateSemaphore(0);
  ASSERT_TRUE(wait.ok() && signal.ok());
  hal::Semaphore* waits[] = {wait->get()};
  hal::Semaphore* signals[] = {signal->get()};
  uint64_t one[] = {1};
  ASSERT_TRUE((*device)->QueueExecute({waits, one}, {}, {signals, one}).ok());
  auto value = (*signal)->Query();
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.status().code(), StatusCode::kDeadlineExceeded);
  // Without signal semaphores the error comes back from the call.
  Status status = (*device)->QueueExecute({waits, one}, {}, {});
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded);
}

TEST(CpuSyncDeviceTest, SignalMustAdvance) {
  auto device = CpuSyncDevice::Create({}, Allocator::Default());
  ASSERT_TRUE(device.ok());
  auto signal = (*device)->CreateSemaphore(5);
  ASSERT_TRUE(signal.ok());
  hal::Semaphore* signals[] = {signal->get()};
  uint64_t five[] = {5};
  EXPECT_EQ((*device)->QueueExecute({}, {}, {signals, five}).code(),
            StatusCode::kInvalidArgument);
  uint64_t six[] = {6};
  EXPECT_TRUE((*device)->QueueExecute({}, {}, {signals, six}).ok());
  EXPECT_EQ(*(*signal)->Query(), 6u);
}

}  // namespace
}  // namespace osprey::drivers::cpu_sync
