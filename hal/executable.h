// Executables (compiled dispatch functions) and the caches that prepare
// them from the bytes of a module.
#ifndef OSPREY_HAL_EXECUTABLE_H_
#define OSPREY_HAL_EXECUTABLE_H_

#include <cstdint>
#include <span>

#include "hal/resource.h"
#include "hal/types.h"
#include "runtime/base/status.h"

namespace osprey::hal {

// What one export (dispatch function) of an executable declares. The HAL
// checks every dispatch against it when the command is recorded.
struct ExportInfo {
  const char* name = "";  // Borrowed from the executable; never null.
  uint32_t binding_count = 0;
  uint32_t constant_count = 0;
  // Bit i set: binding i is written (the bound buffer needs write access
  // and dispatch-storage-write usage). Bindings >= 64 count as written.
  uint64_t binding_write_mask = 0;
  uint32_t local_memory_size = 0;
  uint32_t workgroup_size[3] = {1, 1, 1};

  bool binding_is_written(uint32_t i) const {
    return i >= 64 || ((binding_write_mask >> i) & 1) != 0;
  }
};

class Executable : public Resource {
 public:
  virtual uint32_t export_count() const = 0;
  // |ordinal| < export_count(); the info is borrowed from the executable.
  virtual const ExportInfo& export_info(uint32_t ordinal) const = 0;

  // Finds an export by name; NOT_FOUND if there is none.
  StatusOr<uint32_t> LookupExport(const char* name) const;

  // Identifies the implementation family so a driver can check, without
  // RTTI, that an executable recorded into its command buffers is one it
  // can run (e.g. &hal::local::LocalExecutable::kKind). Null by default.
  virtual const void* kind() const { return nullptr; }
};

enum class ExecutableCachingMode : uint32_t {
  kDefault = 0,
  // The executable may keep pointers into ExecutableParams::data instead of
  // copying it; the caller keeps the data alive while the executable lives.
  kAliasData = 1u << 0,
};

struct ExecutableParams {
  // Format of |data|, e.g. "elf-x86_64", "elf-armv7em", "static", "npu-v1".
  const char* format = "";
  std::span<const uint8_t> data;
  ExecutableCachingMode caching_mode = ExecutableCachingMode::kDefault;
};

class ExecutableCache : public Resource {
 public:
  // Whether PrepareExecutable can handle |format|.
  virtual bool CanPrepareFormat(const char* format) const = 0;

  // Loads and verifies an executable. INVALID_ARGUMENT/DATA_LOSS for bad
  // bytes (the message says what is wrong), UNIMPLEMENTED for a format this
  // device does not run.
  virtual StatusOr<ref_ptr<Executable>> PrepareExecutable(const ExecutableParams& params) = 0;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_EXECUTABLE_H_
