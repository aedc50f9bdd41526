// The cpu-task driver.
#include "drivers/cpu_task/cpu_task_driver.h"

#include "drivers/cpu_task/cpu_task_device.h"

namespace osprey::drivers::cpu_task {

StatusOr<ref_ptr<hal::Driver>> CpuTaskDriver::Create(osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("cpu-task driver needs a host allocator");
  OSPREY_ASSIGN_OR_RETURN(auto driver, MakeRef<CpuTaskDriver>(host_allocator, host_allocator));
  return ref_ptr<hal::Driver>(std::move(driver));
}

StatusOr<ref_ptr<hal::Device>> CpuTaskDriver::CreateDevice(
    std::span<const hal::DeviceParam> params) {
  CpuTaskDeviceOptions options;
  OSPREY_RETURN_IF_ERROR(ParseDeviceParams(params, &options), "creating a cpu-task device");
  OSPREY_ASSIGN_OR_RETURN(auto device, CpuTaskDevice::Create(options, host_allocator_),
                          "creating a cpu-task device");
  return ref_ptr<hal::Device>(std::move(device));
}

}  // namespace osprey::drivers::cpu_task
