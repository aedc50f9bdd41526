// The VM's public API in one include: load modules, link them into a
// context, call exports, and write native modules.
//
//   ref_ptr<Instance> instance = Instance::Create(allocator);
//   ref_ptr<BytecodeModule> module = BytecodeModule::Load(file_bytes, owner, allocator);
//   Module* modules[] = {hal_module, module.get()};
//   ref_ptr<Context> context = Context::Create(instance, modules, {}, allocator);
//   Function main = context->LookupFunction("model.main");
//   context->Invoke(main, args, results);
//
// Design notes and the instruction set: docs/vm.md.
#ifndef OSPREY_VM_API_H_
#define OSPREY_VM_API_H_

#include "vm/buffer.h"           // IWYU pragma: export
#include "vm/bytecode_module.h"  // IWYU pragma: export
#include "vm/context.h"          // IWYU pragma: export
#include "vm/instance.h"         // IWYU pragma: export
#include "vm/list.h"             // IWYU pragma: export
#include "vm/module.h"           // IWYU pragma: export
#include "vm/native_module.h"    // IWYU pragma: export
#include "vm/opcodes.h"          // IWYU pragma: export
#include "vm/ref.h"              // IWYU pragma: export
#include "vm/signature.h"        // IWYU pragma: export
#include "vm/value.h"            // IWYU pragma: export

#endif  // OSPREY_VM_API_H_
