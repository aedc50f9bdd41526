// libFuzzer target: the ONNX importer and the compile pipeline behind it up
// to code generation (graph passes, structured ops and fusion, dispatch
// regions and memory planning).
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/graph/passes/pass_manager.h"
#include "compiler/import/onnx/importer.h"
#include "compiler/structured/fusion.h"
#include "compiler/structured/lower_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey::compiler;
  // Big tensors are legitimate but slow; they say nothing new.
  if (size > (1u << 20)) return 0;
  auto graph = onnximport::importOnnxBytes(std::string(reinterpret_cast<const char*>(data), size),
                                           "/nonexistent");
  if (!graph.ok()) return 0;
  graph::PassManager pm;
  for (const std::string& name : graph::defaultPipeline()) {
    if (!pm.addPasses(name).ok()) __builtin_trap();
  }
  if (!pm.run(**graph).ok()) return 0;
  auto program = structured::lowerToStructured(**graph);
  if (!program.ok()) return 0;
  // An AVX-512-shaped target: the widest fusion decisions (Winograd too).
  structured::FusionOptions options;
  options.vectorWidth = 16;
  options.kernelRows = 7;
  options.kernelVectors = 3;
  if (!structured::fuseAndTile(*program, options).ok()) return 0;
  auto dispatch = dispatch::formDispatchRegions(std::move(*program));
  if (!dispatch.ok()) return 0;
  (void)dispatch::planMemory(*dispatch).ok();
  return 0;
}
