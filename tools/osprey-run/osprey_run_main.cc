// osprey-run: loads a module, calls one function with inputs from .npy files
// or the command line, prints the outputs, optionally writes them to .npy
// files and compares them with expected outputs.
#include <cstdio>
#include <string>
#include <vector>

#include "tools/common/flags.h"
#include "tools/common/host_tensor.h"
#include "tools/common/module_runner.h"
#include "tools/common/npy.h"

namespace osprey::tools {
namespace {

constexpr char kUsage[] =
    "Usage: osprey-run --module=model.osp [--device=cpu-sync] [--function=main]\n"
    "                  --input=@in.npy|--input=2x3xf32=1,2,3,4,5,6 ...\n"
    "                  [--output=@out.npy ...] [--expected_output=@ref.npy ...]\n"
    "                  [--tolerance=1e-4] [--task_workers=N]\n"
    "                  [--max_memory=64M] [--deadline_ms=N] [--max_instructions=N]\n"
    "                  [--verify_digest=module|executables|none] [--npu_stats]\n"
    "Exits 0 on success, 1 on any error or output mismatch.";

struct Flags {
  RunOptions run;
  std::vector<std::string> outputs;
  std::vector<std::string> expected_outputs;
  double tolerance = 1e-4;
  int64_t print_max_elements = 1024;
  bool print_outputs = true;
  bool npu_stats = false;
};

// Prints the counters of every device that keeps npu counters (the
// simulated NPU): cycles, MACs against the array's peak, DMA traffic.
Status PrintNpuStats(const ModuleRunner& runner) {
  bool printed = false;
  for (const embed::Device& device : runner.devices()) {
    int64_t pes = 0;
    if (!device.QueryI64("npu.pes", &pes).ok()) continue;
    const char* keys[] = {"npu.total_cycles",   "npu.compute_cycles",    "npu.dma_cycles",
                          "npu.mac_cycles",     "npu.macs",              "npu.dma_bytes_read",
                          "npu.dma_bytes_written", "npu.instructions"};
    int64_t v[8] = {};
    for (int i = 0; i < 8; ++i) {
      OSPREY_RETURN_IF_ERROR(FromEmbedStatus(device.QueryI64(keys[i], &v[i])), "--npu_stats");
    }
    const double peak = double(v[4]) / double(pes);
    std::printf("%s: %lld cycles (compute engine busy %lld, DMA engine busy %lld), "
                "%lld instructions\n",
                device.name(), (long long)v[0], (long long)v[1], (long long)v[2],
                (long long)v[7]);
    std::printf("%s: %lld MACs on %lld PEs: peak %.0f cycles, %lld cycles of MAC instructions "
                "(PE utilization %.1f %%), total %.2fx peak\n",
                device.name(), (long long)v[4], (long long)pes, peak, (long long)v[3],
                v[3] ? 100.0 * peak / double(v[3]) : 0.0, peak > 0 ? double(v[0]) / peak : 0.0);
    std::printf("%s: DMA %lld bytes read, %lld bytes written\n", device.name(),
                (long long)v[5], (long long)v[6]);
    printed = true;
  }
  if (!printed) {
    return InvalidArgumentError("--npu_stats: none of the devices in --device is an npu");
  }
  return OkStatus();
}

Status Run(const Flags& flags) {
  OSPREY_ASSIGN_OR_RETURN(auto runner, ModuleRunner::Create(flags.run));
  OSPREY_ASSIGN_OR_RETURN(auto results, runner->CallAndRead());
  if (flags.print_outputs) {
    for (size_t i = 0; i < results.size(); ++i) {
      std::printf("result[%zu]: %s\n", i, FormatTensor(results[i], flags.print_max_elements).c_str());
    }
  }
  if (flags.npu_stats) OSPREY_RETURN_IF_ERROR(PrintNpuStats(*runner));
  if (flags.outputs.size() > results.size()) {
    return InvalidArgumentError("%zu --output flags but '%s' returned %zu outputs",
                                flags.outputs.size(), runner->function().name(), results.size());
  }
  for (size_t i = 0; i < flags.outputs.size(); ++i) {
    const std::string& target = flags.outputs[i];
    if (target.empty() || target == "-") continue;  // Skip this output.
    if (target[0] != '@') {
      return InvalidArgumentError("--output '%s' must be @file.npy (or '-' to skip)",
                                  target.c_str());
    }
    OSPREY_RETURN_IF_ERROR(WriteNpyFile(target.substr(1), results[i]), "output %zu", i);
  }
  if (flags.expected_outputs.empty()) return OkStatus();
  if (flags.expected_outputs.size() != results.size()) {
    return InvalidArgumentError("%zu --expected_output flags but '%s' returned %zu outputs",
                                flags.expected_outputs.size(), runner->function().name(),
                                results.size());
  }
  int failures = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    OSPREY_ASSIGN_OR_RETURN(HostTensor expected, ParseInputArgument(flags.expected_outputs[i]),
                            "expected output %zu", i);
    Status match = CompareTensors(expected, results[i], flags.tolerance);
    if (match.ok()) {
      std::printf("[ OK ] result[%zu] matches the expected output\n", i);
    } else {
      std::printf("[FAIL] result[%zu]: %s\n", i, match.message());
      ++failures;
    }
  }
  if (failures) {
    return InvalidArgumentError("%d of %zu outputs do not match the expected values", failures,
                                results.size());
  }
  return OkStatus();
}

}  // namespace
}  // namespace osprey::tools

int main(int argc, char** argv) {
  using namespace osprey::tools;
  Flags flags;
  FlagParser parser(kUsage);
  flags.run.AddFlags(parser);
  parser.AddList("output", &flags.outputs,
                 "Where to write each output: @file.npy, or '-' to skip one. In output order.");
  parser.AddList("expected_output", &flags.expected_outputs,
                 "Expected value of each output (@file.npy or inline); all outputs must be "
                 "given. A mismatch exits 1.");
  parser.AddDouble("tolerance", &flags.tolerance,
                   "Allowed difference for --expected_output: |a-e| <= tol*max(1,|e|) for "
                   "floats, floor(tol) for integers.");
  parser.AddInt("print_max_elements", &flags.print_max_elements,
                "Elements printed per output before eliding.");
  parser.AddBool("print_outputs", &flags.print_outputs, "Print the outputs to stdout.");
  parser.AddBool("npu_stats", &flags.npu_stats,
                 "After the call, print the NPU's simulated cycles, MACs, PE utilization and "
                 "DMA traffic.");
  osprey::Status status = parser.Parse(&argc, argv);
  if (!status.ok()) {
    std::fprintf(stderr, "osprey-run: %s\n", status.message());
    return 1;
  }
  if (parser.help_requested()) {
    std::printf("%s\n", parser.Usage().c_str());
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "osprey-run: unexpected argument '%s' (see --help)\n", argv[1]);
    return 1;
  }
  status = Run(flags);
  if (!status.ok()) {
    char text[4096];
    status.ToString(text, sizeof(text));
    std::fprintf(stderr, "osprey-run: %s\n", text);
    return 1;
  }
  return 0;
}
