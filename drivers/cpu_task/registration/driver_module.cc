// Registration of the cpu-task driver.
#include "drivers/cpu_task/registration/driver_module.h"

#include "drivers/cpu_task/cpu_task_driver.h"

namespace osprey::drivers::cpu_task {

Status RegisterDriver(hal::DriverRegistry& registry) {
  static constexpr hal::DriverFactory kFactory{
      /*name=*/"cpu-task",
      /*description=*/"CPU; command buffers run as task graphs on a pool of worker threads",
      /*create=*/&CpuTaskDriver::Create,
  };
  return registry.Register(&kFactory);
}

}  // namespace osprey::drivers::cpu_task
