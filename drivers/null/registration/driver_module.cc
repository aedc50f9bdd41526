// Registration of the null driver.
#include "drivers/null/registration/driver_module.h"

#include "drivers/null/null_device.h"

namespace osprey::drivers::null {

Status RegisterDriver(hal::DriverRegistry& registry) {
  static constexpr hal::DriverFactory kFactory{
      /*name=*/"null",
      /*description=*/"Template driver; every operation is UNIMPLEMENTED",
      /*create=*/&NullDriver::Create,
  };
  return registry.Register(&kFactory);
}

}  // namespace osprey::drivers::null
