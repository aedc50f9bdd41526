// A minimal HAL driver written outside the Osprey tree's drivers/ folder and
// registered through the public API: device id "custom". It runs transfers
// (fill, update, copy) on the submitting thread and no executables, using the
// shared host-side pieces in hal/local. Start here for a new driver; see
// docs/writing-a-hal-driver.md.
#ifndef OSPREY_SAMPLES_CUSTOM_DRIVER_CUSTOM_DRIVER_H_
#define OSPREY_SAMPLES_CUSTOM_DRIVER_CUSTOM_DRIVER_H_

#include "hal/api.h"

namespace custom_driver {

// Registers the "custom" driver with |registry|. ALREADY_EXISTS if it is
// registered already.
osprey::Status RegisterCustomDriver(osprey::hal::DriverRegistry& registry);

// Creates a device directly (what the driver's CreateDevice does).
// |host_allocator| is borrowed for the device's lifetime; |wait_timeout_ns|
// bounds each wait-semaphore wait of QueueExecute.
osprey::StatusOr<osprey::ref_ptr<osprey::hal::Device>> CreateCustomDevice(
    osprey::Allocator* host_allocator, int64_t wait_timeout_ns);

}  // namespace custom_driver

#endif  // OSPREY_SAMPLES_CUSTOM_DRIVER_CUSTOM_DRIVER_H_
