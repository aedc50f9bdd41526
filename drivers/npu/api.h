// Umbrella header of the npu driver.
#ifndef OSPREY_DRIVERS_NPU_API_H_
#define OSPREY_DRIVERS_NPU_API_H_

#include "drivers/npu/npu_allocator.h"
#include "drivers/npu/npu_device.h"
#include "drivers/npu/npu_driver.h"
#include "drivers/npu/npu_executable.h"
#include "drivers/npu/npu_hardware.h"
#include "drivers/npu/registration/driver_module.h"
#include "drivers/npu/schema/npu_isa.h"
#include "drivers/npu/sim/command_stream.h"
#include "drivers/npu/sim/simulator.h"

#endif  // OSPREY_DRIVERS_NPU_API_H_
