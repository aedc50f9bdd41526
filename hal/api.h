// Umbrella header of the hardware abstraction layer.
#ifndef OSPREY_HAL_API_H_
#define OSPREY_HAL_API_H_

#include "hal/allocator.h"
#include "hal/buffer.h"
#include "hal/buffer_view.h"
#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/driver.h"
#include "hal/executable.h"
#include "hal/resource.h"
#include "hal/semaphore.h"
#include "hal/types.h"

#endif  // OSPREY_HAL_API_H_
