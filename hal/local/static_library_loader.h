// The "static" executable format: CPU executable libraries linked into the
// application, found by name in a registry the application owns.
//
// The application registers each library's query function under a name at
// start-up; an executable of format "static" carries that name as its data.
// No global state: the registry is passed to the CPU driver's device (see
// drivers/cpu_sync/cpu_sync_device.h) and from there to this loader.
#ifndef OSPREY_HAL_LOCAL_STATIC_LIBRARY_LOADER_H_
#define OSPREY_HAL_LOCAL_STATIC_LIBRARY_LOADER_H_

#include <cstddef>

#include "hal/local/executable_library.h"
#include "hal/local/executable_loader.h"

namespace osprey::hal::local {

// Format name handled by StaticLibraryLoader.
inline constexpr const char kStaticLibraryFormat[] = "static";

// Name → query function table. Fill it before devices use it; afterwards it
// is read-only and may be shared by any number of devices and threads.
// Register() itself is not thread-safe.
class StaticLibraryRegistry {
 public:
  static constexpr size_t kMaxLibraries = 32;

  StaticLibraryRegistry() = default;
  StaticLibraryRegistry(const StaticLibraryRegistry&) = delete;
  StaticLibraryRegistry& operator=(const StaticLibraryRegistry&) = delete;

  // Registers |query| as library |name| (borrowed; must outlive the
  // registry). INVALID_ARGUMENT for a null/empty name or null query,
  // ALREADY_EXISTS for a second library of the same name,
  // RESOURCE_EXHAUSTED past kMaxLibraries.
  Status Register(const char* name, osprey_executable_library_query_fn_t query);

  // The query function registered as the |length| bytes at |name| (not
  // necessarily NUL-terminated); null if none.
  osprey_executable_library_query_fn_t Find(const char* name, size_t length) const;

  size_t size() const { return count_; }
  const char* name(size_t i) const { return entries_[i].name; }

 private:
  struct Entry {
    const char* name;
    osprey_executable_library_query_fn_t query;
  };
  Entry entries_[kMaxLibraries] = {};
  size_t count_ = 0;
};

// Loads format "static": ExecutableParams::data holds the library name
// (without terminator). NOT_FOUND (listing the registered names) if the name
// is not registered; otherwise the library is queried and validated by
// LibraryExecutable::CreateFromQuery.
class StaticLibraryLoader final : public ExecutableLoader {
 public:
  // |registry| is borrowed and must outlive the loader; null behaves as an
  // empty registry.
  explicit StaticLibraryLoader(const StaticLibraryRegistry* registry) : registry_(registry) {}

  const char* name() const override { return "static"; }
  bool CanLoad(const char* format) const override;
  StatusOr<ref_ptr<LocalExecutable>> Load(const ExecutableParams& params,
                                          const ImportTable& imports,
                                          osprey::Allocator* host_allocator) override;

 private:
  const StaticLibraryRegistry* registry_;
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_STATIC_LIBRARY_LOADER_H_
