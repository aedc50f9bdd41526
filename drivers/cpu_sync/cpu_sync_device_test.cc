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

// The loader set is the device creator's choice: static-only devices refuse
// every other format, default devices offer each loader of the build.
TEST(CpuSyncDeviceTest, LoaderSetIsChosenByTheCreator) {
  osprey::Allocator* allocator = osprey::Allocator::Default();
  auto all = hal::local::DefaultLoaderSet::Create(nullptr, allocator);
  ASSERT_TRUE(all.ok()) << all.status().message();
  auto static_only = hal::local::DefaultLoaderSet::CreateStaticOnly(nullptr, allocator);
  ASSERT_TRUE(static_only.ok()) << static_only.status().message();
  ASSERT_EQ((*static_only)->loaders().size(), 1u);
  EXPECT_STREQ((*static_only)->loaders()[0]->name(), "static");
  ASSERT_GE((*all)->loaders().size(), 1u);
  EXPECT_STREQ((*all)->loaders()[0]->name(), "static");
  bool all_has_elf = false;
  for (hal::local::ExecutableLoader* loader : (*all)->loaders()) {
    all_has_elf = all_has_elf || std::string(loader->name()) == "elf";
  }

  CpuSyncDeviceOptions options;
  options.local_memory_size = 0;
  auto default_device = CpuSyncDevice::Create(options, allocator);
  ASSERT_TRUE(default_device.ok()) << default_device.status().message();
  auto static_device = CpuSyncDevice::CreateWithLoaders(
      options, &hal::local::DefaultLoaderSet::CreateStaticOnly, allocator);
  ASSERT_TRUE(static_device.ok()) << static_device.status().message();

  auto default_cache = (*default_device)->CreateExecutableCache();
  ASSERT_TRUE(default_cache.ok());
  auto static_cache = (*static_device)->CreateExecutableCache();
  ASSERT_TRUE(static_cache.ok());
  EXPECT_TRUE((*static_cache)->CanPrepareFormat("static"));
  EXPECT_TRUE((*default_cache)->CanPrepareFormat("static"));
  bool default_takes_host_elf = false;
  for (const char* format : {"elf-x86_64", "elf-aarch64", "elf-armv7em", "elf-riscv32"}) {
    EXPECT_FALSE((*static_cache)->CanPrepareFormat(format)) << format;
    default_takes_host_elf = default_takes_host_elf || (*default_cache)->CanPrepareFormat(format);
  }
  EXPECT_EQ(default_takes_host_elf, all_has_elf);

  uint8_t bytes[4] = {0x7f, 'E', 'L', 'F'};
  hal::ExecutableParams params;
  params.format = "elf-x86_64";
  params.data = bytes;
  auto refused = (*static_cache)->PrepareExecutable(params);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(std::string(refused.status().message()).find("loaders: static"), std::string::npos)
      << refused.status().message();
}

TEST(CpuSyncDeviceTest, RejectsMissingLoaderFactory) {
  CpuSyncDeviceOptions options;
  auto device = CpuSyncDevice::CreateWithLoaders(options, nullptr, osprey::Allocator::Default());
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kInvalidArgument);
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
