// Explicit registration of the cpu-sync driver.
#ifndef OSPREY_DRIVERS_CPU_SYNC_REGISTRATION_DRIVER_MODULE_H_
#define OSPREY_DRIVERS_CPU_SYNC_REGISTRATION_DRIVER_MODULE_H_

#include "hal/driver.h"

namespace osprey::drivers::cpu_sync {

// Registers "cpu-sync" with |registry|. ALREADY_EXISTS if registered before.
Status RegisterDriver(hal::DriverRegistry& registry);

}  // namespace osprey::drivers::cpu_sync

#endif  // OSPREY_DRIVERS_CPU_SYNC_REGISTRATION_DRIVER_MODULE_H_
