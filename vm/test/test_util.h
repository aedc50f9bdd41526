// Helpers for VM tests: assembling and loading modules, and the "expect"
// native module that assembly tests call to assert values.
#ifndef OSPREY_VM_TEST_TEST_UTIL_H_
#define OSPREY_VM_TEST_TEST_UTIL_H_

#include <string>
#include <string_view>

#include "vm/api.h"
#include "vm/asm/assembler.h"
#include "vm/builder/module_builder.h"

namespace osprey::vm::testing {

// A loaded module and the aligned bytes it borrows.
struct LoadedModule {
  AlignedBytes bytes;
  ref_ptr<BytecodeModule> module;
};

// Assembles |text| and loads it. Errors from either step are returned.
StatusOr<LoadedModule> LoadAssembly(std::string_view text, const BuildOptions& options = {});
// Loads |file| from aligned storage. Digests are not checked unless
// |options| says so: loader tests build modules field by field and flip
// bytes to reach the checks behind the digest.
StatusOr<LoadedModule> LoadBytes(std::span<const uint8_t> file,
                                 const LoadOptions& options = {IntegrityCheck::kNone});

// The "expect" module: eq_i32(i32,i32), eq_i64, eq_f32, eq_f64 (bitwise,
// NaN equals NaN) and eq_ref(ref,ref) (same object). A mismatch returns
// FAILED_PRECONDITION with both values.
ref_ptr<NativeModule> CreateExpectModule();
// Number of expect.* calls made so far (process-wide).
int ExpectationCount();

// "CODE: message" of |status|.
std::string StatusText(const Status& status);

}  // namespace osprey::vm::testing

#endif  // OSPREY_VM_TEST_TEST_UTIL_H_
