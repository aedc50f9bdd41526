// LocalExecutableCache: format dispatch over a loader list.
#include "hal/local/local_executable_cache.h"

#include <stdio.h>

#include <utility>

namespace osprey::hal::local {

StatusOr<ref_ptr<LocalExecutableCache>> LocalExecutableCache::Create(
    std::span<ExecutableLoader* const> loaders, ImportTable imports, ref_ptr<RefObject> owner,
    osprey::Allocator* host_allocator) {
  if (loaders.size() > kMaxLoaders) {
    return InvalidArgumentError("%zu executable loaders given; at most %zu supported",
                                loaders.size(), kMaxLoaders);
  }
  for (size_t i = 0; i < loaders.size(); ++i) {
    if (!loaders[i]) return InvalidArgumentError("executable loader %zu is null", i);
  }
  OSPREY_ASSIGN_OR_RETURN(auto cache,
                          MakeRef<LocalExecutableCache>(host_allocator, imports, std::move(owner)));
  for (ExecutableLoader* loader : loaders) cache->loaders_[cache->loader_count_++] = loader;
  return cache;
}

bool LocalExecutableCache::CanPrepareFormat(const char* format) const {
  for (size_t i = 0; i < loader_count_; ++i) {
    if (loaders_[i]->CanLoad(format)) return true;
  }
  return false;
}

StatusOr<ref_ptr<Executable>> LocalExecutableCache::PrepareExecutable(
    const ExecutableParams& params) {
  const char* format = params.format ? params.format : "";
  for (size_t i = 0; i < loader_count_; ++i) {
    if (!loaders_[i]->CanLoad(format)) continue;
    OSPREY_ASSIGN_OR_RETURN(auto executable,
                            loaders_[i]->Load(params, imports_, host_allocator()),
                            "preparing executable of format '%s' with the %s loader", format,
                            loaders_[i]->name());
    return ref_ptr<Executable>(std::move(executable));
  }
  char names[128];
  size_t used = 0;
  names[0] = '\0';
  for (size_t i = 0; i < loader_count_ && used < sizeof(names); ++i) {
    int n = snprintf(names + used, sizeof(names) - used, "%s%s", i ? ", " : "",
                     loaders_[i]->name());
    if (n < 0) break;
    used += size_t(n);
  }
  return UnimplementedError("no executable loader accepts format '%s' (loaders: %s)", format,
                            loader_count_ ? names : "none");
}

}  // namespace osprey::hal::local
