// The npu driver opts into the HAL conformance suite.
//
// Capabilities: the queue is asynchronous (a queue thread) and fails a
// submission whose wait is not reached within the wait timeout; hosted
// builds have threads. The CTS CPU kernels are host code the NPU cannot run
// (it executes npu-v1 command streams only), so kernel tests skip.
#include "drivers/npu/npu_device.h"
#include "hal/cts/cts_backend.h"

namespace osprey::hal::cts {

namespace {
StatusOr<ref_ptr<Device>> CreateNpuDevice(const BackendContext& context) {
  drivers::npu::NpuDeviceOptions options;
  // Short, so the unreached-wait test finishes quickly, yet long enough that
  // a loaded machine signals the async-queue test's wait in time.
  options.wait_timeout_ns = 500'000'000;
  OSPREY_ASSIGN_OR_RETURN(auto device,
                          drivers::npu::NpuDevice::Create(options, context.host_allocator));
  return ref_ptr<Device>(std::move(device));
}
}  // namespace

std::vector<Backend> Backends() {
  Backend backend;
  backend.name = "npu";
  backend.create_device = &CreateNpuDevice;
  backend.capabilities = kCapabilityAsyncQueue | kCapabilityWaitTimeout | kCapabilityThreads;
  backend.executable_format = "npu-v1";
  return {backend};
}

}  // namespace osprey::hal::cts
