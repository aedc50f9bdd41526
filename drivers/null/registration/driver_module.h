// Explicit registration of the null driver (tests only; drivers/init.cc does
// not register it).
#ifndef OSPREY_DRIVERS_NULL_REGISTRATION_DRIVER_MODULE_H_
#define OSPREY_DRIVERS_NULL_REGISTRATION_DRIVER_MODULE_H_

#include "hal/driver.h"

namespace osprey::drivers::null {

// Registers "null" with |registry|. ALREADY_EXISTS if registered before.
Status RegisterDriver(hal::DriverRegistry& registry);

}  // namespace osprey::drivers::null

#endif  // OSPREY_DRIVERS_NULL_REGISTRATION_DRIVER_MODULE_H_
