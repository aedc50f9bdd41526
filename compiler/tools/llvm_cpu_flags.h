// The command-line flags of the LLVM CPU code generator's tuning knobs
// (osprey-compile), read once into CodegenOptions.
#ifndef OSPREY_COMPILER_TOOLS_LLVM_CPU_FLAGS_H_
#define OSPREY_COMPILER_TOOLS_LLVM_CPU_FLAGS_H_

#include "compiler/structured/fusion.h"
#include "compiler/targets/llvm_cpu/codegen_options.h"

namespace osprey::compiler::tools {

// Code generator options from the flags, with the Winograd options of
// |fusion| (the options the program is fused with).
llvm_cpu::CodegenOptions
codegenOptionsFromFlags(const structured::FusionOptions &fusion);

} // namespace osprey::compiler::tools

#endif // OSPREY_COMPILER_TOOLS_LLVM_CPU_FLAGS_H_
