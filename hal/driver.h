// Drivers create devices; the registry maps driver names to factories.
#ifndef OSPREY_HAL_DRIVER_H_
#define OSPREY_HAL_DRIVER_H_

#include <cstdint>
#include <span>

#include "hal/device.h"
#include "hal/resource.h"
#include "runtime/base/platform/platform.h"

namespace osprey::hal {

class Driver : public Resource {
 public:
  // Creates a device. |params| are driver-specific key=value options; an
  // unknown key is INVALID_ARGUMENT. UNAVAILABLE if the hardware is absent.
  virtual StatusOr<ref_ptr<Device>> CreateDevice(std::span<const DeviceParam> params) = 0;
};

// How the registry makes a driver. Static storage, registered explicitly.
struct DriverFactory {
  const char* name;         // Also the device id, e.g. "cpu-sync".
  const char* description;  // One line for listings.
  StatusOr<ref_ptr<Driver>> (*create)(osprey::Allocator* host_allocator);
};

// Name → factory table. Registration is explicit (no static constructors);
// the default registry is filled by drivers::RegisterEnabledDrivers().
// Thread-safe.
class DriverRegistry {
 public:
  static constexpr size_t kMaxDrivers = 16;

  DriverRegistry() = default;
  DriverRegistry(const DriverRegistry&) = delete;
  DriverRegistry& operator=(const DriverRegistry&) = delete;

  // ALREADY_EXISTS for a second factory of the same name;
  // RESOURCE_EXHAUSTED past kMaxDrivers. |factory| must outlive the registry.
  Status Register(const DriverFactory* factory);
  // NOT_FOUND (listing the registered names) if |name| is unknown.
  StatusOr<const DriverFactory*> Lookup(const char* name) const;
  size_t size() const;
  const DriverFactory* factory(size_t i) const;

  StatusOr<ref_ptr<Driver>> CreateDriver(const char* name, osprey::Allocator* host_allocator) const;
  // Creates the driver named |name| and one device from it.
  StatusOr<ref_ptr<Device>> CreateDevice(const char* name, std::span<const DeviceParam> params,
                                         osprey::Allocator* host_allocator) const;

  // The process-wide registry; borrowed, lives for the whole program.
  static DriverRegistry* Default();

 private:
  mutable platform::Mutex mutex_;
  const DriverFactory* factories_[kMaxDrivers] = {};
  size_t count_ = 0;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_DRIVER_H_
