// libFuzzer target: the interpreter on verified modules. Every export of a
// module that loads is called with zero / null arguments under tight limits
// (instructions, memory, stack), with stand-ins for the natives the VM
// tests import. Faults must come back as statuses.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "vm/api.h"
#include "vm/builder/module_builder.h"

namespace {

using namespace osprey;

// expect.* as the VM assembly tests import them: accept anything.
Status Accept(vm::NativeCall&) { return OkStatus(); }
constexpr vm::NativeFunction kExpect[] = {
    {"eq_i32", "ii:", Accept}, {"eq_i64", "II:", Accept}, {"eq_f32", "ff:", Accept},
    {"eq_f64", "FF:", Accept}, {"eq_ref", "rr:", Accept},
};

vm::Instance* SharedInstance() {
  static vm::Instance* instance = vm::Instance::Create(Allocator::Default())->release();
  return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vm::AlignedBytes bytes(std::span<const uint8_t>(data, size));
  auto module = vm::BytecodeModule::Load(bytes.span(), nullptr, Allocator::Default(),
                                         vm::LoadOptions{vm::IntegrityCheck::kNone});
  if (!module.ok()) return 0;
  auto expect = vm::NativeModule::Create("expect", kExpect, Allocator::Default());
  if (!expect.ok()) return 0;
  vm::ContextOptions options;
  options.stack_size = 16 * 1024;
  options.max_memory = 4 << 20;
  options.max_instructions = 200000;
  std::vector<vm::Module*> modules = {expect->get(), module->get()};
  auto context = vm::Context::Create(SharedInstance(), modules, options, Allocator::Default());
  if (!context.ok()) return 0;
  for (uint32_t e = 0; e < (*module)->export_count(); ++e) {
    auto fn = (*context)->LookupFunction((*module)->name(), (*module)->export_info(e).name);
    if (!fn.ok()) continue;
    const vm::Signature& sig = fn->signature();
    vm::Value args[vm::kMaxSignatureValues];
    vm::Value results[vm::kMaxSignatureValues];
    for (uint8_t k = 0; k < sig.arg_count; ++k) {
      switch (sig.args[k]) {
        case 'i': args[k] = vm::Value::I32(int32_t(k)); break;
        case 'I': args[k] = vm::Value::I64(int64_t(k)); break;
        case 'f': args[k] = vm::Value::F32(float(k)); break;
        case 'F': args[k] = vm::Value::F64(double(k)); break;
        default: args[k] = vm::Value::FromRef(vm::Ref()); break;
      }
    }
    Status status = (*context)->Invoke(*fn, std::span<const vm::Value>(args, sig.arg_count),
                                       std::span<vm::Value>(results, sig.result_count));
    status.IgnoreError();
    if ((*context)->stack_bytes_in_use() != 0) __builtin_trap();  // Unwound fully.
  }
  return 0;
}
