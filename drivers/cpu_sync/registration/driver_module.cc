// Registration of the cpu-sync driver.
#include "drivers/cpu_sync/registration/driver_module.h"

#include "drivers/cpu_sync/cpu_sync_driver.h"

namespace osprey::drivers::cpu_sync {

namespace {
StatusOr<ref_ptr<hal::Driver>> CreateDriver(osprey::Allocator* host_allocator) {
  return CpuSyncDriver::Create(host_allocator);
}
}  // namespace

Status RegisterDriver(hal::DriverRegistry& registry) {
  static constexpr hal::DriverFactory kFactory{
      /*name=*/"cpu-sync",
      /*description=*/"CPU; work runs inline on the submitting thread",
      /*create=*/&CreateDriver,
  };
  return registry.Register(&kFactory);
}

}  // namespace osprey::drivers::cpu_sync
