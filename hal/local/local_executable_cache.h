// An ExecutableCache over a list of ExecutableLoaders: the first loader that
// accepts a format loads it. Shared by every CPU driver.
#ifndef OSPREY_HAL_LOCAL_LOCAL_EXECUTABLE_CACHE_H_
#define OSPREY_HAL_LOCAL_LOCAL_EXECUTABLE_CACHE_H_

#include <cstddef>
#include <span>

#include "hal/executable.h"
#include "hal/local/executable_loader.h"
#include "runtime/base/ref_ptr.h"

namespace osprey::hal::local {

class LocalExecutableCache final : public ExecutableCache {
 public:
  static constexpr size_t kMaxLoaders = 8;

  // Creates a cache trying |loaders| in order. The loader objects and the
  // entries of |imports| are borrowed: |owner| (retained by the cache; may
  // be null) must keep them alive, e.g. the device or a DefaultLoaderSet.
  // INVALID_ARGUMENT for more than kMaxLoaders loaders or a null entry.
  static StatusOr<ref_ptr<LocalExecutableCache>> Create(
      std::span<ExecutableLoader* const> loaders, ImportTable imports, ref_ptr<RefObject> owner,
      osprey::Allocator* host_allocator);

  bool CanPrepareFormat(const char* format) const override;
  // UNIMPLEMENTED (naming the format and the loaders tried) if no loader
  // accepts the format; otherwise what the loader returns, annotated.
  StatusOr<ref_ptr<Executable>> PrepareExecutable(const ExecutableParams& params) override;

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  LocalExecutableCache(ImportTable imports, ref_ptr<RefObject> owner)
      : imports_(imports), owner_(std::move(owner)) {}

  ExecutableLoader* loaders_[kMaxLoaders] = {};
  size_t loader_count_ = 0;
  ImportTable imports_;
  ref_ptr<RefObject> owner_;
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_LOCAL_EXECUTABLE_CACHE_H_
