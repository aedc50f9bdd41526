// cpu-task opts into the HAL conformance suite.
#include "drivers/cpu_task/cpu_task_device.h"
#include "hal/cts/cts_backend.h"

namespace osprey::hal::cts {

namespace {
StatusOr<ref_ptr<Device>> CreateCpuTaskDevice(const BackendContext& context) {
  drivers::cpu_task::CpuTaskDeviceOptions options;
  options.static_libraries = context.static_libraries;
  options.imports = context.imports;
  // Two workers even on a single-core runner, so sharding is exercised.
  options.worker_count = 2;
  OSPREY_ASSIGN_OR_RETURN(auto device,
                          drivers::cpu_task::CpuTaskDevice::Create(options, context.host_allocator));
  return ref_ptr<Device>(std::move(device));
}
}  // namespace

std::vector<Backend> Backends() {
  Backend backend;
  backend.name = "cpu_task";
  backend.create_device = &CreateCpuTaskDevice;
  backend.capabilities = kCapabilityCpuKernels | kCapabilityAsyncQueue | kCapabilityThreads;
  backend.executable_format = "static";
  return {backend};
}

}  // namespace osprey::hal::cts
