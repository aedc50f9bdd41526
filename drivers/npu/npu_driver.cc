// The npu driver.
#include "drivers/npu/npu_driver.h"

#include <string_view>
#include <utility>

namespace osprey::drivers::npu {

StatusOr<ref_ptr<hal::Driver>> NpuDriver::Create(osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("npu driver needs a host allocator");
  OSPREY_ASSIGN_OR_RETURN(auto driver, MakeRef<NpuDriver>(host_allocator, host_allocator));
  return ref_ptr<hal::Driver>(std::move(driver));
}

StatusOr<ref_ptr<hal::Device>> NpuDriver::CreateDevice(std::span<const hal::DeviceParam> params) {
  NpuDeviceOptions options;
  OSPREY_RETURN_IF_ERROR(NpuDevice::ParseParams(params, &options));
  // The SRAM pool defaults to a quarter of the SRAM unless set explicitly.
  bool pool_set = false;
  for (const hal::DeviceParam& param : params) {
    if (param.key && std::string_view(param.key) == "sram_pool_kib") pool_set = true;
  }
  if (!pool_set) options.sram_pool_bytes = options.hardware.sram_bytes / 4;
  OSPREY_ASSIGN_OR_RETURN(auto device, NpuDevice::Create(options, host_allocator_));
  return ref_ptr<hal::Device>(std::move(device));
}

}  // namespace osprey::drivers::npu
