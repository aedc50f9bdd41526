// The MLPerf Tiny layer sequences of DS-CNN and ResNet-8 compiled as NPU
// chains (one stream per model, activations resident in SRAM), run on the
// simulator and checked against the reference. Prints simulated cycles
// against the accelerator's peak (MACs / PEs), the overhead over it and the
// PE utilization of the conv layers; then times compilation.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>

#include "compiler/targets/npu/stream_emitter.h"
#include "compiler/targets/npu/testing/model_chains.h"
#include "compiler/targets/npu/testing/run_stream.h"

namespace osprey::compiler::npu {
namespace {

using testing::ModelChain;

NpuConfig benchConfig(uint32_t pes) {
  auto c = parseNpuConfig(pes == 64 ? "npu-v1:pes=64,sram=256KiB"
                                    : "npu-v1:pes=256,sram=256KiB");
  return *c;
}

struct Model {
  const char *name;
  ModelChain (*make)(std::mt19937 &);
};

ModelChain dsCnn(std::mt19937 &rng) { return testing::dsCnnChain(rng, false); }
ModelChain dsCnnHead(std::mt19937 &rng) {
  return testing::dsCnnChain(rng, true);
}
ModelChain resNet8Convs(std::mt19937 &rng) {
  return testing::resNet8Chain(rng, false, false);
}
ModelChain resNet8(std::mt19937 &rng) {
  return testing::resNet8Chain(rng, true, false);
}
ModelChain resNet8Head(std::mt19937 &rng) {
  return testing::resNet8Chain(rng, true, true);
}

const Model kModels[] = {
    {"DS-CNN convs", dsCnn},
    {"DS-CNN + pool + fc", dsCnnHead},
    {"ResNet-8 convs", resNet8Convs},
    {"ResNet-8 convs + adds", resNet8},
    {"ResNet-8 + adds + pool + fc", resNet8Head},
};

struct Result {
  bool ok = false;
  CompiledStream stream;
  drivers::npu::sim::Counters counters;
};

Result run(const ModelChain &m, const NpuConfig &config) {
  Result r;
  auto stream = emitChain(m.chain, config);
  if (!stream.ok()) {
    fprintf(stderr, "compile failed: %s\n",
            std::string(stream.status().message()).c_str());
    return r;
  }
  r.stream = *stream;
  std::vector<std::vector<uint8_t>> bindings(5);
  bindings[testing::kChainInput].assign(m.input.begin(), m.input.end());
  bindings[testing::kChainOutput2].assign(
      std::max<size_t>(m.expected2.size(), 1), 0);
  bindings[testing::kChainOutput].assign(m.expected.size(), 0);
  bindings[testing::kChainWeights] = r.stream.weights;
  bindings[testing::kChainScratch].assign(
      std::max<uint64_t>(r.stream.scratchBytes, 1), 0);
  auto result = testing::runStream(r.stream, config, bindings);
  if (!result.status.ok()) {
    fprintf(stderr, "run failed: %s\n",
            std::string(result.status.message()).c_str());
    return r;
  }
  r.counters = result.counters;
  bool same = std::equal(
      m.expected.begin(), m.expected.end(),
      reinterpret_cast<const int8_t *>(bindings[testing::kChainOutput].data()));
  if (!m.expected2.empty()) {
    same = same && std::equal(m.expected2.begin(), m.expected2.end(),
                              reinterpret_cast<const int8_t *>(
                                  bindings[testing::kChainOutput2].data()));
  }
  if (!same) {
    fprintf(stderr, "output differs from the reference\n");
    return r;
  }
  r.ok = true;
  return r;
}

int printTables() {
  int failures = 0;
  printf(
      "\nNPU chains: one stream per model, 256 KiB SRAM (192 KiB for streams), "
      "256 KiB weight memory, 16 B/cycle DMA, 64-cycle setup; outputs "
      "bit-exact "
      "with the reference.\n\n");
  printf("| model | PEs | conv MACs | peak | simulated cycles | overhead | "
         "conv PE util "
         "| MAC cycles | other compute | DMA bytes in/out | SYNCs |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Model &model : kModels) {
    std::mt19937 rng(2024);
    ModelChain m = model.make(rng);
    for (uint32_t pes : {64u, 256u}) {
      NpuConfig config = benchConfig(pes);
      Result r = run(m, config);
      if (!r.ok) {
        printf("| %s | %u | FAILED |\n", model.name, pes);
        ++failures;
        continue;
      }
      uint64_t macs = 0;
      for (const NpuLayer &l : m.chain.layers) {
        macs += l.macs();
      }
      double peak = double(macs) / pes;
      const auto &c = r.counters;
      printf("| %s | %u | %llu | %.0f | %llu | %.1f%% | %.1f%% | %llu | %llu | "
             "%llu / %llu | %u |\n",
             model.name, pes, (unsigned long long)macs, peak,
             (unsigned long long)c.total_cycles,
             100.0 * (double(c.total_cycles) / peak - 1),
             100.0 * c.pe_utilization(pes), (unsigned long long)c.mac_cycles,
             (unsigned long long)(c.compute_cycles - c.mac_cycles),
             (unsigned long long)c.dma_bytes_read,
             (unsigned long long)c.dma_bytes_written, r.stream.syncCount);
    }
  }
  // Per-layer view of the two conv sequences.
  for (const Model *model : {&kModels[0], &kModels[2]}) {
    std::mt19937 rng(2024);
    ModelChain m = model->make(rng);
    printf(
        "\n%s, per layer: MAC-instruction cycles / PE utilization (tiles)\n\n",
        model->name);
    printf("| layer | MACs | peak 64 | 64 PE | peak 256 | 256 PE "
           "|\n|---|---:|---:|---:|---:|---:|\n");
    Result r64 = run(m, benchConfig(64)), r256 = run(m, benchConfig(256));
    if (!r64.ok || !r256.ok) {
      ++failures;
      continue;
    }
    for (size_t i = 0; i < m.chain.layers.size(); ++i) {
      const NpuLayer &l = m.chain.layers[i];
      const LayerReport &a = r64.stream.layers[i], &b = r256.stream.layers[i];
      auto util = [&](const LayerReport &rep, int pes) {
        return rep.estimate.macCycles
                   ? 100.0 * l.macs() / (double(pes) * rep.estimate.macCycles)
                   : 0.0;
      };
      printf("| %s | %lld | %lld | %llu / %.0f%% (%lld) | %lld | %llu / %.0f%% "
             "(%lld) |\n",
             l.name.c_str(), (long long)l.macs(), (long long)(l.macs() / 64),
             (unsigned long long)a.estimate.macCycles, util(a, 64),
             (long long)a.tiling.steps(), (long long)(l.macs() / 256),
             (unsigned long long)b.estimate.macCycles, util(b, 256),
             (long long)b.tiling.steps());
    }
  }
  printf("\n");
  return failures;
}

void BM_CompileChain(benchmark::State &state) {
  std::mt19937 rng(7);
  ModelChain m = kModels[state.range(0)].make(rng);
  NpuConfig config = benchConfig(static_cast<uint32_t>(state.range(1)));
  for (auto _ : state) {
    auto s = emitChain(m.chain, config);
    benchmark::DoNotOptimize(s);
  }
  state.SetLabel(kModels[state.range(0)].name);
}
BENCHMARK(BM_CompileChain)
    ->ArgsProduct({{0, 4}, {64, 256}})
    ->Unit(benchmark::kMillisecond);

} // namespace
} // namespace osprey::compiler::npu

int main(int argc, char **argv) {
  int failures = osprey::compiler::npu::printTables();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return failures == 0 ? 0 : 1;
}
