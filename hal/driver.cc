// The driver registry.
#include "hal/driver.h"

#include <stdio.h>

#include <cstring>

namespace osprey::hal {

Status DriverRegistry::Register(const DriverFactory* factory) {
  if (!factory || !factory->name || !factory->name[0] || !factory->create) {
    return InvalidArgumentError("driver factory is null or has no name or create function");
  }
  platform::MutexLock lock(mutex_);
  for (size_t i = 0; i < count_; ++i) {
    if (strcmp(factories_[i]->name, factory->name) == 0) {
      return AlreadyExistsError("driver '%s' is already registered", factory->name);
    }
  }
  if (count_ == kMaxDrivers) {
    return ResourceExhaustedError("driver registry is full (%zu drivers); cannot add '%s'",
                                  kMaxDrivers, factory->name);
  }
  factories_[count_++] = factory;
  return OkStatus();
}

StatusOr<const DriverFactory*> DriverRegistry::Lookup(const char* name) const {
  if (!name) return InvalidArgumentError("driver name is null");
  platform::MutexLock lock(mutex_);
  char known[256];
  size_t used = 0;
  known[0] = '\0';
  for (size_t i = 0; i < count_; ++i) {
    if (strcmp(factories_[i]->name, name) == 0) return factories_[i];
    if (used < sizeof(known)) {
      int n = snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                       factories_[i]->name);
      if (n > 0) used += size_t(n);
    }
  }
  return NotFoundError("no HAL driver named '%s' (registered: %s)", name,
                       count_ ? known : "none");
}

size_t DriverRegistry::size() const {
  platform::MutexLock lock(mutex_);
  return count_;
}

const DriverFactory* DriverRegistry::factory(size_t i) const {
  platform::MutexLock lock(mutex_);
  return i < count_ ? factories_[i] : nullptr;
}

StatusOr<ref_ptr<Driver>> DriverRegistry::CreateDriver(const char* name,
                                                      osprey::Allocator* host_allocator) const {
  OSPREY_ASSIGN_OR_RETURN(const DriverFactory* factory, Lookup(name));
  OSPREY_ASSIGN_OR_RETURN(auto driver, factory->create(host_allocator),
                          "creating HAL driver '%s'", name);
  return driver;
}

StatusOr<ref_ptr<Device>> DriverRegistry::CreateDevice(const char* name,
                                                      std::span<const DeviceParam> params,
                                                      osprey::Allocator* host_allocator) const {
  OSPREY_ASSIGN_OR_RETURN(auto driver, CreateDriver(name, host_allocator));
  OSPREY_ASSIGN_OR_RETURN(auto device, driver->CreateDevice(params),
                          "creating a device of HAL driver '%s'", name);
  return device;
}

DriverRegistry* DriverRegistry::Default() {
  static DriverRegistry registry;
  return &registry;
}

}  // namespace osprey::hal
