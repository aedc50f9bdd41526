// Registration of the cpu-task driver with a driver registry.
#ifndef OSPREY_DRIVERS_CPU_TASK_REGISTRATION_DRIVER_MODULE_H_
#define OSPREY_DRIVERS_CPU_TASK_REGISTRATION_DRIVER_MODULE_H_

#include "hal/driver.h"

namespace osprey::drivers::cpu_task {

// Registers "cpu-task" with |registry|. ALREADY_EXISTS if it is there.
Status RegisterDriver(hal::DriverRegistry& registry);

}  // namespace osprey::drivers::cpu_task

#endif  // OSPREY_DRIVERS_CPU_TASK_REGISTRATION_DRIVER_MODULE_H_
