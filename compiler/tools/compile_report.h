// The compile report (osprey-compile --report=FILE.html): one self-contained
// HTML page with the CPU/NPU split of the graph and the reason for every CPU
// fallback, every dispatch in execution order with its device, the NPU
// chains' estimated cycles against the array's peak and each layer's SRAM
// tiling, and the memory plan over time (drawn by the page's script from the
// data embedded in it).
#ifndef OSPREY_COMPILER_TOOLS_COMPILE_REPORT_H_
#define OSPREY_COMPILER_TOOLS_COMPILE_REPORT_H_

#include <string>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/npu/partition.h"

namespace osprey::compiler::tools {

struct ReportInput {
  std::string model;  // The model file.
  std::string target; // --target.
  double compileSeconds = 0;
  // The NPU partition and configuration (null without --accelerator).
  const npu::Partition *partition = nullptr;
  const npu::NpuConfig *config = nullptr;
  // After memory planning.
  const dispatch::DispatchProgram *program = nullptr;
};

std::string renderCompileReport(const ReportInput &input);

} // namespace osprey::compiler::tools

#endif // OSPREY_COMPILER_TOOLS_COMPILE_REPORT_H_
