// VM test helpers.
#include "vm/test/test_util.h"

#include <atomic>
#include <cstring>
#include <vector>

namespace osprey::vm::testing {

namespace {

std::atomic<int> g_expectations{0};

Status EqI32(NativeCall& call) {
  ++g_expectations;
  if (call.i32(0) != call.i32(1)) {
    return FailedPreconditionError("expect.eq_i32: got %d, expected %d", call.i32(0), call.i32(1));
  }
  return OkStatus();
}
Status EqI64(NativeCall& call) {
  ++g_expectations;
  if (call.i64(0) != call.i64(1)) {
    return FailedPreconditionError("expect.eq_i64: got %lld, expected %lld",
                                   static_cast<long long>(call.i64(0)),
                                   static_cast<long long>(call.i64(1)));
  }
  return OkStatus();
}
Status EqF32(NativeCall& call) {
  ++g_expectations;
  float a = call.f32(0), b = call.f32(1);
  if (!(a == b || (a != a && b != b))) {
    return FailedPreconditionError("expect.eq_f32: got %.9g, expected %.9g", double(a), double(b));
  }
  return OkStatus();
}
Status EqF64(NativeCall& call) {
  ++g_expectations;
  double a = call.f64(0), b = call.f64(1);
  if (!(a == b || (a != a && b != b))) {
    return FailedPreconditionError("expect.eq_f64: got %.17g, expected %.17g", a, b);
  }
  return OkStatus();
}
Status EqRef(NativeCall& call) {
  ++g_expectations;
  if (call.ref(0).get() != call.ref(1).get()) {
    return FailedPreconditionError("expect.eq_ref: refs differ (%p vs %p)",
                                   static_cast<void*>(call.ref(0).get()),
                                   static_cast<void*>(call.ref(1).get()));
  }
  return OkStatus();
}

constexpr NativeFunction kExpectFunctions[] = {
    {"eq_i32", "ii:", EqI32}, {"eq_i64", "II:", EqI64}, {"eq_f32", "ff:", EqF32},
    {"eq_f64", "FF:", EqF64}, {"eq_ref", "rr:", EqRef},
};

}  // namespace

StatusOr<LoadedModule> LoadBytes(std::span<const uint8_t> file, const LoadOptions& options) {
  LoadedModule loaded;
  loaded.bytes = AlignedBytes(file);
  OSPREY_ASSIGN_OR_RETURN(loaded.module,
                          BytecodeModule::Load(loaded.bytes.span(), nullptr, Allocator::Default(),
                                               options));
  return loaded;
}

StatusOr<LoadedModule> LoadAssembly(std::string_view text, const BuildOptions& options) {
  OSPREY_ASSIGN_OR_RETURN(std::vector<uint8_t> file, AssembleModule(text, options));
  return LoadBytes(file);
}

ref_ptr<NativeModule> CreateExpectModule() {
  auto module = NativeModule::Create("expect", kExpectFunctions, Allocator::Default());
  return std::move(module).value();
}

int ExpectationCount() { return g_expectations.load(); }

std::string StatusText(const Status& status) {
  char buffer[2048];
  status.ToString(buffer, sizeof(buffer));
  return buffer;
}

}  // namespace osprey::vm::testing
