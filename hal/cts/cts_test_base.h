// Fixture and helpers shared by the CTS suites.
#ifndef OSPREY_HAL_CTS_CTS_TEST_BASE_H_
#define OSPREY_HAL_CTS_CTS_TEST_BASE_H_

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/api.h"
#include "hal/cts/cts_backend.h"
#include "hal/cts/kernels/cts_kernels.h"
#include "runtime/base/platform/platform.h"

namespace osprey::hal::cts {

// Fails the test with the status text unless |expr| (Status or StatusOr) is OK.
#define OSPREY_CTS_ASSERT_OK(expr)                                           \
  do {                                                                       \
    const auto& osprey_cts_result_ = (expr);                                 \
    ASSERT_TRUE(::osprey::hal::cts::IsOk(osprey_cts_result_))                \
        << #expr << ": " << ::osprey::hal::cts::StatusText(osprey_cts_result_); \
  } while (false)
#define OSPREY_CTS_EXPECT_OK(expr)                                           \
  do {                                                                       \
    const auto& osprey_cts_result_ = (expr);                                 \
    EXPECT_TRUE(::osprey::hal::cts::IsOk(osprey_cts_result_))                \
        << #expr << ": " << ::osprey::hal::cts::StatusText(osprey_cts_result_); \
  } while (false)

inline bool IsOk(const Status& status) { return status.ok(); }
template <typename T>
bool IsOk(const StatusOr<T>& status_or) { return status_or.ok(); }
std::string StatusText(const Status& status);
template <typename T>
std::string StatusText(const StatusOr<T>& status_or) { return StatusText(status_or.status()); }
inline StatusCode CodeOf(const Status& status) { return status.code(); }
template <typename T>
StatusCode CodeOf(const StatusOr<T>& status_or) { return status_or.status().code(); }
inline std::string MessageOf(const Status& status) { return status.message(); }
template <typename T>
std::string MessageOf(const StatusOr<T>& status_or) { return status_or.status().message(); }

uint32_t FloatBits(float f);
float BitsFloat(uint32_t bits);

// Deadline |ms| milliseconds from now.
int64_t DeadlineInMs(int64_t ms);

class CtsTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Skips the test (with |reason|) unless the backend has |capability|.
  bool HasCapability(uint32_t capability) const {
    return (GetParam().capabilities & capability) != 0;
  }

  Device* device() const { return device_.get(); }
  Allocator* allocator() const { return device_->allocator(); }
  osprey::Allocator* host_allocator() const { return host_allocator_; }

  // A buffer with |usage| and default (optimal) placement, all access.
  StatusOr<ref_ptr<Buffer>> Allocate(DeviceSize length, BufferUsage usage = BufferUsage::kDefault,
                                     MemoryType type = MemoryType::kOptimal,
                                     MemoryAccess access = MemoryAccess::kAll);
  // A buffer holding |data|, written through a mapping.
  StatusOr<ref_ptr<Buffer>> AllocateWith(const void* data, DeviceSize length,
                                         BufferUsage usage = BufferUsage::kDefault);
  // Reads |length| bytes of |buffer| at |offset| through a mapping.
  std::vector<uint8_t> ReadAll(Buffer* buffer, DeviceSize offset = 0,
                               DeviceSize length = kWholeBuffer);
  template <typename T>
  std::vector<T> ReadAs(Buffer* buffer) {
    std::vector<uint8_t> bytes = ReadAll(buffer);
    std::vector<T> result(bytes.size() / sizeof(T));
    if (!result.empty()) memcpy(result.data(), bytes.data(), result.size() * sizeof(T));
    return result;
  }

  StatusOr<ref_ptr<CommandBuffer>> BeginCommandBuffer(
      CommandBufferMode mode = CommandBufferMode::kDefault);
  // Ends |command_buffer| if recording, submits it with no waits and one
  // signal semaphore, and waits for it. Returns the wait's result (the
  // execution error if the work failed).
  Status SubmitAndWait(CommandBuffer* command_buffer);

  // The CTS kernels prepared on this device (skips without the
  // kCapabilityCpuKernels capability: check HasCapability first).
  StatusOr<ref_ptr<Executable>> LoadKernels();
  uint32_t Export(Executable* executable, const char* name);

  ref_ptr<Device> device_;
  osprey::Allocator* host_allocator_ = nullptr;
  uint32_t host_add_calls_ = 0;
  local::HostImport host_imports_[1] = {};
};

// Instantiates |suite| over every backend of the binary.
#define OSPREY_CTS_INSTANTIATE(suite)                                               \
  INSTANTIATE_TEST_SUITE_P(Cts, suite,                                             \
                           ::testing::ValuesIn(::osprey::hal::cts::Backends()),    \
                           [](const ::testing::TestParamInfo<::osprey::hal::cts::Backend>& \
                                  info) { return info.param.name; })

}  // namespace osprey::hal::cts

#endif  // OSPREY_HAL_CTS_CTS_TEST_BASE_H_
