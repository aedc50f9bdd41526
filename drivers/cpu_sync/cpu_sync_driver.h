// The cpu-sync driver: makes CpuSyncDevices.
#ifndef OSPREY_DRIVERS_CPU_SYNC_CPU_SYNC_DRIVER_H_
#define OSPREY_DRIVERS_CPU_SYNC_CPU_SYNC_DRIVER_H_

#include <span>

#include "drivers/cpu_sync/cpu_sync_device.h"
#include "hal/driver.h"

namespace osprey::drivers::cpu_sync {

class CpuSyncDriver final : public hal::Driver {
 public:
  // |host_allocator| is borrowed for the driver's and its devices' lifetime.
  // |defaults| seed every device's options before params apply (static
  // libraries and imports are borrowed as documented there).
  static StatusOr<ref_ptr<hal::Driver>> Create(osprey::Allocator* host_allocator);
  static StatusOr<ref_ptr<CpuSyncDriver>> Create(osprey::Allocator* host_allocator,
                                                 const CpuSyncDeviceOptions& defaults);

  // Params: see CpuSyncDevice::ParseParams; unknown keys are
  // INVALID_ARGUMENT.
  StatusOr<ref_ptr<hal::Device>> CreateDevice(std::span<const hal::DeviceParam> params) override;

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  CpuSyncDriver(osprey::Allocator* host_allocator, const CpuSyncDeviceOptions& defaults)
      : host_allocator_(host_allocator), defaults_(defaults) {}

  osprey::Allocator* host_allocator_;
  CpuSyncDeviceOptions defaults_;
};

}  // namespace osprey::drivers::cpu_sync

#endif  // OSPREY_DRIVERS_CPU_SYNC_CPU_SYNC_DRIVER_H_
