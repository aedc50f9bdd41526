// VM backend: turns a dispatch program's host side (buffer allocation,
// command buffer recording, dispatch order, barriers, waits) into bytecode
// through the VM module builder and packages it with the executable into one
// .osp module.
#ifndef OSPREY_COMPILER_VM_BACKEND_MODULE_EMITTER_H_
#define OSPREY_COMPILER_VM_BACKEND_MODULE_EMITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/target.h"

namespace osprey::compiler::vm_backend {

// Emits a module named |moduleName| exporting `main`, whose arguments and
// results are hal.buffer_views of the graph inputs and outputs in order.
// Bound constants become 64-byte aligned rodata segments that the module
// initializer wraps once per context (hal.buffer.wrap_rodata, zero-copy) into
// ref globals. main checks each input's shape and element type, allocates
// the outputs, takes the context's arena of program.arenaSize bytes from a
// ref global (allocating it on the first call; transients are subspans at
// their planned offsets), records one dispatch per region of |executable|
// (the dispatch ABI of targets::BindingLayout: export i = region i, the
// region's bindings in order, no push constants) with the planned
// barriers, submits and waits, puts
// the arena back and returns views of the outputs. The module records the
// attributes "arena_size" and "arena_alignment", and for graph input or
// output i "main.input.<i>.name" / "main.output.<i>.name" (the model's names;
// shape checks name inputs by them) with ".type" (e.g. "2x3xf32"); when the
// arena is not empty it also exports `set_arena(hal.buffer)`, which hands the
// context an arena the application supplies (INVALID_ARGUMENT if shorter than
// arena_size). Empty values share one zero-length buffer. planMemory must
// have run. UNIMPLEMENTED for element types other than f32 at the module
// boundary and for graphs with more inputs and outputs than the module's
// attribute limit can name.
absl::StatusOr<std::vector<uint8_t>>
emitModule(const dispatch::DispatchProgram &program,
           const targets::Executable &executable,
           const std::string &moduleName);

// One executable of a module for several devices: export k computes
// program.regions[regions[k]]. It runs on the context's default device
// (hal.device), or with |selectByFormat| on the device hal.devices.select
// finds for its format (a context without one fails with NOT_FOUND naming
// the format).
struct ModuleExecutable {
  const targets::Executable *executable = nullptr;
  std::vector<unsigned> regions;
  bool selectByFormat = false;
};

// The same for regions spread over several executables, e.g. the CPU's and
// an accelerator's. Consecutive dispatches of one
// executable are recorded into one command buffer; the command buffers are
// submitted in order, each waiting on a semaphore the previous one signals,
// and main waits for the last. With one executable the module is the one
// emitModule above writes. INVALID_ARGUMENT unless every region is in
// exactly one executable.
absl::StatusOr<std::vector<uint8_t>>
emitModule(const dispatch::DispatchProgram &program,
           const std::vector<ModuleExecutable> &executables,
           const std::string &moduleName);

// One way to compute the graph: a program and its executables.
struct ModuleVariant {
  const dispatch::DispatchProgram *program = nullptr;
  std::vector<ModuleExecutable> executables;
};

// A module holding several variants of the same graph (same arguments and
// results): each call runs the first variant for whose selected formats the
// context has a device (hal.devices.count/get and the query
// "device.executable_format=<format>"), else the last one, which must run on
// the default device alone (e.g. the CPU code of a model whose first variant
// offloads to an NPU). The variants share the arena (the largest size);
// each has its own constants. With one variant this is the module above.
absl::StatusOr<std::vector<uint8_t>>
emitModule(const std::vector<ModuleVariant> &variants,
           const std::string &moduleName);

} // namespace osprey::compiler::vm_backend

#endif // OSPREY_COMPILER_VM_BACKEND_MODULE_EMITTER_H_
