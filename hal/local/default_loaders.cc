// The loader sets of CPU drivers: all loaders in the build, or static only.
#include "hal/local/default_loaders.h"

#if OSPREY_HAVE_LOADER_ELF
#include "hal/local/loaders/elf/elf_loader.h"
#endif
#if OSPREY_HAVE_LOADER_SYSTEM
#include "hal/local/loaders/system/system_loader.h"
#endif

namespace osprey::hal::local {

StatusOr<ref_ptr<DefaultLoaderSet>> DefaultLoaderSet::Create(
    const StaticLibraryRegistry* static_libraries, osprey::Allocator* host_allocator) {
  OSPREY_ASSIGN_OR_RETURN(auto set, MakeRef<DefaultLoaderSet>(host_allocator, static_libraries));
  set->loaders_[set->count_++] = &set->static_loader_;
#if OSPREY_HAVE_LOADER_ELF
  {
    ExecutableLoader* loader = nullptr;
    OSPREY_RETURN_IF_ERROR(loaders::elf::CreateElfLoader(host_allocator, &loader),
                           "creating the ELF executable loader");
    set->loaders_[set->count_++] = loader;
  }
#endif
#if OSPREY_HAVE_LOADER_SYSTEM
  {
    ExecutableLoader* loader = nullptr;
    OSPREY_RETURN_IF_ERROR(loaders::system::CreateSystemLoader(host_allocator, &loader),
                           "creating the system executable loader");
    set->loaders_[set->count_++] = loader;
  }
#endif
  return set;
}

StatusOr<ref_ptr<DefaultLoaderSet>> DefaultLoaderSet::CreateStaticOnly(
    const StaticLibraryRegistry* static_libraries, osprey::Allocator* host_allocator) {
  OSPREY_ASSIGN_OR_RETURN(auto set, MakeRef<DefaultLoaderSet>(host_allocator, static_libraries));
  set->loaders_[set->count_++] = &set->static_loader_;
  return set;
}

DefaultLoaderSet::~DefaultLoaderSet() {
  // Every loader after the static one was made with host_allocator().
  for (size_t i = 1; i < count_; ++i) host_allocator()->Delete(loaders_[i]);
}

}  // namespace osprey::hal::local
