// npu_model_report: partitions ONNX models for an npu-v1 configuration as
// osprey-compile does (NpuOffload::plan) and runs every NPU chain's command
// stream on the simulator (random int8 data),
// printing the partition and, per model, the simulated cycles against the
// accelerator's peak (MACs / PEs), the share of MACs offloaded and the PE
// utilization of the MAC instructions. The numbers of docs/npu.md's
// "Whole models" table come from here.
//
//   npu_model_report [--accelerator=npu-v1:pes=64,sram=256KiB] [--verbose]
//                    model.onnx ...
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "compiler/graph/passes/pass_manager.h"
#include "compiler/import/onnx/importer.h"
#include "compiler/targets/npu/offload.h"
#include "compiler/targets/npu/stream_emitter.h"
#include "compiler/targets/npu/testing/run_stream.h"

namespace osprey::compiler::npu {
namespace {

struct ChainRun {
  uint64_t cycles = 0, macCycles = 0, macs = 0, dmaBytes = 0;
};

// Runs the stream |kernel| was compiled to, its activation inputs filled
// with random int8 data.
absl::StatusOr<ChainRun> runChain(const NpuKernel &kernel, const NpuConfig &config,
                                  std::mt19937 &rng) {
  const CompiledStream &stream = kernel.trial();
  // Binding sizes from the layers' memory operands.
  std::vector<uint64_t> bytes(kernel.outputOperand() + 2, 0);
  for (const NpuLayer &l : kernel.chain().layers) {
    auto note = [&](const Operand &op, const Shape &shape) {
      if (op.kind == Operand::Kind::Binding) {
        bytes[op.binding] = std::max(bytes[op.binding], op.offset + shape.elements());
      }
    };
    note(l.in, l.input);
    if (l.hasSecondInput()) {
      note(l.in2, l.input);
    }
    note(l.dst, l.output);
  }
  std::vector<std::vector<uint8_t>> bindings(bytes.size());
  for (size_t b = 0; b < bindings.size(); ++b) {
    std::vector<int8_t> data = testing::randomTensor(int64_t(bytes[b]), rng);
    bindings[b].assign(data.begin(), data.end());
  }
  bindings[kernel.weightOperand()] = stream.weights;
  testing::RunResult run = testing::runStream(stream, config, bindings);
  if (!run.status.ok()) {
    return run.status;
  }
  ChainRun r;
  r.cycles = run.counters.total_cycles;
  r.macCycles = run.counters.mac_cycles;
  r.macs = run.counters.macs;
  r.dmaBytes = run.counters.dma_bytes_read + run.counters.dma_bytes_written;
  return r;
}

int reportModel(const std::string &path, const std::string &spec, bool verbose) {
  auto config = parseNpuConfig(spec);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", std::string(config.status().message()).c_str());
    return 1;
  }
  auto graph = onnximport::importOnnxFile(path);
  if (!graph.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(),
                 std::string(graph.status().message()).c_str());
    return 1;
  }
  graph::PassManager pm;
  for (const std::string &name : graph::defaultPipeline()) {
    if (absl::Status s = pm.addPasses(name); !s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  if (absl::Status s = pm.run(**graph); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), std::string(s.message()).c_str());
    return 1;
  }
  auto offload = NpuOffload::plan(**graph, *config, OffloadMode::Auto);
  if (!offload.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(),
                 std::string(offload.status().message()).c_str());
    return 1;
  }
  const Partition *partition = &(*offload)->partition();
  if (verbose) {
    std::printf("%s", formatPartition(*partition).c_str());
  }
  std::mt19937 rng(1);
  ChainRun total;
  for (size_t i = 0; i < (*offload)->chainCount(); ++i) {
    const NpuKernel &kernel = (*offload)->kernel(i);
    auto run = runChain(kernel, *config, rng);
    if (!run.ok()) {
      std::fprintf(stderr, "%s: chain at '%s': %s\n", path.c_str(),
                   kernel.chain().layers.front().name.c_str(),
                   std::string(run.status().message()).c_str());
      return 1;
    }
    total.cycles += run->cycles;
    total.macCycles += run->macCycles;
    total.macs += run->macs;
    total.dmaBytes += run->dmaBytes;
  }
  const double peak = double(partition->npuMacs) / double(config->peCount);
  std::string name = path.substr(path.find_last_of('/') + 1);
  std::printf("| %s | %s | %zu | %.1f %% | %.0f | %llu | %+.1f %% | %.1f %% | %llu |\n",
              name.c_str(), spec.c_str(), partition->chains.size(),
              partition->totalMacs ? 100.0 * double(partition->npuMacs) /
                                         double(partition->totalMacs)
                                   : 0.0,
              peak, (unsigned long long)total.cycles,
              peak > 0 ? 100.0 * (double(total.cycles) / peak - 1.0) : 0.0,
              total.macCycles ? 100.0 * double(total.macs) /
                                    (double(config->peCount) * double(total.macCycles))
                              : 0.0,
              (unsigned long long)total.dmaBytes);
  return 0;
}

} // namespace
} // namespace osprey::compiler::npu

int main(int argc, char **argv) {
  std::vector<std::string> specs, models;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--accelerator=", 0) == 0) {
      specs.push_back(arg.substr(14));
    } else if (arg == "--verbose") {
      verbose = true;
    } else {
      models.push_back(arg);
    }
  }
  if (specs.empty()) {
    specs.push_back("npu-v1:pes=64,sram=256KiB");
  }
  std::printf("| model | accelerator | chains | MACs on the NPU | peak cycles | "
              "simulated cycles | over peak | PE utilization (MAC instructions) | "
              "DMA bytes |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  int status = 0;
  for (const std::string &model : models) {
    for (const std::string &spec : specs) {
      status |= osprey::compiler::npu::reportModel(model, spec, verbose);
    }
  }
  return status;
}
