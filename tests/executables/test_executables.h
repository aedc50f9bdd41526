// The dispatch libraries of tests/executables/, built from C by clang-19 and
// ld.lld-19 and embedded into the osprey_test_executables library.
#ifndef OSPREY_TESTS_EXECUTABLES_TEST_EXECUTABLES_H_
#define OSPREY_TESTS_EXECUTABLES_TEST_EXECUTABLES_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace osprey::testing {

// Whether any library was built (false when clang-19/ld.lld-19 are missing).
bool TestExecutablesAvailable();

// Bytes of library |name| (e.g. "vector_add") built for |arch| ("x86_64",
// "aarch64", "armv7em", "riscv32", "riscv64"); empty if it was not built.
// Static storage, aligned to 16 bytes.
std::span<const uint8_t> TestExecutable(const char* name, const char* arch);

// Path of the same library in the build tree; null if it was not built.
const char* TestExecutablePath(const char* name, const char* arch);

namespace internal {
struct TestExecutableEntry {
  const char* id;  // "<name>_<arch>"
  const unsigned char* data;
  const size_t* size;
  const char* path;
};
extern const TestExecutableEntry kTestExecutables[];
extern const size_t kTestExecutableCount;
}  // namespace internal

}  // namespace osprey::testing

#endif  // OSPREY_TESTS_EXECUTABLES_TEST_EXECUTABLES_H_
