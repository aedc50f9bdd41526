// Executable export lookup.
#include "hal/executable.h"

#include <cstring>

namespace osprey::hal {

StatusOr<uint32_t> Executable::LookupExport(const char* name) const {
  if (!name) return InvalidArgumentError("export name is null");
  const uint32_t count = export_count();
  for (uint32_t i = 0; i < count; ++i) {
    if (strcmp(export_info(i).name, name) == 0) return i;
  }
  return NotFoundError("executable has no export named '%s' (%u exports)", name, count);
}

}  // namespace osprey::hal
