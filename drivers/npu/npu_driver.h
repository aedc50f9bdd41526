// The npu driver: makes NpuDevices.
#ifndef OSPREY_DRIVERS_NPU_NPU_DRIVER_H_
#define OSPREY_DRIVERS_NPU_NPU_DRIVER_H_

#include <span>

#include "drivers/npu/npu_device.h"
#include "hal/driver.h"

namespace osprey::drivers::npu {

class NpuDriver final : public hal::Driver {
 public:
  // |host_allocator| is borrowed for the driver's and its devices' lifetime.
  static StatusOr<ref_ptr<hal::Driver>> Create(osprey::Allocator* host_allocator);

  // Params: see NpuDevice::ParseParams (unknown keys: INVALID_ARGUMENT).
  StatusOr<ref_ptr<hal::Device>> CreateDevice(std::span<const hal::DeviceParam> params) override;

 private:
  friend class osprey::Allocator;
  explicit NpuDriver(osprey::Allocator* host_allocator) : host_allocator_(host_allocator) {}
  osprey::Allocator* host_allocator_;
};

}  // namespace osprey::drivers::npu

#endif  // OSPREY_DRIVERS_NPU_NPU_DRIVER_H_
