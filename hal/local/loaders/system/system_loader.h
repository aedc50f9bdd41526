// The system loader: hands executable libraries to the platform's dynamic
// linker (dlopen) instead of the embedded ELF loader, so debuggers and
// profilers (gdb, perf) see them as ordinary shared objects with symbols.
// Formats "system-elf-<arch>" for the host's own machine, e.g.
// "system-elf-x86_64". Hosted POSIX builds only; meant for debugging and
// profiling trusted libraries.
#ifndef OSPREY_HAL_LOCAL_LOADERS_SYSTEM_SYSTEM_LOADER_H_
#define OSPREY_HAL_LOCAL_LOADERS_SYSTEM_SYSTEM_LOADER_H_

#include "hal/local/executable_loader.h"
#include "runtime/base/allocator.h"
#include "runtime/base/status.h"

namespace osprey::hal::local::loaders::system {

// Thread-safe: Load() may be called from several threads at once.
class SystemLoader final : public ExecutableLoader {
 public:
  // Libraries are written to |temp_dir| (borrowed; must outlive the loader;
  // null: $TMPDIR, else /tmp) and removed when their executable is
  // destroyed, so tools can read the file while it is loaded.
  explicit SystemLoader(const char* temp_dir = nullptr) : temp_dir_(temp_dir) {}

  const char* name() const override { return "system"; }
  // True for "system-elf-<host arch>".
  bool CanLoad(const char* format) const override;

  // Checks the bytes with the embedded ELF parser first (so malformed files
  // never reach the dynamic linker; same errors as ElfImage::Load), writes
  // them to a temporary file and dlopen()s it. INVALID_ARGUMENT for a
  // format that is not "system-elf-*" or does not match the file;
  // UNAVAILABLE for another machine's code or when the dynamic linker
  // refuses the file (its message included); INTERNAL if the temporary file
  // cannot be written.
  StatusOr<ref_ptr<LocalExecutable>> Load(const ExecutableParams& params,
                                          const ImportTable& imports,
                                          osprey::Allocator* host_allocator) override;

 private:
  const char* temp_dir_;
};

// Creates a SystemLoader (default temp directory) in memory from
// |allocator|; the caller deletes it with allocator->Delete().
Status CreateSystemLoader(osprey::Allocator* allocator, ExecutableLoader** out_loader);

}  // namespace osprey::hal::local::loaders::system

#endif  // OSPREY_HAL_LOCAL_LOADERS_SYSTEM_SYSTEM_LOADER_H_
