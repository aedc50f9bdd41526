// Umbrella header of the cpu-sync driver.
#ifndef OSPREY_DRIVERS_CPU_SYNC_API_H_
#define OSPREY_DRIVERS_CPU_SYNC_API_H_

#include "drivers/cpu_sync/cpu_sync_device.h"
#include "drivers/cpu_sync/cpu_sync_driver.h"
#include "drivers/cpu_sync/registration/driver_module.h"

#endif  // OSPREY_DRIVERS_CPU_SYNC_API_H_
