// The default loader list of CPU drivers.
#include "hal/local/default_loaders.h"

namespace osprey::hal::local {

StatusOr<ref_ptr<DefaultLoaderSet>> DefaultLoaderSet::Create(
    const StaticLibraryRegistry* static_libraries, osprey::Allocator* host_allocator) {
  OSPREY_ASSIGN_OR_RETURN(auto set, MakeRef<DefaultLoaderSet>(host_allocator, static_libraries));
  set->loaders_[set->count_++] = &set->static_loader_;
  // The ELF (OSPREY_HAVE_LOADER_ELF) and system (OSPREY_HAVE_LOADER_SYSTEM)
  // loaders are appended here once their factories exist.
  return set;
}

DefaultLoaderSet::~DefaultLoaderSet() {
  for (size_t i = 1; i < count_; ++i) host_allocator()->Delete(loaders_[i]);
}

}  // namespace osprey::hal::local
