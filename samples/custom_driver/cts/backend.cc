// The custom sample driver opts into the HAL conformance suite. It runs no
// executables, so the kernel tests skip; its queue is synchronous with a
// wait timeout.
#include "hal/cts/cts_backend.h"
#include "samples/custom_driver/custom_driver.h"

namespace osprey::hal::cts {

namespace {
StatusOr<ref_ptr<Device>> CreateDevice(const BackendContext& context) {
  // Short, so the unreached-wait test finishes quickly.
  return custom_driver::CreateCustomDevice(context.host_allocator, 50'000'000);
}
}  // namespace

std::vector<Backend> Backends() {
  Backend backend;
  backend.name = "custom";
  backend.create_device = &CreateDevice;
  backend.capabilities = kCapabilityWaitTimeout | kCapabilityThreads;
  return {backend};
}

}  // namespace osprey::hal::cts
