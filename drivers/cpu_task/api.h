// Umbrella header of the cpu-task driver.
#ifndef OSPREY_DRIVERS_CPU_TASK_API_H_
#define OSPREY_DRIVERS_CPU_TASK_API_H_

#include "drivers/cpu_task/cpu_task_device.h"
#include "drivers/cpu_task/cpu_task_driver.h"
#include "drivers/cpu_task/registration/driver_module.h"

#endif  // OSPREY_DRIVERS_CPU_TASK_API_H_
