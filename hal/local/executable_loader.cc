// Import table lookup.
#include "hal/local/executable_loader.h"

#include <cstring>

#include "hal/local/local_executable.h"

namespace osprey::hal::local {

const char LocalExecutable::kKind = 0;

const HostImport* ImportTable::Find(const char* name) const {
  if (!name) return nullptr;
  for (const HostImport& import : imports) {
    if (import.name && strcmp(import.name, name) == 0) return &import;
  }
  return nullptr;
}

}  // namespace osprey::hal::local
