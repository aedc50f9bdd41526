// Executable loaders turn executable bytes of one format into a
// LocalExecutable. CPU drivers hold a list of loaders in their executable
// cache (see local_executable_cache.h) and pick the first that accepts the
// format.
#ifndef OSPREY_HAL_LOCAL_EXECUTABLE_LOADER_H_
#define OSPREY_HAL_LOCAL_EXECUTABLE_LOADER_H_

#include <cstdint>
#include <span>

#include "hal/executable.h"
#include "hal/local/executable_library.h"
#include "hal/local/local_executable.h"
#include "runtime/base/allocator.h"

namespace osprey::hal::local {

// A host function that libraries may import by name.
struct HostImport {
  const char* name;  // Without the optional-import '?' prefix.
  osprey_import_fn_t fn;
  void* context;
};

// The host functions offered to libraries. Borrowed by loaders for the
// duration of Load(); the entries' functions and contexts must outlive
// every executable loaded with them.
struct ImportTable {
  std::span<const HostImport> imports;
  // Finds |name|; null if absent.
  const HostImport* Find(const char* name) const;
};

class ExecutableLoader {
 public:
  virtual ~ExecutableLoader() = default;

  // Short name for diagnostics ("elf", "static", "system").
  virtual const char* name() const = 0;
  // Whether this loader accepts executables of |format|.
  virtual bool CanLoad(const char* format) const = 0;

  // Loads |params.data| and queries its library. Every offset and size in
  // the input is validated: malformed input yields INVALID_ARGUMENT or
  // DATA_LOSS with a message naming what is wrong, never a crash.
  // UNAVAILABLE if the format is valid but cannot run on this host (e.g. a
  // foreign architecture). Required imports missing from |imports| are
  // NOT_FOUND. |host_allocator| is borrowed for the executable's lifetime.
  virtual StatusOr<ref_ptr<LocalExecutable>> Load(const ExecutableParams& params,
                                                  const ImportTable& imports,
                                                  osprey::Allocator* host_allocator) = 0;
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_EXECUTABLE_LOADER_H_
