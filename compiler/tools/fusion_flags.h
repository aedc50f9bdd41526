// The command-line flags of fusion's and memory planning's tuning knobs,
// shared by osprey-compile and osprey-opt. The flags are read once, after
// parsing, into the options structs the pipeline passes down.
#ifndef OSPREY_COMPILER_TOOLS_FUSION_FLAGS_H_
#define OSPREY_COMPILER_TOOLS_FUSION_FLAGS_H_

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/structured/fusion.h"

namespace osprey::compiler::tools {

// |options| with its tuning fields (Winograd, depthwise prologues, GEMM
// weight layout) taken from the flags; the microkernel fields stay.
structured::FusionOptions
fusionOptionsFromFlags(structured::FusionOptions options = {});

// |defaults| (the target's, targets::planOptionsFor) with what the flags
// override (--osprey-max-embedded-constant-bytes, when given).
dispatch::PlanOptions planOptionsFromFlags(dispatch::PlanOptions defaults = {});

} // namespace osprey::compiler::tools

#endif // OSPREY_COMPILER_TOOLS_FUSION_FLAGS_H_
