// The executable loaders of CPU drivers: by default the static loader plus
// the ELF and system (dlopen) loaders when they are part of the build (CMake
// targets osprey_hal_local_loaders_elf / _system); or, chosen by the device
// creator, the static loader alone, so that images running only static
// libraries do not link the other loaders.
#ifndef OSPREY_HAL_LOCAL_DEFAULT_LOADERS_H_
#define OSPREY_HAL_LOCAL_DEFAULT_LOADERS_H_

#include <cstddef>
#include <span>

#include "hal/local/executable_loader.h"
#include "hal/local/static_library_loader.h"
#include "runtime/base/ref_ptr.h"

namespace osprey::hal::local {

class DefaultLoaderSet;

// Creates the loader set of a CPU device (CpuSyncDevice / CpuTaskDevice::
// CreateWithLoaders). Same contract as DefaultLoaderSet::Create.
using LoaderSetFactory = StatusOr<ref_ptr<DefaultLoaderSet>> (*)(
    const StaticLibraryRegistry* static_libraries, osprey::Allocator* host_allocator);

// Owns a device's loaders; pass it as the |owner| of a LocalExecutableCache
// so the loaders outlive every cache using them.
class DefaultLoaderSet final : public RefObject {
 public:
  static constexpr size_t kMaxLoaders = 4;

  // The static loader plus every other loader in the build (ELF, system).
  // |static_libraries| is borrowed and must outlive the set (null: no static
  // libraries). |host_allocator| is borrowed for the set's lifetime.
  // RESOURCE_EXHAUSTED if |host_allocator| runs out.
  static StatusOr<ref_ptr<DefaultLoaderSet>> Create(const StaticLibraryRegistry* static_libraries,
                                                    osprey::Allocator* host_allocator);

  // Only the static loader: executables of other formats fail to load with
  // the executable cache's "no loader" error. References no other loader, so
  // an image (linked with --gc-sections) whose devices all use this factory
  // links neither the ELF nor the system loader. Same arguments and errors
  // as Create.
  static StatusOr<ref_ptr<DefaultLoaderSet>> CreateStaticOnly(
      const StaticLibraryRegistry* static_libraries, osprey::Allocator* host_allocator);
  ~DefaultLoaderSet() override;

  std::span<ExecutableLoader* const> loaders() const { return {loaders_, count_}; }

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  explicit DefaultLoaderSet(const StaticLibraryRegistry* static_libraries)
      : static_loader_(static_libraries) {}

  StaticLibraryLoader static_loader_;
  ExecutableLoader* loaders_[kMaxLoaders] = {};
  // Loaders after the first (static) one are owned and deleted with the
  // host allocator.
  size_t count_ = 0;
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_DEFAULT_LOADERS_H_
