// An executable whose dispatch functions run on the host CPU through the
// fixed ABI of executable_library.h. Shared by every CPU driver and made by
// the loaders in hal/local/loaders/.
#ifndef OSPREY_HAL_LOCAL_LOCAL_EXECUTABLE_H_
#define OSPREY_HAL_LOCAL_LOCAL_EXECUTABLE_H_

#include <cstdint>

#include "hal/executable.h"
#include "hal/local/executable_library.h"

namespace osprey::hal::local {

class LocalExecutable : public Executable {
 public:
  // Value of kind() for every LocalExecutable (compare addresses).
  static const char kKind;
  const void* kind() const override { return &kKind; }

  // |executable| as a LocalExecutable, or null if it is some other kind.
  static const LocalExecutable* Cast(const Executable* executable) {
    return executable && executable->kind() == &kKind
               ? static_cast<const LocalExecutable*>(executable)
               : nullptr;
  }

  // Name of the library the code came from, for diagnostics. Borrowed.
  virtual const char* library_name() const { return "unknown"; }

  // The environment passed to every dispatch function (imports resolved).
  // Borrowed; valid while the executable lives.
  virtual const osprey_executable_environment_v1_t* environment() const = 0;
  // The dispatch function of export |ordinal| (< export_count()).
  virtual osprey_dispatch_fn_t function(uint32_t ordinal) const = 0;

  // Runs one workgroup; returns the dispatch function's result (0 = ok).
  // Hot path: no validation beyond a debug check of |ordinal|.
  int CallWorkgroup(uint32_t ordinal, const osprey_dispatch_state_v1_t* dispatch_state,
                    const osprey_workgroup_state_v1_t* workgroup_state) const {
    OSPREY_DCHECK(ordinal < export_count());
    return function(ordinal)(environment(), dispatch_state, workgroup_state);
  }
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_LOCAL_EXECUTABLE_H_
