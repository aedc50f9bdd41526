// The HAL conformance suite (CTS): how a driver opts in.
//
// Every hal/cts/*_test.cc suite is compiled into one test binary per
// driver together with a tiny backend file in drivers/<d>/cts/ that defines
// osprey::hal::cts::Backends(): the driver's name, a device factory and
// capability flags. CMake: osprey_hal_cts_test(NAME ... SRCS backend.cc
// DEPS osprey_drivers_<d>). A test that does not apply to a backend calls
// GTEST_SKIP() with the reason (see RequireCapability in cts_test_base.h).
#ifndef OSPREY_HAL_CTS_CTS_BACKEND_H_
#define OSPREY_HAL_CTS_CTS_BACKEND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/local/executable_loader.h"
#include "hal/local/static_library_loader.h"

namespace osprey::hal::cts {

// What the suite gives a backend's device factory. Everything is borrowed
// and lives for the whole test.
struct BackendContext {
  // Holds the CTS kernels (hal/cts/kernels/cts_kernels.h) under
  // OSPREY_CTS_KERNELS_LIBRARY_NAME, for drivers that run "static" CPU
  // executables.
  const local::StaticLibraryRegistry* static_libraries = nullptr;
  // Host functions the CTS kernels may import ("cts_host_add").
  local::ImportTable imports;
  osprey::Allocator* host_allocator = nullptr;
};

// Optional behaviours; tests that need one skip on backends without it.
enum Capability : uint32_t {
  // Prepares ExecutableParams{format = executable_format, data = library
  // name} for the CTS kernels and runs them.
  kCapabilityCpuKernels = 1u << 0,
  // QueueExecute returns before waits are satisfied, so the host may signal
  // a wait semaphore after submitting (asynchronous queues).
  kCapabilityAsyncQueue = 1u << 1,
  // QueueExecute on a wait semaphore nobody signals fails the submission
  // (DEADLINE_EXCEEDED through the signal semaphores) after the device's
  // wait timeout, which the factory sets short (synchronous queues).
  kCapabilityWaitTimeout = 1u << 2,
  // Semaphores can be signalled from another host thread while a host wait
  // blocks (hosted builds).
  kCapabilityThreads = 1u << 3,
};

struct Backend {
  std::string name;  // Test parameter name: [A-Za-z0-9_]+.
  // Makes a fresh device for one test.
  StatusOr<ref_ptr<Device>> (*create_device)(const BackendContext& context) = nullptr;
  uint32_t capabilities = 0;
  // Format of the CTS kernels for kCapabilityCpuKernels ("static").
  std::string executable_format = "static";
};

// Defined by the driver's backend file.
std::vector<Backend> Backends();

}  // namespace osprey::hal::cts

#endif  // OSPREY_HAL_CTS_CTS_BACKEND_H_
