// Registers the drivers enabled at build time.
#ifndef OSPREY_DRIVERS_INIT_H_
#define OSPREY_DRIVERS_INIT_H_

#include "hal/driver.h"

namespace osprey::drivers {

// Registers every driver compiled into this build (OSPREY_HAL_DRIVER_*
// options) with |registry|. Drivers already registered are left alone.
Status RegisterEnabledDrivers(hal::DriverRegistry& registry);

}  // namespace osprey::drivers

#endif  // OSPREY_DRIVERS_INIT_H_
