// cpu-sync driver.
#include "drivers/cpu_sync/cpu_sync_driver.h"

#include <utility>

namespace osprey::drivers::cpu_sync {

StatusOr<ref_ptr<hal::Driver>> CpuSyncDriver::Create(osprey::Allocator* host_allocator) {
  OSPREY_ASSIGN_OR_RETURN(auto driver, Create(host_allocator, CpuSyncDeviceOptions()));
  return ref_ptr<hal::Driver>(std::move(driver));
}

StatusOr<ref_ptr<CpuSyncDriver>> CpuSyncDriver::Create(osprey::Allocator* host_allocator,
                                                       const CpuSyncDeviceOptions& defaults) {
  if (!host_allocator) return InvalidArgumentError("cpu-sync driver needs a host allocator");
  return MakeRef<CpuSyncDriver>(host_allocator, host_allocator, defaults);
}

StatusOr<ref_ptr<hal::Device>> CpuSyncDriver::CreateDevice(
    std::span<const hal::DeviceParam> params) {
  CpuSyncDeviceOptions options = defaults_;
  OSPREY_RETURN_IF_ERROR(CpuSyncDevice::ParseParams(params, &options));
  OSPREY_ASSIGN_OR_RETURN(auto device, CpuSyncDevice::Create(options, host_allocator_));
  return ref_ptr<hal::Device>(std::move(device));
}

}  // namespace osprey::drivers::cpu_sync
