// The executable loaders CPU drivers use unless told otherwise: the static
// loader always, plus the ELF and system (dlopen) loaders when they are part
// of the build (CMake targets osprey_hal_local_loaders_elf / _system).
#ifndef OSPREY_HAL_LOCAL_DEFAULT_LOADERS_H_
#define OSPREY_HAL_LOCAL_DEFAULT_LOADERS_H_

#include <cstddef>
#include <span>

#include "hal/local/executable_loader.h"
#include "hal/local/static_library_loader.h"
#include "runtime/base/ref_ptr.h"

namespace osprey::hal::local {

// Owns the default loaders; pass it as the |owner| of a LocalExecutableCache
// so the loaders outlive every cache using them.
class DefaultLoaderSet final : public RefObject {
 public:
  static constexpr size_t kMaxLoaders = 4;

  // |static_libraries| is borrowed and must outlive the set (null: no static
  // libraries). |host_allocator| is borrowed for the set's lifetime.
  static StatusOr<ref_ptr<DefaultLoaderSet>> Create(const StaticLibraryRegistry* static_libraries,
                                                    osprey::Allocator* host_allocator);
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
