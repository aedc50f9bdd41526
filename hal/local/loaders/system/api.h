// Umbrella header of the system (dlopen) loader (hal/local/loaders/system).
#ifndef OSPREY_HAL_LOCAL_LOADERS_SYSTEM_API_H_
#define OSPREY_HAL_LOCAL_LOADERS_SYSTEM_API_H_

#include "hal/local/loaders/system/system_loader.h"  // IWYU pragma: export

#endif  // OSPREY_HAL_LOCAL_LOADERS_SYSTEM_API_H_
