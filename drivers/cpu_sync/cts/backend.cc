// cpu-sync opts into the HAL conformance suite.
#include "drivers/cpu_sync/cpu_sync_device.h"
#include "hal/cts/cts_backend.h"

namespace osprey::hal::cts {

namespace {
StatusOr<ref_ptr<Device>> CreateCpuSyncDevice(const BackendContext& context) {
  drivers::cpu_sync::CpuSyncDeviceOptions options;
  options.static_libraries = context.static_libraries;
  options.imports = context.imports;
  // Short, so the unreached-wait test finishes quickly.
  options.wait_timeout_ns = 50'000'000;
  OSPREY_ASSIGN_OR_RETURN(auto device,
                          drivers::cpu_sync::CpuSyncDevice::Create(options, context.host_allocator));
  return ref_ptr<Device>(std::move(device));
}
}  // namespace

std::vector<Backend> Backends() {
  Backend backend;
  backend.name = "cpu_sync";
  backend.create_device = &CreateCpuSyncDevice;
  backend.capabilities = kCapabilityCpuKernels | kCapabilityWaitTimeout | kCapabilityThreads;
  backend.executable_format = "static";
  return {backend};
}

}  // namespace osprey::hal::cts
