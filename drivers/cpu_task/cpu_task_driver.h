// The cpu-task driver: creates CpuTaskDevices from device params.
#ifndef OSPREY_DRIVERS_CPU_TASK_CPU_TASK_DRIVER_H_
#define OSPREY_DRIVERS_CPU_TASK_CPU_TASK_DRIVER_H_

#include <span>

#include "hal/driver.h"

namespace osprey::drivers::cpu_task {

// Thread-safe.
class CpuTaskDriver final : public hal::Driver {
 public:
  // |host_allocator| is borrowed and must outlive the driver and its devices.
  static StatusOr<ref_ptr<hal::Driver>> Create(osprey::Allocator* host_allocator);

  // Params: task_workers=N (1..64, default one per processor),
  // task_affinity=N|none (pin workers from processor N), task_local_memory=
  // BYTES (per-worker dispatch scratch). Unknown keys and malformed values
  // are INVALID_ARGUMENT; UNAVAILABLE where threads cannot be created.
  StatusOr<ref_ptr<hal::Device>> CreateDevice(std::span<const hal::DeviceParam> params) override;

 private:
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  explicit CpuTaskDriver(osprey::Allocator* host_allocator) : host_allocator_(host_allocator) {}

  osprey::Allocator* host_allocator_;
};

}  // namespace osprey::drivers::cpu_task

#endif  // OSPREY_DRIVERS_CPU_TASK_CPU_TASK_DRIVER_H_
