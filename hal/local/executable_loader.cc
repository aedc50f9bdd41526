// Import table lookup.
#include "hal/local/executable_loader.h"

#include <cstring>

namespace osprey::hal::local {

const HostImport* ImportTable::Find(const char* name) const {
  if (!name) return nullptr;
  for (const HostImport& import : imports) {
    if (import.name && strcmp(import.name, name) == 0) return &import;
  }
  return nullptr;
}

}  // namespace osprey::hal::local
