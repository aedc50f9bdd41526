// Explicit registration of the npu driver.
#ifndef OSPREY_DRIVERS_NPU_REGISTRATION_DRIVER_MODULE_H_
#define OSPREY_DRIVERS_NPU_REGISTRATION_DRIVER_MODULE_H_

#include "hal/driver.h"

namespace osprey::drivers::npu {

// Registers "npu" with |registry|. ALREADY_EXISTS if registered before.
Status RegisterDriver(hal::DriverRegistry& registry);

}  // namespace osprey::drivers::npu

#endif  // OSPREY_DRIVERS_NPU_REGISTRATION_DRIVER_MODULE_H_
