// Explicit registration of the drivers enabled at build time.
#include "drivers/init.h"

#if OSPREY_HAVE_DRIVER_CPU_SYNC
#include "drivers/cpu_sync/registration/driver_module.h"
#endif
#if OSPREY_HAVE_DRIVER_CPU_TASK
#include "drivers/cpu_task/registration/driver_module.h"
#endif
#if OSPREY_HAVE_DRIVER_NPU
#include "drivers/npu/registration/driver_module.h"
#endif

namespace osprey::drivers {

namespace {
// Registering twice is fine: the registry keeps the first.
Status Tolerate(Status status) {
  if (status.code() == StatusCode::kAlreadyExists) return OkStatus();
  return status;
}
}  // namespace

Status RegisterEnabledDrivers(hal::DriverRegistry& registry) {
  (void)registry;
#if OSPREY_HAVE_DRIVER_CPU_SYNC
  OSPREY_RETURN_IF_ERROR(Tolerate(cpu_sync::RegisterDriver(registry)));
#endif
#if OSPREY_HAVE_DRIVER_CPU_TASK
  OSPREY_RETURN_IF_ERROR(Tolerate(cpu_task::RegisterDriver(registry)));
#endif
#if OSPREY_HAVE_DRIVER_NPU
  OSPREY_RETURN_IF_ERROR(Tolerate(npu::RegisterDriver(registry)));
#endif
  return OkStatus();
}

}  // namespace osprey::drivers
