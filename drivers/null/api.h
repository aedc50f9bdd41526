// Umbrella header of the null driver.
#ifndef OSPREY_DRIVERS_NULL_API_H_
#define OSPREY_DRIVERS_NULL_API_H_

#include "drivers/null/null_device.h"
#include "drivers/null/registration/driver_module.h"

#endif  // OSPREY_DRIVERS_NULL_API_H_
