// npu_model_report: partitions ONNX models for an npu-v1 configuration and
// runs every NPU chain's command stream on the simulator (random int8 data),
// printing the partition and, per model, the simulated cycles against the
// accelerator's peak (MACs / PEs), the share of MACs offloaded and the PE
// utilization of the MAC instructions. The numbers of docs/npu.md's
// "Whole models" table come from here.
//
//   npu_model_report [--accelerator=npu-v1:pes=64,sram=256KiB] [--verbose]
//                    model.onnx ...
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/graph/passes/pass_manager.h"
#include "compiler/import/onnx/importer.h"
#include "compiler/targets/npu/graph_layers.h"
#include "compiler/targets/npu/partition.h"
#include "compiler/targets/npu/stream_emitter.h"
#include "compiler/targets/npu/testing/run_stream.h"

namespace osprey::compiler::npu {
namespace {

struct ChainRun {
  uint64_t cycles = 0, macCycles = 0, macs = 0, dmaBytes = 0;
};

// Emits |ops| (one chain, in order) as one stream with tensors passed
// between consecutive layers resident, and runs it.
absl::StatusOr<ChainRun> runChain(const graph::Graph &graph,
                                  const std::vector<const graph::Op *> &ops,
                                  const NpuConfig &config, std::mt19937 &rng) {
  NpuChain chain;
  std::map<const graph::Value *, uint32_t> resident; // value -> tensor id
  std::map<const graph::Value *, uint32_t> bound;    // value -> binding
  std::set<const graph::Op *> inChain(ops.begin(), ops.end());
  uint32_t nextBinding = 0;
  std::vector<uint64_t> bindingBytes;
  auto newBinding = [&](uint64_t bytes) {
    bindingBytes.push_back(bytes);
    return nextBinding++;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    auto layer = layerFromOp(*ops[i]);
    if (!layer.ok()) {
      return layer.status();
    }
    auto operandFor = [&](const graph::Value *v, const Shape &shape) {
      auto it = resident.find(v);
      if (it != resident.end()) {
        return Operand::resident(it->second);
      }
      auto b = bound.find(v);
      if (b == bound.end()) {
        b = bound.emplace(v, newBinding(uint64_t(shape.elements()))).first;
      }
      return Operand::memory(b->second);
    };
    layer->in = operandFor(ops[i]->operand(0), layer->input);
    if (layer->hasSecondInput()) {
      layer->in2 = operandFor(ops[i]->operand(1), layer->input);
    }
    // Resident when only the next layer of the chain reads the result.
    const graph::Value *result = ops[i]->result();
    std::vector<graph::Op *> users = graph.users(result);
    bool onlyNext = i + 1 < ops.size() && !users.empty();
    for (const graph::Op *user : users) {
      onlyNext = onlyNext && user == ops[i + 1];
    }
    bool isOutput = false;
    for (const graph::Value *out : graph.outputs()) {
      isOutput = isOutput || out == result;
    }
    if (onlyNext && !isOutput) {
      uint32_t id = uint32_t(resident.size());
      resident[result] = id;
      layer->dst = Operand::resident(id);
    } else {
      uint32_t b = newBinding(uint64_t(layer->output.elements()));
      bound[result] = b;
      layer->dst = Operand::memory(b);
    }
    chain.layers.push_back(std::move(*layer));
  }
  chain.weightBinding = newBinding(0);
  chain.scratchBinding = newBinding(0);
  auto stream = emitChain(chain, config);
  if (!stream.ok()) {
    return stream.status();
  }
  std::vector<std::vector<uint8_t>> bindings(bindingBytes.size());
  for (size_t b = 0; b < bindings.size(); ++b) {
    std::vector<int8_t> data = testing::randomTensor(int64_t(bindingBytes[b]), rng);
    bindings[b].assign(data.begin(), data.end());
  }
  bindings[chain.weightBinding] = stream->weights;
  bindings[chain.scratchBinding].assign(stream->scratchBytes, 0);
  testing::RunResult run = testing::runStream(*stream, config, bindings);
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
  auto partition = partitionGraph(**graph, *config, OffloadMode::Auto);
  if (!partition.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(),
                 std::string(partition.status().message()).c_str());
    return 1;
  }
  if (verbose) {
    std::printf("%s", formatPartition(*partition).c_str());
  }
  std::mt19937 rng(1);
  ChainRun total;
  for (const auto &chainOps : partition->chains) {
    std::vector<const graph::Op *> ops;
    for (size_t i : chainOps) {
      ops.push_back(partition->ops[i].op);
    }
    auto run = runChain(**graph, ops, *config, rng);
    if (!run.ok()) {
      std::fprintf(stderr, "%s: chain at '%s': %s\n", path.c_str(),
                   ops.front()->nodeName().c_str(),
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
