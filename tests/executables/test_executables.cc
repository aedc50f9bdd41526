// Lookup of the embedded test dispatch libraries.
#include "tests/executables/test_executables.h"

#include <cstring>

namespace osprey::testing {

namespace {
const internal::TestExecutableEntry* Find(const char* name, const char* arch) {
  const size_t name_len = strlen(name);
  for (size_t i = 0; i < internal::kTestExecutableCount; ++i) {
    const auto& e = internal::kTestExecutables[i];
    if (!e.id) continue;
    if (strncmp(e.id, name, name_len) == 0 && e.id[name_len] == '_' &&
        strcmp(e.id + name_len + 1, arch) == 0) {
      return &e;
    }
  }
  return nullptr;
}
}  // namespace

bool TestExecutablesAvailable() {
  return internal::kTestExecutableCount > 0 && internal::kTestExecutables[0].id != nullptr;
}

std::span<const uint8_t> TestExecutable(const char* name, const char* arch) {
  const auto* e = Find(name, arch);
  if (!e) return {};
  return {reinterpret_cast<const uint8_t*>(e->data), *e->size};
}

const char* TestExecutablePath(const char* name, const char* arch) {
  const auto* e = Find(name, arch);
  return e ? e->path : nullptr;
}

}  // namespace osprey::testing
