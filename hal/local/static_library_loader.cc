// Static library registry and loader.
#include "hal/local/static_library_loader.h"

#include <stdio.h>

#include <cstring>

#include "hal/local/library_executable.h"

namespace osprey::hal::local {

Status StaticLibraryRegistry::Register(const char* name,
                                       osprey_executable_library_query_fn_t query) {
  if (!name || name[0] == '\0') return InvalidArgumentError("static library name is empty");
  if (!query) return InvalidArgumentError("static library '%s' has a null query function", name);
  if (Find(name, strlen(name))) {
    return AlreadyExistsError("static library '%s' is already registered", name);
  }
  if (count_ == kMaxLibraries) {
    return ResourceExhaustedError("static library registry is full (%zu libraries); cannot add '%s'",
                                  kMaxLibraries, name);
  }
  entries_[count_++] = {name, query};
  return OkStatus();
}

osprey_executable_library_query_fn_t StaticLibraryRegistry::Find(const char* name,
                                                                  size_t length) const {
  for (size_t i = 0; i < count_; ++i) {
    if (strncmp(entries_[i].name, name, length) == 0 && entries_[i].name[length] == '\0') {
      return entries_[i].query;
    }
  }
  return nullptr;
}

bool StaticLibraryLoader::CanLoad(const char* format) const {
  return format && strcmp(format, kStaticLibraryFormat) == 0;
}

StatusOr<ref_ptr<LocalExecutable>> StaticLibraryLoader::Load(const ExecutableParams& params,
                                                             const ImportTable& imports,
                                                             osprey::Allocator* host_allocator) {
  const char* name = reinterpret_cast<const char*>(params.data.data());
  size_t length = params.data.size();
  // Tolerate a terminator included in the data.
  if (length > 0 && name[length - 1] == '\0') --length;
  if (length == 0) {
    return InvalidArgumentError("static executable data is empty (it must hold a library name)");
  }
  if (length > LibraryExecutable::kMaxNameLength || memchr(name, '\0', length)) {
    return InvalidArgumentError(
        "static executable data is not a library name (%zu bytes, embedded NUL or longer than "
        "%zu)",
        params.data.size(), LibraryExecutable::kMaxNameLength);
  }
  osprey_executable_library_query_fn_t query =
      registry_ ? registry_->Find(name, length) : nullptr;
  if (!query) {
    char known[256];
    size_t used = 0;
    known[0] = '\0';
    const size_t count = registry_ ? registry_->size() : 0;
    for (size_t i = 0; i < count && used < sizeof(known); ++i) {
      int n = snprintf(known + used, sizeof(known) - used, "%s'%s'", i ? ", " : "",
                       registry_->name(i));
      if (n < 0) break;
      used += size_t(n);
    }
    return NotFoundError("static library '%.*s' is not registered (registered: %s)", int(length),
                         name, count ? known : "none");
  }
  LibraryExecutableOptions options;
  options.imports = &imports;
  OSPREY_ASSIGN_OR_RETURN(auto executable,
                          LibraryExecutable::CreateFromQuery(query, std::move(options),
                                                             host_allocator),
                          "loading static library '%.*s'", int(length), name);
  return ref_ptr<LocalExecutable>(std::move(executable));
}

}  // namespace osprey::hal::local
