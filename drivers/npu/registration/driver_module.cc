// Registration of the npu driver.
#include "drivers/npu/registration/driver_module.h"

#include "drivers/npu/npu_driver.h"

namespace osprey::drivers::npu {

Status RegisterDriver(hal::DriverRegistry& registry) {
  static constexpr hal::DriverFactory kFactory{
      /*name=*/"npu",
      /*description=*/"Simulated int8 NPU (npu-v1 command streams, SRAM, DMA)",
      /*create=*/&NpuDriver::Create,
  };
  return registry.Register(&kFactory);
}

}  // namespace osprey::drivers::npu
