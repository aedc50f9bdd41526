// libFuzzer target: the module loader and bytecode verifier. Any input must
// load or be refused with a status; a module that loads must also print.
// Digests are not checked, so mutations reach the checks behind them.
#include <cstddef>
#include <cstdint>

#include "vm/api.h"
#include "vm/asm/assembler.h"
#include "vm/builder/module_builder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  // Modules are loaded from aligned memory (segments may ask for 4 KiB).
  vm::AlignedBytes bytes(std::span<const uint8_t>(data, size));
  auto module = vm::BytecodeModule::Load(bytes.span(), nullptr, Allocator::Default(),
                                         vm::LoadOptions{vm::IntegrityCheck::kNone});
  if (!module.ok()) return 0;
  auto text = vm::Disassemble(bytes.span());
  if (!text.ok()) __builtin_trap();  // A loaded module must print.
  // The checked path agrees with the unchecked one on everything else.
  auto checked = vm::BytecodeModule::Load(bytes.span(), nullptr, Allocator::Default());
  (void)checked.ok();
  return 0;
}
